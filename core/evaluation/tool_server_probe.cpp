#include "evaluation/tool_server_probe.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string_view>

namespace tea::evaluation {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kMethods{"initialize", "tools/list", "tools/call",
                                                   "resources/read"};

// A compared value as the difference names it: its JSON, cut so a large answer stays readable.
std::string shown(const json &v) {
    constexpr std::size_t kShownBytes = 200;
    auto text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > kShownBytes) {
        text.resize(kShownBytes);
        text += "...";
    }
    return text;
}

void compare(const json &expected, const json &actual, const std::string &where,
             std::vector<std::string> &out) {
    const std::string at = where.empty() ? "the answer" : where;
    if (expected.is_object()) {
        if (!actual.is_object()) {
            out.push_back(at + " is " + shown(actual) + ", not an object");
            return;
        }
        for (const auto &item : expected.items()) {
            const auto found = actual.find(item.key());
            const auto member = where + (where.empty() ? "" : ".") + item.key();
            if (found == actual.end()) {
                out.push_back(member + " is missing");
            } else {
                compare(item.value(), *found, member, out);
            }
        }
        return;
    }
    if (expected.is_array()) {
        if (!actual.is_array() || actual.size() != expected.size()) {
            out.push_back(at + " is " + shown(actual) + ", not an array of " +
                          std::to_string(expected.size()));
            return;
        }
        for (std::size_t i = 0; i < expected.size(); ++i) {
            compare(expected[i], actual[i], where + "[" + std::to_string(i) + "]", out);
        }
        return;
    }
    if (expected != actual) {
        out.push_back(at + " is " + shown(actual) + ", expected " + shown(expected));
    }
}

bool read_params(const ToolServerProbeFields &fields, const std::string &method,
                 const ProbeProblem &report, ToolServerProbe &probe) {
    if (fields.params == nullptr) {
        if (method == "tools/call" || method == "resources/read") {
            report("params", "is required for " + method);
            return false;
        }
        return true;
    }
    if (method == "initialize") {
        // The handshake's params are the runtime's own: the client says who it is.
        report("params", "is not sent with initialize: the runtime's client sends its own");
        return false;
    }
    if (!fields.params->is_object()) {
        report("params", "must be an object");
        return false;
    }
    const auto &params = *fields.params;
    bool ok = true;
    if (method == "tools/call") {
        const auto name = params.find("name");
        if (name == params.end() || !name->is_string() || name->get<std::string>().empty()) {
            report("params.name", "must name the tool to call (a non-empty string)");
            ok = false;
        }
        const auto arguments = params.find("arguments");
        if (arguments != params.end() && !arguments->is_object()) {
            report("params.arguments", "must be an object");
            ok = false;
        }
    }
    if (method == "resources/read") {
        const auto uri = params.find("uri");
        if (uri == params.end() || !uri->is_string() || uri->get<std::string>().empty()) {
            report("params.uri", "must name the resource to read (a non-empty string)");
            ok = false;
        }
    }
    probe.params = params;
    return ok;
}

bool read_expect(const json &v, const ProbeProblem &report, ToolServerProbe &probe) {
    if (!v.is_object() || v.size() != 1 || (!v.contains("result") && !v.contains("error"))) {
        report("expect", "must be an object with exactly one of 'result' or 'error'");
        return false;
    }
    if (v.contains("error") && !v["error"].is_object()) {
        report("expect.error", "must be an object (such as {\"code\": -32602})");
        return false;
    }
    probe.expect = v;
    return true;
}

}  // namespace

std::optional<ToolServerProbe> read_tool_server_probe(const ToolServerProbeFields &fields,
                                                      std::int64_t max_elapsed_ms,
                                                      const ProbeProblem &report) {
    ToolServerProbe probe;
    bool ok = true;
    if (fields.method == nullptr) {
        report("method", "is required for a probe of a toolServer entry");
        ok = false;
    } else if (!fields.method->is_string() ||
               std::find(kMethods.begin(), kMethods.end(), fields.method->get<std::string>()) ==
                   kMethods.end()) {
        report("method", "must be one of initialize, tools/list, tools/call, resources/read");
        ok = false;
    } else {
        probe.method = fields.method->get<std::string>();
        ok = read_params(fields, probe.method, report, probe) && ok;
    }
    if (fields.expect != nullptr) {
        ok = read_expect(*fields.expect, report, probe) && ok;
    }
    if (fields.timeout_ms != nullptr) {
        probe.timeout_ms = read_probe_timeout(*fields.timeout_ms, max_elapsed_ms, report);
        ok = probe.timeout_ms.has_value() && ok;
    }
    return ok ? std::optional{std::move(probe)} : std::nullopt;
}

std::vector<std::string> expect_differences(const json &expect, bool answered, bool is_error,
                                            const json &value) {
    std::vector<std::string> out;
    const bool wants_error = expect.contains("error");
    if (!answered) {
        out.emplace_back(std::string{"no answer came; expected "} +
                         (wants_error ? "an error" : "a result"));
        return out;
    }
    if (wants_error != is_error) {
        out.push_back(std::string{"the answer is "} + (is_error ? "an error " : "a result ") +
                      shown(value) + ", expected " + (wants_error ? "an error" : "a result"));
        return out;
    }
    compare(wants_error ? expect["error"] : expect["result"], value,
            wants_error ? "error" : "result", out);
    return out;
}

}  // namespace tea::evaluation
