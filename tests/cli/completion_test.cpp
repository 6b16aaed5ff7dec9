// completions/tea-evaluate.bash in bash, with bash-completion's own functions loaded as an
// interactive shell has them: what TAB offers after a partial command line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

// What the completion offers for `words` (the last one is the word being completed), sorted.
std::vector<std::string> complete(const std::vector<std::string> &words) {
    std::string script =
        "source /usr/share/bash-completion/bash_completion || exit 90\n"
        "source \"$1\" || exit 91\n"
        "shift\n"
        "COMP_WORDS=(\"$@\")\n"
        "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        // As bash writes the line: words apart, but no space around a "=" that split one.
        "COMP_LINE=\"\" last=\"\"\n"
        "for w in \"${COMP_WORDS[@]}\"; do\n"
        "  if [ -z \"$COMP_LINE\" ] || [ \"$w\" = = ] || [ \"$last\" = = ]; then\n"
        "    COMP_LINE+=\"$w\"; else COMP_LINE+=\" $w\"; fi\n"
        "  last=$w\n"
        "done\n"
        "COMP_POINT=${#COMP_LINE}\n"
        "_tea_evaluate\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    std::vector<std::string> argv{"bash",
                                  "--norc",
                                  "--noprofile",
                                  "-c",
                                  script,
                                  "bash",
                                  std::string{TEA_SOURCE_DIR} + "/completions/tea-evaluate.bash",
                                  TEA_EVALUATE_BIN};
    argv.insert(argv.end(), words.begin(), words.end());
    const auto o = test::run(argv, test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                                           "HOME=/nonexistent-tea-test"}));
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.err, "");
    std::vector<std::string> offered;
    std::istringstream lines{o.out};
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty()) {
            offered.push_back(line);
        }
    }
    std::sort(offered.begin(), offered.end());
    return offered;
}

bool offers(const std::vector<std::string> &offered, const std::string &word) {
    return std::find(offered.begin(), offered.end(), word) != offered.end();
}

TEST(Completion, ASubcommandFromItsFirstLetters) {
    EXPECT_EQ(complete({"sc"}), std::vector<std::string>{"score"});
    EXPECT_EQ(complete({"--json", "r"}), (std::vector<std::string>{"report", "run"}));
    EXPECT_EQ(complete({"help", "q"}), std::vector<std::string>{"qualify"});
    // help takes one topic: nothing is offered after it.
    EXPECT_EQ(complete({"help", "run", ""}), std::vector<std::string>{});
    // After --config, its file is the value and not the subcommand.
    EXPECT_EQ(complete({"--config", "/etc/hostname", "pl"}), std::vector<std::string>{"plugins"});
    EXPECT_EQ(complete({"nosuch"}), std::vector<std::string>{});
}

TEST(Completion, ASubcommandsOptionsAndTheCommonOnes) {
    const auto run = complete({"run", "--"});
    for (const std::string option :
         {"--config", "--backend", "--observer", "--json", "--verbose", "--quiet", "--help"}) {
        EXPECT_TRUE(offers(run, option)) << option;
    }
    EXPECT_FALSE(offers(run, "--workspace"));  // exec's, not run's
    EXPECT_EQ(complete({"--backend", "opt-out", "exec", "--w"}),
              (std::vector<std::string>{"--withhold", "--workspace"}));
    EXPECT_EQ(complete({"qualify", "--j"}), (std::vector<std::string>{"--jobs", "--json"}));
    // --arm is qualify's internal option: --help does not list it, nor does the completion.
    EXPECT_EQ(complete({"qualify", "--a"}), std::vector<std::string>{});
}

TEST(Completion, PluginNamesFromThePluginsListing) {
    const auto backends = complete({"--backend", ""});
    EXPECT_TRUE(offers(backends, "auto"));
    EXPECT_TRUE(offers(backends, "opt-out"));
    EXPECT_FALSE(offers(backends, "none"));  // the observer's word, not a backend
    const auto observers = complete({"exec", "--observer", ""});
    EXPECT_TRUE(offers(observers, "auto"));
    EXPECT_TRUE(offers(observers, "none"));
    EXPECT_FALSE(offers(observers, "opt-out"));
}

TEST(Completion, FoldersForTheEvaluationAndFilesForTheConfiguration) {
    const test::TempDir dir{"tea-completion"};
    std::filesystem::create_directory(dir.path() / "evaluation");
    test::write_file((dir.path() / "extra.toml").string(), "");
    const auto prefix = dir.path().string() + "/";
    EXPECT_EQ(complete({"run", prefix}), std::vector<std::string>{prefix + "evaluation"});
    EXPECT_EQ(complete({"score", prefix + "e"}), std::vector<std::string>{prefix + "evaluation"});
    EXPECT_EQ(complete({"--config", prefix + "ex"}),
              std::vector<std::string>{prefix + "extra.toml"});
    // The same value after "--config=", as bash splits it at '=' (COMP_WORDBREAKS).
    EXPECT_EQ(complete({"--config", "=", prefix + "ex"}),
              std::vector<std::string>{prefix + "extra.toml"});
    EXPECT_EQ(complete({"exec", "--workspace", prefix}),
              std::vector<std::string>{prefix + "evaluation"});
}

}  // namespace
}  // namespace tea
