#include "exec/exec_plan.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tea/json_bytes.hpp>

namespace tea::exec {
namespace {

using nlohmann::json;

const json &field(const json &doc, const char *name) {
    if (!doc.contains(name)) {
        throw std::invalid_argument(std::string{name} + ": missing");
    }
    return doc[name];
}

json parse_object(std::string_view text, const char *what) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error &e) {
        throw std::invalid_argument(std::string{what} + " is not valid JSON: " + e.what());
    }
    if (!doc.is_object()) {
        throw std::invalid_argument(std::string{what} + " is not a JSON object");
    }
    return doc;
}

// doc[key] of an object {"uid", "gid"} named `what`: an unprivileged id.
unsigned unprivileged_id(const json &doc, const char *key, const char *what) {
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_number_unsigned() ||
        doc[key].get<std::uint64_t>() == 0 || doc[key].get<std::uint64_t>() > 0xFFFFFFFEU) {
        // Root's uid or gid would give the target the host's files back.
        throw std::invalid_argument(std::string{what} +
                                    ": expected {\"uid\", \"gid\"}, each an unprivileged id "
                                    "(1..4294967294)");
    }
    return doc[key].get<unsigned>();
}

std::uint64_t unsigned_field(const json &doc, const char *name) {
    if (!doc.contains(name)) {
        return 0;
    }
    if (!doc[name].is_number_unsigned()) {
        throw std::invalid_argument(std::string{name} + ": expected a non-negative integer");
    }
    return doc[name].get<std::uint64_t>();
}

// A NUL would silently cut a string handed to execve: the process would get a
// different argument or variable than the one that was checked.
void no_nul(const std::string &s, const std::string &where) {
    if (s.find('\0') != std::string::npos) {
        throw std::invalid_argument(where + ": holds a NUL byte");
    }
}

}  // namespace

std::string to_json(const LaunchSpec &spec) {
    json doc{
        {"role", spec.role},
        {"argv", bytes::list_to_json(spec.argv)},
        {"env", bytes::list_to_json(spec.env)},
        {"cwd", bytes::to_json(spec.cwd)},
        {"workspace", bytes::to_json(spec.workspace)},
        {"tempDir", bytes::to_json(spec.temp_dir)},
        {"home", bytes::to_json(spec.home)},
        {"withhold", bytes::list_to_json(spec.withhold)},
        {"readOnly", bytes::list_to_json(spec.read_only)},
        {"systemPaths", bytes::list_to_json(spec.system_paths)},
        {"limits",
         {{"cpuSeconds", spec.limits.cpu_seconds},
          {"fileSizeBytes", spec.limits.file_size_bytes},
          {"processes", spec.limits.processes}}},
        {"runtime",
         {{"prefix", bytes::to_json(spec.runtime_prefix)},
          {"helperDir", bytes::to_json(spec.helper_dir)}}},
    };
    if (!spec.unmade.empty()) {
        doc["unmade"] = bytes::list_to_json(spec.unmade);
    }
    if (!spec.read_only_over.empty()) {
        json over = json::array();
        for (const auto &o : spec.read_only_over) {
            over.push_back({{"source", bytes::to_json(o.source)},
                            {"destination", bytes::to_json(o.destination)}});
        }
        doc["readOnlyOver"] = std::move(over);
    }
    if (spec.observed) {
        doc["observed"] = true;
    }
    if (spec.staged) {
        doc["staged"] = true;
    }
    if (spec.identity) {
        doc["identity"] = {{"uid", spec.identity->uid}, {"gid", spec.identity->gid}};
    }
    if (!spec.egress.socket.empty()) {
        doc["egress"] = {{"socket", bytes::to_json(spec.egress.socket)},
                         {"port", spec.egress.port},
                         {"shim", bytes::to_json(spec.egress.shim)}};
    }
    return doc.dump();
}

