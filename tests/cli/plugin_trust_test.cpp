// Which plugins a root tea-evaluate loads (docs/plugin-authoring.md#who-may-install-a-plugin):
// the real binary, `plugins --json`, with fixture plugins in folders the test makes. Each refusal
// is shown beside its positive control: the same files with root's modes load, and the same
// files load when tea-evaluate runs as another user, whose own plugins they may be.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tea/plugin.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tea_fixtures.h"

namespace tea {
namespace {

namespace fs = std::filesystem;

constexpr const char *kNobodyUid = "--reuid=65534";
constexpr const char *kNobodyGid = "--regid=65534";

class PluginTrust : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "the rules under test are a root runtime's";
        }
        // Searchable by the other account of the controls, as every folder below.
        fs::permissions(dir_.path(), fs::perms{0755});
        manifests_ = make_dir("plugins.d", 0755);
    }

    fs::path make_dir(const std::string &name, unsigned mode) const {
        const auto path = dir_.path() / name;
        fs::create_directories(path);
        chmod(path, mode);
        return path;
    }
    static void chmod(const fs::path &path, unsigned mode) {
        ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
    }
    // The accepted backend fixture's manifest, `library` as given.
    static void write_manifest(const fs::path &file, const std::string &library, unsigned mode) {
        test::write_file(file.string(), "name = \"good-backend\"\nkind = \"backend\"\nabi = \"1." +
                                            std::to_string(TEA_ABI_MINOR) + "\"\nlibrary = \"" +
                                            library + "\"\n");
        chmod(file, mode);
    }
    // A configuration that adds `dirs` to the search, given with --config.
    fs::path config_for(const std::vector<fs::path> &dirs) const {
        std::string list;
        for (const auto &d : dirs) {
            list += (list.empty() ? "\"" : ", \"") + d.string() + "\"";
        }
        const auto file = dir_.path() / "config.toml";
        test::write_file(file.string(), "[plugins]\npaths = [" + list + "]\n");
        chmod(file, 0644);
        return file;
    }

    struct Listed {
        test::Outcome outcome;
        nlohmann::json entry;  // the entry of `manifest`, or null
    };
    // `tea-evaluate plugins --json`, as root or (as_nobody) as the account nobody.
    static Listed list(const fs::path &manifest, const std::vector<std::string> &options,
                       bool as_nobody, const std::vector<std::string> &extra_env = {}) {
        std::vector<std::string> argv;
        if (as_nobody) {
            argv = {"/usr/bin/setpriv", kNobodyUid, kNobodyGid, "--clear-groups", "--"};
        }
        argv.emplace_back(TEA_EVALUATE_BIN);
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), {"plugins", "--json"});
        std::vector<std::string> env{"PATH=/usr/bin:/bin", "HOME=/nonexistent-tea-test",
                                     "XDG_CONFIG_HOME=/nonexistent-tea-test"};
        for (const auto &e : extra_env) {
            const auto name = e.substr(0, e.find('=') + 1);
            std::erase_if(env, [&](const std::string &x) { return x.rfind(name, 0) == 0; });
            env.push_back(e);
        }
        Listed out{test::run(argv, env), nullptr};
        const auto doc = nlohmann::json::parse(out.outcome.out, nullptr, false);
        if (!doc.is_discarded() && doc.contains("plugins")) {
            for (const auto &p : doc["plugins"]) {
                if (p.value("manifest", "") == manifest.string()) {
                    out.entry = p;
                }
            }
        }
        return out;
    }
    static bool loaded(const Listed &l) {
        return l.entry.is_object() && l.entry.value("loaded", false) &&
               l.entry.value("available", false);
    }
    static std::string reason(const Listed &l) {
        return l.entry.is_object() ? l.entry.value("reason", "") : "";
    }
    static std::string shown(const Listed &l) {
        return "status " + std::to_string(l.outcome.status) + "\nstdout: " + l.outcome.out +
               "\nstderr: " + l.outcome.err;
    }

    test::TempDir dir_{"tea-plugin-trust"};
    fs::path manifests_;
};

// Another member of the manifest's group could rewrite it to name a library of theirs, which
// root would then load. The plugin is refused, and the reason names the file and its mode.
TEST_F(PluginTrust, RootRefusesAGroupWritableManifest) {
    const auto manifest = manifests_ / "good-backend.toml";
    write_manifest(manifest, TEA_FIXTURE_GOOD_BACKEND, 0664);
    const auto config = config_for({manifests_});

    const auto refused = list(manifest, {"--config", config.string()}, false);
    ASSERT_EQ(refused.outcome.status, 0) << shown(refused);
    ASSERT_TRUE(refused.entry.is_object()) << shown(refused);
    EXPECT_FALSE(refused.entry.value("loaded", true)) << shown(refused);
    EXPECT_NE(reason(refused).find(manifest.string()), std::string::npos) << reason(refused);
    EXPECT_NE(reason(refused).find("writable by its group"), std::string::npos) << reason(refused);

    // Control: the same manifest with root's modes loads.
    chmod(manifest, 0644);
    const auto accepted = list(manifest, {"--config", config.string()}, false);
    EXPECT_TRUE(loaded(accepted)) << shown(accepted);

    // Control: as another user the ownership rules do not apply; the group-writable file loads.
    chmod(manifest, 0664);
    const auto as_user = list(manifest, {"--config", config.string()}, true);
    EXPECT_TRUE(loaded(as_user)) << shown(as_user);
}

