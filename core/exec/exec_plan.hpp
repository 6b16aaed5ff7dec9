// The two documents of a call: the launch spec the core hands a backend, and
// the exec plan the backend hands back for the core's call runner to execute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tea::exec {

// Limits a backend applies inside its confinement (0 = the backend's default).
struct Limits {
    std::uint64_t cpu_seconds = 0;
    std::uint64_t file_size_bytes = 0;
    std::uint64_t processes = 0;
    bool operator==(const Limits &) const = default;
};

// The call's route out (see core/egress/egress.hpp), for the backend to carry into its
// confinement: a call that lists no egress host has an empty socket and gets no route.
struct EgressRoute {
    std::string socket;      // the proxy's Unix socket; its directory is bound read-only
    std::uint16_t port = 0;  // the loopback port the shim listens on
    std::string shim;        // the shim the plan runs in front of the target
};

// A file or directory the runtime made in the call's run directory, shown to the target
// read-only in place of an entry of its workspace (exec's private repository over the
// workspace's .git). A backend binds it after the withheld paths, so it covers one of them.
struct ReadOnlyOver {
    std::string source;       // inside the call's run directory
    std::string destination;  // an existing entry of the same type, inside the workspace
};

struct LaunchSpec {
    // "target": the full confinement. "grader": the evaluator's view, outside the target's
    // confinement, with only the read_only paths protected (see docs/plugin-authoring.md).
    std::string role = "target";
    std::vector<std::string> argv;
    std::vector<std::string> env;  // exact, "NAME=VALUE"
    std::string cwd;               // where the target starts (inside the workspace)
    std::string workspace;         // writable
    std::string temp_dir;          // the call's private temp directory (empty: none)
    std::string home;              // the trial's private home (empty: none)
    // (ABI 1.3) Which of temp_dir and home the host left unmade: each names a directory of the
    // call's run directory that does not exist on the host. The backend provides it inside its
    // confinement (empty, private to the call, gone when the call ends) or names it in the plan's
    // make_dirs for the host to make. Sent only to a backend built for ABI 1.3 or later.
    std::vector<std::string> unmade;
    std::vector<std::string> withhold;         // must be absent from the target's view
    std::vector<std::string> read_only;        // granted read-only
    std::vector<ReadOnlyOver> read_only_over;  // shown over entries of the workspace
    std::vector<std::string> system_paths;     // the entry's declared systemPaths
    Limits limits;
    std::string runtime_prefix;  // the runtime's installation
    std::string helper_dir;      // where the runtime's helper executables are
    EgressRoute egress;
    // (ABI 1.4) An observer will wrap the plan: the backend may answer with a holder (see
    // ExecPlan::holder), so that the tracer follows the target and not the confinement's set-up.
    // Sent only to a backend built for ABI 1.4 or later, and only when true.
    bool observed = false;
    // (ABI 1.5) The host starts the plan's process before the plan is complete, so that its
    // start overlaps the work the complete plan needs: the backend answers with the process as it
    // will run, the files it cannot fill cheaply marked deferred (see PlanFile), and is then asked
    // again without this for the complete plan, whose process must be the same. Sent only to a
    // backend built for ABI 1.5 or later, and only when true.
    bool staged = false;
    // (ABI 1.6) The identity the host took for this call's target alone ([confinement] uid_range,
    // when the runtime is root): the backend runs the target as it (runAs) and lends it the
    // call's directories, instead of an identity of its own choosing. Sent only to a backend
    // built for ABI 1.6 or later, and only when set.
    struct Identity {
        unsigned uid = 0;  // never 0
        unsigned gid = 0;  // never 0
        bool operator==(const Identity &) const = default;
    };
    std::optional<Identity> identity;
};

// A descriptor the runner sets up for the child: the plan's bytes in a
// sealed memfd, or an existing file opened read-only by the runtime (so a
// process that may not search the path's directories can still use it).
// (ABI 1.5) A deferred file, only in a plan answered to a staged launch spec, is a pipe whose
// content the runner writes once the complete plan names it; the process may start before then
// and must not act on what it has read until it reads the pipe's end.
struct PlanFile {
    int child_fd = -1;
    std::string content;
    std::string path;  // when set, the file is opened instead of content
    bool deferred = false;
    bool operator==(const PlanFile &) const = default;
};