LaunchSpec launch_spec_from_json(std::string_view text) {
    const json doc = parse_object(text, "the launch spec");
    LaunchSpec spec;
    if (doc.contains("role")) {
        const auto &role = doc["role"];
        // A role a backend does not know must never fall back to some other view.
        if (!role.is_string() || (role != "target" && role != "grader")) {
            throw std::invalid_argument(R"(role: expected "target" or "grader")");
        }
        spec.role = role.get<std::string>();
    }
    spec.argv = bytes::list_from_json(field(doc, "argv"), "argv");
    spec.env = bytes::list_from_json(field(doc, "env"), "env");
    spec.cwd = bytes::from_json(field(doc, "cwd"), "cwd");
    spec.workspace = bytes::from_json(field(doc, "workspace"), "workspace");
    spec.temp_dir = bytes::from_json(field(doc, "tempDir"), "tempDir");
    spec.home = bytes::from_json(field(doc, "home"), "home");
    spec.withhold = bytes::list_from_json(field(doc, "withhold"), "withhold");
    spec.read_only = bytes::list_from_json(field(doc, "readOnly"), "readOnly");
    spec.system_paths = bytes::list_from_json(field(doc, "systemPaths"), "systemPaths");
    if (doc.contains("unmade")) {
        spec.unmade = bytes::list_from_json(doc["unmade"], "unmade");
    }
    if (doc.contains("observed")) {
        if (!doc["observed"].is_boolean()) {
            throw std::invalid_argument("observed: expected a boolean");
        }
        spec.observed = doc["observed"].get<bool>();
    }
    if (doc.contains("staged")) {
        if (!doc["staged"].is_boolean()) {
            throw std::invalid_argument("staged: expected a boolean");
        }
        spec.staged = doc["staged"].get<bool>();
    }
    if (doc.contains("identity")) {
        spec.identity = LaunchSpec::Identity{unprivileged_id(doc["identity"], "uid", "identity"),
                                             unprivileged_id(doc["identity"], "gid", "identity")};
    }
    const auto &limits = field(doc, "limits");
    if (!limits.is_object()) {
        throw std::invalid_argument("limits: expected an object");
    }
    spec.limits.cpu_seconds = unsigned_field(limits, "cpuSeconds");
    spec.limits.file_size_bytes = unsigned_field(limits, "fileSizeBytes");
    spec.limits.processes = unsigned_field(limits, "processes");
    const auto &runtime = field(doc, "runtime");
    if (!runtime.is_object()) {
        throw std::invalid_argument("runtime: expected an object");
    }
    spec.runtime_prefix = bytes::from_json(field(runtime, "prefix"), "runtime.prefix");
    spec.helper_dir = bytes::from_json(field(runtime, "helperDir"), "runtime.helperDir");
    if (doc.contains("readOnlyOver")) {
        const auto &over = doc["readOnlyOver"];
        if (!over.is_array()) {
            throw std::invalid_argument("readOnlyOver: expected an array");
        }
        for (const auto &o : over) {
            if (!o.is_object()) {
                throw std::invalid_argument(
                    "readOnlyOver: expected {\"source\", \"destination\"} items");
            }
            spec.read_only_over.push_back(
                {bytes::from_json(field(o, "source"), "readOnlyOver.source"),
                 bytes::from_json(field(o, "destination"), "readOnlyOver.destination")});
        }
    }
    if (doc.contains("egress")) {
        const auto &egress = doc["egress"];
        if (!egress.is_object() || !field(egress, "port").is_number_unsigned() ||
            egress["port"].get<std::uint64_t>() < 1 ||
            egress["port"].get<std::uint64_t>() > 65535) {
            throw std::invalid_argument("egress: expected {\"socket\", \"port\", \"shim\"}");
        }
        spec.egress.socket = bytes::from_json(field(egress, "socket"), "egress.socket");
        spec.egress.port = egress["port"].get<std::uint16_t>();
        spec.egress.shim = bytes::from_json(field(egress, "shim"), "egress.shim");
    }
    return spec;
}

namespace {

json files_to_json(const std::vector<PlanFile> &plan_files) {
    json files = json::array();
    for (const auto &f : plan_files) {
        if (f.deferred) {
            files.push_back({{"fd", f.child_fd}, {"deferred", true}});
        } else if (f.path.empty()) {
            files.push_back({{"fd", f.child_fd}, {"content", bytes::to_json(f.content)}});
        } else {
            files.push_back({{"fd", f.child_fd}, {"path", bytes::to_json(f.path)}});
        }
    }
    return files;
}

}  // namespace

