#include "egress/egress.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <variant>

#include "egress/pin.hpp"
#include "util/error.hpp"

namespace tea::egress {
namespace {

using nlohmann::json;

std::uint16_t parse_port(std::string_view text, std::string_view option) {
    unsigned value = 0;
    const auto *end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end || value < 1 || value > 65535) {
        throw usage_error("--egress " + std::string{option} +
                          ": expected a port from 1 to 65535 after the host");
    }
    return static_cast<std::uint16_t>(value);
}

// The comma-separated addresses after '=' or '@'.
std::vector<std::string> address_list(std::string_view rest, char mark, const std::string &option) {
    std::vector<std::string> out;
    while (true) {
        const auto comma = rest.find(',');
        const auto address = rest.substr(0, comma);
        if (address.empty()) {
            throw usage_error("--egress " + option + ": an empty address after '" +
                              std::string{mark} + "'");
        }
        out.emplace_back(address);
        if (comma == std::string_view::npos) {
            return out;
        }
        rest = rest.substr(comma + 1);
    }
}

}  // namespace

Item parse_item(std::string_view text) {
    const std::string option{text};
    Item item;
    const auto eq = text.find('=');
    const auto at = text.find('@');
    if (eq != std::string_view::npos && at != std::string_view::npos) {
        throw usage_error("--egress " + option +
                          ": '=' (filter what the host resolves to) and '@' (pin the host to "
                          "addresses) exclude each other");
    }
    const auto mark = std::min(eq, at);
    const auto target = text.substr(0, mark);
    if (mark != std::string_view::npos) {
        item.pinned = mark == at;
        item.addresses = address_list(text.substr(mark + 1), text[mark], option);
    }
    std::string_view host;
    std::string_view port;
    if (!target.empty() && target.front() == '[') {
        const auto close = target.find(']');
        if (close == std::string_view::npos || close + 1 >= target.size() ||
            target[close + 1] != ':') {
            throw usage_error("--egress " + option + ": expected [IPV6]:PORT");
        }
        host = target.substr(1, close - 1);
        port = target.substr(close + 2);
    } else {
        const auto colon = target.find(':');
        // One colon only: an IPv6 host must be in brackets, or its port would be a guess.
        if (colon == std::string_view::npos || target.find(':', colon + 1) != std::string::npos) {
            throw usage_error("--egress " + option +
                              ": expected HOST:PORT[=ADDR,...] or HOST:PORT@ADDR[,...] (an IPv6 "
                              "host in brackets)");
        }
        host = target.substr(0, colon);
        port = target.substr(colon + 1);
    }
    if (host.empty()) {
        throw usage_error("--egress " + option + ": no host before the port");
    }
    item.host = std::string{host};
    item.port = parse_port(port, option);
    if (item.pinned) {
        if (auto problem = pin_problem(item.host, item.addresses)) {
            throw usage_error("--egress " + option + ": " + *problem);
        }
    }
    return item;
}

std::string items_to_json(const std::vector<Item> &items) {
    json out = json::array();
    for (const auto &i : items) {
        json one{{"host", i.host}, {"port", i.port}};
        if (!i.addresses.empty()) {
            one["addresses"] = i.addresses;
        }
        if (i.pinned) {
            one["pinned"] = true;
        }
        out.push_back(std::move(one));
    }
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

OpenRoute::OpenRoute(const plugins::Instance &instance, const std::string &entry,
                     const std::vector<Item> &items, const std::string &socket_dir)
    : instance_(instance), ops_(&std::get<tea_egress_ops>(instance.plugin().ops())) {
    // A plugin before 1.8 may not know "pinned": one that ignored it would resolve the host and
    // take the pinned addresses for a filter of whatever the name resolves to.
    const auto pinned =
        std::find_if(items.begin(), items.end(), [](const Item &i) { return i.pinned; });
    if (pinned != items.end() && !instance.plugin().capabilities().egress_pin) {
        throw host_error("the egress item " + pinned->host + ":" + std::to_string(pinned->port) +
                         " pins its host to addresses, and the egress plugin '" +
                         instance.plugin().name() + "' implements ABI 1." +
                         std::to_string(instance.plugin().abi_minor()) +
                         ", before pins (ABI 1.8); upgrade it, or list the host without '@'");
    }
    const json request{
        {"entry", entry}, {"items", json::parse(items_to_json(items))}, {"socketDir", socket_dir}};
    const auto text = request.dump(-1, ' ', false, json::error_handler_t::replace);
    tea_error error;
    tea_buffer info;
    info.limit = plugins::plugin_output_limit;
    const auto status =
        ops_->open(instance_.handle(), tea_str{text.data(), text.size()}, &handle_, &info, &error);
    const std::string name = instance_.plugin().name();
    if (status != TEA_OK) {
        handle_ = nullptr;
        const auto why = error.message.empty() ? std::string{"no reason given"} : error.message;
        // A refused item is the caller's input; anything else is the host's.
        if (status == TEA_INVALID) {
            throw usage_error("the egress plugin '" + name + "' refused the call's items: " + why);
        }
        throw host_error("the egress plugin '" + name + "' could not open the route: " + why);
    }
    try {
        const auto doc = json::parse(info.data);
        route_.socket = doc.at("socket").get<std::string>();
        route_.port = doc.at("port").get<std::uint16_t>();
        route_.shim = doc.at("shim").get<std::string>();
        for (const auto &[key, value] : doc.at("env").items()) {
            route_.env[key] = value.get<std::string>();
        }
        if (route_.socket.empty() || route_.socket[0] != '/' || route_.port == 0 ||
            route_.shim.empty() || route_.shim[0] != '/') {
            throw std::invalid_argument("expected an absolute socket and shim and a port");
        }
    } catch (const std::exception &e) {
        try {
            close();
        } catch (const std::exception &) {  // NOLINT(bugprone-empty-catch): the first error wins
        }
        throw runtime_failure("the egress plugin '" + name +
                              "' returned an invalid route: " + e.what());
    }
}

OpenRoute::~OpenRoute() {
    try {
        close();
    } catch (const std::exception &) {  // NOLINT(bugprone-empty-catch): ended either way
    }
}

json OpenRoute::close() {
    if (handle_ == nullptr) {
        return json::object();
    }
    tea_error error;
    tea_buffer records;
    records.limit = plugins::plugin_output_limit;
    // The session is gone after close whatever it answers.
    const auto status =
        ops_->close(instance_.handle(), std::exchange(handle_, nullptr), &records, &error);
    if (status != TEA_OK) {
        throw runtime_failure("the egress plugin '" + instance_.plugin().name() +
                              "' could not end the route: " + error.message);
    }
    const auto doc = json::parse(records.data, nullptr, false);
    if (!doc.is_object()) {
        throw runtime_failure("the egress plugin '" + instance_.plugin().name() +
                              "' returned records that are not a JSON object");
    }
    return doc;
}

}  // namespace tea::egress
