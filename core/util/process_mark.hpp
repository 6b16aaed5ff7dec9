// A process named for as long as the system runs: "<pid namespace>-<pid>-<start>", the inode of
// the pid namespace its pid is read in, the pid, and its start in clock ticks since boot (field
// 22 of /proc/PID/stat). A pid alone may name another process once the first has ended; with
// its start time it cannot.
#pragma once

#include <string>
#include <string_view>

namespace tea {

// This process's mark, read once.
const std::string &own_process_mark();

// Whether the process `mark` names (its first three '-'-separated fields; more may follow) may
// still run: false only when the mark is of this process's pid namespace and its pid now names
// no process, or one that started at another time. A mark of another namespace, or text that is
// no mark, cannot be looked up here and counts as alive.
bool process_mark_alive(std::string_view mark);

}  // namespace tea
