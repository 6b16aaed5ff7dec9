// The budgets of calls as the commands decide them (the configuration's [budgets], a run's
// evaluation.json, a registry entry), and how the records name them and their hits.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "evaluation/evaluation.hpp"
#include "exec/call_cgroup.hpp"
#include "exec/exec_plan.hpp"

namespace tea::evaluation {

// A call's budget under the configuration alone (exec). Throws tea::Error when the memory
// budget is a share of a host memory that cannot be read.
exec::Budget configured_budget(const config::BudgetSettings &settings);

// An entry's calls' budget in a run: the entry's, else the evaluation's, else `configured`.
exec::Budget entry_budget(const exec::Budget &configured, const evaluation::Budgets &run,
                          const evaluation::Budgets &entry);

// run.json's "budgets": each limit and what enforces it on this host, the entries with their own,
// and the trials' file system (`disk_kind` "none" with `disk_reason` when there is none).
nlohmann::json run_budgets_record(const exec::Budget &run_budget, const evaluation::Evaluation &ev,
                                  const std::string &disk_kind, std::uint64_t disk_bytes,
                                  const std::string &disk_reason);

// A call record's "budget": the limits, what enforced them, what the kernel counted, and the
// backend's own resource limits of the call's processes (`plan`).
nlohmann::json call_budget_record(const exec::BudgetReport &report, const exec::Limits &plan);

// One item per budget the call reached: {"budget", "count", "detail"}; empty when none.
nlohmann::json budget_hits(const exec::BudgetReport &report);

}  // namespace tea::evaluation
