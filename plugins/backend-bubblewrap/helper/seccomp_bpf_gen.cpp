// tea-seccomp-bpf-gen OUTPUT: compiles the confinement's seccomp rules
// (seccomp_rules.cpp) with libseccomp for the architecture it runs on, and
// writes the BPF program as a C++ header the helper embeds. Run at build time,
// so the helper loads a finished program instead of compiling one on every call.
#include <linux/filter.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "seccomp_rules.hpp"

namespace {

int fail(const std::string &what, int error) {
    std::cerr << "tea-seccomp-bpf-gen: " << what << ": "
              << std::strerror(error)  // NOLINT(concurrency-mt-unsafe): single-threaded
              << '\n';
    return 1;
}

std::string hex(unsigned long value, std::size_t digits) {
    std::array<char, 16> text{};
    const auto result = std::to_chars(text.data(), text.data() + text.size(), value, 16);
    std::string out(text.data(), result.ptr);
    if (out.size() < digits) {
        out.insert(0, digits - out.size(), '0');
    }
    return "0x" + out;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: tea-seccomp-bpf-gen OUTPUT\n";
        return 2;
    }
    int error = 0;
    std::string failed_rule;
    const auto bpf = tea::helper::compile_confinement_program(&error, &failed_rule);
    if (error != 0) {
        return fail("cannot compile the filter" +
                        (failed_rule.empty() ? std::string{} : " (rule " + failed_rule + ")"),
                    -error);
    }
    const auto arch = seccomp_arch_native();
    constexpr std::size_t instruction_size = 8;  // struct sock_filter
    if (bpf.empty() || bpf.size() % instruction_size != 0) {
        return fail("the exported filter is not a BPF program", EINVAL);
    }
    const auto *version = seccomp_version();
    std::string out =
        "// Generated at build time by tea-seccomp-bpf-gen from helper/seccomp_rules.cpp with\n"
        "// libseccomp " +
        std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
        std::to_string(version->micro) +
        ", for the architecture of the build: do not edit.\n"
        "#pragma once\n\n"
        "#include <linux/filter.h>\n\n"
        "namespace tea::helper::generated {\n\n";
    out += "inline constexpr unsigned int seccomp_arch = " + hex(arch, 8) + "U;\n\n";
    out += "inline constexpr sock_filter seccomp_program[] = {\n";
    for (std::size_t at = 0; at < bpf.size(); at += instruction_size) {
        sock_filter insn{};
        std::memcpy(&insn, bpf.data() + at, instruction_size);
        out += "    {" + hex(insn.code, 4) + ", " + std::to_string(insn.jt) + ", " +
               std::to_string(insn.jf) + ", " + hex(insn.k, 8) + "U},\n";
    }
    out += "};\n\n}  // namespace tea::helper::generated\n";
    std::ofstream file{argv[1], std::ios::binary | std::ios::trunc};
    file << out;
    file.close();
    if (!file) {
        return fail(std::string{"cannot write "} + argv[1], errno);
    }
    return 0;
}
