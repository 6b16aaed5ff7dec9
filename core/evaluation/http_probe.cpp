#include "evaluation/http_probe.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "http/http_client.hpp"
#include "http/http_syntax.hpp"

namespace tea::evaluation {
namespace {

using json = nlohmann::json;

// As much as a probe's stdin: a request body is the same kind of input.
constexpr std::size_t kMaxRequestBody = 1024 * 1024;
constexpr std::size_t kMaxHeaders = 100;

bool same_name(const std::string &a, const std::string &b) {
    return http::lowercase(a) == http::lowercase(b);
}

// An expected header may be one the runtime sets (Content-Length, say); only its name is checked.
std::optional<std::string> invalid_expected_name(const std::string &name) {
    if (name.size() <= 256 && http::is_token(name)) return std::nullopt;
    return "is no header name (letters, digits and !#$%&'*+-.^_`|~, at most 256)";
}

// Calls `on_field` for each member and reports every other one.
template <typename OnField>
bool members(const json &v, const std::string &where, const std::vector<std::string> &known,
             const ProbeProblem &report, OnField on_field) {
    if (!v.is_object()) {
        report(where, "must be an object");
        return false;
    }
    bool fine = true;
    for (const auto &item : v.items()) {
        if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
            report(where + "." + item.key(), "is not a field of " + where);
            fine = false;
            continue;
        }
        fine = on_field(item.key(), item.value()) && fine;
    }
    return fine;
}

std::optional<std::vector<http::Header>> read_headers(const json &v, const std::string &where,
                                                      bool sent, const ProbeProblem &report) {
    if (!v.is_object()) {
        report(where, "must be an object of header name -> value");
        return std::nullopt;
    }
    if (v.size() > kMaxHeaders) {
        report(where, "names " + std::to_string(v.size()) + " headers; the limit is " +
                          std::to_string(kMaxHeaders));
        return std::nullopt;
    }
    std::vector<http::Header> out;
    bool fine = true;
    for (const auto &item : v.items()) {
        const auto field = where + "." + item.key();
        if (!item.value().is_string()) {
            report(field, "must be a string");
            fine = false;
            continue;
        }
        http::Header h{item.key(), item.value().get<std::string>()};
        // A header the runtime sets itself (Host, Content-Length, ...) would let a probe frame
        // the request otherwise than the runtime reads the answer; expected ones may be any.
        if (auto why = sent ? http::invalid_header(h) : invalid_expected_name(h.name)) {
            report(field, *why);
            fine = false;
            continue;
        }
        const bool twice = std::any_of(out.begin(), out.end(), [&](const http::Header &o) {
            return same_name(o.name, h.name);
        });
        if (twice) {
            report(field, "is named twice (header names are compared without case)");
            fine = false;
            continue;
        }
        out.push_back(std::move(h));
    }
    return fine ? std::optional{out} : std::nullopt;
}

}  // namespace

std::optional<http::Request> read_http_request(const json &v, const ProbeProblem &report) {
    http::Request request;
    bool has_method = false;
    bool has_path = false;
    bool fine = members(v, "request", {"method", "path", "headers", "body"}, report,
                        [&](const std::string &key, const json &value) {
                            const auto field = "request." + key;
                            if (key == "headers") {
                                auto h = read_headers(value, field, true, report);
                                if (h) request.headers = std::move(*h);
                                return h.has_value();
                            }
                            if (!value.is_string()) {
                                report(field, "must be a string");
                                return false;
                            }
                            auto s = value.get<std::string>();
                            std::optional<std::string> why;
                            if (key == "method") {
                                why = http::invalid_method(s);
                                request.method = s;
                                has_method = true;
                            } else if (key == "path") {
                                why = http::invalid_target(s);
                                request.target = s;
                                has_path = true;
                            } else if (s.size() > kMaxRequestBody) {
                                why =
                                    "is " + std::to_string(s.size()) + " bytes; the limit is 1 MiB";
                            } else {
                                request.body = std::move(s);
                            }
                            if (why) report(field, *why);
                            return !why;
                        });
    if (v.is_object()) {
        if (!has_method) {
            report("request.method", "is required (GET, POST, ...)");
            fine = false;
        }
        if (!has_path) {
            report("request.path", "is required (the request's target, starting with /)");
            fine = false;
        }
    }
    return fine ? std::optional{request} : std::nullopt;
}

std::optional<HttpExpect> read_http_expect(const json &v, const ProbeProblem &report) {
    HttpExpect expect;
    bool fine = members(v, "expect", {"status", "headers", "body"}, report,
                        [&](const std::string &key, const json &value) {
                            const auto field = "expect." + key;
                            if (key == "status") {
                                if (!value.is_number_integer() || value.get<std::int64_t>() < 100 ||
                                    value.get<std::int64_t>() > 999) {
                                    report(field, "must be an integer from 100 to 999");
                                    return false;
                                }
                                expect.status = value.get<int>();
                                return true;
                            }
                            if (key == "headers") {
                                auto h = read_headers(value, field, false, report);
                                if (h) expect.headers = std::move(*h);
                                return h.has_value();
                            }
                            if (!value.is_string()) {
                                report(field, "must be a string");
                                return false;
                            }
                            expect.body = value.get<std::string>();
                            return true;
                        });
    return fine ? std::optional{expect} : std::nullopt;
}

std::vector<std::string> http_differences(const HttpExpect &expect, const http::Response &answer) {
    std::vector<std::string> out;
    if (expect.status && *expect.status != answer.status) {
        out.push_back("status " + std::to_string(answer.status) + ", expected " +
                      std::to_string(*expect.status));
    }
    for (const auto &want : expect.headers) {
        std::vector<std::string> values;
        for (const auto &h : answer.headers) {
            if (same_name(h.name, want.name)) values.push_back(h.value);
        }
        if (values.empty()) {
            out.push_back("header " + want.name + " missing, expected \"" + want.value + "\"");
            continue;
        }
        // A header sent several times is one list (RFC 9110, 5.3): either spelling meets it.
        std::string joined;
        for (const auto &value : values) {
            joined += (joined.empty() ? "" : ", ") + value;
        }
        if (std::find(values.begin(), values.end(), want.value) == values.end() &&
            joined != want.value) {
            out.push_back("header " + want.name + " is \"" + joined + "\", expected \"" +
                          want.value + "\"");
        }
    }
    if (expect.body && *expect.body != answer.body) {
        const auto at = static_cast<std::size_t>(
            std::mismatch(answer.body.begin(),
                          answer.body.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                    answer.body.size(), expect.body->size())),
                          expect.body->begin())
                .first -
            answer.body.begin());
        out.push_back("body of " + std::to_string(answer.body.size()) +
                      " bytes differs from the expected " + std::to_string(expect.body->size()) +
                      " bytes from byte " + std::to_string(at));
    }
    return out;
}

}  // namespace tea::evaluation
