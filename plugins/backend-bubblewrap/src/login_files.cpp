#include "login_files.hpp"

#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <tea/plugin.hpp>

#include "descriptors.hpp"
#include "path_checks.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

namespace {

std::string shown_at(const TargetCall &call, const documents::LaunchSpec::LoginFile &file) {
    return (fs::path{call.spec.home} / file.home_path).string();
}

// bwrap makes the missing directories and an empty file to mount over, following any link on the
// way: a link an earlier call of the trial planted in its home would carry the login's mount to
// a place the target chose (over a file of the view it reads as trusted, /etc/passwd, say).
void check_place_in_made_home(const std::string &home, const std::string &home_path) {
    fs::path at{home};
    const fs::path relative{home_path};
    for (auto part = relative.begin(); part != relative.end(); ++part) {
        at /= *part;
        std::error_code ec;
        const auto status = fs::symlink_status(at, ec);
        if (status.type() == fs::file_type::not_found) {
            return;  // bwrap makes it, and everything beneath it, inside the view
        }
        const bool last = std::next(part) == relative.end();
        if (ec || fs::is_symlink(status) ||
            (last ? !fs::is_regular_file(status) : !fs::is_directory(status))) {
            throw tea::sdk::Unavailable(
                "the login file's place " + at.string() + " in the home is " +
                (ec ? "unreadable (" + ec.message() + ")"
                 : fs::is_symlink(status)
                     ? std::string{"a symbolic link"}
                     : std::string{"not a "} + (last ? "regular file" : "directory")) +
                ", which an earlier call of the trial may have left there; the login is shown "
                "only at its own path: start the trial with a fresh home");
        }
    }
}

}  // namespace

void check_login_files(const TargetCall &call) {
    const auto &files = call.spec.login_files;
    if (files.size() > kMaxLoginFiles) {
        throw tea::sdk::Invalid("the launch spec names " + std::to_string(files.size()) +
                                " login files; a backend shows at most " +
                                std::to_string(kMaxLoginFiles));
    }
    for (const auto &file : files) {
        check_path(shown_at(call, file), "login file");
        if (!call.unmade(call.spec.home)) {
            check_place_in_made_home(call.spec.home, file.home_path);
        }
    }
}

std::vector<std::string> login_file_options(const TargetCall &call) {
    std::vector<std::string> options;
    int fd = number(Descriptor::login_files);
    for (const auto &file : call.spec.login_files) {
        // Read-only and readable by its owner alone (the target's identity): a write, chmod,
        // unlink, rename or link over it fails (EROFS, EBUSY), so the target cannot change
        // what the next process of the call reads as the login. bwrap (or the view builder, in a
        // tmpfs of its own) copies the content into a file in memory, so no byte of it reaches the
        // host's disk; the home keeps at most the empty file the mount stands on.
        options.insert(options.end(), {"--perms", "0400", "--ro-bind-data", std::to_string(fd++),
                                       shown_at(call, file)});
    }
    return options;
}

std::vector<documents::PlanFile> login_plan_files(const TargetCall &call) {
    std::vector<documents::PlanFile> files;
    int fd = number(Descriptor::login_files);
    for (const auto &file : call.spec.login_files) {
        files.push_back({fd++, file.content, {}, false});
    }
    return files;
}

}  // namespace tea::bwrap
