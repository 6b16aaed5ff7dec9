// The target's environment is the invoker's, byte for byte, except for what
// the sandbox itself decides: the working directory, the home, the temp
// directory, and a coverage dump that would write outside.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_nul(const std::string &bytes) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < bytes.size()) {
        const auto end = bytes.find('\0', start);
        const auto stop = end == std::string::npos ? bytes.size() : end;
        out.push_back(bytes.substr(start, stop - start));
        start = stop + 1;
    }
    return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

void set(std::vector<std::string> &env, const std::string &name, const std::string &value) {
    std::erase_if(env, [&](const std::string &e) { return e.rfind(name + "=", 0) == 0; });
    if (!value.empty()) {
        env.push_back(name + "=" + value);
    }
}

TEST_F(Confinement, EnvironmentEntriesWithoutANameReachTheTargetAsGiven) {
    // execve takes any string as an environment entry; bwrap's --setenv takes only a name and a
    // value, so such an entry must not be rewritten (or make bwrap fail) on its way. (The
    // opt-out backend's plan is refused for it, so there is no unconfined run to compare.)
    std::vector<std::string> env = base_env();
    env.emplace_back("LONE");
    env.emplace_back("=nameless");
    const auto confined = run({.command = {"/usr/bin/env", "-0"}, .exact_env = env});
    ASSERT_EQ(confined.status, 0) << confined;
    const auto seen = split_nul(confined.out);
    for (const std::string entry : {"LONE", "=nameless"}) {
        EXPECT_NE(std::find(seen.begin(), seen.end(), entry), seen.end()) << entry << "\n"
                                                                          << confined;
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), std::string{"LONE=LONE"}), 0) << confined;
}

TEST_P(EitherIdentity, EnvironmentIsExactlyTheInvokersWithTheSandboxsOwnPaths) {
    // Names and values a shell would rewrite or refuse, and bytes that are not UTF-8.
    std::vector<std::string> env = base_env();
    for (const std::string &e :
         {std::string{"BASH_FUNC_f%%=() { echo hi; }"}, std::string{"my.setting=1"},
          std::string{"PS1=$ "}, std::string{"OLDPWD=/x"}, std::string{"SHLVL=7"},
          std::string{"_=/y"}, std::string{"IFS= "}, std::string{"OPTIND=3"},
          std::string{"PPID=99"}, std::string{"MULTI=line one\nline two"},
          std::string{"RAW=\xff\xfe\x80z"}, std::string{"EMPTY="},
          std::string{"NODE_V8_COVERAGE=/tmp/tea-bwt-coverage"}, std::string{"TMPDIR=/var/tmp"},
          std::string{"PWD=/somewhere-else"}}) {
        env.push_back(e);
    }
    const Call call{.command = {"/usr/bin/env", "-0"}, .exact_env = env};
    const auto [confined, control] = run_both(call);
    ASSERT_EQ(confined.status, 0) << confined;
    ASSERT_EQ(control.status, 0) << control;

    // Unconfined, the target sees the invoker's environment as it was given.
    EXPECT_EQ(sorted(split_nul(control.out)), sorted(env));

    const auto seen = split_nul(confined.out);
    std::string home;
    for (const auto &e : seen) {
        if (e.rfind("HOME=", 0) == 0) {
            home = e.substr(5);
        }
    }
    ASSERT_FALSE(home.empty()) << confined;
    // The trial's home: <private root>/run-<random>/tea-evaluate-target-home-<random>.
    EXPECT_EQ(fs::path{home}.parent_path().parent_path(), private_root()) << home;
    EXPECT_EQ(fs::path{home}.filename().string().rfind("tea-evaluate-target-home-", 0), 0U) << home;

    auto expected = env;
    set(expected, "NODE_V8_COVERAGE", "");
    set(expected, "PWD", workspace().string());
    set(expected, "HOME", home);
    set(expected, "XDG_CONFIG_HOME", home + "/.config");
    set(expected, "XDG_CACHE_HOME", home + "/.cache");
    set(expected, "XDG_DATA_HOME", home + "/.local/share");
    for (const char *name : {"TMPDIR", "TMP", "TEMP"}) {
        set(expected, name, "/dev/tea-evaluate-tmp");
    }
    EXPECT_EQ(sorted(seen), sorted(expected));
}

}  // namespace
}  // namespace tea::test::bwrap
