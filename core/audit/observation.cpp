#include "audit/observation.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tea/json_bytes.hpp>
#include <utility>

namespace tea::audit {
namespace {

using nlohmann::json;

Access access_from(const std::string &name) {
    static constexpr std::pair<std::string_view, Access> table[] = {
        {"read", Access::read},     {"write", Access::write},       {"exec", Access::exec},
        {"list", Access::list},     {"readlink", Access::readlink}, {"create", Access::create},
        {"remove", Access::remove}, {"metadata", Access::metadata}, {"other", Access::other},
    };
    for (const auto &[n, a] : table) {
        if (n == name) {
            return a;
        }
    }
    throw std::invalid_argument("events[].access: unknown access '" + name + "'");
}

const json &member(const json &doc, const char *name, const std::string &where) {
    if (!doc.is_object() || !doc.contains(name)) {
        throw std::invalid_argument(where + name + ": missing");
    }
    return doc[name];
}

}  // namespace

Observation observation_from_json(std::string_view text) {
    const auto doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        throw std::invalid_argument("the observation is not a JSON object");
    }
    Observation o;
    const auto &complete = member(doc, "complete", "");
    if (!complete.is_boolean()) {
        throw std::invalid_argument("complete: expected true or false");
    }
    o.complete = complete.get<bool>();
    if (doc.contains("reason") && doc["reason"].is_string()) {
        o.reason = doc["reason"].get<std::string>();
    }
    o.target_started = doc.value("targetStarted", false);
    const auto &events = member(doc, "events", "");
    if (!events.is_array()) {
        throw std::invalid_argument("events: expected an array");
    }
    o.events.reserve(events.size());
    o.counts.reserve(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
        const auto where = "events[" + std::to_string(i) + "].";
        const auto &e = events[i];
        ObservedAccess a;
        const auto &pid = member(e, "pid", where);
        const auto &ok = member(e, "ok", where);
        const auto &access = member(e, "access", where);
        const auto &syscall = member(e, "syscall", where);
        if (!pid.is_number_integer() || !ok.is_boolean() || !access.is_string() ||
            !syscall.is_string()) {
            throw std::invalid_argument(where + "pid/ok/access/syscall: wrong type");
        }
        a.pid = pid.get<int>();
        a.syscall = syscall.get<std::string>();
        a.path_asked = bytes::from_json(member(e, "asked", where), where + "asked");
        a.path_resolved = bytes::from_json(member(e, "resolved", where), where + "resolved");
        a.access = access_from(access.get<std::string>());
        a.success = ok.get<bool>();
        if (e.contains("error") && e["error"].is_string()) {
            a.error = e["error"].get<std::string>();
        }
        std::uint64_t count = 1;
        if (e.contains("count")) {
            if (!e["count"].is_number_unsigned() || e["count"].get<std::uint64_t>() == 0) {
                throw std::invalid_argument(where + "count: expected a positive integer");
            }
            count = e["count"].get<std::uint64_t>();
        }
        o.events.push_back(std::move(a));
        o.counts.push_back(count);
    }
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
