// Errors that carry the process exit status DESIGN.md section 2 assigns them.
#pragma once

#include <stdexcept>
#include <string>

namespace tea {

enum class ExitCode : int {
    ok = 0,
    fail = 1,
    usage = 2,        // usage error or an invalid evaluation/configuration
    invalid = 3,      // isolation violation
    no_confine = 12,  // the host cannot confine or cannot observe
    runtime = 125,    // the runtime failed before the target started
};

// An error whose sentence is meant for the user as it stands.
class Error : public std::runtime_error {
   public:
    Error(ExitCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
    [[nodiscard]] ExitCode code() const noexcept { return code_; }

   private:
    ExitCode code_;
};

// Configuration or usage: exit 2.
inline Error usage_error(const std::string &message) {
    return {ExitCode::usage, message};
}
// The host cannot confine or observe: exit 12.
inline Error host_error(const std::string &message) {
    return {ExitCode::no_confine, message};
}
// The runtime itself failed: exit 125 for exec.
inline Error runtime_failure(const std::string &message) {
    return {ExitCode::runtime, message};
}

// strerror(errno) rendered thread-safely.
std::string errno_text(int error_number);

}  // namespace tea
