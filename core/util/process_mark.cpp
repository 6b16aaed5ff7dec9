#include "util/process_mark.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <sstream>
#include <tea/read_all.hpp>

#include "util/fd.hpp"

namespace tea {

namespace {

bool is_number(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

// Field 22 of /proc/PID/stat; empty when there is no such process.
std::string start_time(std::string_view pid) {
    const auto path = "/proc/" + std::string{pid} + "/stat";
    const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    const auto stat = fd ? read_all(fd.get()) : std::string{};
    // The command's name, in parentheses, may hold spaces and ')': the fields follow the last.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) return {};
    std::istringstream fields{stat.substr(close + 1)};
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
        if (i == 22) return field;
    }
    return {};
}

std::string pid_namespace() {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? std::to_string(st.st_ino) : std::string{"0"};
}

}  // namespace

const std::string &own_process_mark() {
    static const std::string mark = [] {
        const auto pid = std::to_string(::getpid());
        return pid_namespace() + "-" + pid + "-" + start_time(pid);
    }();
    return mark;
}

bool process_mark_alive(std::string_view mark) {
    static const std::string own_namespace = pid_namespace();
    std::istringstream in{std::string{mark}};
    std::string name_space;
    std::string pid;
    std::string start;
    if (!std::getline(in, name_space, '-') || !std::getline(in, pid, '-') ||
        !std::getline(in, start, '-') || !is_number(name_space) || !is_number(pid) ||
        !is_number(start) || name_space != own_namespace) {
        return true;
    }
    return start_time(pid) == start;
}

}  // namespace tea
