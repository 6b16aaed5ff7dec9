// The Seatbelt backend's profile, on any host: golden profiles for a matrix of launch specs, each
// parsed by the SBPL checker (sbpl_checker.hpp) with no allow re-opening what a deny closed, the
// decision the profile takes for the paths each rule is there for, and every refusal of a spec no
// profile can carry. Set TEA_UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change.
#include "profile.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>
#include <vector>

#include "sbpl_checker.hpp"
#include "seatbelt_plan.hpp"

namespace tea::seatbelt {
namespace {

using documents::LaunchSpec;
using test::allowed;
using test::reopened;
using test::rules_of;

constexpr const char *kRoot = "/Users/dev/.local/state/tea-evaluate";
constexpr const char *kRun = "/Users/dev/.local/state/tea-evaluate/run-1";

LaunchSpec base_spec() {
    LaunchSpec spec;
    spec.argv = {"/usr/bin/make", "test"};
    spec.env = {"PATH=/usr/bin:/bin", "NODE_V8_COVERAGE=/tmp/cov", "TMPDIR=/private/var/folders/x"};
    spec.workspace = "/Users/dev/trial/ws";
    spec.cwd = "/Users/dev/trial/ws";
    spec.temp_dir = std::string{kRun} + "/tmp-1";
    spec.home = std::string{kRun} + "/tea-evaluate-target-home-abc";
    spec.withhold = {"/Users/dev/project/.tea", "/Users/dev/project/.git"};
    spec.read_only = {std::string{kRun} + "/repository"};
    spec.system_paths = {"/opt/verdict-rules"};
    spec.runtime_prefix = "/usr/local";
    return spec;
}

std::string profile_of(const LaunchSpec &spec) {
    const auto plan = seatbelt_plan(Settings{}, spec);
    EXPECT_EQ(plan.argv.at(0), "/usr/bin/sandbox-exec");
    EXPECT_EQ(plan.argv.at(1), "-p");
    return plan.argv.at(2);
}

// The paths a target profile opens again inside the private root, exactly.
std::vector<std::string> granted_back(const LaunchSpec &spec) {
    std::vector<std::string> out{kRoot, kRun, spec.home, spec.temp_dir, spec.workspace};
    out.insert(out.end(), spec.read_only.begin(), spec.read_only.end());
    if (!spec.bridge.dir.empty()) {
        out.push_back(spec.bridge.dir);
    }
    if (!spec.egress.socket.empty()) {
        out.push_back(spec.egress.socket.substr(0, spec.egress.socket.rfind('/')));
    }
    return out;
}

void expect_golden(const std::string &name, const std::string &profile) {
    const std::string path = std::string{TEA_SEATBELT_GOLDEN_DIR} + "/" + name + ".sb";
    if (std::getenv("TEA_UPDATE_GOLDEN") != nullptr) {
        std::ofstream{path, std::ios::binary} << profile;
    }
    std::ifstream in{path, std::ios::binary};
    ASSERT_TRUE(in) << path << " is missing; run with TEA_UPDATE_GOLDEN=1";
    std::ostringstream golden;
    golden << in.rdbuf();
    EXPECT_EQ(profile, golden.str()) << "the profile differs from " << path;
}

// Golden, parsed, and no allow re-opening a deny.
void check_profile(const std::string &name, const LaunchSpec &spec) {
    const auto profile = profile_of(spec);
    expect_golden(name, profile);
    const auto rules = rules_of(profile);
    EXPECT_EQ(reopened(rules, granted_back(spec)), std::vector<std::string>{}) << profile;
}

TEST(SeatbeltProfile, BaseSpecIsGoldenAndClosesWhatItMustAndOpensTheGrants) {
    const auto spec = base_spec();
    check_profile("base", spec);
    const auto rules = rules_of(profile_of(spec));
    // Positive controls: the grants open.
    EXPECT_TRUE(allowed(rules, "file-read-data", "/Users/dev/trial/ws/src/main.c"));
    EXPECT_TRUE(allowed(rules, "file-write-data", "/Users/dev/trial/ws/out.o"));
    EXPECT_TRUE(allowed(rules, "file-write-create", spec.home + "/.config/x"));
    EXPECT_TRUE(allowed(rules, "file-write-data", spec.temp_dir + "/t"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/usr/lib/libSystem.B.dylib"));
    EXPECT_TRUE(allowed(rules, "process-exec", "/bin/sh"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/opt/verdict-rules/r.json"));
    EXPECT_TRUE(allowed(rules, "file-read-data", spec.read_only[0] + "/HEAD"));
    EXPECT_TRUE(allowed(rules, "file-read-metadata", "/Users/dev/.ssh/id_ed25519"));
    // File data outside the grants answers EPERM (a link's real path included).
    EXPECT_FALSE(allowed(rules, "file-read-data", "/Users/dev/.ssh/id_ed25519"));
    EXPECT_FALSE(allowed(rules, "process-exec", "/Users/dev/bin/tool"));
    EXPECT_FALSE(allowed(rules, "file-write-data", "/usr/local/bin/x"));
    EXPECT_FALSE(allowed(rules, "file-write-data", spec.read_only[0] + "/HEAD"));
    // The evaluation folder and the git directory: no operation, metadata included.
    EXPECT_FALSE(allowed(rules, "file-read-data", "/Users/dev/project/.tea/contract.json"));
    EXPECT_FALSE(allowed(rules, "file-read-metadata", "/Users/dev/project/.tea/probes"));
    EXPECT_FALSE(allowed(rules, "file-write-data", "/Users/dev/project/.git/config"));
    // The private root: another trial's home closed; the root and the run answer metadata, never
    // a listing.
    EXPECT_FALSE(allowed(rules, "file-read-data", std::string{kRun} + "/bridge-token"));
    EXPECT_FALSE(allowed(rules, "file-read-data", std::string{kRoot} + "/run-2/home/x"));
    EXPECT_TRUE(allowed(rules, "file-read-metadata", kRoot));
    EXPECT_TRUE(allowed(rules, "file-read-metadata", kRun));
    EXPECT_FALSE(allowed(rules, "file-read-data", kRoot));
    EXPECT_FALSE(allowed(rules, "file-read-data", kRun));
    // Sockets: every path closed, the call's own and the two system services open.
    EXPECT_FALSE(allowed(rules, "network-outbound", "/private/var/run/docker.sock"));
    EXPECT_FALSE(allowed(rules, "network-outbound", "/Users/dev/.docker/run/docker.sock"));
    EXPECT_FALSE(allowed(rules, "network-outbound", "/private/tmp/ssh-agent.sock"));
    EXPECT_TRUE(allowed(rules, "network-outbound", "/private/var/run/mDNSResponder"));
    EXPECT_TRUE(allowed(rules, "network-outbound", "/private/var/run/syslog"));
    EXPECT_TRUE(allowed(rules, "network-outbound", "/Users/dev/trial/ws/app.sock"));
    EXPECT_TRUE(allowed(rules, "network-outbound", spec.home + "/agent.sock"));
}

TEST(SeatbeltProfile, ARunTrialsWorkspaceInsideThePrivateRootIsGrantedBack) {
    auto spec = base_spec();
    spec.workspace = std::string{kRun} + "/workspace-1";
    spec.cwd = spec.workspace;
    check_profile("run_trial", spec);
    const auto rules = rules_of(profile_of(spec));
    EXPECT_TRUE(allowed(rules, "file-write-data", spec.workspace + "/out"));
    EXPECT_TRUE(allowed(rules, "network-outbound", spec.workspace + "/app.sock"));
    EXPECT_FALSE(allowed(rules, "file-read-data", std::string{kRun} + "/workspace-2/secret"));
}

TEST(SeatbeltProfile, AWithheldPathInsideAGrantStaysClosed) {
    auto spec = base_spec();
    // exec in the project itself: the evaluation folder lies inside the workspace, and a declared
    // system path overlaps the workspace.
    spec.withhold = {"/Users/dev/trial/ws/.tea"};
    spec.system_paths = {"/Users/dev/trial", "/Users/dev/trial/ws/vendor", "/opt/a", "/opt/a"};
    check_profile("withheld_in_grant", spec);
    const auto rules = rules_of(profile_of(spec));
    EXPECT_FALSE(allowed(rules, "file-read-data", "/Users/dev/trial/ws/.tea/contract.json"));
    EXPECT_FALSE(allowed(rules, "file-write-create", "/Users/dev/trial/ws/.tea/runs/x"));
    EXPECT_FALSE(allowed(rules, "network-outbound", "/Users/dev/trial/ws/.tea/s.sock"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/Users/dev/trial/ws/.teapot"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/Users/dev/trial/notes"));
}

TEST(SeatbeltProfile, OverlappingGrantsKeepTheNarrowestRule) {
    auto spec = base_spec();
    // A read-only grant inside the workspace (a private repository shown there), a read-only
    // grant outside it holding a withheld path, a read-only grant nested in another, and a system
    // path that is also a read-only grant.
    spec.read_only = {"/Users/dev/trial/ws/.git", "/opt/tools", "/opt/tools/share",
                      "/opt/verdict-rules"};
    spec.withhold = {"/Users/dev/project/.tea", "/opt/tools/secrets"};
    check_profile("overlapping_grants", spec);
    const auto rules = rules_of(profile_of(spec));
    // Positive controls: the workspace around the read-only grant stays writable, the grants read.
    EXPECT_TRUE(allowed(rules, "file-write-data", "/Users/dev/trial/ws/src/main.c"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/Users/dev/trial/ws/.git/HEAD"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/opt/tools/share/x"));
    EXPECT_TRUE(allowed(rules, "process-exec", "/opt/tools/bin/cc"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/opt/verdict-rules/r.json"));
    // The read-only grant inside the workspace stays unwritable, though the workspace is writable.
    EXPECT_FALSE(allowed(rules, "file-write-data", "/Users/dev/trial/ws/.git/HEAD"));
    EXPECT_FALSE(allowed(rules, "file-write-create", "/Users/dev/trial/ws/.git/hooks/pre-commit"));
    EXPECT_FALSE(allowed(rules, "file-write-unlink", "/Users/dev/trial/ws/.git/config"));
    EXPECT_FALSE(allowed(rules, "file-write-data", "/opt/tools/share/x"));
    EXPECT_FALSE(allowed(rules, "file-write-data", "/opt/verdict-rules/r.json"));
    // A withheld path inside a read-only grant stays closed, metadata included.
    EXPECT_FALSE(allowed(rules, "file-read-data", "/opt/tools/secrets/key"));
    EXPECT_FALSE(allowed(rules, "file-read-metadata", "/opt/tools/secrets/key"));
    EXPECT_FALSE(allowed(rules, "process-exec", "/opt/tools/secrets/run"));
}

TEST(SeatbeltProfile, ADirectoryHoldingAClosedPathCannotBeRenamedOutFromUnderIt) {
    auto spec = base_spec();
    // Seatbelt's rules name paths: `mv ws ~/ws` or `mv ws/a ws/z` would carry ws/a/b/.tea to a
    // path no rule closes, and ws/.git to one no rule keeps read-only.
    spec.withhold = {"/Users/dev/trial/ws/a/b/.tea", "/Users/dev/project/.git"};
    spec.read_only = {"/Users/dev/trial/ws/.git", std::string{kRun} + "/repository"};
    check_profile("pinned_directories", spec);
    const auto rules = rules_of(profile_of(spec));
    for (const char *dir : {"/Users/dev/trial/ws", "/Users/dev/trial/ws/a",
                            "/Users/dev/trial/ws/a/b", "/Users/dev/trial/ws/.git"}) {
        EXPECT_FALSE(allowed(rules, "file-write-unlink", dir)) << dir;
    }
    EXPECT_FALSE(allowed(rules, "file-write-unlink", "/Users/dev/trial/ws/a/b/.tea"));
    // Positive controls: beside and inside the pinned directories, files come and go as before.
    EXPECT_TRUE(allowed(rules, "file-write-unlink", "/Users/dev/trial/ws/a/other"));
    EXPECT_TRUE(allowed(rules, "file-write-unlink", "/Users/dev/trial/ws/a/b/c.txt"));
    EXPECT_TRUE(allowed(rules, "file-write-create", "/Users/dev/trial/ws/a/b/new"));
    EXPECT_TRUE(allowed(rules, "file-write-data", "/Users/dev/trial/ws/a/b/c.txt"));
    EXPECT_TRUE(allowed(rules, "file-write-unlink", "/Users/dev/trial/ws/z"));
    EXPECT_TRUE(allowed(rules, "file-write-unlink", spec.home + "/x"));
    // Exactly these are pinned: a closed path outside every writable grant pins nothing, since
    // nothing there can be renamed.
    std::vector<std::string> pinned;
    for (const auto &r : rules) {
        if (!r.allow && r.operations == std::vector<std::string>{"file-write-unlink"}) {
            for (const auto &f : r.filters) {
                pinned.push_back(f.kind + " " + f.path);
            }
        }
    }
    EXPECT_EQ(pinned, (std::vector<std::string>{"literal /Users/dev/trial/ws",
                                                "literal /Users/dev/trial/ws/a",
                                                "literal /Users/dev/trial/ws/a/b"}));
    // Without a closed path inside a writable grant, the workspace stays removable.
    EXPECT_TRUE(allowed(rules_of(profile_of(base_spec())), "file-write-unlink", spec.workspace));
}

TEST(SeatbeltProfile, EgressOpensTheShimsPortAndTheProxySocketOnly) {
    auto spec = base_spec();
    spec.egress.socket = std::string{kRun} + "/egress-1/proxy.sock";
    spec.egress.port = 40123;
    spec.egress.shim = "/usr/local/libexec/tea-evaluate/tea-egress-shim";
    check_profile("egress", spec);
    const auto plan = seatbelt_plan(Settings{}, spec);
    const std::vector<std::string> shim{spec.egress.shim, "--port",           "40123",
                                        "--socket",       spec.egress.socket, "--"};
    EXPECT_TRUE(std::equal(shim.begin(), shim.end(), plan.argv.begin() + 3));
    const auto rules = rules_of(plan.argv[2]);
    EXPECT_TRUE(allowed(rules, "network-outbound", spec.egress.socket));
    EXPECT_FALSE(allowed(rules, "network-outbound", std::string{kRun} + "/egress-1/other.sock"));
    EXPECT_FALSE(allowed(rules, "file-write-data", std::string{kRun} + "/egress-1/x"));
    EXPECT_NE(plan.argv[2].find("(allow network-outbound (remote ip \"localhost:40123\"))"),
              std::string::npos);
    // Without egress, no ip rule at all: the network is closed.
    EXPECT_EQ(profile_of(base_spec()).find("remote ip"), std::string::npos);
}

TEST(SeatbeltProfile, BridgeDirectoryIsWritableAndItsRelayGoesFirst) {
    auto spec = base_spec();
    spec.bridge.dir = std::string{kRun} + "/bridge-1";
    spec.bridge.relay = "/usr/local/libexec/tea-evaluate/tea-bridge-relay";
    check_profile("bridge", spec);
    const auto plan = seatbelt_plan(Settings{}, spec);
    EXPECT_EQ(plan.argv[3], spec.bridge.relay);
    EXPECT_EQ(plan.argv[5], spec.bridge.dir + "/bridge.sock");
}

TEST(SeatbeltProfile, PathsWithSpacesAndNonAsciiAreCarried) {
    auto spec = base_spec();
    spec.workspace = "/Users/dev/My Projects/été ws";
    spec.cwd = spec.workspace + "/src dir";
    spec.system_paths = {"/opt/règles et données"};
    check_profile("spaces_non_ascii", spec);
    const auto rules = rules_of(profile_of(spec));
    EXPECT_TRUE(allowed(rules, "file-write-data", "/Users/dev/My Projects/été ws/a b"));
    EXPECT_FALSE(allowed(rules, "file-write-data", "/Users/dev/My Projects/other"));
}

TEST(SeatbeltProfile, PathsAreWrittenNormalised) {
    auto spec = base_spec();
    spec.withhold = {"/Users/dev/project/./.tea/", "/Users/dev//project/x/../.git"};
    const auto rules = rules_of(profile_of(spec));
    EXPECT_FALSE(allowed(rules, "file-read-data", "/Users/dev/project/.tea/contract.json"));
    EXPECT_FALSE(allowed(rules, "file-read-data", "/Users/dev/project/.git/config"));
    EXPECT_EQ(profile_of(spec), profile_of(base_spec()));
}

TEST(SeatbeltProfile, GraderKeepsTheHostButCannotWriteWhatGradesIt) {
    auto spec = base_spec();
    spec.role = "grader";
    spec.read_only = {"/Users/dev/project/.tea", "/Users/dev/project/.git"};
    const auto plan = seatbelt_plan(Settings{}, spec);
    expect_golden("grader", plan.argv[2]);
    const auto rules = rules_of(plan.argv[2]);
    EXPECT_FALSE(allowed(rules, "file-write-data", "/Users/dev/project/.tea/runs/x"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/Users/dev/project/.tea/evaluator/e.py"));
    EXPECT_TRUE(allowed(rules, "file-write-data", "/Users/dev/project/src/x"));
}

// What the refusal says, or "" when the spec was taken.
std::string refusal(const LaunchSpec &spec) {
    try {
        (void)seatbelt_plan(Settings{}, spec);
    } catch (const std::exception &e) {
        return e.what();
    }
    return {};
}

TEST(SeatbeltProfile, HostilePathsAreRefusedWithExit12NamingThem) {
    for (const std::string &bad : {std::string{"/Users/dev/a\"b"}, std::string{"/Users/dev/a\\b"},
                                   std::string{"/Users/dev/a\nb"}, std::string{"/Users/dev/a\x01"},
                                   std::string{"/Users/dev/a'b"}}) {
        for (int field = 0; field < 3; ++field) {
            auto spec = base_spec();
            (field == 0   ? spec.system_paths[0]
             : field == 1 ? spec.withhold[0]
                          : spec.workspace) = bad;
            spec.cwd = spec.workspace;
            try {
                (void)seatbelt_plan(Settings{}, spec);
                ADD_FAILURE() << "taken: " << bad;
            } catch (const tea::sdk::Unavailable &e) {
                const std::string what = e.what();
                EXPECT_NE(what.find("/Users/dev/a"), std::string::npos) << what;
                EXPECT_NE(what.find("quote, a backslash or a control character"), std::string::npos)
                    << what;
            }
        }
    }
    auto spec = base_spec();
    spec.system_paths = {"/opt/\xff\xfe"};
    try {
        (void)seatbelt_plan(Settings{}, spec);
        ADD_FAILURE() << "a path that is not UTF-8 was taken";
    } catch (const tea::sdk::Unavailable &e) {
        EXPECT_NE(std::string{e.what()}.find("is not UTF-8"), std::string::npos) << e.what();
        EXPECT_NE(std::string{e.what()}.find("/opt/"), std::string::npos) << e.what();
    }
}

TEST(SeatbeltProfile, BadSpecsAreRefusedNamingThePath) {
    auto spec = base_spec();
    spec.egress.socket = std::string{kRun} + "/egress-1/proxy.sock";
    spec.egress.shim = "/usr/local/libexec/tea-evaluate/tea-egress-shim";
    spec.egress.port = 0;
    EXPECT_NE(refusal(spec).find("egress.port: 0"), std::string::npos) << refusal(spec);
    EXPECT_NE(refusal(spec).find(spec.egress.socket), std::string::npos) << refusal(spec);

    spec = base_spec();
    spec.egress.socket = "/private/tmp/proxy.sock";
    spec.egress.shim = "/usr/local/libexec/tea-evaluate/tea-egress-shim";
    spec.egress.port = 8080;
    EXPECT_NE(refusal(spec).find("/private/tmp/proxy.sock must lie in a private directory"),
              std::string::npos)
        << refusal(spec);

    spec = base_spec();
    spec.home = "/Users/dev/project/.tea/home";
    EXPECT_NE(refusal(spec).find("lies inside the withheld path /Users/dev/project/.tea"),
              std::string::npos)
        << refusal(spec);

    spec = base_spec();
    spec.env.push_back("TMPDIR=/Users/dev/project/.tea/tmp");
    EXPECT_NE(refusal(spec).find("TMPDIR (/Users/dev/project/.tea/tmp)"), std::string::npos)
        << refusal(spec);

    spec = base_spec();
    spec.home = spec.workspace + "/home";
    EXPECT_NE(refusal(spec).find("lies inside the workspace"), std::string::npos) << refusal(spec);

    spec = base_spec();
    spec.read_only_over.push_back({std::string{kRun} + "/repository", spec.workspace + "/.git"});
    EXPECT_NE(refusal(spec).find(spec.workspace + "/.git"), std::string::npos) << refusal(spec);

    // The login link Linux shows in the home has no Seatbelt form: the token route is named.
    spec = base_spec();
    spec.login_files.push_back({".claude/.credentials.json", "{}"});
    EXPECT_NE(refusal(spec).find(spec.home + "/.claude/.credentials.json"), std::string::npos)
        << refusal(spec);
    EXPECT_NE(refusal(spec).find("CLAUDE_CODE_OAUTH_TOKEN"), std::string::npos) << refusal(spec);

    spec = base_spec();
    spec.identity = LaunchSpec::Identity{70001, 70001};
    EXPECT_NE(refusal(spec).find("uid_range"), std::string::npos) << refusal(spec);

    spec = base_spec();
    spec.cwd = "/Users/dev/elsewhere";
    EXPECT_NE(refusal(spec).find("/Users/dev/elsewhere lies outside the workspace"),
              std::string::npos)
        << refusal(spec);

    spec = base_spec();
    spec.argv.clear();
    EXPECT_NE(refusal(spec).find("no argv"), std::string::npos);
}

TEST(SeatbeltProfile, TheTargetsEnvironmentIsTheSpecsButForWhatTheConfinementOwns) {
    const auto spec = base_spec();
    const auto plan = seatbelt_plan(Settings{}, spec);
    const std::vector<std::string> expected{"PATH=/usr/bin:/bin",
                                            "PWD=" + spec.cwd,
                                            "HOME=" + spec.home,
                                            "XDG_CONFIG_HOME=" + spec.home + "/.config",
                                            "XDG_CACHE_HOME=" + spec.home + "/.cache",
                                            "XDG_DATA_HOME=" + spec.home + "/.local/share",
                                            "TMPDIR=" + spec.temp_dir,
                                            "TMP=" + spec.temp_dir,
                                            "TEMP=" + spec.temp_dir};
    EXPECT_EQ(plan.env, expected);
    EXPECT_EQ(plan.confinement, "seatbelt");
    EXPECT_EQ(plan.cwd, spec.cwd);
}

// Both plans start sandbox-exec in a session of its own (ABI 1.10's newSession): without a pid
// namespace, nothing else takes the runtime's controlling terminal away from the target.
TEST(SeatbeltPlan, BothPlansAskForASessionOfTheirOwn) {
    auto spec = base_spec();
    const auto target = seatbelt_plan(Settings{}, spec);
    EXPECT_TRUE(target.child.new_session);
    EXPECT_EQ(tea::documents::exec_plan_to_json(target).value("newSession", false), true);
    spec.role = "grader";
    EXPECT_TRUE(seatbelt_plan(Settings{}, spec).child.new_session);
}

TEST(SeatbeltPlan, LimitsAreTheSpecsOrElseTheBackendsAsUnderBubblewrap) {
    auto spec = base_spec();
    // Nothing in the spec: the backend's defaults, the bubblewrap backend's own.
    auto limits = seatbelt_plan(Settings{}, spec).child.limits;
    EXPECT_EQ(limits.cpu_seconds, 3600U);
    EXPECT_EQ(limits.file_size_bytes, std::uint64_t{4} << 30U);
    EXPECT_EQ(limits.processes, 0U);
    // The spec's win; the table's stand where the spec sets none.
    const auto settings = parse_settings(
        R"({"sandbox_exec":"/opt/sbx","cpu_seconds":60,"file_size_bytes":1048576,"processes":512})");
    EXPECT_EQ(settings.sandbox_exec, "/opt/sbx");
    spec.limits.cpu_seconds = 77;
    limits = seatbelt_plan(settings, spec).child.limits;
    EXPECT_EQ(limits.cpu_seconds, 77U);
    EXPECT_EQ(limits.file_size_bytes, 1048576U);
    EXPECT_EQ(limits.processes, 512U);
    for (const std::string &bad :
         {std::string{R"({"cpu_seconds":-1})"}, std::string{R"({"processes":"many"})"},
          std::string{R"({"file_size_bytes":1.5})"},
          std::string{R"({"sandbox_exec":"sandbox-exec"})"}, std::string{R"({"memory":1})"},
          std::string{"[]"}}) {
        EXPECT_THROW((void)parse_settings(bad), tea::sdk::Invalid) << bad;
    }
}

TEST(SbplChecker, FindsAnAllowThatReopensADeny) {
    const auto rules = rules_of(
        "(version 1)\n(deny default)\n(deny file-read* (subpath \"/w/.tea\"))\n"
        "(allow file-read-data (subpath \"/w\"))\n(allow file-read* (literal \"/w/.tea/x\"))\n"
        "(allow network-outbound (remote unix-socket (subpath \"/w/.tea\")))\n");
    const auto found = reopened(rules, {});
    ASSERT_EQ(found.size(), 2U);
    EXPECT_NE(found[0].find("allows /w after rule 1 denied /w/.tea"), std::string::npos);
    EXPECT_NE(found[1].find("allows /w/.tea/x"), std::string::npos);
    EXPECT_EQ(reopened(rules, {"/w/.tea/x"}).size(), 1U);
    EXPECT_FALSE(allowed(rules, "file-read-data", "/elsewhere"));
    EXPECT_TRUE(allowed(rules, "file-read-data", "/w/.tea/y"));  // the broad allow came last
}

TEST(SbplChecker, RefusesWhatDoesNotParse) {
    for (const std::string &bad :
         {std::string{"(version 1)\n(allow file-read* (literal \"/a\")"},
          std::string{"(version 1))"}, std::string{"(version 1)(allow file-read* (literal \"/a))"},
          std::string{"(allow default)"}, std::string{"(version 1)(permit x)"},
          std::string{"(version 1)(allow (literal \"/a\"))"},
          std::string{"(version 1)(allow file-read* (literal \"/a\\\"b\"))"}}) {
        EXPECT_THROW((void)rules_of(bad), test::SbplError) << bad;
    }
}

}  // namespace
}  // namespace tea::seatbelt
