#include "support/process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char **environ;  // NOLINT

namespace tea::test {

int open_as(const std::string &path, uid_t uid, gid_t gid) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
            ::setresuid(uid, uid, uid) != 0) {
            ::_exit(255);
        }
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        ::_exit(fd >= 0 ? 0 : errno);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string make_temp_dir(const std::string &prefix) {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    return pattern;
}

std::string make_host_dir(const std::string &prefix) {
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    const std::string parent = ::geteuid() == 0 || home == nullptr ? "/var/lib" : home;
    std::string pattern = parent + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr || ::chmod(pattern.c_str(), 0755) != 0) {
        throw std::runtime_error("cannot make a directory under " + parent);
    }
    return pattern;
}

void write_file(const std::string &path, const std::string &content) {
    std::ofstream out{path, std::ios::binary};
    out << content;
}

std::string read_file(const std::string &path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<RunningProcess> processes_holding(const std::vector<std::string> &needles) {
    std::vector<RunningProcess> found;
    std::error_code ec;
    for (std::filesystem::directory_iterator it{"/proc", ec}, end; !ec && it != end;
         it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const auto pid = static_cast<pid_t>(std::stol(name));
        if (pid == ::getpid()) {
            continue;
        }
        // Read with read(2): a process that exits between the open and the read answers ESRCH,
        // which a stream would throw.
        const int fd = ::open((it->path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        std::string line;
        std::array<char, 4096> buffer{};
        ssize_t got = 0;
        while ((got = ::read(fd, buffer.data(), buffer.size())) > 0) {
            line.append(buffer.data(), static_cast<std::size_t>(got));
        }
        ::close(fd);
        if (got == 0 && std::all_of(needles.begin(), needles.end(), [&](const auto &needle) {
                return line.find(needle) != std::string::npos;
            })) {
            std::replace(line.begin(), line.end(), '\0', ' ');
            found.push_back({pid, line});
        }
    }
    return found;
}

std::vector<std::string> environment_with(const std::vector<std::string> &extra) {
    std::vector<std::string> env;
    for (char **e = environ; *e != nullptr; ++e) {
        env.emplace_back(*e);
    }
    for (const auto &item : extra) {
        const auto name = item.substr(0, item.find('=') + 1);
        std::erase_if(env, [&](const std::string &e) { return e.rfind(name, 0) == 0; });
        env.push_back(item);
    }
    return env;
}

std::vector<char *> c_strings(const std::vector<std::string> &items) {
    std::vector<char *> out;
    out.reserve(items.size() + 1);
    for (const auto &s : items) {
        out.push_back(const_cast<char *>(s.c_str()));  // NOLINT: exec's historical signature
    }
    out.push_back(nullptr);
    return out;
}

Outcome run(const std::vector<std::string> &argv, const std::vector<std::string> &env) {
    const auto dir = make_temp_dir("tea-test-run");
    const auto out_path = dir + "/out";
    const auto err_path = dir + "/err";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    auto args = c_strings(argv);
    auto envp = c_strings(env);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv.at(0).c_str(), &fa, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        throw std::runtime_error("cannot start " + argv[0]);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    Outcome o;
    o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = read_file(out_path);
    o.err = read_file(err_path);
    ::unlink(out_path.c_str());
    ::unlink(err_path.c_str());
    ::rmdir(dir.c_str());
    return o;
}

}  // namespace tea::test
