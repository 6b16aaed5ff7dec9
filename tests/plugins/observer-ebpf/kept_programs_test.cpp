// The eBPF observer's programs kept loaded between sessions (src/kept_programs.hpp), against the
// real kernel: a session attaches the programs an earlier one pinned and sees what its calls open;
// the programs run on no system call between sessions; nothing an earlier session left in the
// maps is taken for a call of the next; an incomplete set, a foreign program or a map that is not
// the programs' own is loaded again; a session that finds the set taken loads its own; and
// `keep_loaded = false` pins nothing. Each test uses a set of its own (its own `max_calls`).
#include "kept_programs.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../observer_plugin.hpp"
#include "ebpf_event.h"
#include "object_digest.hpp"
#include "observed.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t kDefaultRing = std::uint64_t{1} << 24;

stdfs::path set_dir(std::uint64_t max_calls) {
    return stdfs::path{ebpf::kKeptSetsDir} /
           ebpf::kept_set_name(ebpf::object_digest, {kDefaultRing, max_calls});
}

// Removes a set's pins and its directory.
void remove_set(const stdfs::path &dir) {
    std::error_code ec;
    for (const auto &e : stdfs::directory_iterator{dir, ec}) {
        (void)::unlink(e.path().c_str());
    }
    (void)::rmdir(dir.c_str());
}

// The id of the object pinned at `pin`, 0 when none.
std::uint32_t pinned_id(const stdfs::path &pin) {
    const int fd = ::bpf_obj_get(pin.c_str());
    if (fd < 0) {
        return 0;
    }
    bpf_prog_info info{};
    std::uint32_t len = sizeof info;
    const bool ok = ::bpf_obj_get_info_by_fd(fd, &info, &len) == 0;
    ::close(fd);
    return ok ? info.id : 0;
}

// The programs attached to raw tracepoints on the machine right now.
std::set<std::uint32_t> attached_programs() {
    std::set<std::uint32_t> ids;
    std::uint32_t id = 0;
    while (::bpf_link_get_next_id(id, &id) == 0) {
        const int fd = ::bpf_link_get_fd_by_id(id);
        if (fd < 0) {
            continue;
        }
        bpf_link_info info{};
        std::uint32_t len = sizeof info;
        if (::bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
            info.type == BPF_LINK_TYPE_RAW_TRACEPOINT) {
            ids.insert(info.prog_id);
        }
        ::close(fd);
    }
    return ids;
}

// Puts this process, once, in a mount namespace of its own with a bpffs of its own at
// /sys/fs/bpf: the tests neither need the host to have mounted one nor leave kept sets in the
// host's. Empty on success, else why not.
std::string private_bpffs() {
    static const std::string why = []() -> std::string {
        if (::unshare(CLONE_NEWNS) != 0) {
            return std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno);
        }
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            return std::string{"making / private: "} + std::strerror(errno);
        }
        if (::mount("bpf", ebpf::kBpffsMount, "bpf", 0, "mode=0700") != 0) {
            return std::string{"mounting bpffs: "} + std::strerror(errno);
        }
        return {};
    }();
    return why;
}

