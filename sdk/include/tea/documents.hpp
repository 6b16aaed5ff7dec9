// The documents that cross the plugin boundary, as C++ types with their JSON codecs: the launch
// spec (host -> backend prepare), the exec plan (backend -> host, and observer wrap -> host), the
// observer's wrap and collect requests, and the observation (collect -> host) with its events.
// docs/plugin-authoring.md describes every field; docs/schema/*.schema.json states the same shapes
// as JSON Schema. The runtime reads and writes the documents with this very code.
//
// Optional and header-only: C++17 and nlohmann/json (3.10 or later), which the plugin provides.
// A plugin that uses neither may write and read the JSON any way it likes.
//
// Decoding is strict: a document of the wrong type, a missing required field, a value of the wrong
// type or range, an unknown value of a closed set (a role, an access, a targetStartKind), and an
// unknown field where the protocol refuses one (anywhere in an exec plan, in an event) throw
// tea::documents::DocumentError, whose what() starts with the field's path ("files[2].fd: ...").
// Unknown fields of a launch spec and of a request are ignored: a later minor may add fields, and
// a reader built before it must still work. Byte strings (paths, arguments, environment entries)
// are a JSON string when valid UTF-8 and {"base64": "..."} otherwise (tea/json_bytes.hpp).
//
// Thread-safety: the functions keep no state; the types are plain values.
#ifndef TEA_DOCUMENTS_HPP
#define TEA_DOCUMENTS_HPP

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tea/bytes.hpp>
#include <tea/json_bytes.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tea::documents {

// A document that does not have the shape its reader requires. what() names the field first.
struct DocumentError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// ---------------------------------------------------------------------------------------------
// The launch spec
// ---------------------------------------------------------------------------------------------

// Limits a backend applies inside its confinement (0 = the backend's default).
struct Limits {
    std::uint64_t cpu_seconds = 0;
    std::uint64_t file_size_bytes = 0;
    std::uint64_t processes = 0;
};

// The call's route out, for the backend to carry into its confinement: a call without one has an
// empty socket and sends no "egress".
struct EgressRoute {
    std::string socket;      // the proxy's Unix socket; its directory is bound read-only
    std::uint16_t port = 0;  // the loopback port the shim listens on
    std::string shim;        // the shim the plan runs in front of the target
};

// (ABI 1.9) The bridge into a started service (docs/services-bridge-design.md): the backend runs
// `relay` inside the call's pid and network namespaces, listening on `<dir>/bridge.sock`, and
// shows `dir` read-write at its own path. A call without one has an empty dir and sends none.
struct BridgeRoute {
    std::string dir;    // made by the host in the call's run directory
    std::string relay;  // tea-bridge-relay
};

// (ABI 1.1) A file or directory the runtime made in the call's run directory, shown read-only in
// place of an entry of the workspace, after the withheld paths (it may cover one).
struct ReadOnlyOver {
    std::string source;       // inside the call's run directory
    std::string destination;  // an existing entry of the same type, inside the workspace
};

struct LaunchSpec {
    // "target": the full confinement. "grader": the evaluator's view, outside the target's
    // confinement, with only the read_only paths protected.
    std::string role = "target";
    std::vector<std::string> argv;
    std::vector<std::string> env;  // exact, "NAME=VALUE"
    std::string cwd;               // where the target starts (inside the workspace)
    std::string workspace;         // writable
    std::string temp_dir;          // the call's private temp directory (empty: none)
    std::string home;              // the trial's private home (empty: none)
    // (ABI 1.3) Which of temp_dir and home the host left unmade: the backend provides each inside
    // its confinement, or names it in the plan's make_dirs for the host to make.
    std::vector<std::string> unmade;
    std::vector<std::string> withhold;         // must be absent from the target's view
    std::vector<std::string> read_only;        // granted read-only
    std::vector<ReadOnlyOver> read_only_over;  // (ABI 1.1) shown over entries of the workspace
    std::vector<std::string> system_paths;     // the entry's declared systemPaths
    Limits limits;
    std::string runtime_prefix;  // the runtime's installation
    std::string helper_dir;      // where the runtime's helper executables are
    EgressRoute egress;
    // (ABI 1.4) An observer will wrap the plan: the backend may answer with a holder.
    bool observed = false;
    // (ABI 1.5) The host starts the plan's process before the plan is complete: answer with the
    // process as it will run, files not computed yet marked deferred.
    bool staged = false;
    // (ABI 1.6) The identity the host took for this call's target alone.
    struct Identity {
        unsigned uid = 0;  // never 0
        unsigned gid = 0;  // never 0
    };
    std::optional<Identity> identity;
    // (ABI 1.8) Files of a login shown read-only inside the private home, with the content the
    // host read for this call (never a path to the user's file: what the target can read is
    // exactly what the host read, and so what it redacts). Empty unless the home is set.
    struct LoginFile {
        std::string home_path;  // relative to the home, no "." or ".." component
        std::string content;    // at most kMaxLoginFileBytes
    };
    std::vector<LoginFile> login_files;
    BridgeRoute bridge;  // (ABI 1.9)
};

// The largest login file a launch spec carries: far above any real one (a few hundred bytes for
// Claude Code, a few KiB for Codex).
inline constexpr std::size_t kMaxLoginFileBytes = std::size_t{64} * 1024;

// ---------------------------------------------------------------------------------------------
// The exec plan
// ---------------------------------------------------------------------------------------------

// A descriptor of the plan's process: `content` in a sealed memfd, or the file at `path` opened
// read-only by the host, or (ABI 1.5, answering a staged spec) a deferred pipe whose content the
// host writes once the complete plan names it.
struct PlanFile {
    int child_fd = -1;
    std::string content;
    std::string path;  // when set, the file is opened instead of content
    bool deferred = false;
};

// Directories of the call the host hands to the identity the target runs as, for the call.
struct Lend {
    bool requested = false;
    unsigned uid = 0;
    unsigned gid = 0;
    std::vector<std::string> paths;  // each the spec's workspace, temp dir or home
};

// What the audit needs to know of a confinement; empty for one that confines nothing.
struct AuditHints {
    // The path of the exec that starts the target's side of the plan: what the trace shows before
    // its first success is the mechanism's own set-up.
    std::string target_start;
    // (ABI 1.1) "target": the process making that exec is the target itself; "launcher" (false,
    // the default): it is a launcher whose work until its next exec is the mechanism's.
    bool target_start_is_target = false;
    // Places the target may write that the launch spec does not name.
    std::vector<std::string> writable;
};

