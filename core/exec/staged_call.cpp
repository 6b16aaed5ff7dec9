#include "exec/staged_call.hpp"

#include <algorithm>

namespace tea::exec::detail {

// The first differing part of a process, or nullptr when the complete plan starts the same one.
const char *differs(const ExecPlan &staged, const ExecPlan &complete) {
    if (complete.argv != staged.argv) {
        return "argv";
    }
    if (complete.env != staged.env) {
        return "env";
    }
    if (complete.cwd != staged.cwd) {
        return "cwd";
    }
    if (complete.run_as != staged.run_as) {
        return "runAs";
    }
    if (complete.child != staged.child) {
        return "limits, newSessionKeyring or newSession";
    }
    if (complete.setup_mark_fd != staged.setup_mark_fd) {
        return "setupMark";
    }
    if (complete.holder || staged.holder || complete.handoff_fd != staged.handoff_fd) {
        return "holder";
    }
    if (complete.lend != staged.lend) {
        return "lend";
    }
    if (complete.confinement != staged.confinement) {
        return "confinement";
    }
    if (complete.files.size() != staged.files.size()) {
        return "files";
    }
    for (const auto &f : staged.files) {
        const auto same = std::find_if(complete.files.begin(), complete.files.end(),
                                       [&](const PlanFile &c) { return c.child_fd == f.child_fd; });
        if (same == complete.files.end() || same->deferred ||
            (f.deferred ? !same->path.empty() : !(*same == f))) {
            return "files";
        }
    }
    return nullptr;
}

}  // namespace tea::exec::detail
