// A probe's "conversation" (evaluation/conversation_probe.hpp): the brief read from the
// evaluation folder at load, and every bad field refused with its name.
#include "evaluation/conversation_probe.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ConversationProbeTest : public ::testing::Test {
   protected:
    void SetUp() override {
        fs::create_directories(folder_ / "briefs");
        put(agent_, "#!/bin/sh\necho '{}'\n");
        fs::permissions(agent_, fs::perms{0755});
        put(folder_ / "briefs/customer.md", "You want a refund for order 42.\n");
    }
    static void put(const fs::path &path, const std::string &content) {
        std::ofstream{path, std::ios::binary} << content;
    }
    // The conversation read against an entry whose maxElapsedMs is 60 s; the problems as
    // "field: message" lines.
    std::optional<ConversationProbe> read(const json &v) {
        problems_.clear();
        return read_conversation_probe(v, folder_, 60000,
                                       [&](const std::string &field, const std::string &message) {
                                           problems_.push_back(field + ": " + message);
                                       });
    }
    json valid() const {
        return {{"brief", "briefs/customer.md"},
                {"maxTurns", 3},
                {"turnTimeoutMs", 5000},
                {"agent",
                 {{"program", agent_.string()},
                  {"model", "claude-test"},
                  {"login", "claude"},
                  {"environmentKeys", {"ANTHROPIC_BASE_URL"}}}}};
    }
    ::testing::AssertionResult refused(const json &v, const std::string &field,
                                       const std::string &words) {
        if (read(v)) return ::testing::AssertionFailure() << "accepted " << v.dump();
        std::string all;
        for (const auto &p : problems_) {
            if (p.rfind(field + ": ", 0) == 0 && p.find(words) != std::string::npos) {
                return ::testing::AssertionSuccess();
            }
            all += p + "\n";
        }
        return ::testing::AssertionFailure()
               << "no '" << field << "' problem saying '" << words << "' among:\n"
               << all;
    }

    test::TempDir tmp_{"tea-conversation-probe"};
    fs::path folder_ = fs::canonical(tmp_.path()) / "eval";
    fs::path agent_ = fs::canonical(tmp_.path()) / "agent-cli";
    std::vector<std::string> problems_;
};

TEST_F(ConversationProbeTest, AValidConversationCarriesItsBriefAndAgent) {
    const auto c = read(valid());
    ASSERT_TRUE(c) << testing::PrintToString(problems_);
    EXPECT_EQ(c->brief_path, "briefs/customer.md");
    EXPECT_EQ(c->brief, "You want a refund for order 42.\n");
    EXPECT_EQ(c->max_turns, 3);
    EXPECT_EQ(c->turn_timeout_ms, 5000);
    EXPECT_EQ(c->agent.program, agent_.string());
    EXPECT_EQ(c->agent.model, "claude-test");
    EXPECT_EQ(c->agent.login, "claude") << "a login adapter, as a rubric judge's login is";
    EXPECT_EQ(c->agent.environment_keys, std::vector<std::string>{"ANTHROPIC_BASE_URL"});
}

TEST_F(ConversationProbeTest, DefaultsAreBoundedByTheEntry) {
    auto v = valid();
    v.erase("maxTurns");
    v.erase("turnTimeoutMs");
    const auto c = read(v);
    ASSERT_TRUE(c) << testing::PrintToString(problems_);
    EXPECT_EQ(c->max_turns, kDefaultConversationTurns);
    EXPECT_EQ(c->turn_timeout_ms, kDefaultTurnTimeoutMs);
}

TEST_F(ConversationProbeTest, AMissingBriefIsRefusedNamingTheFile) {
    auto v = valid();
    v["brief"] = "briefs/absent.md";
    EXPECT_TRUE(refused(v, "conversation.brief", "briefs/absent.md"));
    EXPECT_TRUE(refused(v, "conversation.brief", "cannot be opened"));
}

TEST_F(ConversationProbeTest, ALinkInTheBriefsPlaceIsRefused) {
    // The link's target is a file the folder holds: even so, a link is refused.
    fs::create_symlink("customer.md", folder_ / "briefs/link.md");
    auto v = valid();
    v["brief"] = "briefs/link.md";
    EXPECT_TRUE(refused(v, "conversation.brief", "symbolic link"));
}

