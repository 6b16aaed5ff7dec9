#include "git/pack_assembler.hpp"

#include <optional>
#include <stdexcept>

#include "git/libgit2.hpp"

namespace tea::git {

void PackAssembler::write(PackWriter &writer, const git_oid &id) {
    writer.begin_entry(id);
    if (auto location = packs_.find(id)) {
        SourcePack &pack = packs_.pack(location->pack);
        if (auto entry = pack.entry(location->pos)) {
            if (copy_entry(writer, pack, location->pack, *entry)) return;
        }
    }
    git_odb_object *raw = nullptr;
    if (git_odb_read(&raw, odb_, &id) != 0)
        throw std::runtime_error("cannot read object " + hex(id) + ": " + last_git_error());
    const GitPtr<git_odb_object, git_odb_object_free> object(raw);
    writer.append_whole_object(git_odb_object_type(raw), git_odb_object_data(raw),
                               git_odb_object_size(raw));
}

// A delta is kept only when its base is carried too and lives in the same source pack (deltas
// within one pack never form a cycle); a delta on a withheld base is written whole instead, so
// the private pack needs nothing it lacks.
bool PackAssembler::copy_entry(PackWriter &writer, SourcePack &pack, std::size_t pack_index,
                               const PackEntry &entry) {
    const unsigned char *p = pack.pack_data();
    if (entry.type != kPackOfsDelta && entry.type != kPackRefDelta) {
        writer.append(p + entry.offset, entry.end - entry.offset);
        return true;
    }
    std::optional<git_oid> base =
        entry.type == kPackRefDelta ? entry.base_id : pack.id_at_offset(entry.base);
    if (!base || included_.count(*base) == 0) return false;
    const auto base_location = packs_.find(*base);
    if (!base_location || base_location->pack != pack_index) return false;
    writer.append_header(kPackRefDelta, entry.size);
    writer.append(base->id, GIT_OID_RAWSZ);
    writer.append(p + entry.data, entry.end - entry.data);
    return true;
}

}  // namespace tea::git
