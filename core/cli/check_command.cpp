#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "cli/runtime.hpp"
#include "evaluation/evaluation.hpp"
#include "evaluation/historical_probes.hpp"
#include "evaluation/login_asks.hpp"
#include "evaluation/trials.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {

namespace {

// Each login names an installed login adapter (an entry's, the judge's, a brief agent's): a run
// would stop at it (exit 2) after the evaluation was accepted here.
void check_logins(const CommonOptions &common, evaluation::Loaded &loaded) {
    if (!loaded.problems.empty() || evaluation::login_uses(loaded.evaluation).empty()) {
        return;
    }
    const auto runtime = load_runtime(common);
    evaluation::report_uninstalled_login_adapters(loaded.evaluation, runtime.registry,
                                                  loaded.problems);
}

// Each historical probe's revision names a commit of the clone: a run would stop at it (exit 12)
// after the evaluation was accepted here.
void check_revisions(evaluation::Loaded &loaded) {
    const auto &probes = loaded.evaluation.probes;
    if (!loaded.problems.empty() || std::none_of(probes.begin(), probes.end(), [](const auto &p) {
            return !p.revision.empty();
        })) {
        return;
    }
    const auto source = evaluation::open_source(loaded.evaluation);
    evaluation::report_unresolved_revisions(loaded.evaluation, source, loaded.problems,
                                            loaded.notes);
}

void print_notes(const std::vector<evaluation::Problem> &notes) {
    for (const auto &note : notes) {
        console::err() << "note: " << printable(evaluation::to_string(note)) << '\n';
    }
}

nlohmann::json problems_json(const std::vector<evaluation::Problem> &problems) {
    auto out = nlohmann::json::array();
    for (const auto &p : problems) {
        out.push_back({{"file", p.file.string()},
                       {"line", p.line},
                       {"column", p.column},
                       {"where", p.where},
                       {"message", p.message}});
    }
    return out;
}

}  // namespace

int check_command(const CommonOptions &common, const std::string &eval_dir) {
    auto loaded = evaluation::load(eval_dir);
    check_logins(common, loaded);
    check_revisions(loaded);
    print_problems(loaded.problems);
    print_notes(loaded.notes);
    if (common.json) {
        const nlohmann::json doc{{"ok", loaded.problems.empty()},
                                 {"problems", problems_json(loaded.problems)},
                                 {"notes", problems_json(loaded.notes)}};
        // A file name need not be UTF-8; the record replaces what JSON cannot carry.
        console::out() << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
    if (!loaded.problems.empty()) {
        throw usage_error("check: " + std::to_string(loaded.problems.size()) + " problem(s) in " +
                          printable(eval_dir));
    }
    if (!common.json) {
        const auto &e = loaded.evaluation;
        console::out() << "ok: " << e.registry.size() << " entries, " << e.probes.size()
                       << " probes, " << e.trials << " trials, confinement "
                       << (e.confinement ? "on" : "off") << '\n';
    }
    return static_cast<int>(ExitCode::ok);
}

}  // namespace tea::cli
