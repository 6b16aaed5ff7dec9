// run: every trial of an evaluation (evaluation/trials.hpp), with a progress line per call and
// the summary at the end.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <iomanip>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/node_check.hpp"
#include "cli/report.hpp"
#include "cli/slurm_array.hpp"
#include "cli/trial_tasks.hpp"
#include "evaluation/login_asks.hpp"
#include "evaluation/trials.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kPathsShown = 50;           // on the terminal; the records keep every one
constexpr std::size_t kEvaluatorLinesShown = 10;  // of its stderr; the file keeps them all

// One line per call on a terminal, rewritten while the call runs (trial i of N, the probe, the
// elapsed time); plain lines otherwise, so a log stays readable.
class Progress final : public evaluation::TrialProgress {
   public:
    Progress(bool quiet, bool plain)
        : tty_(!quiet && !plain && ::isatty(STDERR_FILENO) != 0), quiet_(quiet) {}
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;
    ~Progress() override { stop(); }

    void start(const std::string &what) override {
        stop();
        what_ = what;
        started_ = std::chrono::steady_clock::now();
        if (quiet_) return;
        if (!tty_) {
            console::err() << "tea-evaluate: " << what_ << " ...\n";
            return;
        }
        running_ = true;
        ticker_ = std::thread([this] {
            std::unique_lock lock{mutex_};
            while (running_) {
                draw();
                wake_.wait_for(lock, std::chrono::milliseconds{250});
            }
        });
    }

    void finish(const std::string &outcome) override {
        stop();
        if (quiet_) return;
        const auto elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        std::ostringstream line;
        line << "tea-evaluate: " << what_ << ": " << outcome << " (" << std::fixed
             << std::setprecision(1) << elapsed << " s)";
        console::err() << (tty_ ? "\r\033[K" : "") << line.str() << '\n';
    }

    void refusals(const nlohmann::json &egress_records) override {
        print_egress_refusals(egress_records);
    }

    // An error, so shown under -q too: the cause is in the evaluator's stderr, not in "error".
    void evaluator_error(const std::string &why, const stdfs::path &stderr_file) override {
        console::err() << "tea-evaluate: " << what_ << ": no verdict: " << printable(why) << '\n';
        print_last_lines(stderr_file, kEvaluatorLinesShown);
    }

   private:
    void draw() {
        const auto elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        std::ostringstream line;
        line << "\r\033[Ktea-evaluate: " << what_ << " " << std::fixed << std::setprecision(1)
             << elapsed << " s";
        console::err() << line.str() << std::flush;
    }
    void stop() {
        {
            const std::lock_guard lock{mutex_};
            running_ = false;
        }
        wake_.notify_all();
        if (ticker_.joinable()) ticker_.join();
    }

    bool tty_;
    bool quiet_;
    std::string what_;
    std::chrono::steady_clock::time_point started_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool running_ = false;
    std::thread ticker_;
};

// A malformed evaluation never starts a target: its problems, and that nothing ran.
void refuse(const std::vector<evaluation::Problem> &problems, const stdfs::path &folder) {
    print_problems(problems);
    console::err() << "tea-evaluate: " << problems.size() << " problem"
                   << (problems.size() == 1 ? "" : "s") << " in " << printable(folder.string())
                   << "; nothing was run\n";
}

}  // namespace

std::optional<OpenedEvaluation> open_evaluation(const CommonOptions &common,
                                                const stdfs::path &folder) {
    auto loaded = evaluation::load(folder);
    const auto &problems = loaded.problems;
    if (!problems.empty() && std::all_of(problems.begin(), problems.end(),
                                         [](const auto &p) { return p.cannot_confine; })) {
        // A path no confinement can carry is the host's to change, not the folder's: exit 12.
        print_problems(problems);
        throw host_error("the confinement cannot carry the path" +
                         std::string{problems.size() == 1 ? "" : "s"} +
                         " above; move the evaluation folder, or point TMPDIR, to a path "
                         "without quotes, backslashes or control characters, outside the "
                         "evaluation folder. Nothing was run");
    }
    if (!loaded.problems.empty()) {
        refuse(loaded.problems, folder);
        return std::nullopt;
    }
    OpenedEvaluation o{std::move(loaded.evaluation), nullptr, {}, {}};
    o.source = evaluation::open_source(o.ev);
    o.session = open_session(common, !o.ev.confinement);
    // As `check` says it: the file and field of a login whose adapter is not installed.
    std::vector<evaluation::Problem> adapters;
    evaluation::report_uninstalled_login_adapters(o.ev, o.session->runtime().registry, adapters);
    if (!adapters.empty()) {
        refuse(adapters, folder);
        return std::nullopt;
    }
    o.logins = evaluation::grant_logins(o.ev, *o.session);
    return o;
}