class KeptPrograms : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "loading BPF programs needs root";
        }
        const auto why = private_bpffs();
        ASSERT_TRUE(why.empty()) << why;
        file_ = dir_.path() / "file-A";
        std::ofstream{file_} << "content of A\n";
    }
    void TearDown() override {
        for (const auto calls : used_) {
            remove_set(set_dir(calls));
        }
    }

    // A session of the observer with room for `max_calls` calls (which names its set).
    std::unique_ptr<ObserverPlugin> session(std::uint64_t max_calls, bool keep = true) {
        if (used_.insert(max_calls).second) {
            remove_set(set_dir(max_calls));
        }
        auto s = std::make_unique<ObserverPlugin>(
            "ebpf", TEA_EBPF_PLUGIN, json{{"max_calls", max_calls}, {"keep_loaded", keep}}.dump());
        EXPECT_TRUE(s->probe().available) << s->probe().reason;
        return s;
    }

    // Whether a session reads file_ once, completely audited.
    void expect_sees_its_open(const ObserverPlugin &s) const {
        const auto seen = s.observe({TEA_EBPF_KERNEL_PROBE, "opens", file_.string(), "1"});
        EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
        EXPECT_EQ(reads_of(seen.observation, file_.string()), 1U);
    }

    // A call registered with `s` and claimed by a child that waits on `go` before it ends; the
    // test's own process opens `opened` while the child holds the call open. Returns what `s`
    // collected. `track_self` makes the test's process one of the call's through the kept set's
    // `tracked` map first, as a process an earlier session left there would be.
    audit::Observation call_while_opening(const ObserverPlugin &s, const stdfs::path &trace,
                                          const stdfs::path &opened, std::uint64_t max_calls,
                                          std::uint32_t track_self_as = 0) const {
        stdfs::create_directory(trace);
        const auto token = token_of(s.wrap({"true"}, trace));
        int go[2];
        EXPECT_EQ(::pipe(go), 0);
        const pid_t owner = ::fork();
        if (owner == 0) {
            ::syscall(SYS_close, -1, TEA_EBPF_MAGIC, token);
            char byte = 0;
            (void)::read(go[0], &byte, 1);
            ::_exit(0);
        }
        ::close(go[0]);
        if (track_self_as != 0) {
            track_self(max_calls, track_self_as);
        }
        ::close(::open(opened.c_str(), O_RDONLY | O_CLOEXEC));
        EXPECT_EQ(::write(go[1], "x", 1), 1);
        ::close(go[1]);
        int status = 0;
        EXPECT_EQ(::waitpid(owner, &status, 0), owner);
        return s.collect(trace);
    }

    // Puts this process in the kept set's map of tracked processes, as call `call`'s.
    static void track_self(std::uint64_t max_calls, std::uint32_t call) {
        const int tracked = ::bpf_obj_get((set_dir(max_calls) / "tracked").c_str());
        ASSERT_GE(tracked, 0);
        const auto tgid = static_cast<std::uint32_t>(::getpid());
        EXPECT_EQ(::bpf_map_update_elem(tracked, &tgid, &call, BPF_ANY), 0);
        ::close(tracked);
    }

    // Whether this process is in the kept set's map of tracked processes.
    static bool tracked_self(std::uint64_t max_calls) {
        const int tracked = ::bpf_obj_get((set_dir(max_calls) / "tracked").c_str());
        EXPECT_GE(tracked, 0);
        const auto tgid = static_cast<std::uint32_t>(::getpid());
        std::uint32_t call = 0;
        const bool found = ::bpf_map_lookup_elem(tracked, &tgid, &call) == 0;
        ::close(tracked);
        return found;
    }

    test::TempDir dir_{"tea-ebpf-kept"};
    stdfs::path file_;
    std::set<std::uint64_t> used_;
};

TEST_F(KeptPrograms, ASecondSessionAttachesTheProgramsTheFirstLoaded) {
    auto first = session(11);
    const auto pin = set_dir(11) / "on_sys_exit";
    const auto loaded = pinned_id(pin);
    ASSERT_NE(loaded, 0U) << "the first session pinned nothing at " << pin;
    EXPECT_TRUE(attached_programs().contains(loaded));
    expect_sees_its_open(*first);
    first.reset();
    // Between sessions the kept programs run on no system call.
    EXPECT_FALSE(attached_programs().contains(loaded));
    EXPECT_EQ(pinned_id(pin), loaded);
    const auto second = session(11);
    EXPECT_EQ(pinned_id(pin), loaded);
    EXPECT_TRUE(attached_programs().contains(loaded));
    expect_sees_its_open(*second);
}

