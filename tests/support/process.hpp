// Runs a program for a test and collects its status and output.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tea::test {

struct Outcome {
    int status = -1;  // exit code, or 128 + signal
    std::string out;
    std::string err;
};

// NUL-terminated pointers into `items` for exec-family calls; valid while items lives.
std::vector<char *> c_strings(const std::vector<std::string> &items);

// env: the exact environment; stdin is /dev/null.
Outcome run(const std::vector<std::string> &argv, const std::vector<std::string> &env);

// The test process's own environment plus/over the given entries.
std::vector<std::string> environment_with(const std::vector<std::string> &extra);

// What open(2) of `path` for reading answers the account uid:gid (no supplementary groups), from
// a child that takes that identity: 0, or the errno. Needs root.
int open_as(const std::string &path, uid_t uid, gid_t gid);
constexpr uid_t kNobody = 65534;  // an account that is neither the invoker nor the sandbox's

std::string make_temp_dir(const std::string &prefix);
// A directory outside the host's temp directories, which a confined target sees as its call's
// own: what a test puts there, a target sees as the host has it. Under /var/lib as root, the
// home otherwise; mode 0755. The caller removes it.
std::string make_host_dir(const std::string &prefix);
void write_file(const std::string &path, const std::string &content);
std::string read_file(const std::string &path);

// The processes whose command line (arguments joined by NUL) holds every one of `needles`, this
// process excepted. A process that exits while /proc is walked is not counted.
struct RunningProcess {
    pid_t pid = 0;
    std::string command_line;  // arguments joined by spaces
};
std::vector<RunningProcess> processes_holding(const std::vector<std::string> &needles);

}  // namespace tea::test