bool has_deferred_files(const ExecPlan &plan) {
    return std::any_of(plan.files.begin(), plan.files.end(),
                       [](const PlanFile &f) { return f.deferred; });
}

std::string to_json(const ExecPlan &plan) {
    json doc{{"argv", bytes::list_to_json(plan.argv)}, {"env", bytes::list_to_json(plan.env)},
             {"cwd", bytes::to_json(plan.cwd)},        {"files", files_to_json(plan.files)},
             {"confinement", plan.confinement},        {"report", json::parse(plan.report_json)}};
    if (plan.holder) {
        doc["holder"] = {{"argv", bytes::list_to_json(plan.holder->argv)},
                         {"env", bytes::list_to_json(plan.holder->env)},
                         {"cwd", bytes::to_json(plan.holder->cwd)},
                         {"files", files_to_json(plan.holder->files)},
                         {"handoffFd", plan.holder->handoff_fd}};
        doc["handoffFd"] = plan.handoff_fd;
    }
    if (!plan.audit.target_start.empty() || !plan.audit.writable.empty()) {
        doc["audit"] = {{"targetStart", bytes::to_json(plan.audit.target_start)},
                        {"writable", bytes::list_to_json(plan.audit.writable)}};
        if (plan.audit.target_start_is_target) {
            doc["audit"]["targetStartKind"] = "target";
        }
    }
    if (plan.child.requested()) {
        doc["limits"] = {{"cpuSeconds", plan.child.limits.cpu_seconds},
                         {"fileSizeBytes", plan.child.limits.file_size_bytes},
                         {"processes", plan.child.limits.processes}};
        doc["newSessionKeyring"] = plan.child.new_session_keyring;
    }
    if (plan.lend.requested) {
        doc["lend"] = {{"uid", plan.lend.uid},
                       {"gid", plan.lend.gid},
                       {"paths", bytes::list_to_json(plan.lend.paths)}};
    }
    if (plan.run_as.requested) {
        doc["runAs"] = {{"uid", plan.run_as.uid}, {"gid", plan.run_as.gid}};
    }
    if (plan.setup_mark_fd >= 0) {
        doc["setupMark"] = {{"fd", plan.setup_mark_fd}};
    }
    if (plan.make_dirs) {
        doc["makeDirs"] = bytes::list_to_json(*plan.make_dirs);
    }
    return doc.dump();
}

namespace {

// The process a plan (or its holder) starts: argv, env and cwd, each checked, named with prefix.
void parse_process(const json &doc, const std::string &prefix, std::vector<std::string> &argv,
                   std::vector<std::string> &env, std::string &cwd) {
    argv = bytes::list_from_json(field(doc, "argv"), prefix + "argv");
    if (argv.empty() || argv[0].empty()) {
        throw std::invalid_argument(prefix + "argv: empty");
    }
    for (std::size_t i = 0; i < argv.size(); ++i) {
        no_nul(argv[i], prefix + "argv[" + std::to_string(i) + "]");
    }
    env = bytes::list_from_json(field(doc, "env"), prefix + "env");
    for (std::size_t i = 0; i < env.size(); ++i) {
        const auto &entry = env[i];
        const auto where = prefix + "env[" + std::to_string(i) + "]";
        no_nul(entry, where);
        const auto eq = entry.find('=');
        if (eq == std::string::npos || eq == 0) {
            throw std::invalid_argument(where + ": expected NAME=VALUE");
        }
    }
    cwd = bytes::from_json(field(doc, "cwd"), prefix + "cwd");
    no_nul(cwd, prefix + "cwd");
    if (cwd.empty() || cwd[0] != '/') {
        throw std::invalid_argument(prefix + "cwd: expected an absolute path");
    }
}

// A descriptor of the child: 0-2 are the call's own streams; a high number is a mistake, not a
// need; two uses of one number would have the second overwrite the first.
int child_fd(const json &value, const std::string &where, std::set<int> &seen) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 3 ||
        value.get<std::int64_t>() > 255 || !seen.insert(value.get<int>()).second) {
        throw std::invalid_argument(where + ": expected a unique descriptor 3..255");
    }
    return value.get<int>();
}

