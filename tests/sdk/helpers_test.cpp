// The SDK's header-only helpers that read the host: a small file's first line (tea/stamp.hpp),
// a directory's entries through its descriptor (tea/dirents.hpp) and what is left to read from a
// descriptor (tea/read_all.hpp), a path's components for a walk (tea/path_components.hpp), and
// the init of a confinement's pid namespace (tea/namespace_init.hpp).
// Built as C++17, the oldest standard the SDK supports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tea/dirents.hpp>
#include <tea/environment_entries.hpp>
#include <tea/helper_path.hpp>
#include <tea/namespace_init.hpp>
#include <tea/path_components.hpp>
#include <tea/read_all.hpp>
#include <tea/stamp.hpp>
#include <tea/stream_relay.hpp>  // compiled as C++17 here; tested in tests/core/bridge
#include <vector>

#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

class Helpers : public ::testing::Test {
   protected:
    tea::test::TempDir tmp_{"tea-sdk-helpers"};
    fs::path dir_ = tmp_.path();
};

TEST_F(Helpers, FirstLineStopsAtTheFirstNewline) {
    std::ofstream{dir_ / "f"} << "e44c440d-98fe\nsecond line\n";
    EXPECT_EQ(tea::stamp::first_line((dir_ / "f").c_str()), "e44c440d-98fe");
}

TEST_F(Helpers, FirstLineOfAFileWithoutNewlineIsAllOfIt) {
    std::ofstream{dir_ / "f"} << "96364";
    EXPECT_EQ(tea::stamp::first_line((dir_ / "f").c_str()), "96364");
}

TEST_F(Helpers, FirstLineOfAnEmptyOrMissingFileIsEmpty) {
    std::ofstream{dir_ / "empty"} << "";
    EXPECT_EQ(tea::stamp::first_line((dir_ / "empty").c_str()), "");
    EXPECT_EQ(tea::stamp::first_line((dir_ / "missing").c_str()), "");
}

TEST_F(Helpers, FirstLineOfASysctlIsItsValue) {
    const auto value = tea::stamp::first_line("/proc/sys/kernel/random/boot_id");
    EXPECT_EQ(value.size(), 36U) << value;
}

TEST_F(Helpers, DirentsVisitsEveryEntryButDotAndDotDot) {
    std::set<std::string> made;
    for (int i = 0; i < 2000; ++i) {  // more than one getdents64 batch
        const auto name = "entry-" + std::to_string(i);
        std::ofstream{dir_ / name} << "";
        made.insert(name);
    }
    fs::create_directory(dir_ / "sub");
    made.insert("sub");
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::set<std::string> seen;
    bool sub_is_dir = false;
    EXPECT_TRUE(tea::dirents::for_each(fd, [&](const dirent64 &e) {
        seen.insert(e.d_name);
        if (std::string{e.d_name} == "sub") {
            sub_is_dir = e.d_type == DT_DIR;
        }
        return true;
    }));
    ::close(fd);
    EXPECT_EQ(seen, made);
    EXPECT_TRUE(sub_is_dir);
}

TEST_F(Helpers, DirentsStopsWhenTheVisitorSaysSo) {
    for (int i = 0; i < 10; ++i) {
        std::ofstream{dir_ / std::to_string(i)} << "";
    }
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    int visited = 0;
    EXPECT_TRUE(tea::dirents::for_each(fd, [&](const dirent64 &) { return ++visited < 3; }));
    ::close(fd);
    EXPECT_EQ(visited, 3);
}

