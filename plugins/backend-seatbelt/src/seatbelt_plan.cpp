#include "seatbelt_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <tea/environment_entries.hpp>
#include <tea/plugin.hpp>
#include <vector>

#include "profile.hpp"
#include "sbpl_string.hpp"

namespace tea::seatbelt {

namespace {

namespace fs = std::filesystem;
using documents::ExecPlan;
using documents::LaunchSpec;

// Whether a component of `path` is empty, "." or "..", or it ends in a slash.
bool needs_normalising(std::string_view path) {
    std::size_t start = 1;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos) {
            end = path.size();
        }
        const auto component = path.substr(start, end - start);
        if ((component.empty() && path.size() > 1) || component == "." || component == "..") {
            return true;
        }
        start = end + 1;
    }
    return false;
}

std::string normal(const std::string &path) {
    // Most paths are normal already, and lexically_normal costs an allocation per component.
    if (!needs_normalising(path)) {
        return path;
    }
    auto p = fs::path{path}.lexically_normal().string();
    while (p.size() > 1 && p.back() == '/') {
        p.pop_back();
    }
    return p;
}

bool inside(const std::string &path, const std::string &dir) {
    if (path.empty() || dir.empty()) {
        return false;
    }
    const auto p = normal(path);
    const auto d = normal(dir);
    return p == d || (p.size() > d.size() && p.compare(0, d.size(), d) == 0 &&
                      (d == "/" || p[d.size()] == '/'));
}

// The target's environment: the spec's exactly, but for the names the confinement owns.
std::vector<std::string> target_environment(const LaunchSpec &spec) {
    namespace entries = tea::environment_entries;
    std::vector<std::string> env = spec.env;
    // A coverage dump would be written wherever the variable points, outside the grants.
    entries::remove(env, "NODE_V8_COVERAGE");
    entries::set(env, "PWD", spec.cwd);
    if (!spec.home.empty()) {
        entries::set(env, "HOME", spec.home);
        entries::set(env, "XDG_CONFIG_HOME", spec.home + "/.config");
        entries::set(env, "XDG_CACHE_HOME", spec.home + "/.cache");
        entries::set(env, "XDG_DATA_HOME", spec.home + "/.local/share");
    }
    if (!spec.temp_dir.empty()) {
        for (const char *name : {"TMPDIR", "TMP", "TEMP"}) {
            entries::set(env, name, spec.temp_dir);
        }
    }
    return env;
}

// What Seatbelt cannot show: it filters the host's file system and puts nothing over it.
void refuse_what_needs_a_view(const LaunchSpec &spec) {
    if (!spec.read_only_over.empty()) {
        throw tea::sdk::Unavailable(
            "Seatbelt cannot show " + spec.read_only_over.front().source + " in place of " +
            spec.read_only_over.front().destination +
            " (it filters the host's files and mounts nothing over them); run the call in a "
            "trial's workspace rather than in the project's own checkout, or set "
            "\"confinement\": false");
    }
    // A separate identity per call is a barrier the user asked for: never dropped in silence.
    if (spec.identity) {
        throw tea::sdk::Unavailable(
            "the call was given an identity of its own (uid " + std::to_string(spec.identity->uid) +
            ", [confinement] uid_range), which the Seatbelt backend cannot run a target as; remove "
            "uid_range on macOS");
    }
    if (!spec.login_files.empty()) {
        throw tea::sdk::Unavailable(
            "Seatbelt cannot show the login file " + spec.home + "/" +
            spec.login_files.front().home_path +
            " read-only in the private home; on macOS use the token route (run `claude "
            "setup-token` and export CLAUDE_CODE_OAUTH_TOKEN) or set \"confinement\": false");
    }
}

void check_places(const LaunchSpec &spec) {
    check_path(spec.workspace, "workspace");
    check_path(spec.cwd, "working directory");
    if (!inside(spec.cwd, spec.workspace)) {
        throw tea::sdk::Invalid("the working directory " + spec.cwd +
                                " lies outside the workspace " + spec.workspace);
    }
    if (!spec.home.empty() && inside(spec.home, spec.workspace)) {
        throw tea::sdk::Unavailable("the home " + spec.home + " lies inside the workspace " +
                                    spec.workspace + "; it must not");
    }
    const auto host_tmp = tea::environment_entries::value_of(spec.env, "TMPDIR");
    for (const auto &w : spec.withhold) {
        check_path(w, "withheld");
        // A temp directory inside the withheld folder would hand the target a way into it.
        if (!host_tmp.empty() && inside(host_tmp, w)) {
            std::string why = "TMPDIR (" + host_tmp + ") lies inside the withheld path ";
            why += w;
            why += "; point TMPDIR elsewhere";
            throw tea::sdk::Unavailable(why);
        }
        for (const auto &own : {spec.home, spec.temp_dir, spec.bridge.dir}) {
            if (inside(own, w)) {
                std::string why = "the call's directory " + own + " lies inside the withheld path ";
                why += w;
                throw tea::sdk::Unavailable(why);
            }
        }
    }
}

// The egress socket must lie in a private directory of the call: its directory is granted
// read-only, and one elsewhere would open a host directory.
void check_egress(const LaunchSpec &spec, const std::string &private_root) {
    if (spec.egress.socket.empty()) {
        return;
    }
    check_path(spec.egress.socket, "egress socket");
    check_path(spec.egress.shim, "egress shim");
    if (spec.egress.port == 0) {
        throw tea::sdk::Invalid("egress.port: 0 is no port the shim can listen on (egress socket " +
                                spec.egress.socket + ")");
    }
    const auto dir = normal(fs::path{spec.egress.socket}.parent_path().string());
    if (private_root.empty() || !inside(dir, private_root) || dir == normal(private_root)) {
        throw tea::sdk::Invalid("the egress socket " + spec.egress.socket +
                                " must lie in a private directory of the call under " +
                                (private_root.empty() ? "the private root" : private_root));
    }
}

