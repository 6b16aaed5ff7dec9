#include "egress/pin.hpp"

#include <arpa/inet.h>

#include <array>
#include <utility>

namespace tea::egress {
namespace {

// The address in network byte order with its family; nullopt when `text` is no literal IPv4 or
// IPv6 address.
std::optional<std::pair<int, std::array<unsigned char, 16>>> literal_address(
    const std::string &text) {
    std::array<unsigned char, 16> bytes{};
    for (const int family : {AF_INET, AF_INET6}) {
        if (::inet_pton(family, text.c_str(), bytes.data()) == 1) {
            return std::pair{family, bytes};
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> pin_problem(const std::string &host,
                                       const std::vector<std::string> &addresses) {
    if (addresses.empty()) {
        return "a pin needs at least one address";
    }
    const auto host_address = literal_address(host);
    for (const auto &address : addresses) {
        const auto literal = literal_address(address);
        if (!literal) {
            return "\"" + address + "\" is not a literal IPv4 or IPv6 address";
        }
        // A host spelled as one address but connected to another would show the reader of the
        // item, and of the records, a destination the tunnel does not reach.
        if (host_address && *host_address != *literal) {
            return "the host is an address itself and cannot be pinned to another (" + address +
                   ")";
        }
    }
    return std::nullopt;
}

}  // namespace tea::egress
