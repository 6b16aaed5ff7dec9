#include "evaluation/evaluation_agent.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/environment.hpp"
#include "files/beneath.hpp"

namespace tea::evaluation {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

// The system's variables an agent keeps from the invoker's environment: where programs and the
// locale are. Nothing else of the invoker's (its tokens, its proxies) reaches the agent unless
// the caller passes it.
constexpr const char *kSystemVariables[] = {"PATH", "LANG", "LC_ALL", "TZ"};

// Claude Code's switches for the routes it opens on its own (tests/clients/README.md): an agent
// of the evaluation layer talks to the model's API and to nothing else.
constexpr const char *kClaudeQuietVariables[] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
    "DISABLE_ERROR_REPORTING=1", "BUN_ENABLE_CRASH_REPORTING=0"};

std::string read_capped(const stdfs::path &path, std::uint64_t cap) {
    std::ifstream in{path, std::ios::binary};
    std::string text;
    text.resize(cap);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

}  // namespace

std::vector<egress::Item> route_items(const std::vector<EgressItem> &items) {
    std::vector<egress::Item> out;
    out.reserve(items.size());
    for (const auto &i : items) {
        out.push_back({i.host, i.port, i.addresses, i.pinned});
    }
    return out;
}

json turn_record_fields(const AgentTurn &turn,
                        const std::function<std::string(const stdfs::path &)> &relative) {
    return {{"prompt", relative(turn.prompt_file)},
            {"answer", relative(turn.answer_file)},
            {"stderr", relative(turn.stderr_file)},
            {"exitCode", turn.exit_code},
            {"timedOut", turn.timed_out},
            {"elapsedMs", turn.elapsed.count()},
            {"egressRefusals", turn.egress_refusals},
            {"egressRefusalsOmitted", turn.egress_refusals_omitted}};
}

AgentTurn read_agent_answer(const std::string &output) {
    AgentTurn turn;
    const auto doc = json::parse(output, nullptr, false);
    if (!doc.is_object() || doc.value("type", "") != "result") {
        turn.error = "the agent's output is not its JSON result";
        return turn;
    }
    if (doc.contains("session_id") && doc["session_id"].is_string()) {
        turn.session_id = doc["session_id"].get<std::string>();
    }
    const bool failed = !doc.contains("is_error") || !doc["is_error"].is_boolean() ||
                        doc["is_error"].get<bool>() || doc.value("subtype", "") != "success";
    if (!doc.contains("result") || !doc["result"].is_string()) {
        turn.error = "the agent's result holds no text (subtype \"" +
                     doc.value("subtype", std::string{}) + "\")";
        return turn;
    }
    turn.text = doc["result"].get<std::string>();
    if (failed) {
        turn.error = "the agent reported an error: " + turn.text;
        return turn;
    }
    turn.answered = true;
    return turn;
}

std::vector<std::string> agent_turn_arguments(const AgentSetup &setup,
                                              const AgentTurnRequest &request) {
    // Claude Code 2.1.332: "--tools ''" offers the model no tool at all (the agent reads and
    // writes nothing but its answer); --system-prompt replaces the CLI's own; the configuration
    // of MCP servers and the slash commands of the home are not loaded.
    std::vector<std::string> argv{setup.program.string(),
                                  "-p",
                                  "--output-format",
                                  "json",
                                  "--model",
                                  setup.model,
                                  "--tools",
                                  "",
                                  "--strict-mcp-config",
                                  "--disable-slash-commands",
                                  "--system-prompt",
                                  request.system_prompt};
    if (request.resume) {
        argv.insert(argv.end(), {"--resume", *request.resume});
    }
    return argv;
}

EvaluationAgent::EvaluationAgent(call::CallSession &session, call::Logins &logins,
                                 files::RunDirectory &private_dir, AgentSetup setup)
    : session_(session),
      logins_(logins),
      setup_(std::move(setup)),
      root_(private_dir.make_directory("agent-")) {
    for (const char *dir : {"home", "work", "tmp"}) {
        stdfs::create_directory(root_ / dir);
        stdfs::permissions(root_ / dir, stdfs::perms::owner_all);
    }
}

EvaluationAgent::~EvaluationAgent() {
    files::remove_tree(root_);
}

json EvaluationAgent::record() const {
    return {{"agent", setup_.agent},
            {"program", setup_.program.string()},
            {"model", setup_.model},
            {"login", setup_.login_entry.empty() ? json(nullptr) : json(setup_.login_adapter)},
            {"loginGrant", setup_.login_entry.empty() ? json(nullptr) : json(setup_.login_entry)},
            {"egress", setup_.egress.empty() || route_dropped_
                           ? json(nullptr)
                           : json::parse(egress::items_to_json(setup_.egress))}};
}

