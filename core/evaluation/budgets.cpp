#include "evaluation/budgets.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;

json optional_number(std::uint64_t value) {
    return value == 0 ? json(nullptr) : json(value);
}

std::string plural(std::uint64_t n, const char *one, const char *many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

exec::Budget configured_budget(const config::BudgetSettings &settings) {
    exec::Budget budget;
    budget.memory_bytes = settings.memory_on_host();
    budget.processes = settings.processes;
    budget.cgroups = settings.cgroups;
    budget.memory_is_share = settings.memory_percent != 0;
    return budget;
}

exec::Budget entry_budget(const exec::Budget &configured, const evaluation::Budgets &run,
                          const evaluation::Budgets &entry) {
    auto budget = configured;
    budget.memory_bytes =
        entry.memory_bytes.value_or(run.memory_bytes.value_or(budget.memory_bytes));
    if (entry.memory_bytes || run.memory_bytes) {
        budget.memory_is_share = false;  // the evaluation's own budget is a number of bytes
    }
    budget.processes = entry.processes.value_or(run.processes.value_or(budget.processes));
    return budget;
}

json run_budgets_record(const exec::Budget &run_budget, const evaluation::Evaluation &ev,
                        const std::string &disk_kind, std::uint64_t disk_bytes,
                        const std::string &disk_reason) {
    // Found only when cgroups are wanted: finding them may move the runtime into a cgroup leaf.
    static const exec::CgroupLayout no_cgroups;
    const auto &layout = run_budget.cgroups ? exec::host_cgroup_layout() : no_cgroups;
    const auto enforced = [&](std::uint64_t value, exec::Enforcement by_cgroup, bool share) {
        if (value == 0) {
            return exec::Enforcement::none;
        }
        if (run_budget.cgroups && by_cgroup != exec::Enforcement::none) {
            return by_cgroup;
        }
        return share ? exec::Enforcement::none : exec::Enforcement::rlimit;
    };
    const auto memory_by =
        enforced(run_budget.memory_bytes, layout.memory(), run_budget.memory_is_share);
    const auto processes_by = enforced(run_budget.processes, layout.processes(), false);
    json record{
        {"memoryBytes", optional_number(run_budget.memory_bytes)},
        {"memoryEnforcedBy", exec::to_string(memory_by)},
        {"processes", optional_number(run_budget.processes)},
        {"processesEnforcedBy", exec::to_string(processes_by)},
        {"entries", json::array()},
        {"disk",
         {{"kind", disk_kind},
          {"bytes", optional_number(disk_kind == "none" ? 0 : disk_bytes)},
          {"covers", disk_kind == "none" ? json::array() : json::array({"workspace", "home"})}}}};
    if (!disk_reason.empty()) {
        record["disk"]["reason"] = disk_reason;
    }
    if (auto why = exec::cgroup_unavailable(layout, run_budget, memory_by, processes_by);
        !why.empty()) {
        record["cgroupUnavailable"] = std::move(why);
    }
    for (const auto &entry : ev.registry) {
        if (entry.budgets.memory_bytes || entry.budgets.processes) {
            const auto own = entry_budget(run_budget, {}, entry.budgets);
            record["entries"].push_back({{"entry", entry.interface_id},
                                         {"memoryBytes", optional_number(own.memory_bytes)},
                                         {"processes", optional_number(own.processes)}});
        }
    }
    return record;
}

json call_budget_record(const exec::BudgetReport &report, const exec::Limits &plan) {
    json record{{"memoryBytes", optional_number(report.budget.memory_bytes)},
                {"memoryEnforcedBy", exec::to_string(report.memory)},
                {"processes", optional_number(report.budget.processes)},
                {"processesEnforcedBy", exec::to_string(report.processes)},
                {"oomKills", report.oom_kills},
                {"refusedForks", report.refused_forks}};
    if (report.memory_peak_bytes != 0) {
        record["memoryPeakBytes"] = report.memory_peak_bytes;
    }
    if (report.left_killed != 0) {
        record["leftKilled"] = report.left_killed;
    }
    if (!report.cgroup_unavailable.empty()) {
        record["cgroupUnavailable"] = report.cgroup_unavailable;
    }
    record["backendLimits"] = {{"cpuSeconds", optional_number(plan.cpu_seconds)},
                               {"fileSizeBytes", optional_number(plan.file_size_bytes)},
                               {"processesPerIdentity", optional_number(plan.processes)}};
    return record;
}

json budget_hits(const exec::BudgetReport &report) {
    json hits = json::array();
    if (report.oom_kills != 0) {
        hits.push_back({{"budget", "memory"},
                        {"count", report.oom_kills},
                        {"detail", "the kernel's OOM killer ended " +
                                       plural(report.oom_kills, "process", "processes") +
                                       " of the call at its memory budget of " +
                                       std::to_string(report.budget.memory_bytes) + " bytes"}});
    }
    if (report.refused_forks != 0) {
        hits.push_back(
            {{"budget", "processes"},
             {"count", report.refused_forks},
             {"detail", "the kernel refused " + plural(report.refused_forks, "fork", "forks") +
                            " of the call at its budget of " +
                            std::to_string(report.budget.processes) + " processes"}});
    }
    return hits;
}

}  // namespace tea::evaluation