TEST_F(ConversationProbeTest, ADirectoryLinkLeadingOutOfTheFolderIsRefused) {
    test::TempDir outside{"tea-conversation-outside"};
    put(outside.path() / "brief.md", "elsewhere\n");
    fs::create_directory_symlink(outside.path(), folder_ / "out");
    auto v = valid();
    v["brief"] = "out/brief.md";
    EXPECT_TRUE(refused(v, "conversation.brief", "outside the evaluation folder"));
    // Positive control: the same file, moved inside, is read.
    put(folder_ / "briefs/brief.md", "elsewhere\n");
    v["brief"] = "briefs/brief.md";
    EXPECT_TRUE(read(v)) << testing::PrintToString(problems_);
}

TEST_F(ConversationProbeTest, AHugeBriefIsRefused) {
    put(folder_ / "briefs/huge.md", std::string(kMaxBriefBytes + 1, 'x'));
    auto v = valid();
    v["brief"] = "briefs/huge.md";
    EXPECT_TRUE(refused(v, "conversation.brief", "grew over 64 KiB"));
    put(folder_ / "briefs/huge.md", std::string(kMaxBriefBytes, 'x'));
    EXPECT_TRUE(read(v)) << "the cap itself is allowed";
}

TEST_F(ConversationProbeTest, AFifoInTheBriefsPlaceIsRefusedWithoutBlocking) {
    ASSERT_EQ(::mkfifo((folder_ / "briefs/fifo.md").c_str(), 0600), 0);
    auto v = valid();
    v["brief"] = "briefs/fifo.md";
    EXPECT_TRUE(refused(v, "conversation.brief", "not a regular file"));
}

TEST_F(ConversationProbeTest, PathsThatClimbOrAreAbsoluteAreRefused) {
    for (const char *path : {"../brief.md", "/etc/passwd", "briefs/../briefs/customer.md", ""}) {
        auto v = valid();
        v["brief"] = path;
        EXPECT_TRUE(refused(v, "conversation.brief", "relative to the evaluation folder")) << path;
    }
}

TEST_F(ConversationProbeTest, BadFieldsAreRefusedByName) {
    auto v = valid();
    v["maxTurns"] = 0;
    EXPECT_TRUE(refused(v, "conversation.maxTurns", "from 1 to"));
    v = valid();
    v["maxTurns"] = "8";
    EXPECT_TRUE(refused(v, "conversation.maxTurns", "from 1 to"));
    v = valid();
    v["turnTimeoutMs"] = 600000;
    EXPECT_TRUE(refused(v, "conversation.turnTimeoutMs", "maxElapsedMs"));
    v = valid();
    v["turns"] = 3;
    EXPECT_TRUE(refused(v, "conversation.turns", "is unknown"));
    v = valid();
    v.erase("brief");
    EXPECT_TRUE(refused(v, "conversation.brief", "is required"));
    v = valid();
    v.erase("agent");
    EXPECT_TRUE(refused(v, "conversation.agent", "is required"));
    EXPECT_TRUE(refused(json::array(), "conversation", "must be an object"));
}

TEST_F(ConversationProbeTest, BadAgentFieldsAreRefusedByName) {
    auto v = valid();
    v["agent"]["program"] = "claude";
    EXPECT_TRUE(refused(v, "conversation.agent.program", "absolute path"));
    v["agent"]["program"] = (folder_ / "briefs/customer.md").string();
    EXPECT_TRUE(refused(v, "conversation.agent.program", "not executable"));
    v = valid();
    v["agent"].erase("login");
    const auto without = read(v);
    ASSERT_TRUE(without) << testing::PrintToString(problems_);
    EXPECT_FALSE(without->agent.login) << "no login: the agent gets no grant";
    // agent.login names a login adapter: a string that is a plugin's name, nothing else.
    for (const auto &bad : {json(42), json(nullptr), json(""), json("../claude"),
                            json("claude code"), json::array({"claude"})}) {
        v = valid();
        v["agent"]["login"] = bad;
        EXPECT_TRUE(refused(v, "conversation.agent.login", "must name a login adapter")) << bad;
    }
    v = valid();
    v["agent"]["agent"] = "codex";
    EXPECT_TRUE(refused(v, "conversation.agent.agent", "claude"));
    v = valid();
    v["agent"]["environmentKeys"] = {"BAD NAME"};
    EXPECT_TRUE(refused(v, "conversation.agent.environmentKeys", "variable names"));
    v["agent"]["environmentKeys"] = {{"NAME", "VALUE"}};
    EXPECT_TRUE(refused(v, "conversation.agent.environmentKeys", "variable names"));
    v = valid();
    v["agent"].erase("model");
    EXPECT_TRUE(refused(v, "conversation.agent.model", "is required"));
    v = valid();
    v["agent"]["tools"] = true;
    EXPECT_TRUE(refused(v, "conversation.agent.tools", "is unknown"));
}

}  // namespace
}  // namespace tea::evaluation
