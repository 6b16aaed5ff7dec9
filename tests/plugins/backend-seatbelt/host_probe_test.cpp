// The Seatbelt backend's host check, on Linux against stand-ins for sandbox-exec: a runtime
// already inside a Seatbelt sandbox is refused with the way out, a working sandbox-exec passes
// (the positive control), and a missing or failing one is refused with what it said.
#include "host_probe.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <tea/plugin.hpp>

namespace tea::seatbelt {
namespace {

class HostProbe : public ::testing::Test {
   protected:
    void SetUp() override {
        char dir[] = "/tmp/tea-seatbelt-probe-XXXXXX";
        ASSERT_NE(::mkdtemp(dir), nullptr);
        dir_ = dir;
    }
    void TearDown() override {
        ::unlink(program().c_str());
        ::rmdir(dir_.c_str());
    }
    [[nodiscard]] std::string program() const { return dir_ + "/sandbox-exec"; }
    void stand_in(const std::string &body) const {
        std::ofstream{program()} << "#!/bin/sh\n" << body;
        ::chmod(program().c_str(), 0755);
    }
    // What the check refused with, or "" when it passed.
    [[nodiscard]] std::string refusal() const {
        try {
            check_sandbox_exec(program(), "/bin/true");
        } catch (const tea::sdk::Unavailable &e) {
            return e.what();
        }
        return {};
    }

    std::string dir_;
};

TEST_F(HostProbe, AWorkingSandboxExecPasses) {
    // The trivial profile and the program it runs, as sandbox-exec is handed them.
    stand_in(
        "[ \"$1\" = -p ] && [ \"$2\" = '(version 1)(allow default)' ] || exit 64\n"
        "shift 2; exec \"$@\"\n");
    EXPECT_EQ(refusal(), "");
}

TEST_F(HostProbe, ARuntimeInsideASandboxIsRefusedWithTheWayOut) {
    stand_in("echo 'sandbox-exec: sandbox_apply: Operation not permitted' >&2; exit 71\n");
    const auto why = refusal();
    EXPECT_NE(why.find("runs inside a Seatbelt sandbox"), std::string::npos) << why;
    EXPECT_NE(why.find("unsandboxed terminal"), std::string::npos) << why;
    EXPECT_NE(why.find("\"confinement\": false"), std::string::npos) << why;
}

TEST_F(HostProbe, AMissingOrFailingSandboxExecIsRefusedWithWhatItSaid) {
    EXPECT_NE(refusal().find(program() + " is missing or not executable"), std::string::npos);
    stand_in("echo 'sandbox-exec: invalid profile' >&2; exit 65\n");
    const auto why = refusal();
    EXPECT_NE(why.find("could not confine a trivial process (sandbox-exec: invalid profile)"),
              std::string::npos)
        << why;
}

}  // namespace
}  // namespace tea::seatbelt