// The unprivileged identity the host runs the plan's process as (only a root host honours it).
struct RunAs {
    bool requested = false;
    unsigned uid = 0;  // never 0
    unsigned gid = 0;  // never 0
};

// (ABI 1.1) What the host applies in the child just before the exec: resource limits (0 = leave
// as is) and a fresh anonymous session keyring. (ABI 1.10) And a session of its own in place of
// the process group alone: no controlling terminal.
struct ChildSetup {
    Limits limits;
    bool new_session_keyring = false;
    bool new_session = false;  // (ABI 1.10)
    [[nodiscard]] bool requested() const {
        return new_session_keyring || limits.cpu_seconds != 0 || limits.file_size_bytes != 0 ||
               limits.processes != 0;
    }
};

// (ABI 1.4) A process started beside the plan's own and never shown to an observer: it builds the
// confinement and holds it while the plan's process joins it through a socket pair, one end at
// each one's handoff_fd.
struct Holder {
    std::vector<std::string> argv;
    std::vector<std::string> env;
    std::string cwd;
    std::vector<PlanFile> files;
    int handoff_fd = -1;
};

struct ExecPlan {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // the exact environment of the process the host starts
    std::string cwd;
    std::vector<PlanFile> files;
    std::string confinement;  // what the plan provides: "opt-out", "bubblewrap", ...
    Lend lend;
    RunAs run_as;
    ChildSetup child;
    std::string report_json = "{}";  // the backend's notes for the call's record (an object)
    // The report's socketsLeftReachable, the one key of it the host reads (filled on decoding;
    // a backend writes it into report_json).
    std::vector<std::string> sockets_left_reachable;
    AuditHints audit;
    // (ABI 1.3) Which of the spec's unmade directories the host must make; answered (maybe empty)
    // by every plan for a spec that has unmade directories.
    std::optional<std::vector<std::string>> make_dirs;
    // (ABI 1.2) Where the child finds a pipe holding one byte, read once the confinement stands;
    // -1: none.
    int setup_mark_fd = -1;
    // (ABI 1.4) The holder, and where the plan's own process finds its end of the hand-off socket.
    std::optional<Holder> holder;
    int handoff_fd = -1;
};

// ---------------------------------------------------------------------------------------------
// The observer's documents
// ---------------------------------------------------------------------------------------------

// wrap's request: the plan prepare returned, and the call's fresh trace directory.
struct WrapRequest {
    ExecPlan plan;
    std::string trace_dir;
};

// collect's request.
struct CollectRequest {
    std::string trace_dir;                // the directory wrap was given
    std::string initial_cwd;              // the plan's cwd
    std::string target_start;             // the plan's audit.targetStart; empty when it has none
    bool target_start_is_target = false;  // (ABI 1.1) its targetStartKind is "target"
};

// What an access did to the path it names (the judge's meaning of each: core/audit/judge.hpp).
enum class Access : std::uint8_t {
    read,
    write,
    exec,
    list,
    readlink,
    create,
    remove,
    metadata,
    other
};

// One distinct access of the call.
struct ObservedEvent {
    int pid = 0;  // 0..2147483647, as the observer numbers processes
    std::string syscall;
    std::string asked;     // made absolute, no link followed
    std::string resolved;  // the real path when known, else ""
    Access access = Access::other;
    bool ok = false;
    std::string error;        // the errno name of a failed call; "" when absent
    std::string named;        // what `asked` names once the links seen are followed; "" when absent
    std::string unverified;   // why the file reached is not known; "" when absent
    std::uint64_t count = 1;  // how many times it happened, at least 1
};

struct Observation {
    bool complete = false;
    std::string reason;  // why it is not complete
    bool target_started = false;
    std::vector<ObservedEvent> events;
    // Counters for diagnostics (the strace observer's "lines"), written after the fields above.
    std::vector<std::pair<std::string, std::uint64_t>> counters;
};

// ---------------------------------------------------------------------------------------------
// Comparisons (C++17 has no defaulted ones)
// ---------------------------------------------------------------------------------------------

inline bool operator==(const Limits &a, const Limits &b) {
    return a.cpu_seconds == b.cpu_seconds && a.file_size_bytes == b.file_size_bytes &&
           a.processes == b.processes;
}
inline bool operator!=(const Limits &a, const Limits &b) {
    return !(a == b);
}
inline bool operator==(const LaunchSpec::Identity &a, const LaunchSpec::Identity &b) {
    return a.uid == b.uid && a.gid == b.gid;
}
inline bool operator!=(const LaunchSpec::Identity &a, const LaunchSpec::Identity &b) {
    return !(a == b);
}
inline bool operator==(const PlanFile &a, const PlanFile &b) {
    return a.child_fd == b.child_fd && a.content == b.content && a.path == b.path &&
           a.deferred == b.deferred;
}
inline bool operator!=(const PlanFile &a, const PlanFile &b) {
    return !(a == b);
}
inline bool operator==(const Lend &a, const Lend &b) {
    return a.requested == b.requested && a.uid == b.uid && a.gid == b.gid && a.paths == b.paths;
}
inline bool operator!=(const Lend &a, const Lend &b) {
    return !(a == b);
}
inline bool operator==(const RunAs &a, const RunAs &b) {
    return a.requested == b.requested && a.uid == b.uid && a.gid == b.gid;
}
inline bool operator!=(const RunAs &a, const RunAs &b) {
    return !(a == b);
}
inline bool operator==(const ChildSetup &a, const ChildSetup &b) {
    return a.limits == b.limits && a.new_session_keyring == b.new_session_keyring &&
           a.new_session == b.new_session;
}
inline bool operator!=(const ChildSetup &a, const ChildSetup &b) {
    return !(a == b);
}

// Whether the plan's own process has files whose content is not written yet (ABI 1.5).
inline bool has_deferred_files(const ExecPlan &plan) {
    return std::any_of(plan.files.begin(), plan.files.end(),
                       [](const PlanFile &f) { return f.deferred; });
}

inline const char *to_string(Access access) {
    switch (access) {
        case Access::read:
            return "read";
        case Access::write:
            return "write";
        case Access::exec:
            return "exec";
        case Access::list:
            return "list";
        case Access::readlink:
            return "readlink";
        case Access::create:
            return "create";
        case Access::remove:
            return "remove";
        case Access::metadata:
            return "metadata";
        case Access::other:
            break;
    }
    return "other";
}

