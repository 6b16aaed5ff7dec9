// The descriptors a plan's process is given, as the call runner makes them: the plan's bytes in a
// sealed memfd, a file the plan names opened read-only, socket pairs, all above the numbers a plan
// may name so that placing one never overwrites the source of another.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {

Error setup_error(const std::string &what, int error_number);

void write_all(int fd, const char *data, std::size_t size);

// The lowest number the runner's own descriptors take (above_plan_numbers); a plan names 3..255.
constexpr int runner_descriptor_floor = 256;

// The same open file above every descriptor number a plan may name (3..255), so that placing one
// descriptor at its number in the child never overwrites the source of another.
UniqueFd above_plan_numbers(UniqueFd low);

// A connected pair of stream sockets, both ends above the plan's numbers.
std::array<UniqueFd, 2> socket_pair();

// The plan's bytes in a sealed memfd: the child reads exactly what was
// planned, and nothing can change it after the plan was checked.
UniqueFd sealed_memfd(const std::string &content);

// A file the plan names, open for reading only: what the child gets is a
// descriptor, never the right to write it.
UniqueFd opened_file(const std::string &path);

// A deferred file: a socket pair, one end for the child, the other the runtime's. A socket rather
// than a pipe: the runtime writes with MSG_NOSIGNAL, so a process that died before reading costs
// it an error, never SIGPIPE.
std::array<UniqueFd, 2> deferred_pair();

}  // namespace tea::exec::detail
