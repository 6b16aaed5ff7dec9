// The documents the real tea-evaluate and the real plugins exchange, as a recorder between them
// (tests/fixtures/fixture_recorder_plugin.cpp) writes them down: each is valid against its JSON
// Schema in docs/schema/, and the sample documents in docs/plugin-authoring.md are exactly what
// these calls produce, their run-specific parts normalised, so the samples cannot go stale.
//
// When the documents change on purpose, rewrite the samples with
//   TEA_UPDATE_DOC_SAMPLES=1 build/release/bin/plugin_documents_test
// and review the change in docs/plugin-authoring.md.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tea/plugin.h>
#include <tea_fixtures.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <tea/documents.hpp>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/json_schema.hpp"
#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource{TEA_SOURCE_DIR};
const fs::path kDoc = kSource / "docs" / "plugin-authoring.md";

std::string read_text(const fs::path &path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// One document as a recorder wrote it: "<NNN>-<operation>-<in|out>.json".
struct Recorded {
    std::string name;
    json doc;
};

// The documents of one call, in the order they crossed.
struct Recording {
    std::vector<Recorded> documents;

    // Every document of `operation` and direction `way`, in order.
    [[nodiscard]] std::vector<json> all(const std::string &operation,
                                        const std::string &way) const {
        std::vector<json> out;
        for (const auto &d : documents) {
            if (d.name.find("-" + operation + "-" + way + ".json") != std::string::npos) {
                out.push_back(d.doc);
            }
        }
        return out;
    }
    // The last prepare whose spec runs `argv0`, with the plan it got: the call's own, not the
    // observer's confirmation.
    [[nodiscard]] std::pair<json, json> prepare_of(const std::string &argv0, bool staged) const {
        const auto specs = all("prepare", "in");
        const auto plans = all("prepare", "out");
        std::pair<json, json> found;
        for (std::size_t i = 0; i < specs.size() && i < plans.size(); ++i) {
            if (specs[i]["argv"][0] == argv0 && specs[i].value("staged", false) == staged) {
                found = {specs[i], plans[i]};
            }
        }
        return found;
    }
};

class Documents : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (IsSkipped()) {
            return;
        }
        if (::geteuid() != 0) {
            GTEST_SKIP() << "the sample documents are of a call run as root";
        }
        // The sample target, in the workspace: granted, and the same path on every host.
        fs::copy_file(TEA_SAMPLE_TARGET_BIN, workspace() / "sample");
        fs::permissions(workspace() / "sample", fs::perms{0755});
        const auto dir = base() / "plugins.d";
        fs::create_directories(dir);
        for (const auto &[name, kind, library] :
             {std::tuple{"recorder-backend", "backend", TEA_FIXTURE_RECORDER_BACKEND},
              std::tuple{"recorder-observer", "observer", TEA_FIXTURE_RECORDER_OBSERVER}}) {
            make_file(dir / (std::string{name} + ".toml"),
                      std::string{"name = \""} + name + "\"\nkind = \"" + kind + "\"\nabi = \"" +
                          std::to_string(TEA_ABI_MAJOR) + "." + std::to_string(TEA_ABI_MINOR) +
                          "\"\nlibrary = \"" + library + "\"\n",
                      0644);
        }
    }

    // `tea-evaluate exec --clean-env OPTIONS -- COMMAND` with the recorders in front of
    // `backend` (a plugin library of the build) and the strace observer.
    Recording record(const std::vector<std::string> &options,
                     const std::vector<std::string> &command,
                     const std::string &backend = TEA_BUBBLEWRAP_PLUGIN) {
        const auto dir = base() / ("record-" + std::to_string(++recordings_));
        fs::create_directories(dir);
        Call call;
        call.command = command;
        call.withhold = {withheld().string()};
        call.options = {"--clean-env", "--backend", "recorder-backend"};
        call.options.insert(call.options.end(), options.begin(), options.end());
        if (std::find(options.begin(), options.end(), "--observer") == options.end()) {
            call.options.insert(call.options.end(), {"--observer", "recorder-observer"});
        }
        call.exact_env =
            std::vector<std::string>{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/root",
                                     "XDG_CONFIG_HOME=/nonexistent-tea-bwt-config",
                                     "TEA_EVALUATE_PRIVATE_ROOT=" + private_root().string()};
        call.config = "[plugins]\npaths = [\"" + (base() / "plugins.d").string() +
                      "\"]\n[plugin.recorder-backend]\nlibrary = \"" + backend + "\"\nrecord = \"" +
                      dir.string() +
                      "\"\n[plugin.recorder-observer]\nlibrary = \"" TEA_STRACE_PLUGIN
                      "\"\nrecord = \"" +
                      dir.string() + "\"\n";
        const auto result = run(call);
        EXPECT_EQ(result.status, 0) << result;
        Recording out;
        std::vector<fs::path> files;
        for (const auto &entry : fs::directory_iterator{dir}) {
            files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        for (const auto &f : files) {
            out.documents.push_back({f.filename().string(), json::parse(read_text(f))});
        }
        return out;
    }

    // Makes the workspace the root of a git repository with one commit (the withheld folder
    // included, as a project keeps its evaluation folder).
    void make_repository() {
        const auto env = std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=/nonexistent",
                                                  "GIT_CONFIG_NOSYSTEM=1"};
        const auto ws = workspace().string();
        for (const auto &argv : std::vector<std::vector<std::string>>{
                 {"git", "-C", ws, "init", "-q", "-b", "main"},
                 {"git", "-C", ws, "add", "-A"},
                 {"git", "-C", ws, "-c", "user.name=Sample", "-c", "user.email=sample@example.org",
                  "commit", "-q", "-m", "sample"}}) {
            const auto o = tea::test::run(argv, env);
            ASSERT_EQ(o.status, 0) << o.err;
        }
    }

    // The same document with what differs from host to host replaced by fixed text, in every
    // string of it (NUL-separated lists included): the test's directories by the places a
    // default installation uses, the sandbox account's ids by 999, the seccomp program by a name
    // for it, and the host's socket masks left out.
    json normalised(json doc) const {
        const auto prefix = fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path().string();
        const std::vector<std::pair<std::string, std::string>> places{
            {workspace().string(), "/srv/project"},
            {private_root().string(), "/var/lib/tea-evaluate"},
            {prefix, "/usr"},
        };
        const auto uid = std::to_string(sandbox_uid());
        const auto gid = std::to_string(sandbox_gid());
        // A build tree under the host's /tmp is bound back into the view (a prefix an
        // installation never has there): that bind is the host's, not the sample's.
        const std::string prefix_bind =
            std::string{"--ro-bind"} + '\0' + prefix + '\0' + prefix + '\0';
        const auto text = [&](std::string s) {
            for (auto at = s.find(prefix_bind); at != std::string::npos; at = s.find(prefix_bind)) {
                s.erase(at, prefix_bind.size());
            }
            for (const auto &[from, to] : places) {
                for (std::size_t at = s.find(from); at != std::string::npos;
                     at = s.find(from, at + to.size())) {
                    s.replace(at, from.size(), to);
                }
            }
            return drop_socket_masks(s);
        };
        walk(doc, text);
        replace_ids(doc, uid, gid);
        // An observation's processes, numbered 4001, 4002, ... in the order they first appear.
        if (doc.is_object() && doc.contains("events") && doc["events"].is_array()) {
            std::map<int, int> numbers;
            for (auto &event : doc["events"]) {
                const auto pid = event["pid"].get<int>();
                event["pid"] =
                    numbers.emplace(pid, 4001 + static_cast<int>(numbers.size())).first->second;
            }
        }
        return doc;
    }

    // The sample as the guide shows it: normalised, indented, and each random name replaced by
    // one letter repeated, A for the first distinct one, B for the next, so that a reader still
    // sees which paths share a directory.
    std::string sample_text(const json &doc) const {
        const auto text = normalised(doc).dump(2);
        const std::regex random{
            "(run|tmp|tea-evaluate-target-home|trace|repository|egress)-"
            "([A-Za-z0-9]{6,})"};
        std::map<std::string, char> letters;
        std::string out;
        auto last = text.cbegin();
        for (auto it = std::sregex_iterator(text.begin(), text.end(), random);
             it != std::sregex_iterator(); ++it) {
            const auto &m = *it;
            const auto token = m[2].str();
            const auto at =
                letters.emplace(token, static_cast<char>('A' + letters.size() % 26)).first;
            out.append(last, m[0].first);
            out += m[1].str() + "-" + std::string(token.size(), at->second);
            last = m[0].second;
        }
        out.append(last, text.cend());
        return out;
    }

   private:
    // Every string in `doc` through `fn`; a byte string that is not UTF-8 stays as it is.
    template <class Fn>
    static void walk(json &doc, const Fn &fn) {
        if (doc.is_string()) {
            doc = fn(doc.get<std::string>());
        } else if (doc.is_object() && doc.contains("base64") && doc.size() == 1) {
            // The seccomp program, the one binary file of the plans.
            doc = "<the seccomp program>";
        } else if (doc.is_structured()) {
            for (auto &item : doc) {
                walk(item, fn);
            }
        }
    }

    // The sandbox account's ids, wherever the plans carry them: their own fields, the view
    // builder's and the helper's options, the report.
    void replace_ids(json &doc, const std::string &uid, const std::string &gid) const {
        if (doc.is_object()) {
            for (auto &[key, value] : doc.items()) {
                if ((key == "uid" || key == "sandboxUid") && value == sandbox_uid()) {
                    value = 999;
                } else if ((key == "gid" || key == "sandboxGid") && value == sandbox_gid()) {
                    value = 999;
                } else if (key == "socketsMasked") {
                    value = 0;  // the masks are left out (drop_socket_masks)
                } else {
                    replace_ids(value, uid, gid);
                }
            }
        } else if (doc.is_array()) {
            for (std::size_t i = 0; i < doc.size(); ++i) {
                if (i > 0 && doc[i].is_string() && doc[i - 1].is_string() &&
                    (doc[i - 1] == "--uid" || doc[i - 1] == "--gid")) {
                    if (doc[i] == (doc[i - 1] == "--uid" ? uid : gid)) {
                        doc[i] = "999";
                    }
                } else {
                    replace_ids(doc[i], uid, gid);
                }
            }
        } else if (doc.is_string()) {
            auto s = doc.get<std::string>();
            for (const auto &[option, id] : {std::pair{"--uid", uid}, std::pair{"--gid", gid}}) {
                const auto from = std::string{option} + '\0' + id + '\0';
                const auto to = std::string{option} + '\0' + "999" + '\0';
                for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at)) {
                    s.replace(at, from.size(), to);
                }
            }
            doc = s;
        }
    }

    // A view's NUL-separated options without the masks of host sockets ("--ro-bind /dev/null P"
    // for a P that is not withheld): which sockets a host has is the host's.
    std::string drop_socket_masks(const std::string &s) const {
        if (s.find('\0') == std::string::npos) {
            return s;
        }
        std::vector<std::string> items;
        std::size_t begin = 0;
        for (auto end = s.find('\0'); end != std::string::npos; end = s.find('\0', begin)) {
            items.push_back(s.substr(begin, end - begin));
            begin = end + 1;
        }
        std::string out;
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (items[i] == "--ro-bind" && i + 2 < items.size() && items[i + 1] == "/dev/null" &&
                items[i + 2].rfind("/srv/project/", 0) != 0) {
                i += 2;
                continue;
            }
            out += items[i];
            out += '\0';
        }
        return out + s.substr(begin);
    }

    int recordings_ = 0;
};

