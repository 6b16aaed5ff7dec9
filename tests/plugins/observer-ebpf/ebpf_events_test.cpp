// The eBPF observer's records turned into access events, on records built here: what a walk that
// did not reach the root, an object outside the file system, a script's exec, an exec's loader
// and a record cut short become.
#include "ebpf_events.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ebpf_event.h"

namespace tea::ebpf {
namespace {

using documents::Access;

struct Seen {
    std::string syscall, asked, resolved, unverified, error, named;
    Access access = Access::other;
    bool ok = false;
};

// A record of `kind` whose regions hold `regions` (names leaf first, NUL-terminated).
std::string record(tea_ebpf_event e, const std::vector<std::string> &regions) {
    std::string data(sizeof e, '\0');
    for (std::size_t i = 0; i < regions.size(); ++i) {
        e.bytes[i] = static_cast<__u16>(regions[i].size());
        data += regions[i];
    }
    e.size = static_cast<__u32>(data.size());
    std::memcpy(data.data(), &e, sizeof e);
    return data;
}

std::vector<Seen> decode(const std::string &r, DecodeTally &tally) {
    std::vector<Seen> out;
    decode_record(r, tally, [&out](const documents::ObservedEventView &e) {
        out.push_back({std::string{e.syscall}, std::string{e.asked}, std::string{e.resolved},
                       std::string{e.unverified}, std::string{e.error}, std::string{e.named},
                       e.access, e.ok});
    });
    return out;
}

tea_ebpf_event opened(std::uint8_t walk, std::uint32_t flags) {
    tea_ebpf_event e{};
    e.kind = TEA_EBPF_OPENED;
    e.call = TEA_EBPF_OPENAT;
    e.tgid = 7;
    e.ret = 3;
    e.walk[0] = walk;
    e.file_flags = flags;
    return e;
}

// An open another task may have swapped a decoy under is listed unverified; the file a close or
// dup2 took away from its number while an open ran is judged as the process's own, by its flags.
TEST(EbpfEvents, AnOpenWhoseDescriptorMayHaveBeenSwappedIsUnverified) {
    DecodeTally tally;
    auto e = opened(TEA_EBPF_WALK_ROOT, O_RDONLY);
    e.flags = TEA_EBPF_FLAG_UNVERIFIED;
    const auto seen = decode(record(e, {std::string{"decoy\0srv\0", 10}}), tally);
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0].asked, "/srv/decoy");
    EXPECT_TRUE(seen[0].resolved.empty());
    EXPECT_NE(seen[0].unverified.find("closed or replaced"), std::string::npos);
    // The control: the same record without the flag is vouched for.
    e.flags = 0;
    EXPECT_TRUE(decode(record(e, {std::string{"decoy\0srv\0", 10}}), tally)[0].unverified.empty());

    auto taken = opened(TEA_EBPF_WALK_ROOT, O_RDONLY);
    taken.call = TEA_EBPF_DUP2;
    taken.flags = TEA_EBPF_FLAG_DISPLACED;
    const auto displaced = decode(record(taken, {std::string{"key\0srv\0", 8}}), tally);
    ASSERT_EQ(displaced.size(), 1U);
    EXPECT_EQ(displaced[0].syscall, "dup2");
    EXPECT_EQ(displaced[0].resolved, "/srv/key");
    EXPECT_EQ(displaced[0].access, Access::read);
    EXPECT_TRUE(displaced[0].unverified.empty());
    EXPECT_EQ(tally.unreadable, 0U);
    EXPECT_EQ(tally.malformed, 0U);
}

// An exec by a relative name is judged by the path joined to the working directory, and its sink is
// told the name as the process gave it (which a backend's target start names); no other event is.
TEST(EbpfEvents, AnExecByARelativeNameKeepsTheNameItWasGiven) {
    DecodeTally tally;
    tea_ebpf_event e{};
    e.kind = TEA_EBPF_EXEC;
    e.call = TEA_EBPF_EXECVE;
    e.walk[0] = TEA_EBPF_WALK_ROOT;
    e.walk[1] = TEA_EBPF_WALK_ROOT;
    e.walk[2] = TEA_EBPF_WALK_ROOT;
    std::vector<std::string> names;
    const auto r = record(
        e, {std::string{"run.sh\0ws\0", 10}, std::string{"./run.sh\0", 9}, std::string{"ws\0", 3}});
    decode_record(r, tally, [&](const documents::ObservedEventView &v) {
        EXPECT_EQ(v.asked, "/ws/./run.sh");  // the judge folds the "."
        names.emplace_back(tally.exec_name);
    });
    EXPECT_EQ(names, std::vector<std::string>{"./run.sh"});
    EXPECT_TRUE(tally.exec_name.empty());
    decode_record(
        record(opened(TEA_EBPF_WALK_ROOT, O_RDONLY), {std::string{"x\0", 2}}), tally,
        [&](const documents::ObservedEventView &) { names.emplace_back(tally.exec_name); });
    EXPECT_EQ(names.back(), "");
}

