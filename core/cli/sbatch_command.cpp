#include "cli/sbatch_command.hpp"

namespace tea::cli {

namespace {

// The shell word of `text`, quoted so that /bin/sh reads it back byte for byte.
std::string shell_quoted(const std::string &text) {
    std::string out = "'";
    for (const char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

}  // namespace

std::string sbatch_file_pattern(const std::string &path) {
    std::string out;
    for (const char c : path) out += c == '%' ? std::string{"%%"} : std::string(1, c);
    return out;
}

std::string task_script(const std::string &run_id, const std::filesystem::path &program,
                        const std::vector<std::string> &argv) {
    // Every word is quoted: a path or an option of the user's own reaches the task as it was,
    // whatever it holds.
    std::string script = "#!/bin/sh\n# A task of run " + run_id +
                         " (docs/scale-out.md): the trial of its index in the array.\nexec " +
                         shell_quoted(program.string());
    for (std::size_t i = 1; i < argv.size(); ++i) script += " " + shell_quoted(argv[i]);
    return script + " --trial-task " + shell_quoted(run_id + ":") + "\"$SLURM_ARRAY_TASK_ID\"\n";
}

std::vector<std::string> sbatch_array_command(const config::ExecutorSettings &settings,
                                              const std::string &run_id,
                                              const std::filesystem::path &dir,
                                              const std::string &array,
                                              const std::filesystem::path &chdir, long minutes) {
    // The user's options first: where one names what the executor sets, the executor's, later,
    // wins.
    std::vector<std::string> sbatch{"sbatch"};
    sbatch.insert(sbatch.end(), settings.slurm_options.begin(), settings.slurm_options.end());
    if (!settings.slurm_partition.empty()) {
        sbatch.push_back("--partition=" + settings.slurm_partition);
    }
    if (!settings.slurm_account.empty()) sbatch.push_back("--account=" + settings.slurm_account);
    // Unescaped, a records path holding %j or %a would send each task's output to another file,
    // one a path of the user's choosing could name outside the run.
    sbatch.insert(sbatch.end(), {"--parsable", "--job-name=tea-" + run_id, "--array=" + array,
                                 "--output=" + sbatch_file_pattern(dir.string()) + "/%a.out",
                                 "--error=" + sbatch_file_pattern(dir.string()) + "/%a.err",
                                 "--chdir=" + chdir.string(), "--time=" + std::to_string(minutes),
                                 (dir / "task.sh").string()});
    return sbatch;
}

}  // namespace tea::cli
