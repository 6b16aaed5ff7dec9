#include "evaluation/historical_probes.hpp"

#include <set>

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
           revision + ", then back), which fetches what a partial clone lacks, and run again";
}

}  // namespace

void report_unresolved_revisions(const Evaluation &evaluation, const git::WorkspaceSource &source,
                                 std::vector<Problem> &problems) {
    for (const auto &[revision, probes] : probes_by_revision(evaluation)) {
        std::string why;
        try {
            (void)git::resolve_revision(source, revision);
            continue;
        } catch (const git::WorkspaceSourceError &e) {
            why = e.what();
        }
        for (const auto *probe : probes) {
            problems.push_back({probe->file, 0, 0, "probe '" + probe->name + "' field 'revision'",
                                why + way_out(revision), true});
        }
    }
}

std::map<std::string, std::string> check_revisions(const Evaluation &evaluation,
                                                   const git::WorkspaceSource &source,
                                                   files::RunDirectory &private_dir) {
    std::map<std::string, std::string> commits;
    for (const auto &[revision, probes] : probes_by_revision(evaluation)) {
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
            if (!stdfs::is_regular_file(stdfs::symlink_status(check_dir / entry->target, ec))) {
                files::remove_tree(check_dir);
                // The call runs the program of the revision's tree, as the project had it then.
                throw usage_error("probe '" + probe->name + "' field 'revision': '" + revision +
                                  "' (commit " + commit + ") has no file '" + entry->target +
                                  "', the target of entry '" + entry->interface_id + "'");
            }
        }
        files::remove_tree(check_dir);
        commits.emplace(revision, commit);
    }
    return commits;
}

git::WorkspaceSource source_at(const git::WorkspaceSource &source, const std::string &commit) {
    auto at = source;
    at.commit = commit;
    return at;
}

}  // namespace tea::evaluation
