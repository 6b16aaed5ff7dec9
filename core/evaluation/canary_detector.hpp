// The grading-string detector: canary strings made for one run and planted in the grading
// material, looked for afterwards in everything a target could write. A target that read what a
// canary was planted in, and wrote any of it where it may write, leaves the canary there; found,
// it proves the read and names the file it was found in.
//
// A canary is random (128 bits from the kernel) and made per run, so no target can know it in
// advance, and no earlier run's records give it away. It is recorded with the run, which the
// target never sees. The scanner reads bytes, not text: a file of any content is searched, a
// canary cut across two reads is still found, and a canary in a file's name or a link's text
// counts as much as one in a file. No link is followed and no special file opened (see
// files/tree_walk.hpp). What the scan could not read, or read only in part (past its bounds), is
// named, so a caller refuses a partial scan rather than take it for a clean one.
//
// `run` plants and scans them when the evaluation opts in (leak_detectors.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "files/tree_walk.hpp"

namespace tea::evaluation {

// "tea-canary-" and 32 hex digits of fresh randomness. Throws tea::Error (exit 12) when the
// kernel gives none: a canary anyone could guess would prove nothing.
std::string make_canary();

// Writes a new file `dir`/`name` holding the canary on a line of its own, mode 0644. The file
// must not exist and `dir` is opened without following a link at its last component. Throws
// tea::Error naming the file otherwise. Returns the file's path.
std::filesystem::path plant_canary(const std::filesystem::path &dir, const std::string &name,
                                   const std::string &canary);

// What the run records of a canary: the string and where it was planted.
nlohmann::json canary_record(const std::string &canary, const std::filesystem::path &planted);

struct CanaryHit {
    enum class In { content, name, link_text };
    std::string where;  // the file, relative to the tree scanned, or the stream's name
    In in = In::content;
    std::uint64_t offset = 0;  // of the canary's first byte, in the content, name or link text
    std::string canary;
};
const char *to_string(CanaryHit::In in);

struct CanaryScanLimits {
    std::uint64_t max_file_bytes = std::uint64_t{256} << 20U;  // read of any one file
    std::uint64_t max_total_bytes = std::uint64_t{4} << 30U;   // read in the whole scan
    files::TreeLimits tree;
};

struct CanaryScan {
    std::vector<CanaryHit> hits;  // each canary's first place in each file, name or stream
    // What was not searched, or only in part, each "path: reason". Empty: the scan is whole.
    std::vector<std::string> unscanned;
    [[nodiscard]] bool complete() const { return unscanned.empty(); }
};

// Searches the tree at `root`: every file's content, every name and every link's text.
// Throws tea::Error when the root cannot be opened as a directory.
CanaryScan scan_tree_for_canaries(const std::filesystem::path &root,
                                  const std::vector<std::string> &canaries,
                                  const CanaryScanLimits &limits = {});

// Searches one file, such as a call's captured output, named `where` in the hits. The file is
// opened without following a link; a file that is not a regular one is reported unscanned.
CanaryScan scan_file_for_canaries(const std::filesystem::path &file, const std::string &where,
                                  const std::vector<std::string> &canaries,
                                  const CanaryScanLimits &limits = {});

// Searches bytes held in memory (output captured without a file).
std::vector<CanaryHit> scan_bytes_for_canaries(std::string_view bytes, const std::string &where,
                                               const std::vector<std::string> &canaries);

}  // namespace tea::evaluation
