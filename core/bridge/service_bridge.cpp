#include "bridge/service_bridge.hpp"

#include <fcntl.h>
#include <poll.h>

#include <ctime>
#include <utility>

#include "bridge/call_network.hpp"
#include "bridge/handed_socket.hpp"
#include "bridge/listening_check.hpp"
#include "bridge/port_file.hpp"
#include "util/error.hpp"

namespace tea::bridge {
namespace {

using Clock = std::chrono::steady_clock;

std::string utc_now_ms() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[40];
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(buf, n) + "." + std::to_string(1000 + ms).substr(1) + "Z";
}

// Waits up to `ms`; false when the call ended meanwhile.
bool pause(int call_ended, int ms) {
    pollfd p{call_ended, POLLIN, 0};
    return ::poll(&p, call_ended >= 0 ? 1 : 0, ms) <= 0 || (p.revents & (POLLIN | POLLHUP)) == 0;
}

constexpr int kPollMs = 10;

}  // namespace

nlohmann::json to_json(const BridgeRecord &r) {
    using nlohmann::json;
    return json{
        {"reportedPort", r.reported_port ? json(*r.reported_port) : json(nullptr)},
        {"bridgeAddress", r.bridge_address},
        {"bridgePort", r.bridge_port == 0 ? json(nullptr) : json(r.bridge_port)},
        {"ownPort", r.own_port},
        {"startedAt", r.started_at.empty() ? json(nullptr) : json(r.started_at)},
        {"endedAt", r.ended_at.empty() ? json(nullptr) : json(r.ended_at)},
        {"connections", r.connections},
        {"refusedAtLimit", r.refused_at_limit},
        {"closedIdle", r.closed_idle},
        {"refusal", r.refusal ? json(*r.refusal) : json(nullptr)},
    };
}

ServiceBridge::ServiceBridge(ServiceBridgeOptions options) : options_(std::move(options)) {}

ServiceBridge::~ServiceBridge() {
    stop();
}

bool ServiceBridge::start() {
    const auto deadline = Clock::now() + options_.patience;
    const auto refuse = [this](std::string sentence) {
        record_.refusal = std::move(sentence);
        return false;
    };
    // The port: read until two readings agree, so a write seen half done ("80" of "8080") is not
    // taken for the port.
    PortFileReading reading;
    std::optional<std::uint16_t> previous;
    for (;;) {
        reading = read_port_file(options_.dir);
        if (reading.state == PortFileReading::State::refused) {
            return refuse(reading.sentence);
        }
        if (reading.state == PortFileReading::State::port) {
            if (previous == reading.port) {
                break;
            }
            previous = reading.port;
        }
        if (Clock::now() >= deadline) {
            return refuse(reading.state == PortFileReading::State::empty
                              ? "the service wrote no port in " +
                                    (options_.dir / kPortFileName).string() + " within " +
                                    std::to_string(options_.patience.count()) + " ms"
                              : "the service's port file kept changing");
        }
        if (!pause(options_.call_ended, kPollMs)) {
            return refuse("the service ended before it wrote its port");
        }
    }
    record_.reported_port = reading.port;
    // Listening: a service may write its port a moment before it listens on it.
    Listening listening;
    std::optional<pid_t> inside;
    for (;;) {
        inside = options_.own_network ? process_in_call_network(options_.pid) : options_.pid;
        // Until bwrap has made the call's network there is none to read: a port a host process
        // listens on must never pass for the service's.
        listening = inside ? check_listening(*inside, reading.port)
                           : Listening{false, false, false,
                                       "nothing listens on port " + std::to_string(reading.port) +
                                           ": the call has no process in its network"};
        if (listening.ok) {
            break;
        }
        if (listening.refusal.rfind("nothing listens", 0) != 0 || Clock::now() >= deadline) {
            return refuse(listening.refusal);
        }
        if (!pause(options_.call_ended, kPollMs)) {
            // Said as the last look found it: nothing there until the call ended (a port of
            // another network, or one the service never opened).
            return refuse(listening.refusal + " (looked for until the call ended)");
        }
    }
    // The network the listening check read is the one every handed socket must be in; held open
    // so that its identity stays the call's for the bridge's life.
    const std::string network = "/proc/" + std::to_string(*inside) + "/ns/net";
    call_network_.reset(::open(network.c_str(), O_RDONLY | O_CLOEXEC));
    if (!call_network_) {
        return refuse("cannot open " + network +
                      " to check the connections the relay hands over: " + errno_text(errno));
    }
    HostListenerOptions host;
    host.wanted_port = reading.port;
    service_ = {listening.ipv4 ? bridge_preface::Family::ipv4 : bridge_preface::Family::ipv6,
                reading.port, true};
    host.service = service_;
    host.relay_socket = options_.dir / kRelaySocketName;
    host.limits = options_.limits;
    host.call_network = call_network_.get();
    listener_ = std::make_unique<HostListener>(host);
    record_.bridge_port = listener_->port();
    record_.own_port = listener_->own_port();
    record_.started_at = utc_now_ms();
    return true;
}

std::uint16_t ServiceBridge::host_port() const {
    return listener_ ? listener_->port() : 0;
}

HandedFd ServiceBridge::connect_service(std::chrono::milliseconds timeout, std::string &refusal) {
    if (!listener_ || !record_.ended_at.empty()) {
        refusal = "the bridge into the service is not open";
        return {};
    }
    auto fd =
        hand_over((options_.dir / kRelaySocketName).string(),
                  ServiceEnd{service_, call_network_.get()}, timeout, options_.call_ended, refusal);
    if (fd) {
        ++direct_connections_;
    }
    return fd;
}

void ServiceBridge::stop() {
    if (!listener_ || !record_.ended_at.empty()) {
        return;
    }
    listener_->stop();
    record_.ended_at = utc_now_ms();
}

BridgeRecord ServiceBridge::record() const {
    BridgeRecord r = record_;
    if (listener_) {
        const auto &c = listener_->counts();
        r.connections = c.carried.load() + direct_connections_;
        r.refused_at_limit = c.waited_at_limit.load();
        r.closed_idle = c.idle_closed.load();
    }
    return r;
}

}  // namespace tea::bridge
