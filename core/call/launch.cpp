#include "call/launch.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <utility>

#include "exec/environment.hpp"
#include "plugins/manifest.hpp"
#include "plugins/selection.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"
#include "util/signals.hpp"
#include "util/wait_limit.hpp"

namespace tea::call {
namespace {

std::filesystem::path absolute_path(const std::filesystem::path &p, const char *option) {
    std::error_code ec;
    auto out = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (ec) {
        throw usage_error(std::string{option} + " " + p.string() + ": " + ec.message());
    }
    return out;
}

// A withheld path named through a link inside the workspace: the target can re-point that link
// between calls, and the next call would cover wherever it leads then, leaving the folder itself
// readable. Links outside the workspace (the host's, which no target can write) are followed.
void refuse_links_in_workspace(const std::filesystem::path &given,
                               const std::filesystem::path &workspace) {
    std::error_code ec;
    const auto lexical = std::filesystem::absolute(given, ec).lexically_normal();
    if (ec || !lexical.has_root_directory()) {
        return;  // absolute_path names what is wrong with it
    }
    std::filesystem::path real = lexical.root_path();
    for (const auto &part : lexical.relative_path()) {
        if (part.empty()) {
            continue;
        }
        const auto next = real / part;
        struct stat st {};
        if (::lstat(next.c_str(), &st) != 0) {
            return;  // nothing there: the existence check names it
        }
        if (!S_ISLNK(st.st_mode)) {
            real = next;
            continue;
        }
        real = std::filesystem::weakly_canonical(next, ec);
        if (within(next, workspace) && next != workspace) {
            throw usage_error("--withhold " + given.string() + ": " + next.string() +
                              " is a link inside the workspace, which a target can re-point "
                              "between calls; withhold the folder it leads to instead (" +
                              real.string() + ")");
        }
        if (ec) {
            return;
        }
    }
}

std::vector<std::string> call_environment(const CallOptions &options) {
    const auto host = exec::current_environment();
    auto env = options.clean_env ? exec::clean_environment(host) : host;
    for (const auto &item : options.env) {
        const auto eq = item.find('=');
        const std::string name = item.substr(0, eq);
        if (name.empty()) {
            throw usage_error("--env " + item + ": expected NAME=VALUE or NAME");
        }
        if (eq != std::string::npos) {
            exec::set_variable(env, name, item.substr(eq + 1));
        } else if (std::string value; exec::find_variable(host, name, &value) != nullptr) {
            exec::set_variable(env, name, value);
        }
    }
    return env;
}

}  // namespace

exec::LaunchSpec launch_spec(const CallOptions &options, const RuntimePaths &paths) {
    if (options.command.empty()) {
        throw usage_error("no command given (after --)");
    }
    if (options.timeout_ms && *options.timeout_ms <= 0) {
        throw usage_error("--timeout: expected a positive number of milliseconds");
    }
    if (options.timeout_ms && *options.timeout_ms > max_wait_ms) {
        throw usage_error("--timeout: expected at most " + std::to_string(max_wait_ms) +
                          " milliseconds (about 31 years), found " +
                          std::to_string(*options.timeout_ms));
    }
    exec::LaunchSpec spec;
    spec.argv = options.command;
    spec.env = call_environment(options);
    const auto workspace = options.workspace
                               ? absolute_path(*options.workspace, "--workspace")
                               : absolute_path(std::filesystem::current_path(), "--workspace");
    std::error_code ec;
    if (!std::filesystem::is_directory(workspace, ec)) {
        throw usage_error("--workspace " + workspace.string() + ": not a directory");
    }
    spec.workspace = workspace.string();
    spec.cwd = spec.workspace;
    for (const auto &w : options.withhold) {
        refuse_links_in_workspace(w, workspace);
        spec.withhold.push_back(absolute_path(w, "--withhold").string());
    }
    for (const auto &s : options.system_paths) {
        // A relative system path would be judged against whatever directory the target is in.
        if (s.empty() || s[0] != '/') {
            throw usage_error("--system-path " + s + ": expected an absolute path");
        }
        const auto normal = std::filesystem::path{s}.lexically_normal().string();
        // "/" would grant everything and switch the audit off.
        if (normal == "/") {
            throw usage_error("--system-path /: a grant of the whole file system is refused");
        }
        spec.system_paths.push_back(normal);
        // A declared path that is a link grants where it leads too: the audit judges real paths.
        std::error_code link_error;
        const auto real = std::filesystem::weakly_canonical(normal, link_error).string();
        if (!link_error && real != normal && real != "/") {
            spec.system_paths.push_back(real);
        }
    }
    spec.runtime_prefix = paths.prefix.string();
    spec.helper_dir = paths.helper_dir.string();
    return spec;
}

exec::RunOptions run_options(const CallOptions &options, const config::Config &config) {
    exec::RunOptions run;
    if (options.timeout_ms) {
        run.timeout = std::chrono::milliseconds{*options.timeout_ms};
    }
    run.kill_grace = config.call.kill_grace;
    run.out.cap_bytes = config.call.output_cap_bytes;
    run.err.cap_bytes = config.call.output_cap_bytes;
    run.signal_fd = Signals::instance().fd();
    run.conversation = options.conversation;
    return run;
}

EgressRequest egress_request(const CallOptions &options) {
    EgressRequest request;
    for (const auto &text : options.egress) {
        request.items.push_back(egress::parse_item(text));
    }
    if (!options.command.empty()) {
        request.entry = std::filesystem::path{options.command.front()}.filename().string();
    }
    if (request.entry.empty()) {
        request.entry = "exec";
    }
    return request;
}

namespace {

// A user's home, from the password database; empty when there is none.
std::filesystem::path home_of(uid_t uid) {
    passwd entry{};
    passwd *found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(uid, &entry, buf.data(), buf.size(), &found) != 0 || found == nullptr ||
        found->pw_dir == nullptr || found->pw_dir[0] != '/') {
        return {};
    }
    return found->pw_dir;
}

// The home of the user who ran sudo (SUDO_UID), when the runtime is root through it.
std::filesystem::path invoking_user_home() {
    // Read once at start-up, before any thread runs.
    const char *uid_text = ::secure_getenv("SUDO_UID");  // NOLINT(concurrency-mt-unsafe)
    if (::geteuid() != 0 || uid_text == nullptr || *uid_text == '\0') {
        return {};
    }
    char *end = nullptr;
    const unsigned long uid = std::strtoul(uid_text, &end, 10);
    if (*end != '\0' || uid == 0) {
        return {};
    }
    return home_of(static_cast<uid_t>(uid));
}

}  // namespace

