// Choosing plugins by configuration, over a registry of real fixture plugins:
// some good, one refused at load, one unavailable on this host, one whose
// create refuses its table.
#include "plugins/selection.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plugin_test_support.hpp"
#include "util/error.hpp"

namespace tea::plugins {
namespace {

using test_support::TempDir;
using test_support::write_manifest;
using ::testing::AllOf;
using ::testing::HasSubstr;

class Selection : public ::testing::Test {
   protected:
    Selection() {
        write_manifest(dir_.path(), "good-backend", "backend", TEA_FIXTURE_GOOD_BACKEND);
        write_manifest(dir_.path(), "good-observer", "observer", TEA_FIXTURE_GOOD_OBSERVER);
        write_manifest(dir_.path(), "unavailable-observer", "observer",
                       TEA_FIXTURE_UNAVAILABLE_OBSERVER);
        // Refused at load: its table has no prepare.
        write_manifest(dir_.path(), "broken", "backend", TEA_FIXTURE_NO_PREPARE);
        write_manifest(dir_.path(), "unavailable", "backend", TEA_FIXTURE_UNAVAILABLE);
        write_manifest(dir_.path(), "create-fails", "backend", TEA_FIXTURE_CREATE_FAILS);
        write_manifest(dir_.path(), "cpp-backend", "backend", TEA_FIXTURE_CPP_BACKEND);
        registry_ = Registry::discover({dir_.path()}, "/nonexistent");
        config_.backend = "auto";
        config_.observer = "none";
    }

    [[nodiscard]] std::string refusal_of(const std::string &name) const {
        const auto *entry = registry_.find(name);
        return entry == nullptr ? std::string{} : entry->refusal;
    }

    // Runs fn, which must throw tea::Error with that code; returns the sentence.
    template <class Fn>
    static std::string error_of(Fn &&fn, ExitCode code) {
        try {
            fn();
            ADD_FAILURE() << "expected a tea::Error";
        } catch (const Error &e) {
            EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
            return e.what();
        }
        return {};
    }

    TempDir dir_;
    Registry registry_;
    config::Config config_;
};

TEST_F(Selection, RegistryHoldsTheGoodAndTheRefused) {
    ASSERT_EQ(registry_.entries().size(), 7U);
    EXPECT_THAT(refusal_of("broken"), HasSubstr("the operations table has no 'prepare'"));
    for (const char *loaded : {"good-backend", "good-observer", "unavailable-observer",
                               "unavailable", "create-fails", "cpp-backend"}) {
        EXPECT_EQ(refusal_of(loaded), "") << loaded;
    }
}

TEST_F(Selection, RequireReturnsTheGoodPlugin) {
    const auto &plugin = registry_.require("good-backend", Kind::backend);
    EXPECT_EQ(plugin.name(), "good-backend");
    EXPECT_EQ(plugin.kind(), Kind::backend);
}

TEST_F(Selection, RequireOfARefusedPluginIsAUsageErrorCarryingTheRefusal) {
    const auto message =
        error_of([&] { (void)registry_.require("broken", Kind::backend); }, ExitCode::usage);
    EXPECT_THAT(message, AllOf(HasSubstr("the backend plugin 'broken' cannot be loaded"),
                               HasSubstr(refusal_of("broken")), HasSubstr(TEA_FIXTURE_NO_PREPARE)));
}

TEST_F(Selection, RequireOfAMissingPluginIsAUsageError) {
    EXPECT_THAT(
        error_of([&] { (void)registry_.require("missing", Kind::backend); }, ExitCode::usage),
        HasSubstr("no backend plugin named 'missing' is installed"));
}

TEST_F(Selection, RequireOfAnotherKindIsAUsageError) {
    EXPECT_THAT(
        error_of([&] { (void)registry_.require("good-observer", Kind::backend); }, ExitCode::usage),
        HasSubstr("plugin 'good-observer' is an observer plugin, not a backend plugin"));
}

TEST_F(Selection, AutoSkipsTheRefusedAndTheUnavailable) {
    config_.backend_order = {"broken", "unavailable", "good-backend"};
    const auto selected = select_backend(registry_, config_);
    ASSERT_NE(selected.plugin, nullptr);
    EXPECT_EQ(selected.plugin->name(), "good-backend");
    EXPECT_TRUE(selected.chosen_by_auto);
    ASSERT_NE(selected.instance, nullptr);
    // The instance selection made is the one that prepares.
    const auto &ops = std::get<tea_backend_ops>(selected.plugin->ops());
    EXPECT_EQ(selected.instance->transform(ops.prepare, "prepare", R"({"argv":["x"]})"),
              R"({"plugin":"good-backend","op":"prepare","input":{"argv":["x"]}})");
}

TEST_F(Selection, AutoTakesTheFirstAvailableInOrder) {
    config_.backend_order = {"cpp-backend", "good-backend"};
    EXPECT_EQ(select_backend(registry_, config_).plugin->name(), "cpp-backend");
}

TEST_F(Selection, AutoWithNothingAvailableIsNoConfineListingEachReason) {
    config_.backend_order = {"broken", "unavailable", "missing", "good-observer"};
    const auto message =
        error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::no_confine);
    EXPECT_THAT(message,
                AllOf(HasSubstr("no confinement backend is available on this host"),
                      HasSubstr("\n  broken: " + refusal_of("broken")),
                      HasSubstr("\n  unavailable: fixture: needs the frobnicator kernel module "
                                "(load it with modprobe frobnicator)"),
                      HasSubstr("\n  missing: not installed"),
                      HasSubstr("\n  good-observer: not a backend plugin"),
                      HasSubstr("--backend opt-out")));
}

TEST_F(Selection, AutoWithAnEmptyOrderIsNoConfine) {
    config_.backend_order = {};
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::no_confine),
                HasSubstr("no confinement backend is available"));
}