inline std::optional<Access> access_from_string(std::string_view name) {
    static constexpr std::array<Access, 9> all{Access::read,   Access::write,    Access::exec,
                                               Access::list,   Access::readlink, Access::create,
                                               Access::remove, Access::metadata, Access::other};
    for (const auto a : all) {
        if (name == to_string(a)) {
            return a;
        }
    }
    return std::nullopt;
}

namespace detail {

// A path inside the private home: relative, no empty, "." or ".." component, so a grant cannot
// link a file over anything outside the home or over the home itself.
inline bool is_home_relative(std::string_view path) {
    if (path.empty() || path.front() == '/' || path.back() == '/') {
        return false;
    }
    std::size_t begin = 0;
    while (begin <= path.size()) {
        const auto end = std::min(path.find('/', begin), path.size());
        const auto part = path.substr(begin, end - begin);
        if (part.empty() || part == "." || part == "..") {
            return false;
        }
        begin = end + 1;
    }
    return true;
}

using nlohmann::json;

[[noreturn]] inline void fail(const std::string &message) {
    throw DocumentError(message);
}

inline json parse_object(std::string_view text, const char *what) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error &e) {
        fail(std::string{what} + " is not valid JSON: " + e.what());
    }
    if (!doc.is_object()) {
        fail(std::string{what} + " is not a JSON object");
    }
    return doc;
}

inline const json &field(const json &doc, const std::string &prefix, const char *name) {
    const auto it = doc.find(name);
    if (it == doc.end()) {
        fail(prefix + name + ": missing");
    }
    return *it;
}

// The byte-string readers of tea/json_bytes.hpp, with their error as a DocumentError.
inline std::string byte_string(const json &value, const std::string &where) {
    try {
        return bytes::from_json(value, where);
    } catch (const std::invalid_argument &e) {
        fail(e.what());
    }
}
inline std::vector<std::string> byte_strings(const json &value, const std::string &where) {
    try {
        return bytes::list_from_json(value, where);
    } catch (const std::invalid_argument &e) {
        fail(e.what());
    }
}

// A NUL would silently cut a string handed to execve: the process would get a different argument
// or variable than the one that was checked.
inline void no_nul(const std::string &s, const std::string &where) {
    if (s.find('\0') != std::string::npos) {
        fail(where + ": holds a NUL byte");
    }
}

// A non-negative integer field, 0 when absent.
inline std::uint64_t unsigned_field(const json &doc, const std::string &prefix, const char *name) {
    const auto it = doc.find(name);
    if (it == doc.end()) {
        return 0;
    }
    if (!it->is_number_unsigned()) {
        fail(prefix + name + ": expected a non-negative integer");
    }
    return it->get<std::uint64_t>();
}

inline bool boolean_field(const json &doc, const char *name) {
    const auto it = doc.find(name);
    if (it == doc.end()) {
        return false;
    }
    if (!it->is_boolean()) {
        fail(std::string{name} + ": expected a boolean");
    }
    return it->get<bool>();
}

// doc[key] of an object {"uid", "gid"} named `what`: an unprivileged id. Root's uid or gid would
// give the target the host's files back.
inline unsigned unprivileged_id(const json &doc, const char *key, const char *what) {
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_number_unsigned() ||
        doc[key].get<std::uint64_t>() == 0 || doc[key].get<std::uint64_t>() > 0xFFFFFFFEU) {
        fail(std::string{what} +
             ": expected {\"uid\", \"gid\"}, each an unprivileged id (1..4294967294)");
    }
    return doc[key].get<unsigned>();
}

inline json limits_to_json(const Limits &limits) {
    return {{"cpuSeconds", limits.cpu_seconds},
            {"fileSizeBytes", limits.file_size_bytes},
            {"processes", limits.processes}};
}

inline json files_to_json(const std::vector<PlanFile> &plan_files) {
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

// The process a plan (or its holder) starts: argv, env and cwd, each checked, named with prefix.
inline void parse_process(const json &doc, const std::string &prefix,
                          std::vector<std::string> &argv, std::vector<std::string> &env,
                          std::string &cwd) {
    argv = byte_strings(field(doc, prefix, "argv"), prefix + "argv");
    if (argv.empty() || argv[0].empty()) {
        fail(prefix + "argv: empty");
    }
    for (std::size_t i = 0; i < argv.size(); ++i) {
        no_nul(argv[i], prefix + "argv[" + std::to_string(i) + "]");
    }
    env = byte_strings(field(doc, prefix, "env"), prefix + "env");
    for (std::size_t i = 0; i < env.size(); ++i) {
        const auto &entry = env[i];
        const auto where = prefix + "env[" + std::to_string(i) + "]";
        no_nul(entry, where);
        const auto eq = entry.find('=');
        if (eq == std::string::npos || eq == 0) {
            fail(where + ": expected NAME=VALUE");
        }
    }
    cwd = byte_string(field(doc, prefix, "cwd"), prefix + "cwd");
    no_nul(cwd, prefix + "cwd");
    if (cwd.empty() || cwd[0] != '/') {
        fail(prefix + "cwd: expected an absolute path");
    }
}

// A descriptor of the child: 0-2 are the call's own streams; a high number is a mistake, not a
// need; two uses of one number would have the second overwrite the first.
inline int child_fd(const json &value, const std::string &where, std::set<int> &seen) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 3 ||
        value.get<std::int64_t>() > 255 || !seen.insert(value.get<int>()).second) {
        fail(where + ": expected a unique descriptor 3..255");
    }
    return value.get<int>();
}

inline std::vector<PlanFile> parse_files(const json &doc, const std::string &prefix,
                                         std::set<int> &seen, bool may_defer) {
    std::vector<PlanFile> out;
    const auto it = doc.find("files");
    if (it == doc.end()) {
        return out;
    }
    const auto &files = *it;
    if (!files.is_array() || files.size() > 16) {
        fail(prefix + "files: expected an array of at most 16 items");
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        const auto where = prefix + "files[" + std::to_string(i) + "]";
        const auto &f = files[i];
        if (!f.is_object() || !f.contains("fd")) {
            fail(where + ".fd: expected an integer");
        }
        const int fd = child_fd(f["fd"], where + ".fd", seen);
        if (f.contains("deferred")) {
            // Only the plan's own process can be started early; a holder is never staged.
            if (!may_defer || f["deferred"] != true || f.size() != 2) {
                fail(where + (may_defer ? ": expected {\"fd\", \"deferred\": true} alone"
                                        : ".deferred: a holder's files cannot be deferred"));
            }
            out.push_back(PlanFile{fd, {}, {}, true});
        } else if (f.contains("path")) {
            auto path = byte_string(f["path"], where + ".path");
            no_nul(path, where + ".path");
            if (path.empty() || path[0] != '/' || f.contains("content")) {
                fail(where + ": expected an absolute path or content");
            }
            out.push_back(PlanFile{fd, {}, std::move(path), false});
        } else {
            out.push_back(PlanFile{
                fd, byte_string(field(f, where + ".", "content"), where + ".content"), {}, false});
        }
    }
    return out;
}

