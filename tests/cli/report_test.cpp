// tea-evaluate report end to end: the pages of real runs (the quickstart, the leaky target) and of
// hostile records, loaded in a real browser (Debian's headless Chromium, which
// scripts/install-deps.sh installs) whose DOM after load is checked: the verdict and the listed
// paths are there, and no script from a record ran. A control page holding the same payload
// unescaped shows that the probe sees a script that runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tea/bytes.hpp>
#include <vector>

#include "cli/project_fixture.hpp"
#include "report/page.hpp"
#include "support/process.hpp"

namespace tea {
namespace {

constexpr const char *kChromium = "/usr/bin/chromium";

// What a record may hold to take over a page that shows it unescaped: each payload, once run,
// marks the document's root with the attribute data-pwned (whose name the escaped text holds too,
// but never followed by '="').
const std::string kPayload =
    "<script>document.documentElement.setAttribute('data-pwned','script')</script>"
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">"
    "\"'><svg onload=\"document.documentElement.setAttribute('data-pwned','svg')\">";

// The page's DOM after Chromium loaded it (scripts on, as a person opens it), or "" with the
// reason in *why.
std::string dom_of(const fs::path &page, const fs::path &scratch, std::string *why) {
    if (::access(kChromium, X_OK) != 0) {
        *why = std::string{kChromium} + " is missing: scripts/install-deps.sh installs chromium";
        return {};
    }
    const auto o = test::run(
        {"/usr/bin/timeout", "120", kChromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--user-data-dir=" + (scratch / "chromium").string(),
         "--virtual-time-budget=2000", "--dump-dom", "file://" + page.string()},
        test::environment_with({"HOME=" + scratch.string()}));
    if (o.status != 0 || o.out.find("</html>") == std::string::npos) {
        *why = "chromium exited " + std::to_string(o.status) + ": " + o.err.substr(0, 2000);
        return {};
    }
    return o.out;
}

// A screenshot of the page, kept in the build tree as the CI's artifact.
void screenshot(const fs::path &page, const fs::path &scratch, const std::string &name) {
    const fs::path out = TEA_SCREENSHOT_DIR;
    fs::create_directories(out);
    const auto o =
        test::run({"/usr/bin/timeout", "120", kChromium, "--headless", "--no-sandbox",
                   "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                   "--user-data-dir=" + (scratch / "chromium").string(), "--window-size=1280,1600",
                   "--screenshot=" + (out / (name + ".png")).string(), "file://" + page.string()},
                  test::environment_with({"HOME=" + scratch.string()}));
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_TRUE(fs::exists(out / (name + ".png")));
}

TEST(Report, TheQuickstartsPageShowsItsPassInABrowser) {
    Project p{"report-pass"};
    p.copy_example("quickstart");
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto report = p.tea({"--json", "report", p.eval().string()});
    ASSERT_EQ(report.status, 0) << report.err;
    const auto line = json::parse(report.out, nullptr, false);
    ASSERT_TRUE(line.is_object()) << report.out;
    EXPECT_EQ(line.value("report", ""), (dir / "report.html").string());
    // The page is the records' view, not a record: score.json stays score's to write.
    EXPECT_FALSE(fs::exists(dir / "score.json"));
    const auto page = test::read_file((dir / "report.html").string());
    // Self-contained: nothing on the page is fetched from anywhere.
    for (const char *link : {"http://", "https://", "src=\"", "href=\"", "@import", "url("}) {
        EXPECT_EQ(page.find(link), std::string::npos) << link;
    }
    std::string why;
    const auto dom = dom_of(dir / "report.html", p.root().parent_path(), &why);
    ASSERT_FALSE(dom.empty()) << why;
    EXPECT_NE(dom.find("<h1 id=\"verdict\">PASS</h1>"), std::string::npos) << dom.substr(0, 3000);
    EXPECT_NE(dom.find("count-file"), std::string::npos);
    // The page's own script ran (the policy lets it, by its hash): it shows the filter box.
    EXPECT_NE(dom.find("<input id=\"filter\" type=\"search\" placeholder"), std::string::npos);
    EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos);
    screenshot(dir / "report.html", p.root().parent_path(), "quickstart");
}

TEST(Report, TheLeakyTargetsPageNamesEachPathAndTheInvalidVerdict) {
    Project p{"report-leaky"};
    p.copy_example("leaky-target");
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 3) << run.err;
    const auto dir = run_dir_of(run);
    const auto report = p.tea({"report", dir.string(), "-o", (dir / "leaky.html").string()});
    ASSERT_EQ(report.status, 0) << report.err;
    std::string why;
    const auto dom = dom_of(dir / "leaky.html", p.root().parent_path(), &why);
    ASSERT_FALSE(dom.empty()) << why;
    EXPECT_NE(dom.find("<h1 id=\"verdict\">INVALID</h1>"), std::string::npos);
    EXPECT_NE(dom.find("mount outside allowlist: " + p.eval().string()), std::string::npos);
    EXPECT_NE(dom.find("<td class=\"path bad\">" + p.eval().string() + "</td>"), std::string::npos);
    EXPECT_NE(dom.find("access to always-listed"), std::string::npos);
    screenshot(dir / "leaky.html", p.root().parent_path(), "leaky-target");
}

