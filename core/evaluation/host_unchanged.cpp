#include "evaluation/host_unchanged.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <tea/json_bytes.hpp>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;

constexpr std::size_t kReadChunk = 64 * 1024;

struct DigestFree {
    void operator()(EVP_MD_CTX *context) const { EVP_MD_CTX_free(context); }
};

// SHA-256 fed in pieces. Throws when OpenSSL fails: a manifest without its hashes proves nothing.
class Sha256 {
   public:
    Sha256() : context_(EVP_MD_CTX_new()) {
        if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
            throw runtime_failure("cannot start a SHA-256 digest (OpenSSL)");
        }
    }
    void update(const void *data, std::size_t size) {
        if (EVP_DigestUpdate(context_.get(), data, size) != 1) {
            throw runtime_failure("cannot compute a SHA-256 digest (OpenSSL)");
        }
    }
    std::string hex() {
        std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1) {
            throw runtime_failure("cannot finish a SHA-256 digest (OpenSSL)");
        }
        std::string out;
        for (unsigned int i = 0; i < length; ++i) {
            std::array<char, 3> two{};
            (void)std::snprintf(two.data(), two.size(), "%02x", digest[i]);
            out += two.data();
        }
        return out;
    }

   private:
    std::unique_ptr<EVP_MD_CTX, DigestFree> context_;
};

// The file's SHA-256, or "" with the reason in `unreached` when it could not be read whole.
std::string hash_file(int fd, const std::string &path, const HostManifestLimits &limits,
                      std::uint64_t &budget, std::vector<std::string> &unreached) {
    Sha256 sha;
    std::array<char, kReadChunk> buffer{};
    std::uint64_t done = 0;
    for (;;) {
        const auto cap = std::min(limits.max_file_bytes - done, budget);
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), cap));
        if (want == 0) {
            char probe = 0;
            if (::pread(fd, &probe, 1, static_cast<off_t>(done)) == 0) break;
            unreached.push_back(
                path + ": larger than the " +
                (budget == 0 ? "manifest's budget of " + std::to_string(limits.max_total_bytes)
                             : "file bound of " + std::to_string(limits.max_file_bytes)) +
                " bytes hashed");
            return {};
        }
        const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int error = errno;
            unreached.push_back(path + ": read failed (" + errno_text(error) + ")");
            return {};
        }
        if (n == 0) break;
        sha.update(buffer.data(), static_cast<std::size_t>(n));
        done += static_cast<std::uint64_t>(n);
        budget -= static_cast<std::uint64_t>(n);
    }
    return sha.hex();
}

std::string octal(std::uint32_t mode) {
    std::array<char, 8> text{};
    (void)std::snprintf(text.data(), text.size(), "%04o", mode);
    return text.data();
}

// Each field of the entry that differs, named with its two values where they are short.
std::string differences(const ManifestEntry &a, const ManifestEntry &b) {
    std::string out;
    const auto add = [&out](const std::string &field) { out += (out.empty() ? "" : ", ") + field; };
    if (a.type != b.type) {
        add(std::string{"type "} + files::to_string(a.type) + " -> " + files::to_string(b.type));
        return out;  // the rest follows from the type
    }
    if (a.mode != b.mode) add("mode " + octal(a.mode) + " -> " + octal(b.mode));
    if (a.uid != b.uid || a.gid != b.gid) {
        add("owner " + std::to_string(a.uid) + ":" + std::to_string(a.gid) + " -> " +
            std::to_string(b.uid) + ":" + std::to_string(b.gid));
    }
    if (a.size != b.size) add("size " + std::to_string(a.size) + " -> " + std::to_string(b.size));
    if (a.sha256 != b.sha256) {
        add(a.type == files::TreeEntryType::link ? "link text" : "content");
    }
    return out;
}

