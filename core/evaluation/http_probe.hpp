// What a probe of an HTTP entry asks and expects (docs/evaluation-format.md, "Probes of an HTTP
// entry"): one request sent through the bridge to the entry's service, and the status, headers
// and body its answer should have. Read here with every problem named by its field; compared
// after the call, the differences put in words for the call record.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/probe_fields.hpp"
#include "http/http_types.hpp"

namespace tea::evaluation {

struct HttpExpect {
    std::optional<int> status;
    // Each must be in the answer with exactly this value; names compared without case.
    std::vector<http::Header> headers;
    std::optional<std::string> body;
};

struct HttpProbe {
    http::Request request;
    std::optional<HttpExpect> expect;
    // The request's timeout; none: the entry's maxElapsedMs.
    std::optional<std::int64_t> timeout_ms;
};

// "request": {"method", "path", "headers", "body"}; nullopt when it holds a problem.
std::optional<http::Request> read_http_request(const nlohmann::json &v, const ProbeProblem &report);
// "expect": {"status", "headers", "body"}; nullopt when it holds a problem.
std::optional<HttpExpect> read_http_expect(const nlohmann::json &v, const ProbeProblem &report);

// How the answer differs from the expectation, one sentence each; empty: it is met.
std::vector<std::string> http_differences(const HttpExpect &expect, const http::Response &answer);

}  // namespace tea::evaluation
