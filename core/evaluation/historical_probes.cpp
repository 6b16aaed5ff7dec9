#include "evaluation/historical_probes.hpp"

#include <set>

#include "evaluation/revision_fetch.hpp"
#include "evaluation/skill_target.hpp"
#include "files/skill_folder.hpp"
#include "git/revision.hpp"
#include "util/error.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;

// The probes that name each revision, in name order.
std::map<std::string, std::vector<const Probe *>> probes_by_revision(const Evaluation &evaluation) {
    std::map<std::string, std::vector<const Probe *>> out;
    for (const auto &probe : evaluation.probes) {
        if (!probe.revision.empty()) out[probe.revision].push_back(&probe);
    }
    return out;
}

std::string way_out(const std::string &revision) {
    return "; a confined run fetches nothing, so no workspace can be made of it. Check the "
           "revision out once in your clone (git checkout " +
           revision +
           ", then back), which fetches what a partial clone lacks, and run again; or set "
           "\"confinement\": false in evaluation.json, and the run fetches it with your git";
}

}  // namespace

void report_unresolved_revisions(const Evaluation &evaluation, const git::WorkspaceSource &source,
                                 std::vector<Problem> &problems, std::vector<Problem> &notes) {
    for (const auto &[revision, probes] : probes_by_revision(evaluation)) {
        std::string why;
        try {
            (void)git::resolve_revision(source, revision);
            continue;
        } catch (const git::WorkspaceSourceError &e) {
            why = e.what();
        }
        for (const auto *probe : probes) {
            const auto where = "probe '" + probe->name + "' field 'revision'";
            if (evaluation.confinement) {
                problems.push_back({probe->file, 0, 0, where, why + way_out(revision), true});
            } else {
                notes.push_back({probe->file, 0, 0, where,
                                 why + "; the run (opted out) asks your git to fetch it"});
            }
        }
    }
}

namespace {

// The commit `revision` names, its tree read whole from the clone's disk; throws host_error for
// what the clone lacks, usage_error for what the repository refuses.
std::string read_revision(const Evaluation &evaluation, const git::WorkspaceSource &source,
                          const std::string &revision, const std::vector<const Probe *> &probes,
                          files::RunDirectory &private_dir) {
    const auto named = "revision '" + revision + "' (probe '" + probes.front()->name + "')";
    std::string commit;
    try {
        commit = git::resolve_revision(source, revision);
    } catch (const git::UnknownRevisionError &e) {
        throw host_error(named + ": " + e.what() + way_out(revision));
    } catch (const git::WorkspaceSourceError &e) {
        throw usage_error(named + ": " + e.what());
    }
    // Read whole now: a blob a partial clone never fetched would otherwise stop a call in the
    // middle of a trial.
    const auto check_dir = private_dir.make_directory("check-revision-");
    try {
        (void)git::materialize(source_at(source, commit), check_dir);
    } catch (const git::MissingObjectsError &e) {
        files::remove_tree(check_dir);
        throw host_error(named + ": " + e.what() + way_out(revision));
    } catch (const git::WorkspaceSourceError &e) {
        files::remove_tree(check_dir);
        throw usage_error(named + ": " + e.what());
    }
    std::set<std::string> checked;
    for (const auto *probe : probes) {
        const auto *entry = evaluation.entry(probe->entry);
        if (entry == nullptr || !checked.insert(entry->interface_id).second) continue;
        std::error_code ec;
        // A skill target's call installs the revision's skill folder, checked as `run` checks
        // the evaluated commit's.
        if (is_skill_target(*entry)) {
            if (const auto why = files::why_not_skill_folder(check_dir / entry->target)) {
                files::remove_tree(check_dir);
                throw usage_error("probe '" + probe->name + "' field 'revision': '" + revision +
                                  "' (commit " + commit + "): the skill folder '" + entry->target +
                                  "' of entry '" + entry->interface_id + "' " + *why);
            }
            continue;
        }
        if (!stdfs::is_regular_file(stdfs::symlink_status(check_dir / entry->target, ec))) {
            files::remove_tree(check_dir);
            // The call runs the program of the revision's tree, as the project had it then.
            throw usage_error("probe '" + probe->name + "' field 'revision': '" + revision +
                              "' (commit " + commit + ") has no file '" + entry->target +
                              "', the target of entry '" + entry->interface_id + "'");
        }
    }
    files::remove_tree(check_dir);
    return commit;
}

}  // namespace

std::map<std::string, std::string> check_revisions(const Evaluation &evaluation,
                                                   const git::WorkspaceSource &source,
                                                   files::RunDirectory &private_dir) {
    std::map<std::string, std::string> commits;
    for (const auto &[revision, probes] : probes_by_revision(evaluation)) {
        try {
            commits.emplace(revision,
                            read_revision(evaluation, source, revision, probes, private_dir));
            continue;
        } catch (const Error &e) {
            // Confined, the run fetches nothing: what a fetch would bring could be anything the
            // remote serves, fetched on the target's behalf.
            if (evaluation.confinement || e.code() != ExitCode::no_confine) throw;
        }
        // Opted out, the host's git (with the clone's promisor remote) fetches once what the
        // revision needs, as the targets could themselves.
        const auto error_file = private_dir.make_directory("fetch-") / "stderr";
        if (auto why = fetch_revision_objects(source, revision, error_file); !why.empty()) {
            throw host_error("revision '" + revision + "' (probe '" + probes.front()->name +
                             "'): the evaluation opts out of confinement, and its objects could " +
                             "not be fetched: " + why);
        }
        commits.emplace(revision, read_revision(evaluation, source, revision, probes, private_dir));
    }
    return commits;
}

git::WorkspaceSource source_at(const git::WorkspaceSource &source, const std::string &commit) {
    auto at = source;
    at.commit = commit;
    return at;
}

}  // namespace tea::evaluation
