// The egress CONNECT proxy of one call: it serves HTTP CONNECT on a Unix stream socket and
// tunnels bytes to the host:port pairs its Policy allows, answering everything else with a
// status and a sentence (400 malformed head or host, 403 not allowed, 405 not CONNECT, 502 no
// resolution or no connection, 503 tunnel budget spent).
//
// One thread of its own runs every connection: epoll, edge-triggered, non-blocking sockets, and
// splice(2) through a pipe per direction (or a bounded buffer) for tunnel bytes.
//
// Name resolution runs on a fixed pool of resolver threads (ProxyOptions::resolver_threads), fed
// by a queue and answering through an eventfd, because getaddrinfo blocks and cannot be
// cancelled. A fixed pool rather than a thread per request keeps the thread count bounded
// whatever a target sends; a lookup beyond the pool waits its turn, and its client gets 502 once
// resolve_timeout passes (the lookup is dropped from the queue, or finishes unheard if it had
// started). Only a host:port an item lists is ever queued, and each queued lookup holds one of
// the tunnel budget's slots, so the queue never holds more than max_tunnels lookups.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "policy.hpp"

namespace tea::egress {

inline constexpr std::size_t kMaxRefusalRecords = 50;  // distinct refusals kept
inline constexpr std::size_t kMaxRecordFieldBytes = 500;

struct ProxyOptions {
    // From accept to the end of the request head, however slowly its bytes arrive.
    std::chrono::milliseconds head_timeout{10'000};
    // From the end of the head to the resolver's answer (the lookup itself cannot be cancelled;
    // the client gets its 502 when this passes).
    std::chrono::milliseconds resolve_timeout{15'000};
    // For each address tried.
    std::chrono::milliseconds connect_timeout{10'000};
    // A tunnel with no byte in either direction for this long is closed.
    std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
    // Client connections open at once (heads being read, tunnels, answers being written).
    std::size_t max_connections = 128;
    // Tunnels this proxy opens in its life; the request after the last is answered 503.
    std::size_t max_tunnels = 128;
    std::size_t resolver_threads = 2;
    // Bytes in flight per direction of a tunnel (a pipe's capacity under splice).
    std::size_t buffer_bytes = std::size_t{256} * 1024;
    // Move tunnel bytes with splice(2) through a pipe per direction instead of copying them
    // through a buffer; falls back to the buffer for a tunnel that cannot get its pipes.
    bool use_splice = true;
};

// One distinct refused request; equal refusals are counted, not repeated.
struct RefusalRecord {
    int status = 0;  // the HTTP status answered: 400, 403, 405, 502 or 503
    std::string host;
    std::uint16_t port = 0;
    std::string entry;
    std::string reason;
    std::string address;  // the resolved addresses, when the host resolved
    std::uint64_t count = 0;
};

struct ProxyRecords {
    std::vector<RefusalRecord> refusals;  // at most kMaxRefusalRecords, in first-seen order
    std::uint64_t omitted = 0;            // refused requests that fit no kept record
    std::uint64_t tunnels_opened = 0;
};

class ConnectProxy {
   public:
    ConnectProxy(Policy policy, ProxyOptions options = {});
    ~ConnectProxy();
    ConnectProxy(const ConnectProxy &) = delete;
    ConnectProxy &operator=(const ConnectProxy &) = delete;

    // Binds `socket_path` (mode 0600; its directory must exist, be owned by this user and be
    // writable by no one else) and starts serving. Throws std::system_error or
    // std::invalid_argument naming the path when it cannot; a proxy starts once.
    void start(const std::filesystem::path &socket_path);

    // Closes every connection and tunnel, joins the threads and removes the socket. Idempotent.
    // A name lookup in progress is waited for (getaddrinfo cannot be interrupted).
    void stop();

    bool running() const;
    ProxyRecords records() const;  // thread-safe

   private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tea::egress
