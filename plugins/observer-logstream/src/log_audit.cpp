#include "log_audit.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "log_parser.hpp"

namespace tea::logstream {

namespace {

using documents::Access;

// The access a Seatbelt operation stands for, in the judge's words (core/audit/judge.hpp).
Access access_of(std::string_view operation) {
    if (operation == "file-read-data" || operation == "file-read*" ||
        operation == "file-map-executable") {
        return Access::read;
    }
    if (operation == "file-read-metadata") {
        return Access::metadata;
    }
    if (operation == "process-exec" || operation == "process-exec*") {
        return Access::exec;
    }
    if (operation == "file-write-create") {
        return Access::create;
    }
    if (operation == "file-write-unlink") {
        return Access::remove;
    }
    if (operation.substr(0, 10) == "file-write") {
        return Access::write;
    }
    return Access::other;
}

struct Tally {
    std::uint64_t lines = 0;
    std::uint64_t violations = 0;
    std::uint64_t lost = 0;
    std::uint64_t overload_notices = 0;
    std::uint64_t malformed = 0;
    std::uint64_t canaries_delivered = 0;
    std::uint64_t beyond_limit = 0;
};

}  // namespace

documents::Observation audit_log(std::string_view log, const std::vector<Canary> &canaries) {
    documents::Observation out;
    Tally t;
    // Events by (operation, path, pid): the first kept, the rest counted.
    std::map<std::tuple<std::string, std::string, int>, std::size_t> index;
    std::vector<bool> delivered(canaries.size(), false);
    bool inside_call = canaries.empty();
    std::size_t start = 0;
    while (start < log.size()) {
        auto end = log.find('\n', start);
        const bool last_cut = end == std::string_view::npos;
        if (last_cut) {
            end = log.size();
        }
        const auto text = log.substr(start, end - start);
        start = end + 1;
        ++t.lines;
        const auto line = parse_log_line(text);
        switch (line.kind) {
            case LineKind::malformed:
                ++t.malformed;
                continue;
            case LineKind::lost:
                t.lost += line.lost;
                continue;
            case LineKind::overloaded:
                ++t.overload_notices;
                continue;
            case LineKind::unrelated:
                continue;
            case LineKind::violation:
                break;
        }
        const auto &v = line.violation;
        // A canary's report: the bracket moves, and the report is no access of the call.
        bool is_canary = false;
        for (std::size_t i = 0; i < canaries.size(); ++i) {
            if (canaries[i].path != v.path) {
                continue;
            }
            is_canary = true;
            if (!delivered[i]) {
                delivered[i] = true;
                ++t.canaries_delivered;
            }
            // The first canary opens the call's bracket, the last (when there are two) closes it.
            inside_call = i == 0 || i + 1 < canaries.size();
        }
        if (is_canary || !inside_call || v.action != "deny") {
            continue;
        }
        ++t.violations;
        const auto key = std::make_tuple(v.operation, v.path, v.pid);
        if (const auto found = index.find(key); found != index.end()) {
            ++out.events[found->second].count;
            continue;
        }
        if (out.events.size() >= kMaxDistinctEvents) {
            ++t.beyond_limit;
            continue;
        }
        documents::ObservedEvent e;
        e.pid = v.pid;
        e.syscall = v.operation;
        e.asked = v.path;
        // Seatbelt names the real path of what it refused.
        e.resolved = v.path;
        e.access = access_of(v.operation);
        e.ok = false;
        e.error = "EPERM";
        index.emplace(key, out.events.size());
        out.events.push_back(std::move(e));
    }

    std::string reason;
    auto add = [&reason](const std::string &r) {
        reason += reason.empty() ? "" : "; ";
        reason += r;
    };
    if (t.canaries_delivered < canaries.size()) {
        add("the log delivered " + std::to_string(t.canaries_delivered) + " of " +
            std::to_string(canaries.size()) + " canary reads");
    }
    if (t.lost > 0) {
        add("the log reported " + std::to_string(t.lost) + " lost events");
    }
    if (t.overload_notices > 0) {
        add("logOverloaded: the log was handed reports faster than it keeps them (" +
            std::to_string(t.overload_notices) + " notices)");
    }
    if (t.malformed > 0) {
        add(std::to_string(t.malformed) +
            " lines of the log could not be read (cut short or not "
            "JSON)");
    }
    if (t.beyond_limit > 0) {
        add(std::to_string(t.beyond_limit) + " refusals beyond " +
            std::to_string(kMaxDistinctEvents) + " distinct events were not kept");
    }
    out.complete = reason.empty();
    out.reason = std::move(reason);
    out.target_started = true;
    out.counters = {{"lines", t.lines},
                    {"violations", t.violations},
                    {"canariesSent", canaries.size()},
                    {"canariesDelivered", t.canaries_delivered},
                    {"lostEvents", t.lost},
                    {"logOverloaded", t.overload_notices > 0 ? 1U : 0U},
                    {"malformedLines", t.malformed}};
    return out;
}

FollowRecord read_follow_record(std::string_view text) {
    FollowRecord out;
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("followed") || !doc["followed"].is_boolean()) {
        out.reason = "follow.json is not the follower's record";
        return out;
    }
    out.followed = doc["followed"].get<bool>();
    if (doc.contains("reason") && doc["reason"].is_string()) {
        out.reason = doc["reason"].get<std::string>();
    }
    if (doc.contains("canaries") && doc["canaries"].is_array()) {
        for (const auto &c : doc["canaries"]) {
            if (!c.is_object() || !c.contains("path") || !c["path"].is_string()) {
                out.followed = false;
                out.reason = "follow.json: a canary without its path";
                return out;
            }
            out.canaries.push_back({c["path"].get<std::string>()});
        }
    }
    if (out.followed && out.canaries.empty()) {
        out.followed = false;
        out.reason = "follow.json names no canary read";
    }
    return out;
}

}  // namespace tea::logstream
