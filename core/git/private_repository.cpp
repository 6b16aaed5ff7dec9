#include "git/private_repository.hpp"

#include <git2.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "git/git_directory.hpp"
#include "git/history.hpp"
#include "git/libgit2.hpp"
#include "git/object_id.hpp"
#include "git/pack_assembler.hpp"
#include "git/pack_reader.hpp"
#include "git/pack_writer.hpp"
#include "git/repository_cache.hpp"
#include "git/repository_files.hpp"
#include "git/withheld_paths.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEmptyTreeId = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
constexpr std::string_view kEmptyBlobId = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

using Odb = GitPtr<git_odb, git_odb_free>;
using Commit = GitPtr<git_commit, git_commit_free>;
using Config = GitPtr<git_config, git_config_free>;
using Reference = GitPtr<git_reference, git_reference_free>;
using RefIterator = GitPtr<git_reference_iterator, git_reference_iterator_free>;

struct OpenedProject {
    Repository repository;
    fs::path common_dir;
    git_oid commit{};
    std::string commit_hex;
    std::vector<TagRef> tags;
};

[[noreturn]] void fail(const PrivateRepositoryRequest &request, const std::string &commit,
                       const std::string &reason) {
    throw PrivateRepositoryError("cannot build the private repository of " +
                                 request.project_repository.string() + " at commit " + commit +
                                 ": " + reason);
}

OpenedProject open_project(const PrivateRepositoryRequest &request) {
    OpenedProject project;
    try {
        // A work tree's .git is taken by the rules that keep a planted one from naming another
        // repository; a git directory named directly is the caller's.
        std::error_code ec;
        const auto path = fs::canonical(request.project_repository, ec);
        if (ec) throw GitDirectoryError(request.project_repository.string() + ": " + ec.message());
        const auto own = work_tree_git_directory(path);
        const GitDirectory directory = own ? *own : git_directory_at(path);
        project.repository = open_self_contained(directory);
        project.common_dir = directory.common_dir;
    } catch (const GitDirectoryError &e) {
        fail(request, request.commit,
             std::string{"it is not a repository the runtime reads ("} + e.what() + ")");
    }
    git_repository *raw = project.repository.get();

    git_object *object = nullptr;
    if (request.commit.empty() || request.commit.front() == '-' ||
        git_revparse_single(&object, raw, request.commit.c_str()) != 0)
        fail(request, request.commit,
             "the commit does not exist in the repository (" + last_git_error() + ")");
    Object resolved(object);
    git_object *peeled = nullptr;
    if (git_object_peel(&peeled, resolved.get(), GIT_OBJECT_COMMIT) != 0)
        fail(request, request.commit, "it does not name a commit (" + last_git_error() + ")");
    Object commit(peeled);
    project.commit = *git_object_id(commit.get());
    project.commit_hex = hex(project.commit);

    git_reference_iterator *iterator = nullptr;
    if (git_reference_iterator_glob_new(&iterator, raw, "refs/tags/*") != 0)
        fail(request, project.commit_hex, "cannot list its tags (" + last_git_error() + ")");
    RefIterator refs(iterator);
    git_reference *ref = nullptr;
    while (git_reference_next(&ref, refs.get()) == 0) {
        Reference owned(ref);
        git_reference *resolved_ref = nullptr;
        if (git_reference_resolve(&resolved_ref, owned.get()) != 0) continue;
        Reference direct(resolved_ref);
        if (const git_oid *target = git_reference_target(direct.get()))
            project.tags.push_back(TagRef{git_reference_name(owned.get()), *target, std::nullopt});
    }
    std::sort(project.tags.begin(), project.tags.end(),
              [](const TagRef &a, const TagRef &b) { return a.name < b.name; });
    return project;
}

std::string packed_refs(const std::vector<TagRef> &tags,
                        const std::map<std::string, git_object_t> &replaced) {
    // Replace refs and tags in one sorted packed-refs file: one file to write, and git reads it
    // once instead of a loose file per ref.
    std::map<std::string, std::pair<std::string, std::string>> refs;
    for (const auto &[id, type] : replaced)
        refs["refs/replace/" + id] = {
            std::string(type == GIT_OBJECT_TREE ? kEmptyTreeId : kEmptyBlobId), ""};
    for (const auto &tag : tags)
        refs[tag.name] = {hex(tag.target), tag.peeled ? hex(*tag.peeled) : ""};
    std::string out = "# pack-refs with: peeled fully-peeled sorted \n";
    for (const auto &[name, target] : refs) {
        out += target.first + ' ' + name + '\n';
        if (!target.second.empty()) out += '^' + target.second + '\n';
    }
    return out;
}

