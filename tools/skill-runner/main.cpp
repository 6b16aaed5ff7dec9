// tea-skill-runner: runs an agent CLI on a skill as a confined target, and says how the session
// ended in its exit code (docs/agent-evaluations.md, "Skill targets"):
//   0 done, 2 usage, 4 the agent could not authenticate, 5 the agent failed, 6 its turn or time
//   budget was reached.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <tea/program_path.hpp>
#include <utility>
#include <vector>

#include "agent_command.hpp"
#include "agent_run.hpp"
#include "options.hpp"
#include "skill_install.hpp"
#include "transcript.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

extern char **environ;

namespace {

using namespace tea::skill_runner;

constexpr int kDone = 0;
constexpr int kUsage = 2;
constexpr int kNoLogin = 4;
constexpr int kAgentFailed = 5;
constexpr int kBudget = 6;

// A prompt is an instruction, not a document: a larger one is a mistake in the probe.
constexpr std::size_t kPromptCap = 256 * 1024;

// Reads at most kPromptCap bytes; one more is a usage error naming the source.
std::string read_prompt(int fd, const std::string &source) {
    std::string prompt;
    std::array<char, 16384> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    for (;;) {
        const auto n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw tea::usage_error(source + ": cannot read: " + std::strerror(errno));
        }
        if (n == 0) {
            return prompt;
        }
        prompt.append(buffer.data(), static_cast<std::size_t>(n));
        if (prompt.size() > kPromptCap) {
            throw tea::usage_error(source + ": the prompt is larger than " +
                                   std::to_string(kPromptCap) + " bytes");
        }
    }
}

std::string prompt_from(const Options &options) {
    if (!options.prompt_file) {
        return read_prompt(STDIN_FILENO, "the prompt (stdin)");
    }
    const auto &file = *options.prompt_file;
    // O_NONBLOCK: a fifo under the name must not hold the runner before it has started.
    tea::UniqueFd fd{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        throw tea::usage_error("--prompt-file " + file + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw tea::usage_error("--prompt-file " + file + ": not a regular file");
    }
    return read_prompt(fd.get(), "--prompt-file " + file);
}

std::vector<std::string> own_environment() {
    std::vector<std::string> env;
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        env.emplace_back(*entry);
    }
    return env;
}

std::optional<std::string> variable(const std::vector<std::string> &env, const std::string &name) {
    for (const auto &entry : env) {
        if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
            entry[name.size()] == '=') {
            return entry.substr(name.size() + 1);
        }
    }
    return std::nullopt;
}

// The exit code of a session that ran, the worst of what happened first: a login that failed
// makes every other symptom a consequence of it, a spent budget is no failure of the agent's.
int session_exit(const AgentEnd &end, const TranscriptFindings &findings) {
    if (findings.authentication_failed) {
        std::cerr << "tea-skill-runner: the agent could not authenticate"
                  << (findings.error.empty() ? "" : ": " + findings.error) << "\n";
        return kNoLogin;
    }
    if (end.time_budget_reached) {
        std::cerr
            << "tea-skill-runner: time budget reached: the agent's process group was killed\n";
        return kBudget;
    }
    if (findings.turn_budget_reached) {
        std::cerr << "tea-skill-runner: turn budget reached\n";
        return kBudget;
    }
    if (findings.not_json > 0) {
        std::cerr << "tea-skill-runner: agent failed: transcript not JSON lines ("
                  << findings.not_json << " of " << findings.lines << " lines)\n";
        return kAgentFailed;
    }
    if (!end.exited || end.status != 0 || findings.result_is_error) {
        std::cerr << "tea-skill-runner: agent failed: " << (end.exited ? "exit " : "signal ")
                  << end.status << (findings.error.empty() ? "" : ": " + findings.error) << "\n";
        return kAgentFailed;
    }
    return kDone;
}

int run(const std::vector<std::string> &args) {
    const auto options = parse_options(args);
    const auto caller_env = own_environment();
    std::error_code ec;
    const auto cwd = std::filesystem::current_path(ec);
    const auto env = agent_environment(options.agent, caller_env, cwd.string());
    const auto home = variable(env, "HOME");
    if (options.skill) {
        if (!home || home->empty() || home->front() != '/') {
            throw tea::usage_error("--skill: HOME must name the agent's home (an absolute path)");
        }
        install_skill(*options.skill, *home, skills_dir(options.agent));
    }
    AgentSession session;
    session.prompt = prompt_from(options);
    const auto path = variable(env, "PATH");
    const auto program = options.agent_bin.value_or(agent_program(options.agent));
    const auto found = tea::program_path::resolve(
        program, path ? std::optional<std::string_view>{*path} : std::nullopt);
    if (!found) {
        std::cerr << "tea-skill-runner: agent failed: cannot run '" << program
                  << "': " << std::strerror(found.error) << "\n";
        return kAgentFailed;
    }
    session.program = found.path;
    session.argv = agent_command_line(options, program);
    session.env = env;
    session.max_time = std::chrono::seconds{options.max_seconds};
    // O_NOFOLLOW: a link the workspace holds under the transcript's name would send the agent's
    // output to whatever file it names.
    tea::UniqueFd file{::open(options.transcript.c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (!file) {
        throw tea::usage_error("--transcript " + options.transcript + ": " + std::strerror(errno));
    }
    TranscriptStream transcript{std::move(file), options.agent};
    const auto end = run_agent(session, transcript);
    return session_exit(end, transcript.findings());
}

}  // namespace

int main(int argc, char **argv) {
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const tea::Error &error) {
        std::cerr << "tea-skill-runner: " << error.what() << "\n";
        const auto code = static_cast<int>(error.code());
        return code == kUsage ? kUsage : kAgentFailed;
    } catch (const std::exception &error) {
        std::cerr << "tea-skill-runner: " << error.what() << "\n";
        return kAgentFailed;
    }
}
