// tea-evaluate: the command-line entry point.
#include <linux/close_range.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

// CLI11 includes <iostream>, and with it a static std::ios_base::Init that builds the standard
// streams before main (a cost of every command; util/console.hpp says why the runtime does
// without them). With libstdc++ the header's own guard is set first, and the two streams CLI11
// names are declared as <iostream> would declare them, so nothing builds them. CLI11 writes only
// to the streams this file passes it (App::exit below). tests/cli checks that the executable
// builds no standard stream, and that no source of the runtime writes to one or uses the CLI11
// features that write to std::cout themselves (deprecated and retired options, AutoTimer).
#include <algorithm>
#include <array>
#include <istream>
#include <optional>
#include <ostream>
#include <sstream>
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1  // NOLINT(bugprone-reserved-identifier): libstdc++'s <iostream> guard
namespace std {              // NOLINT(cert-dcl58-cpp): the declarations <iostream> makes
extern ostream cout;         // NOLINT(readability-redundant-declaration)
extern ostream cerr;         // NOLINT(readability-redundant-declaration)
}  // namespace std
#endif
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "exec/call_runner.hpp"
#include "util/closest_match.hpp"
#include "util/console.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/signals.hpp"

namespace {

// Every subcommand and what it does, as the top-level help lists them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kSubcommands{{
    {"check", "Check an evaluation folder and name every problem in it (starts nothing)"},
    {"plugins",
     "List the plugins found, their kind, ABI and whether each is available on this host"},
    {"exec", "Run one confined, audited call of a command"},
    {"preflight",
     "Run the call on pristine copies of the workspace and name each path outside the grants "
     "that every leg opened (exit 3)"},
    {"run", "Run every trial of an evaluation; records go to EVAL_DIR/runs/<run-id>/"},
    {"score", "Decide a run's verdict from its records; writes RUN_DIR/score.json"},
    {"qualify",
     "Qualify the evaluation: the project must pass as committed, fail with each of its "
     "mutations, and pass again"},
    {"report",
     "Write one self-contained HTML page of a run's records and verdict (RUN_DIR/report.html)"},
}};

// `help [SUBCOMMAND]`: no subcommand of its own, but the command line of `[SUBCOMMAND] --help`,
// so that both print the same. The top-level help lists it after the others.
constexpr std::pair<std::string_view, std::string_view> kHelp{
    "help", "Print the help of SUBCOMMAND, or of tea-evaluate without one (as --help does)"};

// Where the word that names the subcommand is: the command line's first that is neither an option
// nor the value of one of the app's options; 0 when there is none before "--".
int first_word_at(const CLI::App &app, int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg{argv[i]};
        if (arg == "--") {
            return 0;
        }
        if (arg.starts_with('-')) {
            // "--config FILE": FILE is the option's, even when it is named like a subcommand.
            const auto *option = arg.find('=') == std::string_view::npos
                                     ? app.get_option_no_throw(std::string{arg})
                                     : nullptr;
            if (option != nullptr && option->get_items_expected_min() > 0) {
                ++i;
            }
            continue;
        }
        return i;
    }
    return 0;
}

std::string_view first_word(const CLI::App &app, int argc, char **argv) {
    const int at = first_word_at(app, argc, argv);
    return at == 0 ? std::string_view{} : std::string_view{argv[at]};
}

bool is_subcommand(std::string_view word) {
    return std::any_of(kSubcommands.begin(), kSubcommands.end(),
                       [word](const auto &known) { return known.first == word; });
}

// The options `cmd` takes, as a command line spells them ("--json", "-v").
std::vector<std::string> option_names(const CLI::App &cmd) {
    std::vector<std::string> names;
    for (const auto *option : cmd.get_options()) {
        for (const auto &name : option->get_lnames()) {
            names.push_back("--" + name);
        }
        for (const auto &name : option->get_snames()) {
            names.push_back("-" + name);
        }
    }
    return names;
}

std::string not_a_subcommand(std::string_view word) {
    std::vector<std::string> subcommands;
    subcommands.reserve(kSubcommands.size());
    for (const auto &[name, description] : kSubcommands) {
        subcommands.emplace_back(name);
    }
    return "'" + std::string{word} + "' is not a subcommand (" + tea::listed(subcommands) + ")" +
           tea::did_you_mean(word, subcommands);
}