void write_repository_skeleton(const fs::path &root, const std::string &commit_hex) {
    for (const char *dir : {"objects/pack", "objects/info", "refs/heads", "refs/tags", "info"})
        fs::create_directories(root / dir);
    // Detached HEAD: the target's checkout is on no branch, as in a run without confinement.
    write_file(root / "HEAD", commit_hex + "\n");
    // Deliberately no [remote] and no extensions.partialClone: without a promisor remote no git
    // version fetches a missing object, so a confined run never reaches the network through git.
    write_file(root / "config",
               "[core]\n"
               "\trepositoryformatversion = 0\n"
               "\tfilemode = true\n"
               "\tbare = true\n"
               "\tlogallrefupdates = false\n"
               "[gc]\n"
               "\tauto = 0\n");
    write_file(root / "description", "private repository of an evaluated commit\n");
}

void copy_shallow(const fs::path &common_dir, const fs::path &root, const OidSet &included) {
    const auto shallow = read_file(common_dir / "shallow");
    if (!shallow) return;
    std::string out;
    std::istringstream in(*shallow);
    std::string line;
    while (std::getline(in, line))
        if (auto id = parse_oid(line); id && included.count(*id) != 0) out += line + '\n';
    if (!out.empty()) write_file(root / "shallow", out);
}

PrivateRepositoryResult build_into(const PrivateRepositoryRequest &request, OpenedProject &project,
                                   const std::vector<std::string> &withheld, const fs::path &root) {
    git_odb *raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, project.repository.get()) != 0)
        fail(request, project.commit_hex, "cannot open its object database");
    Odb odb(raw_odb);

    if (git_odb_exists(odb.get(), &project.commit) == 0)
        fail(request, project.commit_hex, "the commit's object is not on disk");

    SourcePacks packs(project.common_dir / "objects");
    PathNode trie = build_trie(withheld);
    HistoryCollector history(odb.get(), packs, trie);
    history.collect(project.commit);
    if (history.included().count(project.commit) == 0)
        fail(request, project.commit_hex, "the commit's object cannot be read");

    PrivateRepositoryResult result;
    result.commit_id = project.commit_hex;
    std::vector<TagRef> carried;
    for (auto &tag : project.tags)
        if (history.carry_tag(tag)) carried.push_back(tag);

    // The replacements must exist as objects: git refuses a replace ref to a missing object.
    bool needs_empty_tree = false, needs_empty_blob = false;
    for (const auto &[id, type] : history.replaced())
        (type == GIT_OBJECT_TREE ? needs_empty_tree : needs_empty_blob) = true;
    const git_oid empty_tree = *parse_oid(kEmptyTreeId);
    const git_oid empty_blob = *parse_oid(kEmptyBlobId);

    const auto &inc = history.included();
    const bool write_empty_tree = needs_empty_tree && inc.count(empty_tree) == 0;
    const bool write_empty_blob = needs_empty_blob && inc.count(empty_blob) == 0;
    const std::size_t total = history.commits().size() + history.tags().size() +
                              history.trees().size() + history.blobs().size() +
                              (write_empty_tree ? 1 : 0) + (write_empty_blob ? 1 : 0);
    if (total > 0xffffffffU) fail(request, project.commit_hex, "the history is too large");

    write_repository_skeleton(root, project.commit_hex);
    {
        PackWriter writer(root / "objects" / "pack", static_cast<std::uint32_t>(total));
        PackAssembler assembler(odb.get(), packs, inc);
        for (const auto *list :
             {&history.commits(), &history.tags(), &history.trees(), &history.blobs()})
            for (const auto &id : *list) assembler.write(writer, id);
        if (write_empty_tree) {
            writer.begin_entry(empty_tree);
            writer.append_whole_object(GIT_OBJECT_TREE, "", 0);
        }
        if (write_empty_blob) {
            writer.begin_entry(empty_blob);
            writer.append_whole_object(GIT_OBJECT_BLOB, "", 0);
        }
        writer.finish();
    }
    write_file(root / "packed-refs", packed_refs(carried, history.replaced()));
    copy_shallow(project.common_dir, root, inc);

    result.commits = history.commits().size();
    result.trees = history.trees().size();
    result.blobs = history.blobs().size();
    result.tags = carried.size();
    for (const auto &id : history.missing()) result.missing_objects.push_back(hex(id));
    return result;
}

// ---------------------------------------------------------------------------------------------
// Checkout