TEST(EbpfEvents, NamesLeafFirstSpellThePathFromTheRoot) {
    EXPECT_EQ(path_of_names(std::string{"hostname\0etc\0", 13}), "/etc/hostname");
    EXPECT_EQ(path_of_names(""), "/");
}

TEST(EbpfEvents, AnOpenIsJudgedByTheFileTheKernelInstalled) {
    DecodeTally tally;
    const auto seen =
        decode(record(opened(TEA_EBPF_WALK_ROOT, O_RDONLY), {std::string{"key\0srv\0", 8}}), tally);
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0].asked, "/srv/key");
    EXPECT_EQ(seen[0].resolved, "/srv/key");
    EXPECT_EQ(seen[0].access, Access::read);
    EXPECT_TRUE(seen[0].unverified.empty());
    const auto written = decode(
        record(opened(TEA_EBPF_WALK_ROOT, O_WRONLY | O_CREAT), {std::string{"x\0", 2}}), tally);
    EXPECT_EQ(written[0].access, Access::create);
    const auto path_only =
        decode(record(opened(TEA_EBPF_WALK_ROOT, O_PATH), {std::string{"x\0", 2}}), tally);
    EXPECT_EQ(path_only[0].access, Access::other);
}

TEST(EbpfEvents, AWalkThatMissedTheRootIsUnverifiedAndAPipeIsNoFile) {
    DecodeTally tally;
    const auto outside =
        decode(record(opened(TEA_EBPF_WALK_OUTSIDE, O_RDONLY), {std::string{"vm\0", 3}}), tally);
    ASSERT_EQ(outside.size(), 1U);
    EXPECT_TRUE(outside[0].resolved.empty());
    EXPECT_FALSE(outside[0].unverified.empty()) << "listed, never presumed granted";
    const auto pipe =
        decode(record(opened(TEA_EBPF_WALK_PSEUDO, O_RDONLY), {std::string{"pipe\0", 5}}), tally);
    EXPECT_TRUE(pipe.empty());
}

TEST(EbpfEvents, AFailedOpenIsTheStringAskedMadeAbsoluteWithItsError) {
    tea_ebpf_event e{};
    e.kind = TEA_EBPF_NAMED;
    e.call = TEA_EBPF_OPENAT;
    e.ret = -2;
    e.walk[0] = TEA_EBPF_WALK_ROOT;
    e.walk[1] = TEA_EBPF_WALK_ROOT;
    DecodeTally tally;
    const auto seen =
        decode(record(e, {std::string{"w\0", 2}, std::string{"answer.txt\0", 11}}), tally);
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0].asked, "/w/answer.txt");
    EXPECT_FALSE(seen[0].ok);
    EXPECT_EQ(seen[0].error, "ENOENT");
    // A string the program could not read back is counted, never guessed.
    e.walk[1] = TEA_EBPF_WALK_NO_FILE;
    EXPECT_TRUE(decode(record(e, {"", ""}), tally).empty());
    EXPECT_EQ(tally.unreadable, 1U);
}

TEST(EbpfEvents, AScriptsExecReportsTheScriptByNameAndItsInterpreterByFile) {
    tea_ebpf_event e{};
    e.kind = TEA_EBPF_EXEC;
    e.call = TEA_EBPF_EXECVE;
    e.script = 1;
    e.walk[0] = TEA_EBPF_WALK_ROOT;
    e.walk[1] = TEA_EBPF_WALK_ROOT;
    DecodeTally tally;
    const auto seen = decode(
        record(e, {std::string{"dash\0bin\0usr\0", 13}, std::string{"/w/run.sh\0", 10}}), tally);
    ASSERT_EQ(seen.size(), 2U);
    EXPECT_EQ(seen[0].asked, "/w/run.sh");
    EXPECT_TRUE(seen[0].resolved.empty());
    EXPECT_EQ(seen[1].resolved, "/usr/bin/dash");
    EXPECT_EQ(seen[1].access, Access::exec);
}