// A process an earlier session tracked, still running (here the test's own, put in the kept
// set's map between the sessions as call 1, the number the next session gives its first call),
// is forgotten when the next session takes the set: what it opens is not in that call's audit.
// The control: the same process put in the map while the session's second call runs is in that
// call's audit, so the first answer is the reset's, not the program's blindness to this process.
TEST_F(KeptPrograms, AnEarlierSessionsProcessIsNotTakenForTheNextSessionsCall) {
    session(12).reset();
    track_self(12, 1);
    const auto s = session(12);
    const auto marker = dir_.path() / "opened-by-a-stale-process";
    const auto control = dir_.path() / "opened-by-a-tracked-process";
    std::ofstream{marker} << "x";
    std::ofstream{control} << "x";
    const auto first = call_while_opening(*s, dir_.path() / "trace-1", marker, 12);
    EXPECT_EQ(reads_of(first, marker.string()), 0U) << "a process of the last session was traced";
    const auto second = call_while_opening(*s, dir_.path() / "trace-2", control, 12, 2);
    EXPECT_EQ(reads_of(second, control.string()), 1U);
}

// A set missing a pin (a session killed while pinning), one whose program pin is not a program
// of the object, and one whose map pin is not a map the programs use are each loaded again,
// pinned whole, and audit as before.
TEST_F(KeptPrograms, AnIncompleteOrForeignSetIsLoadedAgain) {
    const auto dir = set_dir(13);
    const auto pin = dir / "on_sys_exit";
    session(13).reset();
    const auto first = pinned_id(pin);
    ASSERT_NE(first, 0U);
    ASSERT_EQ(::unlink((dir / "calls").c_str()), 0);
    {
        const auto s = session(13);
        EXPECT_NE(pinned_id(pin), first);
        EXPECT_TRUE(stdfs::exists(dir / "calls"));
        EXPECT_TRUE(attached_programs().contains(pinned_id(pin)));
        expect_sees_its_open(*s);
    }
    // A map where the sys_exit program was.
    const auto second = pinned_id(pin);
    ASSERT_EQ(::unlink(pin.c_str()), 0);
    const int tracked = ::bpf_obj_get((dir / "tracked").c_str());
    ASSERT_GE(tracked, 0);
    ASSERT_EQ(::bpf_obj_pin(tracked, pin.c_str()), 0);
    ::close(tracked);
    {
        const auto s = session(13);
        EXPECT_NE(pinned_id(pin), second);
        EXPECT_TRUE(attached_programs().contains(pinned_id(pin)));
        expect_sees_its_open(*s);
    }
    // A map of the same name and kind that the programs do not use, in place of theirs.
    const auto third = pinned_id(pin);
    ASSERT_EQ(::unlink((dir / "tracked").c_str()), 0);
    const int planted = ::bpf_map_create(BPF_MAP_TYPE_HASH, "tracked", sizeof(std::uint32_t),
                                         sizeof(std::uint32_t), 16, nullptr);
    ASSERT_GE(planted, 0);
    ASSERT_EQ(::bpf_obj_pin(planted, (dir / "tracked").c_str()), 0);
    ::close(planted);
    const auto s = session(13);
    EXPECT_NE(pinned_id(pin), third);
    expect_sees_its_open(*s);
}

// Two sessions at once: the second finds the set taken and loads programs of its own, which
// audit its calls after the first session, and the kept programs with it, are gone.
TEST_F(KeptPrograms, ASessionFindingTheSetTakenLoadsItsOwn) {
    auto first = session(14);
    const auto kept = pinned_id(set_dir(14) / "on_sys_exit");
    ASSERT_NE(kept, 0U);
    const auto second = session(14);
    EXPECT_EQ(pinned_id(set_dir(14) / "on_sys_exit"), kept);
    expect_sees_its_open(*first);
    expect_sees_its_open(*second);
    first.reset();
    EXPECT_FALSE(attached_programs().contains(kept)) << "the second session took the kept set";
    expect_sees_its_open(*second);
}

// `keep_loaded = false` pins nothing; the control, the same configuration kept, pins its set.
TEST_F(KeptPrograms, NothingIsKeptWhenTheConfigurationSaysSo) {
    const auto s = session(15, false);
    EXPECT_FALSE(stdfs::exists(set_dir(15)));
    expect_sees_its_open(*s);
    const auto kept = session(15);
    EXPECT_NE(pinned_id(set_dir(15) / "on_sys_exit"), 0U);
}

