#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "cli/runtime.hpp"
#include "evaluation/evaluation.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {

namespace {

// Each entry's login names an installed login adapter: a run would stop at it (exit 2) after
// the evaluation was accepted here.
void check_logins(const CommonOptions &common, evaluation::Loaded &loaded) {
    const auto &registry = loaded.evaluation.registry;
    if (!loaded.problems.empty() ||
        std::none_of(registry.begin(), registry.end(),
                     [](const auto &e) { return e.login.has_value(); })) {
        return;
    }
    const auto runtime = load_runtime(common);
    for (const auto &entry : registry) {
        if (!entry.login) continue;
        try {
            (void)runtime.registry.require(*entry.login, plugins::Kind::login);
        } catch (const Error &e) {
            loaded.problems.push_back({loaded.evaluation.folder / "evaluation.json", 0, 0,
                                       "entry '" + entry.interface_id + "' field 'login'",
                                       e.what()});
        }
    }
}

}  // namespace

int check_command(const CommonOptions &common, const std::string &eval_dir) {
    auto loaded = evaluation::load(eval_dir);
    check_logins(common, loaded);
    print_problems(loaded.problems);
    if (common.json) {
        auto problems = nlohmann::json::array();
        for (const auto &p : loaded.problems) {
            problems.push_back({{"file", p.file.string()},
                                {"line", p.line},
                                {"column", p.column},
                                {"where", p.where},
                                {"message", p.message}});
        }
        const nlohmann::json doc{{"ok", loaded.problems.empty()}, {"problems", problems}};
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
