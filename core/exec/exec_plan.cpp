#include "exec/exec_plan.hpp"

namespace tea::exec {

std::string to_json(const LaunchSpec &spec) {
    return documents::encode(spec);
}

LaunchSpec launch_spec_from_json(std::string_view json) {
    return documents::decode_launch_spec(json);
}

std::string to_json(const ExecPlan &plan) {
    return documents::encode(plan);
}

ExecPlan exec_plan_from_json(std::string_view json) {
    return documents::decode_exec_plan(json);
}

}  // namespace tea::exec
