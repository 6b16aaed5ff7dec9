#include "git/history.hpp"

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace tea::git {
namespace {

struct TreeEntryView {
    std::string_view mode;
    std::string_view name;
    git_oid id;
};

// Calls visit for every entry of a raw tree object; false when the tree is malformed.
template <typename Visit>
bool for_each_tree_entry(const unsigned char *data, std::size_t size, Visit &&visit) {
    const char *p = reinterpret_cast<const char *>(data);
    const char *end = p + size;
    while (p < end) {
        const char *space =
            static_cast<const char *>(std::memchr(p, ' ', static_cast<std::size_t>(end - p)));
        if (space == nullptr) return false;
        const char *nul = static_cast<const char *>(
            std::memchr(space + 1, '\0', static_cast<std::size_t>(end - space - 1)));
        if (nul == nullptr || end - nul - 1 < GIT_OID_RAWSZ) return false;
        TreeEntryView entry{std::string_view(p, static_cast<std::size_t>(space - p)),
                            std::string_view(space + 1, static_cast<std::size_t>(nul - space - 1)),
                            oid_from_raw(reinterpret_cast<const unsigned char *>(nul + 1))};
        visit(entry);
        p = nul + 1 + GIT_OID_RAWSZ;
    }
    return true;
}

enum class EntryKind { Directory, File, Submodule };
EntryKind kind_of(std::string_view mode) {
    if (mode == "40000" || mode == "040000") return EntryKind::Directory;
    if (mode == "160000") return EntryKind::Submodule;
    return EntryKind::File;
}

// Header lines of a commit or tag object, up to the blank line before the message.
template <typename Visit>
void for_each_header(const LoadedObject &object, Visit &&visit) {
    std::string_view text(reinterpret_cast<const char *>(object.data()), object.size());
    while (!text.empty()) {
        const std::size_t eol = text.find('\n');
        const std::string_view line = text.substr(0, eol);
        if (line.empty()) return;
        const std::size_t space = line.find(' ');
        if (space != std::string_view::npos) visit(line.substr(0, space), line.substr(space + 1));
        if (eol == std::string_view::npos) return;
        text.remove_prefix(eol + 1);
    }
}

}  // namespace

template <typename Visit>
void HistoryCollector::parse_tree(const LoadedObject &tree, const git_oid &id, Visit &&visit) {
    if (!for_each_tree_entry(tree.data(), tree.size(), visit))
        throw std::runtime_error("tree " + hex(id) + " is malformed");
}

HistoryCollector::HistoryCollector(git_odb *odb, SourcePacks &packs, PathNode &withheld)
    : odb_(odb), packs_(packs), withheld_(withheld) {
    included_.reserve(packs.object_count());
}

void HistoryCollector::collect(const git_oid &tip) {
    std::vector<git_oid> pending{tip};
    OidSet seen{tip};
    while (!pending.empty()) {
        const git_oid id = pending.back();
        pending.pop_back();
        const auto commit = read(id, GIT_OBJECT_COMMIT);
        if (!commit) continue;
        include(id, commits_);
        for_each_header(*commit, [&](std::string_view key, std::string_view value) {
            if (key == "tree") {
                if (auto tree = parse_oid(value)) walk_withheld_prefix(*tree, withheld_);
            } else if (key == "parent") {
                if (auto parent = parse_oid(value); parent && seen.insert(*parent).second)
                    pending.push_back(*parent);
            }
        });
    }
}

bool HistoryCollector::carry_tag(TagRef &tag) {
    std::vector<git_oid> chain;
    git_oid current = tag.target;
    for (int depth = 0; depth < 16; ++depth) {
        if (included_.count(current) != 0) {
            for (const auto &t : chain) include(t, tags_);
            if (!chain.empty()) tag.peeled = current;
            return true;
        }
        const auto object = load(current);
        if (!object || object->type != GIT_OBJECT_TAG) return false;
        std::optional<git_oid> next;
        for_each_header(*object, [&](std::string_view key, std::string_view value) {
            if (key == "object" && !next) next = parse_oid(value);
        });
        if (!next) return false;
        chain.push_back(current);
        current = *next;
    }
    return false;
}

void HistoryCollector::include(const git_oid &id, std::vector<git_oid> &list) {
    if (included_.insert(id).second) list.push_back(id);
}

void HistoryCollector::note_missing(const git_oid &id) {
    if (missing_seen_.insert(id).second) missing_.push_back(id);
}

bool HistoryCollector::exists(const git_oid &id) {
    return packs_.find(id) || git_odb_exists(odb_, &id) != 0;
}

// nullopt when the project does not hold the object.
std::optional<LoadedObject> HistoryCollector::load(const git_oid &id) {
    LoadedObject object;
    if (auto packed = packs_.read(id)) {
        object.type = static_cast<git_object_t>(packed->type);
        object.bytes = std::move(packed->bytes);
        return object;
    }
    git_odb_object *raw = nullptr;
    const int rc = git_odb_read(&raw, odb_, &id);
    if (rc == GIT_ENOTFOUND) return std::nullopt;
    if (rc != 0)
        throw std::runtime_error("cannot read object " + hex(id) + ": " + last_git_error());
    object.odb.reset(raw);
    object.type = git_odb_object_type(raw);
    return object;
}

std::optional<LoadedObject> HistoryCollector::read(const git_oid &id, git_object_t expected) {
    auto object = load(id);
    if (!object) {
        note_missing(id);
        return std::nullopt;
    }
    if (object->type != expected)
        throw std::runtime_error("object " + hex(id) + " is not a " +
                                 git_object_type2string(expected));
    return object;
}

void HistoryCollector::add_blob(const git_oid &id) {
    // One hash lookup for the common case, a blob already carried.
    const auto [it, inserted] = included_.insert(id);
    if (!inserted) return;
    if (exists(id)) {
        blobs_.push_back(id);
        return;
    }
    included_.erase(it);
    note_missing(id);
}

// A tree at a position where every entry, at any depth, is carried.
void HistoryCollector::walk_tree(const git_oid &root) {
    if (included_.count(root) != 0) return;
    std::vector<git_oid> pending{root};
    while (!pending.empty()) {
        const git_oid id = pending.back();
        pending.pop_back();
        if (included_.count(id) != 0) continue;
        const auto tree = read(id, GIT_OBJECT_TREE);
        if (!tree) continue;
        include(id, trees_);
        parse_tree(*tree, id, [&](const TreeEntryView &entry) {
            switch (kind_of(entry.mode)) {
                case EntryKind::Directory:
                    if (included_.count(entry.id) == 0) pending.push_back(entry.id);
                    break;
                case EntryKind::File:
                    add_blob(entry.id);
                    break;
                case EntryKind::Submodule:
                    break;  // a submodule's commit is not stored here
            }
        });
    }
}

// A tree on the way to a withheld path (the root tree, or "a" for "a/b"): its withheld entry is
// left out and named for a replace ref, every other entry is carried.
void HistoryCollector::walk_withheld_prefix(const git_oid &id, PathNode &node) {
    if (!node.visited.insert(id).second) return;
    const auto tree = read(id, GIT_OBJECT_TREE);
    if (!tree) return;
    include(id, trees_);
    parse_tree(*tree, id, [&](const TreeEntryView &entry) {
        const EntryKind kind = kind_of(entry.mode);
        const auto child = node.children.find(entry.name);
        if (child != node.children.end() && kind != EntryKind::Submodule) {
            if (child->second.withheld) {
                replaced_.emplace(hex(entry.id),
                                  kind == EntryKind::Directory ? GIT_OBJECT_TREE : GIT_OBJECT_BLOB);
                return;
            }
            if (kind == EntryKind::Directory) {
                walk_withheld_prefix(entry.id, child->second);
                return;
            }
        }
        switch (kind) {
            case EntryKind::Directory:
                walk_tree(entry.id);
                break;
            case EntryKind::File:
                add_blob(entry.id);
                break;
            case EntryKind::Submodule:
                break;
        }
    });
}

}  // namespace tea::git