Config open_config(const fs::path &path) {
    git_config *raw = nullptr;
    if (git_config_open_ondisk(&raw, path.c_str()) != 0)
        throw std::runtime_error("cannot open " + path.string() + ": " + last_git_error());
    return Config(raw);
}

// The ids the private repository replaces: the withheld folders (and, by the id limit, any
// identical tree elsewhere), which git shows as empty and the checkout therefore leaves out.
OidSet replaced_ids(git_repository *repository) {
    OidSet ids;
    git_reference_iterator *raw = nullptr;
    if (git_reference_iterator_glob_new(&raw, repository, "refs/replace/*") != 0)
        throw std::runtime_error("cannot list replace refs: " + last_git_error());
    RefIterator refs(raw);
    const char *name = nullptr;
    while (git_reference_next_name(&name, refs.get()) == 0) {
        const std::string_view prefix = "refs/replace/";
        if (auto id = parse_oid(std::string_view(name).substr(prefix.size()))) ids.insert(*id);
    }
    return ids;
}

struct IndexBuilder {
    git_index *index;
    const OidSet &replaced;
    std::string error;
};

int add_to_index(const char *root, const git_tree_entry *entry, void *payload) {
    auto &builder = *static_cast<IndexBuilder *>(payload);
    // libgit2 does not read replace refs, so a replaced tree is skipped before it would be
    // opened (it is absent) and a replaced blob is left out like the folder it stands for.
    if (builder.replaced.count(*git_tree_entry_id(entry)) != 0) return 1;
    if (git_tree_entry_type(entry) == GIT_OBJECT_TREE) return 0;
    const std::string path = std::string(root) + git_tree_entry_name(entry);
    git_index_entry item{};
    item.mode = static_cast<std::uint32_t>(git_tree_entry_filemode_raw(entry));
    item.id = *git_tree_entry_id(entry);
    item.path = path.c_str();
    if (git_index_add(builder.index, &item) != 0) {
        builder.error = "cannot add " + path + " to the index: " + last_git_error();
        return -1;
    }
    return 0;
}

// Writes the repository's index of HEAD's files except the withheld folders; with write_files,
// writes those files into the work tree too.
void index_head(const fs::path &repository_dir, const fs::path &checkout, bool write_files) {
    git_repository *raw = nullptr;
    if (git_repository_open_bare(&raw, repository_dir.c_str()) != 0)
        throw std::runtime_error("cannot open it: " + last_git_error());
    Repository repository(raw);
    // In memory only; the configuration is changed once the checkout has succeeded.
    if (git_repository_set_workdir(raw, checkout.c_str(), 0) != 0)
        throw std::runtime_error("cannot use the checkout as its work tree: " + last_git_error());
    git_oid head;
    if (git_reference_name_to_id(&head, raw, "HEAD") != 0)
        throw std::runtime_error("its HEAD names no commit: " + last_git_error());
    git_commit *commit_raw = nullptr;
    if (git_commit_lookup(&commit_raw, raw, &head) != 0)
        throw std::runtime_error("cannot read commit " + hex(head) + ": " + last_git_error());
    Commit commit(commit_raw);
    git_tree *tree_raw = nullptr;
    if (git_commit_tree(&tree_raw, commit.get()) != 0)
        throw std::runtime_error("cannot read the tree of " + hex(head) + ": " + last_git_error());
    Tree tree(tree_raw);

    git_index *index_raw = nullptr;
    if (git_repository_index(&index_raw, raw) != 0)
        throw std::runtime_error("cannot open its index: " + last_git_error());
    Index index(index_raw);
    if (git_index_clear(index.get()) != 0)
        throw std::runtime_error("cannot clear its index: " + last_git_error());
    const OidSet replaced = replaced_ids(raw);
    IndexBuilder builder{index.get(), replaced, {}};
    if (git_tree_walk(tree.get(), GIT_TREEWALK_PRE, add_to_index, &builder) != 0)
        throw std::runtime_error(builder.error.empty() ? "cannot read the tree of " + hex(head) +
                                                             ": " + last_git_error()
                                                       : builder.error);

    // libgit2's initialiser, not its INIT macro, whose partial brace list Clang warns about.
    git_checkout_options options{};
    if (git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION) != 0)
        throw std::runtime_error("cannot set up a checkout: " + last_git_error());
    options.checkout_strategy = GIT_CHECKOUT_FORCE;
    if (write_files && git_checkout_index(raw, index.get(), &options) != 0)
        throw std::runtime_error("cannot check out commit " + hex(head) + ": " + last_git_error());
    if (git_index_write(index.get()) != 0)
        throw std::runtime_error("cannot write the index: " + last_git_error());
}

