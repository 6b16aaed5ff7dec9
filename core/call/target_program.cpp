#include "call/target_program.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <tea/program_path.hpp>

#include "util/error.hpp"

namespace tea::call {

TargetProgram find_target_program(const std::string &name, const std::string &cwd) {
    if (name.find('/') != std::string::npos) {
        const std::string file =
            (name.front() == '/' ? std::filesystem::path{name} : std::filesystem::path{cwd} / name)
                .lexically_normal()
                .string();
        // Whether it may be executed is the exec's to say, as the identity that makes it.
        struct stat st {};
        const bool missing = ::stat(file.c_str(), &st) != 0 && errno == ENOENT;
        return {file, missing ? ENOENT : 0};
    }
    // Read on the calling thread, which is the runtime's only one while no call runs.
    const char *env_path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
    const std::string_view search =
        env_path != nullptr && env_path[0] != '\0' ? env_path : "/usr/bin:/bin";
    std::string refused;  // the first file of that name the invoker may not execute
    const auto found = program_path::resolve(name, search, [&](const std::string &candidate) {
        // A relative entry would resolve against whatever directory the runtime is in.
        struct stat st {};
        if (candidate.front() != '/' || ::stat(candidate.c_str(), &st) != 0) {
            return ENOENT;  // not there, as far as the invoker can see: a shell goes on too
        }
        const int error = program_path::executable_by_this_process(candidate);
        if (error != 0 && refused.empty()) {
            refused = candidate;
        }
        return error == 0 ? 0 : EACCES;
    });
    if (found) {
        return {found.path, 0};
    }
    return {refused, found.error == EACCES && !refused.empty() ? EACCES : ENOENT};
}

exec::CallResult program_not_started(const std::string &name, const TargetProgram &program) {
    exec::CallResult result;
    result.start_errno = program.error;
    if (program.error == ENOENT && name.find('/') == std::string::npos) {
        result.start_error = name + ": command not found";
    } else if (program.path == name) {
        result.start_error = name + ": " + errno_text(program.error);
    } else {
        result.start_error = name + ": " + program.path + ": " + errno_text(program.error);
    }
    return result;
}

int program_not_started_status(const TargetProgram &program) {
    return program.error == ENOENT ? 127 : 126;  // as a shell reports a command
}

}  // namespace tea::call
