#include "policy.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace tea::egress {
namespace {

const sockaddr_in &as_in(const sockaddr_storage &s) {
    return *reinterpret_cast<const sockaddr_in *>(&s);
}
const sockaddr_in6 &as_in6(const sockaddr_storage &s) {
    return *reinterpret_cast<const sockaddr_in6 *>(&s);
}

// The 16 bytes of an IPv6 address, with an IPv4 address in its mapped form, so that
// "::ffff:127.0.0.1" and "127.0.0.1" compare equal.
std::array<unsigned char, 16> host_bytes(const SocketAddress &address,
                                         const sockaddr_storage &storage) {
    std::array<unsigned char, 16> out{};
    if (address.family() == AF_INET) {
        out[10] = 0xff;
        out[11] = 0xff;
        std::memcpy(out.data() + 12, &as_in(storage).sin_addr, 4);
    } else {
        std::memcpy(out.data(), &as_in6(storage).sin6_addr, 16);
    }
    return out;
}

std::string join(const std::vector<SocketAddress> &addresses) {
    std::string out;
    for (const SocketAddress &address : addresses) {
        if (!out.empty()) out += ", ";
        out += address.text();
    }
    return out;
}

std::string join(const std::vector<std::string> &texts) {
    std::string out;
    for (const std::string &text : texts) {
        if (!out.empty()) out += ", ";
        out += text;
    }
    return out;
}

// Whether `host` (an item's host as spelled) is a numeric address equal to `address`.
bool names_literally(const std::string &host, const SocketAddress &address) {
    const auto literal = SocketAddress::parse(host, 0);
    return literal && literal->same_host(address);
}

std::string describe_item(const std::string &entry, const EgressItem &item) {
    return "entry \"" + entry + "\": egress item " + item.host + ":" + std::to_string(item.port);
}

}  // namespace

std::optional<SocketAddress> SocketAddress::from(const sockaddr *address, socklen_t length) {
    if (address == nullptr) return std::nullopt;
    SocketAddress out;
    if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        out.length_ = sizeof(sockaddr_in);
    } else if (address->sa_family == AF_INET6 &&
               length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        out.length_ = sizeof(sockaddr_in6);
    } else {
        return std::nullopt;
    }
    std::memcpy(&out.storage_, address, out.length_);
    return out;
}

std::optional<SocketAddress> SocketAddress::parse(const std::string &text, std::uint16_t port) {
    SocketAddress out;
    sockaddr_in v4{};
    if (inet_pton(AF_INET, text.c_str(), &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        std::memcpy(&out.storage_, &v4, sizeof v4);
        out.length_ = sizeof v4;
        return out;
    }
    std::string bare = text;
    if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
        bare = bare.substr(1, bare.size() - 2);
    }
    sockaddr_in6 v6{};
    if (bare.find('%') == std::string::npos &&
        inet_pton(AF_INET6, bare.c_str(), &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        std::memcpy(&out.storage_, &v6, sizeof v6);
        out.length_ = sizeof v6;
        return out;
    }
    return std::nullopt;
}

std::uint16_t SocketAddress::port() const {
    if (family() == AF_INET) return ntohs(as_in(storage_).sin_port);
    if (family() == AF_INET6) return ntohs(as_in6(storage_).sin6_port);
    return 0;
}

void SocketAddress::set_port(std::uint16_t port) {
    if (family() == AF_INET) {
        reinterpret_cast<sockaddr_in *>(&storage_)->sin_port = htons(port);
    } else if (family() == AF_INET6) {
        reinterpret_cast<sockaddr_in6 *>(&storage_)->sin6_port = htons(port);
    }
}

std::string SocketAddress::text() const {
    std::array<char, INET6_ADDRSTRLEN> buffer{};
    const void *raw = nullptr;
    if (family() == AF_INET) {
        raw = &as_in(storage_).sin_addr;
    } else if (family() == AF_INET6) {
        raw = &as_in6(storage_).sin6_addr;
    } else {
        return {};
    }
    if (inet_ntop(family(), raw, buffer.data(), buffer.size()) == nullptr) return {};
    return buffer.data();
}

bool SocketAddress::same_host(const SocketAddress &other) const {
    if (length_ == 0 || other.length_ == 0) return false;
    return host_bytes(*this, storage_) == host_bytes(other, other.storage_);
}

bool SocketAddress::on_this_host_or_link() const {
    if (length_ == 0) return false;
    const auto b = host_bytes(*this, storage_);
    const bool mapped =
        std::all_of(b.begin(), b.begin() + 10, [](unsigned char c) { return c == 0; }) &&
        b[10] == 0xff && b[11] == 0xff;
    if (mapped) {
        // 127/8 loopback, 169.254/16 link-local (cloud metadata services), 0/8 "this host",
        // and the metadata services of clouds that serve them elsewhere.
        const std::array<unsigned char, 4> v4{b[12], b[13], b[14], b[15]};
        return v4[0] == 127 || (v4[0] == 169 && v4[1] == 254) || v4[0] == 0 ||
               v4 == std::array<unsigned char, 4>{100, 100, 100, 200} ||
               v4 == std::array<unsigned char, 4>{192, 0, 0, 192};
    }
    // fd00:ec2::254, a cloud's metadata service over IPv6.
    constexpr std::array<unsigned char, 16> ec2_metadata{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                                         0,    0,    0,    0,    0, 0, 0x02, 0x54};
    if (b == ec2_metadata) return true;
    const bool zero_prefix =
        std::all_of(b.begin(), b.begin() + 15, [](unsigned char c) { return c == 0; });
    // ::1 loopback, :: unspecified, fe80::/10 link-local.
    return (zero_prefix && b[15] <= 1) || (b[0] == 0xfe && (b[1] & 0xc0U) == 0x80);
}

std::vector<SocketAddress> addresses_of_this_host() {
    std::vector<SocketAddress> out;
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0) return out;
    for (const ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr) continue;
        const socklen_t length = i->ifa_addr->sa_family == AF_INET    ? sizeof(sockaddr_in)
                                 : i->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                                      : 0;
        if (length == 0) continue;
        if (auto address = SocketAddress::from(i->ifa_addr, length)) out.push_back(*address);
    }
    ::freeifaddrs(list);
    return out;
}

