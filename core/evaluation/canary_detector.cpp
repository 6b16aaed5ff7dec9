#include "evaluation/canary_detector.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <tea/json_bytes.hpp>

#include "files/private_dirs.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;

constexpr std::string_view kCanaryPrefix = "tea-canary-";
constexpr std::size_t kCanaryRandomChars = 24;  // of 62 symbols: 142 bits
constexpr std::size_t kReadChunk = 64 * 1024;

// The canaries searched in one stream of bytes read in pieces: the last bytes of each piece are
// kept until the next, so a canary that a read cuts in two is still found, at its offset in the
// whole stream. Each canary is reported once per stream, at its first place.
class StreamSearch {
   public:
    StreamSearch(const std::vector<std::string> &canaries, std::string where, CanaryHit::In in)
        : canaries_(canaries), found_(canaries.size(), false), where_(std::move(where)), in_(in) {
        for (const auto &c : canaries_) {
            keep_ = std::max(keep_, c.empty() ? 0 : c.size() - 1);
        }
    }

    void feed(std::string_view piece, std::vector<CanaryHit> &hits) {
        window_.append(piece.data(), piece.size());
        for (std::size_t i = 0; i < canaries_.size(); ++i) {
            if (found_[i] || canaries_[i].empty()) continue;
            if (const auto at = window_.find(canaries_[i]); at != std::string::npos) {
                hits.push_back({where_, in_, start_ + at, canaries_[i]});
                found_[i] = true;
            }
        }
        if (window_.size() > keep_) {
            const auto dropped = window_.size() - keep_;
            window_.erase(0, dropped);
            start_ += dropped;
        }
    }

   private:
    const std::vector<std::string> &canaries_;
    std::vector<bool> found_;
    std::string where_;
    CanaryHit::In in_;
    std::size_t keep_ = 0;
    std::string window_;       // the kept tail of what was fed, then the new piece
    std::uint64_t start_ = 0;  // the stream offset of window_'s first byte
};

// Reads the regular file open at fd from its start, searching it. Stops at the file's end, at
// max_file_bytes, or when the scan's byte budget runs out, and says which in `unscanned`.
void scan_descriptor(int fd, const std::string &where, const std::vector<std::string> &canaries,
                     const CanaryScanLimits &limits, std::uint64_t &budget, CanaryScan &out) {
    StreamSearch search{canaries, where, CanaryHit::In::content};
    std::array<char, kReadChunk> buffer{};
    std::uint64_t read_so_far = 0;
    for (;;) {
        const auto cap = std::min(limits.max_file_bytes - read_so_far, budget);
        if (cap == 0) {
            char probe = 0;
            if (::pread(fd, &probe, 1, static_cast<off_t>(read_so_far)) > 0) {
                out.unscanned.push_back(
                    where + ": only its first " + std::to_string(read_so_far) +
                    " bytes searched (" +
                    (budget == 0 ? "the scan's budget of " + std::to_string(limits.max_total_bytes)
                                 : "a file's bound of " + std::to_string(limits.max_file_bytes)) +
                    " bytes)");
            }
            return;
        }
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), cap));
        const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(read_so_far));
        if (n < 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            out.unscanned.push_back(where + ": read failed after " + std::to_string(read_so_far) +
                                    " bytes (" + errno_text(error) + ")");
            return;
        }
        if (n == 0) return;
        search.feed({buffer.data(), static_cast<std::size_t>(n)}, out.hits);
        read_so_far += static_cast<std::uint64_t>(n);
        budget -= static_cast<std::uint64_t>(n);
    }
}

void scan_text(std::string_view text, const std::string &where, CanaryHit::In in,
               const std::vector<std::string> &canaries, std::vector<CanaryHit> &hits) {
    StreamSearch search{canaries, where, in};
    search.feed(text, hits);
}

std::string last_component(const std::string &path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string make_canary() {
    // files::random_token reads getrandom(2) and throws when the kernel gives nothing.
    return std::string{kCanaryPrefix} + files::random_token(kCanaryRandomChars);
}

stdfs::path plant_canary(const stdfs::path &dir, const std::string &name,
                         const std::string &canary) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
        throw usage_error("a canary's file name must be one plain name, not '" + name + "'");
    }
    const UniqueFd parent{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!parent) {
        const int error = errno;
        throw runtime_failure("cannot plant a canary in " + dir.string() + ": " +
                              errno_text(error));
    }
    // O_EXCL: a file already there (or a link planted in its place) is never written through.
    const UniqueFd file{::openat(parent.get(), name.c_str(),
                                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
    const auto path = dir / name;
    if (!file) {
        const int error = errno;
        throw runtime_failure("cannot plant a canary at " + path.string() + ": " +
                              errno_text(error));
    }
    const std::string line = canary + "\n";
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(file.get(), line.data() + written, line.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int error = errno;
            throw runtime_failure("cannot write the canary at " + path.string() + ": " +
                                  errno_text(error));
        }
        written += static_cast<std::size_t>(n);
    }
    return path;
}

nlohmann::json canary_record(const std::string &canary, const stdfs::path &planted) {
    return {{"canary", canary}, {"plantedIn", bytes::to_json(planted.string())}};
}

const char *to_string(CanaryHit::In in) {
    switch (in) {
        case CanaryHit::In::name:
            return "name";
        case CanaryHit::In::link_text:
            return "link text";
        case CanaryHit::In::content:
            break;
    }
    return "content";
}

CanaryScan scan_tree_for_canaries(const stdfs::path &root, const std::vector<std::string> &canaries,
                                  const CanaryScanLimits &limits) {
    CanaryScan out;
    std::uint64_t budget = limits.max_total_bytes;
    const auto walk = files::walk_tree(root, limits.tree, [&](const files::TreeEntry &e) {
        if (e.path != ".") {
            // A file named after the canary carries it as well as one holding it.
            scan_text(last_component(e.path), e.path, CanaryHit::In::name, canaries, out.hits);
        }
        if (e.type == files::TreeEntryType::link) {
            scan_text(e.link_text, e.path, CanaryHit::In::link_text, canaries, out.hits);
        } else if (e.type == files::TreeEntryType::regular) {
            scan_descriptor(e.fd, e.path, canaries, limits, budget, out);
        }
    });
    out.unscanned.insert(out.unscanned.end(), walk.unreached.begin(), walk.unreached.end());
    return out;
}

CanaryScan scan_file_for_canaries(const stdfs::path &file, const std::string &where,
                                  const std::vector<std::string> &canaries,
                                  const CanaryScanLimits &limits) {
    CanaryScan out;
    // O_NONBLOCK: a fifo in the file's place does not block the scan.
    const UniqueFd fd{
        ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        const int error = errno;
        out.unscanned.push_back(where + ": cannot be opened (" + errno_text(error) + ")");
        return out;
    }
    if (!S_ISREG(st.st_mode)) {
        out.unscanned.push_back(where + ": not a regular file");
        return out;
    }
    std::uint64_t budget = limits.max_total_bytes;
    scan_descriptor(fd.get(), where, canaries, limits, budget, out);
    return out;
}

std::vector<CanaryHit> scan_bytes_for_canaries(std::string_view bytes, const std::string &where,
                                               const std::vector<std::string> &canaries) {
    std::vector<CanaryHit> hits;
    scan_text(bytes, where, CanaryHit::In::content, canaries, hits);
    return hits;
}

}  // namespace tea::evaluation
