#include "call/outcome.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <tea/json_bytes.hpp>

#include "util/error.hpp"

namespace tea::call {
namespace {

int not_started_status(const exec::CallResult &r) {
    if (r.start_errno == ENOENT) {
        return 127;  // as a shell reports a command it cannot find
    }
    if (r.start_errno == EACCES || r.start_errno == ENOEXEC) {
        return 126;
    }
    return static_cast<int>(ExitCode::runtime);
}

constexpr int exit_timed_out = 124;

}  // namespace

int call_status(const exec::CallResult &result, const exec::RunOptions &run) {
    if (result.interrupted_by != 0) {
        spdlog::warn("interrupted by signal {}; the call was ended", result.interrupted_by);
        return 128 + result.interrupted_by;
    }
    if (!result.started) {
        spdlog::error("the target did not start: {}", result.start_error);
        return not_started_status(result);
    }
    if (result.timed_out) {
        // As timeout(1) reports it: whatever the target did on SIGTERM, a
        // call that ran out of time never passes for one that succeeded.
        spdlog::error("the call exceeded its timeout of {} ms and was ended",
                      run.timeout ? run.timeout->count() : 0);
        return exit_timed_out;
    }
    return result.status();
}

nlohmann::json identity_record(const CallOutcome &outcome) {
    nlohmann::json lent = nlohmann::json::array();
    for (const auto &l : outcome.lent) {
        nlohmann::json item{{"path", bytes::to_json(l.path.string())},
                            {"by", l.idmapped ? "idmap" : "ownership"}};
        if (!l.idmapped) {
            item["fileSystem"] = l.filesystem;
        }
        lent.push_back(std::move(item));
    }
    return {{"uid", outcome.uid},
            {"gid", outcome.gid},
            {"from", outcome.identity_from},
            {"lent", std::move(lent)}};
}

nlohmann::json egress_refusals(const nlohmann::json &records) {
    if (records.is_object() && records.contains("refusals") && records["refusals"].is_array()) {
        return records["refusals"];
    }
    return nlohmann::json::array();
}

}  // namespace tea::call
