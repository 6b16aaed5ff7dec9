// The two documents of a call: the launch spec the core hands a backend, and the exec plan the
// backend hands back for the core's call runner to execute. The types and their codecs are the
// SDK's (tea/documents.hpp), so the core reads and writes exactly what a plugin built with the
// SDK does; this header gives them the core's names.
#pragma once

#include <string>
#include <string_view>
#include <tea/documents.hpp>

namespace tea::exec {

using Limits = documents::Limits;
using EgressRoute = documents::EgressRoute;
using ReadOnlyOver = documents::ReadOnlyOver;
using LaunchSpec = documents::LaunchSpec;
using PlanFile = documents::PlanFile;
using Lend = documents::Lend;
using AuditHints = documents::AuditHints;
using RunAs = documents::RunAs;
using ChildSetup = documents::ChildSetup;
using Holder = documents::Holder;
using ExecPlan = documents::ExecPlan;

// Whether the plan's own process has files whose content is not written yet (ABI 1.5).
using documents::has_deferred_files;

std::string to_json(const LaunchSpec &spec);
LaunchSpec launch_spec_from_json(std::string_view json);  // throws std::invalid_argument
std::string to_json(const ExecPlan &plan);
// Checks every field; throws std::invalid_argument naming the field.
ExecPlan exec_plan_from_json(std::string_view json);

}  // namespace tea::exec
