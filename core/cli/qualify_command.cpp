// qualify: the evaluation's arms (evaluation/qualification.hpp), each a run of its trials as run
// makes them, decided as score decides a run, and the qualification's own record.
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "cli/score_decision.hpp"
#include "evaluation/mutations.hpp"
#include "evaluation/qualification.hpp"
#include "files/beneath.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

struct Arm {
    std::string name;  // baseline, mutated, repass
    const evaluation::Mutation *mutation = nullptr;
};

// One arm: a run of every trial, with the mutation written into each trial's fresh workspace,
// then score's decision on its records. nullopt when interrupted (*interrupted: the signal).
std::optional<evaluation::ArmResult> run_arm(OpenedEvaluation &opened, const Arm &arm,
                                             files::RunDirectory &private_dir,
                                             evaluation::TrialProgress &progress,
                                             int *interrupted) {
    evaluation::RunState state{opened.ev, *opened.session, opened.source, evaluation::new_run_id()};
    state.logins = opened.logins;
    state.condition_arm = arm.name;
    if (arm.mutation != nullptr) {
        state.mutation = arm.mutation->name;
        state.mutate = [m = arm.mutation](const stdfs::path &workspace) {
            evaluation::apply_mutation(*m, workspace);
        };
    }
    evaluation::begin_run(state, private_dir);
    const auto label = arm.mutation != nullptr ? "mutated arm " + arm.mutation->name : arm.name;
    console::err() << "tea-evaluate: qualify: " << label << ": run " << state.run_id << '\n';
    for (const auto &weakened : evaluation::weakened_sentences(state.run["weakened"])) {
        console::err() << "tea-evaluate: qualify: the evaluation declares confinement, and "
                       << weakened << ": this arm will be Invalid\n";
    }
    evaluation::run_trials(state, private_dir, progress);
    (void)evaluation::finish_run(state);
    if (state.interrupted != 0) {
        *interrupted = state.interrupted;
        return std::nullopt;
    }
    evaluation::ArmResult result;
    result.arm = arm.name;
    if (arm.mutation != nullptr) {
        result.mutation = arm.mutation->name;
        result.mutation_file = arm.mutation->file;
    }
    result.run_id = state.run_id;
    result.records = state.records;
    json run;
    Decision d;
    try {
        d = decide(state.records, &run);
    } catch (const json::exception &e) {
        d = Decision{};
        d.invalid.push_back(std::string{"a record holds a field of the wrong type: "} + e.what());
    }
    result.verdict = !d.invalid.empty() ? "invalid" : (d.any_fail ? "fail" : "pass");
    result.reasons = result.verdict == "invalid" ? d.invalid : d.fail;
    console::err() << "tea-evaluate: qualify: " << label << ": "
                   << (result.verdict == "invalid" ? "INVALID"
                       : result.verdict == "fail"  ? "FAIL"
                                                   : "PASS")
                   << '\n';
    for (const auto &r : result.reasons) {
        console::err() << "  " << printable(state.logins.redact(r)) << '\n';
    }
    return result;
}

}  // namespace

int qualify_command(const CommonOptions &common, const QualifyOptions &options) {
    auto opened = open_evaluation(common, options.evaluation);
    if (!opened) {
        return static_cast<int>(ExitCode::usage);
    }
    files::RunDirectory private_dir{opened->session->private_root()};
    // Every mutation read and checked before any arm starts: a bad one leaves nothing half run.
    const auto mutations = evaluation::load_mutations(opened->ev, opened->source, private_dir);
    const auto id = evaluation::new_run_id();
    const auto started_at = evaluation::utc_now();
    console::err() << "tea-evaluate: qualify " << id << ": " << mutations.size() + 2
                   << " arms (baseline, " << mutations.size() << " mutation"
                   << (mutations.size() == 1 ? "" : "s") << ", re-pass) of " << opened->ev.trials
                   << " trial" << (opened->ev.trials == 1 ? "" : "s") << " each\n";
    std::vector<Arm> plan{{"baseline", nullptr}};
    for (const auto &m : mutations) plan.push_back({"mutated", &m});
    plan.push_back({"repass", nullptr});

    const auto progress = progress_lines(common.quiet);
    std::vector<evaluation::ArmResult> arms;
    int interrupted = 0;
    for (const auto &arm : plan) {
        auto result = run_arm(*opened, arm, private_dir, *progress, &interrupted);
        if (!result) break;
        arms.push_back(std::move(*result));
    }

    const auto verdict = evaluation::judge(arms);
    const auto record = evaluation::qualification_record(
        id, opened->ev.folder, started_at, interrupted != 0 ? "interrupted" : "complete", arms,
        verdict);
    // Beside the arms' runs, in a folder that is not a run id: score EVAL_DIR still scores the
    // latest run.
    const auto dir = opened->ev.folder / "runs" / ("qualify-" + id);
    if (::mkdir(dir.c_str(), 0755) != 0) {
        throw runtime_failure("cannot make " + dir.string() + ": " + errno_text(errno));
    }
    // The arms' reasons come from records already redacted; the record is redacted as a whole
    // all the same, as every record of a run is.
    const auto &written = opened->logins.empty() ? record : opened->logins.redact_record(record);
    files::write_atomically(dir / "qualification.json",
                            written.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    const auto summary = record["summary"].get<std::string>();
    console::err() << "tea-evaluate: " << (interrupted != 0 ? "interrupted: " : "") << summary
                   << '\n';
    for (const auto &why : verdict.why) {
        console::err() << "  " << printable(opened->logins.redact(why)) << '\n';
    }
    console::err() << "tea-evaluate: records: " << printable((dir / "qualification.json").string())
                   << '\n';
    if (common.json) {
        console::out() << record.dump(-1, ' ', console::on_terminal(stdout),
                                      json::error_handler_t::replace)
                       << '\n';
    }
    if (interrupted != 0) return 128 + interrupted;
    if (verdict.verdict == "invalid") return static_cast<int>(ExitCode::invalid);
    return verdict.verdict == "qualified" ? 0 : static_cast<int>(ExitCode::fail);
}

}  // namespace tea::cli
