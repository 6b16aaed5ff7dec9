// The loader's refusal matrix, exercised by real shared objects: each fixture
// of tests/fixtures is one build of fixture_plugin.c (or the C++ fixture) with
// the definitions of one case. A refusal must name the file and say what was
// expected and what was found; an acceptance must leave a working plugin.
#include "plugins/loader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "plugin_test_support.hpp"

namespace tea::plugins {
namespace {

using test_support::discover_one;
using test_support::refusal_of;
using test_support::TempDir;
using test_support::write_manifest;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------
// Refusals at load: the manifest is fine, the shared object is not.

struct RefusalCase {
    std::string id;
    std::string library;
    std::string manifest_name;  // as the manifest names the plugin
    std::string kind;           // as the manifest states it
    std::vector<std::string> expected;
};

void PrintTo(const RefusalCase &c, std::ostream *out) {
    *out << c.id;
}

std::string size_text(std::size_t n) {
    return std::to_string(n) + " bytes";
}

std::vector<RefusalCase> refusal_cases() {
    const auto descriptor_size = sizeof(tea_plugin_descriptor);
    const auto missing = [](const char *op, const char *kind) {
        return std::vector<std::string>{"the operations table has no '" + std::string{op} + "'",
                                        "required for", std::string{kind} + " plugin"};
    };
    return {
        {"no_entry",
         TEA_FIXTURE_NO_ENTRY,
         "no-entry",
         "backend",
         {"has no entry symbol 'tea_plugin_entry'",
          "expected a plugin built with the tea-evaluate SDK"}},
        {"entry_null",
         TEA_FIXTURE_ENTRY_NULL,
         "entry-null",
         "backend",
         {"the entry symbol returned no descriptor"}},
        {"descriptor_reserved",
         TEA_FIXTURE_DESCRIPTOR_RESERVED,
         "descriptor-reserved",
         "backend",
         {"the descriptor's field 'reserved' is 7; expected 0"}},
        {"ops_reserved",
         TEA_FIXTURE_OPS_RESERVED,
         "ops-reserved",
         "backend",
         {"the backend operations table's field 'reserved' is 1; expected 0"}},
        {"ops_null",
         TEA_FIXTURE_OPS_NULL,
         "ops-null",
         "backend",
         {"the descriptor has no operations table"}},
        {"abi_major_next",
         TEA_FIXTURE_ABI_MAJOR_NEXT,
         "abi-major-next",
         "backend",
         {"was built for plugin ABI 2." + std::to_string(TEA_ABI_MINOR),
          "this tea-evaluate supports ABI 1.x", "rebuild the plugin"}},
        {"abi_minor_next",
         TEA_FIXTURE_ABI_MINOR_NEXT,
         "abi-minor-next",
         "backend",
         {"needs plugin ABI 1." + std::to_string(TEA_ABI_MINOR + 1),
          "newer than this tea-evaluate's 1." + std::to_string(TEA_ABI_MINOR),
          "upgrade tea-evaluate"}},
        {"descriptor_small",
         TEA_FIXTURE_DESCRIPTOR_SMALL,
         "descriptor-small",
         "backend",
         {"the plugin descriptor is " + size_text(descriptor_size - sizeof(void *)),
          "expected at least " + std::to_string(descriptor_size)}},
        {"ops_small",
         TEA_FIXTURE_OPS_SMALL,
         "ops-small",
         "backend",
         {"the backend operations table is " + size_text(sizeof(tea_plugin_ops_base)),
          "expected at least " + std::to_string(sizeof(tea_backend_ops))}},
        {"kind_unknown",
         TEA_FIXTURE_KIND_UNKNOWN,
         "kind-unknown",
         "backend",
         {"declares plugin kind 9", "which this host does not know",
          "expected 1 backend, 2 observer, 3 egress or 4 login"}},
        {"kind_zero",
         TEA_FIXTURE_KIND_ZERO,
         "kind-zero",
         "backend",
         {"declares plugin kind 0", "which this host does not know"}},
        {"no_create", TEA_FIXTURE_NO_CREATE, "no-create", "backend", missing("create", "backend")},
        {"no_destroy", TEA_FIXTURE_NO_DESTROY, "no-destroy", "backend",
         missing("destroy", "backend")},
        {"no_probe", TEA_FIXTURE_NO_PROBE, "no-probe", "backend", missing("probe", "backend")},
        {"no_prepare", TEA_FIXTURE_NO_PREPARE, "no-prepare", "backend",
         missing("prepare", "backend")},
        {"observer_no_wrap", TEA_FIXTURE_OBSERVER_NO_WRAP, "observer-no-wrap", "observer",
         missing("wrap", "observer")},
        {"observer_no_collect", TEA_FIXTURE_OBSERVER_NO_COLLECT, "observer-no-collect", "observer",
         missing("collect", "observer")},
        {"observer_no_create", TEA_FIXTURE_OBSERVER_NO_CREATE, "observer-no-create", "observer",
         missing("create", "observer")},
        {"egress_no_open", TEA_FIXTURE_EGRESS_NO_OPEN, "egress-no-open", "egress",
         missing("open", "egress")},
        {"egress_no_close", TEA_FIXTURE_EGRESS_NO_CLOSE, "egress-no-close", "egress",
         missing("close", "egress")},
        {"egress_no_probe", TEA_FIXTURE_EGRESS_NO_PROBE, "egress-no-probe", "egress",
         missing("probe", "egress")},
        {"login_no_grant", TEA_FIXTURE_LOGIN_NO_GRANT, "login-no-grant", "login",
         missing("grant", "login")},
        {"login_no_destroy", TEA_FIXTURE_LOGIN_NO_DESTROY, "login-no-destroy", "login",
         missing("destroy", "login")},
        // The manifest and the library disagree: the manifest is what config and
        // discovery trusted, so the library must not silently become something else.
        {"name_differs_from_manifest",
         TEA_FIXTURE_GOOD_BACKEND,
         "renamed",
         "backend",
         {"calls itself 'good-backend'", "names 'renamed'", "renamed.toml"}},
        {"kind_differs_from_manifest",
         TEA_FIXTURE_GOOD_BACKEND,
         "good-backend",
         "observer",
         {"is a backend plugin", "says observer", "good-backend.toml"}},
        {"observer_declared_as_login",
         TEA_FIXTURE_GOOD_OBSERVER,
         "good-observer",
         "login",
         {"is an observer plugin", "says login"}},
    };
}

class LoaderRefusal : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(LoaderRefusal, NamesTheFileWhatWasExpectedAndWhatWasFound) {
    const auto &c = GetParam();
    const TempDir dir;
    write_manifest(dir.path(), c.manifest_name, c.kind, c.library);
    const auto refusal = refusal_of(dir.path());
    EXPECT_THAT(refusal, HasSubstr(c.library)) << "the refusal must name the library";
    for (const auto &expected : c.expected) {
        EXPECT_THAT(refusal, HasSubstr(expected));
    }
    EXPECT_THAT(refusal, Not(HasSubstr("\n"))) << "a refusal is one sentence";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoaderRefusal, ::testing::ValuesIn(refusal_cases()),
                         [](const auto &test_info) { return test_info.param.id; });

// load_plugin, called directly, refuses with the same sentence (std::runtime_error).
TEST(LoadPlugin, ThrowsTheRefusalForAManifestItIsHanded) {
    const TempDir dir;
    const auto file =
        write_manifest(dir.path(), "abi-major-next", "backend", TEA_FIXTURE_ABI_MAJOR_NEXT);
    const auto manifest = read_manifest(file, dir.path());
    try {
        (void)load_plugin(manifest);
        FAIL() << "expected a refusal";
    } catch (const std::runtime_error &e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr(TEA_FIXTURE_ABI_MAJOR_NEXT),
                                    HasSubstr("was built for plugin ABI 2." +
                                              std::to_string(TEA_ABI_MINOR))));
    }
}