// The manifest of a root that is a file or a link: its one entry, ".". A link is described, not
// followed, as it would be in a tree.
bool take_single_entry(const stdfs::path &root, const HostManifestLimits &limits,
                       HostManifest &out) {
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return false;
    ManifestEntry m;
    m.mode = static_cast<std::uint32_t>(st.st_mode) & 07777U;
    m.uid = st.st_uid;
    m.gid = st.st_gid;
    if (S_ISLNK(st.st_mode)) {
        m.type = files::TreeEntryType::link;
        std::string text(4096, '\0');
        const ssize_t n = ::readlink(root.c_str(), text.data(), text.size());
        if (n < 0 || static_cast<std::size_t>(n) >= text.size()) {
            out.unreached.push_back(".: its text cannot be read");
        } else {
            text.resize(static_cast<std::size_t>(n));
            m.size = text.size();
            Sha256 sha;
            sha.update(text.data(), text.size());
            m.sha256 = sha.hex();
        }
    } else if (S_ISREG(st.st_mode)) {
        m.type = files::TreeEntryType::regular;
        m.size = static_cast<std::uint64_t>(st.st_size);
        // O_NONBLOCK: a fifo put in the file's place since lstat does not block the open.
        const UniqueFd fd{
            ::open(root.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
        struct stat now {};
        if (!fd || ::fstat(fd.get(), &now) != 0 || now.st_ino != st.st_ino ||
            now.st_dev != st.st_dev) {
            out.unreached.push_back(".: cannot be opened as the file it was");
        } else {
            std::uint64_t budget = limits.max_total_bytes;
            m.sha256 = hash_file(fd.get(), ".", limits, budget, out.unreached);
        }
    }
    out.entries.emplace(".", std::move(m));
    return true;
}

}  // namespace

HostManifest take_host_manifest(const stdfs::path &root, const HostManifestLimits &limits) {
    HostManifest out;
    out.root = root;
    if (take_single_entry(root, limits, out)) return out;
    std::uint64_t budget = limits.max_total_bytes;
    const auto walk = files::walk_tree(root, limits.tree, [&](const files::TreeEntry &e) {
        ManifestEntry m;
        m.type = e.type;
        m.mode = e.mode;
        m.uid = e.uid;
        m.gid = e.gid;
        m.size = e.size;
        if (e.type == files::TreeEntryType::regular) {
            m.sha256 = hash_file(e.fd, e.path, limits, budget, out.unreached);
        } else if (e.type == files::TreeEntryType::link) {
            Sha256 sha;
            sha.update(e.link_text.data(), e.link_text.size());
            m.sha256 = sha.hex();
        }
        out.entries.emplace(e.path, std::move(m));
    });
    out.unreached.insert(out.unreached.end(), walk.unreached.begin(), walk.unreached.end());
    return out;
}

std::string sha256_hex(std::string_view bytes) {
    Sha256 sha;
    sha.update(bytes.data(), bytes.size());
    return sha.hex();
}

const char *to_string(ManifestChange::Kind kind) {
    switch (kind) {
        case ManifestChange::Kind::added:
            return "added";
        case ManifestChange::Kind::removed:
            return "removed";
        case ManifestChange::Kind::changed:
            break;
    }
    return "changed";
}

std::vector<ManifestChange> compare_host_manifests(const HostManifest &before,
                                                   const HostManifest &after) {
    std::vector<ManifestChange> out;
    auto a = before.entries.begin();
    auto b = after.entries.begin();
    // Both maps are in path order: one merge pass names every added, removed and changed entry.
    while (a != before.entries.end() || b != after.entries.end()) {
        if (b == after.entries.end() || (a != before.entries.end() && a->first < b->first)) {
            out.push_back({a->first, ManifestChange::Kind::removed, {}});
            ++a;
        } else if (a == before.entries.end() || b->first < a->first) {
            out.push_back(
                {b->first, ManifestChange::Kind::added, files::to_string(b->second.type)});
            ++b;
        } else {
            if (auto what = differences(a->second, b->second); !what.empty()) {
                out.push_back({a->first, ManifestChange::Kind::changed, std::move(what)});
            }
            ++a;
            ++b;
        }
    }
    return out;
}

nlohmann::json host_changes_record(const HostManifest &before, const HostManifest &after,
                                   const std::vector<ManifestChange> &changes) {
    auto list = nlohmann::json::array();
    for (const auto &c : changes) {
        list.push_back(
            {{"path", bytes::to_json(c.path)}, {"kind", to_string(c.kind)}, {"what", c.what}});
    }
    std::vector<std::string> unreached = before.unreached;
    unreached.insert(unreached.end(), after.unreached.begin(), after.unreached.end());
    return {{"root", bytes::to_json(after.root.string())},
            {"changes", list},
            {"unreached", bytes::list_to_json(unreached)}};
}

}  // namespace tea::evaluation
