#include "cli/slurm_array.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "cli/coordinator_lease.hpp"
#include "cli/node_check.hpp"
#include "cli/report.hpp"
#include "cli/sbatch_command.hpp"
#include "cli/score_decision.hpp"
#include "cli/trial_tasks.hpp"
#include "evaluation/run_records.hpp"
#include "evaluation/trial_task.hpp"
#include "exec/host_program.hpp"
#include "files/beneath.hpp"
#include "util/console.hpp"
#include "util/error.hpp"
#include "util/signals.hpp"

namespace tea::cli {

namespace stdfs = std::filesystem;

namespace {

// How long squeue may keep failing (slurmctld restarting, say) before the run gives up waiting.
constexpr auto kSchedulerSilence = std::chrono::seconds{120};
// How often the array is asked after: from a quarter of a second, for short arrays, doubling up
// to five seconds, so that a long run does not keep the controller busy.
constexpr auto kFirstPoll = std::chrono::milliseconds{250};
constexpr auto kLongestPoll = std::chrono::milliseconds{5000};
// How long the node check may take, waiting for a node included, before the run gives up.
constexpr auto kNodeCheckWait = std::chrono::seconds{600};

stdfs::path own_program() {
    std::error_code ec;
    auto self = stdfs::read_symlink("/proc/self/exe", ec);
    if (ec) throw runtime_failure("cannot read /proc/self/exe: " + ec.message());
    return self;
}

// A task's time limit in minutes: every probe's call to its end and the evaluator's, and five
// minutes for the task's own start, its workspace and its records. A call with no timeout of its
// own counts an hour.
long time_limit_minutes(const evaluation::Evaluation &ev) {
    std::int64_t ms = ev.evaluator.max_elapsed_ms;
    for (const auto &probe : ev.probes) {
        const auto *entry = ev.entry(probe.entry);
        ms += entry != nullptr && entry->max_elapsed_ms > 0 ? entry->max_elapsed_ms : 3'600'000;
    }
    return static_cast<long>(std::min<std::int64_t>(ms / 60'000 + 1 + 5, INT_MAX));
}

// What Slurm still holds of a job (its tasks pending or running).
struct Queued {
    std::size_t lines = 0;  // none: the job has ended
    bool running = false;   // a task of it is past pending
    std::string reason;     // why a pending task waits, as squeue says it
};

// What Slurm still holds of `job`; nullopt when squeue cannot be asked.
std::optional<Queued> queued_tasks(const std::string &job) {
    const auto r = exec::run_host_program(
        {"squeue", "--noheader", "--array", "--jobs=" + job, "--format=%t %r"});
    // A job the controller no longer holds (it forgets ended jobs after MinJobAge) has ended.
    if (!r.ok() && r.started && r.err.find("Invalid job id") != std::string::npos) {
        return Queued{};
    }
    if (!r.ok()) return std::nullopt;
    Queued queued;
    std::istringstream lines{r.out};
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        ++queued.lines;
        const auto space = line.find(' ');
        if (line.substr(0, space) != "PD") {
            queued.running = true;
        } else if (space != std::string::npos) {
            queued.reason = line.substr(space + 1);
        }
    }
    return queued;
}

// How each task ended, as scontrol still tells (it forgets finished jobs after MinJobAge).
std::map<int, std::pair<std::string, int>> task_states(const std::string &job) {
    std::map<int, std::pair<std::string, int>> states;
    const auto r = exec::run_host_program({"scontrol", "--oneliner", "show", "job", job});
    if (!r.ok()) return states;
    std::istringstream lines{r.out};
    for (std::string line; std::getline(lines, line);) {
        int task = 0;
        std::string state;
        int code = -1;
        std::istringstream words{line};
        for (std::string word; words >> word;) {
            if (word.rfind("ArrayTaskId=", 0) == 0) {
                try {
                    task = std::stoi(word.substr(12));
                } catch (const std::exception &) {
                }
            } else if (word.rfind("JobState=", 0) == 0) {
                state = word.substr(9);
            } else if (word.rfind("ExitCode=", 0) == 0) {
                // EXIT:SIGNAL
                const auto value = word.substr(9);
                const auto colon = value.find(':');
                try {
                    const int exit = std::stoi(value.substr(0, colon));
                    const int sig =
                        colon == std::string::npos ? 0 : std::stoi(value.substr(colon + 1));
                    code = sig != 0 ? 128 + sig : exit;
                } catch (const std::exception &) {
                }
            }
        }
        if (task > 0) states[task] = {state, code};
    }
    return states;
}

void cancel(const std::string &job) {
    (void)exec::run_host_program({"scancel", "--quiet", job});
}

// sbatch `command`; the job's id. Throws tea::Error (exit 12) when sbatch refuses `what`.
std::string submit(const std::vector<std::string> &command, const std::string &what) {
    const auto submitted = exec::run_host_program(command);
    if (!submitted.ok()) {
        throw host_error("sbatch did not take " + what + " (" +
                         (submitted.started ? "exit status " + std::to_string(submitted.status)
                                            : submitted.start_error) +
                         "): " + submitted.err.substr(0, 2000));
    }
    // "JOBID" or "JOBID;CLUSTER".
    auto job = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos) {
        cancel(job);
        throw host_error("sbatch answered '" + submitted.out.substr(0, 200) +
                         "', which names no job");
    }
    return job;
}

// Cancels the array unless released: an error after the submission leaves no task running for
// a run that will not merge it.
class CancelUnlessReleased {
   public:
    explicit CancelUnlessReleased(std::string job) : job_(std::move(job)) {}
    CancelUnlessReleased(const CancelUnlessReleased &) = delete;
    CancelUnlessReleased &operator=(const CancelUnlessReleased &) = delete;
    ~CancelUnlessReleased() {
        if (!job_.empty()) cancel(job_);
    }
    void release() { job_.clear(); }