template <std::size_t N>
void only_known(const json &doc, const std::array<const char *, N> &known,
                const std::string &prefix, const char *what) {
    for (const auto &item : doc.items()) {
        const auto &key = item.key();
        if (std::none_of(known.begin(), known.end(), [&](const char *k) { return key == k; })) {
            fail(prefix + key + ": unknown field" + what);
        }
    }
}

// Appends `text` as a JSON string: the escapes JSON requires and nothing more. `text` must be
// valid UTF-8 (the caller has checked).
inline void append_escaped(std::string &out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    std::size_t run = 0;  // the start of the bytes that need no escape, appended in one piece
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto u = static_cast<unsigned char>(text[i]);
        if (u >= 0x20 && u != '"' && u != '\\') {
            continue;
        }
        out.append(text.substr(run, i - run));
        if (u < 0x20) {
            out += "\\u00";
            out += hex[u >> 4U];
            out += hex[u & 0xFU];
        } else {
            out += '\\';
            out += static_cast<char>(u);
        }
        run = i + 1;
    }
    out.append(text.substr(run));
    out += '"';
}

// Appends a byte string: a JSON string when it is UTF-8, {"base64": ...} otherwise.
inline void append_bytes(std::string &out, std::string_view value) {
    if (!bytes::is_valid_utf8(value)) {
        out += R"({"base64":")";
        out += bytes::base64_encode(value);
        out += "\"}";
        return;
    }
    append_escaped(out, value);
}

// Appends a plain (text) string field's value; a text field never carries other bytes.
inline void append_text(std::string &out, std::string_view value, const char *field_name) {
    if (!bytes::is_valid_utf8(value)) {
        fail(std::string{field_name} + ": not valid UTF-8");
    }
    append_escaped(out, value);
}

template <class Integer>
void append_number(std::string &out, Integer n) {
    std::array<char, 24> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), n).ptr;
    out.append(digits.data(), static_cast<std::size_t>(end - digits.data()));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Launch spec codec
// ---------------------------------------------------------------------------------------------

inline nlohmann::json launch_spec_to_json(const LaunchSpec &spec) {
    using nlohmann::json;
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
        {"limits", detail::limits_to_json(spec.limits)},
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
    if (!spec.login_files.empty()) {
        json files = json::array();
        for (const auto &f : spec.login_files) {
            files.push_back({{"homePath", bytes::to_json(f.home_path)},
                             {"content", bytes::to_json(f.content)}});
        }
        doc["loginFiles"] = std::move(files);
    }
    if (!spec.bridge.dir.empty()) {
        doc["bridge"] = {{"dir", bytes::to_json(spec.bridge.dir)},
                         {"relay", bytes::to_json(spec.bridge.relay)}};
    }
    if (!spec.egress.socket.empty()) {
        doc["egress"] = {{"socket", bytes::to_json(spec.egress.socket)},
                         {"port", spec.egress.port},
                         {"shim", bytes::to_json(spec.egress.shim)}};
    }
    return doc;
}

