#include "evaluation/leak_detectors.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <tea/json_bytes.hpp>

#include "evaluation/canary_detector.hpp"
#include "files/beneath.hpp"
#include "util/error.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr const char *kCanaryFile = "canary.txt";

// `path` relative to `root` when it lies strictly inside it, compared as the kernel resolves
// both; empty otherwise.
std::string inside(const stdfs::path &root, const stdfs::path &path) {
    std::error_code ec;
    const auto r = stdfs::weakly_canonical(root, ec);
    const auto p = stdfs::weakly_canonical(path, ec);
    if (ec) return {};
    const auto rel = p.lexically_relative(r);
    if (rel.empty() || rel == "." || *rel.begin() == "..") return {};
    return rel.string();
}

std::string joined(const std::string &label, const std::string &path) {
    return path == "." ? label : label + "/" + path;
}

}  // namespace

std::vector<GuardedTree> guarded_trees(const stdfs::path &evaluation_folder,
                                       const stdfs::path &git_dir,
                                       const std::vector<stdfs::path> &configured,
                                       const std::vector<stdfs::path> &runtime_writes) {
    std::vector<stdfs::path> roots{evaluation_folder};
    if (!git_dir.empty()) roots.push_back(git_dir);
    for (const auto &path : configured) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) {
            const int error = errno;
            // Fail closed: a guard on a path that is not there would guard nothing.
            throw usage_error("the configuration's [detectors] host_unchanged names " +
                              path.string() + ", which cannot be read (" + errno_text(error) +
                              "); remove it, or correct the path");
        }
        roots.push_back(path);
    }
    std::vector<GuardedTree> out;
    for (const auto &root : roots) {
        GuardedTree tree{root, {}};
        for (const auto &written : runtime_writes) {
            if (auto rel = inside(root, written); !rel.empty()) tree.excluded.insert(rel);
        }
        out.push_back(std::move(tree));
    }
    return out;
}

RunLeakDetectors::RunLeakDetectors(std::vector<GuardedTree> guarded)
    : guarded_(std::move(guarded)) {
    for (const auto &tree : guarded_) {
        HostManifestLimits limits;
        limits.tree.excluded = tree.excluded;
        auto manifest = take_host_manifest(tree.root, limits);
        if (!manifest.complete()) {
            // A change where the first walk did not reach would pass unseen.
            throw host_error("the host-unchanged detector cannot read " + tree.root.string() +
                             " whole (" + manifest.unreached.front() +
                             "); make it readable, or remove it from [detectors] host_unchanged. "
                             "Nothing was run");
        }
        before_.push_back(std::move(manifest));
    }
}

RunLeakDetectors::~RunLeakDetectors() {
    remove_canary();
}

std::shared_ptr<RunLeakDetectors> RunLeakDetectors::for_trial_task(const stdfs::path &records,
                                                                  const json &canaries) {
    auto detectors = std::make_shared<RunLeakDetectors>(std::vector<GuardedTree>{});
    if (canaries.is_null()) return detectors;
    const auto sha256 = canaries.is_object() ? canaries.value("sha256", "") : std::string{};
    std::string why;
    // A canary file swapped for another string would let a trial's leak of the real one pass.
    const auto text = files::read_head_beneath(records, kCanaryFile, 256, &why);
    std::string canary = text ? *text : std::string{};
    while (!canary.empty() && canary.back() == '\n') canary.pop_back();
    if (!text || sha256.empty() || sha256_hex(canary) != sha256) {
        throw host_error("the run's canary in " + (records / kCanaryFile).string() +
                         (text ? " is not the one run.json records" : ": " + why) +
                         "; the trial cannot be scanned for it and is not run");
    }
    detectors->canary_ = std::move(canary);
    return detectors;
}

void RunLeakDetectors::plant(const stdfs::path &records) {
    canary_ = make_canary();
    canary_file_ = plant_canary(records, kCanaryFile, canary_);
}

json RunLeakDetectors::canaries_record() const {
    if (canary_.empty()) return nullptr;
    return {{"plantedIn", kCanaryFile}, {"sha256", sha256_hex(canary_)}};
}