// A run's folder written by hand: records holding markup, quotes, controls, bidirectional
// overrides and bytes that are not UTF-8, a 10 MB output, an output file named outside the run,
// and a fifo where an output file should be.
fs::path hostile_run(const fs::path &base) {
    fs::path dir = base / "runs" / "20261206T000000.000000Z-hostil";
    fs::create_directories(dir / "trials" / "1" / "calls");
    const std::string non_utf8 = std::string{"/srv/\xff\xfe"} + kPayload;
    json call{{"probe", kPayload},
              {"entry", "e\"'<b>"},
              {"executable", kPayload},
              {"args", {kPayload, "\x1b[31mred\xe2\x80\xae"}},
              {"status", 0},
              {"elapsedMs", 12.5},
              {"stdout", "calls/01.stdout"},
              {"stdoutBytes", std::size_t{10} << 20U},
              {"stderr", "../../../../../../etc/passwd"},
              {"stderrBytes", 10},
              {"observedMounts", {kPayload}},
              {"audit",
               {{"audited", true},
                {"complete", true},
                {"observer", kPayload},
                {"findings",
                 {{{"path", {{"base64", bytes::base64_encode(non_utf8)}}},
                   {"reason", kPayload},
                   {"syscalls", {kPayload}},
                   {"count", 1},
                   {"refused", false}}}}}}};
    json call2 = call;
    call2["stdout"] = "calls/02.fifo";
    json run{{"schemaVersion", 1},
             {"runId", "20261206T000000.000000Z-hostil"},
             {"status", "complete"},
             {"confinement", kPayload},
             {"summary", std::string(std::size_t{3} << 20U, 'S')},
             {"trialCount", 1},
             {"trials",
              {{{"index", 1},
                {"observedMountsChannel", "complete"},
                {"observedMounts", {kPayload}},
                {"calls", {call, call2}},
                {"verdict", {{"verdict", "pass"}, {"reasons", {kPayload}}}}}}}};
    std::ofstream{dir / "run.json"} << run.dump();
    std::ofstream{dir / "manifest.json"}
        << json{{"observedMounts", {{{"path", kPayload}, {"reason", kPayload}}}},
                {"forbiddenInputs", {{{"input", kPayload}, {"note", kPayload}}}}}
               .dump();
    std::string big(std::size_t{10} << 20U, 'x');
    big.replace(0, kPayload.size(), kPayload);
    std::ofstream{dir / "trials" / "1" / "calls" / "01.stdout"} << big;
    EXPECT_EQ(::mkfifo((dir / "trials" / "1" / "calls" / "02.fifo").c_str(), 0600), 0);
    return dir;
}

