// Ways a target could open a file without the audit's tracer seeing it: a seccomp user-notify
// listener of its own (whose answer outranks the tracer's stop) and a child cloned with
// CLONE_UNTRACED (which the tracer never follows), each closed by the confinement's seccomp
// filter; a tracer ended by the memory budget, which leaves the audit incomplete; and a tracer
// killed before the target at the end of its grace, which the runtime's order of kills prevents.
//
// Each attack is shown working against strace itself, outside the confinement: the file is read
// and the trace does not name it. Under the confinement the same probe is refused, and the plain
// read it falls back to is listed (--strict exits 3).
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// The probe's read of the key: the listener's (or the untraced child's) read first, then, if the
// attack was refused, the same read made plainly.
constexpr const char *listener_probe = R"PY(
import struct
machine = os.uname().machine
SECCOMP, OPENAT = {"x86_64": (317, 257), "aarch64": (277, 56)}[machine]
key = sys.argv[1]
a, b = socket.socketpair()
child = os.fork()
if child == 0:
    a.close()
    msg, fds, flags, addr = socket.recv_fds(b, 16, 1)
    if not fds:
        os._exit(0)
    notif = ctypes.create_string_buffer(80)  # struct seccomp_notif
    resp = ctypes.create_string_buffer(24)   # struct seccomp_notif_resp
    while True:
        ctypes.memset(notif, 0, 80)
        if libc.ioctl(fds[0], ctypes.c_ulong(0xc0502100), notif) < 0:  # NOTIF_RECV
            os._exit(0)
        struct.pack_into("QqiI", resp, 0, struct.unpack_from("Q", notif, 0)[0], 0, 0, 1)
        libc.ioctl(fds[0], ctypes.c_ulong(0xc0182101), resp)  # NOTIF_SEND, FLAG_CONTINUE
b.close()
# Every openat goes to the listener, which lets it continue.
insns = [(0x20, 0, 0, 0), (0x15, 0, 1, OPENAT), (0x06, 0, 0, 0x7fc00000), (0x06, 0, 0, 0x7fff0000)]
program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in insns))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(insns), ctypes.cast(program, ctypes.c_void_p))
def install():
    fd = checked(libc.syscall(SECCOMP, 1, 8, ctypes.byref(fprog)))  # SET_MODE_FILTER, NEW_LISTENER
    socket.send_fds(a, [b"x"], [fd])
report("LISTENER", install)
a.close()
report("READ", lambda: open(key).read().strip())
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
)PY";

// strace's filter answers an untraced process's traced calls with ENOSYS, so the untraced child
// makes its own parent its tracer, which lets those calls run.
constexpr const char *untraced_probe = R"PY(
CLONE = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
key = sys.argv[1]
def untraced():
    pid = checked(libc.syscall(CLONE, 0x00800000 | signal.SIGCHLD, 0, 0, 0, 0))  # CLONE_UNTRACED
    if pid == 0:
        try:
            if libc.ptrace(0, 0, None, None) == 0:  # PTRACE_TRACEME
                os.kill(os.getpid(), signal.SIGSTOP)
                os.write(1, ("CHILD-READ:" + open(key).read().strip() + "\n").encode())
        finally:
            os._exit(0)
    while True:
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            return
        sig = os.WSTOPSIG(status)
        if sig == signal.SIGSTOP:
            libc.ptrace(0x4200, pid, None, ctypes.c_void_p(0x80))  # SETOPTIONS: TRACESECCOMP
            sig = 0
        elif sig == signal.SIGTRAP:
            sig = 0  # a seccomp stop: the call runs
        libc.ptrace(7, pid, None, ctypes.c_void_p(sig))  # PTRACE_CONT
report("UNTRACED", untraced)
)PY";

class AuditEvasion : public EitherIdentity {
   protected:
    void SetUp() override {
        EitherIdentity::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        if (::access("/usr/bin/strace", X_OK) != 0) {
            GTEST_SKIP() << "strace is not installed (apt-get install strace)";
        }
        // A host file outside every grant, readable by every identity.
        const auto outside = host_dir() / "outside";
        fs::create_directory(outside);
        fs::permissions(outside, fs::perms{0755});
        key_value_ = "PRIVATE KEY " + random_token();
        key_ = outside / "id_rsa";
        make_file(key_, key_value_ + "\n", 0644);
    }

