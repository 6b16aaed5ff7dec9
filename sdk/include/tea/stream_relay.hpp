// A relay of byte streams: each connection accepted on a listener is paired with one the caller's
// connect function opens, and bytes are carried both ways until both directions ended. The egress
// shim carries a target's TCP connections to the CONNECT proxy's Unix socket with it; the bridge
// into a started service carries the host's TCP connections to a Unix socket, and the socket's
// connections to the service's loopback port, with it (docs/services-bridge-design.md).
//
//   tea::stream_relay::Limits limits;  // pairs at once, idle timeout
//   tea::stream_relay::serve(listeners, [&](int accepted) { return open_destination(); }, limits,
//                            stop_fd);
//
// Listeners and the descriptors the connect function returns must be non-blocking. The connect
// function is given the accepted connection (to read a preface from, or ignore) and returns -1
// with errno EAGAIN when it cannot connect yet (a Unix listener's full backlog, a preface not
// arrived): the accepted connection then waits, up to Limits::wait, and the connect is tried
// again; the listeners are not accepted from meanwhile. Any other -1 closes the accepted
// connection. A connect function taking a second argument, `Wake &`, may name a descriptor and
// the events that mean it can make progress, so that a waiting connection is tried again when
// they come instead of on a timer. kHandedOver says the connect function served the accepted
// connection itself (the relay handed its destination to the peer): it is closed, no pair made.
// A connect function that returns a descriptor another process shares (a socket handed over
// SCM_RIGHTS) says so with `Wake::shared`.
//
// One epoll loop carries every pair, edge-triggered, and each direction moves through a pipe with
// splice(2), so a byte is never copied into the relay's memory; a pair whose destination is shared
// is copied through a buffer of its own instead (Wake::shared says why). serve returns when stop_fd
// (when not -1) becomes readable, closing every pair, or when epoll fails. C++17, like the rest of
// the SDK.
#ifndef TEA_STREAM_RELAY_HPP
#define TEA_STREAM_RELAY_HPP

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1  // splice
#endif
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace tea::stream_relay {

struct Limits {
    // Connections carried at once; more wait in the listener's backlog, so thousands of clients
    // cost queue room and never descriptors or memory.
    std::size_t max_pairs = 256;
    // A pair that carried nothing either way for this long is closed, so stalled peers cannot
    // hold every slot; 0 keeps pairs however long they idle.
    std::chrono::milliseconds idle{0};
    // How long an accepted connection may wait for its destination before it is closed; 0 waits
    // as long as it takes (the clients behind it wait in the backlog meanwhile).
    std::chrono::milliseconds wait{0};
};

// Read by other threads while serve runs (a host listener's counts), so each is atomic.
struct Counts {
    std::atomic<std::uint64_t> carried{0};          // accepted and paired
    std::atomic<std::uint64_t> handed{0};           // accepted and served by kHandedOver
    std::atomic<std::uint64_t> unreachable{0};      // accepted, the destination refused: closed
    std::atomic<std::uint64_t> idle_closed{0};      // closed by the idle timeout
    std::atomic<std::uint64_t> waited_at_limit{0};  // times every slot was taken and clients waited
    std::atomic<std::uint64_t> open{0};             // pairs carried at this moment
};

// What a connect function returns when it served the accepted connection without a pair.
inline constexpr int kHandedOver = -2;

// A connect function's second argument. `first` (set by the loop) is true on the first call for
// an accepted connection, so that the function drops what it held for a connection the loop gave
// up on. The function may set `fd` and `events` (EPOLLIN, EPOLLOUT) when it returns EAGAIN: the
// connection is tried again when they come. The descriptor stays the function's.
struct Wake {
    bool first = false;
    int fd = -1;
    std::uint32_t events = 0;
    // Set by the connect function when the descriptor it returns shares its open file with a
    // process the relay does not trust (a socket another process handed over and may have kept).
    // Attack: splice follows the socket's own O_NONBLOCK, which lives in the shared open file, so
    // the sharer could set it blocking again and hold the whole loop in one splice. Such a pair is
    // moved with recv and send and MSG_DONTWAIT, which no other holder of the file can change.
    bool shared = false;
};

// What one direction of a pair may hold: a pipe's default capacity, so a peer that never reads
// makes the relay stop reading the sender (backpressure).
inline constexpr std::size_t kFlowBytes = std::size_t{64} * 1024;
// The most rounds of both directions one pair moves in a turn of the loop (a round moves up to
// kFlowBytes each way) before the other pairs have theirs.
inline constexpr int kPumpRounds = 16;

// One direction of a pair: bytes spliced from `from` into the pipe, waiting to be spliced to `to`;
// or, for a pair whose destination is shared (Wake::shared), received into the buffer, waiting to
// be sent to `to`.
struct Flow {
    int pipe_read = -1;
    int pipe_write = -1;
    std::unique_ptr<char[]> buffer;  // kFlowBytes, when the flow copies
    std::size_t start = 0;           // where the buffer's bytes begin
    std::size_t held = 0;            // bytes in the pipe or the buffer
    bool eof = false;                // `from` reached its end
    bool shut = false;               // `to` was shut for writing after the last byte
};

struct Pair {
    int accepted = -1;     // the connection a listener accepted
    int destination = -1;  // the connection the connect function opened
    bool shared = false;   // the destination's open file is shared (Wake::shared)
    Flow up;               // accepted -> destination
    Flow down;             // destination -> accepted
    bool broken = false;
    bool ended = false;     // queued for closing at the end of the loop's turn
    bool again = false;     // left with bytes to move: pumped again on the loop's next turn
    std::size_t index = 0;  // its place in the loop's list
    std::chrono::steady_clock::time_point last_progress;
};

inline void close_flow(Flow &f) {
    if (f.pipe_read >= 0) {
        ::close(f.pipe_read);
        ::close(f.pipe_write);
    }
    f.pipe_read = f.pipe_write = -1;
}

inline bool open_flow(Flow &f, bool copying) {
    if (copying) {
        try {
            f.buffer = std::make_unique<char[]>(kFlowBytes);
        } catch (const std::bad_alloc &) {
            return false;
        }
        return true;
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        return false;
    }
    f.pipe_read = p[0];
    f.pipe_write = p[1];
    return true;
}

// Closes a descriptor whose open file another process may share. Attack: a sharer that set the
// socket to linger (SO_LINGER) with a peer that never reads, then closed its own copy, makes the
// close that drops the last reference wait up to the linger time, the caller's loop with it. The
// lingering is switched off first, and the close runs on a thread of its own, so that a sharer
// that sets it again in between holds that thread alone.
inline void close_shared(int fd) noexcept {
    if (fd < 0) {
        return;
    }
    const linger off{0, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
    try {
        std::thread([fd] { ::close(fd); }).detach();
    } catch (...) {
        ::close(fd);  // no thread to spare: the lingering is off at least
    }
}

// After the last byte of a flow that reached its end, `to` is shut for writing.
inline void shut_when_done(Flow &f, int to) {
    if (f.held == 0 && f.eof && !f.shut) {
        ::shutdown(to, SHUT_WR);
        f.shut = true;
    }
}

// Counts what a read from a flow's `from` returned: bytes taken, its end, or (any error but a
// retry) the pair broken. False when broken.
inline bool took(Flow &f, ssize_t n, bool &progress, bool &broken) {
    if (n > 0) {
        f.held += static_cast<std::size_t>(n);
        progress = true;
    } else if (n == 0) {
        f.eof = true;
        progress = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        broken = true;
        return false;
    }
    return true;
}

// Receives what the buffer takes from `from`, then sends what it holds to `to`, neither ever
// waiting whatever mode the sockets' files are in. True when a byte moved or an end was seen.
inline bool move_copying(Flow &f, int from, int to, bool &broken) {
    bool progress = false;
    if (!f.eof && f.start + f.held < kFlowBytes) {
        const auto n = ::recv(from, f.buffer.get() + f.start + f.held,
                              kFlowBytes - f.start - f.held, MSG_DONTWAIT);
        if (!took(f, n, progress, broken)) {
            return true;
        }
    }
    while (f.held > 0) {
        const auto n = ::send(to, f.buffer.get() + f.start, f.held, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            f.start += static_cast<std::size_t>(n);
            f.held -= static_cast<std::size_t>(n);
            progress = true;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        } else {
            broken = true;
            return true;
        }
    }
    if (f.held == 0) {
        f.start = 0;
    }
    shut_when_done(f, to);
    return progress;
}

// Splices what the pipe takes from `from`, then what it holds to `to`. True when a byte moved or
// an end was seen. A splice from `from` that finds the pipe's slots full returns EAGAIN like an
// empty socket; the caller calls again after every progress, so nothing waits on a lost edge.
inline bool move(Flow &f, int from, int to, bool &broken) {
    if (f.buffer) {
        return move_copying(f, from, to, broken);
    }
    constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
    bool progress = false;
    if (!f.eof && f.held < kFlowBytes) {
        const auto n = ::splice(from, nullptr, f.pipe_write, nullptr, kFlowBytes - f.held, kFlags);
        if (!took(f, n, progress, broken)) {
            return true;
        }
    }
    while (f.held > 0) {
        const auto n = ::splice(f.pipe_read, nullptr, to, nullptr, f.held, kFlags);
        if (n > 0) {
            f.held -= static_cast<std::size_t>(n);
            progress = true;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            break;
        } else {
            broken = true;
            return true;
        }
    }
    shut_when_done(f, to);
    return progress;
}

// A non-blocking connection to the Unix socket at `path` (shorter than sun_path, checked by the
// caller), or -1 with errno set: EAGAIN when the listener's backlog is full.
inline int connect_unix(const std::string &path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof a.sun_path - 1));
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        const int error = errno;
        ::close(fd);
        errno = error;
        return -1;
    }
    return fd;
}

