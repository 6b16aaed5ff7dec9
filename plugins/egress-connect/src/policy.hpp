// The egress authorization of one registry entry: which host:port pairs its processes may reach
// through the CONNECT proxy, and at which resolved addresses.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "request_head.hpp"

namespace tea::egress {

struct EgressItem {
    std::string host;  // a name, or an IPv6 literal with or without brackets
    std::uint16_t port = 0;
    // Not pinned: the resolved addresses the proxy may connect to (empty: any address the name
    // resolves to). Pinned: the addresses it connects to, in order, never resolving the host.
    std::vector<std::string> addresses;
    bool pinned = false;
};

// One IPv4 or IPv6 socket address (the port included).
class SocketAddress {
   public:
    SocketAddress() = default;
    // Copies a sockaddr_in or sockaddr_in6; nullopt for another family or a short length.
    static std::optional<SocketAddress> from(const sockaddr *address, socklen_t length);
    // A numeric IPv4 or IPv6 address and a port; nullopt when `text` is not one.
    static std::optional<SocketAddress> parse(const std::string &text, std::uint16_t port);

    const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage_); }
    socklen_t length() const { return length_; }
    int family() const { return storage_.ss_family; }
    std::uint16_t port() const;
    void set_port(std::uint16_t port);
    // The address without its port, as inet_ntop writes it.
    std::string text() const;
    // Same address, ignoring the port; an IPv4-mapped IPv6 address equals its IPv4 form.
    bool same_host(const SocketAddress &other) const;
    // Loopback (127/8, ::1), link-local (169.254/16, fe80::/10) or unspecified (0/8, ::), in
    // either form: an address that reaches this machine or its link, never the network. Also the
    // metadata services clouds serve at other addresses (100.100.100.200, 192.0.0.192,
    // fd00:ec2::254), which hold the host's credentials as 169.254.169.254 does.
    bool on_this_host_or_link() const;

   private:
    sockaddr_storage storage_{};
    socklen_t length_ = 0;
};

struct Resolution {
    enum class Status { ok = 1, no_such_name, failed };
    Status status = Status::failed;
    std::vector<SocketAddress> addresses;  // ok: in the resolver's order, without duplicates
    std::string error;                     // otherwise: the resolver's message
};

// Resolves a host (as Authority::host holds it) for a TCP connection to `port`. Called from
// resolver threads, so it must be safe to call concurrently.
using Resolver = std::function<Resolution(const std::string &host, std::uint16_t port)>;

// getaddrinfo, for stream sockets, IPv4 and IPv6.
Resolution resolve_with_getaddrinfo(const std::string &host, std::uint16_t port);

// The addresses of this machine's own interfaces (its LAN address, a bridge's): a name that
// resolves to one reaches the host's services as loopback does. Called once per decision.
using LocalAddresses = std::function<std::vector<SocketAddress>()>;

// getifaddrs: every IPv4 and IPv6 address of every interface; none when it fails.
std::vector<SocketAddress> addresses_of_this_host();

struct Decision {
    enum class Verdict {
        allow = 1,   // connect to `addresses`, in order
        refuse,      // 403: not listed, or no resolved address is listed
        unresolved,  // 502: the name does not resolve
    };
    Verdict verdict = Verdict::refuse;
    std::string reason;                    // refuse, unresolved: the sentence for the client
    std::vector<SocketAddress> addresses;  // allow: the addresses the item allows
    std::string resolved;                  // the resolved addresses, comma separated, if any
};

class Policy {
   public:
    // Throws std::invalid_argument naming the entry and the item when an item's host, port or
    // address is spelled otherwise than the rules allow, a host:port is listed twice, or a pin
    // has no address or moves a host spelled as an address to another.
    Policy(std::string entry, std::vector<EgressItem> items,
           Resolver resolver = resolve_with_getaddrinfo,
           LocalAddresses local_addresses = addresses_of_this_host);

    const std::string &entry() const { return entry_; }
    // The items, hosts normalized (names lowercased, IPv6 canonical without brackets).
    const std::vector<EgressItem> &items() const { return items_; }

    // The item listing this host and port, or nullptr. Never resolves a name.
    const EgressItem *find(const Authority &target) const;

    // Why a target no item lists is refused; nullopt when an item lists it. Never resolves, so
    // a name that is not listed never reaches a resolver.
    std::optional<std::string> refuse_unlisted(const Authority &target) const;

    // Refuses an unlisted target without resolving; allows a pinned one its pinned addresses
    // without resolving; resolves any other listed one and keeps only the addresses its item
    // names. Blocks for as long as the resolver does.
    Decision decide(const Authority &target) const;

   private:
    struct Item {
        EgressItem spelled;
        std::vector<SocketAddress> addresses;  // parsed EgressItem::addresses (port 0)
    };

    std::string entry_;
    std::vector<EgressItem> items_;
    std::vector<Item> parsed_;
    Resolver resolver_;
    LocalAddresses local_addresses_;
};

}  // namespace tea::egress
