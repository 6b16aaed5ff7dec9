// The tool-server client's round trip over the streamable HTTP transport against its stdio one:
// `ping` to the MCP TypeScript SDK's own servers (the pinned filesystem server on stdio; the
// SDK's StreamableHTTPServerTransport answering in JSON and in an event stream, from
// tests/core/services/mcp_http_sdk_server.mjs), interleaved round by round, medians. Unconfined:
// what the transport costs, not the bridge.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "core/services/fake_server.hpp"
#include "core/services/port_server.hpp"
#include "services/mcp_client.hpp"
#include "services/mcp_http_transport.hpp"

namespace {

using namespace std::chrono_literals;
using tea::services::McpClient;
using tea::services::McpOutcome;

struct Variant {
    const char *name;
    McpClient *client;
    std::vector<double> ms;
};

int bench(int argc, char **argv) {
    std::size_t rounds = 300;
    if (!tea::bench::read_numeric_options(argc, argv, {{"--rounds", &rounds}})) {
        return 2;
    }
    const std::string root = tea::bench::scratch_dir("tea-mcp-bench");
    tea::test::FakeServer stdio_server{{TEA_BENCH_NODE, TEA_BENCH_MCP_FILESYSTEM, root}};
    McpClient stdio{std::move(stdio_server.to_server), std::move(stdio_server.from_server)};
    std::vector<std::unique_ptr<tea::test::PortServer>> http_servers;
    std::vector<std::unique_ptr<McpClient>> http_clients;
    for (const char *mode : {"json", "sse"}) {
        http_servers.push_back(std::make_unique<tea::test::PortServer>(
            std::vector<std::string>{TEA_BENCH_NODE, TEA_BENCH_MCP_HTTP_SDK_SERVER,
                                     TEA_BENCH_MCP_MODULES, mode},
            30s));
        if (http_servers.back()->port() == 0) {
            std::fprintf(stderr, "the SDK's %s server reported no port\n", mode);
            return 1;
        }
        http_clients.push_back(
            std::make_unique<McpClient>(std::make_unique<tea::services::McpHttpTransport>(
                tea::services::McpHttpEndpoint{"127.0.0.1", http_servers.back()->port()})));
    }
    std::vector<Variant> variants{{"stdio (pipes)", &stdio, {}},
                                  {"http, JSON answers", http_clients[0].get(), {}},
                                  {"http, event-stream answers", http_clients[1].get(), {}}};
    for (auto &variant : variants) {
        if (variant.client->initialize(30s).outcome != McpOutcome::result) {
            std::fprintf(stderr, "%s: the handshake failed\n", variant.name);
            return 1;
        }
    }
    std::printf("cpu pressure before: %s\n", tea::bench::cpu_pressure().c_str());
    for (std::size_t round = 0; round < rounds + 10; ++round) {
        for (auto &variant : variants) {
            const auto start = std::chrono::steady_clock::now();
            const auto reply = variant.client->request("ping", nullptr, 10s);
            const std::chrono::duration<double, std::milli> took =
                std::chrono::steady_clock::now() - start;
            if (reply.outcome != McpOutcome::result) {
                std::fprintf(stderr, "%s: ping failed: %s\n", variant.name, reply.detail.c_str());
                return 1;
            }
            if (round >= 10) {  // the first rounds warm Node's code paths up
                variant.ms.push_back(took.count());
            }
        }
    }
    std::printf("cpu pressure after:  %s\n", tea::bench::cpu_pressure().c_str());
    const double stdio_median = tea::bench::median(variants[0].ms);
    std::printf("%-28s %12s %10s\n", "ping round trip", "median ms", "x stdio");
    for (const auto &variant : variants) {
        const double median = tea::bench::median(variant.ms);
        std::printf("%-28s %12.3f %10.2f\n", variant.name, median, median / stdio_median);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    return tea::bench::run_guarded("mcp_transport_bench", [&] { return bench(argc, argv); });
}
