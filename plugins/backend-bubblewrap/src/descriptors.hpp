// The descriptors a bubblewrap plan places in its processes (the plan's "files", its setup mark
// and its hand-off ends): one number each, none below 10, so none meets what bwrap, the helper or
// the view builder open for themselves before they read them.
#pragma once

#include <string>

namespace tea::bwrap {

enum class Descriptor : int {
    // The target's environment, NUL-separated, read by the helper.
    env = 10,
    // bwrap's arguments (--args), so no command line limits or shows them.
    args = 11,
    // The helper, open: the sandbox identity runs it through /proc/self/fd even when it may not
    // search the directories the runtime is installed in.
    helper = 12,
    // The egress shim, open, for the same reason (a call that lists egress hosts only).
    shim = 13,
    // The seccomp program, for bwrap's --seccomp.
    seccomp = 14,
    // The plan's setup mark: bwrap (--block-fd) or the view builder takes its byte once the view
    // is built and the privileges are dropped, just before the seccomp program and the exec, so a
    // call that ends with the byte unread failed in the set-up, not in the target.
    setup_mark = 15,
    // (ABI 1.4) The hand-off between the holder inside the sandbox and the helper that joins it:
    // the holder's end, and the end of the plan's own process.
    holder_handoff = 16,
    handoff = 17,
    // The view the view builder (view/view.cpp) builds, NUL-separated in bwrap's words.
    view = 18,
    // The view builder, open like the helper.
    view_builder = 19,
    // (ABI 1.9) The bridge relay, open like the helper (a call whose spec has a bridge only).
    bridge_relay = 20,
    // (ABI 1.8) The first of a login's files, each a sealed copy of what the host read that bwrap
    // shows read-only in the home (login_files.hpp); the others follow it, one number each.
    login_files = 21,
};

constexpr int number(Descriptor d) {
    return static_cast<int>(d);
}

inline std::string to_string(Descriptor d) {
    return std::to_string(number(d));
}

// The path a program open at `d` is run by inside the sandbox.
inline std::string in_sandbox(Descriptor d) {
    return "/proc/self/fd/" + to_string(d);
}

}  // namespace tea::bwrap