// Validates every (document, schema) pair, each schema named by its file in docs/schema.
std::string schema_problems(const std::vector<std::pair<json, std::string>> &pairs,
                            const fs::path &scratch) {
    std::vector<std::pair<json, std::string>> with_paths;
    for (const auto &[doc, schema] : pairs) {
        with_paths.emplace_back(doc, (kSource / "docs" / "schema" / schema).string());
    }
    return tea::test::schema_problems(with_paths, scratch.string());
}

TEST_F(Documents, WhatTheRealPluginsExchangeMatchesTheSchemas) {
    const auto unaudited = record({"--observer", "none"}, {"./sample"});
    const auto audited = record({}, {"./sample"});
    const auto opt_out = record({"--observer", "none"}, {"./sample"}, TEA_OPT_OUT_PLUGIN);
    std::vector<std::pair<json, std::string>> pairs;
    for (const auto *recording : {&unaudited, &audited, &opt_out}) {
        for (const auto &spec : recording->all("prepare", "in")) {
            pairs.emplace_back(spec, "launch-spec.schema.json");
        }
        for (const auto &plan : recording->all("prepare", "out")) {
            pairs.emplace_back(plan, "exec-plan.schema.json");
        }
        for (const auto &request : recording->all("wrap", "in")) {
            pairs.emplace_back(request["plan"], "exec-plan.schema.json");
        }
        for (const auto &plan : recording->all("wrap", "out")) {
            pairs.emplace_back(plan, "exec-plan.schema.json");
        }
        for (const auto &observation : recording->all("collect", "out")) {
            pairs.emplace_back(observation, "observation.schema.json");
        }
    }
    // Every kind of document was seen: a staged and a complete unaudited plan, a holder's plan, a
    // wrapped plan and an observation with events.
    ASSERT_EQ(unaudited.all("prepare", "in").size(), 2U);
    ASSERT_FALSE(audited.all("wrap", "out").empty());
    ASSERT_FALSE(audited.all("collect", "out").empty());
    EXPECT_TRUE(audited.prepare_of("./sample", false).second.contains("holder"));
    EXPECT_FALSE(audited.all("collect", "out").back()["events"].empty());
    // A grader's view, from the real backend too.
    const auto grader_plan =
        run_spec(grader_spec({"true"}, {withheld().string()}), Backend::bubblewrap, true);
    ASSERT_EQ(grader_plan.status, 0) << grader_plan;
    pairs.emplace_back(
        json::parse(tea::exec::to_json(grader_spec({"true"}, {withheld().string()}))),
        "launch-spec.schema.json");
    pairs.emplace_back(json::parse(grader_plan.out), "exec-plan.schema.json");
    EXPECT_EQ(schema_problems(pairs, base()), "");
}

