// An egress item's pin: the literal addresses a host is connected to without being resolved.
// Free of any plugin so the evaluation model checks evaluation.json's "pinned" as exec checks
// --egress HOST:PORT@ADDR,...
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tea::egress {

// Why a pin is refused, or nullopt: at least one address, each a literal IPv4/IPv6 address, and
// a host spelled as an address pinned to no other.
std::optional<std::string> pin_problem(const std::string &host,
                                       const std::vector<std::string> &addresses);

}  // namespace tea::egress
