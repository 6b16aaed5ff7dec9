// The Messages API mock (messages_api_mock.py) started for one test: a certificate authority and
// a server certificate made for it (make_test_pki.sh), the agent's turns from a script, and the
// log of what the client sent, read back as JSON. See tests/clients/README.md.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tea::test::clients {

class MessagesApiMock {
   public:
    // Starts the mock for `host` with `turns` (the script's "turns" array) and `plain_turns` (its
    // "plainTurns": the answers to requests that offer no tools), its files under `dir` (which
    // must exist); `script_fields` are further fields of the script ("acceptedCredentials").
    // Throws when it cannot start.
    MessagesApiMock(const std::filesystem::path &dir, std::string host, const nlohmann::json &turns,
                    const nlohmann::json &plain_turns = nlohmann::json::array(),
                    const nlohmann::json &script_fields = nlohmann::json::object());
    MessagesApiMock(const MessagesApiMock &) = delete;
    MessagesApiMock &operator=(const MessagesApiMock &) = delete;
    MessagesApiMock(MessagesApiMock &&) = delete;
    MessagesApiMock &operator=(MessagesApiMock &&) = delete;
    ~MessagesApiMock() = default;

    // What a client is pointed at: ANTHROPIC_BASE_URL, HTTPS_PROXY (the mock's own proxy, for an
    // unconfined client) and NODE_EXTRA_CA_CERTS.
    [[nodiscard]] std::string base_url() const {
        return "https://" + host_ + ":" + std::to_string(api_port_);
    }
    [[nodiscard]] std::string proxy_url() const {
        return "http://127.0.0.1:" + std::to_string(proxy_port_);
    }
    [[nodiscard]] const std::filesystem::path &ca_file() const { return ca_; }
    [[nodiscard]] int proxy_port() const { return proxy_port_; }
    // The API's port on 127.0.0.1, for an egress item that lets a confined client reach it.
    [[nodiscard]] int api_port() const { return api_port_; }
    [[nodiscard]] const std::string &host() const { return host_; }

    // The log so far: every request to the API ({"kind": "request", ...}) and every tunnel asked
    // of the proxy ({"kind": "connect", "target", "allowed"}), in order.
    [[nodiscard]] std::vector<nlohmann::json> log() const;
    [[nodiscard]] std::vector<nlohmann::json> requests() const;
    // The CONNECT targets ("host:port") the proxy refused.
    [[nodiscard]] std::vector<std::string> refused_tunnels() const;

   private:
    std::string host_;
    std::filesystem::path ca_;
    std::filesystem::path log_;
    int api_port_ = 0;
    int proxy_port_ = 0;
    std::optional<bwrap::Process> server_;
};

// Every tool_result block the requests carried back, as {"tool_use_id", "content" (text)}.
std::vector<nlohmann::json> tool_results(const std::vector<nlohmann::json> &requests);

// The turns of the client tests: a Write of `written` (its content kWrittenContent), a Read of
// `read`, and a text that echoes the request's Authorization header as "credential: <value>".
inline constexpr const char *kWrittenContent = "written by the scripted agent\n";
nlohmann::json write_read_echo_turns(const std::filesystem::path &written,
                                     const std::filesystem::path &read);

}  // namespace tea::test::clients
