// What the target may ask of the kernel: no capabilities, no_new_privs, the
// seccomp filter's refusals (terminal injection, io_uring, mounts, namespaces).
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

TEST_F(Confinement, TerminalInjectionIsRefusedEvenWithHighBitsInTheRequest) {
    // The pty becomes the probe's controlling terminal, where the kernel itself
    // allows TIOCSTI to an unprivileged process (dev.tty.legacy_tiocsti = 1):
    // an EPERM can then only come from the seccomp filter. The second request
    // differs in bit 32 only, which the kernel drops and a naive filter would not.
    const auto probe = python(R"PY(
import fcntl, platform, termios
m, s = os.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    report("CTTY", lambda: zero(fcntl.ioctl(s, termios.TIOCSCTTY, 0)))
    report("TIOCSTI", lambda: zero(fcntl.ioctl(s, termios.TIOCSTI, b"x") and 0))
    if platform.machine() == "x86_64":
        request = ctypes.c_ulong((1 << 32) | termios.TIOCSTI)
        report("TIOCSTI-HIGH", lambda: zero(libc.syscall(16, s, request, ctypes.c_char_p(b"y"))))
    os._exit(0)
os.waitpid(pid, 0)
)PY");
    std::string legacy = "1";
    std::ifstream{"/proc/sys/dev/tty/legacy_tiocsti"} >> legacy;
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("CTTY-OK")) << confined;
    EXPECT_TRUE(confined.has("TIOCSTI-DENIED:EPERM")) << confined;
    EXPECT_TRUE(confined.has("TIOCSTI-HIGH-DENIED:EPERM")) << confined;
    if (::geteuid() == 0 || legacy == "1") {
        EXPECT_TRUE(control.has("TIOCSTI-OK")) << control;
        EXPECT_TRUE(control.has("TIOCSTI-HIGH-OK")) << control;
    }
}

TEST_F(Confinement, IoUringIsRefused) {
    const auto probe = python(R"PY(
def setup():
    params = ctypes.create_string_buffer(120)
    os.close(checked(libc.syscall(425, 8, params)))
report("IO_URING", setup)
)PY");
    std::string disabled = "0";
    std::ifstream{"/proc/sys/kernel/io_uring_disabled"} >> disabled;
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("IO_URING-DENIED:EPERM")) << confined;
    // kernel.io_uring_disabled = 2 refuses io_uring to everyone, root too: the
    // control cannot succeed then, and the EPERM above is the kernel's as much
    // as the filter's. With 0 (or 1 and a root control) it is the filter's.
    if (disabled == "0" || (disabled == "1" && ::geteuid() == 0)) {
        EXPECT_TRUE(control.has("IO_URING-OK")) << control;
    } else {
        std::cout << "[ note ] kernel.io_uring_disabled = " << disabled
                  << ": only the confined side is asserted\n";
    }
}

TEST_P(EitherIdentity, OnlyLocalInternetAndRoutingSocketsCanBeMade) {
    // AF_VSOCK reaches the hypervisor whatever the network namespace; a family is also tried
    // with high bits set, which the kernel drops and a naive filter would not.
    const auto probe = python(R"PY(
SOCKET = {"x86_64": 41, "aarch64": 198}[os.uname().machine]
def make(family, kind, proto=0):
    os.close(checked(libc.syscall(SOCKET, ctypes.c_ulong(family), kind, proto)))
report("UNIX", lambda: make(socket.AF_UNIX, socket.SOCK_STREAM))
report("INET", lambda: make(socket.AF_INET, socket.SOCK_STREAM))
report("INET6", lambda: make(socket.AF_INET6, socket.SOCK_DGRAM))
report("ROUTE", lambda: make(socket.AF_NETLINK, socket.SOCK_RAW, 0))
report("PAIR", lambda: [s.close() for s in socket.socketpair()] and None)
report("UEVENT", lambda: make(socket.AF_NETLINK, socket.SOCK_RAW, 15))
report("VSOCK", lambda: make(40, socket.SOCK_STREAM))
report("VSOCK-HIGH", lambda: make((1 << 32) | 40, socket.SOCK_STREAM))
report("PACKET", lambda: make(17, socket.SOCK_DGRAM))
report("ALG", lambda: make(38, socket.SOCK_SEQPACKET))
)PY");
    const auto [confined, control] = run_both({.command = probe});
    for (const char *allowed : {"UNIX-OK", "INET-OK", "INET6-OK", "ROUTE-OK", "PAIR-OK"}) {
        EXPECT_TRUE(confined.has(allowed)) << allowed << "\n" << confined;
        EXPECT_TRUE(control.has(allowed)) << allowed << "\n" << control;
    }
    EXPECT_TRUE(confined.has("UEVENT-DENIED:EPROTONOSUPPORT")) << confined;
    EXPECT_TRUE(control.has("UEVENT-OK")) << control;
    for (const char *family : {"VSOCK", "VSOCK-HIGH", "PACKET", "ALG"}) {
        EXPECT_TRUE(confined.has(std::string{family} + "-DENIED:EAFNOSUPPORT")) << family << "\n"
                                                                                << confined;
    }
    // The control shows each family the kernel here offers to the caller; a family this kernel
    // lacks (or, for AF_PACKET, one only root may open) answers the same in both.
    if (!control.has("VSOCK-OK") || !control.has("PACKET-OK")) {
        std::cout << "[ note ] this kernel or identity lacks some families: " << control.out;
    }
    EXPECT_EQ(control.has("VSOCK-OK"), control.has("VSOCK-HIGH-OK")) << control;
    if (call_uid() == 0) {
        EXPECT_TRUE(control.has("PACKET-OK")) << control;
    }
}

