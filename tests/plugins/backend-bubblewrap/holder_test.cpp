// An audited call (ABI 1.4): bwrap builds the view untraced and the helper holds it as the
// sandbox's pid 1, while the traced helper joins it and starts the target. What the target could
// do with an untraced process of its own uid, and whether joining keeps every protection that
// bwrap gives the unaudited call's target directly.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

TEST_F(Confinement, TheAuditedTargetCannotReachTheUntracedHolder) {
    // The same three reaches into a process of the target's uid: its environment (read access),
    // its memory and a ptrace attach (write access). Against the holder they must fail; against a
    // child the probe starts itself, the control, the first two succeed (the child is traced by the
    // observer already, so no one else may attach to it).
    const auto probe = python(R"PY(
import ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def reach(name, pid):
    try:
        open("/proc/%d/environ" % pid, "rb").read()
        print(name + "-ENVIRON-OK")
    except OSError as e:
        print(name + "-ENVIRON-DENIED:" + errno.errorcode[e.errno])
    try:
        open("/proc/%d/mem" % pid, "rb").close()
        print(name + "-MEM-OK")
    except OSError as e:
        print(name + "-MEM-DENIED:" + errno.errorcode[e.errno])
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        print(name + "-PTRACE-OK")
    else:
        print(name + "-PTRACE-DENIED:" + errno.errorcode[ctypes.get_errno()])
print("ONE:" + open("/proc/1/cmdline", "rb").read().replace(b"\0", b" ").decode())
reach("HOLDER", 1)
child = subprocess.Popen(["sleep", "30"])
reach("OWN", child.pid)
child.kill()
)PY");
    const auto r = run({.command = probe});
    ASSERT_EQ(r.status, 0) << r;
    EXPECT_NE(r.value("ONE").value_or("").find(" hold --handoff-fd "), std::string::npos)
        << "the audited call's pid 1 is not the holder\n"
        << r;
    EXPECT_TRUE(r.has("HOLDER-ENVIRON-DENIED")) << r;
    EXPECT_TRUE(r.has("HOLDER-MEM-DENIED")) << r;
    EXPECT_TRUE(r.has("HOLDER-PTRACE-DENIED")) << r;
    EXPECT_TRUE(r.has("OWN-ENVIRON-OK")) << r;
    EXPECT_TRUE(r.has("OWN-MEM-OK")) << r;
}

TEST_P(EitherIdentity, TheJoinedTargetHasWhatBwrapGivesTheUnauditedOne) {
    // What bwrap sets up for the target it starts itself, and the helper that joins the holder
    // must set up the same: identity, capabilities, no_new_privs, seccomp, descriptors, session,
    // pid namespace, network, host name, limits, working directory and environment.
    const auto probe = python(R"PY(
import resource, socket
status = dict(l.rstrip("\n").split(":\t", 1) for l in open("/proc/self/status") if ":\t" in l)
for key in ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    print(key + ":" + status[key])
print("FDS:" + ",".join(sorted(os.listdir("/proc/self/fd"), key=int)[:-1]))
print("LEADER:%s" % (os.getsid(0) == os.getpid()))
print("PID:%d" % os.getpid())
print("NETS:" + ",".join(n for _, n in socket.if_nameindex()))
print("HOST:" + socket.gethostname())
for name in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC"):
    print(name + ":%s" % (resource.getrlimit(getattr(resource, name)),))
print("CWD:" + os.getcwd())
skip = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
print("ENV:" + repr(sorted((k, v) for k, v in os.environb.items() if k.decode() not in skip)))
)PY");
    const Call call{.command = probe, .env = {"MULTI=line one\nline two", "my.setting=1"}};
    const auto audited = run(call);
    auto unaudited_call = call;
    unaudited_call.options = {"--observer", "none"};
    const auto unaudited = run(unaudited_call);
    ASSERT_EQ(audited.status, 0) << audited;
    ASSERT_EQ(unaudited.status, 0) << unaudited;
    for (const char *key : {"Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                            "NoNewPrivs", "Seccomp", "FDS", "LEADER", "PID", "NETS", "HOST",
                            "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "CWD", "ENV"}) {
        ASSERT_TRUE(unaudited.value(key).has_value()) << key << "\n" << unaudited;
        EXPECT_EQ(audited.value(key), unaudited.value(key)) << key << "\n" << audited;
    }
    // And what both hold is the confinement, not a shared mistake.
    const std::string none = "0000000000000000";
    EXPECT_EQ(audited.value("CapBnd"), none) << audited;
    EXPECT_EQ(audited.value("NoNewPrivs"), "1") << audited;
    EXPECT_EQ(audited.value("Seccomp"), "2") << audited;
    EXPECT_EQ(audited.value("FDS"), "0,1,2") << audited;
    // In a session of the confinement's making, which it does not lead: it cannot acquire a
    // controlling terminal (TerminalInjectionIsRefused shows the host's is out of reach).
    EXPECT_EQ(audited.value("LEADER"), "False") << audited;
    EXPECT_EQ(audited.value("NETS"), "lo") << audited;
    EXPECT_EQ(audited.value("HOST"), "tea-sandbox") << audited;
    EXPECT_NE(audited.value("ENV").value_or("").find("line one\\nline two"), std::string::npos)
        << audited;
}

// A socket pair for a hand-off, the test's end first; closed with the object.
struct HandOff {
    std::array<int, 2> ends{-1, -1};
    HandOff() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends.data()), 0); }
    HandOff(const HandOff &) = delete;
    HandOff &operator=(const HandOff &) = delete;
    ~HandOff() {
        for (const int fd : ends) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }
    void close_helpers_end() { ::close(std::exchange(ends[1], -1)); }
    // One byte, with `fd` as its descriptor when it is not -1.
    void send(int fd) const {
        char byte = 'h';
        iovec iov{&byte, 1};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (fd >= 0) {
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            cmsghdr *c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
        }
        EXPECT_EQ(::sendmsg(ends[0], &msg, 0), 1) << std::strerror(errno);
    }
};