// A plugin that implements 1.3 and a manifest that says the header's newest minor: the host would
// send it fields it never heard of, and `plugins` would show a minor it does not implement.
TEST(LoadPlugin, RefusesAManifestWhoseMinorDiffersFromTheDescriptors) {
    const TempDir dir;
    write_manifest(dir.path(), "backend-abi-1-3", "backend", TEA_FIXTURE_BACKEND_ABI_1_3,
                   "1." + std::to_string(TEA_ABI_MINOR));
    const auto refusal = refusal_of(dir.path());
    EXPECT_THAT(refusal, AllOf(HasSubstr(TEA_FIXTURE_BACKEND_ABI_1_3),
                               HasSubstr("declares plugin ABI 1.3 in its descriptor (abi_minor 3)"),
                               HasSubstr((dir.path() / "backend-abi-1-3.toml").string()),
                               HasSubstr("says abi = \"1." + std::to_string(TEA_ABI_MINOR))));
}

// The same plugin with a manifest that agrees: loaded, and asked only what 1.3 knows.
TEST(LoadPlugin, AsksAPluginOnlyForTheCapabilitiesOfTheMinorItDeclares) {
    const TempDir dir;
    write_manifest(dir.path(), "backend-abi-1-3", "backend", TEA_FIXTURE_BACKEND_ABI_1_3, "1.3");
    const auto entry = discover_one(dir.path());
    ASSERT_NE(entry.plugin, nullptr) << entry.refusal;
    const auto &caps = entry.plugin->capabilities();
    EXPECT_TRUE(caps.target_start_kind);
    EXPECT_TRUE(caps.setup_mark);
    EXPECT_TRUE(caps.unmade_directories);
    EXPECT_FALSE(caps.observed);
    EXPECT_FALSE(caps.staged);
    EXPECT_FALSE(caps.call_identity);
}

