// The egress plugin "connect": one CONNECT proxy per call that lists egress items, served on a
// Unix socket in a directory the core makes for the call, and ended with the call.
//
// open   {"entry": name, "items": [{"host", "port", "addresses"?, "pinned"?}], "socketDir": path}
//        An item with "pinned": true is connected to its addresses, in order, without resolving
//        its host (ABI 1.8).
//        -> {"socket": path, "port": P, "shim": path, "env": {NAME: VALUE}}
//        The shim (tea-egress-shim, shipped beside the sandbox helper) is what the backend runs
//        inside the confinement to listen on 127.0.0.1:P and carry each connection to the socket.
// close  -> {"entry", "tunnels", "refusals": [{status, host, port, entry, reason, address,
//        count}], "omitted"}
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tea/plugin.hpp>
#include <vector>

#include "policy.hpp"
#include "proxy.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kSocketName = "connect.sock";
constexpr std::size_t kMaxItems = 256;

struct Settings {
    // The loopback port the shim listens on inside the call's network namespace. The namespace
    // is the call's own, so the port is free whatever the host runs.
    std::uint16_t loopback_port = 3128;
    std::size_t max_tunnels = 128;
};

std::uint64_t unsigned_value(const json &value, const std::string &key, std::uint64_t min,
                             std::uint64_t max) {
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() < min ||
        value.get<std::uint64_t>() > max) {
        throw tea::sdk::Invalid("plugin.connect." + key + ": expected an integer from " +
                                std::to_string(min) + " to " + std::to_string(max));
    }
    return value.get<std::uint64_t>();
}

Settings parse_settings(std::string_view text) {
    const auto doc = json::parse(text, nullptr, false);
    if (!doc.is_object()) {
        throw tea::sdk::Invalid("[plugin.connect] must be a table");
    }
    Settings s;
    for (const auto &[key, value] : doc.items()) {
        if (key == "loopback_port") {
            s.loopback_port = static_cast<std::uint16_t>(unsigned_value(value, key, 1, 65535));
        } else if (key == "max_tunnels") {
            s.max_tunnels = static_cast<std::size_t>(unsigned_value(value, key, 1, 4096));
        } else {
            throw tea::sdk::Invalid("plugin.connect." + key +
                                    ": unknown key (known: loopback_port, max_tunnels)");
        }
    }
    return s;
}

// The shim ships beside the sandbox helper: <prefix>/lib/tea-evaluate/plugins/x.so and
// <prefix>/libexec/tea-evaluate/tea-egress-shim.
std::string shim_path() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&shim_path), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    const auto prefix =
        fs::path{info.dli_fname}.parent_path().parent_path().parent_path().parent_path();
    return (prefix / "libexec" / "tea-evaluate" / "tea-egress-shim").string();
}

std::string string_field(const json &doc, const char *name, const std::string &where) {
    if (!doc.contains(name) || !doc[name].is_string() || doc[name].get<std::string>().empty()) {
        throw tea::sdk::Invalid(where + name + ": expected a non-empty string");
    }
    return doc[name].get<std::string>();
}

std::vector<tea::egress::EgressItem> parse_items(const json &doc) {
    if (!doc.contains("items") || !doc["items"].is_array() || doc["items"].empty() ||
        doc["items"].size() > kMaxItems) {
        throw tea::sdk::Invalid("items: expected an array of 1 to " + std::to_string(kMaxItems) +
                                " {\"host\", \"port\", \"addresses\", \"pinned\"} items");
    }
    std::vector<tea::egress::EgressItem> items;
    for (std::size_t i = 0; i < doc["items"].size(); ++i) {
        const auto &item = doc["items"][i];
        const auto where = "items[" + std::to_string(i) + "].";
        if (!item.is_object()) {
            throw tea::sdk::Invalid("items[" + std::to_string(i) + "]: expected an object");
        }
        tea::egress::EgressItem out;
        out.host = string_field(item, "host", where);
        if (!item.contains("port") || !item["port"].is_number_unsigned() ||
            item["port"].get<std::uint64_t>() < 1 || item["port"].get<std::uint64_t>() > 65535) {
            throw tea::sdk::Invalid(where + "port: expected an integer from 1 to 65535");
        }
        out.port = item["port"].get<std::uint16_t>();
        if (item.contains("addresses")) {
            const auto &addresses = item["addresses"];
            if (!addresses.is_array()) {
                throw tea::sdk::Invalid(where + "addresses: expected an array of addresses");
            }
            for (const auto &a : addresses) {
                if (!a.is_string()) {
                    throw tea::sdk::Invalid(where + "addresses: expected an array of addresses");
                }
                out.addresses.push_back(a.get<std::string>());
            }
        }
        if (item.contains("pinned")) {
            if (!item["pinned"].is_boolean()) {
                throw tea::sdk::Invalid(where + "pinned: expected true or false");
            }
            out.pinned = item["pinned"].get<bool>();
        }
        for (const auto &[key, value] : item.items()) {
            if (key != "host" && key != "port" && key != "addresses" && key != "pinned") {
                throw tea::sdk::Invalid(where + key + ": unknown field");
            }
        }
        items.push_back(std::move(out));
    }
    return items;
}

