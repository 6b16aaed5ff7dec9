// The walk of the evaluated commit's history that decides what the private repository holds:
// every commit reachable from it, every tree and blob those commits reach except through a
// withheld folder, the tag objects on the way to a carried object, and the ids of the withheld
// folders (and files) that replace refs must stand in for. Objects are read in place from the
// project's packs when SourcePack can, and through libgit2 otherwise.
#pragma once

#include <git2.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "git/libgit2.hpp"
#include "git/object_id.hpp"
#include "git/pack_reader.hpp"
#include "git/withheld_paths.hpp"

namespace tea::git {

struct TagRef {
    std::string name;
    git_oid target;  // what the ref names (a tag object or the object itself)
    std::optional<git_oid> peeled;
};

// An object read either in place from one of the project's packs or, failing that, by libgit2
// (loose objects, alternates, packs SourcePack does not read).
struct LoadedObject {
    git_object_t type = GIT_OBJECT_INVALID;
    std::shared_ptr<const Bytes> bytes;
    GitPtr<git_odb_object, git_odb_object_free> odb;
    const unsigned char *data() const {
        return bytes ? bytes->data()
                     : static_cast<const unsigned char *>(git_odb_object_data(odb.get()));
    }
    std::size_t size() const { return bytes ? bytes->size() : git_odb_object_size(odb.get()); }
};

class HistoryCollector {
   public:
    HistoryCollector(git_odb *odb, SourcePacks &packs, PathNode &withheld);

    // Walks every commit reachable from tip. Throws std::runtime_error for an object of the
    // wrong type, a malformed tree or an object libgit2 cannot read; an object the project does
    // not hold is noted as missing.
    void collect(const git_oid &tip);

    // Keeps a tag ref when what it finally names was carried, with every tag object on the way.
    bool carry_tag(TagRef &tag);

    const std::vector<git_oid> &commits() const { return commits_; }
    const std::vector<git_oid> &trees() const { return trees_; }
    const std::vector<git_oid> &blobs() const { return blobs_; }
    const std::vector<git_oid> &tags() const { return tags_; }
    const OidSet &included() const { return included_; }
    const std::vector<git_oid> &missing() const { return missing_; }
    // Withheld entries by id, with the type their replacement must have.
    const std::map<std::string, git_object_t> &replaced() const { return replaced_; }

   private:
    void include(const git_oid &id, std::vector<git_oid> &list);
    void note_missing(const git_oid &id);
    bool exists(const git_oid &id);
    std::optional<LoadedObject> load(const git_oid &id);
    std::optional<LoadedObject> read(const git_oid &id, git_object_t expected);
    void add_blob(const git_oid &id);
    void walk_tree(const git_oid &root);
    void walk_withheld_prefix(const git_oid &id, PathNode &node);
    template <typename Visit>
    void parse_tree(const LoadedObject &tree, const git_oid &id, Visit &&visit);

    git_odb *odb_;
    SourcePacks &packs_;
    PathNode &withheld_;
    OidSet included_;
    OidSet missing_seen_;
    std::vector<git_oid> commits_, trees_, blobs_, tags_, missing_;
    std::map<std::string, git_object_t> replaced_;
};

}  // namespace tea::git