TEST_F(Selection, NamedBackend) {
    config_.backend = "good-backend";
    const auto selected = select_backend(registry_, config_);
    ASSERT_NE(selected.plugin, nullptr);
    EXPECT_EQ(selected.plugin->name(), "good-backend");
    EXPECT_FALSE(selected.chosen_by_auto);
}

TEST_F(Selection, NamedUnavailableBackendIsNoConfineWithTheReason) {
    config_.backend = "unavailable";
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::no_confine),
                AllOf(HasSubstr("the backend 'unavailable' cannot work on this host"),
                      HasSubstr("modprobe frobnicator")));
}

TEST_F(Selection, NamedRefusedBackendIsAUsageError) {
    config_.backend = "broken";
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::usage),
                HasSubstr("has no 'prepare'"));
}

TEST_F(Selection, NamedBackendWhoseCreateFailsIsAUsageErrorWithItsSentence) {
    config_.backend = "create-fails";
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::usage),
                HasSubstr("create failed: fixture: config key 'mode' must be 'fast' or 'slow'"));
}

// The plugin's own [plugin.<name>] table reaches its create as JSON.
TEST_F(Selection, ThePluginsTableReachesCreate) {
    config_.backend = "cpp-backend";
    config_.plugin_tables["cpp-backend"] = {{"mode", "invalid"}};
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::usage),
                HasSubstr("cpp-backend: config key 'mode' must be 'fast' or 'slow'"));
    config_.plugin_tables["cpp-backend"] = {{"mode", "unavailable"}};
    EXPECT_THAT(error_of([&] { (void)select_backend(registry_, config_); }, ExitCode::no_confine),
                HasSubstr("the widget service is not running"));
}

TEST_F(Selection, ObserverNoneSelectsNothing) {
    const auto selected = select_observer(registry_, config_);
    EXPECT_EQ(selected.plugin, nullptr);
    EXPECT_EQ(selected.instance, nullptr);
}

TEST_F(Selection, NamedObserver) {
    config_.observer = "good-observer";
    const auto selected = select_observer(registry_, config_);
    ASSERT_NE(selected.plugin, nullptr);
    EXPECT_EQ(selected.plugin->kind(), Kind::observer);
    config_.observer = "good-backend";
    EXPECT_THAT(error_of([&] { (void)select_observer(registry_, config_); }, ExitCode::usage),
                HasSubstr("is a backend plugin, not an observer plugin"));
}

// "auto" takes the first observer of its order that can work here (the eBPF observer where
// its programs load, else strace), and stops the command when none can.
TEST_F(Selection, AutoObserverPassesOneThatCannotWorkToTheNext) {
    config_.observer = "auto";
    config_.observer_order = {"unavailable-observer", "good-observer"};
    const auto selected = select_observer(registry_, config_);
    ASSERT_NE(selected.plugin, nullptr);
    EXPECT_EQ(selected.plugin->name(), "good-observer");
    // Alone, it stops the command with its reason.
    config_.observer_order = {"missing-observer", "unavailable-observer"};
    EXPECT_THAT(error_of([&] { (void)select_observer(registry_, config_); }, ExitCode::no_confine),
                HasSubstr("the observer 'unavailable-observer' cannot audit calls on this host"));
    // Control: none installed says so.
    config_.observer_order = {"missing-observer"};
    EXPECT_THAT(error_of([&] { (void)select_observer(registry_, config_); }, ExitCode::no_confine),
                HasSubstr("no observer is installed"));
}

