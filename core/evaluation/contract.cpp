#include "evaluation/contract.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "util/closest_match.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;

const std::vector<std::string> kFields{"interfaces", "probes", "artifacts", "corpus"};

// A list field read as names; a non-string item or a repeated one is a problem of its own.
std::optional<std::vector<std::string>> names(const json &v, const std::string &field,
                                              const ProbeProblem &report) {
    if (!v.is_array()) {
        report(field, "must be an array of strings");
        return std::nullopt;
    }
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto item_field = field + "[" + std::to_string(i) + "]";
        if (!v[i].is_string()) {
            report(item_field, "must be a string");
            continue;
        }
        const auto name = v[i].get<std::string>();
        if (!seen.insert(name).second) {
            report(item_field, "'" + name + "' is listed twice");
            continue;
        }
        out.push_back(name);
    }
    return out;
}

// The declared names against the actual ones, both ways: a name the evaluation lacks is reported
// at its index, a name it has and the contract leaves out at the field. `what` is "entry",
// "probe"...; `lacks` says why a name is not there; `needs` why an omitted one is.
void match(const std::vector<std::string> &declared,
           const std::map<std::string, std::string> &actual, const std::string &field,
           const std::string &what, const std::string &lacks, const ProbeProblem &report) {
    std::vector<std::string> actual_names;
    for (const auto &item : actual) actual_names.push_back(item.first);
    std::set<std::string> listed_names;
    for (std::size_t i = 0; i < declared.size(); ++i) {
        listed_names.insert(declared[i]);
        if (actual.count(declared[i]) == 0) {
            report(
                field + "[" + std::to_string(i) + "]",
                what + " '" + declared[i] + "' " + lacks + did_you_mean(declared[i], actual_names));
        }
    }
    for (const auto &[name, why] : actual) {
        if (listed_names.count(name) == 0) {
            report(field, "omits " + what + " '" + name + "', which " + why);
        }
    }
}

void check_artifacts(const json &v, const Evaluation &evaluation,
                     const std::map<std::string, std::string> &called, const ProbeProblem &report) {
    if (!v.is_object()) {
        report("artifacts", "must be an object of interfaceId -> array of artifact names");
        return;
    }
    for (const auto &item : v.items()) {
        const auto field = "artifacts." + item.key();
        const auto *entry = evaluation.entry(item.key());
        if (entry == nullptr || called.count(item.key()) == 0) {
            report(field, "'" + item.key() + "' is no entry a probe calls");
            continue;
        }
        const auto declared = names(item.value(), field, report);
        if (!declared) continue;
        std::map<std::string, std::string> actual;
        for (const auto &artifact : entry->artifacts) {
            actual.emplace(artifact.first, "the entry declares (" + artifact.second + ")");
        }
        match(*declared, actual, field, "artifact", "is not declared by the entry", report);
    }
    for (const auto &[id, why] : called) {
        const auto *entry = evaluation.entry(id);
        if (entry != nullptr && !entry->artifacts.empty() && !v.contains(id)) {
            report("artifacts", "omits entry '" + id + "', whose artifacts the evaluator is given");
        }
    }
}

}  // namespace

void check_contract(const json &contract, const Evaluation &evaluation,
                    const ProbeProblem &report) {
    for (const auto &item : contract.items()) {
        if (std::find(kFields.begin(), kFields.end(), item.key()) == kFields.end()) {
            report(item.key(), "is unknown: not a field of contract.json (fields: " +
                                   listed(kFields) + ")" + did_you_mean(item.key(), kFields));
        }
    }
    // What the evaluation has: each name with why the contract must list it.
    std::map<std::string, std::string> called;
    std::map<std::string, std::string> probes;
    std::map<std::string, std::string> used_corpus;
    for (const auto &probe : evaluation.probes) {
        called.emplace(probe.entry, "probe '" + probe.name + "' calls");
        probes.emplace(probe.name, "is a probe of " + evaluation.probes_dir.string());
        for (const auto &[destination, name] : probe.corpus) {
            used_corpus.emplace(name, "probe '" + probe.name + "' copies to " + destination);
        }
    }
    for (const char *required : {"interfaces", "probes"}) {
        if (!contract.contains(required)) {
            report(required, "is required");
        }
    }
    if (contract.contains("interfaces")) {
        if (const auto declared = names(contract["interfaces"], "interfaces", report)) {
            match(*declared, called, "interfaces", "entry", "is called by no probe", report);
        }
    }
    if (contract.contains("probes")) {
        if (const auto declared = names(contract["probes"], "probes", report)) {
            match(*declared, probes, "probes", "probe", "is no probe of the evaluation", report);
        }
    }
    if (contract.contains("artifacts")) {
        check_artifacts(contract["artifacts"], evaluation, called, report);
    }
    if (contract.contains("corpus")) {
        if (const auto declared = names(contract["corpus"], "corpus", report)) {
            match(*declared, used_corpus, "corpus", "corpus file", "is copied by no probe", report);
        }
    }
}

}  // namespace tea::evaluation
