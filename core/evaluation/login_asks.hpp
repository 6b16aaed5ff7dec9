// Who in an evaluation asks a login adapter for a grant (docs/agent-evaluations.md#logins): each
// registry entry that declares a login, for its target, and each agent of the evaluation layer
// that names one (the rubric judge, a conversation probe's sealed-brief agent), for itself alone.
// Every ask has a name of its own, so no grant is shared between a target and an agent: the
// judge's is "rubric judge", a brief agent's "sealed brief <probe>", names no interface id can
// take. `check` and `run` refuse an ask whose adapter is not installed from this one list, with
// the file and field that wrote it; grant_logins (trials.hpp) asks them all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "call/logins.hpp"
#include "evaluation/evaluation.hpp"
#include "plugins/loader.hpp"

namespace tea::evaluation {

struct LoginUse {
    call::LoginAsk ask;
    // A registry entry's: its grant is applied to confined targets, whose backend must show its
    // files. An evaluation-layer agent's files are written into the agent's own home instead.
    bool target = false;
    std::filesystem::path file;  // the file that names the adapter (evaluation.json, a probe's)
    std::string where;           // as a Problem's: "probe '00-x' field 'conversation.agent.login'"
};

// Every ask of the evaluation, the registry's first in file order, then the judge's, then each
// conversation probe's in probe order.
std::vector<LoginUse> login_uses(const Evaluation &ev);

// A problem for each use whose adapter `plugins` does not hold as a login adapter (not installed,
// another kind of plugin, refused), naming the file and field that wrote it.
void report_uninstalled_login_adapters(const Evaluation &ev, const plugins::Registry &plugins,
                                       std::vector<Problem> &problems);

}  // namespace tea::evaluation
