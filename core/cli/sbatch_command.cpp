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

// `program` with `argv` (argv[0] left out) and `tail`, every word but the tail quoted: a path or
// an option of the user's own reaches the node as it was, whatever it holds.
std::string script_of(const std::string &what, const std::filesystem::path &program,
                      const std::vector<std::string> &argv, const std::string &tail) {
    std::string script =
        "#!/bin/sh\n# " + what + " (docs/scale-out.md).\nexec " + shell_quoted(program.string());
    for (std::size_t i = 1; i < argv.size(); ++i) script += " " + shell_quoted(argv[i]);
    return script + " " + tail + "\n";
}

std::vector<std::string> sbatch_command(const config::ExecutorSettings &settings,
                                        const std::string &job_name, const std::string &array,
                                        const std::filesystem::path &dir, const std::string &output,
                                        const std::string &script,
                                        const std::filesystem::path &chdir, long minutes) {
    // The user's options first: where one names what the executor sets, the executor's, later,
    // wins.
    std::vector<std::string> sbatch{"sbatch"};
    sbatch.insert(sbatch.end(), settings.slurm_options.begin(), settings.slurm_options.end());
    if (!settings.slurm_partition.empty()) {
        sbatch.push_back("--partition=" + settings.slurm_partition);
    }
    if (!settings.slurm_account.empty()) sbatch.push_back("--account=" + settings.slurm_account);
    sbatch.insert(sbatch.end(), {"--parsable", "--job-name=" + job_name});
    if (!array.empty()) sbatch.push_back("--array=" + array);
    // Unescaped, a records path holding %j or %a would send the output to another file, one a
    // path of the user's choosing could name outside the run.
    sbatch.insert(sbatch.end(),
                  {"--output=" + sbatch_file_pattern(dir.string()) + "/" + output + ".out",
                   "--error=" + sbatch_file_pattern(dir.string()) + "/" + output + ".err",
                   "--chdir=" + chdir.string(), "--time=" + std::to_string(minutes),
                   (dir / script).string()});
    return sbatch;
}

}  // namespace

std::string sbatch_file_pattern(const std::string &path) {
    std::string out;
    for (const char c : path) out += c == '%' ? std::string{"%%"} : std::string(1, c);
    return out;
}

std::string task_script(const std::string &run_id, const std::filesystem::path &program,
                        const std::vector<std::string> &argv) {
    return script_of("A task of run " + run_id + ": the trial of its index in the array", program,
                     argv,
                     "--trial-task " + shell_quoted(run_id + ":") + "\"$SLURM_ARRAY_TASK_ID\"");
}

std::string node_check_script(const std::string &run_id, const std::filesystem::path &program,
                              const std::vector<std::string> &argv) {
    return script_of("The node check of run " + run_id, program, argv,
                     "--node-check " + shell_quoted(run_id));
}

std::vector<std::string> sbatch_array_command(const config::ExecutorSettings &settings,
                                              const std::string &run_id,
                                              const std::filesystem::path &dir,
                                              const std::string &array,
                                              const std::filesystem::path &chdir, long minutes) {
    return sbatch_command(settings, "tea-" + run_id, array, dir, "%a", "task.sh", chdir, minutes);
}

std::vector<std::string> sbatch_node_check_command(const config::ExecutorSettings &settings,
                                                   const std::string &run_id,
                                                   const std::filesystem::path &dir,
                                                   const std::filesystem::path &chdir) {
    // Two minutes: the check opens the evaluation and makes one call of /bin/true.
    return sbatch_command(settings, "tea-check-" + run_id, "", dir, "node-check", "node-check.sh",
                          chdir, 2);
}

}  // namespace tea::cli