// Each minor adds exactly its own capability to the ones before it.
TEST(Capabilities, EachMinorAddsItsOwn) {
    using C = Capabilities;
    const auto count = [](const C &c) {
        return int{c.target_start_kind} + int{c.setup_mark} + int{c.unmade_directories} +
               int{c.observed} + int{c.staged} + int{c.call_identity} + int{c.login_grant} +
               int{c.login_files} + int{c.bridge} + int{c.new_session};
    };
    for (int minor = TEA_ABI_1_0; minor <= TEA_ABI_MINOR; ++minor) {
        EXPECT_EQ(count(C::of_minor(minor)), minor) << "1." << minor;
        // 1.8 gave two kinds one capability each.
        EXPECT_EQ(C::of_minor(minor).egress_pin, C::of_minor(minor).login_files) << "1." << minor;
    }
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_0).target_start_kind);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_1).target_start_kind);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_2).unmade_directories);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_3).unmade_directories);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_3).observed);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_4).observed);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_4).staged);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_5).staged);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_5).call_identity);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_6).call_identity);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_6).login_grant);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_7).login_grant);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_7).login_files);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_8).login_files);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_8).bridge);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_9).bridge);
    EXPECT_FALSE(C::of_minor(TEA_ABI_1_9).new_session);
    EXPECT_TRUE(C::of_minor(TEA_ABI_1_10).new_session);
}

// ---------------------------------------------------------------------------
// Acceptances.

struct AcceptCase {
    std::string id;
    std::string library;
    std::string name;
    std::string kind;
};

void PrintTo(const AcceptCase &c, std::ostream *out) {
    *out << c.id;
}

class LoaderAcceptance : public ::testing::TestWithParam<AcceptCase> {};