json records_json(const std::string &entry, const tea::egress::ProxyRecords &records) {
    json refusals = json::array();
    for (const auto &r : records.refusals) {
        json one{{"status", r.status}, {"host", r.host},     {"port", r.port},
                 {"entry", r.entry},   {"reason", r.reason}, {"count", r.count}};
        if (!r.address.empty()) {
            one["address"] = r.address;
        }
        refusals.push_back(std::move(one));
    }
    return json{{"entry", entry},
                {"tunnels", records.tunnels_opened},
                {"refusals", std::move(refusals)},
                {"omitted", records.omitted}};
}

class Connect {
   public:
    struct Session {
        std::string entry;
        std::unique_ptr<tea::egress::ConnectProxy> proxy;
    };

    Connect(tea::sdk::Host host, std::string_view config)
        : host_(host), settings_(parse_settings(config)) {}

    void probe() const {
        const auto shim = shim_path();
        if (shim.empty() || ::access(shim.c_str(), X_OK) != 0) {
            throw tea::sdk::Unavailable("the egress shim is missing (" + shim +
                                        "); reinstall the connect egress plugin");
        }
    }

    std::unique_ptr<Session> open(std::string_view text, std::string &info) const {
        const auto doc = json::parse(text, nullptr, false);
        if (!doc.is_object()) {
            throw tea::sdk::Invalid("the egress request is not a JSON object");
        }
        for (const auto &[key, value] : doc.items()) {
            if (key != "entry" && key != "items" && key != "socketDir") {
                throw tea::sdk::Invalid(key + ": unknown field of an egress request");
            }
        }
        const auto entry = string_field(doc, "entry", "");
        const auto dir = string_field(doc, "socketDir", "");
        if (dir[0] != '/') {
            throw tea::sdk::Invalid("socketDir: expected an absolute path");
        }
        auto items = parse_items(doc);
        auto session = std::make_unique<Session>();
        session->entry = entry;
        try {
            tea::egress::ProxyOptions options;
            options.max_tunnels = settings_.max_tunnels;
            session->proxy = std::make_unique<tea::egress::ConnectProxy>(
                tea::egress::Policy{entry, std::move(items)}, options);
        } catch (const std::invalid_argument &e) {
            throw tea::sdk::Invalid(e.what());
        }
        const auto socket = (fs::path{dir} / kSocketName).string();
        // The proxy binds the socket 0600 in a directory only its owner may write, so no other
        // user can reach the route out or swap the socket; the core hands the socket to the
        // identity the target runs as.
        session->proxy->start(socket);
        const auto port = std::to_string(settings_.loopback_port);
        const auto url = "http://127.0.0.1:" + port;
        info =
            json{{"socket", socket},
                 {"port", settings_.loopback_port},
                 {"shim", shim_path()},
                 {"env", {{"HTTPS_PROXY", url}, {"https_proxy", url}, {"NODE_USE_ENV_PROXY", "1"}}}}
                .dump();
        host_.debug("egress proxy for " + entry + " on " + socket);
        return session;
    }

    std::string close(Session &session) const {
        session.proxy->stop();
        return records_json(session.entry, session.proxy->records())
            .dump(-1, ' ', false, json::error_handler_t::replace);
    }

   private:
    tea::sdk::Host host_;
    Settings settings_;
};

}  // namespace

TEA_SDK_EGRESS_PLUGIN(Connect, "connect", "1.0.0", TEA_ABI_1_8)
