// The probe side's checks of a request (http_client.hpp): what `check` refuses in a probe, and
// what exchange() refuses before it sends anything.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "http/http_client.hpp"
#include "http/http_syntax.hpp"

namespace tea::http {
namespace {

constexpr std::size_t kMethodBytes = 64;
constexpr std::size_t kTargetBytes = std::size_t{8} * 1024;

}  // namespace

std::optional<std::string> invalid_method(const std::string &method) {
    if (!is_token(method)) return "the method \"" + method + "\" is not an HTTP token";
    if (method.size() > kMethodBytes) {
        return "the method is longer than " + std::to_string(kMethodBytes) + " bytes";
    }
    // A 2xx answer to CONNECT turns the connection into a tunnel, which is not an exchange.
    if (method == "CONNECT") return "the method CONNECT opens a tunnel, not an exchange";
    return std::nullopt;
}

std::optional<std::string> invalid_target(const std::string &target) {
    if (target.empty() || target.front() != '/') {
        return "the path \"" + target + "\" does not start with '/'";
    }
    if (target.size() > kTargetBytes) {
        return "the path is longer than " + std::to_string(kTargetBytes) + " bytes";
    }
    for (const char c : target) {
        const auto u = static_cast<unsigned char>(c);
        // A space or control byte would end the request line or start another request.
        if (u <= 0x20 || u >= 0x7f) {
            return "the path holds a byte outside visible ASCII (write it percent-encoded)";
        }
    }
    return std::nullopt;
}

std::optional<std::string> invalid_header(const Header &header) {
    if (!is_token(header.name)) return "the header name \"" + header.name + "\" is not a token";
    const std::string name = lowercase(header.name);
    // The client frames the request itself; a probe's own framing would smuggle a second request.
    if (name == "host" || name == "content-length" || name == "transfer-encoding" ||
        name == "connection") {
        return "the header " + header.name + " is set by the runtime, not by a probe";
    }
    if (header.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        return "the value of header " + header.name + " holds a CR, LF or NUL";
    }
    return std::nullopt;
}

}  // namespace tea::http
