#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "evaluation/evaluation.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {

int check_command(const CommonOptions &common, const std::string &eval_dir) {
    const auto loaded = evaluation::load(eval_dir);
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