   private:
    std::string job_;
};

}  // namespace

namespace {

// Waits until Slurm holds nothing of `job`, or until `deadline` (false then). A signal that
// would end the run cancels the job, and the wait goes on until it has ended (state.interrupted).
// So does a job none of whose tasks has run for `pending_limit` (a held job, a time limit above
// the partition's): *expired then says why. The lease is renewed at each poll, a quarter of its
// length apart at most.
bool wait_for_job(evaluation::RunState &state, const CoordinatorLease &lease,
                  const std::string &job,
                  std::optional<std::chrono::steady_clock::time_point> deadline,
                  std::chrono::seconds pending_limit, std::string *expired) {
    auto last_answer = std::chrono::steady_clock::now();
    auto last_running = last_answer;
    const auto longest_poll = std::min<std::chrono::milliseconds>(
        kLongestPoll, std::chrono::seconds{lease.length_s()} / 4);
    auto wait = kFirstPoll;
    for (;;) {
        lease.renew();
        if (state.interrupted == 0 && expired->empty()) {
            pollfd signal{Signals::instance().fd(), POLLIN, 0};
            if (::poll(&signal, 1, static_cast<int>(wait.count())) > 0) {
                if (const int sig = Signals::instance().pending(); sig != 0) {
                    // The array ends with the run: nothing of it goes on making trials no
                    // record will hold.
                    state.interrupted = sig;
                    wait = kFirstPoll;
                }
            }
        } else {
            // The signal taken, its descriptor stays readable: wait without it, and cancel the
            // array each time until it has ended (and so for an array pending too long).
            cancel(job);
            ::usleep(static_cast<useconds_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(wait).count()));
        }
        const auto queued = queued_tasks(job);
        if (queued) {
            last_answer = std::chrono::steady_clock::now();
            if (queued->lines == 0) return true;
            if (queued->running) last_running = last_answer;
            if (expired->empty() && last_answer - last_running > pending_limit) {
                // Bounded: a job that Slurm will never start would keep the run waiting forever.
                *expired = "Slurm job " + job + " waited more than " +
                           std::to_string(pending_limit.count()) +
                           " s with no task running (squeue's reason: " + queued->reason +
                           ") and was cancelled";
                wait = kFirstPoll;
            }
        } else if (std::chrono::steady_clock::now() - last_answer > kSchedulerSilence) {
            throw host_error("squeue has not answered for " +
                             std::to_string(kSchedulerSilence.count()) + " s about job " + job +
                             "; the array was cancelled");
        }
        if (deadline && std::chrono::steady_clock::now() > *deadline) return false;
        wait = std::min(wait * 2, longest_poll);
    }
}

// The node check (node_check.hpp): one job on the array's partition, bounded in time. Throws
// tea::Error (exit 12) naming the node when it cannot make the run's trials.
void check_node(evaluation::RunState &state, const CoordinatorLease &lease,
                const config::ExecutorSettings &settings, const stdfs::path &dir,
                const std::vector<std::string> &argv) {
    files::write_atomically(dir / "node-check.sh",
                            node_check_script(state.run_id, own_program(), argv));
    std::error_code ec;
    stdfs::permissions(dir / "node-check.sh", stdfs::perms{0755}, ec);
    const auto job =
        submit(sbatch_node_check_command(settings, state.run_id, dir, stdfs::current_path()),
               "the run's node check");
    CancelUnlessReleased guard{job};
    std::string expired;
    if (!wait_for_job(state, lease, job, std::chrono::steady_clock::now() + kNodeCheckWait,
                      std::chrono::seconds{settings.slurm_pending_limit_s}, &expired)) {
        throw host_error("the node check (Slurm job " + job + ") did not end within " +
                         std::to_string(kNodeCheckWait.count()) +
                         " s; it was cancelled, and no trial was made");
    }
    guard.release();
    if (state.interrupted != 0) return;
    if (!expired.empty()) throw host_error("the node check: " + expired + "; no trial was made");
    std::string node = "(unknown)";
    const auto shown = exec::run_host_program({"scontrol", "--oneliner", "show", "job", job});
    std::istringstream words{shown.out};
    for (std::string word; words >> word;) {
        if (word.rfind("BatchHost=", 0) == 0) node = word.substr(10);
    }
    std::string unread;
    const auto result = read_record(dir / "node-check.json", &unread);
    std::string tail;
    std::string ignored;
    // The end of what the check said on stderr (the node's error, when it wrote no result).
    if (const auto err = files::read_head_beneath(dir, "node-check.err", 2000, &ignored)) {
        tail = printable(*err);
    }
    const auto failed = node_check_failure(result, unread, node, tail);
    if (!failed.empty()) throw host_error(failed + "; no trial was made");
    console::err() << "tea-evaluate: run " << state.run_id << ": node "
                   << result["node"].get<std::string>()
                   << " sees the run's folder and confines its calls\n";
}

// The array of `trials` (task I making trial I), up to `jobs` at once, submitted, waited for and
// cancelled with the run; how each task ended, in the order of `trials`. Its job id goes to
// run.json's executor under `key`.
std::vector<TrialTaskEnd> array_tasks(evaluation::RunState &state, const CoordinatorLease &lease,
                                      const config::ExecutorSettings &settings,
                                      const stdfs::path &dir, const std::vector<int> &trials,
                                      int jobs, const char *key) {
    // 1-T for the whole run, a list of indices for the trials made again.
    std::string array;
    const bool whole = trials.size() == static_cast<std::size_t>(trials.back());
    for (const int i : trials) {
        if (whole) break;
        array += (array.empty() ? "" : ",") + std::to_string(i);
    }
    if (whole) array = "1-" + std::to_string(trials.back());
    const auto sbatch =
        sbatch_array_command(settings, state.run_id, dir, array + "%" + std::to_string(jobs),
                             stdfs::current_path(), time_limit_minutes(state.ev));
    const auto job = submit(sbatch, "the run's array");
    CancelUnlessReleased guard{job};
    state.executor[key] = job;
    state.run["executor"] = state.executor;
    evaluation::save_run(state);
    console::err() << "tea-evaluate: run " << state.run_id << ": Slurm job array " << job << " of "
                   << trials.size() << " task" << (trials.size() == 1 ? "" : "s") << ", " << jobs
                   << " at once\n";

    std::string expired;
    wait_for_job(state, lease, job, std::nullopt,
                 std::chrono::seconds{settings.slurm_pending_limit_s}, &expired);
    guard.release();

    const auto states = task_states(job);
    std::vector<TrialTaskEnd> ends;
    for (const int i : trials) {
        const auto found = states.find(i);
        TrialTaskEnd end;
        // Every task is taken as started: one that never ran has no outcome, and one Slurm no
        // longer knows of may have run, which only its outcome can say.
        end.started = true;
        end.status = found != states.end() ? found->second.second : -1;
        end.how = found != states.end() ? "Slurm state " + found->second.first + " (exit " +
                                              std::to_string(end.status) + ")"
                                        : "a state Slurm no longer keeps";
        end.interrupted = found != states.end() && found->second.first == "CANCELLED";
        if (end.interrupted && !expired.empty()) {
            // Cancelled while pending: it never ran, and made again it would wait as long.
            end.how = expired;
            end.never_ran = true;
        }
        ends.push_back(end);
    }
    return ends;
}

}  // namespace