void configure_work_tree(const fs::path &repository, const fs::path &work_tree) {
    Config config = open_config(repository / "config");
    if (git_config_set_bool(config.get(), "core.bare", 0) != 0 ||
        git_config_set_string(config.get(), "core.worktree", work_tree.c_str()) != 0)
        throw std::runtime_error("cannot configure the work tree: " + last_git_error());
}

}  // namespace

PrivateRepositoryResult build_private_repository(const PrivateRepositoryRequest &request,
                                                 const std::filesystem::path &cache_directory) {
    ensure_libgit2();
    std::error_code ec;
    if (request.destination.empty()) fail(request, request.commit, "no destination was given");
    if (fs::symlink_status(request.destination, ec).type() != fs::file_type::not_found)
        fail(request, request.commit,
             "the destination " + request.destination.string() + " already exists");
    std::vector<std::string> withheld;
    try {
        withheld = normalize_withheld(request.withheld_paths);
    } catch (const std::invalid_argument &error) {
        fail(request, request.commit, error.what());
    }

    OpenedProject project = open_project(request);
    const fs::path destination = fs::absolute(request.destination);
    try {
        std::string key;
        if (!cache_directory.empty()) {
            key = repository_cache_key(project.common_dir, project.commit_hex, withheld,
                                       project.tags);
            if (auto cached = reuse_cached(cache_directory / key, project.repository.get(),
                                           project.commit_hex, destination))
                return *cached;
        }
        TempDirectory temp(destination);
        PrivateRepositoryResult result = build_into(request, project, withheld, temp.path());
        if (!key.empty()) store_in_cache(cache_directory, key, temp.path(), result);
        temp.commit_to(destination);
        return result;
    } catch (const PrivateRepositoryError &) {
        throw;
    } catch (const std::exception &error) {
        fail(request, project.commit_hex, error.what());
    }
}

void attach_worktree(const std::filesystem::path &checkout_dir,
                     const std::filesystem::path &private_repository) {
    ensure_libgit2();
    const fs::path checkout = fs::absolute(checkout_dir).lexically_normal();
    const auto refuse = [&](const std::string &reason) {
        throw PrivateRepositoryError("cannot attach the checkout " + checkout.string() +
                                     " to the private repository " + private_repository.string() +
                                     ": " + reason);
    };
    std::error_code ec;
    const fs::path repository = fs::canonical(private_repository, ec);
    if (ec) refuse("the repository does not exist");

    bool created = false;
    const auto status = fs::symlink_status(checkout, ec);
    if (status.type() == fs::file_type::not_found) {
        if (!fs::create_directories(checkout, ec) || ec) refuse("cannot create the checkout");
        created = true;
    } else if (status.type() != fs::file_type::directory || !fs::is_empty(checkout, ec)) {
        // Files already there would either be overwritten or make `git status` lie.
        refuse("the checkout exists and is not an empty directory");
    }
    try {
        index_head(repository, checkout, true);
        // Attached last, so a failed checkout leaves the private repository as it was.
        configure_work_tree(repository, checkout);
        write_file(checkout / ".git", "gitdir: " + repository.string() + "\n");
    } catch (const std::exception &error) {
        if (created) {
            fs::remove_all(checkout, ec);
        } else {
            for (const auto &item : fs::directory_iterator(checkout, ec))
                fs::remove_all(item.path(), ec);
        }
        fs::remove(repository / "index", ec);
        refuse(error.what());
    }
}

void attach_in_place(const std::filesystem::path &work_tree,
                     const std::filesystem::path &private_repository) {
    ensure_libgit2();
    std::error_code ec;
    const fs::path tree = fs::canonical(work_tree, ec);
    const fs::path repository = fs::canonical(private_repository, ec);
    const auto refuse = [&](const std::string &reason) {
        throw PrivateRepositoryError("cannot attach the work tree " + work_tree.string() +
                                     " to the private repository " + private_repository.string() +
                                     ": " + reason);
    };
    if (tree.empty() || !fs::is_directory(tree, ec)) refuse("the work tree is not a directory");
    if (repository.empty()) refuse("the repository does not exist");
    try {
        index_head(repository, tree, false);
        configure_work_tree(repository, tree);
    } catch (const std::exception &error) {
        fs::remove(repository / "index", ec);
        refuse(error.what());
    }
}

}  // namespace tea::git