std::vector<PlanFile> parse_files(const json &doc, const std::string &prefix, std::set<int> &seen,
                                  bool may_defer) {
    std::vector<PlanFile> out;
    if (!doc.contains("files")) {
        return out;
    }
    const auto &files = doc["files"];
    if (!files.is_array() || files.size() > 16) {
        throw std::invalid_argument(prefix + "files: expected an array of at most 16 items");
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        const auto where = prefix + "files[" + std::to_string(i) + "]";
        const auto &f = files[i];
        if (!f.is_object() || !f.contains("fd")) {
            throw std::invalid_argument(where + ".fd: expected an integer");
        }
        const int fd = child_fd(f["fd"], where + ".fd", seen);
        if (f.contains("deferred")) {
            // Only the plan's own process can be started early; a holder is never staged.
            if (!may_defer || f["deferred"] != true || f.size() != 2) {
                throw std::invalid_argument(
                    where + (may_defer ? ": expected {\"fd\", \"deferred\": true} alone"
                                       : ".deferred: a holder's files cannot be deferred"));
            }
            out.push_back(PlanFile{fd, {}, {}, true});
        } else if (f.contains("path")) {
            auto path = bytes::from_json(f["path"], where + ".path");
            no_nul(path, where + ".path");
            if (path.empty() || path[0] != '/' || f.contains("content")) {
                throw std::invalid_argument(where + ": expected an absolute path or content");
            }
            out.push_back(PlanFile{fd, {}, std::move(path)});
        } else {
            out.push_back(
                PlanFile{fd, bytes::from_json(field(f, "content"), where + ".content"), {}});
        }
    }
    return out;
}

}  // namespace

