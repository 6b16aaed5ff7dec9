// The values an HTTP/1.1 exchange is made of, shared by the client (http_client.hpp) and its
// response parser (http_response_parser.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tea::http {

struct Header {
    std::string name;
    std::string value;
};

struct Request {
    std::string method;           // a token, e.g. GET
    std::string target;           // origin-form, starts with '/'
    std::vector<Header> headers;  // the probe's; never Host, Content-Length, Transfer-Encoding,
                                  // Connection (the client sets those)
    std::string body;
};

struct Response {
    int status = 0;
    std::string reason;
    std::vector<Header> headers;  // as received, in order
    std::string body;             // decoded (chunked undone), at most Limits::body_bytes
};

// What a service can make the runtime hold for one response (memory exhaustion).
struct Limits {
    std::size_t head_bytes = std::size_t{64} * 1024;  // status lines + headers, interim included
    std::size_t header_count = 100;
    std::size_t body_bytes = std::size_t{16} * 1024 * 1024;  // past it: Outcome::tooLarge
};

}  // namespace tea::http