// The epoll loop's state; serve below is its only user.
class Loop {
   public:
    Loop(const std::vector<int> &listeners, const Limits &limits, int stop_fd, Counts &counts)
        : listeners_(listeners), limits_(limits), stop_fd_(stop_fd), counts_(counts) {}
    Loop(const Loop &) = delete;
    Loop &operator=(const Loop &) = delete;
    ~Loop() {
        for (auto &p : pairs_) {
            close_pair(*p);
        }
        if (waiting_ >= 0) {
            ::close(waiting_);
        }
        if (epoll_ >= 0) {
            ::close(epoll_);
        }
    }

    template <typename Connect>
    bool run(Connect &connect) {
        epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (epoll_ < 0 || !add(stop_fd_, EPOLLIN, &stop_tag_) ||
            !std::all_of(listeners_.begin(), listeners_.end(),
                         [this](int l) { return add(l, EPOLLIN, &listener_tag_); })) {
            return false;
        }
        std::array<epoll_event, 64> events{};
        for (;;) {
            const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()),
                                       timeout(std::chrono::steady_clock::now()));
            if (n < 0 && errno != EINTR) {
                return false;
            }
            const auto now = std::chrono::steady_clock::now();
            // The pairs the last turn left with bytes to move, whose sockets will not signal again.
            todo_.swap(again_);
            for (Pair *p : todo_) {
                p->again = false;
            }
            bool listener_ready = false;
            for (int i = 0; i < n; ++i) {
                void *tag = events[static_cast<std::size_t>(i)].data.ptr;
                if (tag == &stop_tag_) {
                    return true;
                }
                if (tag == &listener_tag_) {
                    listener_ready = true;
                } else if (tag == &wake_tag_) {
                    // The waiting connection is tried below, as on every turn.
                } else {
                    Pair &p = *static_cast<Pair *>(tag);
                    // An error on either side ends the pair: waiting on it again would only spin.
                    if ((events[static_cast<std::size_t>(i)].events & EPOLLERR) != 0) {
                        p.broken = true;
                    }
                    pump(p, now);
                }
            }
            for (Pair *p : todo_) {
                if (!p->ended && !p->again) {
                    pump(*p, now);
                }
            }
            todo_.clear();
            if (waiting_ >= 0) {
                pair_waiting(connect, now);
            }
            if (listener_ready) {
                accept_all(connect, now);
            }
            sweep_idle(now);
            close_ended();
            set_accepting(waiting_ < 0 && pairs_.size() < limits_.max_pairs);
        }
    }

   private:
    bool add(int fd, std::uint32_t events, void *tag) const {
        if (fd < 0) {
            return true;
        }
        epoll_event e{};
        e.events = events;
        e.data.ptr = tag;
        return ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e) == 0;
    }

    // Past the limit, or while a connection waits for its destination, the listeners are not
    // watched: further clients wait in the kernel's backlog instead of being accepted and closed.
    void set_accepting(bool on) {
        if (on == accepting_) {
            return;
        }
        if (!on && waiting_ < 0) {
            ++counts_.waited_at_limit;
        }
        accepting_ = on;
        for (const int l : listeners_) {
            epoll_event e{};
            e.events = on ? std::uint32_t{EPOLLIN} : 0U;
            e.data.ptr = &listener_tag_;
            ::epoll_ctl(epoll_, EPOLL_CTL_MOD, l, &e);
        }
    }

    int timeout(std::chrono::steady_clock::time_point now) const {
        if (!again_.empty()) {
            return 0;  // a pair has bytes waiting that no event will announce
        }
        int ms = -1;
        if (waiting_ >= 0 && wake_.fd < 0) {
            ms = 2;  // the destination's backlog had no room: try again soon
        } else if (waiting_ >= 0 && limits_.wait.count() > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  waiting_since_ + limits_.wait - now)
                                  .count();
            ms = static_cast<int>(std::clamp<std::int64_t>(left + 1, 0, 60'000));
        }
        if (limits_.idle.count() > 0 && !pairs_.empty()) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(next_idle_ - now).count();
            const int idle_ms = static_cast<int>(std::clamp<std::int64_t>(left + 1, 0, 60'000));
            ms = ms < 0 ? idle_ms : std::min(ms, idle_ms);
        }
        return ms;
    }

    template <typename Connect>
    void accept_all(Connect &connect, std::chrono::steady_clock::time_point now) {
        for (const int l : listeners_) {
            while (waiting_ < 0 && pairs_.size() < limits_.max_pairs) {
                const int accepted = ::accept4(l, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (accepted < 0) {
                    break;
                }
                waiting_ = accepted;
                waiting_since_ = now;
                waiting_tried_ = false;
                pair_waiting(connect, now);
            }
        }
    }

    // Calls the connect function with a Wake when it takes one, registering what it names.
    template <typename Connect>
    int call_connect(Connect &connect) {
        if constexpr (std::is_invocable_v<Connect &, int, Wake &>) {
            forget_wake();
            wake_.first = !waiting_tried_;
            waiting_tried_ = true;
            const int destination = connect(waiting_, wake_);
            const int error = errno;
            destination_shared_ = destination >= 0 && wake_.shared;
            const bool watch = destination == -1 && error == EAGAIN && wake_.fd >= 0;
            if (!watch || !add(wake_.fd, wake_.events, &wake_tag_)) {
                wake_ = Wake{};  // nothing watched: tried again on the timer, if at all
            }
            errno = error;
            return destination;
        } else {
            destination_shared_ = false;
            return connect(waiting_);
        }
    }

    template <typename Connect>
    void pair_waiting(Connect &connect, std::chrono::steady_clock::time_point now) {
        const int destination = call_connect(connect);
        if (destination == kHandedOver) {
            ::close(waiting_);
            waiting_ = -1;
            ++counts_.handed;
            return;
        }
        if (destination < 0) {
            // A peer that never lets its connect proceed (no preface) would hold every other
            // client in the backlog.
            const bool waited_too_long =
                limits_.wait.count() > 0 && now - waiting_since_ >= limits_.wait;
            if (errno == EAGAIN && !waited_too_long) {
                return;  // no room at the destination yet: the client waits, it is not closed
            }
            // No destination: the client sees its connection closed, as with no route at all.
            forget_wake();
            ::close(waiting_);
            waiting_ = -1;
            ++counts_.unreachable;
            return;
        }
        auto p = std::make_unique<Pair>();
        p->accepted = waiting_;
        p->destination = destination;
        p->shared = destination_shared_;
        p->last_progress = now;
        waiting_ = -1;
        if (!open_flow(p->up, destination_shared_) || !open_flow(p->down, destination_shared_)) {
            close_pair(*p);
            ++counts_.unreachable;
            return;
        }
        const int one = 1;
        // Small requests leave at once instead of waiting for an acknowledgement (Nagle);
        // a Unix socket refuses the option, which changes nothing.
        ::setsockopt(p->accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::setsockopt(p->destination, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        constexpr std::uint32_t kPairEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        if (!add(p->accepted, kPairEvents, p.get()) || !add(p->destination, kPairEvents, p.get())) {
            close_pair(*p);
            ++counts_.unreachable;
            return;
        }
        if (pairs_.empty()) {
            next_idle_ = now + limits_.idle;
        }
        p->index = pairs_.size();
        pairs_.push_back(std::move(p));
        ++counts_.carried;
        ++counts_.open;
        pump(*pairs_.back(), now);
    }

    // Moves both directions until neither moves: the loop is edge-triggered, so a direction left
    // with bytes to read would get no second event. A pair still moving after kPumpRounds is
    // pumped again on the next turn, after the others: one endless stream would otherwise keep
    // the loop from every other connection.
    void pump(Pair &p, std::chrono::steady_clock::time_point now) {
        bool any = false;
        for (int round = 0; !p.broken && !p.ended; ++round) {
            if (round == kPumpRounds) {
                if (!p.again) {
                    p.again = true;
                    again_.push_back(&p);
                }
                break;
            }
            bool progress = move(p.up, p.accepted, p.destination, p.broken);
            if (!p.broken) {
                progress = move(p.down, p.destination, p.accepted, p.broken) || progress;
            }
            if (!progress) {
                break;
            }
            any = true;
        }
        if (any) {
            p.last_progress = now;
        }
        if (p.broken || (p.up.shut && p.down.shut)) {
            end(p);
        }
    }

    // The connect function closes its wake descriptor (or returns it as the destination): it
    // leaves the epoll set here, before the destination is added to it.
    void forget_wake() {
        if (wake_.fd >= 0) {
            ::epoll_ctl(epoll_, EPOLL_CTL_DEL, wake_.fd, nullptr);
        }
        wake_ = Wake{};
    }

    void end(Pair &p) {
        if (!p.ended) {
            p.ended = true;
            ended_.push_back(&p);
        }
    }

    void sweep_idle(std::chrono::steady_clock::time_point now) {
        if (limits_.idle.count() <= 0 || pairs_.empty() || now < next_idle_) {
            return;
        }
        auto oldest = now;
        for (auto &p : pairs_) {
            if (p->ended) {
                continue;
            }
            if (now - p->last_progress >= limits_.idle) {
                // A peer that stalls (sends nothing, reads nothing) would hold its slot forever.
                ++counts_.idle_closed;
                end(*p);
            } else {
                oldest = std::min(oldest, p->last_progress);
            }
        }
        next_idle_ = oldest + limits_.idle;
    }

    void close_pair(Pair &p) const {
        // Taken out of the epoll set first: closing a descriptor removes it only once no other
        // descriptor shares its open file (a socket handed over SCM_RIGHTS may still be held by
        // its sender), and an event would then name a freed pair.
        for (const int fd : {p.accepted, p.destination}) {
            if (fd >= 0) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
        }
        ::close(p.accepted);
        if (p.shared) {
            close_shared(p.destination);
        } else {
            ::close(p.destination);
        }
        close_flow(p.up);
        close_flow(p.down);
    }

    // Pairs end after the turn's events are handled, since a later event of the same turn may
    // name one.
    void close_ended() {
        again_.erase(
            std::remove_if(again_.begin(), again_.end(), [](const Pair *p) { return p->ended; }),
            again_.end());
        for (Pair *p : ended_) {
            close_pair(*p);
            const std::size_t i = p->index;
            std::swap(pairs_[i], pairs_.back());
            pairs_[i]->index = i;
            pairs_.pop_back();
            --counts_.open;
        }
        ended_.clear();
    }

    const std::vector<int> &listeners_;
    const Limits &limits_;
    int stop_fd_;
    Counts &counts_;
    int epoll_ = -1;
    int waiting_ = -1;  // accepted, its destination's backlog full: tried again soon
    std::chrono::steady_clock::time_point waiting_since_;
    bool waiting_tried_ = false;
    bool accepting_ = true;
    char stop_tag_ = 0;
    char listener_tag_ = 0;
    char wake_tag_ = 0;
    Wake wake_;  // what the waiting connection waits on, when the connect function named it
    bool destination_shared_ = false;  // the last destination returned shares its file (Wake)
    std::vector<std::unique_ptr<Pair>> pairs_;
    std::vector<Pair *> ended_;
    std::vector<Pair *> again_;  // to pump on the next turn (Pair::again)
    std::vector<Pair *> todo_;   // the last turn's again_, pumped on this one
    std::chrono::steady_clock::time_point next_idle_;
};

// Carries connections until stop_fd is readable (true) or epoll fails (false).
template <typename Connect>
bool serve(const std::vector<int> &listeners, Connect &&connect, const Limits &limits,
           int stop_fd = -1, Counts *counts = nullptr) {
    Counts local;
    Loop loop(listeners, limits, stop_fd, counts != nullptr ? *counts : local);
    return loop.run(connect);
}

}  // namespace tea::stream_relay

#endif
