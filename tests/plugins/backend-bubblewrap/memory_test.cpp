// The call's memory budget, enforced by the kernel: a target that allocates twice the budget is
// stopped, and the call's record names the hit; under a larger budget the same target runs to
// its end.
#include <signal.h>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

using nlohmann::json;

// Allocates argv[1] MiB and writes every page of it, so the memory is the target's, not a
// promise of the kernel's.
constexpr const char *allocate_probe = R"PY(
def allocate():
    block = b"\x01" * (int(sys.argv[1]) << 20)
    return len(block) >> 20
report("ALLOC", allocate)
)PY";

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;

std::string budget_config(std::uint64_t bytes) {
    return "[budgets]\nmemory = " + std::to_string(bytes) + "\n";
}

// Where no cgroup holds the budget, RLIMIT_DATA stands in for it in every process of the call,
// the sandbox's own helper included, and a sanitized build's helper reserves terabytes of shadow
// memory: such a call runs unaudited, so that only the (unsanitized) view builder stands before
// the target.
std::vector<std::string> budget_options(bool unprivileged) {
    if (unprivileged) {
        return {"--json", "--observer", "none"};
    }
    return {"--json"};
}

TEST_P(EitherIdentity, AMemoryBudgetStopsATargetThatAllocatesTwiceIt) {
    const auto over = run({.command = python(allocate_probe, {"128"}),
                           .config = budget_config(64 * mib),
                           .options = budget_options(unprivileged_user())});
    const auto record = json::parse(over.out, nullptr, false);
    ASSERT_TRUE(record.is_object()) << over;
    EXPECT_EQ(record["budget"]["memoryBytes"], 64 * mib) << over;
    EXPECT_FALSE(target_output(over).has("ALLOC-OK")) << over;
    // What held the budget is read from the record, and is what this host gives the call: a
    // memory cgroup of its own (v1 or v2, as the host has) as root or with a delegated cgroup.
    const auto by = record["budget"]["memoryEnforcedBy"].get<std::string>();
    EXPECT_TRUE(enforced_as_expected(by)) << over;
    if (by == "rlimit") {
        // The stand-in without a cgroup (RLIMIT_DATA): the allocation is refused, and the record
        // says why no cgroup held the budget.
        EXPECT_TRUE(target_output(over).has("ALLOC-ERROR:MemoryError")) << over;
        EXPECT_FALSE(record["budget"].value("cgroupUnavailable", "").empty()) << over;
    } else {
        // The cgroup: the kernel's OOM killer ends the target at the budget, and the record says
        // so.
        EXPECT_EQ(over.status, 128 + SIGKILL) << over;
        ASSERT_EQ(record["budgetHits"].size(), 1U) << over;
        EXPECT_EQ(record["budgetHits"][0]["budget"], "memory") << over;
        EXPECT_GE(record["budget"]["oomKills"].get<int>(), 1) << over;
        EXPECT_NE(over.err.find("tea-evaluate: budget: the kernel's OOM killer ended"),
                  std::string::npos)
            << over;
    }

    // The control: the same target under a budget of 512 MiB allocates its 128.
    const auto under = run({.command = python(allocate_probe, {"128"}),
                            .config = budget_config(512 * mib),
                            .options = budget_options(unprivileged_user())});
    EXPECT_EQ(under.status, 0) << under;
    EXPECT_EQ(target_output(under).value("ALLOC-OK"), "128") << under;
    EXPECT_TRUE(json::parse(under.out, nullptr, false)["budgetHits"].empty()) << under;
}

// The default budget, a share of the host's memory, is held by a cgroup or by nothing: never by
// RLIMIT_DATA, which bounds each process alone and would stop a program that only reserves
// address space (a sanitized program's shadow). A budget in bytes does fall back to it (above).
TEST_P(EitherIdentity, AShareOfTheHostsMemoryIsNeverAPerProcessLimit) {
    const auto share = run({.command = {"/bin/sh", "-c", "ulimit -d"}, .options = {"--json"}});
    const auto record = json::parse(share.out, nullptr, false);
    ASSERT_TRUE(record.is_object()) << share;
    EXPECT_EQ(share.status, 0) << share;
    const auto by = record["budget"]["memoryEnforcedBy"].get<std::string>();
    EXPECT_TRUE(enforced_as_expected(by)) << share;
    EXPECT_NE(by, "rlimit") << share;
    EXPECT_NE(share.err.find("unlimited"), std::string::npos) << share;
    // The control: the same call with a budget in bytes gets the limit where no cgroup holds it.
    const auto bytes = run({.command = {"/bin/sh", "-c", "ulimit -d"},
                            .config = budget_config(512 * mib),
                            .options = budget_options(unprivileged_user())});
    const auto bytes_record = json::parse(bytes.out, nullptr, false);
    ASSERT_TRUE(bytes_record.is_object()) << bytes;
    if (bytes_record["budget"]["memoryEnforcedBy"] == "rlimit") {
        EXPECT_NE(bytes.err.find("524288"), std::string::npos) << bytes;
    }
}

}  // namespace
}  // namespace tea::test::bwrap
