// A rubric judge's round trip against the Messages API mock, beside the CLI's bare `-p` round trip
// in the same run. The judge's turn is the runtime's whole path: the agent's directories made, its
// environment built, the prompt recorded, the CLI run through the call session's grader view (the
// configured backend, as `run` uses it), its answer redacted, read and checked against the rubric,
// and the directories removed. The bare turn is the same CLI with the same arguments, variables and
// prompt on stdin, spawned directly with a fresh home. Interleaved over --rounds (default 15),
// alternating which goes first, after one warm-up round of each; medians, their difference and
// ratio. A third arm is the same judge with an egress list (its own network and route to the
// mock). Needs the CLI scripts/install-deps.sh installs (TEA_BENCH_CLAUDE).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "cli/runtime.hpp"
#include "evaluation/evaluation_agent.hpp"
#include "evaluation/rubric.hpp"
#include "files/beneath.hpp"
#include "messages_api_mock.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char *kRubric = "## names-the-user (required)\nNames Ada.\n\n## polite\nPolite.\n";
constexpr const char *kSystemPrompt = "You are the grader of an automated evaluation.";
constexpr const char *kModel = "claude-bench-judge";

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char **argv) {
    std::size_t rounds = 15;
    if (!tea::bench::read_numeric_options(argc, argv, {{"--rounds", &rounds}}) || rounds == 0) {
        return 2;
    }
    return tea::bench::run_guarded("judge_bench", [&] {
        const auto scratch = fs::path{tea::bench::scratch_dir("tea-judge-bench")};
        fs::create_directories(scratch / "mock");
        const json valid{{"criteria",
                          {{{"id", "names-the-user"}, {"score", 10}, {"reason", "says Ada"}},
                           {{"id", "polite"}, {"score", 9}, {"reason", "friendly"}}}}};
        tea::test::clients::MessagesApiMock mock{
            scratch / "mock", "api.mock.test", json::array(),
            json::array({json::array({{{"type", "text"}, {"text", valid.dump()}}})})};
        const std::vector<std::string> variables{
            "ANTHROPIC_BASE_URL=" + mock.base_url(),
            "NODE_EXTRA_CA_CERTS=" + mock.ca_file().string(),
            "HTTPS_PROXY=" + mock.proxy_url(),
            "CLAUDE_CODE_MAX_RETRIES=0",
            "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-bench",
        };
        std::vector<std::string> problems;
        const auto rubric = tea::evaluation::parse_rubric(kRubric, problems);
        const std::string prompt =
            "Grade the greeting 'Hello, Ada!' against the rubric.\n" + std::string{kRubric};

        // The judge: the runtime's session, as `run` opens it.
        auto session = tea::cli::open_session({});
        tea::files::RunDirectory private_dir{session->private_root()};
        tea::call::Logins logins;
        tea::evaluation::AgentSetup setup;
        setup.program = TEA_BENCH_CLAUDE;
        setup.model = kModel;
        setup.environment = variables;
        // The same judge with `egress`: a network of its own, the mock reached through a route
        // of its own (the proxy opened and closed with each turn, the shim in front of it).
        auto routed_setup = setup;
        routed_setup.egress = {
            {"api.mock.test", static_cast<std::uint16_t>(mock.api_port()), {"127.0.0.1"}, true}};
        routed_setup.egress_name = "rubric judge";
        const auto records = scratch / "records";
        fs::create_directories(records);
        std::size_t turn_number = 0;
        const auto judge_turn = [&](const tea::evaluation::AgentSetup &chosen) {
            const auto start = Clock::now();
            tea::evaluation::EvaluationAgent agent{*session, logins, private_dir, chosen};
            tea::evaluation::AgentTurnRequest request;
            request.system_prompt = kSystemPrompt;
            request.prompt = prompt;
            request.record_dir = records;
            request.record_name = std::to_string(++turn_number);
            const auto turn = agent.ask(request);
            std::vector<std::string> wrong;
            if (!turn.answered ||
                !tea::evaluation::check_judge_answer(turn.text, rubric, 10, wrong)) {
                std::fprintf(stderr, "the judge's turn failed: %s %s\n", turn.error.c_str(),
                             wrong.empty() ? "" : wrong.front().c_str());
                std::exit(1);
            }
            return ms_since(start);
        };

        // The bare CLI: the same arguments, variables and prompt, a fresh home each turn.
        const auto prompt_file = scratch / "prompt.txt";
        tea::files::write_atomically(prompt_file, prompt);
        tea::evaluation::AgentTurnRequest bare_request;
        bare_request.system_prompt = kSystemPrompt;
        const auto bare_argv = tea::evaluation::agent_turn_arguments(setup, bare_request);
        for (const auto &v : variables) {
            ::putenv(const_cast<char *>(v.c_str()));  // NOLINT: kept alive by `variables`
        }
        for (const char *quiet :
             {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
              "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "BUN_ENABLE_CRASH_REPORTING=0"}) {
            ::putenv(const_cast<char *>(quiet));  // NOLINT
        }
        std::size_t bare_number = 0;
        const auto bare_turn = [&] {
            const auto home = scratch / ("bare-" + std::to_string(++bare_number));
            fs::create_directories(home / "work");
            ::setenv("HOME", home.c_str(), 1);
            ::setenv("TMPDIR", home.c_str(), 1);
            const auto ms = tea::bench::run_ms(bare_argv, (home / "work").string(),
                                               {{0, prompt_file.string()}});
            fs::remove_all(home);
            return ms;
        };

        std::printf("cpu pressure before: %s\n", tea::bench::cpu_pressure().c_str());
        (void)judge_turn(setup);
        (void)judge_turn(routed_setup);
        (void)bare_turn();
        std::vector<double> judge;
        std::vector<double> routed;
        std::vector<double> bare;
        for (std::size_t i = 0; i < rounds; ++i) {
            if (i % 2 == 0) {
                judge.push_back(judge_turn(setup));
                routed.push_back(judge_turn(routed_setup));
                bare.push_back(bare_turn());
            } else {
                bare.push_back(bare_turn());
                routed.push_back(judge_turn(routed_setup));
                judge.push_back(judge_turn(setup));
            }
        }
        std::printf("cpu pressure after:  %s\n", tea::bench::cpu_pressure().c_str());
        const auto j = tea::bench::median(judge);
        const auto b = tea::bench::median(bare);
        std::printf("backend %s, %zu rounds, medians:\n", session->backend_name().c_str(), rounds);
        std::printf("  bare CLI -p round trip     %8.1f ms\n", b);
        std::printf("  judge turn (runtime)       %8.1f ms  (+%.1f ms, %.2fx)\n", j, j - b, j / b);
        const auto r = tea::bench::median(routed);
        std::printf("  judge turn, own route      %8.1f ms  (+%.1f ms, %.2fx)\n", r, r - b, r / b);
        return 0;
    });
}
