#include "evaluation/conversation_probe.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <system_error>

#include "evaluation/folder_file.hpp"
#include "evaluation/program_file.hpp"
#include "util/plugin_name.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

// A path written relative to the folder that cannot climb out of it by its own words.
bool plain_relative_path(const std::string &written) {
    const fs::path p{written};
    return !written.empty() && p.is_relative() &&
           std::none_of(p.begin(), p.end(), [](const fs::path &part) {
               return part.empty() || part == "." || part == "..";
           });
}

// The brief's file, beneath the folder with no directory on its way that leads out of it: the
// brief is grading material, and a link to a file elsewhere would make the target's own files
// (or the host's) the agent's instructions.
std::optional<std::string> read_brief(const std::string &written, const fs::path &folder,
                                      std::string &content) {
    if (!plain_relative_path(written)) {
        return "must be a path relative to the evaluation folder, without '.' or '..' parts";
    }
    const auto file = folder / written;
    std::error_code ec;
    const auto parent = fs::canonical(file.parent_path(), ec);
    if (ec) {
        return "(" + file.string() + "): its directory cannot be resolved: " + ec.message();
    }
    const auto [end, _] = std::mismatch(folder.begin(), folder.end(), parent.begin(), parent.end());
    if (end != folder.end()) {
        return "(" + file.string() + ") lies outside the evaluation folder through a link";
    }
    if (auto why = read_folder_file(parent / file.filename(), kMaxBriefBytes, "64 KiB", content)) {
        return "(" + file.string() + ") " + *why;
    }
    if (content.empty()) {
        return "(" + file.string() + ") is empty: the agent would have nothing to act on";
    }
    return std::nullopt;
}

bool variable_name(const std::string &name) {
    return !name.empty() &&
           (std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_') &&
           std::all_of(name.begin(), name.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
           });
}

// "agent": {"agent", "program", "model", "login", "environmentKeys", "egress"}.
bool read_agent(const nlohmann::json &v, const ProbeProblem &problem, ConversationAgent &out) {
    if (!v.is_object()) {
        problem("agent",
                "must be an object: {\"program\": ABSOLUTE PATH, \"model\": NAME, "
                "\"login\": ADAPTER, \"environmentKeys\": [NAME, ...]}");
        return false;
    }
    bool fine = true;
    const auto bad = [&](const std::string &field, const std::string &message) {
        problem("agent." + field, message);
        fine = false;
    };
    for (const auto &item : v.items()) {
        const auto &key = item.key();
        const auto &value = item.value();
        if (key == "agent") {
            if (value != "claude") bad(key, "must be \"claude\", the only agent CLI known today");
        } else if (key == "program") {
            if (!value.is_string() || !fs::path{value.get<std::string>()}.is_absolute()) {
                bad(key, "must be the absolute path of the agent CLI on this host");
            } else {
                // A CLI is often installed as a link (/usr/local/bin/claude): what runs is the
                // file it resolves to, checked now rather than found missing in every trial.
                std::error_code ec;
                const auto program = fs::canonical(value.get<std::string>(), ec);
                const auto why =
                    ec ? std::optional<std::string>{"cannot be resolved: " + ec.message()}
                       : why_not_executable(program);
                if (why) {
                    bad(key, "\"" + value.get<std::string>() + "\" " + *why);
                } else {
                    out.program = program.string();
                }
            }
        } else if (key == "model") {
            if (!value.is_string() || value.get<std::string>().empty()) {
                bad(key, "must name the model, pinned for every turn");
            } else {
                out.model = value.get<std::string>();
            }
        } else if (key == "login") {
            if (!value.is_string() || !is_valid_plugin_name(value.get<std::string>())) {
                bad(key,
                    "must name a login adapter (\"claude\"): the agent gets a grant of its "
                    "own from it, as a rubric judge does, never a target's");
            } else {
                out.login = value.get<std::string>();
            }
        } else if (key == "environmentKeys") {
            if (!value.is_array()) {
                bad(key, "must be an array of variable names");
                continue;
            }
            for (const auto &name : value) {
                if (!name.is_string() || !variable_name(name.get<std::string>())) {
                    bad(key, "must hold variable names ([A-Za-z_][A-Za-z0-9_]*): " + name.dump());
                    continue;
                }
                out.environment_keys.push_back(name.get<std::string>());
            }
        } else if (key == "egress") {
            // Read where every egress list is (evaluation.cpp), with the same checks.
        } else {
            bad(key,
                "is unknown: not a field of a conversation's agent (fields here: agent, "
                "program, model, login, environmentKeys, egress)");
        }
    }
    if (!v.contains("program")) bad("program", "is required: the agent CLI's absolute path");
    if (!v.contains("model")) bad("model", "is required: the model is pinned");
    return fine;
}

}  // namespace

std::optional<ConversationProbe> read_conversation_probe(const nlohmann::json &v,
                                                         const fs::path &folder,
                                                         std::int64_t max_elapsed_ms,
                                                         const ProbeProblem &report) {
    const auto problem = [&](const std::string &field, const std::string &message) {
        report("conversation." + field, message);
    };
    if (!v.is_object()) {
        report("conversation",
               "must be an object: {\"brief\": PATH, \"maxTurns\": N, \"turnTimeoutMs\": MS, "
               "\"agent\": {...}}");
        return std::nullopt;
    }
    ConversationProbe out;
    bool fine = true;
    for (const auto &item : v.items()) {
        const auto &key = item.key();
        const auto &value = item.value();
        if (key == "brief") {
            if (!value.is_string()) {
                problem(key, "must be a string: a file of the evaluation folder");
                fine = false;
                continue;
            }
            out.brief_path = value.get<std::string>();
            if (auto why = read_brief(out.brief_path, folder, out.brief)) {
                problem(key, "\"" + out.brief_path + "\" " + *why);
                fine = false;
            }
        } else if (key == "maxTurns") {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
                value.get<std::int64_t>() > kMaxConversationTurns) {
                problem(key,
                        "must be an integer from 1 to " + std::to_string(kMaxConversationTurns));
                fine = false;
                continue;
            }
            out.max_turns = value.get<int>();
        } else if (key == "turnTimeoutMs") {
            const auto ms = read_probe_timeout(
                value, max_elapsed_ms,
                [&](const std::string &, const std::string &message) { problem(key, message); });
            fine = ms.has_value() && fine;
            if (ms) out.turn_timeout_ms = *ms;
        } else if (key == "agent") {
            fine = read_agent(value, problem, out.agent) && fine;
        } else {
            problem(key,
                    "is unknown: not a field of a conversation (fields here: brief, "
                    "maxTurns, turnTimeoutMs, agent)");
            fine = false;
        }
    }
    if (!v.contains("agent")) {
        problem("agent", "is required: the agent CLI that plays the brief's part");
        fine = false;
    }
    if (!v.contains("brief")) {
        problem("brief", "is required: the file of the evaluation folder the agent is given");
        fine = false;
    }
    if (!v.contains("turnTimeoutMs") && max_elapsed_ms > 0) {
        out.turn_timeout_ms = std::min(out.turn_timeout_ms, max_elapsed_ms);
    }
    if (!fine) return std::nullopt;
    return out;
}

}  // namespace tea::evaluation