TEST_P(EitherIdentity, PersonalityKeepsTheKernelsDefences) {
    // READ_IMPLIES_EXEC and MMAP_PAGE_ZERO, a low persona byte beside an allowed bit, and every
    // bit but one set are refused; the defaults, ADDR_NO_RANDOMIZE (sanitizers need it), an
    // allowed value with high bits the kernel drops, and the query stay allowed.
    const auto probe = python(R"PY(
PERSONALITY = {"x86_64": 135, "aarch64": 92}[os.uname().machine]
def persona(value):
    old = checked(libc.syscall(PERSONALITY, ctypes.c_ulong(value)))
    libc.syscall(PERSONALITY, ctypes.c_ulong(0))
    return hex(old)
report("QUERY", lambda: persona(0xffffffff) and None)
report("DEFAULT", lambda: persona(0) and None)
report("LINUX32", lambda: persona(0x0008) and None)
report("UNAME26", lambda: persona(0x20000) and None)
report("NORANDOM", lambda: persona(0x0040000) and None)
report("NORANDOM-LOW", lambda: persona(0x0040001) and None)
report("NORANDOM-HIGH", lambda: persona((1 << 32) | 0x0040000) and None)
report("ALMOST-ALL", lambda: persona(0xfffffff7) and None)
report("EXEC", lambda: persona(0x0400000) and None)
report("PAGE-ZERO", lambda: persona(0x0100000) and None)
)PY");
    const auto [confined, control] = run_both({.command = probe});
    for (const char *allowed : {"QUERY-OK", "DEFAULT-OK", "LINUX32-OK", "UNAME26-OK", "NORANDOM-OK",
                                "NORANDOM-HIGH-OK"}) {
        EXPECT_TRUE(confined.has(allowed)) << allowed << "\n" << confined;
    }
    for (const char *refused : {"NORANDOM-LOW", "ALMOST-ALL", "EXEC", "PAGE-ZERO"}) {
        EXPECT_TRUE(confined.has(std::string{refused} + "-DENIED:EPERM")) << refused << "\n"
                                                                          << confined;
        EXPECT_TRUE(control.has(std::string{refused} + "-OK")) << refused << "\n" << control;
    }
}

TEST_F(Confinement, TheKernelLogAndLineDisciplinesAreRefused) {
    const auto probe = python(R"PY(
import fcntl, struct, termios
SYSLOG = {"x86_64": 103, "aarch64": 116}[os.uname().machine]
report("SYSLOG", lambda: checked(libc.syscall(SYSLOG, 10, None, 0)) and None)  # its size
m, s = os.openpty()
report("TIOCSETD", lambda: zero(fcntl.ioctl(s, termios.TIOCSETD, struct.pack("i", 0)) and 0))
)PY");
    std::string restricted = "1";
    std::ifstream{"/proc/sys/kernel/dmesg_restrict"} >> restricted;
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("SYSLOG-DENIED:EPERM")) << confined;
    EXPECT_TRUE(confined.has("TIOCSETD-DENIED:EPERM")) << confined;
    EXPECT_TRUE(control.has("TIOCSETD-OK")) << control;
    if (::geteuid() == 0 || restricted == "0") {
        EXPECT_TRUE(control.has("SYSLOG-OK")) << control;
    }
}