TEST(EbpfEvents, ARecordShorterThanItsRegionsIsMalformed) {
    auto r = record(opened(TEA_EBPF_WALK_ROOT, O_RDONLY), {std::string{"key\0srv\0", 8}});
    r.resize(r.size() - 3);
    DecodeTally tally;
    EXPECT_TRUE(decode(r, tally).empty());
    EXPECT_EQ(tally.malformed, 1U);
    EXPECT_TRUE(decode("short", tally).empty());
    EXPECT_EQ(tally.malformed, 2U);
}

// In a shared descriptor table the string an open named is read back and judged too; one that
// could not be read (its page unmapped by another task) makes the audit incomplete.
TEST(EbpfEvents, AnUnreadableStringInASharedTableMakesTheAuditIncomplete) {
    auto e = opened(TEA_EBPF_WALK_ROOT, O_RDONLY);
    e.walk[1] = TEA_EBPF_WALK_NO_FILE;
    DecodeTally tally;
    const auto seen = decode(record(e, {std::string{"key\0srv\0", 8}}), tally);
    ASSERT_EQ(seen.size(), 1U) << "the file is still judged";
    EXPECT_EQ(seen[0].resolved, "/srv/key");
    EXPECT_EQ(tally.unreadable, 1U);
    // The control: alone in its table the program reads no string, and nothing is missing.
    e.walk[1] = TEA_EBPF_WALK_NONE;
    (void)decode(record(e, {std::string{"key\0srv\0", 8}}), tally);
    EXPECT_EQ(tally.unreadable, 1U);
}

// In a shared table, a string that names the file at the descriptor as plainly as the kernel's path
// ("//", "/./", a trailing slash) leaves nothing for the runtime to follow on the host; one that
// names it through "..", or names another file, is followed.
TEST(EbpfEvents, ANameSpeltWithDotsOrSlashesIsTheFileAtTheDescriptor) {
    auto e = opened(TEA_EBPF_WALK_ROOT, O_RDONLY | O_DIRECTORY);
    e.walk[1] = TEA_EBPF_WALK_ROOT;
    const std::string names{"y\0x\0home\0", 9};
    const auto named_by = [&](const std::string &asked) {
        DecodeTally tally;
        const auto seen = decode(record(e, {names, asked + '\0'}), tally);
        EXPECT_EQ(seen.size(), 1U) << asked;
        EXPECT_EQ(tally.unreadable, 0U) << asked;
        return seen.empty() ? std::string{"(none)"} : seen[0].named;
    };
    EXPECT_EQ(named_by("/home/x/y"), "");
    EXPECT_EQ(named_by("/home/x/y/"), "");
    EXPECT_EQ(named_by("//home/./x//y/."), "");
    // The controls: ".." climbs out of whatever the name before it led to, and another name is
    // another file.
    EXPECT_EQ(named_by("/home/x/z/../y"), "/home/x/z/../y");
    EXPECT_EQ(named_by("/home/x/z/"), "/home/x/z/");
}

// The loader the kernel mapped for an exec is an exec of its own, by its file; one whose mapping
// could not be found makes the audit incomplete, never a silent gap.
TEST(EbpfEvents, AnExecsLoaderIsAnExecOfItsFile) {
    tea_ebpf_event e{};
    e.kind = TEA_EBPF_LOADER;
    e.call = TEA_EBPF_EXECVE;
    e.tgid = 7;
    e.walk[0] = TEA_EBPF_WALK_ROOT;
    DecodeTally tally;
    const auto seen = decode(record(e, {std::string{"ld\0lib\0", 7}}), tally);
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0].asked, "/lib/ld");
    EXPECT_EQ(seen[0].resolved, "/lib/ld");
    EXPECT_EQ(seen[0].access, Access::exec);
    EXPECT_TRUE(seen[0].ok);
    EXPECT_TRUE(seen[0].unverified.empty());
    EXPECT_EQ(tally.unreadable, 0U);
    e.walk[0] = TEA_EBPF_WALK_NO_FILE;
    EXPECT_TRUE(decode(record(e, {}), tally).empty());
    EXPECT_EQ(tally.unreadable, 1U);
    // A walk cut short still names the loader, unverified.
    e.walk[0] = TEA_EBPF_WALK_OUTSIDE;
    const auto outside = decode(record(e, {std::string{"ld\0", 3}}), tally);
    ASSERT_EQ(outside.size(), 1U);
    EXPECT_TRUE(outside[0].resolved.empty());
    EXPECT_FALSE(outside[0].unverified.empty());
}

}  // namespace
}  // namespace tea::ebpf