// The bridge's directory is granted read-write, so it must be one of this call's run directory.
void check_bridge(const LaunchSpec &spec) {
    if (spec.bridge.dir.empty()) {
        return;
    }
    check_path(spec.bridge.dir, "bridge directory");
    check_path(spec.bridge.relay, "bridge relay");
    check_path(spec.temp_dir, "temp directory of a call with a bridge");
    const auto run_dir = normal(fs::path{spec.temp_dir}.parent_path().string());
    if (normal(fs::path{normal(spec.bridge.dir)}.parent_path().string()) != run_dir) {
        throw tea::sdk::Invalid("the bridge directory " + spec.bridge.dir +
                                " must be a directory of the call's run directory " + run_dir);
    }
}

std::vector<std::string> normals(const std::vector<std::string> &paths, std::string_view what) {
    std::vector<std::string> out;
    for (const auto &p : paths) {
        check_path(p, what);
        out.push_back(normal(p));
    }
    return out;
}

ExecPlan grader_plan(const Settings &settings, const LaunchSpec &spec) {
    ExecPlan plan;
    plan.argv = {settings.sandbox_exec, "-p", grader_profile(normals(spec.read_only, "read-only"))};
    plan.argv.insert(plan.argv.end(), spec.argv.begin(), spec.argv.end());
    plan.env = spec.env;
    plan.cwd = spec.cwd;
    plan.confinement = "seatbelt";
    plan.report_json = R"({"role":"grader"})";
    // The grader's command is the evaluation's, but what it runs is the target's work: no
    // controlling terminal for it either (TIOCSTI), as bubblewrap's grader plan gives none.
    plan.child.new_session = true;
    if (!spec.unmade.empty()) {
        plan.make_dirs = spec.unmade;  // nothing of Seatbelt makes a directory
    }
    return plan;
}

}  // namespace

ExecPlan seatbelt_plan(const Settings &settings, const LaunchSpec &spec) {
    if (spec.argv.empty()) {
        throw tea::sdk::Invalid("the launch spec has no argv");
    }
    if (spec.role == "grader") {
        return grader_plan(settings, spec);
    }
    check_places(spec);
    refuse_what_needs_a_view(spec);
    ProfileRequest request;
    request.workspace = normal(spec.workspace);
    if (!spec.temp_dir.empty()) {
        check_path(spec.temp_dir, "temp directory");
        request.temp_dir = normal(spec.temp_dir);
    }
    if (!spec.home.empty()) {
        check_path(spec.home, "home");
        request.home = normal(spec.home);
        request.run_dir = normal(fs::path{request.home}.parent_path().string());
        request.private_root = normal(fs::path{request.run_dir}.parent_path().string());
    }
    check_egress(spec, request.private_root);
    check_bridge(spec);
    request.bridge_dir = spec.bridge.dir.empty() ? "" : normal(spec.bridge.dir);
    request.egress_socket = spec.egress.socket;
    request.egress_port = spec.egress.port;
    request.withhold = normals(spec.withhold, "withheld");
    request.read_only = normals(spec.read_only, "read-only");
    request.system_paths = normals(spec.system_paths, "systemPaths");
    request.runtime_prefix = spec.runtime_prefix.empty() ? "" : normal(spec.runtime_prefix);

    ExecPlan plan;
    plan.argv = {settings.sandbox_exec, "-p", target_profile(request)};
    if (!spec.egress.socket.empty()) {
        // Inside the profile, so the shim's listener and its proxy connections are the only
        // network the call has.
        plan.argv.insert(plan.argv.end(),
                         {spec.egress.shim, "--port", std::to_string(spec.egress.port), "--socket",
                          spec.egress.socket, "--"});
    }
    if (!spec.bridge.dir.empty()) {
        plan.argv.insert(plan.argv.end(),
                         {spec.bridge.relay, "--socket", spec.bridge.dir + "/bridge.sock", "--"});
    }
    plan.argv.insert(plan.argv.end(), spec.argv.begin(), spec.argv.end());
    plan.env = target_environment(spec);
    plan.cwd = spec.cwd;
    plan.confinement = "seatbelt";
    // The limits macOS has (RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NPROC), set by the host's child
    // before sandbox-exec, the spec's or else the backend's; macOS has no session keyring.
    const auto limit = [](std::uint64_t spec_value, std::uint64_t fallback) {
        return spec_value != 0 ? spec_value : fallback;
    };
    plan.child.limits =
        documents::Limits{limit(spec.limits.cpu_seconds, settings.cpu_seconds),
                          limit(spec.limits.file_size_bytes, settings.file_size_bytes),
                          limit(spec.limits.processes, settings.processes)};
    // A session of its own (ABI 1.10): the profile allows ioctls on /dev/tty, and a target that
    // kept the runtime's controlling terminal could push input into the user's shell (TIOCSTI).
    plan.child.new_session = true;
    if (!spec.unmade.empty()) {
        plan.make_dirs = spec.unmade;  // Seatbelt makes no directory: the host makes them all
    }
    return plan;
}

}  // namespace tea::seatbelt
