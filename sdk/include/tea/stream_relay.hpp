// A relay of byte streams: each connection accepted on a listener is paired with one the caller's
// connect function opens, and bytes are carried both ways until both directions ended. The egress
// shim carries a target's TCP connections to the CONNECT proxy's Unix socket with it; the bridge
// into a started service carries the host's TCP connections to a Unix socket, and the socket's
// connections to the service's loopback port, with it (docs/services-bridge-design.md).
//
//   tea::stream_relay::Limits limits;  // pairs at once, idle timeout
//   tea::stream_relay::serve(listeners, [&] { return open_destination(); }, limits, stop_fd);
//
// Listeners and the descriptors the connect function returns must be non-blocking. serve returns
// when stop_fd (when not -1) becomes readable, closing every pair, or when poll fails. C++17, like
// the rest of the SDK.
#ifndef TEA_STREAM_RELAY_HPP
#define TEA_STREAM_RELAY_HPP

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tea::stream_relay {

struct Limits {
    // Connections carried at once; more wait in the listener's backlog, so thousands of clients
    // cost queue room and never descriptors or memory.
    std::size_t max_pairs = 256;
    // A pair that carried nothing either way for this long is closed, so stalled peers cannot
    // hold every slot; 0 keeps pairs however long they idle.
    std::chrono::milliseconds idle{0};
};

struct Counts {
    std::uint64_t carried = 0;      // accepted and paired
    std::uint64_t unreachable = 0;  // accepted, the destination refused: closed at once
    std::uint64_t idle_closed = 0;  // closed by the idle timeout
};

inline constexpr std::size_t kBufferBytes = std::size_t{64} * 1024;

// One direction of a pair: bytes read from `from` waiting to be written to `to`. Its buffer is
// bounded, so a peer that never reads makes the relay stop reading the sender (backpressure): a
// pair holds at most two buffers, however much a client sends.
struct Flow {
    std::array<char, kBufferBytes> buffer{};
    std::size_t start = 0;
    std::size_t end = 0;
    bool eof = false;   // `from` reached its end
    bool shut = false;  // `to` was shut for writing after the last byte
    [[nodiscard]] bool empty() const { return start == end; }
};

struct Pair {
    int accepted = -1;     // the connection a listener accepted
    int destination = -1;  // the connection the connect function opened
    Flow up;               // accepted -> destination
    Flow down;             // destination -> accepted
    bool broken = false;
    std::chrono::steady_clock::time_point last_progress;
};

// Reads what fits from `from` into the flow, then writes what it holds to `to`. True when a byte
// moved or an end was seen.
inline bool move(Flow &f, int from, int to, bool &broken) {
    bool progress = false;
    if (!f.eof && f.end < f.buffer.size()) {
        const auto n = ::recv(from, f.buffer.data() + f.end, f.buffer.size() - f.end, 0);
        if (n > 0) {
            f.end += static_cast<std::size_t>(n);
            progress = true;
        } else if (n == 0) {
            f.eof = true;
            progress = true;
        } else if (errno != EAGAIN && errno != EINTR) {
            broken = true;
            return true;
        }
    }
    while (!f.empty()) {
        const auto n = ::send(to, f.buffer.data() + f.start, f.end - f.start, MSG_NOSIGNAL);
        if (n > 0) {
            f.start += static_cast<std::size_t>(n);
            progress = true;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            break;
        } else {
            broken = true;
            return true;
        }
    }
    if (f.empty()) {
        f.start = f.end = 0;
        if (f.eof && !f.shut) {
            ::shutdown(to, SHUT_WR);
            f.shut = true;
        }
    }
    return progress;
}

inline short wanted(const Flow &out, const Flow &in) {
    short events = 0;
    if (!out.eof && out.end < out.buffer.size()) {
        events |= POLLIN;
    }
    if (!in.empty()) {
        events |= POLLOUT;
    }
    return events;
}

inline int poll_timeout(const std::vector<std::unique_ptr<Pair>> &pairs, const Limits &limits,
                        std::chrono::steady_clock::time_point now) {
    if (limits.idle.count() <= 0 || pairs.empty()) {
        return -1;
    }
    auto oldest = pairs.front()->last_progress;
    for (const auto &p : pairs) {
        oldest = std::min(oldest, p->last_progress);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(oldest + limits.idle - now);
    return static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 0, 60'000));
}

// A non-blocking connection to the Unix socket at `path` (shorter than sun_path, checked by the
// caller), or -1. A Unix connect completes at once or not at all: EAGAIN (the listener's backlog
// is full) is a refusal, and the client sees its connection closed.
inline int connect_unix(const std::string &path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof a.sun_path - 1));
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Carries connections until stop_fd is readable (true) or poll fails (false).
template <typename Connect>
bool serve(const std::vector<int> &listeners, Connect &&connect, const Limits &limits,
           int stop_fd = -1, Counts *counts = nullptr) {
    Counts local;
    Counts &c = counts != nullptr ? *counts : local;
    std::vector<std::unique_ptr<Pair>> pairs;
    std::vector<pollfd> fds;
    const std::size_t first_pair = listeners.size() + 1;
    for (;;) {
        fds.clear();
        fds.push_back({stop_fd, static_cast<short>(stop_fd >= 0 ? POLLIN : 0), 0});
        for (const int l : listeners) {
            fds.push_back({l, static_cast<short>(pairs.size() < limits.max_pairs ? POLLIN : 0), 0});
        }
        for (const auto &p : pairs) {
            fds.push_back({p->accepted, wanted(p->up, p->down), 0});
            fds.push_back({p->destination, wanted(p->down, p->up), 0});
        }
        const int timeout = poll_timeout(pairs, limits, std::chrono::steady_clock::now());
        if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
            return false;
        }
        const bool stopping = (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
        const auto now = std::chrono::steady_clock::now();
        const std::size_t polled = pairs.size();
        for (std::size_t i = 0; i < listeners.size() && !stopping; ++i) {
            if ((fds[1 + i].revents & POLLIN) == 0) {
                continue;
            }
            const int accepted =
                ::accept4(listeners[i], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (accepted < 0) {
                continue;
            }
            const int destination = connect();
            if (destination < 0) {
                // No destination: the client sees its connection closed, as with no route at all.
                ::close(accepted);
                ++c.unreachable;
                continue;
            }
            auto p = std::make_unique<Pair>();
            p->accepted = accepted;
            p->destination = destination;
            p->last_progress = now;
            pairs.push_back(std::move(p));
            ++c.carried;
        }
        for (std::size_t k = 0; k < pairs.size() && !stopping; ++k) {
            Pair &p = *pairs[k];
            // An error on either side ends the pair: polling it again would only spin.
            if (k < polled &&
                ((fds[first_pair + 2 * k].revents | fds[first_pair + 2 * k + 1].revents) &
                 POLLERR) != 0) {
                p.broken = true;
                continue;
            }
            bool progress = move(p.up, p.accepted, p.destination, p.broken);
            if (!p.broken) {
                progress = move(p.down, p.destination, p.accepted, p.broken) || progress;
            }
            if (progress) {
                p.last_progress = now;
            } else if (limits.idle.count() > 0 && now - p.last_progress >= limits.idle) {
                // A peer that stalls (sends nothing, reads nothing) would hold its slot forever.
                p.broken = true;
                ++c.idle_closed;
            }
        }
        // A partition keeps every ended pair whole past the point (remove_if would leave them
        // moved from), so their descriptors can be closed.
        const auto ended =
            std::stable_partition(pairs.begin(), pairs.end(), [stopping](const auto &p) {
                return !(stopping || p->broken || (p->up.shut && p->down.shut));
            });
        for (auto it = ended; it != pairs.end(); ++it) {
            ::close((*it)->accepted);
            ::close((*it)->destination);
        }
        pairs.erase(ended, pairs.end());
        if (stopping) {
            return true;
        }
    }
}

}  // namespace tea::stream_relay

#endif