TEST_P(LoaderAcceptance, LoadsCreatesAndProbes) {
    const auto &c = GetParam();
    const TempDir dir;
    const auto file = write_manifest(dir.path(), c.name, c.kind, c.library);
    const auto entry = discover_one(dir.path());
    ASSERT_NE(entry.plugin, nullptr) << entry.refusal;
    EXPECT_EQ(entry.refusal, "");
    const auto &plugin = *entry.plugin;
    EXPECT_EQ(plugin.name(), c.name);
    EXPECT_EQ(to_string(plugin.kind()), c.kind);
    EXPECT_EQ(plugin.abi_major(), TEA_ABI_MAJOR);
    EXPECT_EQ(plugin.abi_minor(), TEA_ABI_MINOR);
    EXPECT_EQ(plugin.manifest().file, file);
    EXPECT_EQ(plugin.manifest().library, std::filesystem::path{c.library});
    ASSERT_NE(plugin.host(), nullptr);
    EXPECT_EQ(plugin.host()->struct_size, sizeof(tea_host_services));
    const auto instance = plugin.create("{}");
    ASSERT_NE(instance, nullptr);
    EXPECT_TRUE(instance->probe().available);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, LoaderAcceptance,
    ::testing::Values(
        AcceptCase{"good_backend", TEA_FIXTURE_GOOD_BACKEND, "good-backend", "backend"},
        AcceptCase{"good_observer", TEA_FIXTURE_GOOD_OBSERVER, "good-observer", "observer"},
        AcceptCase{"good_egress", TEA_FIXTURE_GOOD_EGRESS, "good-egress", "egress"},
        AcceptCase{"good_login", TEA_FIXTURE_GOOD_LOGIN, "good-login", "login"},
        // A later minor's bigger structs, at this host's minor: the host reads
        // the members it knows and ignores the rest.
        AcceptCase{"descriptor_large", TEA_FIXTURE_DESCRIPTOR_LARGE, "descriptor-large", "backend"},
        AcceptCase{"ops_large", TEA_FIXTURE_OPS_LARGE, "ops-large", "backend"},
        AcceptCase{"cpp_backend", TEA_FIXTURE_CPP_BACKEND, "cpp-backend", "backend"}),
    [](const auto &test_info) { return test_info.param.id; });

// ---------------------------------------------------------------------------
// Calls through the loaded tables.

const LoadedPlugin &load(const TempDir &dir, const std::string &name, const std::string &kind,
                         const std::string &library,
                         std::vector<std::shared_ptr<const LoadedPlugin>> &keep) {
    const auto file = write_manifest(dir.path(), name, kind, library);
    keep.push_back(load_plugin(read_manifest(file, dir.path())));
    return *keep.back();
}

class LoaderCalls : public ::testing::Test {
   protected:
    const LoadedPlugin &load(const std::string &name, const std::string &kind,
                             const std::string &library) {
        return plugins::load(dir_, name, kind, library, keep_);
    }

    static std::string expect_failure(const Instance &instance, Instance::TransformFn fn,
                                      std::string_view input) {
        try {
            const auto out = instance.transform(fn, "prepare", input);
            ADD_FAILURE() << "expected prepare to fail, it returned " << out.size() << " bytes";
        } catch (const std::runtime_error &e) {
            return e.what();
        } catch (...) {
            ADD_FAILURE() << "something other than the host's std::runtime_error escaped";
        }
        return {};
    }

   private:
    TempDir dir_;
    std::vector<std::shared_ptr<const LoadedPlugin>> keep_;
};

TEST_F(LoaderCalls, BackendPrepareReturnsThePluginsDocument) {
    const auto &plugin = load("good-backend", "backend", TEA_FIXTURE_GOOD_BACKEND);
    EXPECT_EQ(plugin.version(), "0.0.1-fixture");
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    EXPECT_EQ(instance->transform(ops.prepare, "prepare", R"({"argv":["true"]})"),
              R"({"plugin":"good-backend","op":"prepare","input":{"argv":["true"]}})");
    // Input crosses as pointer + length: embedded NULs arrive intact.
    const std::string with_nul{"a\0b", 3};
    EXPECT_EQ(instance->transform(ops.prepare, "prepare", with_nul),
              std::string{R"({"plugin":"good-backend","op":"prepare","input":a)"} + '\0' + "b}");
}

TEST_F(LoaderCalls, LargerTablesOfTheSameMinorWork) {
    for (const auto &[name, library] : {std::pair{"descriptor-large", TEA_FIXTURE_DESCRIPTOR_LARGE},
                                        std::pair{"ops-large", TEA_FIXTURE_OPS_LARGE}}) {
        const auto &plugin = load(name, "backend", library);
        const auto instance = plugin.create("{}");
        const auto &ops = std::get<tea_backend_ops>(plugin.ops());
        // The host copied only the members it knows into its own table.
        EXPECT_EQ(ops.base.struct_size, library == std::string{TEA_FIXTURE_OPS_LARGE}
                                            ? sizeof(tea_backend_ops) + sizeof(void *)
                                            : sizeof(tea_backend_ops));
        EXPECT_THAT(instance->transform(ops.prepare, "prepare", "{}"), HasSubstr(name));
    }
}