// Writable directories that would open the runtime itself or the host to the target.
std::vector<OwnPath> runtime_own_paths(const Runtime &runtime) {
    std::vector<OwnPath> own;
    const auto &paths = runtime.paths;
    // A workspace inside the prefix is not refused: a prefix such as /usr holds far more than the
    // runtime, and a build tree is where its own tests run. The runtime's folders in it are.
    own.push_back({paths.prefix, "the runtime's installation", false});
    for (const char *program : {"tea-evaluate", "tea-skill-runner"}) {
        own.push_back({paths.prefix / "bin" / program, "the runtime's installation"});
    }
    for (const auto &dir : {paths.manifest_dir, paths.plugin_libdir, paths.helper_dir}) {
        own.push_back({dir, "the runtime's installation"});
    }
    own.push_back({paths.system_manifest_dir, "the system's plugin manifests"});
    // As root too: the folders a root runtime skips are the ones the user's own commands load.
    const auto search = plugins::manifest_search_path(
        runtime.config, paths, false,
        ::secure_getenv("TEA_PLUGIN_PATH"));  // NOLINT(concurrency-mt-unsafe)
    for (const auto &dir : search.dirs) {
        own.push_back({dir, "a folder of plugin manifests the runtime reads"});
        // A manifest may name its library by an absolute path elsewhere.
        std::error_code ec;
        for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end;
             it.increment(ec)) {
            if (it->path().extension() != ".toml") {
                continue;
            }
            try {
                own.push_back({plugins::read_manifest(it->path(), paths.plugin_libdir).library,
                               "a plugin's library"});
            } catch (const std::exception &) {
                // A manifest that cannot be read loads nothing.
            }
        }
    }
    // The configuration chooses the plugins and how they confine: the user's file (wherever
    // HOME points, even before it exists) and every file read, a --config file among them.
    if (const auto user = config::user_config_path(); !user.empty()) {
        own.push_back({user, "the user's configuration of the runtime"});
    }
    // Under sudo, HOME is root's, but the invoking user's next command reads the user's own
    // folder, where a target of a root call could plant a plugin it would then load.
    if (const auto home = invoking_user_home(); !home.empty()) {
        own.push_back({home / ".config" / "tea-evaluate",
                       "the invoking user's configuration of the runtime"});
    }
    for (const auto &file : runtime.config.files_read) {
        own.push_back({file, "a configuration file the runtime read"});
    }
    // A program or file a plugin's table names (the bwrap it runs).
    for (const auto &[plugin, table] : runtime.config.plugin_tables.items()) {
        for (const auto &[key, value] : table.items()) {
            if (value.is_string() && value.get<std::string>().starts_with('/')) {
                own.push_back(
                    {value.get<std::string>(), "a file a plugin's configuration names", false});
            }
        }
    }
    return own;
}

