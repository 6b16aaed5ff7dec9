// The host's temp directories as a target's view has them (src/private_temp.hpp): which are
// replaced, what the view then lacks, and every path at which it still shows a host file. A real
// directory tree stands for the host's, with links where the decisions depend on them.
#include "private_temp.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace tea::bwrap {
namespace {

namespace stdfs = std::filesystem;

class PrivateTempTest : public ::testing::Test {
   protected:
    void SetUp() override {
        stdfs::create_directories(path("tmp/ws"));
        stdfs::create_directories(path("real-tools"));
        stdfs::create_directory_symlink(path("tmp"), path("link-to-tmp"));
        stdfs::create_directory_symlink(path("real-tools"), path("tmp/tools"));
    }
    [[nodiscard]] std::string path(const std::string &rel) const {
        return (root_.path() / rel).string();
    }

    test::TempDir root_{"tea-private-temp"};
};

TEST_F(PrivateTempTest, ADirectoryIsReplacedAndALinkOrNothingIsNot) {
    const PrivateTemp view{{path("tmp"), path("link-to-tmp"), path("missing")}, {}};
    EXPECT_EQ(view.replaced(), std::vector<std::string>{path("tmp")});
}

TEST_F(PrivateTempTest, ATempDirectoryInsideAShownPlaceStaysTheHosts) {
    const PrivateTemp view{{path("tmp")}, {root_.path().string()}};
    EXPECT_TRUE(view.replaced().empty());
    EXPECT_FALSE(view.hides(path("tmp/anything")));
    // Control: shown only beneath it, it is replaced.
    const PrivateTemp beneath{{path("tmp")}, {path("tmp/ws")}};
    EXPECT_EQ(beneath.replaced(), std::vector<std::string>{path("tmp")});
}

TEST_F(PrivateTempTest, WhatLiesOutsideTheShownPlacesIsHidden) {
    const PrivateTemp view{{path("tmp")}, {path("tmp/ws")}};
    EXPECT_TRUE(view.hides(path("tmp/another-users-file")));
    EXPECT_TRUE(view.hides(path("tmp")));
    EXPECT_TRUE(view.hides(path("tmp/ws2/x"))) << "whole components only";
    EXPECT_FALSE(view.hides(path("tmp/ws/x")));
    EXPECT_FALSE(view.hides(path("real-tools/x"))) << "outside the replaced directory";
    EXPECT_TRUE(view.in_replaced(path("tmp/ws/x")));
    EXPECT_FALSE(view.in_replaced(path("real-tools")));
}

TEST_F(PrivateTempTest, AShownPlaceThatIsALinkShowsWhatItLeadsToAtItsOwnPathToo) {
    const PrivateTemp view{{path("tmp")}, {path("tmp/ws"), path("tmp/tools")}};
    const auto canonical = stdfs::canonical(path("real-tools")).string();
    EXPECT_EQ(view.view_paths(canonical + "/agent.sock"),
              (std::vector<std::string>{canonical + "/agent.sock", path("tmp/tools/agent.sock")}));
    // A file of the workspace is shown at its own path alone; one beside it, nowhere.
    EXPECT_EQ(view.view_paths(path("tmp/ws/s.sock")),
              std::vector<std::string>{path("tmp/ws/s.sock")});
    EXPECT_TRUE(view.view_paths(path("tmp/other/s.sock")).empty());
    // Control: without the link's grant, what it leads to is shown only where it lies.
    const PrivateTemp unlinked{{path("tmp")}, {path("tmp/ws")}};
    EXPECT_EQ(unlinked.view_paths(canonical + "/agent.sock"),
              std::vector<std::string>{canonical + "/agent.sock"});
}

}  // namespace
}  // namespace tea::bwrap
