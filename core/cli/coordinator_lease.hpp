// The lease of a Slurm run's coordinator (docs/scale-out.md). A coordinator killed outright
// (SIGKILL, its login node lost) cannot cancel its array, and its tasks would go on making trials
// that no record will hold. So the coordinator keeps a file in the run's slurm folder whose
// content names it (node, boot, process) and the lease's length, and whose modification time it
// renews at each poll of its jobs. A task makes its trial only while that coordinator is alive,
// and the next run of the evaluation cancels the jobs of a run whose coordinator is gone.
//
// The lease's age is read on the clock of the file system that holds it (the time of a file made
// beside it, minus the lease's), so that nodes whose clocks disagree still agree on it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tea::cli {

inline constexpr const char *kLeaseFile = "coordinator.lease";

// Made in `slurm_dir` by the coordinator before its first job, naming this process; removed when
// the run no longer waits on Slurm. Throws tea::Error (exit 3) when it cannot be made.
class CoordinatorLease {
   public:
    CoordinatorLease(const std::filesystem::path &slurm_dir, std::int64_t lease_s);
    ~CoordinatorLease();
    CoordinatorLease(const CoordinatorLease &) = delete;
    CoordinatorLease &operator=(const CoordinatorLease &) = delete;

    // The lease's modification time set to the file system's now.
    void renew() const noexcept;
    [[nodiscard]] std::int64_t length_s() const { return length_s_; }

   private:
    std::filesystem::path file_;
    std::int64_t length_s_;
    int fd_ = -1;
};

// What a task or a later run can tell of the coordinator whose lease is in a slurm folder.
struct CoordinatorState {
    enum class Is {
        alive,    // it may be: its lease is fresh and its process not known to have ended
        gone,     // its process has ended (judged where the lease was made: the same boot of the
                  // same kernel), or its lease has not been renewed for longer than its length
        unknown,  // its lease is missing, is not a regular file, is not a lease, or its age
                  // cannot be read
    };
    Is is = Is::unknown;
    std::string why;  // for gone and unknown
};

CoordinatorState coordinator_state(const std::filesystem::path &slurm_dir);

}  // namespace tea::cli
