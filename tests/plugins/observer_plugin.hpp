// One observer plugin of the build, loaded through its manifest and driven as the runtime drives
// it: wrap a plan, run it, collect the call. Shared by the observers' tests against real processes
// (observer-ebpf/kernel_test.cpp, observer-seccomp/kernel_test.cpp), outside any sandbox.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "audit/observation.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {

struct Observed {
    test::Outcome outcome;
    audit::Observation observation;
};

// Created and probed once, as the runtime's session does (the eBPF observer loads its programs
// once per session).
class ObserverPlugin {
   public:
    ObserverPlugin(const std::string &name, const std::filesystem::path &library,
                   const std::string &config = "{}")
        : tmp_{"tea-observer-manifest"} {
        std::ofstream{tmp_.path() / (name + ".toml")}
            << "name = \"" << name << "\"\nkind = \"observer\"\nabi = \"1.6\"\nlibrary = \""
            << library.string() << "\"\n";
        plugin_ = load_plugin(read_manifest(tmp_.path() / (name + ".toml"), library.parent_path()));
        instance_ = plugin_->create(config);
        probe_ = instance_->probe();
    }

    [[nodiscard]] const ProbeResult &probe() const { return probe_; }

    // Runs `argv` wrapped by the observer, as the runtime runs a plan, and collects the call.
    // `launcher`, when given, goes in front of the wrapped plan (setpriv, to run it as another
    // user), and `trace_owner` is then given the trace folder.
    Observed observe(const std::vector<std::string> &argv,
                     const std::vector<std::string> &launcher = {},
                     std::optional<uid_t> trace_owner = std::nullopt) const {
        const test::TempDir trace{"tea-observer-trace"};
        if (trace_owner && ::chown(trace.path().c_str(), *trace_owner, *trace_owner) != 0) {
            return {};
        }
        const auto wrapped = wrap(argv, trace.path());
        auto run_argv = launcher;
        const auto planned = wrapped["argv"].get<std::vector<std::string>>();
        run_argv.insert(run_argv.end(), planned.begin(), planned.end());
        Observed out;
        out.outcome = test::run(run_argv, wrapped["env"].get<std::vector<std::string>>());
        out.observation = collect(trace.path());
        return out;
    }

    // The plan the observer makes of `argv` for a call traced in `trace_dir`.
    [[nodiscard]] nlohmann::json wrap(const std::vector<std::string> &argv,
                                      const std::filesystem::path &trace_dir) const {
        documents::ExecPlan plan;
        plan.argv = argv;
        plan.env = {"PATH=/usr/bin:/bin", "LANG=C"};
        plan.cwd = "/";
        plan.confinement = "none";  // no sandbox: the observer alone is under test
        const nlohmann::json request{{"plan", nlohmann::json::parse(documents::encode(plan))},
                                     {"traceDir", trace_dir.string()}};
        return nlohmann::json::parse(instance_->transform(ops().wrap, "wrap", request.dump()));
    }

    [[nodiscard]] audit::Observation collect(const std::filesystem::path &trace_dir) const {
        const nlohmann::json request{{"traceDir", trace_dir.string()}, {"initialCwd", "/"}};
        return audit::observation_from_json(
            instance_->transform(ops().collect, "collect", request.dump()));
    }

   private:
    [[nodiscard]] const tea_observer_ops &ops() const {
        return std::get<tea_observer_ops>(plugin_->ops());
    }

    test::TempDir tmp_;
    std::shared_ptr<const LoadedPlugin> plugin_;
    std::unique_ptr<Instance> instance_;
    ProbeResult probe_;
};

}  // namespace tea::plugins
