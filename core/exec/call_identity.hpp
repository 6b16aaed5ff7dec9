// An identity of its own for each call a root runtime runs ([confinement] uid_range), the way
// systemd's DynamicUser and container runtimes hand out ids: a uid and a gid of the same number,
// taken for the call and given back when it ends, so that two calls running at the same time
// (of one runtime or of several) never share one, and neither can signal, trace or read what
// the other's identity owns.
//
// An id is taken by an exclusive flock on /run/tea-evaluate/identities/<id>, a directory only root
// may enter: the kernel lets go of it when the holder dies, so a killed runtime never keeps one.
// It is not taken while an account or a group has the number, nor while any process of the host
// still runs as it (one a killed call left behind, say): such an id is passed over.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>

#include "util/fd.hpp"

namespace tea::exec {

class CallIdentity {
   public:
    // The first free id of [first, last]. Throws tea::Error (exit 12) naming the range when
    // none is free, and when the lock directory cannot be made or is not root's alone.
    CallIdentity(std::uint32_t first, std::uint32_t last,
                 const std::filesystem::path &locks = "/run/tea-evaluate/identities");
    CallIdentity(const CallIdentity &) = delete;
    CallIdentity &operator=(const CallIdentity &) = delete;
    CallIdentity(CallIdentity &&) = default;
    CallIdentity &operator=(CallIdentity &&) = default;
    ~CallIdentity() = default;

    [[nodiscard]] uid_t uid() const { return id_; }
    [[nodiscard]] gid_t gid() const { return id_; }

   private:
    UniqueFd lock_;
    std::uint32_t id_ = 0;
};

// Whether any process of the host runs as `uid`, by the kernel's own count of the uid's processes
// (the one RLIMIT_NPROC limits, which includes those in user namespaces the uid made). Takes root:
// it asks as that uid, in a short-lived child. Throws tea::Error (exit 12) when it cannot ask.
bool processes_remain(uid_t uid);

}  // namespace tea::exec
