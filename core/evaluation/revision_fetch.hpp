// An opted-out run's way to a revision the clone lacks on disk: the host's own git, with the
// project's remotes, reads the revision's whole tree once, which makes a partial clone fetch what
// it never fetched. A confined run never calls this: it fetches nothing.
#pragma once

#include <filesystem>
#include <string>

#include "git/workspace_source.hpp"

namespace tea::evaluation {

// Runs `git -C <work tree> archive --format=tar -o /dev/null <commit or revision>` as the
// invoker, with the runtime's environment; its stderr goes to error_file. Returns the empty string
// when git succeeded, or why it did not.
std::string fetch_revision_objects(const git::WorkspaceSource &source, const std::string &revision,
                                   const std::filesystem::path &error_file);

}  // namespace tea::evaluation
