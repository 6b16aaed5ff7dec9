// contract.json: what an evaluation declares it exercises, checked against what its folder holds
// (docs/evaluation-format.md). A contract that names an entry, probe, artifact or corpus file the
// evaluation does not have, or leaves out one it has, is refused: a reader of the contract (a
// reviewer, a qualification) would otherwise trust coverage the probes do not give.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "evaluation/evaluation.hpp"
#include "evaluation/probe_fields.hpp"

namespace tea::evaluation {

// Checks the parsed contract.json against the loaded evaluation (its probes, registry and corpus);
// every mismatch is reported with its field ("interfaces[2]", "artifacts.greeter").
void check_contract(const nlohmann::json &contract, const Evaluation &evaluation,
                    const ProbeProblem &report);

}  // namespace tea::evaluation