TEST(Report, HostileRecordsMakeAnInertPageOfBoundedSize) {
    const fs::path base = test::make_temp_dir("tea-report-hostile");
    const auto dir = hostile_run(base);
    const auto report =
        test::run({"/usr/bin/timeout", "60", TEA_EVALUATE_BIN, "report", dir.string()},
                  test::environment_with({}));
    // The fifo named as an output file is not read (it would block): the command ends.
    ASSERT_EQ(report.status, 0) << report.err;
    const auto page = test::read_file((dir / "report.html").string());
    // Bounded: a 10 MB output and a 3 MB summary are cut to their excerpts.
    EXPECT_LT(page.size(), std::size_t{256} * 1024);
    EXPECT_NE(page.find("more bytes were written"), std::string::npos);
    // Nothing outside the run is shown, though a record names it.
    EXPECT_EQ(page.find("root:x:0:0"), std::string::npos);
    EXPECT_NE(page.find("cannot be read"), std::string::npos);
    // The page's own script is the only one; every payload is text.
    std::size_t scripts = 0;
    for (auto at = page.find("<script"); at != std::string::npos;
         at = page.find("<script", at + 1)) {
        ++scripts;
    }
    EXPECT_EQ(scripts, 1U);
    EXPECT_EQ(page.find("<img"), std::string::npos);
    EXPECT_EQ(page.find("<svg onload"), std::string::npos);
    EXPECT_NE(page.find("&lt;script&gt;"), std::string::npos);
    // Bytes a page could be made to misread are shown as escapes.
    EXPECT_NE(page.find("/srv/\\xff\\xfe"), std::string::npos);
    EXPECT_NE(page.find("\\x1b[31mred\\u{202e}"), std::string::npos);
    std::string why;
    const auto dom = dom_of(dir / "report.html", base, &why);
    ASSERT_FALSE(dom.empty()) << why;
    EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos) << "a record's script ran";
    EXPECT_NE(dom.find("<h1 id=\"verdict\">INVALID</h1>"), std::string::npos);

    // The control: the same payload written into a page unescaped runs, and the probe sees it.
    const auto control = base / "control.html";
    std::ofstream{control} << "<!DOCTYPE html><html><body><p>" << kPayload << "</p></body></html>";
    const auto control_dom = dom_of(control, base, &why);
    ASSERT_FALSE(control_dom.empty()) << why;
    EXPECT_NE(control_dom.find("data-pwned=\""), std::string::npos) << control_dom;
    std::error_code ec;
    fs::remove_all(base, ec);
}

