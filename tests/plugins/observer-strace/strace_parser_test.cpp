// Tests of the strace trace parser: the recorded corpus (real strace 6.1 around bwrap), small
// hand-written traces for each rule, chunking at every split point, malformed input, and one
// trace recorded live under the installed strace and bwrap.
#include "strace_parser.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/temp_dir.hpp"

extern char **environ;

namespace {

using tea::strace::AccessEvent;
using tea::strace::AccessKind;
using tea::strace::Parser;
using tea::strace::ParserLimits;

// The tree corpus/record.sh builds; the assertions name only paths under it.
const std::string kTree = "/tmp/tea-strace-corpus";

struct Parsed {
    std::vector<AccessEvent> events;
    bool lossy = false;
    std::string reason;
};

Parsed parse_chunks(const std::vector<std::string_view> &chunks, const std::string &cwd = "/",
                    ParserLimits limits = {}) {
    Parsed out;
    Parser parser(cwd, limits);
    const auto sink = [&out](const AccessEvent &e) { out.events.push_back(e); };
    for (const std::string_view chunk : chunks) parser.feed(chunk, sink);
    parser.finish(sink);
    out.lossy = parser.lossy();
    out.reason = parser.lossy_reason();
    return out;
}

Parsed parse(std::string_view text, const std::string &cwd = "/", ParserLimits limits = {}) {
    return parse_chunks({text}, cwd, limits);
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string corpus(const std::string &name) {
    std::string text = read_file(std::string(TEA_STRACE_CORPUS_DIR) + "/" + name);
    EXPECT_FALSE(text.empty()) << "missing corpus file " << name;
    return text;
}

// A canonical one-line form of an event, for comparing whole sequences.
std::string describe(const AccessEvent &e) {
    std::ostringstream s;
    s << e.pid << ' ' << e.syscall << ' ' << tea::strace::to_string(e.kind) << " asked=["
      << e.path_asked << "] resolved=[" << e.path_resolved << ']';
    if (e.path_lexical != e.path_resolved) s << " lexical=[" << e.path_lexical << ']';
    s << " result=" << e.result << " error=" << e.error << " success=" << e.success << " image=["
      << e.image << ']';
    if (!e.argv.empty() || e.argv_truncated) {
        s << " argv=";
        for (const auto &a : e.argv) s << '[' << a << ']';
        if (e.argv_truncated) s << "...";
    }
    return s.str();
}

std::vector<std::string> describe_all(const std::vector<AccessEvent> &events) {
    std::vector<std::string> out;
    out.reserve(events.size());
    for (const auto &e : events) out.push_back(describe(e));
    return out;
}

const AccessEvent *find_event(const std::vector<AccessEvent> &events, const std::string &resolved,
                              AccessKind kind) {
    for (const auto &e : events) {
        if (e.path_resolved == resolved && e.kind == kind) return &e;
    }
    return nullptr;
}

// Asserts that an event with this resolved path, kind and outcome exists.
::testing::AssertionResult has_event(const std::vector<AccessEvent> &events,
                                     const std::string &resolved, AccessKind kind,
                                     bool success = true, const std::string &error = "") {
    for (const auto &e : events) {
        if (e.path_resolved == resolved && e.kind == kind && e.success == success &&
            (error.empty() || e.error == error)) {
            return ::testing::AssertionSuccess();
        }
    }
    std::ostringstream s;
    s << "no " << tea::strace::to_string(kind) << " event for [" << resolved
      << "] success=" << success << " error=" << error << "; events under the tree:\n";
    for (const auto &e : events) {
        if (e.path_resolved.find(kind == AccessKind::Exec ? "/" : kTree) != std::string::npos) {
            s << "  " << describe(e) << '\n';
        }
    }
    return ::testing::AssertionFailure() << s.str();
}

// Every event the corpus yields must carry an absolute, normalised path.
void expect_well_formed(const Parsed &p) {
    for (const auto &e : p.events) {
        if (e.path_resolved.empty()) {
            ADD_FAILURE() << "unresolved event: " << describe(e);
            continue;
        }
        EXPECT_EQ(e.path_resolved.front(), '/') << describe(e);
        EXPECT_EQ(e.path_resolved.find("//"), std::string::npos) << describe(e);
        EXPECT_EQ(e.path_resolved.find("/./"), std::string::npos) << describe(e);
        EXPECT_EQ(e.path_resolved.find("/../"), std::string::npos) << describe(e);
        EXPECT_EQ(e.success, e.error.empty()) << describe(e);
        ASSERT_FALSE(e.path_lexical.empty()) << describe(e);
        EXPECT_EQ(e.path_lexical.front(), '/') << describe(e);
    }
}

// ---- the syscall list ------------------------------------------------------------------------

TEST(TracedSyscalls, CoversTheAuditAndNoMetadataProbes) {
    const std::string list(tea::strace::traced_syscalls());
    std::set<std::string> names;
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) {
        if (!item.empty() && item.front() == '?') item.erase(0, 1);
        EXPECT_TRUE(names.insert(item).second) << "listed twice: " << item;
    }
    for (const char *required :
         {"open",     "openat",     "openat2",  "creat",      "execve",   "execveat",
          "readlink", "readlinkat", "getdents", "getdents64", "mkdir",    "mkdirat",
          "unlink",   "unlinkat",   "rmdir",    "rename",     "renameat", "renameat2",
          "link",     "linkat",     "symlink",  "symlinkat",  "truncate", "chdir",
          "fchdir",   "clone",      "clone3",   "fork",       "vfork"}) {
        EXPECT_TRUE(names.count(required)) << "missing " << required;
    }
    for (const char *probe : {"stat", "lstat", "fstat", "newfstatat", "statx", "access",
                              "faccessat", "faccessat2", "read", "write", "close"}) {
        EXPECT_FALSE(names.count(probe)) << probe << " is traced but never reported";
    }
}

TEST(TracedSyscalls, MatchesTheListTheCorpusWasRecordedWith) {
    const std::string script = corpus("record.sh");
    EXPECT_NE(script.find("TRACED=\"" + std::string(tea::strace::traced_syscalls()) + "\""),
              std::string::npos)
        << "corpus/record.sh traces a different list; update it and re-record";
}

// ---- the recorded corpus ---------------------------------------------------------------------

TEST(Corpus, ShellPipeline) {
    const Parsed p = parse(corpus("pipeline.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    EXPECT_TRUE(has_event(p.events, kTree + "/data/a.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub/b.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/ws/count.txt", AccessKind::Create));
    EXPECT_TRUE(has_event(p.events, "/usr/bin/cat", AccessKind::Exec));
    EXPECT_TRUE(has_event(p.events, "/usr/bin/grep", AccessKind::Exec));
    EXPECT_TRUE(has_event(p.events, "/usr/bin/tee", AccessKind::Exec));
    // cat asked for a relative path after the shell's cd; the kernel's path names the file.
    const AccessEvent *a = find_event(p.events, kTree + "/data/a.txt", AccessKind::Read);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->path_asked, "a.txt");
    EXPECT_EQ(a->image, "/usr/bin/cat");
    const AccessEvent *cat = find_event(p.events, "/usr/bin/cat", AccessKind::Exec);
    ASSERT_NE(cat, nullptr);
    EXPECT_EQ(cat->argv, (std::vector<std::string>{"cat", "a.txt", "sub/b.txt"}));
}

TEST(Corpus, PythonRelativePathsAfterChdir) {
    const Parsed p = parse(corpus("python_chdir.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    EXPECT_TRUE(has_event(p.events, kTree + "/data", AccessKind::ChangeDir));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub", AccessKind::ChangeDir));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/a.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub/b.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub/deeper", AccessKind::List));
    EXPECT_TRUE(
        has_event(p.events, kTree + "/data/sub/missing.txt", AccessKind::Read, false, "ENOENT"));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub/deeper/c.txt", AccessKind::Read));
    // readlink(2) takes no dirfd: only the tracked working directory resolves "link".
    const AccessEvent *link = find_event(p.events, kTree + "/link", AccessKind::ReadLink);
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->path_asked, "link");
    EXPECT_TRUE(link->success);
    bool saw_parent_relative = false;
    for (const auto &e : p.events) {
        if (e.path_asked == "../a.txt") {
            saw_parent_relative = true;
            EXPECT_EQ(e.path_resolved, kTree + "/data/a.txt");
        }
    }
    EXPECT_TRUE(saw_parent_relative);
}

TEST(Corpus, NodeScript) {
    const Parsed p = parse(corpus("node.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    EXPECT_TRUE(has_event(p.events, "/usr/bin/node", AccessKind::Exec));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/a.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub", AccessKind::List));
    EXPECT_TRUE(has_event(p.events, kTree + "/data/sub/deeper/c.txt", AccessKind::Read));
    EXPECT_TRUE(has_event(p.events, kTree + "/ws/node-out.txt", AccessKind::Create));
}

TEST(Corpus, ThreadsOpeningConcurrently) {
    const Parsed p = parse(corpus("threads.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    std::set<int> readers;
    int missing = 0;
    for (const auto &e : p.events) {
        if (e.path_resolved == kTree + "/data/sub/b.txt" && e.syscall == "open") {
            readers.insert(e.pid);
        }
        if (e.path_asked == "missing.txt") {
            ++missing;
            EXPECT_EQ(e.path_resolved, kTree + "/data/missing.txt") << describe(e);
            EXPECT_EQ(e.error, "ENOENT");
            EXPECT_EQ(e.image, kTree + "/bin/threads");
        }
    }
    EXPECT_GE(readers.size(), 1u);
    EXPECT_EQ(missing, 10);  // five openat and five open(2) from one thread
    std::set<int> pids;
    for (const auto &e : p.events) {
        if (e.path_resolved.rfind(kTree + "/data/", 0) == 0) pids.insert(e.pid);
    }
    EXPECT_EQ(pids.size(), 4u) << "four threads read the data directory";
}

TEST(Corpus, EveryFileSyscall) {
    const Parsed p = parse(corpus("syscalls.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    const std::string w = kTree + "/ws/syscalls";
    struct Want {
        std::string path;
        AccessKind kind;
        bool success;
    };
    const std::vector<Want> wants = {
        {w + "/made", AccessKind::Create, true},
        {w + "/made", AccessKind::ChangeDir, true},
        {w + "/made/created.txt", AccessKind::Create, true},
        {w, AccessKind::ChangeDir, true},
        {w + "/made", AccessKind::Read, true},
        {w + "/made/at.txt", AccessKind::Create, true},
        {w + "/made/at.txt", AccessKind::Remove, true},
        {w + "/made/renamed.txt", AccessKind::Create, true},
        {w + "/made/renamed.txt", AccessKind::Remove, true},
        {w + "/made/renamed2.txt", AccessKind::Create, true},
        {w + "/made/renamed2.txt", AccessKind::Other, true},
        {w + "/hard.txt", AccessKind::Create, true},
        {w + "/hard2.txt", AccessKind::Create, true},
        {w + "/sym", AccessKind::Create, true},
        {w + "/made/abs-sym", AccessKind::Create, true},
        {w + "/sym", AccessKind::ReadLink, true},
        {w + "/made/abs-sym", AccessKind::ReadLink, true},
        {w + "/hard.txt", AccessKind::Write, true},
        {w + "/hard2.txt", AccessKind::Remove, true},
        {w + "/made/abs-sym", AccessKind::Remove, true},
        {w + "/gone", AccessKind::Create, true},
        {w + "/gone", AccessKind::Remove, true},
        {w + "/creat.txt", AccessKind::Create, true},
        {kTree + "/data", AccessKind::ChangeDir, true},
        {kTree + "/data/refused.txt", AccessKind::Create, false},
        {w + "/made/renamed2.txt", AccessKind::Read, true},
        {w + "/creat.txt", AccessKind::Read, true},
        {"/bin/cat", AccessKind::Exec, true},
    };
    for (const auto &want : wants) {
        EXPECT_TRUE(has_event(p.events, want.path, want.kind, want.success));
    }
    // The write the read-only bind refused.
    const AccessEvent *refused =
        find_event(p.events, kTree + "/data/refused.txt", AccessKind::Create);
    ASSERT_NE(refused, nullptr);
    EXPECT_EQ(refused->error, "EROFS");
    // The forked child changed directory from the one fchdir chose, inherited through fork;
    // its failed open has no fd path, so only that inheritance resolves it.
    EXPECT_TRUE(has_event(p.events, w + "/nope.txt", AccessKind::Read, false, "ENOENT"));
    // The vfork child's exec, and the file cat read, attributed to cat.
    const AccessEvent *cat_read = nullptr;
    for (const auto &e : p.events) {
        if (e.image == "/bin/cat" && e.path_resolved == w + "/made/renamed2.txt") cat_read = &e;
    }
    ASSERT_NE(cat_read, nullptr);
    EXPECT_EQ(cat_read->path_asked, "renamed2.txt");
    // A read through a symbolic link: the kernel's path of the fd, not the link's.
    bool saw_link_read = false;
    for (const auto &e : p.events) {
        if (e.path_asked == "../sym") {
            saw_link_read = true;
            EXPECT_EQ(e.path_resolved, w + "/made/created.txt");
            EXPECT_EQ(e.path_lexical, w + "/sym");
            EXPECT_EQ(e.kind, AccessKind::Read);
        }
    }
    EXPECT_TRUE(saw_link_read);
}

TEST(Corpus, RecursiveListing) {
    const Parsed p = parse(corpus("ls_r.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    for (const char *dir : {"/tree", "/tree/x", "/tree/x/y", "/tree/z"}) {
        EXPECT_TRUE(has_event(p.events, kTree + dir, AccessKind::List)) << dir;
    }
}

TEST(Corpus, Readlink) {
    const Parsed p = parse(corpus("readlink.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    int reads = 0;
    for (const auto &e : p.events) {
        if (e.kind == AccessKind::ReadLink && e.path_resolved == kTree + "/link" && e.success) {
            ++reads;
            EXPECT_EQ(e.image, "/usr/bin/readlink");
        }
    }
    EXPECT_GE(reads, 2) << "readlink and readlink -f";
}

TEST(Corpus, NamesWithSpacesQuotesNewlinesAndInvalidUtf8) {
    const Parsed p = parse(corpus("nasty_names.trace"), kTree);
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    const std::string dir = kTree + "/nasty/";
    for (const std::string &name :
         {std::string("with space"), std::string("double\"quote"), std::string("new\nline"),
          std::string("bad\xff\xfeutf8"), std::string("back\\slash"), std::string("angle<br>"),
          std::string("tab\there"), std::string("caf\xc3\xa9")}) {
        const AccessEvent *e = find_event(p.events, dir + name, AccessKind::Read);
        ASSERT_NE(e, nullptr) << "no read of " << name;
        EXPECT_EQ(e->path_asked, name);
        EXPECT_TRUE(e->success);
    }
    EXPECT_TRUE(has_event(p.events, dir + "dir with space", AccessKind::ChangeDir));
}

TEST(Corpus, TargetKilledInsideOpen) {
    const Parsed p = parse(corpus("killed.trace"), kTree);
    // strace saw the kill and printed the call's end: the trace is complete.
    EXPECT_FALSE(p.lossy) << p.reason;
    expect_well_formed(p);
    EXPECT_TRUE(has_event(p.events, kTree + "/data/a.txt", AccessKind::Read));
    const AccessEvent *fifo = find_event(p.events, kTree + "/fifo", AccessKind::Read);
    ASSERT_NE(fifo, nullptr);
    EXPECT_FALSE(fifo->success);
    EXPECT_EQ(fifo->error, "?");
}

TEST(Corpus, TraceCutMidLineIsLossy) {
    const std::string text = corpus("truncated.trace");
    ASSERT_FALSE(text.empty());
    ASSERT_NE(text.back(), '\n');
    const Parsed p = parse(text, kTree);
    EXPECT_TRUE(p.lossy);
    EXPECT_NE(p.reason.find("middle of a line"), std::string::npos) << p.reason;
}

TEST(Corpus, ByteAtATimeMatchesWhole) {
    for (const char *name : {"syscalls.trace", "threads.trace", "nasty_names.trace"}) {
        const std::string text = corpus(name);
        std::vector<std::string_view> bytes;
        bytes.reserve(text.size());
        for (std::size_t i = 0; i < text.size(); ++i) bytes.emplace_back(text.data() + i, 1);
        EXPECT_EQ(describe_all(parse_chunks(bytes, kTree).events),
                  describe_all(parse(text, kTree).events))
            << name;
    }
}

// ---- hand-written traces: one rule each --------------------------------------------------

// Resolution through chdir, fchdir and dirfds; the root process starts in /start.
constexpr std::string_view kResolution =
    "100   execve(\"/usr/bin/prog\", [\"prog\", \"-x\"], 0x7ffd /* 3 vars */) = 0\n"
    "100   open(\"rel.txt\", O_RDONLY)         = -1 ENOENT (No such file or directory)\n"
    "100   chdir(\"/w\")                       = 0\n"
    "100   chdir(\"sub/../dir/\")              = 0\n"
    "100   open(\"x\", O_RDONLY)               = -1 ENOENT (No such file or directory)\n"
    "100   openat(7</etc>, \"passwd\", O_RDONLY|O_CLOEXEC) = 3</etc/passwd>\n"
    "100   openat(7</etc>, \"./nope\", O_RDONLY) = -1 ENOENT (No such file or directory)\n"
    "100   fchdir(7</etc>)                    = 0\n"
    "100   readlink(\"mtab\", \"../proc/self/mounts\", 4096) = 19\n"
    "100   chdir(\"..\")                        = 0\n"
    "100   unlink(\"tmp/x\")                    = -1 EROFS (Read-only file system)\n"
    "100   chdir(\"/missing\")                  = -1 ENOENT (No such file or directory)\n"
    "100   mkdir(\"d\", 0755)                   = -1 EROFS (Read-only file system)\n"
    "100   openat(AT_FDCWD</elsewhere>, \"y\", O_RDONLY) = -1 ENOENT (No such file or "
    "directory)\n"
    "100   open(\"z\", O_WRONLY|O_TRUNC)       = -1 ENOENT (No such file or directory)\n"
    "100   openat(AT_FDCWD</>, \"/etc/hosts\", O_RDONLY|O_PATH) = 3</etc/hosts>\n"
    "100   getdents64(3</etc>, 0x5617fd85ba90 /* 10 entries */, 32768) = 240\n"
    "100   openat(AT_FDCWD</etc>, \"resolv.conf\", O_RDONLY) = "
    "5</run/systemd/resolve/stub-resolv.conf>\n"
    "100   openat(AT_FDCWD</>, \"/proc/self/fd/0\", O_RDONLY) = 4<pipe:[1234]>\n";

TEST(Resolution, ChdirFchdirAndDirfd) {
    const Parsed p = parse(kResolution, "/start");
    EXPECT_FALSE(p.lossy) << p.reason;
    const std::vector<std::string> got = describe_all(p.events);
    const std::vector<std::string> want = {
        "100 execve exec asked=[/usr/bin/prog] resolved=[/usr/bin/prog] result=0 error= "
        "success=1 image=[] argv=[prog][-x]",
        "100 open read asked=[rel.txt] resolved=[/start/rel.txt] result=-1 error=ENOENT "
        "success=0 image=[/usr/bin/prog]",
        "100 chdir chdir asked=[/w] resolved=[/w] result=0 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 chdir chdir asked=[sub/../dir/] resolved=[/w/dir] result=0 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 open read asked=[x] resolved=[/w/dir/x] result=-1 error=ENOENT success=0 "
        "image=[/usr/bin/prog]",
        "100 openat read asked=[passwd] resolved=[/etc/passwd] result=3 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 openat read asked=[./nope] resolved=[/etc/nope] result=-1 error=ENOENT success=0 "
        "image=[/usr/bin/prog]",
        "100 fchdir chdir asked=[/etc] resolved=[/etc] result=0 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 readlink readlink asked=[mtab] resolved=[/etc/mtab] result=19 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 chdir chdir asked=[..] resolved=[/] result=0 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 unlink remove asked=[tmp/x] resolved=[/tmp/x] result=-1 error=EROFS success=0 "
        "image=[/usr/bin/prog]",
        "100 chdir chdir asked=[/missing] resolved=[/missing] result=-1 error=ENOENT success=0 "
        "image=[/usr/bin/prog]",
        "100 mkdir create asked=[d] resolved=[/d] result=-1 error=EROFS success=0 "
        "image=[/usr/bin/prog]",
        "100 openat read asked=[y] resolved=[/elsewhere/y] result=-1 error=ENOENT success=0 "
        "image=[/usr/bin/prog]",
        // The AT_FDCWD annotation above told the kernel's directory; open(2) follows it.
        "100 open write asked=[z] resolved=[/elsewhere/z] result=-1 error=ENOENT success=0 "
        "image=[/usr/bin/prog]",
        "100 openat other asked=[/etc/hosts] resolved=[/etc/hosts] result=3 error= success=1 "
        "image=[/usr/bin/prog]",
        "100 getdents64 list asked=[/etc] resolved=[/etc] result=240 error= success=1 "
        "image=[/usr/bin/prog]",
        // The kernel followed the link; the path the process asked for stays beside it.
        "100 openat read asked=[resolv.conf] resolved=[/run/systemd/resolve/stub-resolv.conf] "
        "lexical=[/etc/resolv.conf] result=5 error= success=1 image=[/usr/bin/prog]",
        // An fd that is no file: the kernel's name says so.
        "100 openat read asked=[/proc/self/fd/0] resolved=[pipe:[1234]] "
        "lexical=[/proc/self/fd/0] result=4 error= success=1 image=[/usr/bin/prog]",
    };
    EXPECT_EQ(got, want);
}

// Fork and clone: copies for processes, one shared directory for CLONE_FS (threads), children
// that run before their parent's clone returns, and a reused pid.
constexpr std::string_view kForks =
    "200   chdir(\"/a\")                        = 0\n"
    "200   clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, "
    "child_tidptr=0x7f) = 5 /* 201 in strace's PID NS */\n"
    "201   open(\"f1\", O_RDONLY)               = -1 ENOENT (No such file or directory)\n"
    "201   chdir(\"b\")                         = 0\n"
    "200   open(\"f2\", O_RDONLY)               = -1 ENOENT (No such file or directory)\n"
    "201   open(\"f3\", O_RDONLY)               = -1 ENOENT (No such file or directory)\n"
    "200   vfork( <unfinished ...>\n"
    "202   open(\"early\", O_RDONLY)            = -1 ENOENT (No such file or directory)\n"
    "202   chdir(\"c\")                         = 0\n"
    "202   open(\"later\", O_RDONLY)            = -1 ENOENT (No such file or directory)\n"
    "200   <... vfork resumed>)               = 202\n"
    "200   clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, "
    "child_tid=0x7f, parent_tid=0x7f, exit_signal=0, stack=0x7f, stack_size=0x7fff80, "
    "tls=0x7f} <unfinished ...>\n"
    "203   chdir(\"/t\")                         = 0\n"
    "200   <... clone3 resumed> => {parent_tid=[3 /* 203 in strace's PID NS */]}, 88) = 3 /* "
    "203 in strace's PID NS */\n"
    "200   open(\"g\", O_RDONLY)                = -1 ENOENT (No such file or directory)\n"
    "200   clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, "
    "child_tid=0x7f, parent_tid=0x7f, exit_signal=0, stack=0x7f, stack_size=0x7fff80, "
    "tls=0x7f} <unfinished ...>\n"
    "204   chdir(\"rel\")                       = 0\n"
    "204   open(\"h\", O_RDONLY)                = -1 ENOENT (No such file or directory)\n"
    "200   <... clone3 resumed> => {parent_tid=[204]}, 88) = 204\n"
    "200   open(\"i\", O_RDONLY)                = -1 ENOENT (No such file or directory)\n"
    "203   open(\"j\", O_RDONLY)                = -1 ENOENT (No such file or directory)\n"
    "201   chdir(\"/old\")                      = 0\n"
    "200   fork()                            = 201\n"
    "201   open(\"k\", O_RDONLY)                = -1 ENOENT (No such file or directory)\n";

TEST(Processes, ForkCopiesThreadsShareAndEarlyChildrenWait) {
    const Parsed p = parse(kForks, "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    std::vector<std::string> got;
    for (const auto &e : p.events) {
        got.push_back(std::to_string(e.pid) + " " + e.syscall + " " + e.path_resolved);
    }
    // Events a child made before its parent's clone returned arrive when it does.
    const std::vector<std::string> want = {
        "200 chdir /a",      "201 open /a/f1",    "201 chdir /a/b",   "200 open /a/f2",
        "201 open /a/b/f3",  "202 open /a/early", "202 chdir /a/c",   "202 open /a/c/later",
        "203 chdir /t",      "200 open /t/g",     "204 chdir /t/rel", "204 open /t/rel/h",
        "200 open /t/rel/i", "203 open /t/rel/j", "201 chdir /old",   "201 open /t/rel/k",
    };
    EXPECT_EQ(got, want);
}

TEST(Processes, UnknownChildWithoutParentIsLossyAtTheEnd) {
    const Parsed p = parse(
        "300   chdir(\"/a\")                        = 0\n"
        "301   open(\"orphan\", O_RDONLY)           = -1 ENOENT (No such file or directory)\n",
        "/");
    EXPECT_TRUE(p.lossy);
    EXPECT_NE(p.reason.find("never known"), std::string::npos) << p.reason;
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_EQ(p.events[1].path_asked, "orphan");
    EXPECT_EQ(p.events[1].path_resolved, "");
}

TEST(Processes, ChildResyncedFromAtFdcwdNeedsNoParent) {
    const Parsed p = parse(
        "300   chdir(\"/a\")                        = 0\n"
        "301   open(\"one\", O_RDONLY)              = -1 ENOENT (No such file or directory)\n"
        "301   openat(AT_FDCWD</q>, \"two\", O_RDONLY) = -1 ENOENT (No such file or directory)\n"
        "301   open(\"three\", O_RDONLY)            = -1 ENOENT (No such file or directory)\n",
        "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    std::vector<std::string> got;
    for (const auto &e : p.events) got.push_back(e.path_resolved);
    // The held open is resolved by the annotation that arrives with "two", before it.
    EXPECT_EQ(got, (std::vector<std::string>{"/a", "/q/one", "/q/two", "/q/three"}));
}

TEST(Processes, ThreadExecSupersedesTheLeader) {
    const Parsed p = parse(
        "400   execve(\"/bin/prog\", [\"prog\"], 0x7f /* 1 var */) = 0\n"
        "400   clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, "
        "exit_signal=0, stack=0x7f, stack_size=0x7fff80}, 88) = 401\n"
        "401   execve(\"/bin/true\", [\"/bin/true\"], 0x7f /* 4 vars */ <pid changed to 400 ...>\n"
        "400   +++ superseded by execve in pid 401 +++\n"
        "400   <... execve resumed>)             = -1 (errno 18446744073709551359)\n"
        "400   openat(AT_FDCWD</>, \"/etc/x\", O_RDONLY) = 3</etc/x>\n"
        "400   +++ exited with 0 +++\n",
        "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    ASSERT_EQ(p.events.size(), 3u);
    EXPECT_EQ(p.events[1].path_resolved, "/bin/true");
    EXPECT_TRUE(p.events[1].success);
    EXPECT_EQ(p.events[1].pid, 400);
    EXPECT_EQ(p.events[2].image, "/bin/true");
}

// ---- interleaving ------------------------------------------------------------------------

constexpr std::string_view kInterleaved =
    "500   readlink(\"/proc/self/exe\",  <unfinished ...>\n"
    "501   openat(AT_FDCWD</>, \"/a b\", O_RDONLY <unfinished ...>\n"
    "502   execve(\"/usr/bin/wc\", [\"wc\", \"-c\"], 0x55d72dc11f08 /* 41 vars */ <unfinished "
    "...>\n"
    "500   --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=9, si_uid=0, si_status=0, "
    "si_utime=0, si_stime=0} ---\n"
    "500   <... readlink resumed>\"/usr/bin/x\", 4096) = 10\n"
    "502   <... execve resumed>)             = 0\n"
    "501   <... openat resumed>)             = 3</a b>\n"
    "503   getdents64(5</d>,  <unfinished ...>\n"
    "503   <... getdents64 resumed>0x5617fd85ba90 /* 0 entries */, 32768) = 0\n"
    "504   openat(AT_FDCWD</tmp>, \"stx/fifo\", O_RDONLY|O_CLOEXEC <unfinished ...>\n"
    "504   <... openat resumed> <unfinished ...>) = ?\n"
    "504   +++ killed by SIGKILL +++\n";

TEST(Interleaving, UnfinishedCallsPairWithTheirResumption) {
    const Parsed p = parse(kInterleaved, "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    const std::vector<std::string> want = {
        "500 readlink readlink asked=[/proc/self/exe] resolved=[/proc/self/exe] result=10 "
        "error= success=1 image=[]",
        "502 execve exec asked=[/usr/bin/wc] resolved=[/usr/bin/wc] result=0 error= success=1 "
        "image=[] argv=[wc][-c]",
        "501 openat read asked=[/a b] resolved=[/a b] result=3 error= success=1 image=[]",
        "503 getdents64 list asked=[/d] resolved=[/d] result=0 error= success=1 image=[]",
        "504 openat read asked=[stx/fifo] resolved=[/tmp/stx/fifo] result=-1 error=? "
        "success=0 image=[]",
    };
    EXPECT_EQ(describe_all(p.events), want);
}

TEST(Interleaving, ProcessEndingInsideACallReportsAnUnknownOutcome) {
    const Parsed p = parse(
        "600   openat(AT_FDCWD</>, \"/blocked\", O_RDONLY <unfinished ...>\n"
        "601   chdir(\"/x\")                        = 0\n"
        "600   +++ killed by SIGKILL +++\n",
        "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    const AccessEvent *e = find_event(p.events, "/blocked", AccessKind::Read);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->error, "?");
    EXPECT_FALSE(e->success);
}

// With -qq and signal=none strace prints no end for a process killed inside a call; it closes
// the begun line with " <detached ...>" as it drops the process (seen when the runtime ends a
// service and its pid namespace goes). A call strace could not even name ran nothing; any other
// is an attempt with an unknown outcome. Control: the marker after anything else is still
// unparseable.
TEST(Interleaving, AProcessDroppedInsideACallReportsAnUnknownOutcome) {
    const Parsed killed_at_entry = parse(
        "9714  ?\?\?( <detached ...>\n"
        "9715  openat(AT_FDCWD</>, \"/blocked\", O_RDONLY <detached ...>\n",
        "/");
    EXPECT_FALSE(killed_at_entry.lossy) << killed_at_entry.reason;
    ASSERT_EQ(killed_at_entry.events.size(), 1U);
    EXPECT_EQ(killed_at_entry.events[0].path_resolved, "/blocked");
    EXPECT_EQ(killed_at_entry.events[0].error, "?");
    EXPECT_FALSE(killed_at_entry.events[0].success);
    for (const char *garbage : {"9714  ?\?( <detached ...>\n", "9714   <detached ...>\n",
                                "9714  ?\?\?(x <detached ...>\n"}) {
        const Parsed p = parse(garbage, "/");
        EXPECT_TRUE(p.lossy) << "not lossy on: " << garbage;
    }
}

// The same death at a call's entry when strace does not drop the process first: it prints the
// unnamed call with no outcome, "???() = ?" (seen when a target that spins in traced calls is
// killed at the end of its grace). Control: anything more on the line stays unparseable.
TEST(Interleaving, AnUnnamedCallThatNeverReturnedRanNothing) {
    const Parsed killed = parse(
        "21993 ?\?\?()                             = ?\n"
        "21994 openat(AT_FDCWD</>, \"/etc/hostname\", O_RDONLY) = 3</etc/hostname>\n",
        "/");
    EXPECT_FALSE(killed.lossy) << killed.reason;
    ASSERT_EQ(killed.events.size(), 1U);
    EXPECT_EQ(killed.events[0].path_resolved, "/etc/hostname");
    for (const char *garbage :
         {"21993 ?\?\?() = 3\n", "21993 ?\?\?(3) = ?\n", "21993 ?\?\?()  = ? x\n",
          "21993 ?\?\?() = ?</etc/shadow>\n", "21993 ?\?\?()\n"}) {
        const Parsed p = parse(garbage, "/");
        EXPECT_TRUE(p.lossy) << "not lossy on: " << garbage;
    }
}

// ---- escapes -------------------------------------------------------------------------------

TEST(Escapes, DecodeToTheExactBytes) {
    const Parsed p = parse(
        "700   openat(AT_FDCWD</d\\\"q>, \"\\x41\\101\\n\\t\\\"\\\\\\377 \\303\\251\\0017\", "
        "O_RDONLY) = 3</d\\\"q/AA\\n\\t\\\"\\\\\\377 \\303\\251\\0017>\n"
        "700   openat(AT_FDCWD</>, \"/tmp/lt<gt>\", O_RDONLY) = 3</tmp/lt\\74gt\\76>\n"
        "700   openat(AT_FDCWD</>, \"/tmp/a) = 3</x>\", O_RDONLY) = -1 ENOENT (No such file or "
        "directory)\n",
        "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    ASSERT_EQ(p.events.size(), 3u);
    const std::string name = std::string("AA\n\t\"\\\xff \xc3\xa9") + '\x01' + "7";
    EXPECT_EQ(p.events[0].path_asked, name);
    EXPECT_EQ(p.events[0].path_resolved, "/d\"q/" + name);
    EXPECT_EQ(p.events[1].path_resolved, "/tmp/lt<gt>");
    EXPECT_EQ(p.events[2].path_asked, "/tmp/a) = 3</x>");
    EXPECT_EQ(p.events[2].error, "ENOENT");
}

TEST(Escapes, ArgvStringsAndTruncation) {
    const Parsed p = parse(
        "800   execve(\"/bin/sh\", [\"sh\", \"-c\", \"cd /tmp; cat /etc/hostname | wc \"...], "
        "0x7ffd /* 41 vars */) = 0\n"
        "800   execve(\"/bin/e\", [\"e\", \"1\", ...], 0x7ffd /* 41 vars */) = 0\n",
        "/");
    EXPECT_FALSE(p.lossy) << p.reason;
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_EQ(p.events[0].argv,
              (std::vector<std::string>{"sh", "-c", "cd /tmp; cat /etc/hostname | wc "}));
    EXPECT_TRUE(p.events[0].argv_truncated);
    EXPECT_EQ(p.events[1].argv, (std::vector<std::string>{"e", "1"}));
    EXPECT_TRUE(p.events[1].argv_truncated);
}

// ---- chunking ------------------------------------------------------------------------------

TEST(Chunking, EverySplitPointYieldsTheSameEvents) {
    std::string text;
    text += kResolution;
    text += kInterleaved;
    text +=
        "900   openat(AT_FDCWD</n\\303\\251>, \"\\x41\\377\\\"x\", O_RDONLY) = "
        "3</n\\303\\251/A\\377\\\"x>\n";
    const Parsed whole = parse(text, "/start");
    ASSERT_FALSE(whole.lossy) << whole.reason;
    const std::vector<std::string> want = describe_all(whole.events);
    const std::string_view view(text);
    for (std::size_t k = 0; k <= text.size(); ++k) {
        const Parsed two = parse_chunks({view.substr(0, k), view.substr(k)}, "/start");
        ASSERT_EQ(describe_all(two.events), want) << "split at " << k;
        ASSERT_FALSE(two.lossy) << "split at " << k << ": " << two.reason;
    }
    // Three pieces, with the middle one a single byte: splits inside an escape on both sides.
    for (std::size_t k = 0; k + 1 <= text.size(); k += 7) {
        const Parsed three =
            parse_chunks({view.substr(0, k), view.substr(k, 1), view.substr(k + 1)}, "/start");
        ASSERT_EQ(describe_all(three.events), want) << "split at " << k;
    }
}

// ---- what makes the parser lossy -----------------------------------------------------------

TEST(Lossy, CleanTraceIsComplete) {
    const Parsed p = parse(kResolution, "/start");
    EXPECT_FALSE(p.lossy);
    EXPECT_EQ(p.reason, "");
}

TEST(Lossy, AProcessOutsideTheTracerMakesTheTraceIncomplete) {
    // strace's own lines for the two ways around it: a child the tracer does not follow, and a
    // seccomp listener whose answers outrank the tracer's stops. Either, once it succeeded, leaves
    // calls the trace cannot account for.
    const Parsed untraced =
        parse("25665 clone(child_stack=NULL, flags=CLONE_UNTRACED|SIGCHLD) = 25666\n", "/");
    EXPECT_TRUE(untraced.lossy);
    EXPECT_NE(untraced.reason.find("CLONE_UNTRACED"), std::string::npos) << untraced.reason;
    const Parsed listener = parse(
        "25674 seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, "
        "{len=4, filter=0x7f596a3a3840}) = 3\n",
        "/");
    EXPECT_TRUE(listener.lossy);
    EXPECT_NE(listener.reason.find("user-notify listener"), std::string::npos) << listener.reason;
    // The controls: the same calls refused, and their ordinary forms, leave the trace complete.
    for (const char *line :
         {"25665 clone(child_stack=NULL, flags=CLONE_UNTRACED|SIGCHLD) = -1 EPERM (Operation not "
          "permitted)\n",
          "25665 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD, "
          "child_tidptr=0x7f0) = 25666\n",
          "25674 seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, {len=4, "
          "filter=0x7f59}) = -1 EPERM (Operation not permitted)\n",
          "25674 seccomp(SECCOMP_SET_MODE_FILTER, 0, {len=4, filter=0x7f59}) = 0\n"}) {
        const Parsed p = parse(line, "/");
        EXPECT_FALSE(p.lossy) << line << p.reason;
    }
}

TEST(Lossy, TruncatedLastLine) {
    const Parsed p = parse("700   openat(AT_FDCWD</>, \"/x\", O_RDON", "/");
    EXPECT_TRUE(p.lossy);
    EXPECT_NE(p.reason.find("middle of a line"), std::string::npos) << p.reason;
}

TEST(Lossy, Garbage) {
    for (const char *garbage :
         {"hello world\n", "\n", "123\n", "123 \n", "12 openat(\n", "12 openat(\"/x\") =\n",
          "12 openat(\"/x\", O_RDONLY) = banana\n", "12 <... openat resumed>) = 0\n",
          "12 openat(AT_FDCWD</>, \"\\q\", O_RDONLY) = -1 ENOENT (x)\n",
          "12 openat(AT_FDCWD</>, \"\\777\", O_RDONLY) = -1 ENOENT (x)\n", "12 +++ what +++\n",
          "12 --- SIGCHLD\n", "99999999 openat(AT_FDCWD</>, \"/x\", 0) = 3\n",
          "12 OPENAT(\"/x\") = 3\n", "12 openat(7<, \"x\", O_RDONLY) = 3\n"}) {
        const Parsed p = parse(garbage, "/");
        EXPECT_TRUE(p.lossy) << "not lossy on: " << garbage;
    }
}

TEST(Lossy, UnfinishedAtTheEnd) {
    const Parsed p = parse("700   openat(AT_FDCWD</>, \"/x\", O_RDONLY <unfinished ...>\n", "/");
    EXPECT_TRUE(p.lossy);
    EXPECT_NE(p.reason.find("never finished"), std::string::npos) << p.reason;
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].path_resolved, "/x");
    EXPECT_EQ(p.events[0].error, "?");
}

TEST(Lossy, SuccessOnAPathStraceDidNotPrint) {
    EXPECT_TRUE(parse("1 openat(AT_FDCWD</>, 0x7ffd1234, O_RDONLY) = 0\n", "/").lossy);
    EXPECT_FALSE(
        parse("1 openat(AT_FDCWD</>, NULL, O_RDONLY) = -1 EFAULT (Bad address)\n", "/").lossy);
    EXPECT_TRUE(parse("1 getdents64(3, 0x1 /* 1 entries */, 32768) = 24\n", "/").lossy);
}

TEST(Lossy, LongLineIsSkippedWithMemoryBounded) {
    ParserLimits limits;
    limits.max_line_bytes = 64;
    const std::string longline =
        "1 openat(AT_FDCWD</>, \"/" + std::string(200, 'a') + "\", O_RDONLY) = 3\n";
    const std::string text = longline + "1 openat(AT_FDCWD</>, \"/ok\", O_RDONLY) = 3</ok>\n";
    for (std::size_t split : {std::size_t{0}, std::size_t{10}, std::size_t{100}, text.size()}) {
        const std::string_view v(text);
        const Parsed p = parse_chunks({v.substr(0, split), v.substr(split)}, "/", limits);
        EXPECT_TRUE(p.lossy);
        EXPECT_NE(p.reason.find("longer than"), std::string::npos) << p.reason;
        ASSERT_EQ(p.events.size(), 1u) << "split " << split;
        EXPECT_EQ(p.events[0].path_resolved, "/ok");
    }
}

TEST(Lossy, TooManyProcessesAndTooMuchHeldBack) {
    ParserLimits limits;
    limits.max_processes = 2;
    EXPECT_TRUE(
        parse("1 chdir(\"/a\") = 0\n2 chdir(\"/b\") = 0\n3 chdir(\"/c\") = 0\n", "/", limits)
            .lossy);
    limits = {};
    limits.max_pending_bytes = 10;
    EXPECT_TRUE(
        parse("1 openat(AT_FDCWD</>, \"/long-path\", O_RDONLY <unfinished ...>\n", "/", limits)
            .lossy);
    limits = {};
    limits.max_deferred_events = 1;
    EXPECT_TRUE(parse("1 chdir(\"/a\") = 0\n2 open(\"x\", O_RDONLY) = -1 ENOENT (x)\n"
                      "2 open(\"y\", O_RDONLY) = -1 ENOENT (x)\n",
                      "/", limits)
                    .lossy);
}

// ---- robustness --------------------------------------------------------------------------

// Mutated corpus lines and random bytes in random pieces: no crash, no hang, no sanitizer
// report. The fuzzer does this at scale; this keeps a floor in the normal test run.
TEST(Robustness, MutatedAndRandomInput) {
    const std::string base =
        corpus("syscalls.trace") + std::string(kInterleaved) + std::string(kForks);
    std::mt19937 rng(20240601);
    const std::string specials = "\"\\<>()[]{},=?/* \n0123456789x";
    for (int round = 0; round < 300; ++round) {
        std::string text = base.substr(rng() % (base.size() / 2), 4096);
        const int edits = 1 + static_cast<int>(rng() % 16);
        for (int i = 0; i < edits && !text.empty(); ++i) {
            const std::size_t at = rng() % text.size();
            switch (rng() % 4) {
                case 0:
                    text[at] = specials[rng() % specials.size()];
                    break;
                case 1:
                    text.insert(at, 1, static_cast<char>(rng() % 256));
                    break;
                case 2:
                    text.erase(at, 1 + rng() % 8);
                    break;
                default:
                    text[at] = static_cast<char>(rng() % 256);
                    break;
            }
        }
        std::vector<std::string_view> chunks;
        std::string_view rest(text);
        while (!rest.empty()) {
            const std::size_t n = std::min<std::size_t>(rest.size(), 1 + rng() % 300);
            chunks.push_back(rest.substr(0, n));
            rest.remove_prefix(n);
        }
        const Parsed p = parse_chunks(chunks, "/");
        // A path, or the kernel's name of an object that is no file ("pipe:[12]").
        for (const auto &e : p.events) {
            const auto colon = e.path_resolved.find(':');
            EXPECT_TRUE(e.path_resolved.empty() || e.path_resolved.front() == '/' ||
                        (colon != std::string::npos && colon > 0 &&
                         e.path_resolved.find_first_not_of(
                             "abcdefghijklmnopqrstuvwxyz0123456789_") == colon))
                << e.path_resolved;
        }
    }
    for (int round = 0; round < 100; ++round) {
        std::string text(1 + rng() % 2000, '\0');
        for (char &c : text) c = static_cast<char>(rng() % 256);
        const Parsed p = parse(text, "/");
        EXPECT_TRUE(p.lossy);
    }
}

// ---- a live trace under the installed strace and bwrap -------------------------------------

// Runs argv with stdout and stderr to /dev/null; returns the wait status or -1.
int run(const std::vector<std::string> &args) {
    std::vector<char *> argv;
    for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return status;
}

TEST(Live, InstalledStraceAndBwrapReportAFileTheTestCreated) {
    const std::string strace = "/usr/bin/strace";
    const std::string bwrap = "/usr/bin/bwrap";
    if (access(strace.c_str(), X_OK) != 0 || access(bwrap.c_str(), X_OK) != 0) {
        GTEST_SKIP() << "strace or bwrap is not installed";
    }
    const std::vector<std::string> sandbox = {
        bwrap,           "--ro-bind", "/",    "/",      "--unshare-all", "--die-with-parent",
        "--new-session", "--dev",     "/dev", "--proc", "/proc",         "--"};
    std::vector<std::string> probe = sandbox;
    probe.push_back("/bin/true");
    if (run(probe) != 0) GTEST_SKIP() << "bwrap cannot create its namespaces on this host";

    const tea::test::TempDir tmp{"tea-strace-live"};
    const std::string dir = tmp.path().string();
    const std::string name = "probe file \"1\".txt";
    { std::ofstream(dir + "/" + name) << "probe\n"; }
    const std::string trace = dir + "/trace";
    std::vector<std::string> cmd = {strace,
                                    "-f",
                                    "--seccomp-bpf",
                                    "--decode-pids=pidns",
                                    "--decode-fds=path",
                                    "-qq",
                                    "-e",
                                    "trace=" + std::string(tea::strace::traced_syscalls()),
                                    "-o",
                                    trace};
    cmd.insert(cmd.end(), sandbox.begin(), sandbox.end());
    for (const char *arg : {"/bin/sh", "-c", "cd \"$1\" && exec cat \"$2\"", "sh"}) {
        cmd.emplace_back(arg);
    }
    cmd.push_back(dir);
    cmd.push_back(name);
    const int status = run(cmd);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

    std::error_code ec;
    const Parsed p = parse(read_file(trace), std::filesystem::current_path(ec).string());
    EXPECT_FALSE(p.lossy) << p.reason;
    const AccessEvent *e = find_event(p.events, dir + "/" + name, AccessKind::Read);
    ASSERT_NE(e, nullptr) << "the trace does not show the probe file being read";
    EXPECT_EQ(e->path_asked, name);
    EXPECT_TRUE(e->success);
    EXPECT_EQ(e->image, "/usr/bin/cat");
    EXPECT_TRUE(has_event(p.events, dir, AccessKind::ChangeDir));
}

// ---- What an exec ran, and a descriptor another task could swap ------------------------------

// The exec event of a path, the first one in the trace.
const AccessEvent *exec_of(const Parsed &p, std::string_view asked) {
    for (const auto &e : p.events) {
        if (e.kind == AccessKind::Exec && e.path_asked == asked) return &e;
    }
    return nullptr;
}

// strace shows only the path an execve asked for: a link the call made is followed through the
// trace, and what remains is named for the runtime to follow on the host.
TEST(Names, AnExecFollowsTheLinksTheCallMade) {
    const Parsed p = parse(
        "10 symlink(\"/srv/bin/tool\", \"x\") = 0\n"
        "10 execve(\"./x\", [\"./x\"], 0x1 /* 2 vars */) = 0\n"
        "10 symlinkat(\"/srv\", AT_FDCWD</w>, \"d\") = 0\n"
        "10 execve(\"/w/d/bin/tool\", [\"tool\"], 0x1 /* 2 vars */) = 0\n"
        "10 unlink(\"x\") = 0\n"
        "10 execve(\"./x\", [\"./x\"], 0x1 /* 2 vars */) = 0\n"
        "10 execve(\"/w/found\", [\"found\"], 0x1 /* 2 vars */) = 0\n",
        "/w");
    EXPECT_FALSE(p.lossy) << p.reason;
    ASSERT_EQ(p.events.size(), 7U);
    EXPECT_EQ(p.events[1].path_named, "/srv/bin/tool");
    EXPECT_EQ(p.events[3].path_named, "/srv/bin/tool");
    // Removed: the trace no longer tells, the runtime sees the removal and lists it.
    EXPECT_EQ(p.events[5].path_named, "/w/x");
    EXPECT_EQ(p.events[6].path_named, "/w/found");
}

TEST(Names, AFileTheCallWroteAndAChildRanBeforeItsCloneReturnedIsThatFile) {
    // Under load the child a shell forks to run a program often execs before the shell's clone
    // returns; its events wait for the clone. A program the call wrote before is the call's own
    // all the same (cp, then run, then rm); one changed after the exec proves nothing.
    const std::string wrote =
        "10 openat(AT_FDCWD</w>, \"mine\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</w/mine>\n"
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD "
        "<unfinished ...>\n"
        "11 execve(\"./mine\", [\"./mine\"], 0x1 /* 2 vars */) = 0\n";
    const std::string returned = "10 <... clone resumed>, child_tidptr=0x7f) = 11\n";
    const Parsed p = parse(wrote + returned, "/w");
    EXPECT_FALSE(p.lossy) << p.reason;
    const AccessEvent *run = exec_of(p, "./mine");
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->path_resolved, "/w/mine");
    EXPECT_TRUE(run->path_named.empty()) << "established by the trace: " << run->path_named;
    // The control: the name written again after the exec (another task, seen before the clone
    // returned) leaves the exec to the runtime.
    const Parsed later = parse(
        wrote + "12 openat(AT_FDCWD</w>, \"mine\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</w/mine>\n" +
            returned,
        "/w");
    const AccessEvent *rerun = exec_of(later, "./mine");
    ASSERT_NE(rerun, nullptr);
    EXPECT_EQ(rerun->path_named, "/w/mine");

    // The writer, too, may run before its clone returns; a call with no directory descriptor
    // (creat) then waits for the clone, and its file is learnt when the clone returns: the
    // program run after it is that file.
    const Parsed both = parse(
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD "
        "<unfinished ...>\n"
        "11 creat(\"mine\", 0666) = 3</w/mine>\n"
        "10 <... clone resumed>, child_tidptr=0x7f) = 11\n"
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD "
        "<unfinished ...>\n"
        "12 execve(\"./mine\", [\"./mine\"], 0x1 /* 2 vars */) = 0\n"
        "10 <... clone resumed>, child_tidptr=0x7f) = 12\n",
        "/w");
    EXPECT_FALSE(both.lossy) << both.reason;
    const AccessEvent *built = exec_of(both, "./mine");
    ASSERT_NE(built, nullptr);
    EXPECT_EQ(built->path_resolved, "/w/mine");
    EXPECT_TRUE(built->path_named.empty()) << built->path_named;
}

TEST(Names, AnExecOfAFileTheCallWroteIsThatFile) {
    const Parsed p = parse(
        "10 openat(AT_FDCWD</w>, \"a.out\", O_WRONLY|O_CREAT|O_TRUNC, 0777) = 3</w/a.out>\n"
        "10 execve(\"./a.out\", [\"./a.out\"], 0x1 /* 2 vars */) = 0\n"
        // A name changed through a path that may go through a link forgets the names with its
        // last component: the runtime decides.
        "10 rename(\"sub/../other/a.out\", \"/w/elsewhere\") = 0\n"
        "10 execve(\"./a.out\", [\"./a.out\"], 0x1 /* 2 vars */) = 0\n",
        "/w");
    EXPECT_FALSE(p.lossy) << p.reason;
    const AccessEvent *first = exec_of(p, "./a.out");
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->path_resolved, "/w/a.out");
    EXPECT_TRUE(first->path_named.empty());
    EXPECT_EQ(p.events.back().path_named, "/w/a.out");
}

TEST(Names, ALinkLoopIsUnverified) {
    const Parsed p = parse(
        "10 symlink(\"b\", \"a\") = 0\n"
        "10 symlink(\"a\", \"b\") = 0\n"
        "10 execve(\"./a\", [\"./a\"], 0x1 /* 2 vars */) = 0\n",
        "/w");
    ASSERT_EQ(p.events.size(), 3U);
    EXPECT_FALSE(p.events[2].unverified.empty());
}

// A sibling sharing the descriptor table can replace the descriptor an open returned before
// strace reads its path: such an open whose descriptor names another path than the one asked is
// judged by the asked path too. A process alone in its table cannot be raced.
TEST(Names, AnExecThroughADescriptorOfASharedTableIsUnverified) {
    // execveat(fd, "", AT_EMPTY_PATH): strace decodes fd at the call's entry; a thread sharing the
    // table may swap an ungranted binary onto it before the kernel reads it.
    constexpr std::string_view kExec =
        "execveat(3</w/decoy>, \"\", [\"x\"], 0x1 /* 2 vars */, AT_EMPTY_PATH) = 0\n";
    const Parsed threads = parse(
        "10 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, "
        "child_tid=0x1, parent_tid=0x1, exit_signal=0, stack=0x1, stack_size=0x1, tls=0x1} => "
        "{parent_tid=[11]}, 88) = 11\n"
        "10 " +
            std::string{kExec},
        "/w");
    ASSERT_EQ(threads.events.size(), 1U);
    EXPECT_NE(threads.events[0].unverified.find("another task shares"), std::string::npos);
    // The control: the same exec by a process alone with its table is judged by its file.
    const Parsed alone = parse("10 " + std::string{kExec}, "/w");
    ASSERT_EQ(alone.events.size(), 1U);
    EXPECT_TRUE(alone.events[0].unverified.empty()) << alone.events[0].unverified;
}

TEST(Names, AnOpenInASharedDescriptorTableNamesTheAskedPath) {
    constexpr std::string_view kOpen =
        "openat(AT_FDCWD</w>, \"/srv/key\", O_RDONLY|O_CLOEXEC) = 4</w/notes>\n";
    const Parsed alone = parse("10 " + std::string{kOpen}, "/w");
    ASSERT_EQ(alone.events.size(), 1U);
    EXPECT_TRUE(alone.events[0].path_named.empty());

    const Parsed threads = parse(
        "10 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, "
        "child_tid=0x1, parent_tid=0x1, exit_signal=0, stack=0x1, stack_size=0x1, tls=0x1} => "
        "{parent_tid=[11]}, 88) = 11\n"
        "10 " +
            std::string{kOpen} +
            "10 openat(AT_FDCWD</w>, \"notes\", O_RDONLY) = 5</w/notes>\n"
            "11 openat(AT_FDCWD</w>, \"/srv/key\", O_RDONLY) = 6<socket:[9]>\n",
        "/w");
    ASSERT_EQ(threads.events.size(), 3U);
    EXPECT_EQ(threads.events[0].path_named, "/srv/key");
    EXPECT_TRUE(threads.events[1].path_named.empty()) << "the descriptor names the asked path";
    EXPECT_EQ(threads.events[2].path_resolved, "socket:[9]");
    EXPECT_EQ(threads.events[2].path_named, "/srv/key");

    // A fork shares nothing, and an exec leaves the shared table behind.
    const Parsed forked = parse(
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x1) = 12\n"
        "12 " +
            std::string{kOpen},
        "/w");
    ASSERT_EQ(forked.events.size(), 1U);
    EXPECT_TRUE(forked.events[0].path_named.empty());
}

}  // namespace
