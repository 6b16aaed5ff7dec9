// What the observer could not place, followed on the host (audit/host_resolution.hpp), on trees
// made here: a view of the call's own directories leading down to its home, links planted in it.
#include "audit/host_resolution.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tea::audit {
namespace {

namespace fs = std::filesystem;

class HostResolution : public ::testing::Test {
   protected:
    void SetUp() override {
        std::string dir = (fs::temp_directory_path() / "tea-host-resolution-XXXXXX").string();
        ASSERT_NE(::mkdtemp(dir.data()), nullptr);
        top_ = dir;
        // The private root holds the call's home; a secret lies outside both.
        home_ = top_ / "private" / "run-1" / "home";
        fs::create_directories(home_ / "made");
        fs::create_directories(top_ / "secret");
        fs::create_directories(home_ / "plain");
        for (const auto &file : {top_ / "secret" / "key", home_ / "plain" / "key"}) {
            std::ofstream{file} << "x\n";
        }
        view_.shared_writable = {home_.string()};
        view_.view_only = {(top_ / "private").string()};
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(top_, ec);
    }

    // An open whose descriptor the observer could not vouch for, naming `named`.
    ObservedAccess raced_open(const std::string &named) const {
        ObservedAccess e;
        e.syscall = "openat";
        e.path_asked = named;
        e.path_resolved = (home_ / "decoy").string();
        e.access = Access::read;
        e.success = true;
        e.path_named = named;
        return e;
    }

    fs::path top_, home_;
    HostView view_;
};

// A link found in the home leads the name where the kernel would have: out of the home. The
// directories of the private root on the way to the home are the view's own, not writable by the
// call, and name what the host's do.
TEST_F(HostResolution, ALinkInTheHomeBeneathThePrivateRootIsFollowed) {
    fs::create_directory_symlink(top_ / "secret", home_ / "lnk");
    Observation o;
    o.events.push_back(raced_open((home_ / "lnk" / "key").string()));
    // The control: a name with no link in it stays as it is.
    o.events.push_back(raced_open((home_ / "plain" / "key").string()));
    resolve_named_on_host(o, view_);
    EXPECT_EQ(o.events[0].unverified, "");
    EXPECT_EQ(o.events[0].path_named, (top_ / "secret" / "key").string());
    EXPECT_EQ(o.events[1].unverified, "");
    EXPECT_EQ(o.events[1].path_named, (home_ / "plain" / "key").string());
}

// A directory the call made in its home cannot vouch for what a name through it reached then.
TEST_F(HostResolution, ANameThroughADirectoryTheCallMadeIsUnverified) {
    Observation o;
    ObservedAccess made;
    made.syscall = "mkdir";
    made.path_asked = (home_ / "made").string();
    made.access = Access::create;
    made.success = true;
    o.events.push_back(made);
    o.events.push_back(raced_open((home_ / "made" / "key").string()));
    resolve_named_on_host(o, view_);
    EXPECT_NE(o.events[1].unverified.find("renamed, removed or made"), std::string::npos)
        << o.events[1].unverified;
}

}  // namespace
}  // namespace tea::audit
