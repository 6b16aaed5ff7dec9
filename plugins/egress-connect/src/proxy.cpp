#include "proxy.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

namespace tea::egress {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint64_t kListenerTag = 0;
constexpr std::uint64_t kWakeTag = 1;
constexpr int kPumpRounds = 16;  // per direction per turn, so one bulk tunnel cannot starve others
constexpr std::size_t kMaxDrainBytes = std::size_t{64} * 1024;
constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

class UniqueFd {
   public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept {
        if (this != &other) reset(std::exchange(other.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

   private:
    int fd_ = -1;
};

std::system_error errno_error(int error, const std::string &what) {
    return std::system_error(error, std::generic_category(), what);
}

// Record and body text holds visible ASCII only, so a hostile target cannot forge log lines or
// break the UTF-8 of the JSON record with the bytes it sends.
std::string printable(std::string_view raw, std::size_t cap = kMaxRecordFieldBytes) {
    static constexpr std::string_view kHex = "0123456789abcdef";
    std::string out;
    for (const char c : raw) {
        if (out.size() >= cap) break;
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else {
            out += "\\x";
            out += kHex[static_cast<std::size_t>(u >> 4)];
            out += kHex[static_cast<std::size_t>(u & 0xf)];
        }
    }
    if (out.size() > cap) out.resize(cap);
    return out;
}

std::string_view status_text(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 403:
            return "Forbidden";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

std::string http_response(int status, std::string_view body) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
    out += status_text(status);
    out += "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ";
    out += std::to_string(body.size());
    if (status == 405) out += "\r\nAllow: CONNECT";
    out += "\r\nConnection: close\r\n\r\n";
    out += body;
    return out;
}

int to_ms(milliseconds d) {
    return static_cast<int>(std::clamp<milliseconds::rep>(d.count(), 0, 1'000'000'000));
}

bool would_block(int error) {
    return error == EAGAIN || error == EWOULDBLOCK;
}

// ---------------------------------------------------------------------------------------------
// Refusal records

class RecordBook {
   public:
    void refuse(RefusalRecord record) {
        record.host = printable(record.host);
        record.entry = printable(record.entry);
        record.reason = printable(record.reason);
        record.address = printable(record.address);
        const std::lock_guard lock(mutex_);
        for (RefusalRecord &kept : records_.refusals) {
            if (kept.status == record.status && kept.port == record.port &&
                kept.host == record.host && kept.entry == record.entry &&
                kept.reason == record.reason && kept.address == record.address) {
                ++kept.count;
                return;
            }
        }
        // Bounded: a target that sprays distinct hosts cannot grow the run's records.
        if (records_.refusals.size() >= kMaxRefusalRecords) {
            ++records_.omitted;
            return;
        }
        record.count = 1;
        records_.refusals.push_back(std::move(record));
    }

    void tunnel_opened() {
        const std::lock_guard lock(mutex_);
        ++records_.tunnels_opened;
    }

    ProxyRecords snapshot() const {
        const std::lock_guard lock(mutex_);
        return records_;
    }

   private:
    mutable std::mutex mutex_;
    ProxyRecords records_;
};

// ---------------------------------------------------------------------------------------------
// Resolver threads. getaddrinfo blocks and cannot be cancelled, so lookups run here and their
// decisions are handed back to the event loop through an eventfd.

struct ResolveJob {
    std::uint64_t connection = 0;
    Authority target;
};

struct ResolveDone {
    std::uint64_t connection = 0;
    Decision decision;
};

class ResolverPool {
   public:
    ResolverPool(const Policy &policy, int notify_fd) : policy_(policy), notify_fd_(notify_fd) {}
    ~ResolverPool() { stop(); }
    ResolverPool(const ResolverPool &) = delete;
    ResolverPool &operator=(const ResolverPool &) = delete;

    void start(std::size_t threads) {
        for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
    }

    void submit(ResolveJob job) {
        {
            const std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(job));
        }
        wanted_.notify_one();
    }

    // Drops a lookup that has not started; one in progress finishes and is ignored.
    void cancel(std::uint64_t connection) {
        const std::lock_guard lock(mutex_);
        std::erase_if(jobs_, [&](const ResolveJob &job) { return job.connection == connection; });
    }

    std::vector<ResolveDone> take() {
        const std::lock_guard lock(mutex_);
        return std::exchange(done_, {});
    }

    void stop() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
            jobs_.clear();
        }
        wanted_.notify_all();
        for (std::thread &thread : threads_) {
            if (thread.joinable()) thread.join();
        }
        threads_.clear();
    }

   private:
    void work() {
        for (;;) {
            ResolveJob job;
            {
                std::unique_lock lock(mutex_);
                wanted_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
                if (stopping_) return;
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            ResolveDone done{job.connection, {}};
            try {
                done.decision = policy_.decide(job.target);
            } catch (const std::exception &error) {
                done.decision.verdict = Decision::Verdict::unresolved;
                done.decision.reason = std::string("name resolution failed: ") + error.what();
            }
            {
                const std::lock_guard lock(mutex_);
                if (stopping_) return;
                done_.push_back(std::move(done));
            }
            const std::uint64_t one = 1;
            // The counter only wakes the loop; a full counter (never reached) still wakes it.
            if (::write(notify_fd_, &one, sizeof one) < 0) continue;
        }
    }

    const Policy &policy_;
    int notify_fd_;
    std::mutex mutex_;
    std::condition_variable wanted_;
    std::deque<ResolveJob> jobs_;
    std::vector<ResolveDone> done_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------------
// Connections

// One direction of a tunnel: a prefix (the 200 line, or bytes the client sent behind its head),
// then either a pipe that splice(2) fills and drains, or a plain buffer.
struct Pump {
    std::string prefix;
    std::size_t prefix_sent = 0;
    std::unique_ptr<char[]> buffer;
    std::size_t capacity = 0;
    std::size_t begin = 0;
    std::size_t end = 0;
    UniqueFd pipe_read;
    UniqueFd pipe_write;
    std::size_t in_pipe = 0;
    bool source_eof = false;
    bool finished = false;  // the destination has been shut down for writing

    bool spliced() const { return static_cast<bool>(pipe_read); }
    bool pending() const { return prefix_sent < prefix.size() || end > begin || in_pipe > 0; }
};

enum class PumpResult { blocked = 1, more, failed };

enum class Phase { head = 1, resolving, connecting, tunnel, answering, draining, closed };

struct Connection {
    std::uint64_t id = 0;
    Phase phase = Phase::head;
    UniqueFd client;
    UniqueFd upstream;
    bool client_readable = false;
    bool client_writable = false;
    bool upstream_readable = false;
    bool upstream_writable = false;
    Clock::time_point deadline;
    Clock::time_point last_activity;

    std::string head;  // before the tunnel: the head, then the bytes the client sent after it
    std::size_t scanned = 0;

    Authority target;
    bool holds_tunnel_slot = false;
    std::string resolved;
    std::vector<SocketAddress> candidates;
    std::size_t next_candidate = 0;
    std::string connect_failures;

    std::string answer;
    std::size_t answer_sent = 0;
    std::size_t drained = 0;

    Pump up;    // client -> upstream
    Pump down;  // upstream -> client
};

bool make_pipe(Pump &pump, std::size_t capacity) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_NONBLOCK | O_CLOEXEC) != 0) return false;
    pump.pipe_read.reset(fds[0]);
    pump.pipe_write.reset(fds[1]);
    // A larger pipe moves more per splice; the system cap (pipe-max-size) may refuse it, and the
    // default size then serves.
    const int size = static_cast<int>(std::min<std::size_t>(capacity, 1u << 20));
    (void)::fcntl(fds[1], F_SETPIPE_SZ, size);
    const int actual = ::fcntl(fds[1], F_GETPIPE_SZ);
    pump.capacity = actual > 0 ? static_cast<std::size_t>(actual) : 65536;
    return true;
}

void make_buffer(Pump &pump, std::size_t capacity) {
    pump.pipe_read.reset();
    pump.pipe_write.reset();
    pump.buffer = std::make_unique<char[]>(capacity);
    pump.capacity = capacity;
}

// Moves bytes from `source` to `destination` until both sides would block (or the round budget
// is spent), then half-closes the destination once the source has ended and all is delivered.
PumpResult pump(Pump &p, int source, bool &readable, int destination, bool &writable,
                bool &moved_any) {
    for (int round = 0; round < kPumpRounds; ++round) {
        bool moved = false;
        while (writable && p.pending()) {
            ssize_t n = 0;
            if (p.prefix_sent < p.prefix.size()) {
                n = ::send(destination, p.prefix.data() + p.prefix_sent,
                           p.prefix.size() - p.prefix_sent, MSG_NOSIGNAL);
            } else if (p.end > p.begin) {
                n = ::send(destination, p.buffer.get() + p.begin, p.end - p.begin, MSG_NOSIGNAL);
            } else {
                n = ::splice(p.pipe_read.get(), nullptr, destination, nullptr, p.in_pipe,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (would_block(errno)) {
                    writable = false;
                    break;
                }
                return PumpResult::failed;
            }
            const auto sent = static_cast<std::size_t>(n);
            if (p.prefix_sent < p.prefix.size()) {
                p.prefix_sent += sent;
                if (p.prefix_sent == p.prefix.size()) {
                    p.prefix.clear();
                    p.prefix.shrink_to_fit();
                    p.prefix_sent = 0;
                }
            } else if (p.end > p.begin) {
                p.begin += sent;
                if (p.begin == p.end) p.begin = p.end = 0;
            } else {
                p.in_pipe -= std::min(sent, p.in_pipe);
            }
            moved = true;
        }
        if (readable && !p.source_eof) {
            ssize_t n = 0;
            const bool spliced = p.spliced();
            const std::size_t room =
                spliced ? p.capacity - std::min(p.in_pipe, p.capacity) : p.capacity - p.end;
            if (room > 0) {
                if (spliced) {
                    n = ::splice(source, nullptr, p.pipe_write.get(), nullptr, room,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                } else {
                    n = ::recv(source, p.buffer.get() + p.end, room, 0);
                }
                if (n > 0) {
                    if (spliced) {
                        p.in_pipe += static_cast<std::size_t>(n);
                    } else {
                        p.end += static_cast<std::size_t>(n);
                    }
                    moved = true;
                } else if (n == 0) {
                    p.source_eof = true;
                    moved = true;
                } else if (would_block(errno)) {
                    // A pipe can run out of slots before its bytes are full, so EAGAIN with bytes
                    // in the pipe may mean "pipe full": keep the source marked readable, since an
                    // edge-triggered source would not report again.
                    if (!spliced || p.in_pipe == 0) readable = false;
                } else if (errno != EINTR) {
                    return PumpResult::failed;
                }
            }
        }
        if (!moved) break;
        moved_any = true;
        if (round + 1 == kPumpRounds) return PumpResult::more;
    }
    if (p.source_eof && !p.pending() && !p.finished) {
        // A half-close passes through: the far side learns the client is done sending.
        if (::shutdown(destination, SHUT_WR) != 0 && errno != ENOTCONN) return PumpResult::failed;
        p.finished = true;
    }
    return PumpResult::blocked;
}

// Binds with umask 0177 in a thread of its own: the umask is shared by all threads of the
// process, and setting it process-wide would race with files other threads create. Closes the
// window in which another user could connect between bind and chmod; where unshare is refused,
// the directory no one else can write and the chmod right after bind are what remain.
int bind_private(int fd, const sockaddr_un &address) {
    int result = 0;
    std::thread binder([&] {
        if (::unshare(CLONE_FS) == 0) ::umask(0177);
        if (::bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) != 0) {
            result = errno;
        }
    });
    binder.join();
    return result;
}

milliseconds sweep_interval(const ProxyOptions &o) {
    const milliseconds shortest =
        std::min({o.head_timeout, o.resolve_timeout, o.connect_timeout, o.idle_timeout});
    return std::clamp(shortest / 8, milliseconds(5), milliseconds(250));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct ConnectProxy::Impl {
    Impl(Policy p, ProxyOptions o) : policy(std::move(p)), options(o) {}

    Policy policy;
    ProxyOptions options;
    RecordBook book;

    std::mutex control;
    bool started = false;
    std::atomic<bool> live{false};
    std::atomic<bool> stopping{false};
    std::filesystem::path socket_path;
    dev_t socket_device = 0;
    ino_t socket_inode = 0;
    UniqueFd listener;
    UniqueFd epoll;
    UniqueFd wake;
    std::unique_ptr<ResolverPool> resolver;
    std::thread loop;

    // Owned by the loop thread.
    std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections;
    std::vector<std::uint64_t> ready;  // tunnels that spent their round budget
    std::uint64_t next_id = 1;
    std::size_t tunnels_reserved = 0;
    std::size_t tunnels_opened = 0;
    bool accept_paused = false;
    Clock::time_point now;

    void start(const std::filesystem::path &path);
    void stop();
    void run();

    void dispatch(const epoll_event &event);
    void accept_all();
    void advance(Connection &c, std::uint32_t client_events);
    void read_head(Connection &c);
    void on_head(Connection &c, std::size_t length);
    void on_resolved(ResolveDone &done);
    void try_next_address(Connection &c);
    void finish_connect(Connection &c);
    void open_tunnel(Connection &c);
    void pump_tunnel(Connection &c);
    void refuse(Connection &c, int status, const std::string &host, std::uint16_t port,
                const std::string &reason, const std::string &address, const std::string &body);
    void refuse_target(Connection &c, int status, const std::string &reason);
    void flush_answer(Connection &c);
    void drain(Connection &c);
    void sweep();
    void close(Connection &c);
    void release_slot(Connection &c);
    bool watch(int fd, std::uint64_t tag, std::uint32_t events) const;
    void settle(std::uint64_t id);
};

void ConnectProxy::Impl::start(const std::filesystem::path &path) {
    const std::lock_guard lock(control);
    if (started) throw std::logic_error("egress proxy: a proxy starts once");

    const std::string &native = path.native();
    sockaddr_un address{};
    if (native.empty() || native.size() >= sizeof address.sun_path) {
        throw std::invalid_argument("egress proxy: socket path \"" + native +
                                    "\" is empty or longer than a Unix socket path can be");
    }
    const std::filesystem::path parent =
        path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    struct stat dir {};
    // lstat: a symlinked directory could point the socket somewhere the caller did not choose.
    if (::lstat(parent.c_str(), &dir) != 0) {
        throw errno_error(errno, "egress proxy: socket directory " + parent.string());
    }
    // Another user who can write the directory could replace the socket with one of theirs.
    if (!S_ISDIR(dir.st_mode) || dir.st_uid != ::geteuid() ||
        (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        throw std::invalid_argument("egress proxy: socket directory " + parent.string() +
                                    " must be a directory owned by this user that no one else "
                                    "can write");
    }

    epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) throw errno_error(errno, "egress proxy: epoll_create1");
    wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wake) throw errno_error(errno, "egress proxy: eventfd");
    listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener) throw errno_error(errno, "egress proxy: socket");

    address.sun_family = AF_UNIX;
    std::copy(native.begin(), native.end(), address.sun_path);
    if (const int error = bind_private(listener.get(), address); error != 0) {
        throw errno_error(error, "egress proxy: bind " + native);
    }
    bool bound = true;
    struct Cleanup {
        const std::string &path;
        bool &armed;
        ~Cleanup() {
            if (armed) ::unlink(path.c_str());
        }
    } cleanup{native, bound};

    struct stat sock {};
    if (::chmod(native.c_str(), 0600) != 0 || ::lstat(native.c_str(), &sock) != 0) {
        throw errno_error(errno, "egress proxy: chmod " + native);
    }
    if (!S_ISSOCK(sock.st_mode) || sock.st_uid != ::geteuid()) {
        throw std::invalid_argument("egress proxy: " + native + " is not the socket just bound");
    }
    socket_device = sock.st_dev;
    socket_inode = sock.st_ino;
    if (::listen(listener.get(), SOMAXCONN) != 0) {
        throw errno_error(errno, "egress proxy: listen " + native);
    }
    if (!watch(listener.get(), kListenerTag, EPOLLIN | EPOLLET) ||
        !watch(wake.get(), kWakeTag, EPOLLIN)) {
        throw errno_error(errno, "egress proxy: epoll_ctl");
    }

    resolver = std::make_unique<ResolverPool>(policy, wake.get());
    resolver->start(options.resolver_threads);
    socket_path = path;
    started = true;
    stopping = false;
    live = true;
    loop = std::thread([this] { run(); });
    bound = false;  // NOLINT(clang-analyzer-deadcode.DeadStores): read by cleanup's destructor
}

void ConnectProxy::Impl::stop() {
    const std::lock_guard lock(control);
    if (!started || !live) return;
    stopping = true;
    const std::uint64_t one = 1;
    if (::write(wake.get(), &one, sizeof one) < 0) {
        // The eventfd cannot refuse a single increment; the loop also sees `stopping` on its
        // next sweep.
    }
    if (loop.joinable()) loop.join();
    resolver->stop();
    listener.reset();
    // Remove the socket only if it is still the one we bound, never a file someone put there.
    struct stat sock {};
    if (::lstat(socket_path.c_str(), &sock) == 0 && sock.st_dev == socket_device &&
        sock.st_ino == socket_inode) {
        ::unlink(socket_path.c_str());
    }
    epoll.reset();
    wake.reset();
    live = false;
}

bool ConnectProxy::Impl::watch(int fd, std::uint64_t tag, std::uint32_t events) const {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    return ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &event) == 0;
}

void ConnectProxy::Impl::run() {
    // splice(2) has no MSG_NOSIGNAL: a client that hangs up mid-tunnel would otherwise end the
    // whole runtime with SIGPIPE. Blocked in this thread only, the write just fails with EPIPE.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);

    const milliseconds every = sweep_interval(options);
    now = Clock::now();
    Clock::time_point next_sweep = now + every;
    std::array<epoll_event, 64> events{};
    while (!stopping.load(std::memory_order_relaxed)) {
        now = Clock::now();
        const int timeout =
            ready.empty() ? to_ms(std::chrono::ceil<milliseconds>(next_sweep - now)) : 0;
        const int count =
            ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout);
        if (count < 0 && errno != EINTR) break;  // fail closed: nothing is served any more
        now = Clock::now();
        for (int i = 0; i < count; ++i) dispatch(events[static_cast<std::size_t>(i)]);
        if (!ready.empty()) {
            std::vector<std::uint64_t> turn = std::exchange(ready, {});
            for (const std::uint64_t id : turn) {
                auto it = connections.find(id);
                if (it == connections.end() || it->second->phase != Phase::tunnel) continue;
                pump_tunnel(*it->second);
                settle(id);
            }
        }
        if (now >= next_sweep) {
            sweep();
            next_sweep = now + every;
        }
    }
    connections.clear();
}

