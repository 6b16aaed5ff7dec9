// The program a call's target is started from, looked up by the runtime on the host before
// anything of the call starts, the way the call runner finds a plan's program (docs/cli.md, "The
// call's environment"): a name that holds a slash as it is (from the call's working directory when
// relative); otherwise the first absolute entry of the runtime's own PATH (the invoker's, not the
// call's environment) holding a file of that name that the invoker may execute, or else the
// first file of that name it may not (as a shell finds a command).
//
// Looked up once, by the runtime, for every backend and observer: a command that is nowhere is
// "not found" (127), and one that is on PATH but may not be executed is 126. Left to a
// confinement, the search runs as the identity the target runs as, which as root cannot search
// root's own directories on PATH (a 0700 /root/.cargo/bin): execvp then answers "Permission
// denied" (126) for a command that exists nowhere. A file named with a slash that exists is left
// to the exec, which says whether the identity that makes it may execute it.
#pragma once

#include <string>

#include "exec/call_runner.hpp"

namespace tea::call {

struct TargetProgram {
    std::string path;  // the file found; empty when error is set
    // 0; ENOENT when no file of that name is there (as the invoker sees the host); EACCES when
    // PATH holds only files of that name that the invoker may not execute.
    int error = 0;
};

// `name`: the target's argv[0]; `cwd`: the call's working directory.
TargetProgram find_target_program(const std::string &name, const std::string &cwd);

// The result of a call whose program `find_target_program` did not find or may not execute:
// nothing started, with the sentence a shell would give.
exec::CallResult program_not_started(const std::string &name, const TargetProgram &program);

// The status a command reports for it: 127 when not found, otherwise 126.
int program_not_started_status(const TargetProgram &program);

}  // namespace tea::call