ExecPlan exec_plan_from_json(std::string_view text) {
    const json doc = parse_object(text, "the exec plan");
    for (const auto &[key, value] : doc.items()) {
        if (key != "argv" && key != "env" && key != "cwd" && key != "files" &&
            key != "confinement" && key != "lend" && key != "runAs" && key != "report" &&
            key != "audit" && key != "limits" && key != "newSessionKeyring" && key != "setupMark" &&
            key != "makeDirs" && key != "holder" && key != "handoffFd") {
            throw std::invalid_argument(key + ": unknown field of an exec plan");
        }
    }
    ExecPlan plan;
    parse_process(doc, "", plan.argv, plan.env, plan.cwd);
    const auto &confinement = field(doc, "confinement");
    if (!confinement.is_string() || confinement.get<std::string>().empty()) {
        throw std::invalid_argument("confinement: expected a non-empty string");
    }
    plan.confinement = confinement.get<std::string>();
    if (doc.contains("report")) {
        if (!doc["report"].is_object()) {
            throw std::invalid_argument("report: expected an object");
        }
        plan.report_json = doc["report"].dump();
        if (doc["report"].contains("socketsLeftReachable")) {
            plan.sockets_left_reachable = bytes::list_from_json(
                doc["report"]["socketsLeftReachable"], "report.socketsLeftReachable");
            for (const auto &path : plan.sockets_left_reachable) {
                no_nul(path, "report.socketsLeftReachable");
            }
        }
    }
    if (doc.contains("audit")) {
        const auto &audit = doc["audit"];
        if (!audit.is_object()) {
            throw std::invalid_argument("audit: expected an object");
        }
        for (const auto &[key, value] : audit.items()) {
            if (key != "targetStart" && key != "writable" && key != "targetStartKind") {
                throw std::invalid_argument("audit." + key + ": unknown field");
            }
        }
        if (audit.contains("targetStartKind")) {
            const auto &kind = audit["targetStartKind"];
            if (kind != "launcher" && kind != "target") {
                throw std::invalid_argument(
                    R"(audit.targetStartKind: expected "launcher" or "target")");
            }
            plan.audit.target_start_is_target = kind == "target";
        }
        if (audit.contains("targetStart")) {
            plan.audit.target_start = bytes::from_json(audit["targetStart"], "audit.targetStart");
            no_nul(plan.audit.target_start, "audit.targetStart");
        }
        if (audit.contains("writable")) {
            plan.audit.writable = bytes::list_from_json(audit["writable"], "audit.writable");
            for (const auto &w : plan.audit.writable) {
                no_nul(w, "audit.writable");
                // A relative or root grant would switch the audit of writes off.
                if (w.size() < 2 || w[0] != '/') {
                    throw std::invalid_argument("audit.writable: expected absolute paths below /");
                }
            }
        }
    }
    if (doc.contains("limits")) {
        const auto &limits = doc["limits"];
        if (!limits.is_object()) {
            throw std::invalid_argument("limits: expected an object");
        }
        for (const auto &[key, value] : limits.items()) {
            if (key != "cpuSeconds" && key != "fileSizeBytes" && key != "processes") {
                throw std::invalid_argument("limits." + key + ": unknown field");
            }
        }
        plan.child.limits =
            Limits{unsigned_field(limits, "cpuSeconds"), unsigned_field(limits, "fileSizeBytes"),
                   unsigned_field(limits, "processes")};
    }
    if (doc.contains("newSessionKeyring")) {
        if (!doc["newSessionKeyring"].is_boolean()) {
            throw std::invalid_argument("newSessionKeyring: expected a boolean");
        }
        plan.child.new_session_keyring = doc["newSessionKeyring"].get<bool>();
    }
    if (doc.contains("lend")) {
        const auto &lend = doc["lend"];
        if (!lend.is_object() || !lend.contains("uid") || !lend["uid"].is_number_unsigned() ||
            !lend.contains("gid") || !lend["gid"].is_number_unsigned() ||
            lend["uid"].get<std::uint64_t>() > 0xFFFFFFFEU ||
            lend["gid"].get<std::uint64_t>() > 0xFFFFFFFEU) {
            throw std::invalid_argument("lend: expected {\"uid\", \"gid\", \"paths\"}");
        }
        plan.lend.requested = true;
        plan.lend.uid = lend["uid"].get<unsigned>();
        plan.lend.gid = lend["gid"].get<unsigned>();
        plan.lend.paths = bytes::list_from_json(field(lend, "paths"), "lend.paths");
    }
    if (doc.contains("runAs")) {
        const auto &run_as = doc["runAs"];
        plan.run_as = RunAs{true, unprivileged_id(run_as, "uid", "runAs"),
                            unprivileged_id(run_as, "gid", "runAs")};
    }
    if (doc.contains("makeDirs")) {
        plan.make_dirs = bytes::list_from_json(doc["makeDirs"], "makeDirs");
        for (const auto &d : *plan.make_dirs) {
            no_nul(d, "makeDirs");
        }
    }
    // The descriptors of each process: the plan's files and hand-off end, and the holder's (the
    // setup mark goes to the holder when there is one, since it builds the confinement).
    std::set<int> seen;
    std::set<int> holder_seen;
    if (doc.contains("holder") != doc.contains("handoffFd")) {
        throw std::invalid_argument("holder and handoffFd: expected both or neither");
    }
    if (doc.contains("setupMark")) {
        const auto &mark = doc["setupMark"];
        if (!mark.is_object() || mark.size() != 1 || !mark.contains("fd")) {
            throw std::invalid_argument("setupMark: expected {\"fd\"}, a descriptor 3..255");
        }
        plan.setup_mark_fd =
            child_fd(mark["fd"], "setupMark.fd", doc.contains("holder") ? holder_seen : seen);
    }
    plan.files = parse_files(doc, "", seen, true);
    if (doc.contains("holder")) {
        const auto &h = doc["holder"];
        if (!h.is_object()) {
            throw std::invalid_argument("holder: expected an object");
        }
        for (const auto &[key, value] : h.items()) {
            if (key != "argv" && key != "env" && key != "cwd" && key != "files" &&
                key != "handoffFd") {
                throw std::invalid_argument("holder." + key + ": unknown field");
            }
        }
        Holder holder;
        parse_process(h, "holder.", holder.argv, holder.env, holder.cwd);
        holder.handoff_fd = child_fd(field(h, "handoffFd"), "holder.handoffFd", holder_seen);
        holder.files = parse_files(h, "holder.", holder_seen, false);
        plan.holder = std::move(holder);
        plan.handoff_fd = child_fd(doc["handoffFd"], "handoffFd", seen);
    }
    return plan;
}

}  // namespace tea::exec
