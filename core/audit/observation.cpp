#include "audit/observation.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tea/json_bytes.hpp>
#include <utility>

namespace tea::audit {
namespace {

using nlohmann::json;

bool access_from(const std::string &name, Access *out) {
    static constexpr std::pair<std::string_view, Access> table[] = {
        {"read", Access::read},     {"write", Access::write},       {"exec", Access::exec},
        {"list", Access::list},     {"readlink", Access::readlink}, {"create", Access::create},
        {"remove", Access::remove}, {"metadata", Access::metadata}, {"other", Access::other},
    };
    for (const auto &[n, a] : table) {
        if (n == name) {
            *out = a;
            return true;
        }
    }
    return false;
}

// Reads the observation as a stream of SAX events rather than a document tree: a busy call
// reports tens of thousands of events, and a tree of them cost more than the judging.
class Reader : public nlohmann::json_sax<json> {
   public:
    explicit Reader(Observation &out) : out_{out} {}

    // The first problem found, in the form "events[3].count: expected ...".
    std::string error;

    bool null() override { return value_error("null"); }
    bool boolean(bool v) override {
        if (depth_ == 1 && key_ == "complete") {
            out_.complete = v;
            seen_complete_ = true;
            return true;
        }
        if (depth_ == 1 && key_ == "targetStarted") {
            out_.target_started = v;
            return true;
        }
        if (in_event() && key_ == "ok") {
            event_.success = v;
            have_ |= kOk;
            return true;
        }
        return value_error("true or false");
    }
    bool number_integer(number_integer_t v) override {
        if (in_event() && key_ == "pid" && v >= 0 && v <= 0x7fffffff) {
            event_.pid = static_cast<int>(v);
            have_ |= kPid;
            return true;
        }
        return value_error("a negative number");
    }
    bool number_unsigned(number_unsigned_t v) override {
        if (in_event() && key_ == "pid" && v <= 0x7fffffff) {
            event_.pid = static_cast<int>(v);
            have_ |= kPid;
            return true;
        }
        if (in_event() && key_ == "count") {
            if (v == 0) {
                return fail("count: expected a positive integer");
            }
            count_ = v;
            return true;
        }
        if (depth_ == 1 && key_ == "distinct") {
            // A hint, capped: a hostile number must not make the runtime reserve gigabytes.
            const auto n = static_cast<std::size_t>(std::min<number_unsigned_t>(v, 1U << 20U));
            out_.events.reserve(n);
            out_.counts.reserve(n);
            return true;
        }
        if (depth_ == 1 && key_ != "complete" && key_ != "events" && key_ != "targetStarted") {
            return true;  // "lines" and other counters for diagnostics
        }
        return value_error("a number");
    }
    bool number_float(number_float_t /*v*/, const string_t & /*s*/) override {
        return value_error("a fraction");
    }
    bool string(string_t &v) override {
        if (depth_ == 1 && key_ == "reason") {
            out_.reason = std::move(v);
            return true;
        }
        if (depth_ == 1 && key_ != "complete" && key_ != "events" && key_ != "targetStarted") {
            return true;
        }
        if (in_base64_) {
            auto decoded = bytes::base64_decode(v);
            if (!decoded || key_ != "base64") {
                return fail(field_ +
                            ": expected a string or {\"base64\": \"...\"} with valid "
                            "base64");
            }
            return take_bytes(std::move(*decoded));
        }
        if (in_event()) {
            if (key_ == "syscall") {
                event_.syscall = std::move(v);
                have_ |= kSyscall;
                return true;
            }
            if (key_ == "access") {
                if (!access_from(v, &event_.access)) {
                    return fail("access: unknown access '" + v + "'");
                }
                have_ |= kAccess;
                return true;
            }
            if (is_bytes_field(key_)) {
                field_ = key_;
                return take_bytes(std::move(v));
            }
        }
        return value_error("a string");
    }
    bool binary(binary_t & /*v*/) override { return value_error("binary"); }
    bool start_object(std::size_t /*n*/) override {
        ++depth_;
        if (depth_ == 1) {
            return true;
        }
        if (depth_ == 3 && events_open_ && key_.empty() && in_array_) {
            event_ = ObservedAccess{};
            count_ = 1;
            have_ = 0;
            return true;
        }
        if (depth_ == 4 && events_open_ && in_array_ && is_bytes_field(key_)) {
            in_base64_ = true;
            field_ = key_;
            key_.clear();
            return true;
        }
        return value_error("an object");
    }
    bool key(string_t &k) override {
        key_ = std::move(k);
        return true;
    }
    bool end_object() override {
        if (in_base64_ && depth_ == 4) {
            in_base64_ = false;
            if (!base64_done_) {
                return fail(field_ + ": expected a string or {\"base64\": \"...\"}");
            }
            base64_done_ = false;
            key_ = field_;
            --depth_;
            return true;
        }
        if (in_event()) {
            for (const auto &[bit, name] : kRequired) {
                if ((have_ & bit) == 0) {
                    return fail(std::string{name} + ": missing");
                }
            }
            out_.events.push_back(std::move(event_));
            out_.counts.push_back(count_);
            key_.clear();
        }
        --depth_;
        return true;
    }
    bool start_array(std::size_t /*n*/) override {
        ++depth_;
        if (depth_ == 1) {
            return fail("the observation is not a JSON object");
        }
        if (depth_ == 2 && key_ == "events" && !events_open_) {
            events_open_ = true;
            in_array_ = true;
            seen_events_ = true;
            key_.clear();
            return true;
        }
        return value_error("an array");
    }
    bool end_array() override {
        --depth_;
        in_array_ = false;
        return true;
    }
    bool parse_error(std::size_t /*position*/, const std::string & /*last_token*/,
                     const nlohmann::detail::exception & /*ex*/) override {
        if (error.empty()) {
            error = "the observation is not a JSON object";
        }
        return false;
    }

