// An identity per call ([confinement] uid_range, docs/confinement.md "Identity and privileges"):
// two calls running at once, each holding a file, a socket and a process of its own, reach none
// of the other's; the same two calls on the one identity the sandbox account gives every call do.
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

constexpr unsigned range_first = 2147418112;  // 0x7FFF0000
constexpr unsigned range_last = range_first + 31;

// Call B's target: a secret only its identity may read and a socket only it may connect to, both
// in its lent workspace, then it waits.
const char *const holder_probe = R"PY(
report("UID", lambda: os.getuid())
fd = os.open("secret", os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"b's secret")
os.close(fd)
server = socket.socket(socket.AF_UNIX)
server.bind("sock")
server.listen(1)
open("ready", "w").close()
wait_for("go", 60)
)PY";

// Call A's target: B's secret and socket, by their paths on the host.
const char *const reader_probe = R"PY(
report("UID", lambda: os.getuid())
report("READ", lambda: open(sys.argv[1]).read())
report("CONNECT", lambda: socket.socket(socket.AF_UNIX).connect(sys.argv[2]))
)PY";

// What a process of `uid` (started by the test, outside every sandbox) may do to `pid`:
// "<kill errno> <open /proc/PID/mem errno>", 0 for success.
std::string as_uid(uid_t uid, pid_t pid) {
    std::array<int, 2> out{};
    if (::pipe(out.data()) != 0) {
        return "pipe failed";
    }
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(out[0]);
        std::string text = "drop failed";
        if (::setgroups(0, nullptr) == 0 && ::setresgid(uid, uid, uid) == 0 &&
            ::setresuid(uid, uid, uid) == 0) {
            const int killed = ::kill(pid, 0) == 0 ? 0 : errno;
            const auto mem = "/proc/" + std::to_string(pid) + "/mem";
            const int fd = ::open(mem.c_str(), O_RDONLY);
            text = std::to_string(killed) + " " + std::to_string(fd >= 0 ? 0 : errno);
        }
        (void)!::write(out[1], text.data(), text.size());
        ::_exit(0);
    }
    ::close(out[1]);
    std::array<char, 64> buffer{};
    const auto n = ::read(out[0], buffer.data(), buffer.size());
    ::close(out[0]);
    ::waitpid(child, nullptr, 0);
    return n > 0 ? std::string{buffer.data(), static_cast<std::size_t>(n)} : "nothing";
}

struct TwoCalls {
    Result holder;
    Result reader;
    std::string host_probe;  // as_uid(the reader's uid, the holder's target)
};

class IdentityPerCallConfinement : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (::geteuid() != 0) {
            GTEST_SKIP() << "only a root runtime gives its calls identities of their own";
        }
        // B's workspace is a ramfs, which takes no idmap: it is lent by ownership, so its entries
        // belong to B's identity on disk while B runs, as a lent tree did before idmaps. Mounted
        // in a mount namespace of this test's (its calls inherit it), outside the host's temp
        // directories (A's view has its own /tmp, where B's workspace would be absent whoever
        // looked) and out of the socket walk's reach, so that B's socket is not masked for A.
        ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
        ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
        holder_ws_ = host_dir() / "a" / "b" / "ws-b";
        fs::create_directories(holder_ws());
        fs::permissions(host_dir() / "a", fs::perms{0755});
        fs::permissions(host_dir() / "a" / "b", fs::perms{0755});
        ASSERT_EQ(::mount("none", holder_ws().c_str(), "ramfs", 0, nullptr), 0)
            << std::strerror(errno);
        fs::permissions(holder_ws(), fs::perms{0755});
    }
    void TearDown() override {
        ::umount2(holder_ws().c_str(), MNT_DETACH);
        Confinement::TearDown();
    }
    [[nodiscard]] const fs::path &holder_ws() const { return holder_ws_; }
    fs::path holder_ws_;

    TwoCalls two_calls(const std::string &config) {
        for (const char *name : {"ready", "go", "secret", "sock"}) {
            fs::remove(holder_ws() / name);
        }
        const auto marker = sleep_marker();
        auto holder = start({.command = python(holder_probe, {marker}),
                             .workspace = holder_ws().string(),
                             .timeout_ms = 60000,
                             .config = config});
        TwoCalls out;
        if (!eventually([&] { return fs::exists(holder_ws() / "ready"); })) {
            make_file(holder_ws() / "go", "", 0644);
            out.holder = holder.wait();
            return out;
        }
        out.reader = run({.command = python(reader_probe, {(holder_ws() / "secret").string(),
                                                           (holder_ws() / "sock").string()}),
                          .config = config});
        // The holder's target, found by its marker among the processes of its identity.
        const auto uid = out.reader.value("UID-OK");
        for (const auto pid : processes_with(marker)) {
            std::ifstream comm{"/proc/" + std::to_string(pid) + "/comm"};
            std::string name;
            std::getline(comm, name);
            if (name == "python3" && uid) {
                out.host_probe = as_uid(static_cast<uid_t>(std::stoul(*uid)), pid);
            }
        }
        make_file(holder_ws() / "go", "", 0644);
        out.holder = holder.wait();
        return out;
    }
};

