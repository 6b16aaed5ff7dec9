// The helper loads a BPF program compiled at build time: it must be exactly
// what libseccomp makes of the confinement's rules here and now, so a stale or
// mistranslated program cannot stand in for the filter docs/confinement.md lists.
#include "seccomp_program.hpp"

#include <gtest/gtest.h>

#include <string>

#include "seccomp_rules.hpp"

namespace {

std::string libseccomp_program() {
    int error = 0;
    auto bpf = tea::helper::compile_confinement_program(&error);
    EXPECT_EQ(error, 0);
    return bpf;
}

TEST(SeccompProgram, EqualsWhatLibseccompCompilesFromTheRules) {
    const auto expected = libseccomp_program();
    ASSERT_FALSE(expected.empty());
    const std::string embedded(reinterpret_cast<const char *>(  // NOLINT: the kernel's layout
                                   tea::helper::generated::seccomp_program),
                               sizeof tea::helper::generated::seccomp_program);
    EXPECT_EQ(embedded.size(), expected.size());
    EXPECT_TRUE(embedded == expected) << "the embedded seccomp program is stale: rebuild";
}

TEST(SeccompProgram, IsForThisArchitecture) {
    EXPECT_EQ(tea::helper::generated::seccomp_arch, seccomp_arch_native());
}

}  // namespace
