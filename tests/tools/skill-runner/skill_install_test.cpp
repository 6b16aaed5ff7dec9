// Installing a skill in the agent's home (tools/skill-runner/skill_install.cpp).
#include "skill_install.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::skill_runner {
namespace {

namespace fs = std::filesystem;

class SkillInstall : public ::testing::Test {
   protected:
    void SetUp() override {
        fs::create_directories(skill_ / "scripts");
        fs::create_directories(home_);
        test::write_file((skill_ / "SKILL.md").string(), "---\nname: notes\n---\nWrite notes.\n");
        test::write_file((skill_ / "scripts/run.sh").string(), "#!/bin/sh\necho run\n");
        fs::permissions(skill_ / "scripts/run.sh", fs::perms::owner_exec, fs::perm_options::add);
    }
    // The message of the refusal, and that nothing was installed.
    std::string refusal(const SkillLimits &limits = {}) {
        try {
            install_skill(skill_, home_, ".claude/skills", limits);
        } catch (const Error &error) {
            EXPECT_EQ(error.code(), ExitCode::usage);
            EXPECT_FALSE(fs::exists(home_ / ".claude/skills/notes"));
            return error.what();
        }
        ADD_FAILURE() << "the skill was installed";
        return {};
    }

    test::TempDir dir_{"tea-skill-install"};
    fs::path skill_ = dir_ / "notes";
    fs::path home_ = dir_ / "home";
};

TEST_F(SkillInstall, TheFolderIsCopiedWhereTheCliLooksWithItsModes) {
    EXPECT_EQ(install_skill(skill_, home_, ".claude/skills"), "notes");
    const auto installed = home_ / ".claude/skills/notes";
    EXPECT_EQ(test::read_file((installed / "SKILL.md").string()),
              "---\nname: notes\n---\nWrite notes.\n");
    EXPECT_NE(fs::status(installed / "scripts/run.sh").permissions() & fs::perms::owner_exec,
              fs::perms::none);
    // A second install replaces the first, leaving nothing of it and no staging folder.
    test::write_file((installed / "left-by-the-agent").string(), "x");
    install_skill(skill_.string() + "/", home_, ".claude/skills");
    EXPECT_FALSE(fs::exists(installed / "left-by-the-agent"));
    EXPECT_EQ(
        std::distance(fs::directory_iterator{home_ / ".claude/skills"}, fs::directory_iterator{}),
        1);
}

TEST_F(SkillInstall, ALinkAnywhereInTheSkillIsRefusedNamingIt) {
    test::write_file((dir_ / "grading.txt").string(), "secret");
    fs::create_symlink(dir_ / "grading.txt", skill_ / "scripts/answers.txt");
    const auto why = refusal();
    EXPECT_NE(why.find("scripts/answers.txt"), std::string::npos) << why;
    EXPECT_NE(why.find("a link"), std::string::npos) << why;
}

TEST_F(SkillInstall, ALinkedSkillFolderIsRefused) {
    fs::create_directory_symlink(skill_, dir_ / "linked");
    EXPECT_THROW(install_skill(dir_ / "linked", home_, ".claude/skills"), Error);
}

TEST_F(SkillInstall, ASpecialFileIsRefused) {
    ASSERT_EQ(::mkfifo((skill_ / "pipe").c_str(), 0644), 0);
    const auto why = refusal();
    EXPECT_NE(why.find("pipe"), std::string::npos) << why;
}

TEST_F(SkillInstall, SizeCountAndDepthAreCapped) {
    SkillLimits limits;
    limits.max_file_bytes = 20;
    EXPECT_NE(refusal(limits).find("SKILL.md"), std::string::npos);
    limits = {};
    limits.max_total_bytes = 40;
    EXPECT_NE(refusal(limits).find("larger than 40"), std::string::npos);
    limits = {};
    limits.max_entries = 2;
    EXPECT_NE(refusal(limits).find("not read whole"), std::string::npos);
    limits = {};
    limits.max_depth = 0;
    EXPECT_NE(refusal(limits).find("not read whole"), std::string::npos);
}

TEST_F(SkillInstall, AFolderWithoutSkillMdOrWithABadNameIsRefused) {
    fs::remove(skill_ / "SKILL.md");
    EXPECT_NE(refusal().find("holds no SKILL.md"), std::string::npos);
    const auto badly_named = dir_ / "my skill";
    fs::create_directory(badly_named);
    test::write_file((badly_named / "SKILL.md").string(), "x");
    EXPECT_THROW(install_skill(badly_named, home_, ".claude/skills"), Error);
    EXPECT_TRUE(files::valid_skill_name("pdf-tools_2"));
    EXPECT_FALSE(files::valid_skill_name("-x"));
    EXPECT_FALSE(files::valid_skill_name(".."));
    EXPECT_FALSE(files::valid_skill_name(std::string(65, 'a')));
}

TEST_F(SkillInstall, ALinkInTheHomeOnTheWayIsNotFollowed) {
    // The home is the agent's, written by its earlier calls: a link it left where the skills go
    // must not send the copy elsewhere.
    fs::create_directories(dir_ / "elsewhere");
    fs::create_directory_symlink(dir_ / "elsewhere", home_ / ".claude");
    EXPECT_THROW(install_skill(skill_, home_, ".claude/skills"), Error);
    EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
}

}  // namespace
}  // namespace tea::skill_runner
