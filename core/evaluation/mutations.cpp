#include "evaluation/mutations.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "files/beneath.hpp"
#include "util/error.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;

constexpr std::uintmax_t kFileCap = std::uintmax_t{1} << 20U;       // a file or a patch
constexpr std::uintmax_t kMutationCap = std::uintmax_t{16} << 20U;  // a mutation's files together
constexpr std::size_t kNameMax = 64;
constexpr std::size_t kFilesMax = 4096;  // a tree's files: each arm's every trial writes them all

// The name is printed, recorded and joined to paths: no separator, dot, control byte or dash first.
bool good_name(const std::string &name) {
    if (name.empty() || name.size() > kNameMax ||
        std::isalnum(static_cast<unsigned char>(name[0])) == 0) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
    });
}

[[noreturn]] void refuse(const std::string &file, const std::string &why) {
    throw usage_error(file + ": " + why);
}

std::string read_capped(const std::string &file, const stdfs::path &path) {
    std::error_code ec;
    const auto size = stdfs::file_size(path, ec);
    if (ec) refuse(file, "cannot be read: " + ec.message());
    // A huge input would be copied into every arm's workspace and memory.
    if (size > kFileCap) {
        refuse(file, "is " + std::to_string(size) +
                         " bytes, more than the 1 MiB a mutation's file may hold");
    }
    std::ifstream in{path, std::ios::binary};
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (!in) refuse(file, "cannot be read");
    return text;
}

// A replacement tree: every regular file under dir, at its path relative to dir.
std::vector<git::PatchedFile> read_tree(const std::string &file, const stdfs::path &dir) {
    std::vector<git::PatchedFile> out;
    std::uintmax_t total = 0;
    std::error_code ec;
    for (stdfs::recursive_directory_iterator it{dir, stdfs::directory_options::none, ec}, end;
         !ec && it != end; it.increment(ec)) {
        const auto rel = it->path().lexically_relative(dir).string();
        const auto status = it->symlink_status(ec);
        if (ec) break;
        // A link would be followed when read here, or written as a link the target could use.
        if (stdfs::is_symlink(status)) refuse(file + rel, "is a symbolic link");
        if (stdfs::is_directory(status)) continue;
        if (!stdfs::is_regular_file(status)) refuse(file + rel, "is not a regular file");
        git::PatchedFile f;
        f.path = rel;
        f.content = read_capped(file + rel, it->path());
        f.executable = (static_cast<unsigned>(status.permissions()) & 0100U) != 0;
        total += f.content.size();
        if (out.size() == kFilesMax) {
            refuse(file, "holds more than the " + std::to_string(kFilesMax) +
                             " files a mutation may hold");
        }
        if (total > kMutationCap) refuse(file, "holds more than the 16 MiB a mutation may hold");
        out.push_back(std::move(f));
    }
    if (ec) refuse(file, "cannot be read: " + ec.message());
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.path < b.path; });
    return out;
}

bool is_git_name(const std::string &component) {
    std::string lower = component;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower == ".git";
}

// A change may write only the project's own files: never the grading material, a repository's
// metadata, or through a link of the commit.
void check_change(const std::string &file, const git::PatchedFile &change,
                  const git::WorkspaceSource &source, const stdfs::path &baseline) {
    const auto &rel = change.path;
    if (!files::plain_relative(rel)) refuse(file, "'" + rel + "' is not a plain relative path");
    // A mutation that edits the probes or the evaluator would grade itself.
    for (const auto &excluded : source.excluded) {
        if (!excluded.empty() && (rel == excluded || rel.starts_with(excluded + "/"))) {
            refuse(file, "'" + rel + "' is in the evaluation folder " + excluded);
        }
    }
    stdfs::path walked = baseline;
    const stdfs::path path{rel};
    auto left = std::distance(path.begin(), path.end());
    for (const auto &component : path) {
        --left;
        // A hook or configuration written into .git would run on the host's side of git.
        if (is_git_name(component.string())) refuse(file, "'" + rel + "' touches a .git entry");
        walked /= component;
        std::error_code ec;
        const auto status = stdfs::symlink_status(walked, ec);
        if (!stdfs::exists(status)) break;
        if (stdfs::is_symlink(status)) {
            refuse(file, "'" + rel + "' goes through a symbolic link of the commit");
        }
        if (left > 0 && !stdfs::is_directory(status)) {
            refuse(file, "'" + rel + "' goes through a file of the commit");
        }
        if (left == 0 && !stdfs::is_regular_file(status)) {
            refuse(file, "'" + rel + "' is not a regular file in the commit");
        }
    }
    if (change.link) refuse(file, "'" + rel + "' becomes a symbolic link");
    if (change.submodule) refuse(file, "'" + rel + "' becomes a submodule");
    if (change.content.size() > kFileCap) {
        refuse(file, "'" + rel + "' becomes larger than the 1 MiB a mutation's file may hold");
    }
}

}  // namespace