// Where /sys/fs/bpf is no bpffs (here a tmpfs over it), a session loads its own programs, sees
// its call's opens, makes nothing there and says why. The control: on bpffs the same session
// makes its set.
TEST_F(KeptPrograms, WithoutBpffsASessionLoadsItsOwnAndMakesNothing) {
    ASSERT_EQ(::mount("tmpfs", ebpf::kBpffsMount, "tmpfs", 0, "mode=0755"), 0)
        << std::strerror(errno);
    const ebpf::SetSizes sizes{kDefaultRing, 20};
    const auto name = ebpf::kept_set_name(ebpf::object_digest, sizes);
    const auto unloaded = [] { return ebpf::LoadedSet{}; };
    {
        const auto s = session(20);
        expect_sees_its_open(*s);
        EXPECT_FALSE(stdfs::exists(ebpf::kKeptSetsDir));
        std::string why;
        (void)ebpf::load_or_take(name, sizes, true, unloaded, &why);
        EXPECT_NE(why.find("no bpffs is mounted at /sys/fs/bpf"), std::string::npos) << why;
    }
    ASSERT_EQ(::umount(ebpf::kBpffsMount), 0) << std::strerror(errno);
    const auto kept = session(20);
    EXPECT_NE(pinned_id(set_dir(20) / "on_sys_exit"), 0U);
    // Held by that session, the set is not another's to take, and the reason says so.
    std::string why;
    (void)ebpf::load_or_take(name, sizes, true, unloaded, &why);
    EXPECT_EQ(why, "another session holds the kept set");
}

// A set whose programs are still attached (a session killed a moment ago, whose attachments the
// kernel has not yet released; here an attachment the test holds) is neither emptied nor taken:
// the session loads its own, and what the set's maps hold stays. The control: once the
// attachment is gone, the next session takes the set and empties it.
TEST_F(KeptPrograms, ASetWhoseProgramsAreStillAttachedIsLeftAlone) {
    session(16).reset();
    const auto pin = set_dir(16) / "on_fork";
    const auto kept = pinned_id(pin);
    ASSERT_NE(kept, 0U);
    const int program = ::bpf_obj_get(pin.c_str());
    ASSERT_GE(program, 0);
    const int link = ::bpf_raw_tracepoint_open("sched_process_fork", program);
    ::close(program);
    ASSERT_GE(link, 0);
    track_self(16, 7);
    {
        const auto s = session(16);
        EXPECT_TRUE(tracked_self(16)) << "the maps of an attached set were emptied";
        EXPECT_EQ(pinned_id(pin), kept);
        expect_sees_its_open(*s);
    }
    ::close(link);
    const auto s = session(16);
    EXPECT_FALSE(tracked_self(16));
    EXPECT_EQ(pinned_id(pin), kept);
    expect_sees_its_open(*s);
}

// A set no session has used for an hour (another build's, another configuration's) is removed by
// the next session that runs; the control, a set used a minute ago, stays.
TEST_F(KeptPrograms, ASetUnusedForAnHourIsRemoved) {
    session(17).reset();
    session(18).reset();
    const auto old = set_dir(17);
    const auto recent = set_dir(18);
    const auto at = [](std::int64_t seconds_ago) {
        std::array<timespec, 2> times{};
        times[0].tv_sec = ::time(nullptr) - seconds_ago;
        times[1].tv_sec = times[0].tv_sec;
        return times;
    };
    const auto two_hours = at(std::int64_t{2} * 3600);
    const auto a_minute = at(60);
    ASSERT_EQ(::utimensat(AT_FDCWD, old.c_str(), two_hours.data(), 0), 0);
    ASSERT_EQ(::utimensat(AT_FDCWD, recent.c_str(), a_minute.data(), 0), 0);
    const auto s = session(19);
    EXPECT_FALSE(stdfs::exists(old));
    EXPECT_TRUE(stdfs::exists(recent / "on_sys_exit"));
    expect_sees_its_open(*s);
}

}  // namespace
}  // namespace tea::plugins