TEST_F(Documents, TheSchemasRefuseWhatTheHostRefuses) {
    // Positive control for the test above: each schema does refuse a document the host's reader
    // refuses, so its passing is not that of a schema that takes anything.
    const auto recording = record({"--observer", "none"}, {"./sample"});
    const auto [spec, plan] = recording.prepare_of("./sample", false);
    ASSERT_TRUE(spec.is_object() && plan.is_object());
    auto no_argv = spec;
    no_argv.erase("argv");
    auto bad_role = spec;
    bad_role["role"] = "judge";
    auto extra = plan;
    extra["fromALaterMinor"] = 1;
    auto low_fd = plan;
    low_fd["files"][0]["fd"] = 2;
    const json bad_event = {{"complete", true},
                            {"events", json::array({{{"pid", 1}, {"syscall", "openat"}}})}};
    std::vector<std::pair<json, std::string>> pairs{{no_argv, "launch-spec.schema.json"},
                                                    {bad_role, "launch-spec.schema.json"},
                                                    {extra, "exec-plan.schema.json"},
                                                    {low_fd, "exec-plan.schema.json"},
                                                    {bad_event, "observation.schema.json"}};
    const auto problems = schema_problems(pairs, base());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        EXPECT_NE(problems.find(std::to_string(i) + " " + pairs[i].second), std::string::npos)
            << "the schema took document " << i << ":\n"
            << pairs[i].first.dump(2);
        // The host's own reader refuses each as well.
        EXPECT_THROW(
            {
                if (pairs[i].second == "launch-spec.schema.json") {
                    (void)tea::documents::launch_spec_from_json(pairs[i].first);
                } else if (pairs[i].second == "exec-plan.schema.json") {
                    (void)tea::documents::exec_plan_from_json(pairs[i].first);
                } else {
                    (void)tea::documents::decode_observation(pairs[i].first.dump());
                }
            },
            tea::documents::DocumentError)
            << i;
    }
}

