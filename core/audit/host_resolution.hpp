// After an audited call: what the observer could not place from its trace alone, followed on the
// host where the host shows what the target saw.
//
// An exec returns no descriptor, and an open in a descriptor table another task shares may have
// had its descriptor swapped before the observer read it, so for those the observer reports what
// the asked path names once the links it saw the call make are followed (ObservedAccess::
// path_named). What is left are names the call found in place: links a target planted in its
// workspace or home in an earlier call, directories linked elsewhere, a script's #! line. Those
// are followed here, on the host, with lstat and readlink alone (nothing is opened but a regular
// file's first line, and never through a link), and never where the host does not show the view:
// the sandbox's own /dev, /proc and /sys, the private root and the withheld paths (covered in the
// view), where the walk stops and the judge takes the rest as it is.
//
// The host shows the state after the call, not the state when the target used the name. A name
// the call renamed, removed or made (the observation's create and remove events) is therefore not
// followed: the access is marked unverified, and listed, unless the observer established it from
// the trace. A name that no longer exists is unverified too: deleting a file made in an earlier
// call after executing it leaves nothing to check.
//
// Not thread-safe; touches the file system; one call per observation.
#pragma once

#include <string>
#include <vector>

#include "audit/observation.hpp"

namespace tea::audit {

struct HostView {
    // Writable places that are the same directories on the host as in the target's view: the
    // workspace, the home. What the target left there can be read after the call.
    std::vector<std::string> shared_writable;
    // Places the view shows read-only at the same paths as the host (the system paths, the
    // read-only grants), inside a place of the view's own too (a system path under a /tmp that
    // is the call's own).
    std::vector<std::string> shared_read_only;
    // Places whose content in the target's view is not the host's (/dev, /proc, /sys, /run/user,
    // the private root, the withheld paths, the view's own writable places): a walk that reaches
    // one stops there, unless it is on its way down to a shared place inside.
    std::vector<std::string> view_only;
    // Writable places of the view alone (/dev/shm, the call's temp directory, a /tmp of the
    // call's own): what a target left there is gone with the call, so a walk that reaches one is
    // unverified. Each lies in a view_only place too.
    std::vector<std::string> view_only_writable;
};

// Follows each event's path_named on the host (see above), replacing it with the path reached or
// setting unverified with the reason. For an exec whose file lies in a shared writable place and
// starts with "#!", the interpreter it names is added as an exec event of its own (four levels,
// as the kernel allows).
void resolve_named_on_host(Observation &observation, const HostView &view);

}  // namespace tea::audit