std::vector<std::string> EvaluationAgent::environment() {
    std::vector<std::string> env;
    const auto invoker = exec::current_environment();
    for (const char *name : kSystemVariables) {
        std::string value;
        if (exec::find_variable(invoker, name, &value) != nullptr) {
            exec::set_variable(env, name, value);
        }
    }
    exec::set_variable(env, "HOME", (root_ / "home").string());
    exec::set_variable(env, "TMPDIR", (root_ / "tmp").string());
    env.insert(env.end(), std::begin(kClaudeQuietVariables), std::end(kClaudeQuietVariables));
    for (const auto &entry : setup_.environment) {
        const auto eq = entry.find('=');
        exec::set_variable(env, entry.substr(0, eq),
                           eq == std::string::npos ? "" : entry.substr(eq + 1));
    }
    return env;
}

AgentTurn EvaluationAgent::ask(const AgentTurnRequest &request) {
    const auto &dir = request.record_dir;
    const auto prompt_file = dir / (request.record_name + "-prompt.txt");
    const auto answer_file = dir / (request.record_name + "-answer.json");
    const auto stderr_file = dir / (request.record_name + "-stderr.txt");
    if (request.prompt.size() > kAgentPromptCap) {
        AgentTurn failed;
        failed.error = "the prompt holds " + std::to_string(request.prompt.size()) +
                       " bytes, more than the " + std::to_string(kAgentPromptCap) +
                       " a turn may send";
        return failed;
    }
    // What the agent is sent is exactly what is recorded: the prompt redacted first.
    files::write_atomically(prompt_file, logins_.redact(request.prompt));

    exec::LaunchSpec spec;
    spec.argv = agent_turn_arguments(setup_, request);
    spec.workspace = (root_ / "work").string();
    spec.cwd = spec.workspace;
    spec.env = environment();
    for (const auto &p : setup_.read_only) {
        // Fooled by what it grades, the agent still cannot rewrite the grading material or plant
        // a hook in the project's git directory.
        spec.read_only.push_back(p.string());
    }
    spec.runtime_prefix = session_.runtime().paths.prefix.string();
    if (!setup_.login_entry.empty()) {
        logins_.apply(setup_.login_entry, spec, true);
        // The grader view shows no login files: the agent's home is the runtime's own, so the
        // files the grant holds are written there, where the CLI looks for them.
        for (const auto &file : spec.login_files) {
            const auto path = root_ / "home" / file.home_path;
            stdfs::create_directories(path.parent_path());
            files::write_atomically(path, file.content);
            stdfs::permissions(path, stdfs::perms::owner_read | stdfs::perms::owner_write);
        }
        spec.login_files.clear();
    }

    auto run = session_.run_options({});
    run.timeout = request.timeout;
    run.out.file = answer_file;
    run.out.cap_bytes = kAgentAnswerCap;
    run.err.file = stderr_file;
    run.err.cap_bytes = kAgentAnswerCap;
    run.out.redact = run.err.redact = logins_.matcher();
    run.in = {exec::StdinSpec::Kind::file, prompt_file};
    std::error_code ec;
    stdfs::remove(answer_file, ec);  // the runner creates its files, never over an old one
    stdfs::remove(stderr_file, ec);
    std::string confinement;
    json egress_records;
    const auto r = session_.grade(std::move(spec), run, &confinement,
                                  {setup_.egress_name, setup_.egress}, &egress_records);
    logins_.reread();
    logins_.redact_file(answer_file, r.out.truncated);
    logins_.redact_file(stderr_file, r.err.truncated);

    AgentTurn turn;
    if (r.started && r.exit_code == 0 && !r.timed_out && !r.out.truncated) {
        turn = read_agent_answer(read_capped(answer_file, kAgentAnswerCap));
    } else if (!r.started) {
        turn.error = "the agent did not start: " + r.start_error;
    } else if (r.timed_out) {
        turn.error = "the agent gave no answer within " + std::to_string(request.timeout.count()) +
                     " ms; its processes were ended";
    } else if (r.out.truncated) {
        turn.error = "the agent printed more than the " + std::to_string(kAgentAnswerCap) +
                     " bytes an answer may hold";
    } else {
        // Its JSON result, when it printed one, says why (an API error, a refused login).
        const auto said = read_agent_answer(read_capped(answer_file, kAgentAnswerCap));
        turn.session_id = said.session_id;
        turn.error =
            (r.signal != 0 ? "the agent was ended by signal " + std::to_string(r.signal)
                           : "the agent exited with status " + std::to_string(r.exit_code)) +
            (said.text.empty() ? "" : ": " + said.text);
    }
    turn.exit_code = r.exit_code;
    turn.signal = r.signal;
    turn.timed_out = r.timed_out;
    turn.interrupted_by = r.interrupted_by;
    turn.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(r.elapsed);
    turn.confinement = confinement;
    if (egress_records.is_object() && egress_records.contains("refusals") &&
        egress_records["refusals"].is_array()) {
        turn.egress_refusals = egress_records["refusals"];
        turn.egress_refusals_omitted = egress_records.value("omitted", std::int64_t{0});
    }
    // A backend that confines nothing drops the route: the records must not claim the agent had
    // one.
    route_dropped_ = route_dropped_ || (!setup_.egress.empty() && confinement == "opt-out");
    turn.prompt_file = prompt_file;
    turn.answer_file = answer_file;
    turn.stderr_file = stderr_file;
    turn.error = logins_.redact(turn.error);
    return turn;
}

}  // namespace tea::evaluation