namespace {

struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const FileId &) const = default;
};

// The path's file and every directory above it, as far as each exists, followed through links:
// two names of one directory (a bind mount, a link) have one identity.
std::vector<FileId> ids_up(const std::filesystem::path &path) {
    std::vector<FileId> ids;
    std::error_code ec;
    // As written, and as the links on the way lead: a folder reached through a link
    // (~/.config/tea-evaluate -> ~/dotfiles/tea-evaluate) lies in its target's parents too.
    const auto written = std::filesystem::absolute(path, ec).lexically_normal();
    std::error_code real_ec;
    const auto real = std::filesystem::weakly_canonical(written, real_ec);
    for (const auto &start : {written, real}) {
        if (start.empty()) {
            continue;
        }
        for (auto p = start;; p = p.parent_path()) {
            struct stat st {};
            if (::stat(p.c_str(), &st) == 0) {
                ids.push_back({st.st_dev, st.st_ino});
            }
            if (p == p.root_path() || p.empty()) {
                break;
            }
        }
    }
    return ids;
}

}  // namespace

void check_call_paths(const exec::LaunchSpec &spec, const std::filesystem::path &private_root,
                      const std::vector<OwnPath> &own) {
    const std::filesystem::path workspace{spec.workspace};
    // A workspace over the private root would make every run's home writable.
    if (within(private_root, workspace)) {
        throw host_error("the workspace " + spec.workspace + " contains the private root " +
                         private_root.string() +
                         ", where the target's home lives; choose a "
                         "smaller workspace");
    }
    // A target that could write the runtime's programs, plant a plugin or rewrite the
    // configuration would choose what the next command runs outside any confinement (a build tree
    // inside the workspace, a workspace of $HOME holding ~/.config/tea-evaluate, a --config file
    // in it). Compared by identity, so that another name of the same folder (a bind mount, a
    // link) is no way round.
    const auto workspace_ids = ids_up(workspace);
    // As root, the workspace's owner's own folder of configuration too: the next command that
    // user runs reads it, and root lends the workspace, so what the target plants there is theirs.
    std::vector<OwnPath> with_owner = own;
    struct stat ws {};
    if (::geteuid() == 0 && ::stat(workspace.c_str(), &ws) == 0 && ws.st_uid != 0) {
        if (const auto home = home_of(ws.st_uid); !home.empty()) {
            with_owner.push_back({home / ".config" / "tea-evaluate",
                                  "the configuration of the runtime of the workspace's owner"});
        }
    }
    const auto refuse = [&spec](const char *relation, const OwnPath &o) {
        throw host_error("the workspace " + spec.workspace + " " + relation + " " +
                         o.path.string() + ", " + o.what +
                         ": a target could change what the next command runs outside the "
                         "confinement; nothing was run. Choose a workspace outside it");
    };
    if (!workspace_ids.empty()) {
        for (const auto &o : with_owner) {
            const auto own_ids = ids_up(o.path);
            if (std::find(own_ids.begin(), own_ids.end(), workspace_ids.front()) != own_ids.end()) {
                refuse("holds", o);
            }
            struct stat st {};
            if (o.inside_refused && ::stat(o.path.c_str(), &st) == 0 &&
                std::find(workspace_ids.begin(), workspace_ids.end(),
                          FileId{st.st_dev, st.st_ino}) != workspace_ids.end()) {
                refuse("lies in", o);
            }
        }
    }
    for (const auto &w : spec.withhold) {
        if (within(private_root, w)) {
            throw host_error("the withheld path " + w + " contains the private root " +
                             private_root.string() + ", where the target's home lives");
        }
        // A withheld path with nothing behind it covers nothing: if an earlier call moved the
        // folder (renamed a parent), its content is in the workspace under another name.
        struct stat st {};
        if (::lstat(w.c_str(), &st) != 0) {
            throw host_error("the withheld path " + w + " cannot be found (" + errno_text(errno) +
                             "); nothing was run. If an earlier call moved it, withhold it where "
                             "it is now, or restore it first");
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            throw host_error("the withheld path " + w +
                             " is neither a directory nor a regular file; nothing was run");
        }
    }
}

}  // namespace tea::call
