// The host's temp directories as a target sees them: each replaced by a tmpfs of the call's own,
// with only the call's grants that lie inside shown at their host paths. What other users and
// services keep there (their files, their sockets, a build tree of 200,000 entries) is absent from
// the view by construction, so the host-socket walk need not read it and cannot be stopped by it.
#pragma once

#include <string>
#include <vector>

namespace tea::bwrap {

class PrivateTemp {
   public:
    // `candidates`: the host's temp directories (/tmp, /var/tmp). `shown`: every place the view
    // shows at its host path that may lie inside one (the workspace, the home, the system paths,
    // the read-only grants, the egress route's directory). A candidate that is no directory on
    // the host (a link keeps leading where it leads), or that lies inside a shown place (a
    // workspace of /tmp itself), stays the host's.
    PrivateTemp(const std::vector<std::string> &candidates, std::vector<std::string> shown);

    // The directories the view replaces, each with a tmpfs.
    [[nodiscard]] const std::vector<std::string> &replaced() const { return replaced_; }
    // Whether `path` lies in a replaced directory (shown or not).
    [[nodiscard]] bool in_replaced(const std::string &path) const;
    // Whether the view lacks the host's file at `path`: it lies in a replaced directory and in no
    // shown place. Lexical: a link on the way is not followed.
    [[nodiscard]] bool hides(const std::string &path) const;
    // Every path at which the view shows the host's file whose real path (no link on the way) is
    // `real`: that path unless hidden, and the same file beneath each shown place inside a
    // replaced directory whose own path reaches it through a link (a system path /tmp/tools
    // leading to /opt/tools is a mount of its own at /tmp/tools, which a mount over
    // /opt/tools/x does not cover).
    [[nodiscard]] std::vector<std::string> view_paths(const std::string &real) const;

   private:
    // A shown place bound at its own path, which is not where its content really lies.
    struct Alias {
        std::string shown;
        std::string real;
    };
    std::vector<std::string> replaced_;
    std::vector<std::string> shown_;
    std::vector<Alias> aliases_;
};

}  // namespace tea::bwrap