    // The probe under strace alone, as the audit runs it but without the confinement: the
    // attack's positive control. Returns the probe's output and the trace strace wrote.
    std::pair<Result, std::string> under_strace_alone(const char *code) {
        const auto trace = base() / ("strace-" + random_token(6));
        std::vector<std::string> argv{
            "/usr/bin/strace",          "-f", "--seccomp-bpf", "-qq", "-e",
            "trace=openat,open,execve", "-o", trace.string()};
        const auto probe = python(code, {key_.string()});
        argv.insert(argv.end(), probe.begin(), probe.end());
        auto r = run_direct(argv);
        std::ifstream in{trace};
        std::string text{std::istreambuf_iterator<char>{in}, {}};
        return {r, text};
    }

    // The probe confined and audited with --strict: its output, and the call's record.
    std::pair<Result, nlohmann::json> confined(const char *code) {
        auto r = run({.command = python(code, {key_.string()}),
                      .options = {"--observer", "strace", "--strict", "--json"}});
        auto record = nlohmann::json::parse(r.out, nullptr, false);
        EXPECT_FALSE(record.is_discarded()) << r;
        // With --json the record is stdout and the target's output stderr.
        std::swap(r.out, r.err);
        return {r, record};
    }

    [[nodiscard]] bool lists_key(const nlohmann::json &record) const {
        if (!record.is_object() || !record.contains("audit")) {
            return false;
        }
        for (const auto &f : record["audit"].value("findings", nlohmann::json::array())) {
            if (f.value("path", "") == key_.string()) {
                return true;
            }
        }
        return false;
    }

    fs::path key_;
    std::string key_value_;
};

TEST_P(AuditEvasion, ATargetsOwnSeccompListenerCannotHideAnOpenFromTheAudit) {
    const auto [alone, trace] = under_strace_alone(listener_probe);
    EXPECT_TRUE(alone.has("LISTENER-OK")) << alone;
    EXPECT_EQ(alone.value("READ-OK"), key_value_) << alone;
    EXPECT_NE(trace.find("openat("), std::string::npos) << "strace traced the probe\n" << trace;
    EXPECT_EQ(trace.find(key_.string()), std::string::npos)
        << "the listener hid the open from strace\n"
        << trace;

    const auto [r, record] = confined(listener_probe);
    EXPECT_TRUE(r.has("LISTENER-DENIED:EPERM")) << r;
    EXPECT_EQ(r.value("READ-OK"), key_value_) << "the plain read happened" << r;
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_TRUE(lists_key(record)) << r;
}

TEST_P(AuditEvasion, AnUntracedCloneCannotReadUnaudited) {
    const auto [alone, trace] = under_strace_alone(untraced_probe);
    EXPECT_TRUE(alone.has("UNTRACED-OK")) << alone;
    EXPECT_EQ(alone.value("CHILD-READ"), key_value_) << alone;
    EXPECT_NE(trace.find("openat("), std::string::npos) << trace;
    EXPECT_EQ(trace.find(key_.string()), std::string::npos)
        << "the untraced child's open is missing from the trace\n"
        << trace;

    const auto [r, record] = confined(untraced_probe);
    EXPECT_TRUE(r.has("UNTRACED-DENIED:EPERM")) << r;
    EXPECT_FALSE(r.value("CHILD-READ")) << r;
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_FALSE(lists_key(record)) << r;
}