// What a command line CLI11 refused most likely got wrong, in words that say what to write: an
// option the command does not take, or a first word that is no subcommand, each with the closest
// known one. None when the refusal is about something else, whose own message CLI11 gives.
std::optional<std::string> misspelling(const CLI::App &app, const CLI::App *named,
                                       std::string_view word) {
    for (const auto &extra : app.remaining(true)) {
        if (extra.size() < 2 || extra[0] != '-' || extra == "--") {
            continue;
        }
        const auto option = extra.substr(0, extra.find('='));
        auto known = option_names(app);
        std::string where = "tea-evaluate --help lists the options";
        if (named != nullptr) {
            const auto own = option_names(*named);
            known.insert(known.end(), own.begin(), own.end());
            where = "tea-evaluate " + named->get_name() + " --help lists the options";
            // `exec sh -c ...` without "--" hands the command's own option to tea-evaluate.
            if (named->get_option_no_throw("command") != nullptr) {
                where += "; the command's own options go after --";
            }
        }
        return "unknown option '" + option + "' (" + where + ")" + tea::did_you_mean(option, known);
    }
    if (!word.empty() && !is_subcommand(word)) {
        return not_a_subcommand(word);
    }
    return std::nullopt;
}

// `help [SUBCOMMAND] ...` as the command line `[SUBCOMMAND] --help ...`: "help" is dropped and
// "--help" put right after the subcommand (or where "help" was), before any "--" that starts an
// exec's command, whose own --help it would otherwise be. A word after help that is no
// subcommand is a usage error, as it is without help.
std::vector<std::string> help_as_option(const CLI::App &app, int argc, char **argv) {
    std::vector<std::string> args(argv, argv + argc);
    const int at = first_word_at(app, argc, argv);
    if (at == 0 || argv[at] != kHelp.first) {
        return args;
    }
    args.erase(args.begin() + at);
    std::vector<char *> rest;
    rest.reserve(args.size());
    for (auto &arg : args) {
        rest.push_back(arg.data());
    }
    int topic = first_word_at(app, static_cast<int>(rest.size()), rest.data());
    // `help help` is the help of tea-evaluate, which lists help.
    if (topic != 0 && args[static_cast<std::size_t>(topic)] == kHelp.first) {
        args.erase(args.begin() + topic);
        topic = 0;
    }
    if (topic != 0 && !is_subcommand(args[static_cast<std::size_t>(topic)])) {
        throw tea::usage_error(not_a_subcommand(args[static_cast<std::size_t>(topic)]));
    }
    args.insert(args.begin() + (topic == 0 ? at : topic + 1), "--help");
    return args;
}

