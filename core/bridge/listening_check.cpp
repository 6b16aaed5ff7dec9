#include "bridge/listening_check.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace tea::bridge {
namespace {

constexpr std::string_view kListenState = "0A";  // TCP_LISTEN in the tables' hex

struct Socket {
    std::string address;  // printable
    bool loopback4 = false;
    bool loopback6 = false;
};

// The table's hex address: 8 digits (one 32-bit word) for IPv4, 32 (four) for IPv6, each word in
// the kernel's byte order, which is this machine's.
bool parse_address(std::string_view hex, Socket &s) {
    if (hex.size() != 8 && hex.size() != 32) {
        return false;
    }
    std::array<std::uint32_t, 4> words{};
    for (std::size_t w = 0; w < hex.size() / 8; ++w) {
        const auto *begin = hex.data() + w * 8;
        const auto [end, error] = std::from_chars(begin, begin + 8, words[w], 16);
        if (error != std::errc{} || end != begin + 8) {
            return false;
        }
    }
    std::array<char, INET6_ADDRSTRLEN> text{};
    if (hex.size() == 8) {
        in_addr a{};
        a.s_addr = words[0];
        ::inet_ntop(AF_INET, &a, text.data(), text.size());
        s.loopback4 = a.s_addr == htonl(INADDR_LOOPBACK);
    } else {
        in6_addr a{};
        std::memcpy(&a, words.data(), sizeof a);
        ::inet_ntop(AF_INET6, &a, text.data(), text.size());
        s.loopback6 = IN6_IS_ADDR_LOOPBACK(&a) != 0;
        s.loopback4 = IN6_IS_ADDR_V4MAPPED(&a) != 0 && a.s6_addr32[3] == htonl(INADDR_LOOPBACK);
    }
    s.address = text.data();
    return true;
}

// The listening sockets of one table at `port`.
std::vector<Socket> listeners(std::string_view table, std::uint16_t port) {
    std::vector<Socket> found;
    std::istringstream lines{std::string{table}};
    std::string line;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line)) {
        std::istringstream fields{line};
        std::string slot, local, remote, state;
        if (!(fields >> slot >> local >> remote >> state) || state != kListenState) {
            continue;
        }
        const auto colon = local.find(':');
        unsigned listening_port = 0;
        if (colon == std::string::npos ||
            std::from_chars(local.data() + colon + 1, local.data() + local.size(), listening_port,
                            16)
                    .ec != std::errc{} ||
            listening_port != port) {
            continue;
        }
        Socket s;
        if (parse_address(std::string_view{local}.substr(0, colon), s)) {
            found.push_back(s);
        }
    }
    return found;
}

bool read_table(const std::string &path, std::string &out) {
    std::ifstream in(path);
    if (!in) {
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    return true;
}

}  // namespace

Listening listening_in(std::string_view tcp, std::string_view tcp6, std::uint16_t port) {
    Listening result;
    auto sockets = listeners(tcp, port);
    for (auto &s : listeners(tcp6, port)) {
        sockets.push_back(std::move(s));
    }
    for (const auto &s : sockets) {
        // A service that also listens on an address other than loopback is reachable by whatever
        // routes to that address; the bridge refuses to be its way in rather than hide that.
        if (!s.loopback4 && !s.loopback6) {
            result.refusal = "the service listens on " + s.address + " port " +
                             std::to_string(port) +
                             ", not on loopback only (127.0.0.1 or ::1): refused";
            return result;
        }
        result.ipv4 = result.ipv4 || s.loopback4;
        result.ipv6 = result.ipv6 || s.loopback6;
    }
    if (!result.ipv4 && !result.ipv6) {
        result.refusal =
            "nothing listens on port " + std::to_string(port) + " in the call's network";
        return result;
    }
    result.ok = true;
    return result;
}

Listening check_listening(pid_t pid, std::uint16_t port) {
    const std::string base = "/proc/" + std::to_string(pid) + "/net/";
    std::string tcp, tcp6;
    if (!read_table(base + "tcp", tcp)) {
        Listening refused;
        refused.refusal = "cannot read " + base + "tcp to see where the service listens";
        return refused;
    }
    // A kernel without IPv6 has no tcp6 table, and so no IPv6 listener.
    (void)read_table(base + "tcp6", tcp6);
    return listening_in(tcp, tcp6, port);
}

}  // namespace tea::bridge