TEST_F(LoaderCalls, ObserverWrapAndCollect) {
    const auto &plugin = load("good-observer", "observer", TEA_FIXTURE_GOOD_OBSERVER);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_observer_ops>(plugin.ops());
    EXPECT_EQ(instance->transform(ops.wrap, "wrap", "1"),
              R"({"plugin":"good-observer","op":"wrap","input":1})");
    EXPECT_EQ(instance->transform(ops.collect, "collect", "2"),
              R"({"plugin":"good-observer","op":"collect","input":2})");
}

TEST_F(LoaderCalls, LoginGrant) {
    const auto &plugin = load("good-login", "login", TEA_FIXTURE_GOOD_LOGIN);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_login_ops>(plugin.ops());
    EXPECT_EQ(instance->transform(ops.grant, "grant", "{}"),
              R"({"plugin":"good-login","op":"grant","input":{}})");
}

TEST_F(LoaderCalls, EgressOpenAndClose) {
    const auto &plugin = load("good-egress", "egress", TEA_FIXTURE_GOOD_EGRESS);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_egress_ops>(plugin.ops());
    tea_egress_session *session = nullptr;
    tea_buffer info;
    info.limit = plugin_output_limit;
    tea_error error;
    const std::string request = R"({"items":[]})";
    ASSERT_EQ(ops.open(instance->handle(), tea_str{request.data(), request.size()}, &session, &info,
                       &error),
              TEA_OK)
        << error.message;
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(info.data, R"({"plugin":"good-egress","op":"open","input":{"items":[]}})");
    tea_buffer records;
    records.limit = plugin_output_limit;
    ASSERT_EQ(ops.close(instance->handle(), session, &records, &error), TEA_OK) << error.message;
    EXPECT_EQ(records.data, R"({"plugin":"good-egress","op":"close","input":[]})");
}

TEST_F(LoaderCalls, CreateFailureCarriesThePluginsSentence) {
    const auto &plugin = load("create-fails", "backend", TEA_FIXTURE_CREATE_FAILS);
    try {
        (void)plugin.create("{}");
        FAIL() << "expected create to fail";
    } catch (const std::runtime_error &e) {
        EXPECT_THAT(e.what(),
                    AllOf(HasSubstr("plugin 'create-fails'"), HasSubstr(TEA_FIXTURE_CREATE_FAILS),
                          HasSubstr("create failed: fixture: config key 'mode' must be "
                                    "'fast' or 'slow'")));
        // The sentence crossed as pointer + length: nothing past the length was read.
        EXPECT_THAT(e.what(), Not(HasSubstr("IGNORED")));
    }
}

TEST_F(LoaderCalls, UnavailableProbeCarriesTheReasonAndTheWayOut) {
    const auto &plugin = load("unavailable", "backend", TEA_FIXTURE_UNAVAILABLE);
    const auto instance = plugin.create("{}");
    const auto probe = instance->probe();
    EXPECT_FALSE(probe.available);
    EXPECT_EQ(probe.reason,
              "fixture: needs the frobnicator kernel module (load it with modprobe frobnicator)");
}

// The host caps what a plugin can make it allocate: 64 MiB per document.
TEST_F(LoaderCalls, OutputUpToTheLimitIsKept) {
    const auto &plugin = load("bulk-output", "backend", TEA_FIXTURE_BULK_OUTPUT);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    // Positive control: exactly the limit passes.
    EXPECT_EQ(instance->transform(ops.prepare, "prepare", "64").size(), plugin_output_limit);
}

TEST_F(LoaderCalls, OutputPastTheLimitFailsCleanly) {
    const auto &plugin = load("bulk-output", "backend", TEA_FIXTURE_BULK_OUTPUT);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    EXPECT_THAT(expect_failure(*instance, ops.prepare, "65"),
                AllOf(HasSubstr("plugin 'bulk-output': prepare failed"),
                      HasSubstr("the host refused the output past its limit")));
    // The refusal left the instance usable.
    EXPECT_EQ(instance->transform(ops.prepare, "prepare", "1").size(), std::size_t{1} << 20U);
}