// Directories of the call the plan asks the runtime to hand to the identity the target runs as,
// for the call's duration: the plan's processes start in a mount namespace of the call's own where
// each is at its own path, that identity's through an idmapped mount (or, on a file system that
// refuses one, by ownership), whatever lies above it (see exec/lending.hpp).
struct Lend {
    bool requested = false;
    unsigned uid = 0;
    unsigned gid = 0;
    std::vector<std::string> paths;  // each must be the spec's workspace, temp dir or home
    bool operator==(const Lend &) const = default;
};

// What the audit needs to know of a confinement; empty for one that confines nothing.
struct AuditHints {
    // The path of the exec that starts the target's side of the plan. What the trace shows before
    // its first success is the mechanism's own set-up (bwrap building the view), not the target.
    std::string target_start;
    // Whether the process that makes the targetStart exec is a launcher whose own work until its
    // next exec is the mechanism's (the default, "launcher"), or is the target itself ("target",
    // ABI 1.1): then everything it does after that exec is judged.
    bool target_start_is_target = false;
    // Places the target may write that the launch spec does not name: the mounts of the call's
    // directories inside the confinement (the temp directory under /dev, say).
    std::vector<std::string> writable;
};

// The unprivileged identity the plan's process runs as, when the runtime is
// root: the runner drops to it in the child, before the exec (no helper process
// is needed for that), with no capability left and no_new_privs set.
struct RunAs {
    bool requested = false;
    unsigned uid = 0;  // never 0
    unsigned gid = 0;  // never 0
    bool operator==(const RunAs &) const = default;
};

// What the runner applies in the child just before the exec (ABI 1.1), so that a backend needs
// no helper process of its own for them: resource limits (0 = leave as is) and a fresh anonymous
// session keyring.
struct ChildSetup {
    Limits limits;
    bool new_session_keyring = false;
    [[nodiscard]] bool requested() const {
        return new_session_keyring || limits.cpu_seconds != 0 || limits.file_size_bytes != 0 ||
               limits.processes != 0;
    }
    bool operator==(const ChildSetup &) const = default;
};

// (ABI 1.4) A process the runner starts beside the plan's own, before it and never wrapped by an
// observer: it builds the confinement and holds it while the plan's process joins it. The two
// find each other through a socket pair the runner makes, one end at each one's handoff_fd; the
// holder sends a pidfd of itself once the confinement stands. It runs as the plan's runAs identity
// with the plan's child set-up, gets the plan's setup mark, shares the call's output streams, and
// is ended with its process group when the plan's process has ended.
struct Holder {
    std::vector<std::string> argv;
    std::vector<std::string> env;
    std::string cwd;
    std::vector<PlanFile> files;
    int handoff_fd = -1;
};

struct ExecPlan {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // exact environment of the process the runner starts
    std::string cwd;
    std::vector<PlanFile> files;
    std::string confinement;  // what the plan provides: "opt-out", "bubblewrap", ...
    Lend lend;
    RunAs run_as;
    ChildSetup child;
    std::string report_json = "{}";  // the backend's notes for the call's record (an object)
    // The host sockets the confinement left connectable to the target (the report's
    // socketsLeftReachable, the one key of it the host reads): recorded with the call, and each
    // trial whose calls left some is named in run.json's hostSocketTruncation.
    std::vector<std::string> sockets_left_reachable;
    AuditHints audit;
    // (ABI 1.3) Which of the spec's unmade directories the host must make before the call;
    // answered (possibly empty) by every plan for a spec that has unmade directories, absent from
    // a plan of a backend that does not know of them.
    std::optional<std::vector<std::string>> make_dirs;
    // (ABI 1.2) Where the child finds a pipe holding one byte, which the plan's mechanism reads
    // once the confinement stands, just before the target starts; -1: the plan has none. A call
    // that ends with the byte unread never started its target (see CallResult::setup_reached).
    int setup_mark_fd = -1;
    // (ABI 1.4) The holder, and where the plan's own process finds its end of the hand-off socket.
    std::optional<Holder> holder;
    int handoff_fd = -1;
};

// Whether the plan's own process has files whose content is not written yet (ABI 1.5).
bool has_deferred_files(const ExecPlan &plan);

std::string to_json(const LaunchSpec &spec);
LaunchSpec launch_spec_from_json(std::string_view json);  // throws std::invalid_argument
std::string to_json(const ExecPlan &plan);
// Checks every field; throws std::invalid_argument naming the field.
ExecPlan exec_plan_from_json(std::string_view json);

}  // namespace tea::exec
