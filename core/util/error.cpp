#include "util/error.hpp"

#include <cstring>

namespace tea {

std::string errno_text(int error_number) {
    char buffer[256] = {};
    // GNU strerror_r returns the message, which may or may not live in buffer.
    const char *text = ::strerror_r(error_number, buffer, sizeof buffer);
    return text != nullptr ? std::string{text}
                           : std::string{"error "} + std::to_string(error_number);
}

}  // namespace tea
