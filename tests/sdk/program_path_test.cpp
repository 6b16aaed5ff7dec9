// tea/program_path.hpp against glibc's execvp itself: for each layout of PATH the test builds, the
// file the helper names is the one a real execvp runs, and the error it reports is the errno a
// real execvp fails with. Built as C++17, the oldest standard the SDK supports.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tea/program_path.hpp>
#include <vector>

#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

struct Exec {
    int error = 0;     // execvp's errno, 0 when it ran the program
    std::string path;  // what the program ran as ($0 of the script), when it ran
};

class ProgramPath : public ::testing::Test {
   protected:
    // A script that prints the path it was started by: execve hands the interpreter that path.
    fs::path program(const std::string &dir, const std::string &name, unsigned mode) const {
        fs::create_directories(root() / dir);
        const auto path = root() / dir / name;
        std::ofstream{path} << "#!/bin/sh\nprintf %s \"$0\"\n";
        EXPECT_EQ(::chmod(path.c_str(), mode), 0);
        return path;
    }
    const fs::path &root() const { return tmp_.path(); }
    std::string entry(const std::string &dir) const { return (root() / dir).string(); }

    // What glibc's execvp does with `name` under PATH=path (unset when nullopt), from `cwd`.
    static Exec real_execvp(const std::string &name, const std::optional<std::string> &path,
                            const fs::path &cwd) {
        int out[2];
        if (::pipe(out) != 0) {
            return {-1, {}};
        }
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::dup2(out[1], 1);
            if (::chdir(cwd.c_str()) != 0) {
                ::_exit(254);
            }
            if (path) {
                ::setenv("PATH", path->c_str(), 1);
            } else {
                ::unsetenv("PATH");
            }
            char *const argv[] = {const_cast<char *>(name.c_str()), nullptr};
            ::execvp(name.c_str(), argv);
            ::_exit(errno == 0 ? 255 : errno);
        }
        ::close(out[1]);
        std::string printed;
        char buffer[4096];
        ssize_t n = 0;
        while ((n = ::read(out[0], buffer, sizeof buffer)) > 0) {
            printed.append(buffer, static_cast<std::size_t>(n));
        }
        ::close(out[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status)) {
            return {-1, {}};
        }
        // The script prints its path and exits 0; a failed execvp exits with its errno.
        return WEXITSTATUS(status) == 0 && !printed.empty() ? Exec{0, printed}
                                                            : Exec{WEXITSTATUS(status), {}};
    }

    // The helper's answer, from `cwd` as the real execvp's.
    static tea::program_path::Found resolve(const std::string &name,
                                            const std::optional<std::string> &path,
                                            const fs::path &cwd) {
        const auto before = fs::current_path();
        fs::current_path(cwd);
        const std::optional<std::string_view> view =
            path ? std::optional<std::string_view>{*path} : std::nullopt;
        auto found = tea::program_path::resolve(name, view);
        fs::current_path(before);
        return found;
    }

    // Both agree, and the helper says `expected` (a path, or an errno with an empty path).
    void expect(const std::string &name, const std::optional<std::string> &path,
                const std::string &expected_path, int expected_error) const {
        const auto found = resolve(name, path, root());
        const auto ran = real_execvp(name, path, root());
        EXPECT_EQ(found.error, expected_error) << std::strerror(found.error);
        EXPECT_EQ(found.path, expected_path);
        EXPECT_EQ(ran.error, expected_error) << "glibc's execvp: " << std::strerror(ran.error);
        EXPECT_EQ(ran.path, expected_path) << "glibc's execvp ran another file";
    }

    tea::test::TempDir tmp_{"tea-sdk-program-path"};
};

TEST_F(ProgramPath, TheFirstExecutableOfPathWins) {
    program("a", "prog", 0755);
    program("b", "prog", 0755);
    expect("prog", entry("a") + ":" + entry("b"), entry("a") + "/prog", 0);
}

// A file of that name that may not be executed is passed over, as execvp passes it over.
TEST_F(ProgramPath, AFileThatMayNotBeExecutedIsPassedOver) {
    program("a", "prog", 0644);
    program("b", "prog", 0755);
    expect("prog", entry("a") + ":" + entry("b"), entry("b") + "/prog", 0);
}

// A directory of that name is passed over too (execve answers EACCES for it).
TEST_F(ProgramPath, ADirectoryOfThatNameIsPassedOver) {
    fs::create_directories(root() / "a" / "prog");
    program("b", "prog", 0755);
    expect("prog", entry("a") + ":" + entry("b"), entry("b") + "/prog", 0);
}

// Something found that may not be executed, and nothing after it: EACCES, not ENOENT.
TEST_F(ProgramPath, OnlyANonExecutableFileIsEacces) {
    program("a", "prog", 0644);
    fs::create_directories(root() / "b");
    expect("prog", entry("a") + ":" + entry("b"), "", EACCES);
}

TEST_F(ProgramPath, NothingOfThatNameIsEnoent) {
    fs::create_directories(root() / "a");
    expect("prog", entry("a") + ":" + entry("missing"), "", ENOENT);
}

// An empty entry is the working directory, and the candidate stays relative.
TEST_F(ProgramPath, AnEmptyEntryIsTheWorkingDirectory) {
    program(".", "prog", 0755);
    fs::create_directories(root() / "a");
    expect("prog", entry("a") + "::" + entry("a"), "prog", 0);
}

// A name with a slash is not searched for.
TEST_F(ProgramPath, ANameWithASlashIsTakenAsItIs) {
    program("a", "prog", 0755);
    program("b", "prog", 0755);
    expect("./a/prog", entry("b"), "./a/prog", 0);
    expect("./b/missing", entry("b"), "", ENOENT);
}

// Without PATH, glibc searches "/bin:/usr/bin".
TEST_F(ProgramPath, WithoutPathTheDefaultIsSearched) {
    const auto found = resolve("sh", std::nullopt, root());
    ASSERT_TRUE(found) << std::strerror(found.error);
    EXPECT_EQ(found.path, "/bin/sh");
}

// A plugin that runs its target as another identity asks its own question of each candidate:
// what that identity may execute.
TEST_F(ProgramPath, TheCheckDecidesWhoMayExecute) {
    const auto a = program("a", "prog", 0755);
    const auto b = program("b", "prog", 0755);
    const std::string path = entry("a") + ":" + entry("b");
    const auto not_a = [&](const std::string &candidate) {
        return candidate == a.string() ? EACCES
                                       : tea::program_path::executable_by_this_process(candidate);
    };
    const auto found = tea::program_path::resolve("prog", std::string_view{path}, not_a);
    EXPECT_EQ(found.path, b.string());
    const auto none = tea::program_path::resolve("prog", std::string_view{path},
                                                 [](const std::string &) { return EACCES; });
    EXPECT_EQ(none.error, EACCES);
    EXPECT_TRUE(none.path.empty());
    // An error execvp does not search past ends the search with it.
    const auto stopped = tea::program_path::resolve("prog", std::string_view{path},
                                                    [](const std::string &) { return ELOOP; });
    EXPECT_EQ(stopped.error, ELOOP);
}

TEST_F(ProgramPath, AnEmptyNameIsEnoent) {
    EXPECT_EQ(tea::program_path::resolve("", std::string_view{"/bin"}).error, ENOENT);
}

}  // namespace