Resolution resolve_with_getaddrinfo(const std::string &host, std::uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *list = nullptr;
    const std::string service = std::to_string(port);
    const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
    std::unique_ptr<addrinfo, void (*)(addrinfo *)> owned(list, freeaddrinfo);
    Resolution result;
    if (rc != 0) {
        result.status = (rc == EAI_NONAME || rc == EAI_NODATA) ? Resolution::Status::no_such_name
                                                               : Resolution::Status::failed;
        result.error = rc == EAI_SYSTEM ? std::system_category().message(errno) : gai_strerror(rc);
        return result;
    }
    result.status = Resolution::Status::ok;
    for (const addrinfo *ai = list; ai != nullptr; ai = ai->ai_next) {
        auto address = SocketAddress::from(ai->ai_addr, ai->ai_addrlen);
        if (!address) continue;
        bool seen = false;
        for (const SocketAddress &kept : result.addresses) seen = seen || kept.same_host(*address);
        if (!seen) result.addresses.push_back(*address);
    }
    return result;
}

Policy::Policy(std::string entry, std::vector<EgressItem> items, Resolver resolver,
               LocalAddresses local_addresses)
    : entry_(std::move(entry)),
      resolver_(std::move(resolver)),
      local_addresses_(std::move(local_addresses)) {
    if (!resolver_) throw std::invalid_argument("egress policy: no resolver given");
    if (!local_addresses_) {
        throw std::invalid_argument("egress policy: no source of this host's addresses given");
    }
    for (EgressItem &item : items) {
        bool ipv6 = false;
        auto host = normalize_host(item.host, &ipv6);
        if (!host) {
            throw std::invalid_argument(describe_item(entry_, item) +
                                        ": the host is not letters, digits, '.', '-' and '_' of "
                                        "at most 253 bytes, nor an IPv6 address");
        }
        if (item.port == 0) {
            throw std::invalid_argument(describe_item(entry_, item) + ": the port is 0");
        }
        Item parsed;
        for (const std::string &text : item.addresses) {
            auto address = SocketAddress::parse(text, 0);
            if (!address) {
                throw std::invalid_argument(describe_item(entry_, item) + ": address \"" + text +
                                            "\" is not a numeric IPv4 or IPv6 address");
            }
            parsed.addresses.push_back(*address);
        }
        if (item.pinned && parsed.addresses.empty()) {
            throw std::invalid_argument(describe_item(entry_, item) + ": pinned to no address");
        }
        // A host spelled as one address tunnelled to another would record a destination the
        // tunnel never reached.
        if (const auto literal = SocketAddress::parse(item.host, 0); item.pinned && literal) {
            for (const SocketAddress &address : parsed.addresses) {
                if (!literal->same_host(address)) {
                    throw std::invalid_argument(describe_item(entry_, item) +
                                                ": the host is an address and cannot be pinned "
                                                "to another (" +
                                                address.text() + ")");
                }
            }
        }
        item.host = std::move(*host);
        for (const Item &earlier : parsed_) {
            if (earlier.spelled.host == item.host && earlier.spelled.port == item.port) {
                throw std::invalid_argument(describe_item(entry_, item) + ": listed twice");
            }
        }
        parsed.spelled = item;
        parsed_.push_back(std::move(parsed));
        items_.push_back(std::move(item));
    }
}

