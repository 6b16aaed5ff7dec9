// A run's trial keeps its workspace and home on a file system of its own, of a bounded size: a
// target that writes without end gets ENOSPC, and the host's free space drops by at most the
// budget. Either a tmpfs (in memory; what the target writes there is charged to its memory
// budget too) or an ext4 image on a loop device (on disk, a sparse file in the run's private
// directory that grows to the budget at most). One file system is bound at both paths, so the
// workspace and the home share the one budget. Root only: mounting needs CAP_SYS_ADMIN.
//
// The mounts are made in the runtime's own mount namespace (enter_private_mount_namespace), so a
// runtime killed outright leaves none of them on the host: the namespace, and the file system
// with it, goes with its last process, and the next run reclaims the directories as any other.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tea::files {

class RunDirectory;

enum class DiskKind { tmpfs, image };

// Gives the runtime a mount namespace of its own that receives the host's mounts and sends none
// back. The process must have one thread (the kernel refuses otherwise). Throws tea::Error
// (exit 12) naming why it cannot.
void enter_private_mount_namespace();

class TrialDisk {
   public:
    // Makes a file system of `bytes` in `run_dir` and mounts it over `workspace` and `home`, two
    // empty directories of run_dir (`home` empty: a trial that has none, the workspace alone).
    // Throws tea::Error (exit 12) naming the step that failed.
    TrialDisk(RunDirectory &run_dir, DiskKind kind, std::uint64_t bytes,
              const std::filesystem::path &workspace, const std::filesystem::path &home);
    TrialDisk(const TrialDisk &) = delete;
    TrialDisk &operator=(const TrialDisk &) = delete;
    TrialDisk(TrialDisk &&) = delete;
    TrialDisk &operator=(TrialDisk &&) = delete;
    ~TrialDisk();

    // What the file system holds now, and whether it is full (less than a MiB left).
    [[nodiscard]] std::uint64_t used_bytes() const;
    [[nodiscard]] bool full() const;
    // Unmounts it from both paths (left empty) and removes the image. Also done by the destructor.
    void release();

   private:
    std::filesystem::path workspace_;
    std::filesystem::path home_;
    std::filesystem::path dir_;  // the image's directory in the run directory (image only)
    bool mounted_ = false;
};

}  // namespace tea::files
