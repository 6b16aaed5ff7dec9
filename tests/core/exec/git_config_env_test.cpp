// exec/git_config_env: a setting added to git's configuration in a call's environment keeps the
// caller's own list whole; a list git would refuse is refused naming the variable. The real git
// reading the result inside a confined call is tests/cli/target_git_test.cpp.
#include "exec/git_config_env.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "exec/environment.hpp"

namespace tea::exec {
namespace {

std::string value_of(const std::vector<std::string> &env, const std::string &name) {
    std::string value;
    return find_variable(env, name, &value) == nullptr ? "<unset>" : value;
}

// The message of the refusal of `env`, or "" when it is accepted.
std::string refusal(std::vector<std::string> env) {
    try {
        add_git_config(env, "safe.directory", "*");
    } catch (const std::invalid_argument &e) {
        return e.what();
    }
    return "";
}

TEST(GitConfigEnv, WithoutAListItStartsOne) {
    std::vector<std::string> env{"PATH=/bin"};
    add_git_config(env, "safe.directory", "*");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_COUNT"), "1");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_KEY_0"), "safe.directory");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_VALUE_0"), "*");
    EXPECT_EQ(value_of(env, "PATH"), "/bin");
}

TEST(GitConfigEnv, TheCallersEntriesStayAndTheSettingComesLast) {
    std::vector<std::string> env{"GIT_CONFIG_COUNT=2",        "GIT_CONFIG_KEY_0=user.name",
                                 "GIT_CONFIG_VALUE_0=Caller", "GIT_CONFIG_KEY_1=safe.directory",
                                 "GIT_CONFIG_VALUE_1=",       "GIT_CONFIG_KEY_2=stale.key"};
    add_git_config(env, "safe.directory", "*");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_COUNT"), "3");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_KEY_0"), "user.name");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_VALUE_0"), "Caller");
    // The caller's reset of the list comes first, so the grant added after it still counts.
    EXPECT_EQ(value_of(env, "GIT_CONFIG_KEY_1"), "safe.directory");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_VALUE_1"), "");
    // An entry beyond the caller's count, which git never read, is the one numbered over.
    EXPECT_EQ(value_of(env, "GIT_CONFIG_KEY_2"), "safe.directory");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_VALUE_2"), "*");
}

TEST(GitConfigEnv, AnEmptyListOfTheCallersIsNumberedFromZero) {
    std::vector<std::string> env{"GIT_CONFIG_COUNT=0"};
    add_git_config(env, "safe.directory", "*");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_COUNT"), "1");
    EXPECT_EQ(value_of(env, "GIT_CONFIG_KEY_0"), "safe.directory");
}

TEST(GitConfigEnv, ACountThatIsNoPlainNumberIsRefusedNamingIt) {
    for (const std::string count : {"", " 1", "+1", "-1", "1x", "0x1", "1000000000"}) {
        const auto why = refusal({"GIT_CONFIG_COUNT=" + count});
        EXPECT_NE(why.find("GIT_CONFIG_COUNT=" + count + ":"), std::string::npos)
            << "'" << count << "': " << why;
    }
}

TEST(GitConfigEnv, AnAnnouncedKeyOrValueThatIsMissingIsRefusedNamingIt) {
    EXPECT_NE(refusal({"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"})
                  .find("GIT_CONFIG_KEY_1 is not set"),
              std::string::npos);
    EXPECT_NE(refusal({"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b"})
                  .find("GIT_CONFIG_VALUE_0 is not set"),
              std::string::npos);
    // Control: the same list, whole, is accepted.
    EXPECT_EQ(refusal({"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"}), "");
}

}  // namespace
}  // namespace tea::exec