int run(int argc, char **argv) {
    using namespace tea::cli;
    CommonOptions common;
    ExecOptions exec;
    PreflightOptions preflight;

    CLI::App app{
        "tea-evaluate: runs the targets of an evaluation under an OS confinement, audits "
        "what they open, and grades outside it."};
    app.require_subcommand(1);
    app.fallthrough();
    app.set_version_flag("--version", std::string{TEA_VERSION});
    app.add_option("--config", common.config_file, "A TOML configuration file (over the user's)")
        ->check(CLI::ExistingFile);
    app.add_option("--backend", common.backend, "The confinement backend plugin to use");
    app.add_option("--observer", common.observer, "The observer plugin that audits the call");
    app.add_flag("--json", common.json, "Machine output on stdout; logs stay on stderr");
    app.add_flag("-v,--verbose", common.verbose, "More log output (repeatable)");
    app.add_flag("-q,--quiet", common.quiet, "Log errors only");

    // Only the subcommand the command line names is made, with its options: making the other five
    // and their options is a cost of every command (bench/README.md). With none named (the help,
    // or a command line CLI11 refuses anyway) every subcommand is made, so the help lists them all.
    auto args = help_as_option(app, argc, argv);
    std::vector<char *> arg_pointers;
    arg_pointers.reserve(args.size() + 1);
    for (auto &arg : args) {
        arg_pointers.push_back(arg.data());
    }
    argc = static_cast<int>(arg_pointers.size());
    arg_pointers.push_back(nullptr);  // argv[argc], as the kernel hands it
    argv = arg_pointers.data();
    const auto word = first_word(app, argc, argv);
    const auto named = is_subcommand(word) ? word : std::string_view{};
    // The subcommand `name`, made only when the command line names it or names none.
    const auto subcommand = [&](std::string_view name) -> CLI::App * {
        if (!named.empty() && named != name) {
            return nullptr;
        }
        for (const auto &[known, description] : kSubcommands) {
            if (known == name) {
                return app.add_subcommand(std::string{known}, std::string{description});
            }
        }
        return nullptr;
    };
    auto *check_cmd = subcommand("check");
    auto *plugins = subcommand("plugins");
    auto *exec_cmd = subcommand("exec");
    auto *preflight_cmd = subcommand("preflight");
    auto *run_cmd = subcommand("run");
    auto *score_cmd = subcommand("score");
    auto *qualify_cmd = subcommand("qualify");
    auto *report_cmd = subcommand("report");
    if (named.empty()) {
        // Listed only: the command line `help` names never reaches the parser (help_as_option).
        app.add_subcommand(std::string{kHelp.first}, std::string{kHelp.second});
    }
    // Options only for the named one: with none named, no subcommand runs (CLI11 refuses, or
    // prints the help, which lists subcommands and not their options).
    const auto wanted = [&named](const CLI::App *cmd) {
        return cmd != nullptr && named == cmd->get_name();
    };

    std::string check_dir;
    if (wanted(check_cmd)) {
        check_cmd->add_option("EVAL_DIR", check_dir, "The evaluation folder")->required();
    }
    // The options every command that runs a call shares.
    auto call_options = [](CLI::App *cmd, tea::call::CallOptions &o) {
        cmd->add_option("--workspace", o.workspace,
                        "The call's writable workspace and working directory (default: .)");
        // One value per occurrence: the word after it is the command, not a second value. The
        // help says so, in place of CLI11's "TEXT ...", which reads as a list.
        cmd->add_option("--withhold", o.withhold,
                        "A path the target must not see (one per --withhold: repeat the option "
                        "for more)")
            ->option_text("PATH")
            ->allow_extra_args(false);
        cmd->add_option("--system-path", o.system_paths,
                        "A directory the target may read without being listed (one per "
                        "--system-path: repeat the option for more)")
            ->option_text("DIR")
            ->allow_extra_args(false);
        cmd->add_option("--timeout", o.timeout_ms, "End the call after this many milliseconds");
        cmd->add_flag("--clean-env", o.clean_env,
                      "Reduce the call's environment to the language-neutral allowlist");
        cmd->add_option("--env", o.env,
                        "Add NAME=VALUE, or NAME with the invoker's value (one per --env: repeat "
                        "the option for more)")
            ->option_text("NAME[=VALUE]")
            ->allow_extra_args(false);
        cmd->add_option("--egress", o.egress,
                        "Let the target reach HOST:PORT through the egress proxy: after '=', "
                        "only at the addresses HOST resolves to among ADDR,...; after '@', at "
                        "ADDR,... in order, never resolving HOST; an IPv6 host in brackets (one "
                        "per --egress: repeat the option for more)")
            ->option_text("HOST:PORT[=ADDR,...|@ADDR,...]")
            ->allow_extra_args(false);
        cmd->add_option("command", o.command, "The command and its arguments, after --")
            ->required();
        cmd->positionals_at_end();
    };
    if (wanted(exec_cmd)) {
        call_options(exec_cmd, exec);
        exec_cmd->add_flag(
            "--strict", exec.strict,
            "Exit 3 when the audit lists a path outside the grants, is incomplete, or did not run");
        exec_cmd
            ->add_option("--login", exec.login,
                         "Grant the call the login adapter NAME's login (its variables, its files "
                         "read-only in the call's home), and redact its secrets from the output")
            ->option_text("NAME");
    }
    if (wanted(preflight_cmd)) {
        call_options(preflight_cmd, preflight);
        preflight_cmd->add_option("--legs", preflight.legs, "How many legs to run (at least 2)");
    }
    RunCommandOptions run_opts;
    if (wanted(run_cmd)) {
        run_cmd->add_option("EVAL_DIR", run_opts.evaluation, "The evaluation folder")->required();
        run_cmd
            ->add_option("--jobs", run_opts.jobs,
                         "Make up to N trials at once, each by a task of its own ([executor] "
                         "jobs otherwise)")
            ->option_text("N")
            ->check(CLI::Range(1, 64));
        run_cmd
            ->add_option("--executor", run_opts.executor,
                         "What makes the trials: local (this machine) or slurm (a job array; "
                         "[executor] kind otherwise)")
            ->option_text("KIND")
            ->check(CLI::IsMember({"local", "slurm"}));
        // Internal: how run --jobs starts each trial's task (docs/cli.md); not in --help.
        run_cmd->add_option("--trial-task", run_opts.trial_task)->group("");
        run_cmd->add_option("--node-check", run_opts.node_check)->group("");
        run_opts.argv.assign(argv, argv + argc);
    }
    ScoreOptions score_opts;
    if (wanted(score_cmd)) {
        score_cmd
            ->add_option("RUN_DIR", score_opts.run_dir,
                         "A run's directory (EVAL_DIR/runs/ID), or EVAL_DIR or EVAL_DIR/runs for "
                         "its latest run")
            ->required();
    }
    ReportOptions report_opts;
    if (wanted(report_cmd)) {
        report_cmd
            ->add_option("RUN_DIR", report_opts.run_dir,
                         "A run's directory (EVAL_DIR/runs/ID), EVAL_DIR or EVAL_DIR/runs for "
                         "its latest run, or a qualification's folder (EVAL_DIR/runs/qualify-ID)")
            ->required();
        report_cmd->add_option("-o,--output", report_opts.output,
                               "Write the page here instead of RUN_DIR/report.html");
    }
    QualifyOptions qualify_opts;
    if (wanted(qualify_cmd)) {
        qualify_cmd->add_option("EVAL_DIR", qualify_opts.evaluation, "The evaluation folder")
            ->required();
        qualify_cmd
            ->add_option("--jobs", qualify_opts.jobs,
                         "Run up to N arms at once, each in a process of its own (the re-pass "
                         "after every mutated arm)")
            ->option_text("N")
            ->check(CLI::Range(1, 64));
        // Internal: how qualify --jobs starts each arm (docs/cli.md); not in --help.
        qualify_cmd->add_option("--arm", qualify_opts.arm)->group("");
        qualify_opts.argv.assign(argv, argv + argc);
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        if (e.get_exit_code() != 0) {
            const CLI::App *named_cmd =
                named.empty() ? nullptr : app.get_subcommand(std::string{named});
            if (auto why = misspelling(app, named_cmd, word)) {
                throw tea::usage_error(*why);
            }
        }
        // Never CLI11's defaults, std::cout and std::cerr: nothing builds those (above).
        std::ostringstream out;
        std::ostringstream err;
        const int code = app.exit(e, out, err);
        tea::console::out() << out.str();
        tea::console::err() << err.str();
        return code == 0 ? 0 : static_cast<int>(tea::ExitCode::usage);
    }
    tea::log::init(common.quiet ? -1 : common.verbose);

    const auto parsed = [](const CLI::App *cmd) { return cmd != nullptr && cmd->parsed(); };
    if (parsed(check_cmd)) {
        return check_command(common, check_dir);
    }
    if (parsed(plugins)) {
        return plugins_command(common);
    }
    if (parsed(run_cmd)) {
        return run_command(common, run_opts);
    }
    if (parsed(score_cmd)) {
        return score_command(common, score_opts);
    }
    if (parsed(qualify_cmd)) {
        return qualify_command(common, qualify_opts);
    }
    if (parsed(report_cmd)) {
        return report_command(common, report_opts);
    }
    if (parsed(preflight_cmd)) {
        return preflight_command(common, preflight);
    }
    if (parsed(exec_cmd)) {
        return exec_command(common, exec);
    }
    // require_subcommand(1) leaves no other way out of parse.
    throw tea::usage_error("a subcommand is required");
}

}  // namespace

int main(int argc, char **argv) {
    // Nothing the runtime inherited beyond 0-2 reaches a target.
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    // Memory the runtime frees is kept for its next use, large blocks included: an audit's
    // trace, its events and their JSON are megabytes built one after another, and a page the
    // process touches for the first time is a fault, which is dear on a VM.
    ::mallopt(M_MMAP_THRESHOLD, 64 << 20);   // NOLINT(concurrency-mt-unsafe): no thread yet
    ::mallopt(M_TRIM_THRESHOLD, 256 << 20);  // NOLINT(concurrency-mt-unsafe): no thread yet
    tea::exec::reserve_descriptor_table();   // before any thread: see its comment
    try {
        tea::Signals::instance().install();
        tea::exec::become_subreaper();
        return run(argc, argv);
    } catch (const tea::Error &e) {
        tea::console::err() << "tea-evaluate: " << e.what() << '\n';
        return static_cast<int>(e.code());
    } catch (const std::exception &e) {
        tea::console::err() << "tea-evaluate: internal error: " << e.what() << '\n';
        return static_cast<int>(tea::ExitCode::runtime);
    }
}
