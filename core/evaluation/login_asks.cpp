#include "evaluation/login_asks.hpp"

#include "evaluation/rubric_judge.hpp"
#include "evaluation/sealed_brief_agent.hpp"
#include "util/error.hpp"

namespace tea::evaluation {

std::vector<LoginUse> login_uses(const Evaluation &ev) {
    const auto evaluation_json = ev.folder / "evaluation.json";
    std::vector<LoginUse> uses;
    for (const auto &entry : ev.registry) {
        if (entry.login) {
            uses.push_back(
                {{entry.interface_id, *entry.login, entry.executable, entry.environment_keys},
                 true,
                 evaluation_json,
                 "entry '" + entry.interface_id + "' field 'login'"});
        }
    }
    if (const auto &judge = ev.evaluator.rubric; judge && judge->login) {
        uses.push_back({{kJudgeLoginEntry, *judge->login, judge->program, judge->environment_keys},
                        false,
                        evaluation_json,
                        "evaluator field 'login'"});
    }
    for (const auto &probe : ev.probes) {
        if (probe.conversation && probe.conversation->agent.login) {
            const auto &agent = probe.conversation->agent;
            uses.push_back({{sealed_brief_login_grant(probe.name), *agent.login, agent.program,
                             agent.environment_keys},
                            false,
                            probe.file,
                            "probe '" + probe.name + "' field 'conversation.agent.login'"});
        }
    }
    return uses;
}

void report_uninstalled_login_adapters(const Evaluation &ev, const plugins::Registry &plugins,
                                       std::vector<Problem> &problems) {
    for (const auto &use : login_uses(ev)) {
        try {
            (void)plugins.require(use.ask.login, plugins::Kind::login);
        } catch (const Error &e) {
            problems.push_back({use.file, 0, 0, use.where, e.what()});
        }
    }
}

}  // namespace tea::evaluation