const EgressItem *Policy::find(const Authority &target) const {
    for (const Item &item : parsed_) {
        if (item.spelled.host == target.host && item.spelled.port == target.port) {
            return &item.spelled;
        }
    }
    return nullptr;
}

std::optional<std::string> Policy::refuse_unlisted(const Authority &target) const {
    if (find(target) != nullptr) return std::nullopt;
    std::vector<std::string> ports;
    for (const Item &item : parsed_) {
        if (item.spelled.host == target.host) ports.push_back(std::to_string(item.spelled.port));
    }
    if (ports.empty()) return "the host is not listed in the entry's egress";
    return "port " + std::to_string(target.port) +
           " is not listed for this host (the entry lists port " + join(ports) + ")";
}

Decision Policy::decide(const Authority &target) const {
    Decision decision;
    if (auto reason = refuse_unlisted(target)) {
        decision.verdict = Decision::Verdict::refuse;
        decision.reason = std::move(*reason);
        return decision;
    }
    const Item *item = nullptr;
    for (const Item &candidate : parsed_) {
        if (candidate.spelled.host == target.host && candidate.spelled.port == target.port) {
            item = &candidate;
        }
    }
    if (item->spelled.pinned) {
        // The operator named the addresses: a made-up name (a local stand-in of an API) has
        // nothing to resolve, and a name that does resolve must not be moved by DNS.
        for (SocketAddress address : item->addresses) {
            address.set_port(target.port);
            decision.addresses.push_back(address);
        }
        decision.verdict = Decision::Verdict::allow;
        return decision;
    }
    Resolution resolution = resolver_(target.host, target.port);
    if (resolution.status != Resolution::Status::ok) {
        decision.verdict = Decision::Verdict::unresolved;
        decision.reason =
            (resolution.status == Resolution::Status::no_such_name ? "the host does not resolve: "
                                                                   : "name resolution failed: ") +
            resolution.error;
        return decision;
    }
    if (resolution.addresses.empty()) {
        decision.verdict = Decision::Verdict::unresolved;
        decision.reason = "the host resolved to no address";
        return decision;
    }
    decision.resolved = join(resolution.addresses);
    // The host's own interface addresses (its LAN address, a container bridge's) reach its
    // services as loopback does: asked only for an unpinned item.
    const std::vector<SocketAddress> own =
        item->addresses.empty() ? local_addresses_() : std::vector<SocketAddress>{};
    const auto reaches_this_host = [&own](const SocketAddress &address) {
        return address.on_this_host_or_link() ||
               std::any_of(own.begin(), own.end(),
                           [&](const SocketAddress &o) { return o.same_host(address); });
    };
    std::vector<SocketAddress> local;
    for (SocketAddress &address : resolution.addresses) {
        bool named = item->addresses.empty();
        for (const SocketAddress &allowed : item->addresses) {
            named = named || allowed.same_host(address);
        }
        // An unpinned item names a host out on the network: a name that resolves (or is made to
        // resolve, by DNS rebinding) to this machine's loopback or its link (169.254.169.254, a
        // cloud's metadata service holding the host's credentials) reaches only what the item
        // pins by address, or names as its host literally ("127.0.0.1:8080").
        if (item->addresses.empty() && reaches_this_host(address) &&
            !names_literally(item->spelled.host, address)) {
            local.push_back(address);
            continue;
        }
        // The item's port, not the resolver's: a resolver cannot move a tunnel to another port.
        address.set_port(target.port);
        if (named) decision.addresses.push_back(address);
    }
    if (decision.addresses.empty() && !local.empty()) {
        decision.verdict = Decision::Verdict::refuse;
        decision.reason =
            "the host resolved only to addresses on this machine or its link, "
            "or a cloud's metadata service (" +
            join(local) +
            "), which the entry reaches only when its egress item lists them "
            "explicitly";
        return decision;
    }
    if (decision.addresses.empty()) {
        // Pinning to named addresses closes DNS rebinding of a listed name onto an address
        // (the host's loopback, a metadata service) the item does not name.
        decision.verdict = Decision::Verdict::refuse;
        decision.reason = "none of the addresses the host resolved to (" + decision.resolved +
                          ") is listed for it (the entry lists " + join(item->spelled.addresses) +
                          ")";
        return decision;
    }
    decision.verdict = Decision::Verdict::allow;
    return decision;
}

}  // namespace tea::egress