TEST_F(Helpers, DirentsOfADescriptorThatIsNoDirectoryFails) {
    std::ofstream{dir_ / "file"} << "x";
    const int fd = ::open((dir_ / "file").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    int visited = 0;
    EXPECT_FALSE(tea::dirents::for_each(fd, [&](const dirent64 &) { return ++visited > 0; }));
    ::close(fd);
    EXPECT_EQ(visited, 0);
}

TEST_F(Helpers, ReadAllReadsAFileLargerThanItsBufferWhole) {
    std::string content;
    for (int i = 0; i < 5000; ++i) {
        content += std::to_string(i) + ' ';
    }
    ASSERT_GT(content.size(), 16384U);
    std::ofstream{dir_ / "f"} << content;
    const int fd = ::open((dir_ / "f").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(tea::read_all(fd), content);
    EXPECT_EQ(tea::read_all(fd), "");  // from the offset on: nothing is left
    ::close(fd);
}

TEST_F(Helpers, ReadAllReadsAPipeToItsEnd) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ASSERT_EQ(::write(p[1], "12 345 ", 7), 7);
    ::close(p[1]);
    EXPECT_EQ(tea::read_all(p[0]), "12 345 ");
    ::close(p[0]);
}

TEST_F(Helpers, ReadAllOfADescriptorThatCannotBeReadIsEmpty) {
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(tea::read_all(fd), "");  // EISDIR
    ::close(fd);
    std::ofstream{dir_ / "empty"} << "";
    const int empty = ::open((dir_ / "empty").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(empty, 0);
    EXPECT_EQ(tea::read_all(empty), "");
    ::close(empty);
}

TEST(PathComponents, AreQueuedLastFirstWithoutEmptyOnes) {
    std::vector<std::string> rest{"kept"};
    tea::path_components::push_reversed(rest, "/a//b/../c/");
    EXPECT_EQ(rest, (std::vector<std::string>{"kept", "c", "..", "b", "a"}));
    rest.clear();
    tea::path_components::push_reversed(rest, "name");
    EXPECT_EQ(rest, std::vector<std::string>{"name"});
    rest.clear();
    tea::path_components::push_reversed(rest, "/");
    EXPECT_TRUE(rest.empty());
}

// A process whose stdout and stderr are a pipe this test reads, as a call's are the runtime's:
// `body` runs in it, and its exit status is what body returns.
struct WithOutputPipe {
    pid_t pid = -1;
    int reader = -1;

    template <typename Body>
    explicit WithOutputPipe(Body body) {
        int ends[2];
        if (::pipe(ends) != 0) {
            return;
        }
        pid = ::fork();
        if (pid == 0) {
            ::dup2(ends[1], STDOUT_FILENO);
            ::dup2(ends[1], STDERR_FILENO);
            ::close(ends[0]);
            ::close(ends[1]);
            ::_exit(body());
        }
        ::close(ends[1]);
        reader = ends[0];
    }
    // The status it exits with within five seconds, or -1.
    int status() const {
        for (int i = 0; i < 500; ++i) {
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            ::usleep(10000);
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return -1;
    }
    bool running_after(useconds_t wait) const {
        ::usleep(wait);
        return ::waitpid(pid, nullptr, WNOHANG) == 0;
    }
};

TEST_F(Helpers, NamespaceInitSeesTheHostGoneOnceTheOutputHasNoReader) {
    const WithOutputPipe watcher{[] {
        if (tea::namespace_init::host_gone()) {
            return 1;  // too soon: the reader is there
        }
        while (!tea::namespace_init::host_gone()) {
            ::usleep(1000);
        }
        return 0;
    }};
    ASSERT_GT(watcher.pid, 0);
    EXPECT_TRUE(watcher.running_after(100000));
    ::close(watcher.reader);
    EXPECT_EQ(watcher.status(), 0);
}

TEST_F(Helpers, NamespaceInitEndsWithItsChildsStatus) {
    const WithOutputPipe init{[] {
        const pid_t child = ::fork();
        if (child == 0) {
            ::_exit(7);
        }
        tea::namespace_init::serve(child);
        return 0;  // never reached: serve exits
    }};
    ASSERT_GT(init.pid, 0);
    EXPECT_EQ(init.status(), 7);
    ::close(init.reader);

    const WithOutputPipe killed{[] {
        const pid_t child = ::fork();
        if (child == 0) {
            ::raise(SIGTERM);
            ::_exit(0);
        }
        tea::namespace_init::serve(child);
        return 0;  // never reached: serve exits
    }};
    EXPECT_EQ(killed.status(), 128 + SIGTERM);
    ::close(killed.reader);
}

// In a pid namespace of its own (a user namespace too when not root): an init serving a child
// that exits 7 on SIGTERM and runs `then` first; the process returns the init's status. The
// init's id outside the namespace is written to stdout, as text.
template <typename Then>
int init_of_a_namespace(Then then) {
    if (::geteuid() != 0 && ::unshare(CLONE_NEWUSER) != 0) {
        return 90;
    }
    if (::unshare(CLONE_NEWPID) != 0) {
        return 91;
    }
    const pid_t init = ::fork();
    if (init == 0) {
        tea::namespace_init::hold_end_signal();
        const pid_t child = ::fork();
        if (child == 0) {
            tea::namespace_init::release_end_signal();
            (void)::signal(SIGTERM, [](int) { ::_exit(7); });
            ::_exit(then());
        }
        tea::namespace_init::serve(child);
    }
    const std::string id = std::to_string(init) + "\n";
    (void)!::write(STDOUT_FILENO, id.data(), id.size());
    int status = 0;
    ::waitpid(init, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The init's id, as init_of_a_namespace wrote it.
pid_t read_init_id(int reader) {
    std::string text;
    char c = 0;
    while (::read(reader, &c, 1) == 1 && c != '\n') {
        text += c;
    }
    return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
}

TEST_F(Helpers, NamespaceInitPassesTheHostsTermToEveryProcessOfItsNamespace) {
    const WithOutputPipe init{[] {
        return init_of_a_namespace([] {
            ::pause();
            return 0;
        });
    }};
    ASSERT_GT(init.pid, 0);
    const pid_t id = read_init_id(init.reader);
    ASSERT_GT(id, 0) << "no pid namespace could be made";
    EXPECT_TRUE(init.running_after(100000));
    // From outside the namespace, where the kernel drops a signal its init neither handles nor
    // blocks: the child's handler runs.
    ::kill(id, SIGTERM);
    EXPECT_EQ(init.status(), 7);
    ::close(init.reader);
}

TEST_F(Helpers, NamespaceInitPassesOnNoTermSentFromInsideItsNamespace) {
    // The child asks its init itself: nothing comes back, and it goes on to exit 3.
    const WithOutputPipe init{[] {
        return init_of_a_namespace([] {
            ::kill(1, SIGTERM);
            ::usleep(300000);
            return 3;
        });
    }};
    ASSERT_GT(init.pid, 0);
    ASSERT_GT(read_init_id(init.reader), 0) << "no pid namespace could be made";
    EXPECT_EQ(init.status(), 3);
    ::close(init.reader);
}

TEST_F(Helpers, NamespaceInitEndsAsSoonAsTheHostIsGone) {
    // Its child would run for a minute; the host's end of the output goes first.
    const WithOutputPipe init{[] {
        const pid_t child = ::fork();
        if (child == 0) {
            ::sleep(60);
            ::_exit(0);
        }
        tea::namespace_init::serve(child);
        return 0;  // never reached: serve exits
    }};
    ASSERT_GT(init.pid, 0);
    EXPECT_TRUE(init.running_after(100000));  // the control: it serves while the host reads
    ::close(init.reader);
    EXPECT_EQ(init.status(), tea::namespace_init::host_gone_status);
}

TEST(HelperPath, IsInTheLibexecFolderBesideTheFileThatHoldsTheCode) {
    // Compiled into this test program, it names a place four folders above this program's file,
    // as it does above a plugin's lib/tea-evaluate/plugins/<library>.so.
    const auto found = tea::helper_path::beside_plugin("tea-sandbox-helper");
    EXPECT_NE(found.find("libexec/tea-evaluate/tea-sandbox-helper"), std::string::npos) << found;
}

TEST(EnvironmentEntries, ReadSetAndRemoveByNameAlone) {
    namespace entries = tea::environment_entries;
    std::vector<std::string> env{"A=1", "AB=2", "A=3", "NOEQUALS", "B=x=y"};
    EXPECT_EQ(entries::value_of(env, "A"), "3");  // the last one
    EXPECT_EQ(entries::value_of(env, "B"), "x=y");
    EXPECT_EQ(entries::value_of(env, "NOEQUALS"), "");
    EXPECT_EQ(entries::value_of(env, "C"), "");
    entries::set(env, "A", "4");
    EXPECT_EQ(env, (std::vector<std::string>{"AB=2", "NOEQUALS", "B=x=y", "A=4"}));
    entries::remove(env, "B");
    entries::remove(env, "NOEQUALS");  // an entry without '=' names nothing and stays
    EXPECT_EQ(env, (std::vector<std::string>{"AB=2", "NOEQUALS", "A=4"}));
}

}  // namespace