TEST(ManifestSearchPath, RuntimeThenSystemThenUserThenConfigured) {
    config::Config config;
    config.plugin_paths = {"/opt/a/plugins.d", "/opt/b/plugins.d"};
    const auto paths = RuntimePaths::for_prefix("/prefix");
    const auto search = manifest_search_path(config, paths, false, nullptr);
    const auto &dirs = search.dirs;
    ASSERT_GE(dirs.size(), 4U);
    EXPECT_EQ(dirs.front(), paths.manifest_dir);
    EXPECT_EQ(dirs[1], paths.system_manifest_dir);
    EXPECT_EQ(dirs[dirs.size() - 2], std::filesystem::path{"/opt/a/plugins.d"});
    EXPECT_EQ(dirs.back(), std::filesystem::path{"/opt/b/plugins.d"});
    EXPECT_TRUE(search.skipped.empty());
}

// The system's folder is where the build's sysconfdir says: /etc for a /usr install.
TEST(ManifestSearchPath, TheSystemFolderIsBelowTheSysconfdir) {
    const auto paths = RuntimePaths::for_prefix("/prefix");
    EXPECT_TRUE(paths.system_manifest_dir.is_absolute());
    EXPECT_EQ(paths.system_manifest_dir.filename(), "plugins.d");
    EXPECT_EQ(paths.system_manifest_dir.parent_path().filename(), "tea-evaluate");
}

// A developer's folders come first, empty entries left out.
TEST(ManifestSearchPath, ThePluginPathVariableComesFirst) {
    const config::Config config;
    const auto paths = RuntimePaths::for_prefix("/prefix");
    const auto dirs = manifest_search_path(config, paths, true, "/dev/a::/dev/b:").dirs;
    ASSERT_GE(dirs.size(), 4U);
    EXPECT_EQ(dirs[0], std::filesystem::path{"/dev/a"});
    EXPECT_EQ(dirs[1], std::filesystem::path{"/dev/b"});
    EXPECT_EQ(dirs[2], paths.manifest_dir);
}

// As root, neither the user's plugins.d nor the [plugins] paths of the user's file are searched:
// the user whose HOME or XDG_CONFIG_HOME root kept would choose what root runs. Paths another
// layer set (--config, which the invoker named) still are.
TEST(ManifestSearchPath, AsRootTheUsersFoldersAreSkipped) {
    config::Builder builder;
    builder.apply_text("[plugins]\npaths = [\"/home/u/p\"]\n", "user file", "/");
    config::Config config = builder.get();
    config.user_file_layer = config.layers.size() - 1;
    ASSERT_TRUE(config.plugin_paths_from_user_file());
    const auto paths = RuntimePaths::for_prefix("/prefix");
    const auto user_dir = config::user_config_path().parent_path() / "plugins.d";
    const auto contains = [](const std::vector<std::filesystem::path> &v,
                             const std::filesystem::path &p) {
        return std::find(v.begin(), v.end(), p) != v.end();
    };

    const auto root = manifest_search_path(config, paths, true, nullptr);
    EXPECT_FALSE(contains(root.dirs, "/home/u/p"));
    EXPECT_TRUE(contains(root.skipped, "/home/u/p"));
    if (!config::user_config_path().empty()) {
        EXPECT_FALSE(contains(root.dirs, user_dir));
        EXPECT_TRUE(contains(root.skipped, user_dir));
    }
    // Control: another user searches both.
    const auto user = manifest_search_path(config, paths, false, nullptr);
    EXPECT_TRUE(contains(user.dirs, "/home/u/p"));
    EXPECT_TRUE(user.skipped.empty());

    // The same paths from a later layer (--config) are searched as root.
    builder.apply_text("[plugins]\npaths = [\"/home/u/p\"]\n", "--config file", "/");
    config::Config named = builder.get();
    named.user_file_layer = config.user_file_layer;
    EXPECT_FALSE(named.plugin_paths_from_user_file());
    EXPECT_TRUE(contains(manifest_search_path(named, paths, true, nullptr).dirs, "/home/u/p"));
}

}  // namespace
}  // namespace tea::plugins
