// tea-seccomp-observer-gen OUTPUT: compiles the seccomp observer's filter with libseccomp for the
// architecture it runs on and writes it as a C++ header the supervisor embeds. Run at build time:
// libseccomp is a build dependency only, never a run-time one.
//
// The filter: every call that names or opens a file, every exec and exit_group go to the
// supervisor (user notification); io_uring_setup and every other ABI (i386, x32) answer ENOSYS;
// everything else runs.
#include <linux/filter.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace {

// The calls the supervisor serves (filter_calls.hpp decodes them by the same names).
constexpr std::array kNotified{"open", "openat", "openat2", "creat", "open_by_handle_at", "execve",
                               "execveat", "exit_group", "getdents", "getdents64", "readlink",
                               "readlinkat", "mkdir", "mkdirat", "mknod", "mknodat", "unlink",
                               "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link",
                               "linkat", "symlink", "symlinkat", "truncate",
                               // Calls that change a process's root or mount namespace: the
                               // supervisor stops reusing the roots it opened.
                               "chroot", "pivot_root", "setns", "unshare"};

int fail(const std::string &what, int error) {
    std::cerr << "tea-seccomp-observer-gen: " << what << ": "
              << std::strerror(error)  // NOLINT(concurrency-mt-unsafe): single-threaded
              << '\n';
    return 1;
}

std::string hex(unsigned long value) {
    std::array<char, 16> text{};
    const auto result = std::to_chars(text.data(), text.data() + text.size(), value, 16);
    return "0x" + std::string(text.data(), result.ptr);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: tea-seccomp-observer-gen OUTPUT\n";
        return 2;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) {
        return fail("seccomp_init", ENOMEM);
    }
    // A call through another ABI (int 0x80, the x32 bit) would reach files without a number this
    // filter decodes: it answers ENOSYS instead.
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
    // The filter is installed with no_new_privs set by the supervisor's child itself.
    if (rc == 0) {
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    }
    for (const char *name : kNotified) {
        if (rc != 0) {
            break;
        }
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            return fail(std::string{"unknown system call "} + name, EINVAL);
        }
        rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
    }
    // io_uring's operations open files with no system call the filter sees.
    if (rc == 0) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
                              seccomp_syscall_resolve_name("io_uring_setup"), 0);
    }
    if (rc != 0) {
        seccomp_release(ctx);
        return fail("building the filter", -rc);
    }
    const int mem = ::memfd_create("tea-seccomp-observer-filter", MFD_CLOEXEC);
    if (mem < 0 || seccomp_export_bpf(ctx, mem) != 0) {
        seccomp_release(ctx);
        return fail("exporting the filter", errno);
    }
    seccomp_release(ctx);
    std::string bpf;
    std::array<char, 4096> buf{};
    ssize_t n = 0;
    (void)::lseek(mem, 0, SEEK_SET);
    while ((n = ::read(mem, buf.data(), buf.size())) > 0) {
        bpf.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(mem);
    constexpr std::size_t kInstruction = 8;
    if (bpf.empty() || bpf.size() % kInstruction != 0) {
        return fail("the exported filter is not a BPF program", EINVAL);
    }
    std::string out =
        "// Generated at build time by tea-seccomp-observer-gen (src/filter_gen.cpp) with\n"
        "// libseccomp, for the architecture of the build: do not edit.\n"
        "#pragma once\n\n#include <linux/filter.h>\n\n"
        "namespace tea::seccomp_observer::generated {\n\n"
        "inline constexpr sock_filter observer_program[] = {\n";
    for (std::size_t at = 0; at < bpf.size(); at += kInstruction) {
        sock_filter insn{};
        std::memcpy(&insn, bpf.data() + at, kInstruction);
        out += "    {" + hex(insn.code) + ", " + std::to_string(insn.jt) + ", " +
               std::to_string(insn.jf) + ", " + hex(insn.k) + "U},\n";
    }
    out += "};\n\n}  // namespace tea::seccomp_observer::generated\n";
    std::ofstream file{argv[1], std::ios::binary | std::ios::trunc};
    file << out;
    file.close();
    if (!file) {
        return fail(std::string{"cannot write "} + argv[1], errno);
    }
    return 0;
}