// Records shaped to break the command rather than the page: a trial folder that is a link out of
// the run, an output file with a second name elsewhere, numbers past any integer, a huge run id,
// tens of thousands of trials and artifacts, nesting deeper than any record.
TEST(Report, HostileRecordStructuresNeitherEscapeTheRunNorGrowThePage) {
    const fs::path base = test::make_temp_dir("tea-report-shapes");
    const fs::path dir = base / "runs" / "20261206T000000.000000Z-shapes";
    fs::create_directories(dir / "trials" / "2" / "calls");
    // Trial 1's folder leads to /etc, and trial 2's output is a second name of a file outside.
    fs::create_directory_symlink("/etc", dir / "trials" / "1");
    test::write_file((base / "secret.txt").string(), "the grading key\n");
    ASSERT_EQ(::link((base / "secret.txt").c_str(), (dir / "trials/2/calls/01.stdout").c_str()), 0);
    json trials = json::array();
    trials.push_back(
        {{"index", 1}, {"calls", {{{"probe", "p"}, {"stdout", "passwd"}, {"stdoutBytes", 1e30}}}}});
    trials.push_back({{"index", 2}, {"calls", {{{"probe", "p"}, {"stdout", "calls/01.stdout"}}}}});
    json artifacts = json::object();
    for (int i = 0; i < 600; ++i)
        artifacts["e" + std::to_string(i)] = {{"a", {{"status", "copied"}}}};
    for (int i = 3; i < 1300; ++i) {
        trials.push_back({{"index", i},
                          {"artifacts", i == 3 ? artifacts : json::object()},
                          {"calls", {{{"probe", std::string(1000, 'p')}, {"elapsedMs", 1}}}}});
    }
    std::ofstream{dir / "run.json"} << json{
        {"runId", std::string(2 << 20, 'R')},
        {"status", "complete"},
        {"trials", trials}}.dump();
    const auto report =
        test::run({"/usr/bin/timeout", "120", TEA_EVALUATE_BIN, "report", dir.string()},
                  test::environment_with({}));
    ASSERT_EQ(report.status, 0) << report.err;
    const auto page = test::read_file((dir / "report.html").string());
    EXPECT_LT(page.size(), std::size_t{4} << 20U);
    EXPECT_EQ(page.find("root:x:0:0"), std::string::npos);
    EXPECT_EQ(page.find("the grading key"), std::string::npos);
    EXPECT_NE(page.find("a hard link"), std::string::npos);
    EXPECT_NE(page.find("1000000000000000000 bytes written"), std::string::npos);
    EXPECT_NE(page.find("299 more trials not shown"), std::string::npos);
    EXPECT_NE(page.find("More artifacts are not shown"), std::string::npos);
    EXPECT_LT(page.find("</title>"), std::size_t{2000});

    // Within every other bound, paths whose escapes pass the page's own (each '<' is four bytes
    // on the page): it stops and says so.
    json findings = json::array();
    for (int i = 0; i < 600; ++i) {
        findings.push_back({{"path", "/" + std::to_string(i) + std::string(2000, '<')},
                            {"reason", "read outside the grants"}});
    }
    json call{{"probe", "p"}, {"audit", {{"audited", true}, {"findings", findings}}}};
    std::ofstream{dir / "run.json", std::ios::trunc}
        << json{{"runId", "r"},
                {"trials", {{{"index", 1}, {"calls", json::array({call, call, call, call})}}}}}
               .dump();
    ASSERT_EQ(
        test::run({TEA_EVALUATE_BIN, "report", dir.string()}, test::environment_with({})).status,
        0);
    const auto stopped = test::read_file((dir / "report.html").string());
    EXPECT_NE(stopped.find("The page stops here"), std::string::npos);
    EXPECT_LT(stopped.size(), std::size_t{17} << 20U);

    // The control: nesting of 300 levels, deeper than the MCP client lets a server's answer nest
    // (256) yet within the bound, is read as a record.
    std::ofstream{dir / "run.json", std::ios::trunc} << "{\"args\": " << std::string(300, '[')
                                                     << std::string(300, ']') << "}";
    ASSERT_EQ(
        test::run({TEA_EVALUATE_BIN, "report", dir.string()}, test::environment_with({})).status,
        0);
    EXPECT_EQ(test::read_file((dir / "report.html").string()).find("nested deeper"),
              std::string::npos);
    // Nested deeper than any record: refused as torn, not followed down the stack.
    std::ofstream{dir / "run.json", std::ios::trunc} << "{\"args\": " << std::string(200000, '[')
                                                     << std::string(200000, ']') << "}";
    const auto deep =
        test::run({TEA_EVALUATE_BIN, "report", dir.string()}, test::environment_with({}));
    ASSERT_EQ(deep.status, 0) << deep.err;
    EXPECT_NE(test::read_file((dir / "report.html").string()).find("nested deeper"),
              std::string::npos);
    const auto score =
        test::run({TEA_EVALUATE_BIN, "score", dir.string()}, test::environment_with({}));
    EXPECT_EQ(score.status, 3) << score.err;
    // -o naming no file is a usage error, not a crash.
    const auto empty_out =
        test::run({TEA_EVALUATE_BIN, "report", dir.string(), "-o", ""}, test::environment_with({}));
    EXPECT_EQ(empty_out.status, 2) << empty_out.err;
    std::error_code ec;
    fs::remove_all(base, ec);
}

