#include "command_line.hpp"

#include <unistd.h>

#include <array>
#include <filesystem>
#include <system_error>
#include <tea/helper_path.hpp>
#include <tea/plugin.hpp>
#include <tea/program_path.hpp>
#include <utility>

#include "descriptors.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

namespace {

constexpr std::array<const char *, 5> kProgramDirs{"/usr/bin", "/bin", "/usr/local/bin",
                                                   "/usr/sbin", "/sbin"};

}  // namespace

std::string find_program(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0 ? name : std::string{};
    }
    for (const char *dir : kProgramDirs) {
        auto candidate = std::string{dir} + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return {};
}

std::string helper_path() {
    return tea::helper_path::beside_plugin("tea-sandbox-helper");
}

std::string view_builder_path() {
    return tea::helper_path::beside_plugin("tea-sandbox-view");
}

std::vector<std::string> identity_prefix(const std::string &helper, const Identity &identity) {
    if (!identity.dropped) {
        return {};
    }
    return {helper,  "drop",
            "--uid", std::to_string(identity.uid),
            "--gid", std::to_string(identity.gid),
            "--"};
}

// No --die-with-parent: the sandbox's first process is always the plugin's own init, which ends
// the sandbox once the runtime is gone (tea/namespace_init.hpp), and bwrap, ending with it, must
// not die sooner: killed between its clone and releasing its child, it would leave that child
// blocked for ever.
std::vector<std::string> namespace_options() {
    return {"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-cgroup-try",
            // A new session: no controlling terminal to push input into.
            "--new-session"};
}

// To mount, to map the target's identity onto that uid, and to forbid further user namespaces.
// The builder drops all three, and every other, before the target starts.
std::vector<std::string> view_builder_privileges() {
    return {"--uid",         "0",         "--gid",       "0",         "--cap-add",
            "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP", "--cap-add", "CAP_SYS_RESOURCE"};
}

std::vector<std::string> view_builder_command(const Identity &identity, const std::string &exec) {
    return {in_sandbox(Descriptor::view_builder),
            "--view-fd",
            to_string(Descriptor::view),
            "--setup-mark",
            to_string(Descriptor::setup_mark),
            "--uid",
            std::to_string(identity.uid),
            "--gid",
            std::to_string(identity.gid),
            "--exec",
            exec,
            "--"};
}

std::string bwrap_missing(const Settings &settings) {
    if (settings.bwrap == Settings{}.bwrap) {
        return "bubblewrap (" + settings.bwrap + ") is not installed: apt-get install bubblewrap";
    }
    // Installing the package would not help: the configuration names another program.
    std::string why;
    if (settings.bwrap.find('/') != std::string::npos) {
        why = "cannot be run (" +
              std::generic_category().message(
                  tea::program_path::executable_by_this_process(settings.bwrap)) +
              ")";
    } else {
        why = "names no program in";
        for (std::size_t i = 0; i < kProgramDirs.size(); ++i) {
            why += (i == 0 ? " " : i + 1 == kProgramDirs.size() ? " or " : ", ");
            why += kProgramDirs[i];
        }
    }
    return "plugin.bubblewrap.bwrap = \"" + settings.bwrap + "\" " + why +
           "; set it to bubblewrap's bwrap, or remove it to use the system's";
}

std::vector<std::string> bwrap_command(const Settings &settings) {
    auto bwrap = find_program(settings.bwrap);
    if (bwrap.empty()) {
        throw tea::sdk::Unavailable(bwrap_missing(settings));
    }
    return {std::move(bwrap), "--args", to_string(Descriptor::args), "--"};
}

std::vector<std::string> target_bwrap_command(const Settings &settings) {
    auto argv = bwrap_command(settings);
    argv.insert(argv.end() - 1, {"--hostname", "tea-sandbox"});
    return argv;
}

documents::PlanFile args_file(const std::vector<std::string> &args) {
    return {number(Descriptor::args), join_nul(args), {}, false};
}

// A stream cut short (a runtime killed while writing a staged call's stream, ABI 1.5) lacks its
// last --unshare-uts, and bwrap then refuses the host name on its command line instead of building
// part of the view. No other element can stand in for it: bwrap reads an option's values from the
// stream alone, so "--unshare-uts" as the value of a --setenv or a path is never taken for the
// option.
documents::PlanFile target_args_file(std::vector<std::string> args) {
    args.emplace_back("--unshare-uts");
    return args_file(args);
}

std::string join_nul(const std::vector<std::string> &items) {
    std::string out;
    for (const auto &i : items) {
        out += i;
        out += '\0';
    }
    return out;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace tea::bwrap
