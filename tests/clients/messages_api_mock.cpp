#include "messages_api_mock.hpp"

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "support/process.hpp"

namespace tea::test::clients {

namespace fs = std::filesystem;
using nlohmann::json;

MessagesApiMock::MessagesApiMock(const fs::path &dir, std::string host, const json &turns,
                                 const json &plain_turns, const json &script_fields)
    : host_(std::move(host)), ca_(dir / "ca.pem"), log_(dir / "requests.jsonl") {
    const auto env = environment_with({});
    const auto pki = run({"/bin/sh", TEA_MAKE_TEST_PKI, dir.string(), host_}, env);
    if (pki.status != 0) {
        throw std::runtime_error("make_test_pki.sh failed: " + pki.err);
    }
    const auto script = dir / "script.json";
    auto script_json = script_fields;
    script_json["turns"] = turns;
    script_json["plainTurns"] = plain_turns;
    write_file(script.string(), script_json.dump());
    const auto ports = dir / "ports.json";
    server_.emplace(
        std::vector<std::string>{"/usr/bin/python3", "-I", TEA_MESSAGES_API_MOCK, "--host", host_,
                                 "--script", script.string(), "--log", log_.string(), "--cert",
                                 (dir / "server.pem").string(), "--key",
                                 (dir / "server.key").string(), "--ports", ports.string()},
        env, std::vector<std::pair<int, int>>{}, dir);
    const bool up = bwrap::eventually([&] {
        const auto listening = json::parse(read_file(ports.string()), nullptr, false);
        if (!listening.is_object()) {
            return false;
        }
        api_port_ = listening.value("api", 0);
        proxy_port_ = listening.value("proxy", 0);
        return api_port_ > 0 && proxy_port_ > 0;
    });
    if (!up) {
        std::ostringstream why;
        why << server_->wait(std::chrono::milliseconds{0});
        throw std::runtime_error("the Messages API mock did not start\n" + why.str());
    }
}

std::vector<json> MessagesApiMock::log() const {
    std::vector<json> entries;
    std::ifstream in{log_};
    for (std::string line; std::getline(in, line);) {
        entries.push_back(json::parse(line));
    }
    return entries;
}

std::vector<json> MessagesApiMock::requests() const {
    auto entries = log();
    std::erase_if(entries, [](const json &e) { return e.at("kind") != "request"; });
    return entries;
}

std::vector<std::string> MessagesApiMock::refused_tunnels() const {
    std::vector<std::string> refused;
    for (const auto &e : log()) {
        if (e.at("kind") == "connect" && !e.at("allowed").get<bool>()) {
            refused.push_back(e.at("target").get<std::string>());
        }
    }
    return refused;
}

std::vector<json> tool_results(const std::vector<json> &requests) {
    std::vector<json> results;
    std::set<std::string> seen;  // each request carries the whole conversation again
    for (const auto &request : requests) {
        const auto &body = request.at("body");
        if (!body.is_object() || !body.contains("messages")) {
            continue;
        }
        for (const auto &message : body.at("messages")) {
            if (!message.at("content").is_array()) {
                continue;
            }
            for (const auto &block : message.at("content")) {
                if (block.value("type", "") != "tool_result" ||
                    !seen.insert(block.value("tool_use_id", "")).second) {
                    continue;
                }
                std::string text;
                const auto &content = block.at("content");
                if (content.is_string()) {
                    text = content.get<std::string>();
                } else {
                    for (const auto &part : content) {
                        text += part.value("text", "");
                    }
                }
                results.push_back({{"tool_use_id", block.at("tool_use_id")}, {"content", text}});
            }
        }
    }
    return results;
}

json write_read_echo_turns(const fs::path &written, const fs::path &read) {
    return json::array({
        json::array({{{"type", "text"}, {"text", "Writing the file."}},
                     {{"type", "tool_use"},
                      {"name", "Write"},
                      {"input", {{"file_path", written.string()}, {"content", kWrittenContent}}}}}),
        json::array(
            {{{"type", "tool_use"}, {"name", "Read"}, {"input", {{"file_path", read.string()}}}}}),
        json::array({{{"type", "text"}, {"text", "credential: {{authorization}}"}}}),
    });
}

}  // namespace tea::test::clients