TEST_F(IdentityPerCallConfinement, TwoCallsAtOnceReachNothingOfEachOther) {
    const auto config = "[confinement]\nuid_range = [" + std::to_string(range_first) + ", " +
                        std::to_string(range_last) + "]\n";
    const auto own = two_calls(config);
    EXPECT_EQ(own.holder.status, 0) << own.holder;
    EXPECT_EQ(own.reader.status, 0) << own.reader;
    const auto holder_uid = own.holder.value("UID-OK");
    const auto reader_uid = own.reader.value("UID-OK");
    ASSERT_TRUE(holder_uid && reader_uid) << own.holder << own.reader;
    EXPECT_NE(*holder_uid, *reader_uid);
    for (const auto &uid : {*holder_uid, *reader_uid}) {
        EXPECT_GE(std::stoul(uid), range_first) << uid;
        EXPECT_LE(std::stoul(uid), range_last) << uid;
    }
    EXPECT_TRUE(own.reader.has("READ-DENIED:EACCES")) << own.reader;
    EXPECT_TRUE(own.reader.has("CONNECT-DENIED:EACCES")) << own.reader;
    // A process of the reader's identity outside its sandbox (its tracer, say) can neither signal
    // nor trace the holder's target.
    EXPECT_EQ(own.host_probe, std::to_string(EPERM) + " " + std::to_string(EACCES));

    // The control: on the one identity every call shares, the same probes reach it all.
    const auto shared = two_calls("");
    EXPECT_EQ(shared.holder.value("UID-OK"), std::to_string(sandbox_uid())) << shared.holder;
    EXPECT_EQ(shared.reader.value("UID-OK"), std::to_string(sandbox_uid())) << shared.reader;
    EXPECT_EQ(shared.reader.value("READ-OK"), "b's secret") << shared.reader;
    EXPECT_TRUE(shared.reader.has("CONNECT-OK")) << shared.reader;
    EXPECT_EQ(shared.host_probe, "0 0");
}

TEST_F(IdentityPerCallConfinement, TheIdentityIsRecordedAndGivenBackWhenTheCallEnds) {
    // A range of this test's own (per variant of the suite, which may run at the same time), so
    // that no other call takes the id again before the test looks at its lock.
    const unsigned first = range_last + 1 + (std::getenv("TEA_TEST_UNAUDITED") != nullptr ? 8 : 0);
    const auto config = "[confinement]\nuid_range = [" + std::to_string(first) + ", " +
                        std::to_string(first + 7) + "]\n";
    const auto r = run({.command = {"/bin/true"}, .config = config, .options = {"--json"}});
    EXPECT_EQ(r.status, 0) << r;
    const auto record = nlohmann::json::parse(r.out);
    const auto uid = record["identity"]["uid"].get<unsigned>();
    EXPECT_EQ(record["identity"]["from"], "range");
    EXPECT_GE(uid, first);
    EXPECT_LE(uid, first + 7);
    EXPECT_EQ(record["identity"]["lent"][0]["by"], "idmap");
    // Given back: its lock is free for the next call.
    const auto lock = "/run/tea-evaluate/identities/" + std::to_string(uid);
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << lock;
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the identity's lock is still held";
    ::close(fd);
}

}  // namespace
}  // namespace tea::test::bwrap
