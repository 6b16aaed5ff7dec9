#include "config/config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "util/error.hpp"

namespace tea::config {
namespace {

std::string error_of(Builder &builder, std::string_view text,
                     const std::string &origin = "x.toml") {
    try {
        builder.apply_text(text, origin, "/base");
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        return e.what();
    }
    ADD_FAILURE() << "no error for: " << text;
    return {};
}

TEST(Config, EmbeddedDefaultIsTheBuiltInLayer) {
    const Builder builder;
    const auto &c = builder.get();
    EXPECT_EQ(c.backend, "auto");
    EXPECT_EQ(c.backend_order, (std::vector<std::string>{"bubblewrap", "seatbelt"}));
    EXPECT_EQ(c.observer, "auto");
    EXPECT_EQ(c.observer_order, (std::vector<std::string>{"ebpf", "seccomp", "strace"}));
    EXPECT_EQ(c.call.output_cap_bytes, 8U << 20U);
    EXPECT_EQ(c.call.kill_grace.count(), 2000);
    EXPECT_TRUE(c.plugin_paths.empty());
    EXPECT_EQ(c.plugin_config_json("anything"), "{}");
    EXPECT_NE(embedded_default().find("[confinement]"), std::string_view::npos);
}

// Every setting of a configuration, in one comparable value (the layers' names aside).
std::string settings_of(const Config &c) {
    std::string out = c.backend + '|' + c.opt_out_backend + '|' + c.observer + '|' + c.egress;
    for (const auto *list : {&c.backend_order, &c.observer_order}) {
        out += '|';
        for (const auto &item : *list) {
            out += item + ',';
        }
    }
    out += '|';
    for (const auto &p : c.plugin_paths) {
        out += p.string() + ',';
    }
    out += '|' + std::to_string(c.call.output_cap_bytes) + '|' +
           std::to_string(c.call.kill_grace.count()) + '|' + c.plugin_tables.dump();
    const auto &e = c.executor;
    out += '|' + e.kind + ',' + std::to_string(e.jobs) + ',' + std::to_string(e.retries) + ',' +
           std::to_string(e.slurm_pending_limit_s) + ',' + std::to_string(e.slurm_lease_s) + ',' +
           e.slurm_partition + ',' + e.slurm_account;
    for (const auto &option : e.slurm_options) out += ',' + option;
    const auto &b = c.budgets;
    out += '|' + std::to_string(b.memory_bytes) + ',' + std::to_string(b.memory_percent) + ',' +
           std::to_string(b.processes) + ',' + (b.cgroups ? "auto" : "off") + ',' + b.disk + ',' +
           std::to_string(b.disk_bytes);
    return out;
}

// The binary carries config/default.toml without its comments; the file, read over it as a layer,
// must change nothing (a setting lost or altered on the way in would show here), and its own
// settings must be the ones the binary has (a setting the binary kept from elsewhere would too).
TEST(Config, EmbeddedDefaultIsTheDocumentedFileWithoutItsComments) {
    std::ifstream in{TEA_DEFAULT_CONFIG_FILE};
    ASSERT_TRUE(in) << TEA_DEFAULT_CONFIG_FILE;
    const std::string file{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    ASSERT_NE(file.find("\n# "), std::string::npos) << "the documented file has comments";
    // No comment line is left (a '#' inside a value would be the setting's own).
    const std::string embedded_text{embedded_default()};
    EXPECT_NE(embedded_text.front(), '#');
    EXPECT_EQ(embedded_text.find("\n#"), std::string::npos);

    const Builder embedded;
    Builder both;
    both.apply_text(file, TEA_DEFAULT_CONFIG_FILE, "/");
    EXPECT_EQ(settings_of(both.get()), settings_of(embedded.get()));
    // The comparison sees a difference: the file with one setting changed is not the binary's.
    auto altered = file;
    const std::string setting = "plugin = \"connect\"";
    ASSERT_NE(altered.find(setting), std::string::npos);
    altered.replace(altered.find(setting), setting.size(), "plugin = \"other\"");
    Builder changed;
    changed.apply_text(altered, "changed", "/");
    EXPECT_NE(settings_of(changed.get()), settings_of(embedded.get()));
}

TEST(Config, LaterLayersOverrideEarlierOnesKeyByKey) {
    Builder builder;
    builder.apply_text("[confinement]\nbackend = \"opt-out\"\n[call]\nkill_grace_ms = 10\n", "user",
                       "/u");
    builder.apply_text("[call]\noutput_cap_bytes = 5\n", "explicit", "/e");
    const auto &c = builder.get();
    EXPECT_EQ(c.backend, "opt-out");
    EXPECT_EQ(c.call.kill_grace.count(), 10);  // kept from the user layer
    EXPECT_EQ(c.call.output_cap_bytes, 5U);
    EXPECT_EQ(c.backend_order.size(), 2U);  // untouched default
    EXPECT_EQ(c.layers.back(), "explicit");
}

TEST(Config, FlagsOverrideEveryFile) {
    Builder builder;
    builder.apply_text("[confinement]\nbackend = \"a\"\n[audit]\nobserver = \"b\"\n", "f", "/");
    builder.apply_flags(std::string{"c"}, std::string{"d"});
    EXPECT_EQ(builder.get().backend, "c");
    EXPECT_EQ(builder.get().observer, "d");
    EXPECT_THROW(builder.apply_flags(std::string{"../x"}, std::nullopt), Error);
}

TEST(Config, PluginTablesReachThePluginAsMergedJson) {
    Builder builder;
    builder.apply_text("[plugin.bw]\nsize = 3\nlist = [1, 2]\n[plugin.bw.inner]\nflag = true\n",
                       "a", "/");
    builder.apply_text("[plugin.bw]\nsize = 4\nname = \"n\"\n", "b", "/");
    const auto json = nlohmann::json::parse(builder.get().plugin_config_json("bw"));
    EXPECT_EQ(json["size"], 4);
    EXPECT_EQ(json["name"], "n");
    EXPECT_EQ(json["list"], nlohmann::json::array({1, 2}));
    EXPECT_EQ(json["inner"]["flag"], true);
}

TEST(Config, DatesAndTimesReachThePluginAsTheirTomlText) {
    Builder builder;
    builder.apply_text(
        "[plugin.bw]\nday = 1979-05-27\nat = 07:32:00\nstamp = 1979-05-27T07:32:00Z\n"
        "local = 1979-05-27T07:32:00\nlist = [1979-05-27]\n",
        "a", "/");
    const auto json = nlohmann::json::parse(builder.get().plugin_config_json("bw"));
    EXPECT_EQ(json["day"], "1979-05-27");
    EXPECT_EQ(json["at"], "07:32:00");
    EXPECT_EQ(json["stamp"], "1979-05-27T07:32:00Z");
    EXPECT_EQ(json["local"], "1979-05-27T07:32:00");
    EXPECT_EQ(json["list"], nlohmann::json::array({"1979-05-27"}));
}

TEST(Config, RelativePluginPathsResolveAgainstTheFile) {
    Builder builder;
    builder.apply_text("[plugins]\npaths = [\"rel/dir\", \"/abs\"]\n", "f", "/etc/tea");
    EXPECT_EQ(builder.get().plugin_paths,
              (std::vector<std::filesystem::path>{"/etc/tea/rel/dir", "/abs"}));
}

// The host paths a run must leave unchanged: none by default, relative ones against the file that
// names them, and an empty one refused with its key.
TEST(Config, HostUnchangedPathsResolveAgainstTheFile) {
    Builder builder;
    EXPECT_TRUE(builder.get().host_unchanged.empty());
    builder.apply_text("[detectors]\nhost_unchanged = [\"keys/id\", \"/abs/file\"]\n", "f",
                       "/etc/tea");
    ASSERT_EQ(builder.get().host_unchanged.size(), 2U);
    EXPECT_EQ(builder.get().host_unchanged[0], "/etc/tea/keys/id");
    EXPECT_EQ(builder.get().host_unchanged[1], "/abs/file");
    const auto message = error_of(builder, "[detectors]\nhost_unchanged = [\"\"]\n");
    EXPECT_NE(message.find("detectors.host_unchanged[0]: expected a path"), std::string::npos)
        << message;
}

// What makes a run's trials: this machine one at a time by default; a Slurm array's options
// that the executor sets itself, and names Slurm would read as something else, are refused.
TEST(Config, TheExecutorIsLocalByDefaultAndItsSlurmOptionsAreChecked) {
    Builder builder;
    EXPECT_EQ(builder.get().executor.kind, "local");
    EXPECT_EQ(builder.get().executor.jobs, 1);
    EXPECT_EQ(builder.get().executor.retries, 0);
    EXPECT_EQ(builder.get().executor.slurm_pending_limit_s, 3600);
    EXPECT_EQ(builder.get().executor.slurm_lease_s, 120);
    builder.apply_text(
        "[executor]\nkind = \"slurm\"\njobs = 8\nretries = 1\nslurm_pending_limit_s = 60\n"
        "slurm_lease_s = 600\n"
        "slurm_partition = \"eval-1\"\n"
        "slurm_account = \"team_a\"\nslurm_options = [\"--qos=eval\", \"--mem=8G\", "
        "\"--cpus-per-task=2\"]\n",
        "f", "/etc/tea");
    const auto &e = builder.get().executor;
    EXPECT_EQ(e.kind, "slurm");
    EXPECT_EQ(e.jobs, 8);
    EXPECT_EQ(e.retries, 1);
    EXPECT_EQ(e.slurm_pending_limit_s, 60);
    EXPECT_EQ(e.slurm_lease_s, 600);
    EXPECT_EQ(e.slurm_partition, "eval-1");
    EXPECT_EQ(e.slurm_account, "team_a");
    EXPECT_EQ(e.slurm_options,
              (std::vector<std::string>{"--qos=eval", "--mem=8G", "--cpus-per-task=2"}));
    for (const auto &[text, why] : std::vector<std::pair<std::string, std::string>>{
             {"kind = \"pbs\"", "executor.kind"},
             {"jobs = 0", "executor.jobs"},
             {"jobs = 65", "executor.jobs"},
             {"retries = 2", "executor.retries"},
             {"retries = -1", "executor.retries"},
             {"slurm_pending_limit_s = 0", "executor.slurm_pending_limit_s"},
             {"slurm_lease_s = 9", "executor.slurm_lease_s"},
             {"slurm_lease_s = 86401", "executor.slurm_lease_s"},
             {"slurm_partition = \"a b\"", "is not a Slurm name"},
             {"slurm_account = \"a\\nb\"", "is not a Slurm name"},
             {"slurm_options = [\"--array=1-2\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--qos=x\", \"-o\", \"/tmp/x\"]", "executor.slurm_options[1]"},
             {"slurm_options = [\"-o/tmp/x\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--output=/tmp/x\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--chdir\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--wait\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"-c\", \"2\"]", "executor.slurm_options[1]"},
             {"slurm_options = [\"--arr=1-2\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--out=/tmp/x\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"-Qa1-2\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"--clusters=other\"]", "executor.slurm_options[0]"},
             {"slurm_options = [\"-Mother\"]", "executor.slurm_options[0]"}}) {
        const auto message = error_of(builder, "[executor]\n" + text + "\n");
        EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
    }
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
    Builder builder;
    const auto message = error_of(builder, "\n[confinement]\nbackend = \"a\"\nbakend = \"b\"\n");
    EXPECT_NE(message.find("x.toml:4:"), std::string::npos) << message;
    EXPECT_NE(message.find("confinement.bakend"), std::string::npos) << message;
    EXPECT_NE(message.find("unknown key"), std::string::npos) << message;
}

TEST(Config, UnknownKeyNamesTheKnownKeysAndTheOneMeant) {
    Builder builder;
    auto message = error_of(builder, "[confinement]\nbakend = \"b\"\n");
    EXPECT_NE(message.find("confinement.bakend: unknown key (known keys here: backend, auto_order, "
                           "opt_out_backend, uid_range); did you mean 'backend'?"),
              std::string::npos)
        << message;
    message = error_of(builder, "[budget]\nmemory = 0\n");
    EXPECT_NE(message.find(
                  "budget: unknown key (known keys here: confinement, audit, plugins, "
                  "call, egress, budgets, detectors, executor, plugin); did you mean 'budgets'?"),
              std::string::npos)
        << message;
    message = error_of(builder, "[budgets]\ndisk = \"tmfps\"\n");
    EXPECT_NE(message.find(R"(found "tmfps"; did you mean 'tmpfs'?)"), std::string::npos)
        << message;
    // A word near none of them is answered with the list alone.
    message = error_of(builder, "[call]\nretries = 3\n");
    EXPECT_NE(message.find("call.retries: unknown key (known keys here: output_cap_bytes, "
                           "kill_grace_ms)"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;
}

TEST(Config, AFileThatCannotBeReadSaysWhy) {
    Builder builder;
    try {
        builder.apply_file("/nonexistent-tea-test/config.toml");
        ADD_FAILURE() << "a missing file was read";
    } catch (const Error &e) {
        EXPECT_STREQ(e.what(),
                     "/nonexistent-tea-test/config.toml: cannot read the configuration file: No "
                     "such file or directory");
    }
}

// A directory or a device in place of the file is refused, never read as an empty (or endless)
// configuration; the control is the same name as a file, which is read.
TEST(Config, AConfigurationThatIsNoRegularFileIsRefused) {
    std::string made = (std::filesystem::temp_directory_path() / "tea-config-XXXXXX").string();
    ASSERT_NE(::mkdtemp(made.data()), nullptr);
    const std::filesystem::path dir{made};
    for (const std::string &path : {dir.string(), std::string{"/dev/zero"}}) {
        Builder builder;
        try {
            builder.apply_file(path);
            ADD_FAILURE() << path << " was read as a configuration";
        } catch (const Error &e) {
            EXPECT_EQ(std::string{e.what()},
                      path +
                          ": the configuration file is not a regular file (a directory, a "
                          "device or a fifo)");
        }
    }
    std::ofstream{dir / "c.toml"} << "[call]\nkill_grace_ms = 7\n";
    Builder builder;
    builder.apply_file(dir / "c.toml");
    EXPECT_EQ(builder.get().call.kill_grace.count(), 7);
    std::filesystem::remove_all(dir);
}

TEST(Config, UnknownTopLevelTable) {
    Builder builder;
    const auto message = error_of(builder, "[network]\nallow = true\n");
    EXPECT_NE(message.find("x.toml:1:"), std::string::npos) << message;
    EXPECT_NE(message.find("network"), std::string::npos) << message;
}

TEST(Config, WrongTypeNamesWhatWasExpectedAndFound) {
    Builder builder;
    auto message = error_of(builder, "[call]\nkill_grace_ms = \"soon\"\n");
    EXPECT_NE(message.find("x.toml:2:"), std::string::npos) << message;
    EXPECT_NE(message.find("call.kill_grace_ms"), std::string::npos) << message;
    EXPECT_NE(message.find("expected an integer, found a string"), std::string::npos) << message;
    message = error_of(builder, "[confinement]\nauto_order = [\"a\", 3]\n");
    EXPECT_NE(message.find("confinement.auto_order[1]"), std::string::npos) << message;
    message = error_of(builder, "confinement = 1\n");
    EXPECT_NE(message.find("expected a table"), std::string::npos) << message;
    message = error_of(builder, "[call]\noutput_cap_bytes = -1\n");
    EXPECT_NE(message.find("at least 0"), std::string::npos) << message;
}

TEST(Config, AKillGraceWhoseDeadlineWouldPassTheClocksRangeIsRefused) {
    // Near 9.2e12 ms, the grace's end wraps past the steady clock's range into the past.
    Builder builder;
    const auto message = error_of(builder, "[call]\nkill_grace_ms = 9200000000000\n");
    EXPECT_NE(message.find("x.toml:2:17: call.kill_grace_ms: expected at most 1000000000000, "
                           "found 9200000000000"),
              std::string::npos)
        << message;
    builder.apply_text("[call]\nkill_grace_ms = 1000000000000\n", "y.toml", "/base");
    EXPECT_EQ(builder.get().call.kill_grace.count(), 1'000'000'000'000);
}

TEST(Config, AUidRangeIsTwoIdsThatCanBeACallsIdentityOrNone) {
    Builder builder;
    EXPECT_FALSE(builder.get().uid_range) << "no range unless configured";
    builder.apply_text("[confinement]\nuid_range = [2147418112, 2147483646]\n", "x.toml", "/base");
    ASSERT_TRUE(builder.get().uid_range);
    EXPECT_EQ(*builder.get().uid_range, (UidRange{2147418112U, 2147483646U}));
    // A later layer takes it away again.
    builder.apply_text("[confinement]\nuid_range = []\n", "y.toml", "/base");
    EXPECT_FALSE(builder.get().uid_range);
    for (const auto &[text, finding] :
         {std::pair{"[5000]", "expected [FIRST, LAST]"},
          std::pair{"[5000, 6000, 7000]", "expected [FIRST, LAST]"},
          std::pair{"\"5000-6000\"", "expected [FIRST, LAST]"}, std::pair{"[0, 10]", "at least 1"},
          std::pair{"[6000, 5000]", "at least 6000"},
          // The overflow id would own, in the target's view, every file a mapping leaves out.
          std::pair{"[60000, 70000]", "holds 65534"},
          std::pair{"[65535, 65535]", "holds 65534, 65535"},
          std::pair{"[4294967290, 4294967295]", "above 4294967294"}}) {
        const auto message =
            error_of(builder, std::string{"[confinement]\nuid_range = "} + text + "\n");
        EXPECT_NE(message.find("confinement.uid_range"), std::string::npos) << message;
        EXPECT_NE(message.find(finding), std::string::npos) << text << ": " << message;
    }
}

TEST(Config, BudgetsHaveDefaultsThatKeepTheHostAliveAndEachLayerMaySetThem) {
    Builder builder;
    const auto &b = builder.get().budgets;
    EXPECT_EQ(b.memory_percent, 50U);
    EXPECT_EQ(b.memory_bytes, 0U);
    EXPECT_EQ(b.processes, 4096U);
    EXPECT_TRUE(b.cgroups);
    EXPECT_EQ(b.disk, "tmpfs");
    EXPECT_EQ(b.disk_bytes, std::uint64_t{4} << 30U);
    // Half the host's memory, from /proc/meminfo.
    std::ifstream meminfo{"/proc/meminfo"};
    std::string label;
    std::uint64_t kib = 0;
    meminfo >> label >> kib;
    EXPECT_EQ(b.memory_on_host(), kib * 1024 / 100 * 50);

    builder.apply_text(
        "[budgets]\nmemory = 134217728\nprocesses = 64\ncgroup = \"off\"\n"
        "disk = \"image\"\ndisk_bytes = 1073741824\n",
        "x.toml", "/base");
    const auto &set = builder.get().budgets;
    EXPECT_EQ(set.memory_on_host(), 134217728U);
    EXPECT_EQ(set.memory_percent, 0U);
    EXPECT_EQ(set.processes, 64U);
    EXPECT_FALSE(set.cgroups);
    EXPECT_EQ(set.disk, "image");
    EXPECT_EQ(set.disk_bytes, 1073741824U);
    builder.apply_text("[budgets]\nmemory = \"25%\"\n", "y.toml", "/base");
    EXPECT_EQ(builder.get().budgets.memory_percent, 25U);
    EXPECT_EQ(builder.get().budgets.processes, 64U);  // merged key by key
}

TEST(Config, ABadBudgetNamesTheFileTheLineAndTheKey) {
    Builder builder;
    const auto expect = [&](const std::string &body, const std::string &key,
                            const std::string &what) {
        const auto message = error_of(builder, "[budgets]\n" + body + "\n", "budgets.toml");
        EXPECT_NE(message.find("budgets.toml:2:"), std::string::npos) << message;
        EXPECT_NE(message.find(key + ": "), std::string::npos) << message;
        EXPECT_NE(message.find(what), std::string::npos) << message;
    };
    expect("memory = \"150%\"", "budgets.memory", R"(from "1%" to "100%", found "150%")");
    expect("memory = \"lots\"", "budgets.memory", R"(found "lots")");
    expect("memory = 4096", "budgets.memory", "at least 16777216 bytes");
    expect("memory = -1", "budgets.memory", "expected at least 0");
    expect("processes = -1", "budgets.processes", "expected at least 0");
    expect("processes = \"many\"", "budgets.processes", "expected an integer, found a string");
    expect("cgroup = \"maybe\"", "budgets.cgroup", R"(one of "auto", "off")");
    expect("disk = \"nfs\"", "budgets.disk", R"(one of "tmpfs", "image", "none")");
    expect("disk_bytes = 10", "budgets.disk_bytes", "expected at least 1048576");
    expect("swap = 0", "budgets.swap", "unknown key (known keys here: memory, processes");
    // Nothing of a refused layer was kept.
    EXPECT_EQ(builder.get().budgets.memory_percent, 50U);
}

TEST(Config, InvalidTomlNamesLineAndColumn) {
    Builder builder;
    const auto message = error_of(builder, "[call]\nkill_grace_ms = = 3\n");
    EXPECT_NE(message.find("x.toml:2:"), std::string::npos) << message;
    EXPECT_NE(message.find("invalid TOML"), std::string::npos) << message;
}

TEST(Config, HostileTextNeverCrashes) {
    Builder builder;
    const std::string hostile[] = {std::string("\0\0\0", 3),
                                   "\xff\xfe[call]",
                                   "[[[[[[",
                                   "a = \"\\u0000\"",
                                   std::string(100000, '['),
                                   "[plugin]\n\"../evil\" = {}\n",
                                   "[plugin.x]\nv = 1979-05-27\n"};
    for (const auto &text : hostile) {
        try {
            builder.apply_text(text, "h", "/");
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
        }
    }
}

TEST(Config, AFailingLayerChangesNothing) {
    Builder builder;
    const auto before = builder.get().backend;
    (void)error_of(builder, "[confinement]\nbackend = \"changed\"\n[call]\nbogus = 1\n");
    EXPECT_EQ(builder.get().backend, before);
}

TEST(Config, InvalidPluginNamesAreRefused) {
    Builder builder;
    EXPECT_NE(
        error_of(builder, "[confinement]\nbackend = \"a/b\"\n").find("not a valid plugin name"),
        std::string::npos);
    EXPECT_NE(error_of(builder, "[plugin]\n\"../x\" = {}\n").find("not a valid plugin name"),
              std::string::npos);
}

TEST(Config, LoadReadsUserThenExplicitFileThenFlags) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("tea-config-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    {
        std::ofstream{dir / "user.toml"}
            << "[confinement]\nbackend = \"from-user\"\n[audit]\nobserver = \"u\"\n";
        std::ofstream{dir / "explicit.toml"} << "[audit]\nobserver = \"from-explicit\"\n";
    }
    Sources sources;
    sources.user_file = dir / "user.toml";
    auto c = load(sources);
    EXPECT_EQ(c.backend, "from-user");
    sources.explicit_file = dir / "explicit.toml";
    c = load(sources);
    EXPECT_EQ(c.observer, "from-explicit");
    EXPECT_EQ(c.backend, "from-user");
    sources.backend_flag = "flag";
    EXPECT_EQ(load(sources).backend, "flag");
    sources.explicit_file = dir / "missing.toml";
    EXPECT_THROW(load(sources), Error);
    // A missing user file is no error: most users have none.
    sources = Sources{};
    sources.user_file = dir / "none.toml";
    EXPECT_EQ(load(sources).backend, "auto");
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tea::config