// The page's policy holds on its own: markup written into a page's body unescaped (as a gap in
// the escaping would) does not run. The control is the same body without the page's frame.
TEST(Report, ThePolicyAloneKeepsMarkupInTheBodyFromRunning) {
    const fs::path base = test::make_temp_dir("tea-report-policy");
    const auto framed = base / "framed.html";
    std::ofstream{framed} << report::page("policy", "<p>" + kPayload + "</p>");
    std::string why;
    const auto dom = dom_of(framed, base, &why);
    ASSERT_FALSE(dom.empty()) << why;
    EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos) << dom;
    // The control: the same body in a page without the frame's policy runs.
    const auto bare = base / "bare.html";
    std::ofstream{bare} << "<!DOCTYPE html><html><body><p>" << kPayload << "</p></body></html>";
    const auto bare_dom = dom_of(bare, base, &why);
    ASSERT_FALSE(bare_dom.empty()) << why;
    EXPECT_NE(bare_dom.find("data-pwned=\""), std::string::npos) << bare_dom;
    std::error_code ec;
    fs::remove_all(base, ec);
}

TEST(Report, ATornRunStillGetsAPageThatSaysSoAndAMissingOneIsAUsageError) {
    const fs::path base = test::make_temp_dir("tea-report-torn");
    const fs::path dir = base / "runs" / "20261206T000000.000000Z-torned";
    fs::create_directories(dir);
    std::ofstream{dir / "run.json"} << "{\"runId\": \"20261206T0";
    const auto report =
        test::run({TEA_EVALUATE_BIN, "report", dir.string()}, test::environment_with({}));
    ASSERT_EQ(report.status, 0) << report.err;
    const auto page = test::read_file((dir / "report.html").string());
    EXPECT_NE(page.find("<h1 id=\"verdict\">INVALID</h1>"), std::string::npos);
    EXPECT_NE(page.find("run.json is not a JSON object"), std::string::npos);
    EXPECT_NE(page.find("manifest.json is missing or torn"), std::string::npos);
    const auto missing = test::run({TEA_EVALUATE_BIN, "report", (base / "nothing").string()},
                                   test::environment_with({}));
    EXPECT_EQ(missing.status, 2) << missing.err;
    EXPECT_NE(missing.err.find("is not a run directory"), std::string::npos) << missing.err;
    std::error_code ec;
    fs::remove_all(base, ec);
}

TEST(Report, AQualificationsPageDecidesEachArmFromItsRecords) {
    Project p{"report-qualify"};
    p.copy_example("quickstart");
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto run_id = run_dir_of(run).filename().string();
    const auto folder = p.eval() / "runs" / "qualify-20261206T000000.000000Z-abcdef";
    fs::create_directories(folder);
    std::ofstream{folder / "qualification.json"}
        << json{{"qualificationId", "20261206T000000.000000Z-abcdef"},
                {"verdict", "qualified"},
                {"mutationScore", {{"detected", 3}, {"total", 3}}},
                {"undetected", {"off-by-one", kPayload}},
                {"reasons", {"mutation off-by-one was not detected"}},
                {"arms",
                 {{{"conditionArm", "baseline"}, {"runId", run_id}},
                  {{"conditionArm", "mutated"}, {"mutation", "m"}, {"runId", "../../../etc"}}}}}
               .dump();
    const auto report = p.tea({"report", folder.string()});
    ASSERT_EQ(report.status, 0) << report.err;
    std::string why;
    const auto dom = dom_of(folder / "report.html", p.root().parent_path(), &why);
    ASSERT_FALSE(dom.empty()) << why;
    // The record claims "qualified", 3 of 3; its arms' records say otherwise, and the page says
    // what they say (the mutated arm names no run, so it is Invalid).
    EXPECT_NE(dom.find("<h1 id=\"verdict\">invalid</h1>"), std::string::npos);
    EXPECT_NE(dom.find("qualification.json says \"qualified\""), std::string::npos);
    EXPECT_NE(dom.find("qualification.json claims 3 of 3"), std::string::npos);
    EXPECT_NE(dom.find("Mutations detected and undetected"), std::string::npos);
    EXPECT_NE(dom.find("the arm names no run"), std::string::npos);  // never a path from a record
    EXPECT_NE(dom.find(run_id + "</code></td><td>pass</td>"), std::string::npos);
    EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos);
}

}  // namespace
}  // namespace tea