TEST(HostServices, BufferAppendRefusesPastTheLimitAndKeepsWhatFits) {
    std::vector<std::shared_ptr<const LoadedPlugin>> keep;
    const TempDir dir;
    const auto &plugin = load(dir, "good-backend", "backend", TEA_FIXTURE_GOOD_BACKEND, keep);
    const auto *host = plugin.host();
    ASSERT_NE(host, nullptr);
    EXPECT_EQ(host->abi_major, TEA_ABI_MAJOR);
    EXPECT_EQ(host->abi_minor, TEA_ABI_MINOR);
    tea_buffer buffer;
    buffer.limit = 4;
    EXPECT_EQ(host->buffer_append(&buffer, tea_str{"abc", 3}), TEA_OK);
    EXPECT_EQ(host->buffer_append(&buffer, tea_str{"de", 2}), TEA_FAILED);
    EXPECT_EQ(host->buffer_append(&buffer, tea_str{"d", 1}), TEA_OK);
    EXPECT_EQ(host->buffer_append(&buffer, tea_str{nullptr, 0}), TEA_OK);
    EXPECT_EQ(host->buffer_append(&buffer, tea_str{nullptr, 1}), TEA_FAILED);
    EXPECT_EQ(host->buffer_append(nullptr, tea_str{"a", 1}), TEA_FAILED);
    EXPECT_EQ(buffer.data, "abcd");
    tea_error error;
    host->set_error(&error, tea_str{"reason and more", 6});
    EXPECT_EQ(error.message, "reason");
    host->set_error(nullptr, tea_str{"x", 1});  // tolerated
}

// Replaces spdlog's default logger for the test's lifetime, keeping what is logged.
class CapturedLog {
   public:
    CapturedLog()
        : previous_(spdlog::default_logger()),
          logger_(std::make_shared<spdlog::logger>(
              "captured", std::make_shared<spdlog::sinks::ostream_sink_st>(text_))) {
        logger_->set_level(spdlog::level::trace);
        logger_->set_pattern("%l %v");
        spdlog::set_default_logger(logger_);
    }
    CapturedLog(const CapturedLog &) = delete;
    CapturedLog &operator=(const CapturedLog &) = delete;
    ~CapturedLog() { spdlog::set_default_logger(previous_); }
    [[nodiscard]] std::string text() const { return text_.str(); }

   private:
    std::ostringstream text_;
    std::shared_ptr<spdlog::logger> previous_;
    std::shared_ptr<spdlog::logger> logger_;
};

// A plugin's log lines land in the runtime's log at the plugin's level, tagged
// with its name. (The tag once dangled: a string_view bound to a temporary copy.)
TEST(HostServices, LogIsTaggedWithThePluginName) {
    std::vector<std::shared_ptr<const LoadedPlugin>> keep;
    const TempDir dir;
    const auto &plugin = load(dir, "good-backend", "backend", TEA_FIXTURE_GOOD_BACKEND, keep);
    const auto *host = plugin.host();
    std::string logged;
    {
        const CapturedLog log;
        host->log(host->context, TEA_LOG_DEBUG, tea_str{"one", 3});
        host->log(host->context, TEA_LOG_INFO, tea_str{"two and more", 3});
        host->log(host->context, TEA_LOG_WARN, tea_str{"three", 5});
        host->log(host->context, TEA_LOG_ERROR, tea_str{"four", 4});
        host->log(host->context, 0, tea_str{nullptr, 0});  // an unknown level is still logged
        host->log(nullptr, TEA_LOG_INFO, tea_str{"five", 4});
        // The fixture logs through the same table at create.
        (void)plugin.create("{}");
        logged = log.text();
    }
    EXPECT_EQ(logged,
              "debug good-backend: one\n"
              "info good-backend: two\n"
              "warning good-backend: three\n"
              "error good-backend: four\n"
              "error good-backend: \n"
              "info plugin: five\n"
              "debug good-backend: fixture: instance created\n");
}

// ---------------------------------------------------------------------------
// The C++ helper: no exception crosses the boundary, and each comes back as a
// status and the plugin's sentence.

class CppPlugin : public LoaderCalls {
   protected:
    void SetUp() override { plugin_ = &load("cpp-backend", "backend", TEA_FIXTURE_CPP_BACKEND); }
    const LoadedPlugin &plugin() const { return *plugin_; }
    const tea_backend_ops &ops() const { return std::get<tea_backend_ops>(plugin_->ops()); }

