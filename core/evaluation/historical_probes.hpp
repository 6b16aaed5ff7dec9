// Historical probes: a probe that names a revision runs its call in a checkout of that revision,
// made from the objects the project's clone holds on disk, with a private repository of the
// revision's history (git/private_repository.hpp) as the call's git. docs/evaluation-format.md
// describes the field.
//
// A confined run fetches nothing, so a revision whose objects the clone lacks is found before any
// target starts and refused as a host that cannot confine the evaluation (exit 12), naming the
// revision and the way out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "evaluation/evaluation.hpp"
#include "files/private_dirs.hpp"
#include "git/workspace_source.hpp"

namespace tea::evaluation {

// `check`: each revision the probes name, resolved in the project's repository; one that names
// nothing the clone holds is a problem of the probe's "revision" field, or a note when the
// evaluation opts out of confinement (its run fetches it). A project in no repository makes
// every revision one.
void report_unresolved_revisions(const Evaluation &evaluation, const git::WorkspaceSource &source,
                                 std::vector<Problem> &problems, std::vector<Problem> &notes);

// `run`, before any target starts: revision -> the commit it names, for every revision the probes
// name, each commit's files read whole from the clone's disk and each target its probes call a file
// of it. Throws host_error (exit 12) for a revision the clone cannot give, naming it and the way
// out, and usage_error (exit 2) for a target the revision lacks. An evaluation that opts out of
// confinement has the host's git fetch what the clone lacks (evaluation/revision_fetch.hpp) first.
std::map<std::string, std::string> check_revisions(const Evaluation &evaluation,
                                                   const git::WorkspaceSource &source,
                                                   files::RunDirectory &private_dir);

// The run's source at another commit of the same repository: what a historical probe's workspace
// is made from.
git::WorkspaceSource source_at(const git::WorkspaceSource &source, const std::string &commit);

}  // namespace tea::evaluation
