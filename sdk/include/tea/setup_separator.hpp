// The confinement's set-up told from the target, for an observer of a confined call
// (docs/audit.md, "The trace and the set-up"). A plan's first processes are the confinement's own
// (bwrap reading the host to build the view): nothing of the target exists before the exec of the
// plan's target start, and the first such exec that succeeds is where the target begins. When the
// start is a launcher (the sandbox helper) rather than the target, that process's own work until
// its next successful exec is the launcher's too; each exec it attempts (a PATH search) is the
// target's. Every access from there on is the target's, to be judged.
//
//   tea::SetupSeparator setup{request.target_start, request.target_start_is_target};
//   if (setup.is_target(pid, is_exec, succeeded, path_asked)) judge(access);
//
// Header-only, C++17.
#ifndef TEA_SETUP_SEPARATOR_HPP
#define TEA_SETUP_SEPARATOR_HPP

#include <string>
#include <string_view>
#include <utility>

namespace tea {

class SetupSeparator {
   public:
    // `target_start`: the path whose exec starts the target ("" when the plan is the target from
    // its first process); `start_is_target`: whether that exec runs the target itself.
    SetupSeparator(std::string target_start, bool start_is_target)
        : target_start_{std::move(target_start)},
          start_is_target_{start_is_target},
          started_{target_start_.empty()} {}

    // Whether an access of process `pid` is the target's (and so judged); `exec`: the access is
    // an exec, `ok`: it succeeded, `asked`: the path it asked for.
    bool is_target(int pid, bool exec, bool ok, std::string_view asked) {
        if (!started_) {
            // Only the first exec of the start counts: a target cannot run before it to fake one.
            if (!exec || !ok || asked != target_start_) return false;
            started_ = true;
            if (!start_is_target_) {
                launcher_pid_ = pid;  // a launcher: its own work until its next exec is not
                return false;         // the target's
            }
            return true;  // the target itself: its exec reads its binary, and is judged as such
        }
        if (launcher_pid_ != 0 && pid == launcher_pid_) {
            if (!exec) return false;    // the launcher's own work before it hands over
            if (ok) launcher_pid_ = 0;  // from here on this process is the target
        }
        return true;
    }

    // Whether the target's start was seen.
    [[nodiscard]] bool started() const { return started_; }

   private:
    std::string target_start_;
    bool start_is_target_ = false;
    bool started_ = false;
    int launcher_pid_ = 0;  // the process that ran the launcher, until it executes the target
};

}  // namespace tea

#endif  // TEA_SETUP_SEPARATOR_HPP