inline LaunchSpec launch_spec_from_json(const nlohmann::json &doc) {
    using detail::byte_string;
    using detail::byte_strings;
    using detail::fail;
    using detail::field;
    if (!doc.is_object()) {
        fail("the launch spec is not a JSON object");
    }
    LaunchSpec spec;
    if (const auto role = doc.find("role"); role != doc.end()) {
        // A role a backend does not know must never fall back to some other view.
        if (!role->is_string() || (*role != "target" && *role != "grader")) {
            fail(R"(role: expected "target" or "grader", got )" +
                 role->dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
        }
        spec.role = role->get<std::string>();
    }
    spec.argv = byte_strings(field(doc, "", "argv"), "argv");
    spec.env = byte_strings(field(doc, "", "env"), "env");
    spec.cwd = byte_string(field(doc, "", "cwd"), "cwd");
    spec.workspace = byte_string(field(doc, "", "workspace"), "workspace");
    spec.temp_dir = byte_string(field(doc, "", "tempDir"), "tempDir");
    spec.home = byte_string(field(doc, "", "home"), "home");
    spec.withhold = byte_strings(field(doc, "", "withhold"), "withhold");
    spec.read_only = byte_strings(field(doc, "", "readOnly"), "readOnly");
    spec.system_paths = byte_strings(field(doc, "", "systemPaths"), "systemPaths");
    if (const auto unmade = doc.find("unmade"); unmade != doc.end()) {
        spec.unmade = byte_strings(*unmade, "unmade");
        for (const auto &u : spec.unmade) {
            // Anything else would have a backend provide, or the host make, a directory the
            // call does not own.
            if (u.empty() || (u != spec.temp_dir && u != spec.home)) {
                fail("unmade: " + u + " is neither the tempDir nor the home");
            }
        }
    }
    spec.observed = detail::boolean_field(doc, "observed");
    spec.staged = detail::boolean_field(doc, "staged");
    if (const auto identity = doc.find("identity"); identity != doc.end()) {
        spec.identity = LaunchSpec::Identity{detail::unprivileged_id(*identity, "uid", "identity"),
                                             detail::unprivileged_id(*identity, "gid", "identity")};
    }
    const auto &limits = field(doc, "", "limits");
    if (!limits.is_object()) {
        fail("limits: expected an object");
    }
    spec.limits = Limits{detail::unsigned_field(limits, "limits.", "cpuSeconds"),
                         detail::unsigned_field(limits, "limits.", "fileSizeBytes"),
                         detail::unsigned_field(limits, "limits.", "processes")};
    const auto &runtime = field(doc, "", "runtime");
    if (!runtime.is_object()) {
        fail("runtime: expected an object");
    }
    spec.runtime_prefix = byte_string(field(runtime, "runtime.", "prefix"), "runtime.prefix");
    spec.helper_dir = byte_string(field(runtime, "runtime.", "helperDir"), "runtime.helperDir");
    if (const auto over = doc.find("readOnlyOver"); over != doc.end()) {
        if (!over->is_array()) {
            fail("readOnlyOver: expected an array");
        }
        for (std::size_t i = 0; i < over->size(); ++i) {
            const auto &o = (*over)[i];
            const auto where = "readOnlyOver[" + std::to_string(i) + "]";
            if (!o.is_object()) {
                fail(where + R"(: expected {"source", "destination"})");
            }
            spec.read_only_over.push_back(
                {byte_string(field(o, where + ".", "source"), where + ".source"),
                 byte_string(field(o, where + ".", "destination"), where + ".destination")});
        }
    }
    if (const auto files = doc.find("loginFiles"); files != doc.end()) {
        if (!files->is_array()) {
            fail("loginFiles: expected an array");
        }
        // A login file needs a home to lie in: without one a backend would have to pick a place.
        if (!files->empty() && spec.home.empty()) {
            fail("loginFiles: the spec has no home to show them in");
        }
        for (std::size_t i = 0; i < files->size(); ++i) {
            const auto &f = (*files)[i];
            const auto where = "loginFiles[" + std::to_string(i) + "]";
            if (!f.is_object()) {
                fail(where + R"(: expected {"homePath", "content"})");
            }
            LaunchSpec::LoginFile file{
                byte_string(field(f, where + ".", "homePath"), where + ".homePath"),
                byte_string(field(f, where + ".", "content"), where + ".content")};
            // Relative and without "..": a file shown anywhere else could cover what the target
            // trusts (a library, /etc/passwd) or lie outside the home.
            if (!detail::is_home_relative(file.home_path)) {
                fail(where + ".homePath: " + file.home_path +
                     " is not a path inside the home (relative, no empty, . or .. part)");
            }
            if (file.content.size() > kMaxLoginFileBytes) {
                fail(where + ".content: larger than " + std::to_string(kMaxLoginFileBytes) +
                     " bytes");
            }
            for (const auto &other : spec.login_files) {
                if (other.home_path == file.home_path) {
                    fail(where + ".homePath: " + file.home_path + " is named twice");
                }
            }
            spec.login_files.push_back(std::move(file));
        }
    }
    if (const auto egress = doc.find("egress"); egress != doc.end()) {
        if (!egress->is_object()) {
            fail(R"(egress: expected {"socket", "port", "shim"})");
        }
        const auto &port = field(*egress, "egress.", "port");
        if (!port.is_number_unsigned() || port.get<std::uint64_t>() < 1 ||
            port.get<std::uint64_t>() > 65535) {
            fail("egress.port: expected a port from 1 to 65535");
        }
        spec.egress.socket = byte_string(field(*egress, "egress.", "socket"), "egress.socket");
        spec.egress.port = port.get<std::uint16_t>();
        spec.egress.shim = byte_string(field(*egress, "egress.", "shim"), "egress.shim");
    }
    if (const auto bridge = doc.find("bridge"); bridge != doc.end()) {
        if (!bridge->is_object()) {
            fail(R"(bridge: expected {"dir", "relay"})");
        }
        spec.bridge.dir = byte_string(field(*bridge, "bridge.", "dir"), "bridge.dir");
        spec.bridge.relay = byte_string(field(*bridge, "bridge.", "relay"), "bridge.relay");
        // Relative paths would be resolved against whatever directory the backend runs in.
        for (const auto &[name, path] : {std::pair{"bridge.dir", &spec.bridge.dir},
                                         std::pair{"bridge.relay", &spec.bridge.relay}}) {
            if (path->empty() || path->front() != '/') {
                fail(std::string{name} + ": expected an absolute path, got \"" + *path + "\"");
            }
        }
    }
    return spec;
}

inline std::string encode(const LaunchSpec &spec) {
    return launch_spec_to_json(spec).dump();
}

inline LaunchSpec decode_launch_spec(std::string_view text) {
    return launch_spec_from_json(detail::parse_object(text, "the launch spec"));
}

// ---------------------------------------------------------------------------------------------
// Exec plan codec
// ---------------------------------------------------------------------------------------------

inline nlohmann::json exec_plan_to_json(const ExecPlan &plan) {
    using nlohmann::json;
    json report;
    try {
        report = json::parse(plan.report_json);
    } catch (const json::parse_error &e) {
        detail::fail(std::string{"report: not valid JSON: "} + e.what());
    }
    json doc{{"argv", bytes::list_to_json(plan.argv)}, {"env", bytes::list_to_json(plan.env)},
             {"cwd", bytes::to_json(plan.cwd)},        {"files", detail::files_to_json(plan.files)},
             {"confinement", plan.confinement},        {"report", std::move(report)}};
    if (plan.holder) {
        doc["holder"] = {{"argv", bytes::list_to_json(plan.holder->argv)},
                         {"env", bytes::list_to_json(plan.holder->env)},
                         {"cwd", bytes::to_json(plan.holder->cwd)},
                         {"files", detail::files_to_json(plan.holder->files)},
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
        doc["limits"] = detail::limits_to_json(plan.child.limits);
        doc["newSessionKeyring"] = plan.child.new_session_keyring;
    }
    // Only when asked: a host older than 1.10 refuses the field.
    if (plan.child.new_session) {
        doc["newSession"] = true;
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
    return doc;
}

// Checks every field; the host refuses a plan that fails any check before anything runs.
inline ExecPlan exec_plan_from_json(const nlohmann::json &doc) {
    using detail::byte_string;
    using detail::byte_strings;
    using detail::fail;
    using detail::field;
    using detail::no_nul;
    if (!doc.is_object()) {
        fail("the exec plan is not a JSON object");
    }
    detail::only_known(
        doc,
        std::array<const char *, 16>{"argv", "env", "cwd", "files", "confinement", "lend", "runAs",
                                     "report", "audit", "limits", "newSessionKeyring", "newSession",
                                     "setupMark", "makeDirs", "holder", "handoffFd"},
        "", " of an exec plan");
    ExecPlan plan;
    detail::parse_process(doc, "", plan.argv, plan.env, plan.cwd);
    const auto &confinement = field(doc, "", "confinement");
    if (!confinement.is_string() || confinement.get<std::string>().empty()) {
        fail("confinement: expected a non-empty string");
    }
    plan.confinement = confinement.get<std::string>();
    if (const auto report = doc.find("report"); report != doc.end()) {
        if (!report->is_object()) {
            fail("report: expected an object");
        }
        plan.report_json = report->dump();
        if (const auto sockets = report->find("socketsLeftReachable"); sockets != report->end()) {
            plan.sockets_left_reachable = byte_strings(*sockets, "report.socketsLeftReachable");
            for (const auto &path : plan.sockets_left_reachable) {
                no_nul(path, "report.socketsLeftReachable");
            }
        }
    }
    if (const auto audit = doc.find("audit"); audit != doc.end()) {
        if (!audit->is_object()) {
            fail("audit: expected an object");
        }
        detail::only_known(
            *audit, std::array<const char *, 3>{"targetStart", "writable", "targetStartKind"},
            "audit.", "");
        if (const auto kind = audit->find("targetStartKind"); kind != audit->end()) {
            if (*kind != "launcher" && *kind != "target") {
                fail(R"(audit.targetStartKind: expected "launcher" or "target")");
            }
            plan.audit.target_start_is_target = *kind == "target";
        }
        if (const auto start = audit->find("targetStart"); start != audit->end()) {
            plan.audit.target_start = byte_string(*start, "audit.targetStart");
            no_nul(plan.audit.target_start, "audit.targetStart");
        }
        if (const auto writable = audit->find("writable"); writable != audit->end()) {
            plan.audit.writable = byte_strings(*writable, "audit.writable");
            for (const auto &w : plan.audit.writable) {
                no_nul(w, "audit.writable");
                // A relative or root grant would switch the audit of writes off.
                if (w.size() < 2 || w[0] != '/') {
                    fail("audit.writable: expected absolute paths below /");
                }
            }
        }
    }
    if (const auto limits = doc.find("limits"); limits != doc.end()) {
        if (!limits->is_object()) {
            fail("limits: expected an object");
        }
        detail::only_known(*limits,
                           std::array<const char *, 3>{"cpuSeconds", "fileSizeBytes", "processes"},
                           "limits.", "");
        plan.child.limits = Limits{detail::unsigned_field(*limits, "limits.", "cpuSeconds"),
                                   detail::unsigned_field(*limits, "limits.", "fileSizeBytes"),
                                   detail::unsigned_field(*limits, "limits.", "processes")};
    }
    plan.child.new_session_keyring = detail::boolean_field(doc, "newSessionKeyring");
    plan.child.new_session = detail::boolean_field(doc, "newSession");
    if (const auto lend = doc.find("lend"); lend != doc.end()) {
        if (!lend->is_object() || !lend->contains("uid") || !(*lend)["uid"].is_number_unsigned() ||
            !lend->contains("gid") || !(*lend)["gid"].is_number_unsigned() ||
            (*lend)["uid"].get<std::uint64_t>() > 0xFFFFFFFEU ||
            (*lend)["gid"].get<std::uint64_t>() > 0xFFFFFFFEU) {
            fail(R"(lend: expected {"uid", "gid", "paths"})");
        }
        plan.lend.requested = true;
        plan.lend.uid = (*lend)["uid"].get<unsigned>();
        plan.lend.gid = (*lend)["gid"].get<unsigned>();
        plan.lend.paths = byte_strings(field(*lend, "lend.", "paths"), "lend.paths");
    }
    if (const auto run_as = doc.find("runAs"); run_as != doc.end()) {
        plan.run_as = RunAs{true, detail::unprivileged_id(*run_as, "uid", "runAs"),
                            detail::unprivileged_id(*run_as, "gid", "runAs")};
    }
    if (const auto make_dirs = doc.find("makeDirs"); make_dirs != doc.end()) {
        plan.make_dirs = byte_strings(*make_dirs, "makeDirs");
        for (const auto &d : *plan.make_dirs) {
            no_nul(d, "makeDirs");
        }
    }
    // The descriptors of each process: the plan's files and hand-off end, and the holder's (the
    // setup mark goes to the holder when there is one, since it builds the confinement).
    std::set<int> seen;
    std::set<int> holder_seen;
    const bool has_holder = doc.contains("holder");
    if (has_holder != doc.contains("handoffFd")) {
        fail("holder and handoffFd: expected both or neither");
    }
    if (const auto mark = doc.find("setupMark"); mark != doc.end()) {
        if (!mark->is_object() || mark->size() != 1 || !mark->contains("fd")) {
            fail(R"(setupMark: expected {"fd"}, a descriptor 3..255)");
        }
        plan.setup_mark_fd =
            detail::child_fd((*mark)["fd"], "setupMark.fd", has_holder ? holder_seen : seen);
    }
    plan.files = detail::parse_files(doc, "", seen, true);
    if (has_holder) {
        const auto &h = doc["holder"];
        if (!h.is_object()) {
            fail("holder: expected an object");
        }
        detail::only_known(h,
                           std::array<const char *, 5>{"argv", "env", "cwd", "files", "handoffFd"},
                           "holder.", "");
        Holder holder;
        detail::parse_process(h, "holder.", holder.argv, holder.env, holder.cwd);
        holder.handoff_fd =
            detail::child_fd(field(h, "holder.", "handoffFd"), "holder.handoffFd", holder_seen);
        holder.files = detail::parse_files(h, "holder.", holder_seen, false);
        plan.holder = std::move(holder);
        plan.handoff_fd = detail::child_fd(doc["handoffFd"], "handoffFd", seen);
    }
    return plan;
}

inline std::string encode(const ExecPlan &plan) {
    return exec_plan_to_json(plan).dump();
}

inline ExecPlan decode_exec_plan(std::string_view text) {
    return exec_plan_from_json(detail::parse_object(text, "the exec plan"));
}

// ---------------------------------------------------------------------------------------------
// Observer request codecs
// ---------------------------------------------------------------------------------------------

inline std::string encode(const WrapRequest &request) {
    return nlohmann::json{{"plan", exec_plan_to_json(request.plan)},
                          {"traceDir", bytes::to_json(request.trace_dir)}}
        .dump();
}

inline WrapRequest decode_wrap_request(std::string_view text) {
    const auto doc = detail::parse_object(text, "the wrap request");
    WrapRequest request;
    try {
        request.plan = exec_plan_from_json(detail::field(doc, "", "plan"));
    } catch (const DocumentError &e) {
        detail::fail(std::string{"plan."} + e.what());
    }
    request.trace_dir = detail::byte_string(detail::field(doc, "", "traceDir"), "traceDir");
    return request;
}

inline std::string encode(const CollectRequest &request) {
    nlohmann::json doc{{"traceDir", bytes::to_json(request.trace_dir)},
                       {"initialCwd", bytes::to_json(request.initial_cwd)}};
    if (!request.target_start.empty()) {
        doc["targetStart"] = bytes::to_json(request.target_start);
        doc["targetStartKind"] = request.target_start_is_target ? "target" : "launcher";
    }
    return doc.dump();
}

inline CollectRequest decode_collect_request(std::string_view text) {
    const auto doc = detail::parse_object(text, "the collect request");
    CollectRequest request;
    request.trace_dir = detail::byte_string(detail::field(doc, "", "traceDir"), "traceDir");
    request.initial_cwd = detail::byte_string(detail::field(doc, "", "initialCwd"), "initialCwd");
    if (const auto start = doc.find("targetStart"); start != doc.end()) {
        request.target_start = detail::byte_string(*start, "targetStart");
    }
    if (const auto kind = doc.find("targetStartKind"); kind != doc.end()) {
        if (*kind != "launcher" && *kind != "target") {
            detail::fail(R"(targetStartKind: expected "launcher" or "target")");
        }
        request.target_start_is_target = *kind == "target";
    }
    return request;
}

// ---------------------------------------------------------------------------------------------
// Observation codec
//
// An audit of a busy call reports tens of thousands of events, so the observation is written and
// read as a stream: no JSON tree of the events is ever built, on either side.
// ---------------------------------------------------------------------------------------------

// An event as the writers take it: ObservedEvent's fields, borrowed for the call.
struct ObservedEventView {
    int pid = 0;
    std::string_view syscall;
    std::string_view asked;
    std::string_view resolved;
    Access access = Access::other;
    bool ok = false;
    std::string_view error;
    std::string_view named;
    std::string_view unverified;
    std::uint64_t count = 1;
};

inline ObservedEventView view_of(const ObservedEvent &e) {
    return {e.pid, e.syscall, e.asked, e.resolved,   e.access,
            e.ok,  e.error,   e.named, e.unverified, e.count};
}

namespace detail {

// An event's text after its pid, up to its count's value: every field that tells one access from
// another. JSON strings encode bytes one to one, so two events share this text exactly when they
// are the same access.
inline void append_identity(std::string &out, const ObservedEventView &e) {
    out += R"(,"syscall":)";
    append_text(out, e.syscall, "syscall");
    out += R"(,"asked":)";
    append_bytes(out, e.asked);
    out += R"(,"resolved":)";
    append_bytes(out, e.resolved);
    out += R"(,"access":")";
    out += to_string(e.access);
    out += R"(","ok":)";
    out += e.ok ? "true" : "false";
    if (!e.error.empty()) {  // optional: absent is no error
        out += R"(,"error":)";
        append_bytes(out, e.error);
    }
    if (!e.named.empty()) {
        out += R"(,"named":)";
        append_bytes(out, e.named);
    }
    if (!e.unverified.empty()) {
        out += R"(,"unverified":)";
        append_bytes(out, e.unverified);
    }
    out += R"(,"count":)";
}

inline void append_event_start(std::string &out, bool first, int pid) {
    out += first ? R"({"pid":)" : R"(,{"pid":)";
    append_number(out, pid);
}

// The document's end, after the events: everything of `rest` but its events.
inline void append_rest(std::string &out, const Observation &rest) {
    out += R"(],"complete":)";
    out += rest.complete ? "true" : "false";
    out += R"(,"reason":)";
    append_text(out, rest.reason, "reason");
    out += R"(,"targetStarted":)";
    out += rest.target_started ? "true" : "false";
    for (const auto &[name, value] : rest.counters) {
        out += ',';
        append_text(out, name, "counter name");
        out += ':';
        append_number(out, value);
    }
    out += '}';
}

}  // namespace detail

// Writes an observation's text piece by piece: the header, each event with its count, then the
// rest. `distinct` is the number of events, which the reader may reserve room by.
class ObservationWriter {
   public:
    ObservationWriter(std::string &out, std::size_t distinct) : out_(out) {
        out_ += R"({"distinct":)";
        detail::append_number(out_, distinct);
        out_ += R"(,"events":[)";
    }

    void event(const ObservedEventView &e) {
        detail::append_event_start(out_, first_, e.pid);
        first_ = false;
        detail::append_identity(out_, e);
        detail::append_number(out_, e.count == 0 ? std::uint64_t{1} : e.count);
        out_ += '}';
    }
    void event(const ObservedEvent &e) { event(view_of(e)); }

    // Ends the document with everything of `rest` but its events.
    void finish(const Observation &rest) { detail::append_rest(out_, rest); }

   private:
    std::string &out_;
    bool first_ = true;
};

inline std::string encode(const Observation &observation) {
    std::string out;
    ObservationWriter writer{out, observation.events.size()};
    for (const auto &e : observation.events) {
        writer.event(e);
    }
    writer.finish(observation);
    return out;
}

// An observation whose events are merged as an observer reads them: each distinct access is
// written into the document at its first sight (with that sight's pid) and counted at every
// sight. The document is the only copy of an event, and a repeat costs one lookup: a busy call
// repeats most of its accesses, and its distinct ones make megabytes of text. Not thread-safe.
class DistinctEvents {
   public:
    // At most `max_distinct` accesses are kept. Each count, and the number of accesses, is given
    // `count_width` digits of room, filled in by finish; 20 holds any count, fewer make a smaller
    // document when the counts are bounded (by the lines of a trace, say).
    explicit DistinctEvents(std::size_t max_distinct, std::size_t count_width = 20)
        : max_distinct_(max_distinct), count_width_(std::clamp<std::size_t>(count_width, 1, 20)) {
        body_ += R"({"distinct":)";
        distinct_at_ = body_.size();
        body_.append(count_width_, ' ');  // JSON allows the blanks left after a number
        body_ += R"(,"events":[)";
        index_.reserve(1024);
    }

    // Room for `bytes` of document at once, so that it is never moved as it grows (room never
    // touched costs no memory).
    void reserve(std::size_t bytes) { body_.reserve(bytes); }

    // One sight of `e` (its count is ignored). False when `e` is new and max_distinct accesses are
    // held already: it is not kept.
    bool add(const ObservedEventView &e) {
        scratch_.clear();
        detail::append_identity(scratch_, e);
        const auto hash = std::hash<std::string_view>{}(scratch_);
        for (auto [it, end] = index_.equal_range(hash); it != end; ++it) {
            if (identity(it->second) == scratch_) {
                ++counts_[it->second];
                return true;
            }
        }
        if (counts_.size() >= max_distinct_) {
            return false;
        }
        detail::append_event_start(body_, counts_.empty(), e.pid);
        key_at_.push_back(body_.size());
        body_ += scratch_;
        count_at_.push_back(body_.size());
        body_.append(count_width_, ' ');
        body_ += '}';
        counts_.push_back(1);
        index_.emplace(hash, counts_.size() - 1);
        return true;
    }

    [[nodiscard]] std::size_t size() const { return counts_.size(); }

    // The document: the events with their counts, then everything of `rest` but its events.
    // Throws DocumentError if a count outgrew its room.
    std::string finish(const Observation &rest) {
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            put(count_at_[i], counts_[i]);
        }
        put(distinct_at_, counts_.size());
        detail::append_rest(body_, rest);
        return std::move(body_);
    }

   private:
    [[nodiscard]] std::string_view identity(std::size_t slot) const {
        return std::string_view{body_}.substr(key_at_[slot], count_at_[slot] - key_at_[slot]);
    }
    void put(std::size_t at, std::uint64_t n) {
        std::array<char, 24> digits{};
        const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), n).ptr;
        const auto size = static_cast<std::size_t>(end - digits.data());
        if (size > count_width_) {
            detail::fail("count: " + std::string{digits.data(), size} + " outgrew its room of " +
                         std::to_string(count_width_) + " digits");
        }
        body_.replace(at, size, digits.data(), size);
    }

    std::size_t max_distinct_;
    std::size_t count_width_;
    std::string body_;
    std::size_t distinct_at_ = 0;
    std::vector<std::uint64_t> counts_;                        // per slot
    std::vector<std::size_t> key_at_;                          // per slot: its identity's start
    std::vector<std::size_t> count_at_;                        // per slot: its count's start
    std::unordered_multimap<std::size_t, std::size_t> index_;  // identity's hash -> slot
    std::string scratch_;
};

