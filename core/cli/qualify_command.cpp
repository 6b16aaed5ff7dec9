// qualify: the evaluation's arms (evaluation/qualification.hpp), each a run of its trials as run
// makes them, decided as score decides a run, and the qualification's own record.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli/arm_processes.hpp"
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
    auto decision = verdict_of(state.records, &run);
    result.verdict = std::move(decision.verdict);
    result.reasons = std::move(decision.reasons);
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

// The arms in order: the baseline, one per mutation, the re-pass.
std::vector<Arm> plan_of(const std::vector<evaluation::Mutation> &mutations) {
    std::vector<Arm> plan{{"baseline", nullptr}};
    for (const auto &m : mutations) plan.push_back({"mutated", &m});
    plan.push_back({"repass", nullptr});
    return plan;
}

// The arm as --arm names it.
std::string spec_of(const Arm &arm) {
    return arm.mutation != nullptr ? "mutated:" + arm.mutation->name : arm.name;
}

// What an arm process reads on its stdin: all of it.
std::vector<std::uint8_t> read_stdin() {
    std::vector<std::uint8_t> bytes;
    std::uint8_t buf[65536];
    for (;;) {
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw runtime_failure("--arm: cannot read the arm's stdin: " + errno_text(errno));
        if (n == 0) return bytes;
        bytes.insert(bytes.end(), buf, buf + n);
    }
}

// qualify --arm SPEC: one arm, run as the in-process path runs it, its result on stdout. A
// mutated arm's mutation comes on stdin, checked by the qualify that started this one.
int arm_command(const CommonOptions &common, const QualifyOptions &options) {
    auto opened = open_evaluation(common, options.evaluation);
    if (!opened) {
        return static_cast<int>(ExitCode::usage);
    }
    files::RunDirectory private_dir{opened->session->private_root()};
    const std::string_view mutated = "mutated:";
    std::optional<evaluation::Mutation> mutation;
    Arm arm{*options.arm, nullptr};
    if (options.arm->starts_with(mutated)) {
        try {
            mutation = evaluation::mutation_from_bytes(read_stdin());
        } catch (const json::exception &e) {
            throw usage_error("--arm: stdin holds no mutation: " + std::string{e.what()});
        }
        if (mutation->name != options.arm->substr(mutated.size())) {
            throw usage_error("--arm: stdin holds mutation " + mutation->name + ", not " +
                              options.arm->substr(mutated.size()));
        }
        arm = Arm{"mutated", &*mutation};
    } else if (arm.name != "baseline" && arm.name != "repass") {
        throw usage_error("--arm: no arm " + *options.arm + " (baseline, repass or mutated:NAME)");
    }
    // Arms at once would rewrite each other's progress line: each says when it starts and ends.
    const auto progress = progress_lines(true);
    int interrupted = 0;
    const auto result = run_arm(*opened, arm, private_dir, *progress, &interrupted);
    if (!result) return 128 + interrupted;
    console::out() << evaluation::arm_result_json(*result).dump(-1, ' ', false,
                                                                json::error_handler_t::replace)
                   << '\n';
    return 0;
}

}  // namespace

int qualify_command(const CommonOptions &common, const QualifyOptions &options) {
    if (options.arm) return arm_command(common, options);
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
    const auto plan = plan_of(mutations);

    std::vector<evaluation::ArmResult> arms;
    int interrupted = 0;
    if (options.jobs == 1) {
        const auto progress = progress_lines(common.quiet);
        for (const auto &arm : plan) {
            auto result = run_arm(*opened, arm, private_dir, *progress, &interrupted);
            if (!result) break;
            arms.push_back(std::move(*result));
        }
    } else {
        std::vector<ArmLaunch> launches;
        for (const auto &arm : plan) {
            launches.push_back({spec_of(arm), arm.mutation != nullptr
                                                  ? evaluation::mutation_bytes(*arm.mutation)
                                                  : std::vector<std::uint8_t>{}});
        }
        // The re-pass starts once every mutated arm has ended: it shows no state carried.
        auto outcome = run_arm_processes(options.argv, launches, plan.size() - 1, options.jobs);
        if (outcome.failed != 0) {
            console::err() << "tea-evaluate: qualify " << id << ": an arm could not run (exit "
                           << outcome.failed
                           << "); the other arms were ended and no qualification is recorded\n";
            return outcome.failed;
        }
        interrupted = outcome.interrupted;
        for (auto &result : outcome.results) {
            if (result) arms.push_back(std::move(*result));
        }
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