// TEA_PLUGIN_PATH, the developer's way to add a folder (and the way a test stands in for the
// system's folder), passes the same checks as root: it is no way around them.
TEST_F(PluginTrust, ThePluginPathVariableIsCheckedLikeAnyFolder) {
    const auto manifest = manifests_ / "good-backend.toml";
    write_manifest(manifest, TEA_FIXTURE_GOOD_BACKEND, 0664);
    const std::vector<std::string> env{"TEA_PLUGIN_PATH=" + manifests_.string()};
    const auto refused = list(manifest, {}, false, env);
    ASSERT_TRUE(refused.entry.is_object()) << shown(refused);
    EXPECT_NE(reason(refused).find("writable by its group"), std::string::npos) << shown(refused);
    chmod(manifest, 0644);
    const auto accepted = list(manifest, {}, false, env);
    EXPECT_TRUE(loaded(accepted)) << shown(accepted);
}

// A manifest owned by another user, and one reached through a folder another user owns, could be
// that user's; so is a library in a folder its group may write (another member renames theirs
// over it between the check and the load).
TEST_F(PluginTrust, RootRefusesFilesAndFoldersOtherUsersCanChange) {
    const auto manifest = manifests_ / "good-backend.toml";
    write_manifest(manifest, TEA_FIXTURE_GOOD_BACKEND, 0644);
    const auto config = config_for({manifests_});
    ASSERT_EQ(::chown(manifest.c_str(), test::kNobody, test::kNobody), 0);
    const auto not_roots = list(manifest, {"--config", config.string()}, false);
    EXPECT_FALSE(loaded(not_roots)) << shown(not_roots);
    EXPECT_NE(reason(not_roots).find("owned by uid 65534"), std::string::npos) << reason(not_roots);
    ASSERT_EQ(::chown(manifest.c_str(), 0, 0), 0);

    // The library, copied into a folder its group may write, named by absolute path.
    const auto libs = make_dir("lib", 0775);
    const auto library = libs / "libtea-fixture-good-backend.so";
    fs::copy_file(TEA_FIXTURE_GOOD_BACKEND, library);
    chmod(library, 0755);
    write_manifest(manifest, library.string(), 0644);
    const auto lib_refused = list(manifest, {"--config", config.string()}, false);
    EXPECT_FALSE(loaded(lib_refused)) << shown(lib_refused);
    EXPECT_NE(reason(lib_refused).find(libs.string() + " is writable by its group"),
              std::string::npos)
        << reason(lib_refused);
    const auto lib_as_user = list(manifest, {"--config", config.string()}, true);
    EXPECT_TRUE(loaded(lib_as_user)) << shown(lib_as_user);
    chmod(libs, 0755);
    const auto lib_accepted = list(manifest, {"--config", config.string()}, false);
    EXPECT_TRUE(loaded(lib_accepted)) << shown(lib_accepted);
}

// A manifest that is a symbolic link is judged by what it leads to: a link in root's folder to a
// file in a folder another user owns is that user's file.
TEST_F(PluginTrust, RootJudgesALinkedManifestByItsTarget) {
    const auto theirs = make_dir("theirs", 0755);
    ASSERT_EQ(::chown(theirs.c_str(), test::kNobody, test::kNobody), 0);
    write_manifest(theirs / "real.toml", TEA_FIXTURE_GOOD_BACKEND, 0644);
    const auto manifest = manifests_ / "good-backend.toml";
    fs::create_symlink(theirs / "real.toml", manifest);
    const auto config = config_for({manifests_});
    const auto refused = list(manifest, {"--config", config.string()}, false);
    EXPECT_FALSE(loaded(refused)) << shown(refused);
    EXPECT_NE(reason(refused).find(theirs.string() + " is owned by uid 65534"), std::string::npos)
        << reason(refused);

    // Control: the same link to a folder of root's.
    ASSERT_EQ(::chown(theirs.c_str(), 0, 0), 0);
    const auto accepted = list(manifest, {"--config", config.string()}, false);
    EXPECT_TRUE(loaded(accepted)) << shown(accepted);
}

// As root, the user's own plugin folder and the [plugins] paths of the user's file are not
// searched: HOME and XDG_CONFIG_HOME may still be the invoking user's (sudo -E), who would then
// choose what root loads. A one-line warning names what was skipped.
TEST_F(PluginTrust, RootSkipsTheUsersPluginFolders) {
    const auto xdg = make_dir("xdg", 0755);
    const auto user_dir = make_dir("xdg/tea-evaluate/plugins.d", 0755);
    const auto manifest = user_dir / "good-backend.toml";
    write_manifest(manifest, TEA_FIXTURE_GOOD_BACKEND, 0644);
    const auto listed = make_dir("listed", 0755);
    write_manifest(listed / "other.toml", TEA_FIXTURE_GOOD_BACKEND, 0644);
    test::write_file((xdg / "tea-evaluate/config.toml").string(),
                     "[plugins]\npaths = [\"" + listed.string() + "\"]\n");
    const std::vector<std::string> env{"XDG_CONFIG_HOME=" + xdg.string()};

    const auto as_root = list(manifest, {}, false, env);
    ASSERT_EQ(as_root.outcome.status, 0) << shown(as_root);
    EXPECT_TRUE(as_root.entry.is_null()) << shown(as_root);
    EXPECT_EQ(as_root.outcome.out.find(listed.string()), std::string::npos) << shown(as_root);
    EXPECT_NE(as_root.outcome.err.find(user_dir.string()), std::string::npos) << shown(as_root);
    EXPECT_NE(as_root.outcome.err.find(listed.string()), std::string::npos) << shown(as_root);

    // Control: the same user folder is searched for another user.
    const auto as_user = list(manifest, {}, true, env);
    EXPECT_TRUE(loaded(as_user)) << shown(as_user);
}

}  // namespace
}  // namespace tea