// The memory budget's OOM killer ends the largest process of the call. A target that fills its
// tmpfs file systems holds its memory in pages no process owns, so that process is the tracer,
// whose tracees then run on untraced (tracer_end_probe.c). The trace often ends between two lines
// then, and read as complete: the runtime sees the processes that outlived the tracer.
TEST_P(AuditEvasion, ATracerEndedByTheMemoryBudgetLeavesTheAuditIncomplete) {
    const auto probe = workspace() / "oom-probe";
    fs::copy_file(TEA_TRACER_END_PROBE_BIN, probe);
    fs::permissions(probe, fs::perms{0755});
    const std::string budget = "[budgets]\nmemory = 67108864\n";
    // Asked unaudited: where no cgroup holds the budget, its stand-in (RLIMIT_DATA) would stop a
    // sanitized build's helper, which reserves terabytes of shadow memory, before the target.
    const auto enforced =
        run({.command = {"true"}, .config = budget, .options = {"--json", "--observer", "none"}});
    const auto by =
        nlohmann::json::parse(enforced.out, nullptr, false)["budget"].value("memoryEnforcedBy", "");
    if (by != "cgroup1" && by != "cgroup2") {
        GTEST_SKIP() << "no memory cgroup holds the budget here (" << by
                     << "), so no OOM killer ends a process of the call";
    }
    // Each try kills the tracer at another moment: in the middle of a traced call (the trace is
    // cut) or between two (it is not); both must leave the audit incomplete.
    constexpr int tries = 4;
    int outlived = 0;
    for (int i = 0; i < tries; ++i) {
        auto r = run({.command = {probe.string(), key_.string(), "0", "fill"},
                      .config = budget,
                      .options = {"--observer", "strace", "--json"}});
        const auto record = nlohmann::json::parse(r.out, nullptr, false);
        ASSERT_TRUE(record.is_object()) << r;
        std::swap(r.out, r.err);
        EXPECT_GE(record["budget"].value("oomKills", 0), 1) << r;
        EXPECT_FALSE(record["audit"].value("complete", true)) << r;
        const auto reason = record["audit"].value("reason", "");
        outlived += reason.find("the observer ended") != std::string::npos ? 1 : 0;
        if (r.has("UNTRACED")) {
            // The probe outlived its tracer: strace's filter, left without it, answers its opens
            // ENOSYS, so the key stays unread and unnamed (the audit is incomplete, above).
            EXPECT_TRUE(r.has("READ-FAILED:Function not implemented")) << r;
            EXPECT_FALSE(lists_key(record)) << r;
        }
    }
    // The tracer was the one the OOM killer ended, while the probe still ran.
    EXPECT_GT(outlived, 0);

    // The control: a target that is itself the largest process is the one ended, the tracer sees
    // it end, and the audit stays complete.
    const auto hog = run({.command = python("report('ALLOC', lambda: len(b'x' * (128 << 20)))"),
                          .config = budget,
                          .options = {"--observer", "strace", "--json"}});
    const auto record = nlohmann::json::parse(hog.out, nullptr, false);
    ASSERT_TRUE(record.is_object()) << hog;
    EXPECT_EQ(hog.status, 128 + SIGKILL) << hog;
    EXPECT_TRUE(record["audit"].value("complete", false)) << hog;
}

// A target that ignores SIGTERM is ended at the end of its grace. Were the tracer killed first,
// the target would run on untraced for a moment, and the call the tracer had stopped but not yet
// written would run unrecorded: the runtime kills the namespaces first, and the tracer sees the
// target end.
TEST_P(AuditEvasion, AtTheEndOfItsGraceTheTargetEndsBeforeItsTracer) {
    const auto probe = workspace() / "grace-probe";
    fs::copy_file(TEA_TRACER_END_PROBE_BIN, probe);
    fs::permissions(probe, fs::perms{0755});
    // The control: the probe sees its tracer end when strace alone is killed under it.
    const auto alone = run_direct(
        {"/bin/sh", "-c",
         "/usr/bin/strace -f --seccomp-bpf -qq -e trace=openat -o /dev/null \"$0\" \"$1\" 0 wait "
         "& sleep 0.5; kill -KILL $!; sleep 0.5",
         probe.string(), key_.string()});
    EXPECT_TRUE(alone.has("UNTRACED")) << alone;

    for (int i = 0; i < 3; ++i) {
        auto r = run({.command = {probe.string(), key_.string(), "0", "wait"},
                      .timeout_ms = 300,
                      .options = {"--observer", "strace", "--json"}});
        const auto record = nlohmann::json::parse(r.out, nullptr, false);
        ASSERT_TRUE(record.is_object()) << r;
        std::swap(r.out, r.err);
        EXPECT_TRUE(record.value("timedOut", false)) << r;
        EXPECT_FALSE(r.has("UNTRACED")) << r;
        EXPECT_TRUE(record["audit"].value("complete", false)) << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Identities, AuditEvasion,
                         ::testing::Values(Identity::invoker, Identity::unprivileged));

}  // namespace
}  // namespace tea::test::bwrap