// A fenced block after a "<!-- sample: NAME -->" line of the doc: where its text lies.
struct SampleBlock {
    std::string name;
    std::size_t open = 0;   // the newline that ends the opening fence's line
    std::size_t close = 0;  // the newline before the closing fence (== open when empty)

    [[nodiscard]] std::string text(const std::string &doc) const {
        return doc.substr(open + 1, close - open - (close > open ? 1 : 0));
    }
};

std::vector<SampleBlock> sample_blocks(const std::string &doc) {
    std::vector<SampleBlock> out;
    const std::string marker = "<!-- sample: ";
    for (auto at = doc.find(marker); at != std::string::npos; at = doc.find(marker, at + 1)) {
        const auto name_end = doc.find(" -->\n```", at);
        const auto open = name_end == std::string::npos ? name_end : doc.find('\n', name_end + 5);
        const auto close = open == std::string::npos ? open : doc.find("\n```\n", open);
        if (close == std::string::npos) {
            ADD_FAILURE() << "a sample marker without its fenced block at byte " << at;
            break;
        }
        out.push_back({doc.substr(at + marker.size(), name_end - at - marker.size()), open, close});
    }
    return out;
}

std::string with_samples(std::string doc, const std::map<std::string, std::string> &samples) {
    auto blocks = sample_blocks(doc);
    std::reverse(blocks.begin(), blocks.end());  // from the end, so earlier offsets stay right
    for (const auto &b : blocks) {
        if (const auto it = samples.find(b.name); it != samples.end()) {
            doc.replace(b.open, b.close - b.open, "\n" + it->second);
        }
    }
    return doc;
}