namespace detail {

// Reads an observation as a stream of SAX events rather than a document tree: each event is
// handed to `sink` as soon as it is complete (sink.reserve(n) for the "distinct" hint, then
// sink.event(ObservedEvent&&)), and the rest goes to `out`.
template <class Sink>
class ObservationReader : public nlohmann::json_sax<nlohmann::json> {
   public:
    ObservationReader(Observation &out, Sink &sink) : out_{out}, sink_{sink} {}

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
            event_.ok = v;
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
            event_.count = v;
            return true;
        }
        if (depth_ == 1 && key_ == "distinct") {
            // A hint, capped: a hostile number must not make the reader reserve gigabytes.
            sink_.reserve(static_cast<std::size_t>(std::min<number_unsigned_t>(v, 1U << 20U)));
            return true;
        }
        if (depth_ == 1 && key_ != "complete" && key_ != "events" && key_ != "targetStarted") {
            // "lines" and other counters for diagnostics; a few are kept, the rest only read.
            if (out_.counters.size() < kMaxCounters) {
                out_.counters.emplace_back(key_, v);
            }
            return true;
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
            return true;  // other notes for diagnostics
        }
        if (in_base64_) {
            auto decoded = bytes::base64_decode(v);
            if (!decoded || key_ != "base64") {
                return fail(field_ +
                            ": expected a string or {\"base64\": \"...\"} with valid base64");
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
                const auto access = access_from_string(v);
                if (!access) {
                    return fail("access: unknown access '" + v + "'");
                }
                event_.access = *access;
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
            event_ = ObservedEvent{};
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
            sink_.event(std::move(event_));
            ++events_;
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
    static constexpr std::size_t kMaxCounters = 16;
    static constexpr unsigned kPid = 1;
    static constexpr unsigned kOk = 2;
    static constexpr unsigned kAccess = 4;
    static constexpr unsigned kSyscall = 8;
    static constexpr unsigned kAsked = 16;
    static constexpr unsigned kResolved = 32;
    static constexpr std::array<std::pair<unsigned, const char *>, 6> kRequired{
        {{kPid, "pid"},
         {kOk, "ok"},
         {kAccess, "access"},
         {kSyscall, "syscall"},
         {kAsked, "asked"},
         {kResolved, "resolved"}}};

    [[nodiscard]] bool in_event() const { return events_open_ && depth_ == 3 && in_array_; }
    // An event's byte-string fields; "error", "named" and "unverified" are optional.
    static bool is_bytes_field(const std::string &k) {
        return k == "asked" || k == "resolved" || k == "error" || k == "named" || k == "unverified";
    }

    bool take_bytes(std::string v) {
        if (in_base64_) {
            base64_done_ = true;
        }
        if (field_ == "asked") {
            event_.asked = std::move(v);
            have_ |= kAsked;
        } else if (field_ == "resolved") {
            event_.resolved = std::move(v);
            have_ |= kResolved;
        } else if (field_ == "named") {
            event_.named = std::move(v);
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
            error = event_field ? "events[" + std::to_string(events_) + "]." + what : what;
        }
        return false;
    }

    Observation &out_;
    Sink &sink_;
    int depth_ = 0;
    std::string key_;
    std::string field_;
    bool events_open_ = false;
    bool in_array_ = false;
    bool in_base64_ = false;
    bool base64_done_ = false;
    bool seen_complete_ = false;
    bool seen_events_ = false;
    ObservedEvent event_;
    std::size_t events_ = 0;
    unsigned have_ = 0;
};

struct CollectingSink {
    std::vector<ObservedEvent> &events;
    void reserve(std::size_t n) { events.reserve(n); }
    void event(ObservedEvent &&e) { events.push_back(std::move(e)); }
};

}  // namespace detail

// Reads an observation, handing each event to sink.event(ObservedEvent&&) as it is read (after
// sink.reserve(n) with the writer's "distinct" count, capped) and everything else to `out`, whose
// events are left as they were. Throws DocumentError naming the first problem.
template <class Sink>
void decode_observation(std::string_view text, Observation &out, Sink &sink) {
    detail::ObservationReader<Sink> reader{out, sink};
    const bool ok = nlohmann::json::sax_parse(text, &reader);
    reader.check_end();
    if (!ok || !reader.error.empty()) {
        detail::fail(reader.error.empty() ? "the observation is not a JSON object" : reader.error);
    }
}

inline Observation decode_observation(std::string_view text) {
    Observation out;
    detail::CollectingSink sink{out.events};
    decode_observation(text, out, sink);
    return out;
}

}  // namespace tea::documents

#endif  // TEA_DOCUMENTS_HPP
