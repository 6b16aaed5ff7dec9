// A historical probe's revision, resolved in the project's repository to the commit it names,
// from what the clone holds on disk: nothing is fetched.
#pragma once

#include <string>

#include "git/workspace_source.hpp"

namespace tea::git {

// The revision names nothing the clone holds: a commit that was never fetched (a promisor
// remote's, or a sha that exists nowhere), a branch or tag the repository lacks, or an object
// that is not a commit.
class UnknownRevisionError : public WorkspaceSourceError {
   public:
    using WorkspaceSourceError::WorkspaceSourceError;
};

// The full id of the commit `revision` names in the source's repository (source.git). Throws
// UnknownRevisionError when it names none, WorkspaceSourceError when the repository is refused.
std::string resolve_revision(const WorkspaceSource &source, const std::string &revision);

}  // namespace tea::git