TEST_F(Documents, TheSamplesInThePluginAuthorsGuideAreWhatTheCallsProduce) {
    std::map<std::string, std::string> generated;
    // exec, not audited: staged (ABI 1.5), so prepare is asked twice.
    const auto unaudited = record({"--observer", "none"}, {"./sample"});
    const auto [staged_spec, staged_plan] = unaudited.prepare_of("./sample", true);
    const auto [spec, plan] = unaudited.prepare_of("./sample", false);
    ASSERT_TRUE(staged_spec.is_object() && spec.is_object());
    // The complete plan's spec is the staged one without "staged", as the guide says.
    auto unstaged = staged_spec;
    unstaged.erase("staged");
    EXPECT_EQ(unstaged, spec);
    generated["exec/launch-spec"] = sample_text(staged_spec);
    generated["exec/staged-plan"] = sample_text(staged_plan);
    generated["exec/exec-plan"] = sample_text(plan);

    // exec, audited by strace.
    const auto audited = record({}, {"./sample"});
    const auto [audited_spec, audited_plan] = audited.prepare_of("./sample", false);
    ASSERT_TRUE(audited_spec.is_object());
    ASSERT_FALSE(audited.all("wrap", "out").empty());
    ASSERT_FALSE(audited.all("collect", "out").empty());
    generated["audited-exec/launch-spec"] = sample_text(audited_spec);
    generated["audited-exec/exec-plan"] = sample_text(audited_plan);
    generated["audited-exec/wrapped-plan-argv"] =
        sample_text(audited.all("wrap", "out").back()["argv"]);
    generated["audited-exec/collect-request"] = sample_text(audited.all("collect", "in").back());
    auto observation = audited.all("collect", "out").back();
    // The trace's line count is the one field of the sample that is the run's, not the
    // protocol's: a sanitized helper makes more system calls, and on a loaded machine strace
    // splits a call another process's event interrupted into two lines.
    {
        const auto doc = read_text(kDoc);
        for (const auto &b : sample_blocks(doc)) {
            if (b.name == "audited-exec/observation") {
                observation["lines"] = json::parse(b.text(doc))["lines"];
            }
        }
    }
    generated["audited-exec/observation"] = sample_text(observation);

    // exec at the root of a git repository, not audited: the project's history through a private
    // repository shown over its .git.
    make_repository();
    const auto repository = record({"--observer", "none"}, {"./sample"});
    generated["repository-exec/launch-spec"] =
        sample_text(repository.prepare_of("./sample", false).first);

    // The C++ backend of the guide is the one the out-of-tree SDK test builds and runs.
    for (const char *file : {"nice_backend.cpp", "CMakeLists.txt"}) {
        auto text = read_text(kSource / "tests" / "sdk" / "out_of_tree_documents" / file);
        while (!text.empty() && text.back() == '\n') {
            text.pop_back();
        }
        generated[std::string{"sdk/"} + file] = text;
    }

    const auto doc = read_text(kDoc);
    if (const char *update = std::getenv("TEA_UPDATE_DOC_SAMPLES");  // NOLINT
        update != nullptr && std::string{update} == "1") {
        std::ofstream{kDoc, std::ios::binary} << with_samples(doc, generated);
        GTEST_SKIP() << "rewrote the samples in " << kDoc;
    }
    std::map<std::string, std::string> in_doc;
    for (const auto &b : sample_blocks(doc)) {
        in_doc[b.name] = b.text(doc);
    }
    for (const auto &[name, text] : generated) {
        const auto it = in_doc.find(name);
        if (it == in_doc.end()) {
            ADD_FAILURE() << kDoc << " has no sample '" << name << "' (a line <!-- sample: " << name
                          << " --> before a ```json block)";
            continue;
        }
        EXPECT_EQ(it->second, text)
            << "the sample '" << name << "' in " << kDoc
            << " is stale; rewrite it with TEA_UPDATE_DOC_SAMPLES=1 (see this test's head)";
    }
    for (const auto &[name, text] : in_doc) {
        EXPECT_TRUE(generated.count(name) != 0)
            << kDoc << ": no test makes the sample '" << name << "'";
    }
}

}  // namespace
}  // namespace tea::test::bwrap
