#include "exec/lending.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "exec/call_mounts.hpp"
#include "exec/idmap.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace tea::exec {

Lending::Request Lending::Request::of(const Lend &lend, const std::vector<std::string> &withhold) {
    Request request;
    request.trees.assign(lend.paths.begin(), lend.paths.end());
    std::sort(request.trees.begin(), request.trees.end());
    request.trees.erase(std::unique(request.trees.begin(), request.trees.end()),
                        request.trees.end());
    request.uid = lend.uid;
    request.gid = lend.gid;
    request.kept.assign(withhold.begin(), withhold.end());
    return request;
}

Lending::Lending(const Request &request) {
    std::vector<UniqueFd> trees;
    std::vector<TreeAt> at;
    std::vector<std::filesystem::path> by_ownership;
    for (const auto &path : request.trees) {
        const auto normal = path.lexically_normal();
        for (const auto &other : request.trees) {
            if (other != path && within(normal, other.lexically_normal())) {
                // Its copy would be taken from the host, not from the outer tree's.
                throw runtime_failure("cannot lend " + path.string() + ": it lies inside " +
                                      other.string() + ", which is lent too");
            }
        }
        // The tree's own top, never a link put in its place; the copy comes from this descriptor.
        const UniqueFd top{::open(normal.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
        struct stat st {};
        if (!top || ::fstat(top.get(), &st) != 0) {
            throw runtime_failure("cannot lend " + path.string() +
                                  " to the target's identity: " + errno_text(errno));
        }
        DetachedTree copy;
        try {
            copy = detached_tree(top.get(), {st.st_uid, st.st_gid, request.uid, request.gid});
        } catch (const Error &e) {
            throw runtime_failure("cannot lend " + path.string() + ": " + e.what());
        }
        Lent lent{normal, copy.refusal == 0, {}, copy.refusal};
        if (copy.refusal != 0) {
            lent.filesystem = filesystem_name(top.get());
            by_ownership.push_back(normal);
        }
        lent_.push_back(std::move(lent));
        at.push_back({normal, copy.tree.get()});
        trees.push_back(std::move(copy.tree));
    }
    if (!by_ownership.empty()) {
        loan_ =
            OwnershipLoan{by_ownership, request.uid, request.gid, request.kept, request.disposable};
    }
    namespace_ = call_mount_namespace(at, request.uid, request.gid, request.kept);
}

}  // namespace tea::exec