void ConnectProxy::Impl::settle(std::uint64_t id) {
    auto it = connections.find(id);
    if (it != connections.end() && it->second->phase == Phase::closed) connections.erase(it);
}

void ConnectProxy::Impl::dispatch(const epoll_event &event) {
    if (event.data.u64 == kListenerTag) {
        accept_all();
        return;
    }
    if (event.data.u64 == kWakeTag) {
        std::uint64_t value = 0;
        while (::read(wake.get(), &value, sizeof value) > 0) {
        }
        for (ResolveDone &done : resolver->take()) {
            on_resolved(done);
            settle(done.connection);
        }
        return;
    }
    const std::uint64_t id = event.data.u64 >> 1;
    const bool upstream_side = (event.data.u64 & 1) != 0;
    auto it = connections.find(id);
    if (it == connections.end()) return;  // a connection closed earlier in this batch
    Connection &c = *it->second;
    const std::uint32_t e = event.events;
    const bool readable = (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    const bool writable = (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
    if (upstream_side) {
        c.upstream_readable = c.upstream_readable || readable;
        c.upstream_writable = c.upstream_writable || writable;
    } else {
        c.client_readable = c.client_readable || readable;
        c.client_writable = c.client_writable || writable;
    }
    advance(c, upstream_side ? 0u : e);
    settle(id);
}

void ConnectProxy::Impl::accept_all() {
    accept_paused = false;
    for (;;) {
        UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!client) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            // Out of descriptors or memory: the sweep tries again, since an edge-triggered
            // listener would not report the waiting connections a second time.
            if (!would_block(errno)) accept_paused = true;
            return;
        }
        // A flood of connections that never speak cannot take every descriptor of the runtime.
        if (connections.size() >= options.max_connections) {
            static const std::string busy =
                http_response(503, "tea-evaluate egress proxy: too many connections at once\n");
            (void)::send(client.get(), busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            continue;
        }
        auto c = std::make_unique<Connection>();
        c->id = next_id++;
        // An absolute deadline for the whole head closes slowloris: a byte every few seconds
        // does not extend it.
        c->deadline = now + options.head_timeout;
        if (!watch(client.get(), c->id << 1, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) continue;
        c->client = std::move(client);
        connections.emplace(c->id, std::move(c));
    }
}

void ConnectProxy::Impl::advance(Connection &c, std::uint32_t client_events) {
    const bool client_gone = (client_events & (EPOLLHUP | EPOLLERR)) != 0;
    switch (c.phase) {
        case Phase::head:
            read_head(c);
            break;
        case Phase::resolving:
            if (client_gone) close(c);
            break;
        case Phase::connecting:
            if (client_gone) {
                close(c);
            } else if (c.upstream_writable || c.upstream_readable) {
                finish_connect(c);
            }
            break;
        case Phase::tunnel:
            pump_tunnel(c);
            break;
        case Phase::answering:
            flush_answer(c);
            break;
        case Phase::draining:
            drain(c);
            break;
        case Phase::closed:
            break;
    }
}

void ConnectProxy::Impl::read_head(Connection &c) {
    std::array<char, 4096> chunk{};
    while (c.client_readable) {
        const std::size_t room = kMaxHeadBytes - std::min(c.head.size(), kMaxHeadBytes);
        if (room == 0) break;
        const ssize_t n = ::recv(c.client.get(), chunk.data(), std::min(room, chunk.size()), 0);
        if (n == 0) {
            close(c);  // the client left before finishing its head
            return;
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (would_block(errno)) {
                c.client_readable = false;
                break;
            }
            close(c);
            return;
        }
        c.head.append(chunk.data(), static_cast<std::size_t>(n));
        const HeadBoundary boundary = find_head_end(c.head, c.scanned);
        if (boundary.state == HeadBoundary::State::complete) {
            on_head(c, boundary.length);
            return;
        }
        if (boundary.state == HeadBoundary::State::malformed) {
            on_head(c, c.head.size());
            return;
        }
        c.scanned = boundary.scanned;
    }
}

void ConnectProxy::Impl::on_head(Connection &c, std::size_t length) {
    const HeadParse parse = parse_request_head(std::string_view(c.head).substr(0, length));
    if (const auto *failure = std::get_if<HeadFailure>(&parse)) {
        const std::string reason(describe(failure->error));
        refuse(c, 400, failure->target, 0, reason, {},
               "tea-evaluate egress proxy: bad request for entry \"" + printable(policy.entry()) +
                   "\": " + reason + "\n");
        return;
    }
    const RequestHead &head = std::get<RequestHead>(parse);
    if (head.method != "CONNECT") {
        // Only CONNECT: a proxy that forwarded plain requests would give clients a route that
        // bypasses the per-host tunnel decision.
        const std::string reason = "the method is " + head.method + ", not CONNECT";
        refuse(c, 405, head.target, 0, reason, {},
               "tea-evaluate egress proxy: " + printable(head.method) + " " +
                   printable(head.target, 200) + " refused for entry \"" +
                   printable(policy.entry()) + "\": this proxy opens CONNECT tunnels only\n");
        return;
    }
    c.target = *head.authority;
    const Header *content_length = head.find("content-length");
    if (head.find("transfer-encoding") != nullptr ||
        (content_length != nullptr && content_length->value != "0")) {
        // Request smuggling: CONNECT has no body, and a client framing one would disagree with
        // the proxy about where the tunnel's bytes begin.
        refuse_target(c, 400, "a CONNECT request carries no body");
        return;
    }
    // Refused before any lookup: a name no item lists never reaches a resolver, so a target
    // cannot use the proxy's DNS queries as a channel out.
    if (auto reason = policy.refuse_unlisted(c.target)) {
        refuse_target(c, 403, *reason);
        return;
    }
    // A budget per call: a target cannot open tunnels (and lookups) without end.
    if (tunnels_opened + tunnels_reserved >= options.max_tunnels) {
        refuse_target(
            c, 503, "this call has opened its " + std::to_string(options.max_tunnels) + " tunnels");
        return;
    }
    ++tunnels_reserved;
    c.holds_tunnel_slot = true;
    c.head.erase(0, head.length);  // what the client sent behind its head goes through the tunnel
    c.phase = Phase::resolving;
    c.deadline = now + options.resolve_timeout;
    resolver->submit({c.id, c.target});
}

void ConnectProxy::Impl::on_resolved(ResolveDone &done) {
    auto it = connections.find(done.connection);
    if (it == connections.end() || it->second->phase != Phase::resolving) return;
    Connection &c = *it->second;
    Decision &decision = done.decision;
    c.resolved = decision.resolved;
    switch (decision.verdict) {
        case Decision::Verdict::refuse:
            refuse_target(c, 403, decision.reason);
            return;
        case Decision::Verdict::unresolved:
            refuse_target(c, 502, decision.reason);
            return;
        case Decision::Verdict::allow:
            c.candidates = std::move(decision.addresses);
            c.next_candidate = 0;
            try_next_address(c);
            return;
    }
}

void ConnectProxy::Impl::try_next_address(Connection &c) {
    while (c.next_candidate < c.candidates.size()) {
        const SocketAddress &address = c.candidates[c.next_candidate++];
        const auto note = [&](int error) {
            if (!c.connect_failures.empty()) c.connect_failures += "; ";
            c.connect_failures += address.text() + ": " + std::system_category().message(error);
        };
        UniqueFd fd(
            ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
        if (!fd) {
            note(errno);
            continue;
        }
        // The client's own writes arrive already grouped; Nagle on top would hold back small
        // handshake records waiting for an ACK.
        const int one = 1;
        (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const int rc = ::connect(fd.get(), address.get(), address.length());
        if (rc != 0 && errno != EINPROGRESS) {
            note(errno);
            continue;
        }
        if (!watch(fd.get(), (c.id << 1) | 1u, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) {
            note(errno);
            continue;
        }
        c.upstream = std::move(fd);
        c.upstream_readable = false;
        c.upstream_writable = false;
        c.phase = Phase::connecting;
        c.deadline = now + options.connect_timeout;
        if (rc == 0) open_tunnel(c);
        return;
    }
    refuse_target(c, 502,
                  "no address the entry allows could be connected (" + c.connect_failures + ")");
}

void ConnectProxy::Impl::finish_connect(Connection &c) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(c.upstream.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    if (error == 0) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        if (::getpeername(c.upstream.get(), reinterpret_cast<sockaddr *>(&peer), &peer_length) ==
            0) {
            open_tunnel(c);
            return;
        }
        if (errno == ENOTCONN) {
            // A report left over from the previous address's socket: still connecting.
            c.upstream_readable = false;
            c.upstream_writable = false;
            return;
        }
        error = errno;
    }
    const SocketAddress &address = c.candidates[c.next_candidate - 1];
    if (!c.connect_failures.empty()) c.connect_failures += "; ";
    c.connect_failures += address.text() + ": " + std::system_category().message(error);
    c.upstream.reset();
    try_next_address(c);
}

void ConnectProxy::Impl::open_tunnel(Connection &c) {
    release_slot(c);
    ++tunnels_opened;
    book.tunnel_opened();
    c.phase = Phase::tunnel;
    c.last_activity = now;
    c.down.prefix = std::string(kEstablished);
    c.up.prefix = std::move(c.head);
    c.head = std::string();
    const bool spliced = options.use_splice && make_pipe(c.up, options.buffer_bytes) &&
                         make_pipe(c.down, options.buffer_bytes);
    if (!spliced) {
        make_buffer(c.up, options.buffer_bytes);
        make_buffer(c.down, options.buffer_bytes);
    }
    pump_tunnel(c);
}

void ConnectProxy::Impl::pump_tunnel(Connection &c) {
    bool moved = false;
    const PumpResult up =
        pump(c.up, c.client.get(), c.client_readable, c.upstream.get(), c.upstream_writable, moved);
    if (up == PumpResult::failed) {
        close(c);
        return;
    }
    const PumpResult down = pump(c.down, c.upstream.get(), c.upstream_readable, c.client.get(),
                                 c.client_writable, moved);
    if (down == PumpResult::failed) {
        close(c);
        return;
    }
    if (moved) c.last_activity = now;
    if (c.up.finished && c.down.finished) {
        close(c);
        return;
    }
    if (up == PumpResult::more || down == PumpResult::more) ready.push_back(c.id);
}

void ConnectProxy::Impl::refuse(Connection &c, int status, const std::string &host,
                                std::uint16_t port, const std::string &reason,
                                const std::string &address, const std::string &body) {
    book.refuse({status, host, port, policy.entry(), reason, address, 0});
    if (c.phase == Phase::resolving) resolver->cancel(c.id);
    release_slot(c);
    c.upstream.reset();
    c.head = std::string();
    c.answer = http_response(status, body);
    c.answer_sent = 0;
    c.phase = Phase::answering;
    c.deadline = now + options.head_timeout;
    flush_answer(c);
}

void ConnectProxy::Impl::refuse_target(Connection &c, int status, const std::string &reason) {
    std::string body = "tea-evaluate egress proxy: CONNECT " + c.target.text() + " for entry \"" +
                       printable(policy.entry()) + "\": ";
    body += status_text(status);
    body += ": " + printable(reason, 2000) + "\n";
    refuse(c, status, c.target.host, c.target.port, reason, c.resolved, body);
}

void ConnectProxy::Impl::flush_answer(Connection &c) {
    while (c.client_writable && c.answer_sent < c.answer.size()) {
        const ssize_t n = ::send(c.client.get(), c.answer.data() + c.answer_sent,
                                 c.answer.size() - c.answer_sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (would_block(errno)) {
                c.client_writable = false;
                return;
            }
            close(c);
            return;
        }
        c.answer_sent += static_cast<std::size_t>(n);
    }
    if (c.answer_sent < c.answer.size()) return;
    // Half-close, then read what the client still sends for a moment: closing with unread
    // bytes would reset the connection and could discard the answer before the client reads it.
    (void)::shutdown(c.client.get(), SHUT_WR);
    c.answer = std::string();
    c.phase = Phase::draining;
    c.deadline = now + std::min(options.head_timeout, milliseconds(1000));
    drain(c);
}

void ConnectProxy::Impl::drain(Connection &c) {
    std::array<char, 4096> sink{};
    while (c.client_readable) {
        const ssize_t n = ::recv(c.client.get(), sink.data(), sink.size(), 0);
        if (n > 0) {
            c.drained += static_cast<std::size_t>(n);
            if (c.drained > kMaxDrainBytes) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && would_block(errno)) {
            c.client_readable = false;
            return;
        }
        break;  // end of stream or an error
    }
    close(c);
}

void ConnectProxy::Impl::sweep() {
    if (accept_paused) accept_all();
    for (auto it = connections.begin(); it != connections.end();) {
        Connection &c = *it->second;
        switch (c.phase) {
            case Phase::head:
                if (now >= c.deadline) {
                    static const std::string late = http_response(
                        408, "tea-evaluate egress proxy: the request head took too long\n");
                    (void)::send(c.client.get(), late.data(), late.size(),
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                    close(c);
                }
                break;
            case Phase::resolving:
                if (now >= c.deadline) {
                    refuse_target(c, 502,
                                  "name resolution took longer than " +
                                      std::to_string(options.resolve_timeout.count()) + " ms");
                }
                break;
            case Phase::connecting:
                if (now >= c.deadline) {
                    const SocketAddress &address = c.candidates[c.next_candidate - 1];
                    if (!c.connect_failures.empty()) c.connect_failures += "; ";
                    c.connect_failures += address.text() + ": no answer within " +
                                          std::to_string(options.connect_timeout.count()) + " ms";
                    c.upstream.reset();
                    try_next_address(c);
                }
                break;
            case Phase::tunnel:
                // An idle bound: a tunnel nobody uses cannot hold a connection slot forever.
                if (now - c.last_activity >= options.idle_timeout) close(c);
                break;
            case Phase::answering:
            case Phase::draining:
                if (now >= c.deadline) close(c);
                break;
            case Phase::closed:
                break;
        }
        if (c.phase == Phase::closed) {
            it = connections.erase(it);
        } else {
            ++it;
        }
    }
}

void ConnectProxy::Impl::release_slot(Connection &c) {
    if (c.holds_tunnel_slot) {
        --tunnels_reserved;
        c.holds_tunnel_slot = false;
    }
}

void ConnectProxy::Impl::close(Connection &c) {
    if (c.phase == Phase::resolving) resolver->cancel(c.id);
    release_slot(c);
    c.phase = Phase::closed;
}

// ---------------------------------------------------------------------------------------------

ConnectProxy::ConnectProxy(Policy policy, ProxyOptions options) {
    if (options.max_connections == 0 || options.resolver_threads == 0 ||
        options.buffer_bytes < 4096 || options.head_timeout.count() <= 0 ||
        options.resolve_timeout.count() <= 0 || options.connect_timeout.count() <= 0 ||
        options.idle_timeout.count() <= 0) {
        throw std::invalid_argument(
            "egress proxy: connections, resolver threads and timeouts must be positive and the "
            "buffer at least 4096 bytes");
    }
    impl_ = std::make_unique<Impl>(std::move(policy), options);
}

ConnectProxy::~ConnectProxy() {
    stop();
}

void ConnectProxy::start(const std::filesystem::path &socket_path) {
    impl_->start(socket_path);
}

void ConnectProxy::stop() {
    impl_->stop();
}

bool ConnectProxy::running() const {
    return impl_->live.load();
}

ProxyRecords ConnectProxy::records() const {
    return impl_->book.snapshot();
}

}  // namespace tea::egress
