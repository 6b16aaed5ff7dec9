// A probe of a toolServer entry (docs/evaluation-format.md): the one request it sends to the
// started server over the Model Context Protocol's stdio transport, and what the answer is
// expected to hold. Read here from a probe's fields; evaluation.cpp dispatches on the entry's kind.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/probe_fields.hpp"

namespace tea::evaluation {

struct ToolServerProbe {
    // initialize, tools/list, tools/call or resources/read
    std::string method;
    // Sent as the request's params (an object); unused for initialize, whose params the client
    // sends.
    nlohmann::json params = nlohmann::json::object();
    // {"result": ...} or {"error": {...}}; none: the answer is recorded, not compared.
    std::optional<nlohmann::json> expect;
    // The request's timeout; none: the entry's maxElapsedMs.
    std::optional<std::int64_t> timeout_ms;
};

// The probe's own fields as the document holds them (null: absent).
struct ToolServerProbeFields {
    const nlohmann::json *method = nullptr;
    const nlohmann::json *params = nullptr;
    const nlohmann::json *expect = nullptr;
    const nlohmann::json *timeout_ms = nullptr;
};

// Checks the fields against an entry whose maxElapsedMs is `max_elapsed_ms` (0: not known);
// every problem goes to `report`. The probe is returned whole only when none was found.
std::optional<ToolServerProbe> read_tool_server_probe(const ToolServerProbeFields &fields,
                                                      std::int64_t max_elapsed_ms,
                                                      const ProbeProblem &report);

// How an answer differs from the probe's expect: empty when it meets it. An object in the
// expectation matches an object holding at least its members, an array one of the same length
// matching element by element, anything else an equal value. `is_error`: the answer was a
// JSON-RPC error (its error object is `value`); `answered`: any answer came at all.
std::vector<std::string> expect_differences(const nlohmann::json &expect, bool answered,
                                            bool is_error, const nlohmann::json &value);

}  // namespace tea::evaluation
