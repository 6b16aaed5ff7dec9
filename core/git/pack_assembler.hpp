// What each carried object becomes in the private pack: its entry in the project's pack copied as
// stored, without inflating it, when that entry is sound and needs nothing the private pack
// lacks; otherwise the whole object, read through libgit2 and compressed again.
#pragma once

#include <git2.h>

#include <cstddef>

#include "git/object_id.hpp"
#include "git/pack_reader.hpp"
#include "git/pack_writer.hpp"

namespace tea::git {

class PackAssembler {
   public:
    // included: every object the private pack will hold.
    PackAssembler(git_odb *odb, SourcePacks &packs, const OidSet &included)
        : odb_(odb), packs_(packs), included_(included) {}

    // Writes the entry of object id. Throws std::runtime_error when libgit2 cannot read it.
    void write(PackWriter &writer, const git_oid &id);

   private:
    bool copy_entry(PackWriter &writer, SourcePack &pack, std::size_t pack_index,
                    const PackEntry &entry);

    git_odb *odb_;
    SourcePacks &packs_;
    const OidSet &included_;
};

}  // namespace tea::git