    void check_end() {
        if (!error.empty()) {
            return;
        }
        if (!seen_complete_) {
            error = "complete: missing";
        } else if (!seen_events_) {
            error = "events: missing";
        }
    }

   private:
    static constexpr unsigned kPid = 1;
    static constexpr unsigned kOk = 2;
    static constexpr unsigned kAccess = 4;
    static constexpr unsigned kSyscall = 8;
    static constexpr unsigned kAsked = 16;
    static constexpr unsigned kResolved = 32;
    static constexpr std::pair<unsigned, const char *> kRequired[] = {
        {kPid, "pid"},         {kOk, "ok"},       {kAccess, "access"},
        {kSyscall, "syscall"}, {kAsked, "asked"}, {kResolved, "resolved"}};

    [[nodiscard]] bool in_event() const { return events_open_ && depth_ == 3 && in_array_; }
    // An event's byte-string fields; "named" and "unverified" are optional.
    static bool is_bytes_field(const std::string &k) {
        return k == "asked" || k == "resolved" || k == "error" || k == "named" || k == "unverified";
    }

    bool take_bytes(std::string v) {
        if (in_base64_) {
            base64_done_ = true;
        }
        if (field_ == "asked") {
            event_.path_asked = std::move(v);
            have_ |= kAsked;
        } else if (field_ == "resolved") {
            event_.path_resolved = std::move(v);
            have_ |= kResolved;
        } else if (field_ == "named") {
            event_.path_named = std::move(v);
        } else if (field_ == "unverified") {
            event_.unverified = std::move(v);
        } else {
            event_.error = std::move(v);
        }
        return true;
    }
    bool value_error(const char *found) {
        const std::string where = key_;
        if (depth_ <= 1 && key_ == "complete") {
            return fail("complete: expected true or false");
        }
        if (depth_ <= 1 && key_ == "events") {
            return fail("events: expected an array");
        }
        if (depth_ == 0) {
            return fail("the observation is not a JSON object");
        }
        return fail((where.empty() ? std::string{"value"} : where) + ": unexpected " + found);
    }
    bool fail(const std::string &what) {
        if (error.empty()) {
            const bool event_field = events_open_ && depth_ >= 3;
            error =
                event_field ? "events[" + std::to_string(out_.events.size()) + "]." + what : what;
        }
        return false;
    }

    Observation &out_;
    int depth_ = 0;
    std::string key_;
    std::string field_;
    bool events_open_ = false;
    bool in_array_ = false;
    bool in_base64_ = false;
    bool base64_done_ = false;
    bool seen_complete_ = false;
    bool seen_events_ = false;
    ObservedAccess event_;
    std::uint64_t count_ = 1;
    unsigned have_ = 0;
};

}  // namespace

Observation observation_from_json(std::string_view text) {
    Observation o;
    Reader reader{o};
    const bool ok = json::sax_parse(text, &reader);
    reader.check_end();
    if (!ok || !reader.error.empty()) {
        throw std::invalid_argument(reader.error.empty() ? "the observation is not a JSON object"
                                                         : reader.error);
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