TEST_F(Confinement, TheHolderHoldsOnlyAsTheFirstProcessOfANewPidNamespace) {
    // Started anywhere else, its pidfd would lead enter into namespaces that are not a sandbox's.
    // (The control, the holder working as a sandbox's pid 1, is every audited call, and
    // TheAuditedTargetCannotReachTheUntracedHolder reads it there.)
    HandOff h;
    Process holder({TEA_SANDBOX_HELPER_BIN, "hold", "--handoff-fd", "3"}, base_env(),
                   {{h.ends[1], 3}}, base());
    const auto r = holder.wait(std::chrono::seconds{10});
    h.close_helpers_end();
    EXPECT_EQ(r.status, 125) << r;
    EXPECT_NE(r.err.find("not the first process of a new pid namespace"), std::string::npos) << r;
    char byte = 0;
    EXPECT_EQ(::recv(h.ends[0], &byte, 1, 0), 0) << "it handed something over";
}

TEST_F(Confinement, EnterStartsTheTargetOnlyAfterAWholeHandOff) {
    const auto env_file = base() / "env";
    make_file(env_file, std::string{"PATH=/usr/bin:/bin"} + '\0', 0644);
    auto enter = [&](const std::function<void(HandOff &)> &hand) {
        HandOff h;
        const int env = ::open(env_file.c_str(), O_RDONLY | O_CLOEXEC);
        Process p({TEA_SANDBOX_HELPER_BIN, "enter", "--handoff-fd", "3", "--env-fd", "4", "--cwd",
                   "/", "--", "/bin/sh", "-c", "echo TARGET-RAN"},
                  base_env(), {{h.ends[1], 3}, {env, 4}}, base());
        ::close(env);
        h.close_helpers_end();
        hand(h);
        return p.wait(std::chrono::seconds{20});
    };
    // No hand-off at all: the sandbox's bwrap failed, say.
    const auto none = enter([](HandOff &h) { ::close(std::exchange(h.ends[0], -1)); });
    EXPECT_EQ(none.status, 125) << none;
    EXPECT_NE(none.err.find("ended before it was ready"), std::string::npos) << none;
    // A byte without a descriptor.
    const auto bare = enter([](HandOff &h) { h.send(-1); });
    EXPECT_EQ(bare.status, 125) << bare;
    EXPECT_NE(bare.err.find("did not carry one descriptor"), std::string::npos) << bare;
    // A descriptor that is no live process's pidfd.
    const int file = ::open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    const auto foreign = enter([&](HandOff &h) { h.send(file); });
    ::close(file);
    EXPECT_EQ(foreign.status, 125) << foreign;
    EXPECT_NE(foreign.err.find("holder is gone"), std::string::npos) << foreign;
    for (const auto *r : {&none, &bare, &foreign}) {
        EXPECT_FALSE(r->has("TARGET-RAN")) << *r;
    }
    // The control: the same enter, handed a real holder's pidfd by the holder itself (bwrap with
    // only the namespaces), runs the target inside, then ends the holder.
    const auto real = enter([&](HandOff &h) {
        Process holder({"/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-net",
                        "--as-pid-1", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                        "--dev", "/dev", "--", TEA_SANDBOX_HELPER_BIN, "hold", "--handoff-fd", "3"},
                       base_env(), {{h.ends[0], 3}}, base());
        ::close(std::exchange(h.ends[0], -1));
        // Until enter, its target done, ends it: the holder does not end by itself.
        const auto held = holder.wait(std::chrono::seconds{20});
        EXPECT_EQ(held.status, 128 + SIGKILL) << "enter did not end the sandbox\n" << held;
    });
    EXPECT_EQ(real.status, 0) << real;
    EXPECT_TRUE(real.has("TARGET-RAN")) << real;
}

}  // namespace
}  // namespace tea::test::bwrap
