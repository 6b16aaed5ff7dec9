// The backend's side of a call: its exec plan for a launch spec, and every check of that plan
// against the spec it answers.
//
// How many times a call asks the backend to prepare (each has its reason; see session.cpp):
//   - once, on the normal path (prepare_complete);
//   - (ABI 1.5) twice for a staged call: the staged answer, started at once, then the complete
//     plan, which the staged protocol asks for with the same spec (docs/plugin-authoring.md);
//   - once more for a backend silent on the spec's unmade directories (they are made, and the
//     backend is asked again without them), and for an unconfined plan made for a route or a
//     route's environment it cannot use (asked again without them);
//   - once more for the retry of a call whose confinement ended before its target started;
//   - once for the observer's confirmation probe, a call of its own, before the first audited
//     call of a host (unless a stamp remembers it).
#pragma once

#include <string>

#include "exec/exec_plan.hpp"
#include "files/private_dirs.hpp"
#include "plugins/selection.hpp"

namespace tea::call {

// Every check of a backend's plan against the launch spec it answers, in one place: deferred
// files only in answer to a staged spec; makeDirs only of the spec's unmade directories; only the
// call's own directories lent, none left unmade, none that holds a system directory; the call's
// own identity kept; a grader's plan keeps the invoking identity. Throws tea::Error (125, or 12
// for a workspace that holds a system directory) naming the backend.
void check_plan(const exec::ExecPlan &plan, const exec::LaunchSpec &spec,
                const std::string &backend);

// Makes the directories the plan asks for, all of them the call's own (checked by check_plan).
void make_planned_dirs(const exec::ExecPlan &plan, files::RunDirectory &run_dir);

class Planner {
   public:
    explicit Planner(const plugins::Selected &backend) : backend_(backend) {}

    // One prepare: the backend's answer, parsed, not yet checked (the caller checks the plan it
    // keeps). Exit 12 when the backend fails, 125 for a document that is no exec plan.
    [[nodiscard]] exec::ExecPlan prepare(const exec::LaunchSpec &spec) const;

    // The plan of a call, checked, with the directories it asks for made: one prepare, and one
    // more for a backend that does not answer for the spec's unmade directories (a backend that
    // does not know of them: silence would leave its target's TMPDIR or HOME naming nothing),
    // which gets them made and is asked again.
    exec::ExecPlan prepare_complete(exec::LaunchSpec &spec, files::RunDirectory &run_dir) const;

    [[nodiscard]] const std::string &name() const;

   private:
    const plugins::Selected &backend_;
};

}  // namespace tea::call
