// What the client tests of `tea-evaluate run` share: an example's copy committed as a project, the
// environment tea-evaluate runs in against the mock, and the records it leaves.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "claude_cli.hpp"
#include "messages_api_mock.hpp"
#include "support/process.hpp"

namespace tea::test::clients {

inline nlohmann::json read_json(const std::filesystem::path &path) {
    std::ifstream in{path};
    return nlohmann::json::parse(in, nullptr, false);
}

// The run directory `tea-evaluate --json run` printed; empty when it made none.
inline std::filesystem::path run_dir_of(const Outcome &o) {
    const auto doc = nlohmann::json::parse(o.out, nullptr, false);
    return doc.is_object() && doc.contains("runDir")
               ? std::filesystem::path{doc["runDir"].get<std::string>()}
               : std::filesystem::path{};
}

// Makes `project` a git repository of one commit holding all it holds. Throws naming the git
// command that failed.
inline void commit_project(const std::filesystem::path &project, const std::string &message) {
    for (const std::vector<std::string> &argv :
         {std::vector<std::string>{"git", "init", "-q", project.string()},
          {"git", "-C", project.string(), "add", "-A"},
          {"git", "-C", project.string(), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
           "-q", "-m", message}}) {
        const auto o = run(argv, environment_with({}));
        if (o.status != 0) {
            throw std::runtime_error("git " + argv[1] + ": " + o.err);
        }
    }
}

// Points the copy of an example at `mock`: its first entry's egress port and the CLI's directory
// as its system path, then `change`; and the probe probes/<probe>.json given the mock's
// authority as its file test-ca.pem (so it lands in the workspace), then `change_probe`.
inline void point_example_at_mock(const std::filesystem::path &eval, const std::string &probe,
                                  const MessagesApiMock &mock, const std::filesystem::path &cli,
                                  const std::function<void(nlohmann::json &)> &change,
                                  const std::function<void(nlohmann::json &)> &change_probe = {}) {
    auto evaluation = read_json(eval / "evaluation.json");
    auto &entry = evaluation["registry"][0];
    entry["egress"][0]["port"] = mock.api_port();
    entry["systemPaths"] = {cli.parent_path().string()};
    if (change) change(evaluation);
    write_file((eval / "evaluation.json").string(), evaluation.dump(2));
    const auto probe_file = eval / "probes" / (probe + ".json");
    auto probe_doc = read_json(probe_file);
    probe_doc["files"]["test-ca.pem"] = read_file(mock.ca_file().string());
    if (change_probe) change_probe(probe_doc);
    write_file(probe_file.string(), probe_doc.dump(2));
}

// tea-evaluate's environment for a run against `mock`: a home, configuration and private root
// under `base` (the home at `home`), what the examples' entries pass to the CLI through
// environmentKeys, no credential of the machine, and `extra` over it (an entry of the same name
// replaced).
inline std::vector<std::string> evaluation_environment(const std::filesystem::path &base,
                                                       const std::filesystem::path &home,
                                                       const MessagesApiMock &mock,
                                                       const std::vector<std::string> &extra) {
    std::vector<std::string> items{
        "XDG_CONFIG_HOME=/nonexistent-tea-test",
        "TEA_EVALUATE_PRIVATE_ROOT=" + (base / "private").string(),
        "HOME=" + home.string(),
        "CLAUDE_CONFIG_DIR=",
        "CLAUDE_CODE_OAUTH_TOKEN=",
        "ANTHROPIC_API_KEY=",
        "ANTHROPIC_AUTH_TOKEN=",
        "HTTPS_PROXY=",
        "https_proxy=",
        "ANTHROPIC_BASE_URL=" + mock.base_url(),
        "NODE_EXTRA_CA_CERTS=test-ca.pem",
    };
    const auto &quiet = claude_test_environment();
    items.insert(items.end(), quiet.begin(), quiet.end());
    for (const auto &item : extra) {
        const auto name = item.substr(0, item.find('=') + 1);
        std::erase_if(items, [&](const std::string &i) { return i.rfind(name, 0) == 0; });
        items.push_back(item);
    }
    return environment_with(items);
}

}  // namespace tea::test::clients