std::unique_ptr<evaluation::TrialProgress> progress_lines(bool quiet, bool plain) {
    return std::make_unique<Progress>(quiet, plain);
}

int run_command(const CommonOptions &common, const RunCommandOptions &options) {
    if (options.trial_task) return trial_task_command(common, options);
    if (options.node_check) return node_check_command(common, options);
    auto opened = open_evaluation(common, options.evaluation);
    if (!opened) {
        return static_cast<int>(ExitCode::usage);
    }
    const auto &ev = opened->ev;
    auto &session = *opened->session;
    const auto &source = opened->source;

    evaluation::RunState state{ev, session, source, evaluation::new_run_id()};
    // An earlier run whose coordinator was killed outright may still have tasks on a cluster.
    for (const auto &line : reclaim_abandoned_runs(ev.folder / "runs", state.run_id)) {
        console::err() << "tea-evaluate: " << printable(line) << '\n';
    }
    state.logins = std::move(opened->logins);
    const auto &settings = session.runtime().config.executor;
    const int jobs = options.jobs.value_or(settings.jobs);
    const auto executor = options.executor.value_or(settings.kind);
    state.executor = {{"kind", executor}, {"jobs", jobs}};
    files::RunDirectory private_dir{session.private_root()};
    evaluation::begin_run(state, private_dir);
    console::err() << "tea-evaluate: run " << state.run_id << ": " << ev.trials << " trial"
                   << (ev.trials == 1 ? "" : "s") << " of " << ev.probes.size() << " call"
                   << (ev.probes.size() == 1 ? "" : "s") << ", "
                   << (source.git ? "commit " + source.commit.substr(0, 12)
                                  : "a copy of the project")
                   << (ev.confinement ? "" : ", confinement OFF (the file system is not sandboxed)")
                   << '\n';
    for (const auto &weakened : evaluation::weakened_sentences(state.run["weakened"])) {
        // Said before the first call, so the user can stop a run that cannot count.
        console::err() << "tea-evaluate: run " << state.run_id
                       << ": the evaluation declares confinement, and " << weakened
                       << ": this run will be Invalid\n";
    }

    if (jobs == 1 && executor == "local") {
        Progress progress{common.quiet, false};
        evaluation::run_trials(state, private_dir, progress);
    } else {
        evaluation::recording_failure(state, [&] {
            if (executor == "slurm") {
                run_slurm_array(state, options.argv, settings, jobs);
            } else {
                run_trial_tasks(state, options.argv, jobs, settings.retries);
            }
        });
    }
    const auto summary = evaluation::finish_run(state);

    console::err() << "tea-evaluate: "
                   << state.logins.redact(state.run["summary"].get<std::string>()) << '\n';
    std::vector<std::string> withheld_first_paths = summary.observed;
    std::vector<std::string> withheld{ev.folder.string(), session.private_root().string()};
    if (source.git) withheld.push_back(source.git_dir.string());
    evaluation::withheld_first(withheld_first_paths, withheld);
    std::size_t shown = 0;
    for (const auto &path : withheld_first_paths) {
        if (++shown > kPathsShown) {
            console::err() << "  ... and " << summary.observed.size() - kPathsShown
                           << " more (manifest.json lists every one)\n";
            break;
        }
        // A path is the target's choice of name: it may spell a secret.
        console::err() << "  " << printable(state.logins.redact(path)) << "  ("
                       << printable(state.observed_reason[path]) << ")\n";
    }
    console::err() << "tea-evaluate: records: " << printable(state.records.string()) << '\n';
    if (common.json) {
        console::out() << json{{"runId", state.run_id},
                               {"runDir", state.records.string()},
                               {"status", state.run["status"]},
                               {"summary", state.logins.redact_record(state.run["summary"])}}
                              .dump(-1, ' ', console::on_terminal(stdout),
                                    json::error_handler_t::replace)
                       << '\n';
    }
    if (state.interrupted != 0) return 128 + state.interrupted;
    return summary.invalid() ? static_cast<int>(ExitCode::invalid) : 0;
}

}  // namespace tea::cli