TEST_P(EitherIdentity, NoProcessCanTraceOrReachIntoAnother) {
    // Unaudited, so that no tracer of the call's own makes these fail regardless: the refusals
    // below are the filter's. The child stands in for a sandbox process the audit does not
    // trace (the egress relay, the sandbox's init).
    const auto probe = python(R"PY(
PIDFD_OPEN, PIDFD_GETFD = 434, 438
VM_READV = {"x86_64": 310, "aarch64": 270}[os.uname().machine]
def sleeper():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    os.read(r, 1)
    return pid
child, other = sleeper(), sleeper()
report("ATTACH", lambda: zero(libc.ptrace(16, child, None, None)))  # PTRACE_ATTACH
report("SEIZE", lambda: zero(libc.ptrace(0x4206, other, None, None)))  # PTRACE_SEIZE
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local = Iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = Iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
report("VMREAD", lambda: zero(libc.syscall(VM_READV, child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
def getfd():
    pidfd = checked(libc.syscall(PIDFD_OPEN, child, 0))
    os.close(checked(libc.syscall(PIDFD_GETFD, pidfd, 1, 0)))
report("GETFD", getfd)
for pid in (child, other):
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
def traceme():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.ptrace(0, 0, None, None) == 0 else ctypes.get_errno())
    _, status = os.waitpid(pid, 0)
    if os.WEXITSTATUS(status):
        raise OSError(os.WEXITSTATUS(status), "")
report("TRACEME", traceme)
)PY");
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--observer", "none"}});
    for (const char *refused : {"ATTACH", "SEIZE", "VMREAD", "GETFD", "TRACEME"}) {
        EXPECT_TRUE(confined.has(std::string{refused} + "-DENIED:EPERM")) << refused << "\n"
                                                                          << confined;
        EXPECT_TRUE(control.has(std::string{refused} + "-OK")) << refused << "\n" << control;
    }
}

TEST_P(EitherIdentity, EveryOtherProcessOfTheSandboxIsFilteredOrClosedToTheTarget) {
    // A process of the sandbox outside the target's filter whose memory the target can write
    // (/proc/PID/mem needs no ptrace) would hand back the whole kernel surface: bwrap's own init,
    // the holder. Each other process must carry the filter or refuse the open. The probe's own
    // child is the control: a process of the same identity whose memory opens.
    const auto probe = python(process_survey_probe);
    // The call as it comes, and one whose environment holds an entry bwrap cannot set (a name
    // without '='), which keeps the helper in front of the target.
    auto odd_env = base_env();
    odd_env.emplace_back("TEA-NO-EQUALS-SIGN");
    for (const auto &call :
         {Call{.command = probe}, Call{.command = probe, .exact_env = odd_env}}) {
        const auto r = run(call);
        EXPECT_EQ(r.status, 0) << r;
        EXPECT_TRUE(r.has("CHILD-MEM-OK")) << r;
        int others = 0;
        for (int pid = 1; pid < 64; ++pid) {
            const auto name = "PID" + std::to_string(pid);
            if (const auto seccomp = r.value(name + "-SECCOMP")) {
                ++others;
                EXPECT_TRUE(*seccomp == "2" || r.has(name + "-MEM-DENIED:EACCES")) << name << "\n"
                                                                                   << r;
            }
        }
        EXPECT_GE(others, 1) << "the sandbox's pid 1 was seen" << r;
    }
}

TEST_P(EitherIdentity, NoCapabilitiesNoNewPrivsAndSeccomp) {
    const auto probe = python(R"PY(
status = dict(line.rstrip("\n").split(":\t", 1) for line in open("/proc/self/status") if ":\t" in line)
for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    print(key + ":" + status.get(key, "?"))
print("UID:%d" % os.getuid())
print("EUID:%d" % os.geteuid())
)PY");
    const auto [confined, control] = run_both({.command = probe});
    const std::string none = "0000000000000000";
    for (const char *key : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
        EXPECT_EQ(confined.value(key), none) << key << "\n" << confined;
    }
    EXPECT_EQ(confined.value("NoNewPrivs"), "1") << confined;
    EXPECT_EQ(confined.value("Seccomp"), "2") << confined;
    // Root's call runs the target as tea-sandbox (mapped to itself inside); anyone else's as
    // themselves.
    EXPECT_EQ(confined.value("UID"), std::to_string(sandbox_uid())) << confined;
    EXPECT_EQ(confined.value("EUID"), std::to_string(sandbox_uid())) << confined;
    if (call_uid() == 0) {
        EXPECT_NE(sandbox_uid(), 0U);
    }

    EXPECT_EQ(control.value("Seccomp"), "0") << control;
    EXPECT_EQ(control.value("NoNewPrivs"), "0") << control;
    EXPECT_NE(control.value("CapBnd"), none) << control;
    EXPECT_EQ(control.value("UID"), std::to_string(call_uid())) << control;
    if (call_uid() == 0) {
        EXPECT_NE(control.value("CapEff"), none) << control;
    }
}

TEST_F(Confinement, KeysOfTheHostsSessionKeyringAreUnreachable) {
    // A key in the runtime's own session keyring, as a login's credentials would be.
    const std::string description = "tea-test-key-" + std::to_string(::getpid());
    const std::string payload = "session-secret";
    const long key = ::syscall(SYS_add_key, "user", description.c_str(), payload.data(),
                               payload.size(), KEY_SPEC_SESSION_KEYRING);
    ASSERT_GT(key, 0) << "add_key: " << std::strerror(errno);
    const auto probe = python(R"PY(
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def find():
    serial = libc.syscall(249, b"user", b")PY" +
                              description + R"PY(", None, 0)  # request_key
    if serial < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    buffer = ctypes.create_string_buffer(64)
    size = libc.syscall(250, 11, serial, buffer, 64)  # KEYCTL_READ
    if size < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return buffer.raw[:size].decode()
report("KEY", find)
)PY");
    const auto [confined, control] = run_both({.command = probe});
    (void)::syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
    // Refused twice over: the seccomp filter denies the keyring calls (EPERM), and the call's
    // session keyring is a fresh one that does not hold the key.
    EXPECT_TRUE(confined.has("KEY-DENIED:EPERM")) << confined;
    EXPECT_FALSE(confined.value("KEY-OK")) << confined;
    // The positive control: the same search, unconfined, finds the key and reads it.
    EXPECT_EQ(control.value("KEY-OK"), payload) << control;
}

TEST_F(Confinement, MountsAndNestedUserNamespacesAreRefused) {
    const std::string code = R"PY(
import subprocess
report("UMOUNT", lambda: zero(libc.umount2(sys.argv[1].encode(), 0)))
report("MOUNT", lambda: zero(libc.mount(b"x", b"/tmp", b"tmpfs", 0, None)))
print("UNSHARE-CMD:%d" % subprocess.run(["unshare", "-U", "true"], stderr=subprocess.DEVNULL).returncode, flush=True)
report("UNSHARE-USER", lambda: zero(libc.unshare(0x10000000)))
)PY";
    const auto probe = python(code, {withheld().string()});
    const auto confined = run({.command = probe, .withhold = {withheld().string()}});
    EXPECT_TRUE(confined.has("MOUNT-DENIED:EPERM")) << confined;
    EXPECT_TRUE(confined.has("UMOUNT-DENIED:EPERM")) << confined;
    EXPECT_NE(confined.value("UNSHARE-CMD"), "0") << confined;
    EXPECT_TRUE(confined.has("UNSHARE-USER-DENIED:EPERM")) << confined;

    // The control runs in user and mount namespaces of its own (so nothing
    // reaches the host's mounts), with the folder covered as the sandbox covers it.
    std::vector<std::string> control_argv{"/usr/bin/unshare",
                                          "--map-root-user",
                                          "--mount",
                                          "--propagation",
                                          "private",
                                          "/bin/sh",
                                          "-c",
                                          "mount -t tmpfs cover \"$1\" && shift && exec \"$@\"",
                                          "sh",
                                          withheld().string()};
    control_argv.insert(control_argv.end(), probe.begin(), probe.end());
    const auto control = run({.backend = Backend::opt_out, .command = control_argv});
    EXPECT_TRUE(control.has("MOUNT-OK")) << control;
    EXPECT_TRUE(control.has("UMOUNT-OK")) << control;
    EXPECT_EQ(control.value("UNSHARE-CMD"), "0") << control;
    EXPECT_TRUE(control.has("UNSHARE-USER-OK")) << control;
}

}  // namespace
}  // namespace tea::test::bwrap
