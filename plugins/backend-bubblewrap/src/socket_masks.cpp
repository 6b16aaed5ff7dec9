#include "socket_masks.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <tea/json_bytes.hpp>
#include <tea/plugin.hpp>

#include "host_sockets.hpp"
#include "paths.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

namespace {

// The directories the socket walk reads: the configured ones the view shares with the host, and
// the grants it shows inside the private temp directories, the runtime's prefix among them
// (read-only places a host process may have bound a socket in, which the target can neither fill
// nor change). The workspace is never walked: /proc/net/unix names what a host process bound
// there.
std::vector<fs::path> walked_directories(const Settings &settings, const TargetCall &call) {
    const auto &spec = call.spec;
    std::vector<fs::path> walked;
    for (const auto &dir : settings.socket_dirs) {
        std::error_code ec;
        const auto real = fs::weakly_canonical(dir, ec);  // /var/tmp may lead to /tmp
        if (!call.private_temp.hides(ec ? dir : real.string())) {
            walked.emplace_back(dir);
        }
    }
    const auto prefix = call.runtime_prefix.empty() ? std::vector<std::string>{}
                                                    : std::vector<std::string>{call.runtime_prefix};
    for (const auto *grants : {&spec.system_paths, &spec.read_only, &prefix}) {
        for (const auto &grant : *grants) {
            const bool configured =
                std::any_of(settings.socket_dirs.begin(), settings.socket_dirs.end(),
                            [&](const std::string &dir) { return inside(grant, dir); });
            if (configured && call.private_temp.in_replaced(grant) &&
                !inside(grant, call.private_root) &&
                std::find(walked.begin(), walked.end(), normal(grant)) == walked.end()) {
                walked.push_back(normal(grant));
            }
        }
    }
    return walked;
}

}  // namespace

nlohmann::json mask_sockets(const Settings &settings, const TargetCall &call,
                            std::vector<std::string> &view) {
    const auto &spec = call.spec;
    const auto &identity = call.identity;
    // Where no socket is masked: fresh in the sandbox, covered already, or the call's own. The
    // workspace is not among them: a host process (a language server, a dev server) may have
    // bound a socket there, and /proc/net/unix names it without any walk.
    std::vector<std::string> unmasked{"/dev",      "/proc",           "/sys",
                                      "/run/user", call.private_root, spec.temp_dir};
    unmasked.insert(unmasked.end(), spec.withhold.begin(), spec.withhold.end());
    SocketScanOptions options;
    options.directories = walked_directories(settings, call);
    options.max_entries = settings.socket_walk_entries;
    // Nor walked, so that a workspace the target filled with entries cannot use up the walk before
    // it reaches a host socket. Nor the host's temp directories the view replaces: nothing of
    // theirs is in the view, and a tree of any size there must neither cost a call nor stop it.
    options.skip.assign(unmasked.begin(), unmasked.end());
    options.skip.emplace_back(spec.workspace);
    options.skip.insert(options.skip.end(), call.private_temp.replaced().begin(),
                        call.private_temp.replaced().end());
    // Kept in the private root, which every sandbox covers: a target that could write it could
    // hide a socket from the next call's walk.
    options.cache_file = fs::path{call.private_root} / "socket-walk-cache";
    const auto scan = scan_host_sockets(options, identity);
    // A walk cut short may have missed a socket bound in another network namespace, which
    // /proc/net/unix does not list: refused rather than left reachable.
    if (!scan.walk_complete) {
        std::string dirs;
        for (const auto &d : options.directories) {
            dirs += (dirs.empty() ? "" : ", ") + d.string();
        }
        throw tea::sdk::Unavailable(
            "the search for host sockets under " + dirs + " met more than " +
            std::to_string(settings.socket_walk_entries) +
            " entries (three levels deep), so a socket there might be left reachable; "
            "clear those directories, or raise plugin.bubblewrap.socket_walk_entries or "
            "narrow plugin.bubblewrap.socket_dirs");
    }
    std::size_t mandatory = 0;
    std::size_t masked = 0;
    auto reachable = nlohmann::json::array();
    for (const auto &s : scan.sockets) {
        // Every path the view shows the socket at: none for one in the host's /tmp outside the
        // call's grants, two for one beneath a grant there that is a link.
        auto places = call.private_temp.view_paths(s.path);
        std::erase_if(places, [&](const std::string &p) {
            return std::any_of(unmasked.begin(), unmasked.end(),
                               [&](const std::string &place) { return inside(p, place); });
        });
        if (places.empty() || unreachable_ancestor(s.path, identity)) {
            continue;
        }
        // A newline or a quote in a host socket's name is no reason to leave it open: bwrap's
        // arguments travel NUL-separated, so any name can be masked.
        if (s.mandatory) {
            ++mandatory;
        }
        if (masked + places.size() <= settings.max_socket_masks) {
            for (const auto &p : places) {
                view.insert(view.end(), {"--ro-bind", "/dev/null", p});
            }
            masked += places.size();
        } else {
            reachable.push_back(tea::bytes::to_json(s.path));
        }
    }
    // A socket bound by a relative name that no holder's working directory places could be
    // anywhere the target can see: root's, the system's and this user's refuse the call, another
    // user's is reported as left reachable.
    for (const auto &u : scan.unlocated) {
        if (u.mandatory) {
            throw tea::sdk::Unavailable(
                "a host socket bound by the relative name \"" + u.path + "\" (owner uid " +
                std::to_string(u.owner) +
                ") cannot be found in its holders' working directories, so it cannot be "
                "masked; stop the process that holds it, or bind it by an absolute path");
        }
        reachable.push_back(tea::bytes::to_json(u.path));
    }
    // Only other users' sockets may be left open for lack of room; root's, the system's and this
    // user's never are.
    if (mandatory > settings.max_socket_masks) {
        throw tea::sdk::Unavailable(std::to_string(mandatory) +
                                    " host sockets of root, system accounts and this user "
                                    "must be masked, but the room is " +
                                    std::to_string(settings.max_socket_masks) +
                                    " (plugin.bubblewrap.max_socket_masks)");
    }
    return nlohmann::json{{"sandboxUid", identity.uid},
                          {"sandboxGid", identity.gid},
                          {"identityDropped", identity.dropped},
                          {"socketsMasked", masked},
                          {"socketMaskRoom", settings.max_socket_masks},
                          {"socketsLeftReachable", reachable}};
}

}  // namespace tea::bwrap