json RunLeakDetectors::scan_trial(
    const std::vector<std::pair<std::string, stdfs::path>> &trees) const {
    if (canary_.empty()) return nullptr;
    const std::vector<std::string> canaries{canary_};
    auto hits = json::array();
    std::vector<std::string> unscanned;
    std::vector<std::string> scanned;
    for (const auto &[label, root] : trees) {
        if (root.empty()) continue;
        scanned.push_back(label);
        const auto scan = scan_tree_for_canaries(root, canaries);
        for (const auto &hit : scan.hits) {
            // The canary itself stays out of the record: only where it was found.
            hits.push_back({{"path", bytes::to_json(joined(label, hit.where))},
                            {"in", to_string(hit.in)},
                            {"offset", hit.offset}});
        }
        for (const auto &u : scan.unscanned) unscanned.push_back(joined(label, u));
    }
    return {{"scanned", scanned}, {"hits", hits}, {"unscanned", bytes::list_to_json(unscanned)}};
}

json RunLeakDetectors::finish() {
    remove_canary();
    auto out = json::array();
    for (std::size_t i = 0; i < guarded_.size(); ++i) {
        HostManifestLimits limits;
        limits.tree.excluded = guarded_[i].excluded;
        HostManifest after;
        try {
            after = take_host_manifest(guarded_[i].root, limits);
        } catch (const std::exception &e) {
            // The tree itself is gone or replaced by what cannot be opened: a change, named.
            after.root = guarded_[i].root;
            after.unreached.push_back(std::string{".: "} + e.what());
        }
        const auto changes = compare_host_manifests(before_[i], after);
        out.push_back(host_changes_record(before_[i], after, changes));
    }
    return out;
}

std::vector<std::string> leak_findings(const json &run) {
    std::vector<std::string> out;
    const auto strings = [](const json &list) {
        std::vector<std::string> texts;
        for (const auto &item : list) {
            texts.push_back(item.is_string() ? item.get<std::string>() : item.dump());
        }
        return texts;
    };
    if (!run.contains("canaries")) {
        out.emplace_back("run.json does not say whether the run planted a canary (canaries)");
    } else if (run["canaries"].is_object() && run.contains("trials") && run["trials"].is_array()) {
        for (const auto &t : run["trials"]) {
            const auto name = "trial " + (t.is_object() ? t.value("index", json{}).dump() : "?");
            const auto scan = t.is_object() ? t.value("canaryScan", json{}) : json{};
            if (!scan.is_object() || !scan.contains("hits") || !scan["hits"].is_array() ||
                !scan.contains("unscanned") || !scan["unscanned"].is_array()) {
                out.push_back(name + ": the run planted a canary and the trial has no scan for it");
                continue;
            }
            for (const auto &hit : scan["hits"]) {
                const auto path = hit.is_object() ? hit.value("path", json{}) : json{};
                out.push_back(name +
                              ": the run's canary, planted in the evaluation folder, is in " +
                              (path.is_string() ? path.get<std::string>() : path.dump()) + " (" +
                              (hit.is_object() ? hit.value("in", std::string{"?"}) : "?") + ")");
            }
            for (const auto &u : strings(scan["unscanned"])) {
                out.push_back(name + ": the canary scan did not search " + u);
            }
        }
    }
    const auto &trees = run.contains("hostUnchanged") ? run["hostUnchanged"] : json{};
    if (!trees.is_array()) {
        out.emplace_back("run.json holds no host-unchanged record (hostUnchanged)");
        return out;
    }
    for (const auto &tree : trees) {
        const auto root = tree.is_object() ? tree.value("root", json{}) : json{};
        const auto named =
            "host tree " + (root.is_string() ? root.get<std::string>() : root.dump());
        if (!tree.is_object() || !tree.contains("changes") || !tree["changes"].is_array() ||
            !tree.contains("unreached") || !tree["unreached"].is_array()) {
            out.push_back(named + ": its record lacks changes or unreached");
            continue;
        }
        for (const auto &c : tree["changes"]) {
            const auto path = c.is_object() ? c.value("path", json{}) : json{};
            std::string what = c.is_object() ? c.value("kind", std::string{"?"}) : "?";
            if (c.is_object() && c.value("what", std::string{}) != "") {
                what += ": " + c["what"].get<std::string>();
            }
            out.push_back(named + " changed during the run: " +
                          (path.is_string() ? path.get<std::string>() : path.dump()) + " (" + what +
                          ")");
        }
        for (const auto &u : strings(tree["unreached"])) {
            out.push_back(named + " was not read whole, so not shown unchanged: " + u);
        }
    }
    return out;
}

void RunLeakDetectors::remove_canary() noexcept {
    if (canary_file_.empty()) return;
    (void)::unlink(canary_file_.c_str());
    canary_file_.clear();
}

}  // namespace tea::evaluation
