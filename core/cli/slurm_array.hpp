// run --executor slurm: the run's trial tasks (trial_tasks.hpp) submitted to a Slurm cluster as
// one job array, task I making trial I on whichever node Slurm gives it, with the same binary,
// command line, configuration and environment (docs/scale-out.md). The run waits for the array
// by asking squeue, cancels it (scancel) when a signal interrupts the run, and then reads the
// tasks' outcomes back from the run's records as it does for local tasks: the evaluation folder
// and the private root must be on a directory every node shares, at the same path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "evaluation/trials.hpp"

namespace tea::cli {

// Between begin_run and finish_run: the array submitted with `settings` (partition, account,
// further options) and `jobs` tasks at once at most, waited for, and its outcomes merged.
// Throws tea::Error (exit 12) when sbatch refuses the array or squeue cannot be asked; what the
// array's tasks did not hand back is an infrastructure error of their trials.
void run_slurm_array(evaluation::RunState &state, const std::vector<std::string> &argv,
                     const config::ExecutorSettings &settings, int jobs);

// What is left of runs of `runs` (an evaluation's runs folder) whose Slurm coordinator is gone
// (coordinator_lease.hpp), reclaimed by run `by`: each such run still recorded as running has its
// jobs cancelled by their names (scancel), its run.json recorded as failed saying why, and its
// lease removed. One line for each such run, to print.
std::vector<std::string> reclaim_abandoned_runs(const std::filesystem::path &runs,
                                                const std::string &by);

}  // namespace tea::cli