    // Calls prepare through the raw C table and returns the status and message.
    std::pair<int32_t, std::string> raw_prepare(const Instance &instance,
                                                std::string_view input) const {
        tea_buffer out;
        out.limit = plugin_output_limit;
        tea_error error;
        const auto status =
            ops().prepare(instance.handle(), tea_str{input.data(), input.size()}, &out, &error);
        return {status, error.message};
    }

   private:
    const LoadedPlugin *plugin_ = nullptr;
};

TEST_F(CppPlugin, DescriptorFromTheHelper) {
    EXPECT_EQ(plugin().version(), "2.3.4");
    EXPECT_EQ(ops().base.struct_size, sizeof(tea_backend_ops));
}

TEST_F(CppPlugin, InvalidConfigIsRefusedAtCreate) {
    try {
        (void)plugin().create(R"({"mode":"invalid"})");
        FAIL() << "expected create to fail";
    } catch (const std::runtime_error &e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("create failed: cpp-backend: config key 'mode' must be 'fast' or "
                              "'slow'"));
    }
    // At the ABI: TEA_INVALID, no instance, the sentence set.
    tea_instance *handle = nullptr;
    tea_error error;
    const std::string config = R"({"mode":"invalid"})";
    EXPECT_EQ(
        ops().base.create(plugin().host(), tea_str{config.data(), config.size()}, &handle, &error),
        TEA_INVALID);
    EXPECT_EQ(handle, nullptr);
    EXPECT_THAT(error.message, HasSubstr("cpp-backend: config key 'mode'"));
}

TEST_F(CppPlugin, UnavailableIsAProbeResult) {
    const auto instance = plugin().create(R"({"mode":"unavailable"})");
    const auto probe = instance->probe();
    EXPECT_FALSE(probe.available);
    EXPECT_EQ(probe.reason,
              "cpp-backend: the widget service is not running (start it with systemctl start "
              "widget)");
    tea_error error;
    EXPECT_EQ(ops().base.probe(instance->handle(), &error), TEA_UNAVAILABLE);
}

TEST_F(CppPlugin, PrepareReturnsTheDocument) {
    const auto instance = plugin().create("{}");
    EXPECT_TRUE(instance->probe().available);
    EXPECT_EQ(instance->transform(ops().prepare, "prepare", "[1]"), R"({"cpp":[1]})");
}

TEST_F(CppPlugin, StdExceptionComesBackAsFailedWithItsMessage) {
    const auto instance = plugin().create("{}");
    EXPECT_THAT(expect_failure(*instance, ops().prepare, "throw-runtime-error"),
                HasSubstr("plugin 'cpp-backend': prepare failed: cpp-backend: prepare refused the "
                          "launch spec"));
    EXPECT_EQ(raw_prepare(*instance, "throw-runtime-error").first, TEA_FAILED);
}

TEST_F(CppPlugin, InvalidComesBackAsInvalid) {
    const auto instance = plugin().create("{}");
    const auto [status, message] = raw_prepare(*instance, "throw-invalid");
    EXPECT_EQ(status, TEA_INVALID);
    EXPECT_EQ(message, "cpp-backend: the launch spec has no argv");
}

TEST_F(CppPlugin, NonStdExceptionsAreStoppedToo) {
    const auto instance = plugin().create("{}");
    for (const char *input : {"throw-int", "throw-non-std"}) {
        EXPECT_THAT(expect_failure(*instance, ops().prepare, input),
                    HasSubstr("prepare failed: the plugin failed with an unknown exception"))
            << input;
        EXPECT_EQ(raw_prepare(*instance, input).first, TEA_FAILED) << input;
    }
    // The instance survives its callbacks' exceptions.
    EXPECT_EQ(instance->transform(ops().prepare, "prepare", "0"), R"({"cpp":0})");
}

TEST_F(CppPlugin, OutputPastTheLimitIsRefusedNotTruncated) {
    const auto instance = plugin().create("{}");
    EXPECT_THAT(expect_failure(*instance, ops().prepare, "too-big"),
                HasSubstr("prepare failed: the output exceeds the host's buffer limit"));
}

}  // namespace
}  // namespace tea::plugins
