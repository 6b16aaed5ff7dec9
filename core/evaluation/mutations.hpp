// The mutations of an evaluation folder (EVAL_DIR/mutations/, docs/evaluation-format.md): each a
// deliberate fault put into the project, which the evaluation's probes should catch. qualify runs
// one arm per mutation. Every mutation is read and checked before any arm starts, so a bad one
// refuses the whole qualification (exit 2) instead of leaving it half run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "evaluation/evaluation.hpp"
#include "files/private_dirs.hpp"
#include "git/patch_apply.hpp"
#include "git/workspace_source.hpp"

namespace tea::evaluation {

struct Mutation {
    std::string name;                       // the patch's stem or the folder's name
    std::string file;                       // "mutations/<name>.patch" or "mutations/<name>/"
    std::vector<git::PatchedFile> changes;  // project-relative, each checked
};

// Reads EVAL_DIR/mutations: `<name>.patch`, a patch in git's format applied to the evaluated
// commit, or `<name>/`, a tree of files written over the workspace at the same paths. Throws a
// usage error (exit 2) naming the file and the path for a bad name, a link, a special file, a
// file or patch larger than its cap, a patch that does not apply, and a change that touches the
// evaluation folder, a .git entry or a path the commit holds as a link. None: no folder.
std::vector<Mutation> load_mutations(const Evaluation &ev, const git::WorkspaceSource &source,
                                     files::RunDirectory &private_dir);

// A mutation as qualify --jobs hands it to the arm process that runs it (cli/arm_processes.hpp),
// and back: CBOR, each content a byte string. The arm never reapplies a patch: libgit2 writes
// and removes temporary objects in the project's git directory as it applies one, and another
// arm checking that directory at the same moment would refuse it.
std::vector<std::uint8_t> mutation_bytes(const Mutation &mutation);
// Throws nlohmann::json::exception when the bytes are not a mutation.
Mutation mutation_from_bytes(const std::vector<std::uint8_t> &bytes);

// Writes the mutation's changes into a fresh workspace, before any target has run in it.
void apply_mutation(const Mutation &mutation, const std::filesystem::path &workspace);

}  // namespace tea::evaluation
