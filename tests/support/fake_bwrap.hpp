// A stand-in for bwrap that fails a call's set-up once, before bwrap would take the call's setup
// mark (as bwrap does when a path it binds vanished after the plan was made), and is the host's
// /usr/bin/bwrap otherwise.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace tea::test {

// Writes the stand-in as <dir>/bwrap (dir is made, writable by every account, since the sandbox
// account's bwrap logs there) and returns the [plugin.bubblewrap] table that names it. Each call
// (a bwrap started with --args, not the backend's probe) is logged in <dir>/tries; the first
// whose arguments hold `only_when` (empty: the first call) fails, and leaves <dir>/failed, whose
// presence spends the failure.
std::string bwrap_failing_once(const std::filesystem::path &dir, const std::string &only_when = {});

// How many calls the stand-in saw.
std::size_t bwrap_tries(const std::filesystem::path &dir);

}  // namespace tea::test
