// What run --executor slurm hands sbatch (cli/sbatch_command.hpp): a records path holding % reaches
// Slurm's file patterns escaped, so each task's output lands in the run's own folder, and the
// executor's options come after the user's.
#include "cli/sbatch_command.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tea::cli {
namespace {

const std::string kRun = "20261206T125956.026242Z-RKAOZV";

std::string option(const std::vector<std::string> &command, const std::string &name) {
    const auto found = std::find_if(command.begin(), command.end(), [&](const std::string &word) {
        return word.rfind(name + "=", 0) == 0;
    });
    return found == command.end() ? "" : found->substr(name.size() + 1);
}

TEST(SbatchCommand, APercentInTheRecordsPathIsEscapedInEveryFilePattern) {
    const std::string dir = "/shared/100%j/runs/%a %% x/" + kRun + "/slurm";
    const auto command = sbatch_array_command({}, kRun, dir, "1-4%2", "/work", 5);
    // Slurm reads %% as one %: the files it opens are under the records path as it is.
    EXPECT_EQ(option(command, "--output"),
              "/shared/100%%j/runs/%%a %%%% x/" + kRun + "/slurm/%a.out");
    EXPECT_EQ(option(command, "--error"),
              "/shared/100%%j/runs/%%a %%%% x/" + kRun + "/slurm/%a.err");
    // The script is a plain argument, never a pattern: its path as it is.
    EXPECT_EQ(command.back(), dir + "/task.sh");
    // Control: a path without % reaches the patterns unchanged.
    const auto plain = sbatch_array_command({}, kRun, "/shared/runs/x/slurm", "1-4%2", "/work", 5);
    EXPECT_EQ(option(plain, "--output"), "/shared/runs/x/slurm/%a.out");
    EXPECT_EQ(option(plain, "--array"), "1-4%2");
    EXPECT_EQ(option(plain, "--time"), "5");
}

TEST(SbatchCommand, TheUsersOptionsComeBeforeTheExecutorsOwn) {
    config::ExecutorSettings settings;
    settings.slurm_options = {"--qos=low", "--partition=theirs"};
    settings.slurm_partition = "p";
    settings.slurm_account = "a";
    const auto command = sbatch_array_command(settings, kRun, "/r/slurm", "3", "/work", 5);
    const std::vector<std::string> head(command.begin(), command.begin() + 5);
    EXPECT_EQ(head, (std::vector<std::string>{"sbatch", "--qos=low", "--partition=theirs",
                                              "--partition=p", "--account=a"}));
}

TEST(SbatchCommand, TheTaskScriptQuotesEveryWord) {
    const auto script =
        task_script(kRun, "/opt/tea evaluate", {"tea-evaluate", "--config", "it's $HOME", "run"});
    EXPECT_NE(script.find("exec '/opt/tea evaluate' '--config' 'it'\\''s $HOME' 'run' "
                          "--trial-task '" +
                          kRun + ":'\"$SLURM_ARRAY_TASK_ID\"\n"),
              std::string::npos)
        << script;
}

}  // namespace
}  // namespace tea::cli
