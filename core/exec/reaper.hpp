// What a call leaves behind, ended: its process group, and every orphan it left that was
// reparented to the runtime (a child subreaper), with what they started.
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

namespace tea::exec::detail {

void kill_group(pid_t group, int signal_number);

// The process ids in a /proc list ("12 345 ", "NSpid:\t12\t1"), in order.
std::vector<pid_t> pids_in(std::string_view text);

// The children of every thread of the process whose /proc directory is open as `process_dir`;
// none when it is gone.
std::vector<pid_t> children_of(int process_dir);

// The runtime's children, those of every one of its threads: read with plain system calls, as
// this runs twice after every call, on the way out.
std::vector<pid_t> own_children();

bool is_subreaper();

// Every orphan the call left has been reparented to this runtime: end it, and
// what it started, which is reparented in turn. Children the runtime had
// before the call began are not the call's and are left alone.
void end_orphans(const std::vector<pid_t> &before);

}  // namespace tea::exec::detail
