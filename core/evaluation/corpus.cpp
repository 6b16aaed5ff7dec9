#include "evaluation/corpus.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>

#include "evaluation/folder_file.hpp"
#include "util/closest_match.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxCorpusFileBytes = std::size_t{16} << 20U;
constexpr std::size_t kMaxCorpusBytes = std::size_t{64} << 20U;
constexpr std::size_t kMaxCorpusFiles = 4096;
constexpr std::size_t kMaxNameLength = 128;
constexpr int kMaxDepth = 16;

// A name that reaches records, messages and the probe's field as written: no control character,
// quote, separator or leading '-' (read as an option by a target that is handed the name).
bool sane_name(const std::string &name) {
    return !name.empty() && name.size() <= kMaxNameLength && name != "." && name != ".." &&
           name.front() != '-' && std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
           });
}

struct Walk {
    const fs::path &root;
    std::vector<Problem> &problems;
    std::map<std::string, std::size_t> sizes;  // name -> bytes
    std::size_t total = 0;
    bool too_many = false;

    void problem(const std::string &name, std::string message) {
        problems.push_back({root / name, 0, 0, {}, std::move(message)});
    }

    void walk(const fs::path &dir, const std::string &prefix, int depth) {
        std::error_code ec;
        fs::directory_iterator it{dir, ec};
        for (; !ec && it != fs::directory_iterator{}; it.increment(ec)) {
            const auto leaf = it->path().filename().string();
            const auto name = prefix.empty() ? leaf : prefix + "/" + leaf;
            if (!sane_name(leaf)) {
                problem(name,
                        "is not a corpus name: 1 to 128 of the characters A-Z a-z 0-9 . _ -, "
                        "not starting with '-'");
                continue;
            }
            const auto status = it->symlink_status(ec);
            if (ec) break;
            // A link would have the runtime copy whatever it leads to (a host secret, another
            // evaluation's grading material) into the target's workspace.
            if (fs::is_symlink(status)) {
                problem(name, "is a symbolic link; a corpus holds regular files only");
            } else if (fs::is_directory(status)) {
                if (depth >= kMaxDepth) {
                    problem(name, "lies more than 16 directories deep");
                } else {
                    walk(it->path(), name, depth + 1);
                }
            } else if (!fs::is_regular_file(status)) {
                problem(name, "is not a regular file");
            } else if (sizes.size() >= kMaxCorpusFiles) {
                too_many = true;
            } else {
                const auto bytes = static_cast<std::size_t>(fs::file_size(it->path(), ec));
                if (ec) break;
                if (bytes > kMaxCorpusFileBytes) {
                    problem(name, "is " + std::to_string(bytes) + " bytes; the limit is 16 MiB");
                }
                sizes.emplace(name, bytes);
                total += bytes;
            }
        }
        if (ec) {
            problems.push_back({dir, 0, 0, {}, "cannot be read: " + ec.message()});
        }
    }
};

bool any_reference(const Evaluation &evaluation) {
    return std::any_of(evaluation.probes.begin(), evaluation.probes.end(),
                       [](const Probe &p) { return !p.corpus.empty(); });
}

}  // namespace

void load_corpus(Evaluation &evaluation, std::vector<Problem> &problems,
                 std::vector<Problem> &notes) {
    const auto root = evaluation.folder / "corpus";
    std::error_code ec;
    const auto status = fs::symlink_status(root, ec);
    const bool present = status.type() != fs::file_type::not_found;
    Walk walk{root, problems, {}, 0, false};
    if (present && !fs::is_directory(status)) {
        // A link here would make every corpus file a file of wherever it leads.
        problems.push_back({root,
                            0,
                            0,
                            {},
                            "must be a directory of the evaluation folder, not a "
                            "link or a file"});
        return;
    }
    if (present) {
        walk.walk(root, {}, 0);
    }
    if (walk.too_many) {
        problems.push_back({root, 0, 0, {}, "holds more than 4096 files"});
    }
    if (walk.total > kMaxCorpusBytes) {
        problems.push_back(
            {root,
             0,
             0,
             {},
             "holds " + std::to_string(walk.total) + " bytes; the limit is 64 MiB in all"});
    }
    std::vector<std::string> names;
    for (const auto &item : walk.sizes) names.push_back(item.first);
    evaluation.corpus_files = names;
    if (!present && !any_reference(evaluation)) return;

    std::set<std::string> used;
    std::map<std::string, std::string> contents;
    for (auto &probe : evaluation.probes) {
        for (const auto &[destination, name] : probe.corpus) {
            const auto where = "probe '" + probe.name + "' field 'corpus." + destination + "'";
            if (walk.sizes.count(name) == 0) {
                problems.push_back(
                    {probe.file, 0, 0, where,
                     "'" + name + "' is no file of " + root.string() +
                         (names.empty() ? " (it holds none)" : " (files: " + listed(names) + ")") +
                         did_you_mean(name, names)});
                continue;
            }
            used.insert(name);
            auto found = contents.find(name);
            if (found == contents.end()) {
                std::string content;
                if (auto why =
                        read_folder_file(root / name, kMaxCorpusFileBytes, "16 MiB", content)) {
                    problems.push_back({root / name, 0, 0, {}, std::move(*why)});
                    continue;
                }
                found = contents.emplace(name, std::move(content)).first;
            }
            probe.files[destination] = found->second;
        }
    }
    for (const auto &name : names) {
        if (used.count(name) == 0) {
            notes.push_back({root / name, 0, 0, {}, "is named by no probe's \"corpus\""});
        }
    }
}

}  // namespace tea::evaluation