void run_slurm_array(evaluation::RunState &state, const std::vector<std::string> &argv,
                     const config::ExecutorSettings &settings, int jobs) {
    const auto dir = state.records / "slurm";
    if (::mkdir(dir.c_str(), 0755) != 0) {
        throw runtime_failure("cannot make " + dir.string() + ": " + errno_text(errno));
    }
    // Before any job: a task that finds no live coordinator makes no trial (coordinator_lease.hpp).
    const CoordinatorLease lease{dir, settings.slurm_lease_s};
    // The task's command: this binary, by the path it runs from, and this command line, with the
    // trial Slurm gives the task.
    files::write_atomically(dir / "task.sh", task_script(state.run_id, own_program(), argv));
    std::error_code ec;
    stdfs::permissions(dir / "task.sh", stdfs::perms{0755}, ec);
    check_node(state, lease, settings, dir, argv);
    if (state.interrupted != 0) return;
    // A trial made again is a task of a second array, of the same index.
    bool again = false;
    make_trials(state, settings.retries, [&](const std::vector<int> &trials) {
        auto ends =
            array_tasks(state, lease, settings, dir, trials, jobs, again ? "retryJobId" : "jobId");
        again = true;
        return ends;
    });
}

std::vector<std::string> reclaim_abandoned_runs(const stdfs::path &runs, const std::string &by) {
    std::vector<std::string> said;
    std::error_code ec;
    if (stdfs::is_symlink(runs, ec)) return said;
    for (stdfs::directory_iterator it{runs, ec}, end; !ec && it != end; it.increment(ec)) {
        const auto run_id = it->path().filename().string();
        const auto slurm = it->path() / "slurm";
        std::error_code ignored;
        if (!evaluation::is_run_id(run_id) || it->is_symlink(ignored) ||
            !stdfs::is_regular_file(stdfs::symlink_status(slurm / kLeaseFile, ignored))) {
            continue;
        }
        const auto coordinator = coordinator_state(slurm);
        if (coordinator.is != CoordinatorState::Is::gone) continue;
        std::string why;
        auto run = read_record(it->path() / "run.json", &why);
        if (run.is_null() || run.value("runId", "") != run_id ||
            run.value("status", "") != "running" || !run.contains("executor") ||
            !run["executor"].is_object() || run["executor"].value("kind", "") != "slurm") {
            continue;
        }
        // By the names the run gave its jobs: a coordinator killed between sbatch and its record
        // of the job's id left a job that only its name finds.
        bool cancelled = true;
        std::string failure;
        for (const auto &name : {"tea-" + run_id, "tea-check-" + run_id}) {
            const auto r = exec::run_host_program({"scancel", "--quiet", "--name=" + name});
            if (!r.ok()) {
                cancelled = false;
                failure = r.started ? r.err.substr(0, 500) : r.start_error;
            }
        }
        std::string gone = "run " + run_id;
        gone += "'s coordinator is gone (" + coordinator.why + ")";
        if (!cancelled) {
            said.push_back(
                gone.append(", and its Slurm jobs could not be cancelled: ").append(failure));
            continue;
        }
        // Recorded before the lease goes: a task that starts late finds the run not running.
        run["status"] = "failed";
        run["error"] = "its coordinator is gone (" + coordinator.why + "); run " + by +
                       " cancelled its Slurm jobs";
        run["finishedAt"] = evaluation::utc_now();
        try {
            files::write_atomically(
                it->path() / "run.json",
                run.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        } catch (const Error &e) {
            // A run folder this run cannot rewrite (read-only, or another user's) stops no run:
            // its lease stays, so a later run that can rewrite it still does.
            said.push_back(gone +
                           ": its Slurm jobs were cancelled, but it could not be recorded "
                           "as failed: " +
                           e.what());
            continue;
        }
        stdfs::remove(slurm / kLeaseFile, ignored);
        said.push_back(gone + ": its Slurm jobs were cancelled and the run is recorded as failed");
    }
    return said;
}

}  // namespace tea::cli