std::vector<Mutation> load_mutations(const Evaluation &ev, const git::WorkspaceSource &source,
                                     files::RunDirectory &private_dir) {
    const auto folder = ev.folder / "mutations";
    std::error_code ec;
    const auto status = stdfs::symlink_status(folder, ec);
    if (!stdfs::exists(status)) return {};
    if (!stdfs::is_directory(status)) refuse("mutations", "is not a folder (a link is refused)");
    std::map<std::string, Mutation> found;
    for (const auto &item : stdfs::directory_iterator{folder}) {
        const auto entry = item.path().filename().string();
        const auto kind = item.symlink_status();
        Mutation m;
        if (stdfs::is_symlink(kind)) refuse("mutations/" + entry, "is a symbolic link");
        if (stdfs::is_directory(kind)) {
            m.name = entry;
            m.file = "mutations/" + entry + "/";
        } else if (stdfs::is_regular_file(kind) && entry.ends_with(".patch")) {
            m.name = entry.substr(0, entry.size() - 6);
            m.file = "mutations/" + entry;
        } else {
            refuse("mutations/" + entry, "is neither a <name>.patch file nor a <name>/ folder");
        }
        if (!good_name(m.name)) {
            refuse(m.file, "the name '" + m.name +
                               "' is not 1 to 64 letters, digits, '-' or '_' beginning with a "
                               "letter or digit");
        }
        if (found.contains(m.name))
            refuse(m.file, "a mutation named '" + m.name + "' is there twice");
        if (m.file.ends_with("/")) {
            m.changes = read_tree(m.file, item.path());
        } else {
            try {
                m.changes = git::apply_patch(source, read_capped(m.file, item.path()));
            } catch (const git::WorkspaceSourceError &e) {
                refuse(m.file, e.what());
            }
        }
        if (m.changes.empty()) refuse(m.file, "changes nothing");
        found.emplace(m.name, std::move(m));
    }
    const auto baseline = private_dir.make_directory("mutations-baseline-");
    std::vector<Mutation> out;
    try {
        (void)git::materialize(source, baseline);
        for (auto &[name, m] : found) {
            for (const auto &change : m.changes) check_change(m.file, change, source, baseline);
            out.push_back(std::move(m));
        }
    } catch (...) {
        files::remove_tree(baseline);
        throw;
    }
    files::remove_tree(baseline);
    return out;
}

std::vector<std::uint8_t> mutation_bytes(const Mutation &mutation) {
    nlohmann::json changes = nlohmann::json::array();
    for (const auto &c : mutation.changes) {
        changes.push_back({{"path", c.path},
                           {"removed", c.removed},
                           {"content", nlohmann::json::binary(std::vector<std::uint8_t>(
                                           c.content.begin(), c.content.end()))},
                           {"executable", c.executable},
                           {"link", c.link},
                           {"submodule", c.submodule}});
    }
    return nlohmann::json::to_cbor(
        {{"name", mutation.name}, {"file", mutation.file}, {"changes", changes}});
}

Mutation mutation_from_bytes(const std::vector<std::uint8_t> &bytes) {
    const auto j = nlohmann::json::from_cbor(bytes);
    Mutation m;
    m.name = j.at("name").get<std::string>();
    m.file = j.at("file").get<std::string>();
    for (const auto &c : j.at("changes")) {
        git::PatchedFile f;
        f.path = c.at("path").get<std::string>();
        f.removed = c.at("removed").get<bool>();
        const auto &content = c.at("content").get_binary();
        f.content.assign(content.begin(), content.end());
        f.executable = c.at("executable").get<bool>();
        f.link = c.at("link").get<bool>();
        f.submodule = c.at("submodule").get<bool>();
        m.changes.push_back(std::move(f));
    }
    return m;
}

void apply_mutation(const Mutation &mutation, const stdfs::path &workspace) {
    for (const auto &change : mutation.changes) {
        const auto path = workspace / change.path;
        if (change.removed) {
            std::error_code ec;
            stdfs::remove(path, ec);
            if (ec) throw runtime_failure("cannot remove " + path.string() + ": " + ec.message());
            continue;
        }
        files::write_beneath(workspace, change.path, change.content);
        if (::chmod(path.c_str(), change.executable ? 0755 : 0644) != 0) {
            throw runtime_failure("cannot set the mode of " + path.string() + ": " +
                                  errno_text(errno));
        }
    }
}

}  // namespace tea::evaluation
