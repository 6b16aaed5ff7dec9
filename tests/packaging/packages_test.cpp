// The Debian packages as a machine's administrator gets them, as root on the machine itself:
// docs/packaging.md's commands run as written (scripts/package.sh, dpkg -i of every package,
// tea-evaluate plugins from /usr/bin, the quickstart with the installed binary, a purge and the
// runtime with the opt-out backend alone), then lintian finds no error in any package, each
// package holds exactly the files the page lists, a plugin builds against the installed SDK (its
// CMake package and its pkg-config file), and a purge of everything leaves none of their files.
// Whatever fails, every package is purged at the end (and by the ctest fixture packages.purge if
// this process dies).
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "docs/marked_blocks.hpp"
#include "docs/shell_session.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

const fs::path kSource{TEA_SOURCE_DIR};
const fs::path kPage = kSource / "docs" / "packaging.md";
const fs::path kPackages = kSource / "build" / "release" / "packages";
constexpr std::string_view kContents = "contents ";
const std::string kPurgeAll =
    "pkgs=$(dpkg-query --show --showformat='${Package}\\n' 'tea-evaluate*' 2>/dev/null || true)\n"
    "[ -z \"$pkgs\" ] || dpkg --purge $pkgs >/dev/null\n";

test::Outcome shell(const std::string &script) {
    return test::run({"/bin/bash", "-c", "set -euo pipefail\n" + script},
                     test::environment_with({"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}));
}

std::vector<std::string> installed_packages() {
    const auto listed = shell(
        "dpkg-query --show --showformat='${db:Status-Abbrev} ${Package}\\n' 'tea-evaluate*' "
        "2>/dev/null || true");
    std::vector<std::string> out;
    std::istringstream in{listed.out};
    for (std::string status, name; in >> status >> name;) {
        // "ii", "rc" (config files left): anything dpkg still knows of but "un"/"pn".
        if (status != "un" && status != "pn") {
            out.push_back(name);
        }
    }
    return out;
}

// If this process dies before its end (a crash, ctest's timeout), what it started must not go on
// installing after packages.purge has purged: the test leads a process group of its own, and a
// watchdog child, which the kernel tells of its parent's death, kills that group.
void kill_group_when_this_process_dies() {
    ASSERT_EQ(::setpgid(0, 0), 0);
    const pid_t group = ::getpid();
    sigset_t term;
    sigset_t before;
    ::sigemptyset(&term);
    ::sigaddset(&term, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &term, &before);
    const pid_t watchdog = ::fork();
    if (watchdog == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() == group) {
            int signal = 0;
            ::sigwait(&term, &signal);
        }
        ::kill(-group, SIGKILL);
        ::_exit(0);
    }
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ASSERT_GT(watchdog, 0);
}

// Purges every tea-evaluate package when the test ends, however it ends.
struct PurgeAtEnd {
    PurgeAtEnd() = default;
    PurgeAtEnd(const PurgeAtEnd &) = delete;
    PurgeAtEnd &operator=(const PurgeAtEnd &) = delete;
    PurgeAtEnd(PurgeAtEnd &&) = delete;
    PurgeAtEnd &operator=(PurgeAtEnd &&) = delete;
    ~PurgeAtEnd() { shell(kPurgeAll); }
};

// Every package file: its Package field and the paths of what it installs that is not a folder.
std::map<std::string, std::vector<std::string>> package_contents(std::vector<fs::path> &files) {
    std::map<std::string, std::vector<std::string>> contents;
    for (const auto &entry : fs::directory_iterator{kPackages}) {
        const auto ext = entry.path().extension();
        if (ext != ".deb" && ext != ".ddeb") {
            continue;
        }
        files.push_back(entry.path());
        const auto name = shell("dpkg-deb --field '" + entry.path().string() + "' Package");
        EXPECT_EQ(name.status, 0) << name.err;
        const auto listed = shell("dpkg-deb --contents '" + entry.path().string() + "'");
        EXPECT_EQ(listed.status, 0) << listed.err;
        auto &paths = contents[test::lines_of(name.out).at(0)];
        for (const auto &line : test::lines_of(listed.out)) {
            // drwxr-xr-x root/root 0 2026-12-06 12:31 ./usr/  (a link ends in " -> target")
            std::istringstream fields{line};
            std::string mode, owner, size, date, time, path;
            fields >> mode >> owner >> size >> date >> time >> path;
            if (!mode.starts_with('d')) {
                paths.push_back(path.substr(1));
            }
        }
    }
    return contents;
}

// "*" stands for any name, not for a path's "/".
bool matches(const std::string &pattern, const std::string &path) {
    return ::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

TEST(Packages, InstallUsePurge) {
    ASSERT_EQ(::geteuid(), 0U) << "installs packages: the test runs as root (CI and this machine)";
    ASSERT_TRUE(installed_packages().empty())
        << "tea-evaluate packages are installed already; the test would purge them";
    kill_group_when_this_process_dies();
    const PurgeAtEnd purge;

    // The page's commands, as a reader with a home of their own runs them from the repository.
    const auto blocks = test::fenced_blocks(kPage);
    const test::TempDir base{"tea-packages", fs::perms{0755}};
    const auto home = base / "home";
    fs::create_directory(home);
    fs::permissions(home, fs::perms::owner_all);
    const auto env =
        test::fresh_user_environment(home, base / "private", "/usr/sbin:/usr/bin:/sbin:/bin");
    // The page in two sessions: making the packages, then using them, while lintian reads the
    // packages beside the second (the test runs alone, so it has both cores).
    const auto first_run =
        std::find_if(blocks.begin(), blocks.end(), [](const auto &b) { return b.marker == "run"; });
    ASSERT_NE(first_run, blocks.end());
    const std::vector<test::FencedBlock> making{blocks.begin(), first_run + 1};
    const std::vector<test::FencedBlock> using_them{first_run + 1, blocks.end()};
    const auto made = test::run_page(kPage, making, kSource, env);
    ASSERT_EQ(made.status, 0) << "a command of the page failed at " << made.failed_block;
    // lintian: no error in any package (its warnings are listed in the page).
    auto lint = std::async(std::launch::async, [] {
        return shell("cd '" + kPackages.string() +
                     "' && lintian --no-tag-display-limit *.deb *.ddeb 2>&1");
    });
    const auto session = test::run_page(kPage, using_them, kSource, env);
    ASSERT_EQ(session.status, 0) << "a command of the page failed at " << session.failed_block;
    for (const auto &problem : test::outputs_not_shown(kPage, using_them, session)) {
        ADD_FAILURE() << problem;
    }
    // The runtime with the opt-out backend shows exactly that one plugin: the page's last output
    // is the last run block's, line for line.
    const auto last_output = std::find_if(blocks.rbegin(), blocks.rend(),
                                          [](const auto &b) { return b.marker == "output"; });
    ASSERT_NE(last_output, blocks.rend());
    std::string why;
    EXPECT_TRUE(test::shows_exactly(last_output->text, session.outputs.back(), &why))
        << "packaging.md:" << last_output->line << ": " << why;
    EXPECT_EQ(installed_packages(),
              (std::vector<std::string>{"tea-evaluate", "tea-evaluate-plugin-opt-out"}));
    // Its warnings are exactly those the page's table lists, each with its reason.
    const auto linted = lint.get();
    EXPECT_EQ(linted.status, 0) << linted.out;
    std::set<std::string> warned;
    for (const auto &line : test::lines_of(linted.out)) {
        EXPECT_FALSE(line.starts_with("E: ")) << line;
        if (line.starts_with("W: ")) {
            // W: tea-evaluate: no-manual-page [usr/bin/tea-skill-runner]
            std::istringstream fields{line};
            std::string level, package, tag;
            fields >> level >> package >> tag;
            warned.insert(tag);
        }
    }
    std::set<std::string> justified;
    bool lintian_section = false;
    for (const auto &line : test::lines_of(test::read_file(kPage.string()))) {
        if (line.starts_with("## ")) {
            lintian_section = line == "## lintian";
        } else if (lintian_section && line.starts_with("| `")) {
            justified.insert(line.substr(3, line.find_first_of(" `", 3) - 3));
        }
    }
    EXPECT_FALSE(justified.empty()) << "packaging.md's lintian section has no table of warnings";
    EXPECT_EQ(warned, justified) << "lintian's warnings against packaging.md's table of them:\n"
                                 << linted.out;

    // Each package holds exactly what the page lists: every pattern matches a file, every file a
    // pattern; its copyright and changelog besides. Every -dbgsym package is as the runtime's.
    std::vector<fs::path> package_files;
    const auto contents = package_contents(package_files);
    std::map<std::string, std::vector<std::string>> listed;
    for (const auto &block : blocks) {
        if (block.marker.starts_with(kContents)) {
            listed[block.marker.substr(kContents.size())] = test::lines_of(block.text);
        }
    }
    // The runtime and the SDK, each plugin the page lists, and a -dbgsym for each but the SDK.
    const auto plugins =
        static_cast<std::size_t>(std::count_if(listed.begin(), listed.end(), [](const auto &entry) {
            return entry.first.starts_with("tea-evaluate-plugin-");
        }));
    ASSERT_GE(plugins, 6U);
    ASSERT_EQ(contents.size(), 3U + 2U * plugins)
        << "the runtime, the SDK, " << plugins << " plugins, and their -dbgsym";
    for (const auto &[package, paths] : contents) {
        auto patterns = listed[package];
        if (package.ends_with("-dbgsym")) {
            patterns = {"/usr/lib/debug/.build-id/*/*.debug", "/usr/share/doc/" + package};
        } else {
            EXPECT_TRUE(listed.contains(package)) << "packaging.md lists no files of " << package;
            patterns.push_back("/usr/share/doc/" + package + "/copyright");
            patterns.push_back("/usr/share/doc/" + package + "/changelog.gz");
        }
        for (const auto &pattern : patterns) {
            EXPECT_TRUE(std::any_of(paths.begin(), paths.end(),
                                    [&](const auto &p) { return matches(pattern, p); }))
                << package << " holds nothing packaging.md lists as " << pattern;
        }
        for (const auto &path : paths) {
            EXPECT_TRUE(std::any_of(patterns.begin(), patterns.end(),
                                    [&](const auto &p) { return matches(p, path); }))
                << package << " holds " << path << ", which packaging.md does not list";
        }
    }
    for (const auto &[package, _] : listed) {
        EXPECT_TRUE(contents.contains(package))
            << "packaging.md lists " << package << ", which scripts/package.sh does not make";
    }

    // The dependencies the page names, and the runtime's conffile.
    const auto field = [](const std::string &glob, const std::string &name) {
        return shell("dpkg-deb --field " + kPackages.string() + "/" + glob + " " + name).out;
    };
    EXPECT_NE(field("tea-evaluate_*.deb", "Depends").find("libgit2"), std::string::npos);
    for (const auto &plugin :
         {"bubblewrap", "strace", "connect", "opt-out", "login-claude", "login-codex"}) {
        const auto depends =
            field("tea-evaluate-plugin-" + std::string{plugin} + "_*.deb", "Depends");
        EXPECT_TRUE(depends.starts_with("tea-evaluate (>= " TEA_VERSION ")")) << depends;
        // The backend runs bwrap (package bubblewrap), the observer strace.
        if (std::string_view{plugin} == "bubblewrap" || std::string_view{plugin} == "strace") {
            EXPECT_NE(depends.find(", " + std::string{plugin} + ","), std::string::npos) << depends;
        }
    }
    EXPECT_EQ(shell("dpkg-deb --info " + kPackages.string() + "/tea-evaluate_*.deb conffiles").out,
              "/etc/tea-evaluate/plugins.d/README\n");

    // A plugin built out of the tree against the installed SDK, with find_package(TeaSdk) from
    // /usr alone and with pkg-config, loaded by the installed runtime.
    const auto oot = base / "oot";
    const auto built = shell(
        "dpkg -i '" + kPackages.string() + "'/tea-evaluate-sdk_*.deb >/dev/null\n" + "cmake -S '" +
        (kSource / "tests/sdk/out_of_tree").string() + "' -B '" + oot.string() +
        "' -G Ninja -DCMAKE_C_COMPILER='" TEA_C_COMPILER
        "' -DCMAKE_BUILD_TYPE=Release >/dev/null\n" +
        "cmake --build '" + oot.string() + "' >/dev/null\n" +
        // The installed SDK's, not one another prefix or the user's package registry holds.
        "grep -qx 'TeaSdk_DIR:PATH=/usr/share/cmake/TeaSdk' '" + (oot / "CMakeCache.txt").string() +
        "'\n" + "[ \"$(pkg-config --variable=pcfiledir tea-sdk)\" = /usr/share/pkgconfig ]\n" +
        "[ \"$(pkg-config --modversion tea-sdk)\" = \"$(sed -n 's/^#define TEA_ABI_MAJOR //p' "
        "/usr/include/tea/plugin.h).$(sed -n 's/^#define TEA_ABI_MINOR //p' "
        "/usr/include/tea/plugin.h)\" ]\n" +
        "'" TEA_C_COMPILER
        "' -std=c11 -Wall -Werror -shared -fPIC $(pkg-config --cflags tea-sdk) "
        "-o '" +
        (oot / "libtea-login-oot-pc.so").string() + "' '" +
        (kSource / "tests/sdk/out_of_tree/oot_pc.c").string() + "'\n" + "HOME='" + home.string() +
        "' XDG_CONFIG_HOME='" + (home / ".config").string() + "' TEA_PLUGIN_PATH='" +
        (oot / "plugins.d").string() + "' tea-evaluate plugins");
    ASSERT_EQ(built.status, 0) << built.out << built.err;
    EXPECT_NE(built.out.find("oot-echo       backend"), std::string::npos) << built.out;
    EXPECT_NE(built.out.find("available  " + (oot / "plugins.d").string()), std::string::npos)
        << built.out;

    // Every package, all at once, and the purge of all: none of their files is left, nor a folder
    // that was not there before they were installed, nor /etc/tea-evaluate.
    const auto purged = shell(kPurgeAll);
    ASSERT_EQ(purged.status, 0) << purged.out << purged.err;
    std::set<std::string> existed;
    for (const auto &[package, paths] : contents) {
        for (const auto &path : paths) {
            for (fs::path p = path; p != p.parent_path(); p = p.parent_path()) {
                if (fs::exists(fs::symlink_status(p))) {
                    existed.insert(p.string());
                }
            }
        }
    }
    std::string all;
    for (const auto &file : package_files) {
        all += " '" + file.string() + "'";
    }
    // What installing them all takes is printed for bench/README.md (ctest --output-on-failure
    // or -V shows it; the test's log keeps it).
    const auto started = std::chrono::steady_clock::now();
    const auto install = shell("dpkg -i" + all + " >/dev/null");
    const std::chrono::duration<double> installing = std::chrono::steady_clock::now() - started;
    const auto cycle = shell(kPurgeAll);
    std::cout << "dpkg -i of the " << package_files.size() << " packages: " << installing.count()
              << " s\n";
    ASSERT_EQ(install.status, 0) << install.out << install.err;
    ASSERT_EQ(cycle.status, 0) << cycle.out << cycle.err;
    EXPECT_TRUE(installed_packages().empty());
    for (const auto &[package, paths] : contents) {
        for (const auto &path : paths) {
            for (fs::path p = path; p != p.parent_path(); p = p.parent_path()) {
                if (!existed.contains(p.string())) {
                    EXPECT_FALSE(fs::exists(fs::symlink_status(p)))
                        << p << " of " << package << " is left after the purge";
                }
            }
        }
    }
    EXPECT_FALSE(fs::exists("/etc/tea-evaluate"));
}

}  // namespace
}  // namespace tea
