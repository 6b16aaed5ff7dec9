// A target's call as its plan is built from it: what its launch spec asks for, checked, and what
// follows from it on this host (who the target runs as, what is lent, where it starts, which way
// bwrap starts it). Every refusal of a target's spec that needs no view is made here.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "identity.hpp"
#include "private_temp.hpp"
#include "settings.hpp"

namespace tea::bwrap {

// The call's temp directory in the view.
inline constexpr const char *temp_mount = "/dev/tea-evaluate-tmp";
// The host's temp directories, which every user and service may fill: each is the call's own in
// the view (private_temp.hpp).
inline constexpr std::array<const char *, 2> host_temp_dirs{"/tmp", "/var/tmp"};

struct TargetCall {
    const documents::LaunchSpec &spec;
    // As root, the call's own identity when the host took one for it (ABI 1.6); otherwise the
    // sandbox account, which every call shares; the invoker's own when it is not root.
    Identity identity;
    // What the plan lends: the workspace, and the temp directory and home the host made.
    std::vector<std::string> lent_paths;
    // Those of them whose tree the identity enters as its owner (only when it is dropped to).
    std::vector<LentTree> lent;
    std::vector<std::string> env;  // the target's, as target_environment makes it
    documents::Limits limits;      // the spec's, each 0 replaced by the setting
    std::string private_root;      // the home's grandparent
    std::string run_dir;           // the home's parent, normalised
    std::string egress_dir;        // the egress socket's directory; "" without a route out
    std::string bridge_dir;        // (ABI 1.9) the bridge's directory; "" without a bridge
    // The runtime's prefix when the view must bind it back, read-only at its host path: it lies
    // in a host temp directory the view replaces (a build tree or an install under /tmp), where a
    // skill target's <prefix>/bin/tea-skill-runner would not be found otherwise. "" when the
    // view shows it already, or covers it (the private root, a withheld path), or when it is or
    // holds a temp directory the view replaces.
    std::string runtime_prefix;
    PrivateTemp private_temp;
    // The path bwrap's exec of the target names (reach.hpp): the plan's targetStart when bwrap
    // or its view builder starts the target; empty when a launcher does.
    std::string start;
    // Where the target may write that the launch spec does not name: its own mounts, which the
    // audit grants like the workspace.
    std::vector<std::string> writable;
    // The view builder makes the view's mounts (view/view.cpp): bwrap's own binds and remounts
    // each re-read the whole mount table, which was most of what a call's view cost. Audited
    // calls and calls with a launcher keep bwrap's options.
    bool by_view_builder = false;
    // (ABI 1.5) The builder's process is known now, and the runtime starts it before the view
    // exists: the view comes in the complete plan.
    bool staged = false;

    // Whether `path` (the temp directory or the home) exists only inside the sandbox.
    [[nodiscard]] bool unmade(const std::string &path) const;
};

// Throws tea::sdk::Unavailable or tea::sdk::Invalid naming the path and the way out.
TargetCall target_call(const Settings &settings, const documents::LaunchSpec &spec,
                       const Identity &sandbox);

}  // namespace tea::bwrap
