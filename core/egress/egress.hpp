// A call's route out, as the core sees it: the host:port items a call lists, and the session an
// egress plugin serves for the call's duration. What the route admits is the plugin's decision;
// the core only names the items, carries the plugin's answer into the launch spec and keeps the
// records it hands back.
#pragma once

#include <tea/plugin.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/loader.hpp"

namespace tea::egress {

struct Item {
    std::string host;  // as written; an IPv6 address without its brackets
    std::uint16_t port = 0;
    // Not pinned: the resolved addresses allowed (empty: any). Pinned: the addresses connected
    // to, in order, without resolving the host.
    std::vector<std::string> addresses;
    bool pinned = false;
};

// HOST:PORT[=ADDR,ADDR...] filters what HOST resolves to; HOST:PORT@ADDR[,ADDR...] pins HOST to
// literal addresses. An IPv6 host in brackets ([::1]:443). Throws tea::Error (exit 2) naming the
// option. The host's spelling is checked by the plugin's policy, not here.
Item parse_item(std::string_view text);

// {"host", "port", "addresses"?, "pinned"?}; the form both the plugin's request and exec --json
// use.
std::string items_to_json(const std::vector<Item> &items);

// What a session hands the call.
struct Route {
    std::string socket;                      // the proxy's Unix socket
    std::uint16_t port = 0;                  // the loopback port inside the confinement
    std::string shim;                        // the in-namespace relay the backend runs
    std::map<std::string, std::string> env;  // the variables the target starts with
};

// One open session of an egress plugin: opened by the constructor, ended by close() or, on any
// failure in between, by the destructor, so the proxy never outlives its call.
class OpenRoute {
   public:
    OpenRoute(const plugins::Instance &instance, const std::string &entry,
              const std::vector<Item> &items, const std::string &socket_dir);
    OpenRoute(const OpenRoute &) = delete;
    OpenRoute &operator=(const OpenRoute &) = delete;
    ~OpenRoute();

    [[nodiscard]] const Route &route() const { return route_; }
    // Ends the session; the plugin's records (a JSON object). Throws std::runtime_error when the
    // plugin reports a failure or hands back no object.
    nlohmann::json close();

   private:
    const plugins::Instance &instance_;
    const tea_egress_ops *ops_;
    tea_egress_session *handle_ = nullptr;
    Route route_;
};

}  // namespace tea::egress
