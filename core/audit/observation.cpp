#include "audit/observation.hpp"

#include <nlohmann/json.hpp>
#include <tea/documents.hpp>
#include <tea/json_bytes.hpp>
#include <utility>

namespace tea::audit {
namespace {

using nlohmann::json;

// Each event as the judge takes it, moved in as soon as the SDK's reader has it: no tree and no
// second list of the events is built.
struct JudgedEvents {
    Observation &out;
    void reserve(std::size_t n) {
        out.events.reserve(n);
        out.counts.reserve(n);
    }
    void event(documents::ObservedEvent &&e) {
        ObservedAccess a;
        a.pid = e.pid;
        a.syscall = std::move(e.syscall);
        a.path_asked = std::move(e.asked);
        a.path_resolved = std::move(e.resolved);
        a.access = e.access;
        a.success = e.ok;
        a.error = std::move(e.error);
        a.path_named = std::move(e.named);
        a.unverified = std::move(e.unverified);
        out.events.push_back(std::move(a));
        out.counts.push_back(e.count);
    }
};

}  // namespace

Observation observation_from_json(std::string_view text) {
    Observation o;
    documents::Observation header;
    JudgedEvents sink{o};
    documents::decode_observation(text, header, sink);
    o.complete = header.complete;
    o.reason = std::move(header.reason);
    o.target_started = header.target_started;
    return o;
}

AuditResult judge_observation(const Observation &observation, const Grants &grants,
                              std::string observer) {
    AuditResult r;
    r.audited = true;
    r.observer = std::move(observer);
    Judge judge{grants};
    for (std::size_t i = 0; i < observation.events.size(); ++i) {
        // One observe per distinct access decides it; a finding's count is of distinct accesses.
        judge.observe(observation.events[i]);
        r.events += observation.counts[i];
    }
    r.findings = judge.findings();
    r.omitted = judge.omitted();
    r.complete = observation.complete && judge.malformed() == 0;
    r.reason = observation.reason;
    if (judge.malformed() > 0) {
        r.reason += r.reason.empty() ? "" : "; ";
        r.reason += std::to_string(judge.malformed()) + " accesses named no usable path";
    }
    return r;
}

json to_json(const AuditResult &result) {
    json findings = json::array();
    for (const auto &f : result.findings) {
        findings.push_back({{"path", bytes::to_json(f.path)},
                            {"reason", f.reason},
                            {"syscalls", f.syscalls},
                            {"count", f.count},
                            {"refused", f.refused}});
    }
    if (!result.audited) {
        return {{"audited", false}, {"why", result.why_not}};
    }
    return {{"audited", true},
            {"observer", result.observer},
            {"complete", result.complete},
            {"reason", result.reason},
            {"events", result.events},
            {"findings", std::move(findings)},
            {"omitted", result.omitted}};
}

}  // namespace tea::audit
