// What run --executor slurm hands sbatch (slurm_array.hpp): the task script, which runs this
// binary with the run's command line and the trial of the task's index, and sbatch's own
// arguments. Pure functions of their inputs, so that what reaches Slurm can be checked word by
// word.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace tea::cli {

// A path in an sbatch file pattern (--output, --error), where % starts a replacement (%j the job,
// %a the task, ...): every % doubled, so that the path Slurm opens is the one given.
std::string sbatch_file_pattern(const std::string &path);

// The script of run `run_id`'s tasks: `program` with `argv` (argv[0] left out) and
// --trial-task RUN_ID:$SLURM_ARRAY_TASK_ID, every word quoted.
std::string task_script(const std::string &run_id, const std::filesystem::path &program,
                        const std::vector<std::string> &argv);

// The script of run `run_id`'s node check (node_check.hpp): `program` with `argv` and
// --node-check RUN_ID, every word quoted.
std::string node_check_script(const std::string &run_id, const std::filesystem::path &program,
                              const std::vector<std::string> &argv);

// What sbatch is given for the array of run `run_id`: the user's options first, then the
// partition and account, then the executor's own (a later option wins), each task's output in
// `dir`/%a.out and %a.err, the script `dir`/task.sh. `array` is sbatch's --array (1-16%2).
std::vector<std::string> sbatch_array_command(const config::ExecutorSettings &settings,
                                              const std::string &run_id,
                                              const std::filesystem::path &dir,
                                              const std::string &array,
                                              const std::filesystem::path &chdir, long minutes);

// What sbatch is given for run `run_id`'s node check: one job, no array, two minutes, its output
// in `dir`/node-check.out and .err, the script `dir`/node-check.sh; the options as the array's.
std::vector<std::string> sbatch_node_check_command(const config::ExecutorSettings &settings,
                                                   const std::string &run_id,
                                                   const std::filesystem::path &dir,
                                                   const std::filesystem::path &chdir);

}  // namespace tea::cli
