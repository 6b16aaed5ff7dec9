// report: one self-contained HTML page from a run's records (or a qualification's), with score's
// verdict decided afresh from the records (report/run_report.hpp). It writes the page and nothing
// else: score.json is score's.
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "cli/score_decision.hpp"
#include "evaluation/run_records.hpp"
#include "files/beneath.hpp"
#include "report/run_report.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr const char *kPageName = "report.html";

std::string generator() {
#ifdef TEA_VERSION
    return std::string{"tea-evaluate "} + TEA_VERSION;
#else
    return "tea-evaluate";
#endif
}

// A qualification's folder (runs/qualify-<id>/): its page, each arm decided from its records.
std::string qualification_page(const stdfs::path &folder) {
    report::QualificationReportInput in;
    in.folder = folder;
    in.generator = generator();
    std::string why;
    in.qualification = read_record(folder / "qualification.json", &why);
    static const json kNoArms = json::array();
    const auto listed =
        in.qualification.is_object() ? in.qualification.find("arms") : in.qualification.end();
    // A reference to the record's list or to an empty one, never a copy of the list.
    const json &arms = listed != in.qualification.end() && listed->is_array() ? *listed : kNoArms;
    const auto runs = folder.parent_path();
    // One decision per run, however many arms name it, and no more arms than the page shows: a
    // record listing a hundred thousand arms must not make report read a run that many times.
    std::map<std::string, report::ArmDecision> decided;
    for (const auto &arm : arms) {
        if (in.arms.size() == in.bounds.list_items) break;
        report::ArmDecision d;
        const auto run_id = arm.is_object() ? arm.value("runId", json{}) : json{};
        // Only a run id names an arm's folder: the record's other text never picks a directory.
        if (!run_id.is_string() || !evaluation::is_run_id(run_id.get<std::string>())) {
            d.verdict = "invalid";
            d.reasons.emplace_back("the arm names no run");
        } else if (const auto it = decided.find(run_id.get<std::string>()); it != decided.end()) {
            d = it->second;
        } else {
            json run;
            auto v = verdict_of(runs / run_id.get<std::string>(), &run);
            d.verdict = std::move(v.verdict);
            d.reasons = std::move(v.reasons);
            decided.emplace(run_id.get<std::string>(), d);
        }
        in.arms.push_back(std::move(d));
    }
    return report::qualification_report(in);
}

}  // namespace

int report_command(const CommonOptions &common, const ReportOptions &options) {
    std::error_code ec;
    const auto argument = stdfs::absolute(options.run_dir, ec).lexically_normal();
    const bool qualification =
        !ec && stdfs::is_regular_file(stdfs::symlink_status(argument / "qualification.json", ec));
    stdfs::path folder;
    std::string html;
    std::string verdict;
    if (qualification) {
        folder = argument.has_filename() ? argument : argument.parent_path();
        html = qualification_page(folder);
    } else {
        folder = named_run_dir(options.run_dir, "report");
        report::RunReportInput in;
        in.run_dir = folder;
        in.generator = generator();
        auto decision = verdict_of(folder, &in.run, &in.manifest);
        in.verdict = decision.verdict;
        in.reasons = std::move(decision.reasons);
        verdict = in.verdict;
        html = report::run_report(in);
    }
    stdfs::path out = folder / kPageName;
    if (options.output) {
        out = options.output->empty() ? stdfs::path{} : stdfs::absolute(*options.output, ec);
        if (out.empty() || ec || !out.has_filename()) {
            throw usage_error("report: -o " + printable(options.output->string()) +
                              " names no file");
        }
    }
    files::write_atomically(out, html);
    console::err() << "tea-evaluate: report: " << printable(out.string()) << " (" << html.size()
                   << " bytes" << (verdict.empty() ? "" : ", verdict " + verdict) << ")\n";
    if (common.json) {
        const json line{{"report", out.string()}, {"bytes", html.size()}};
        console::out() << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    }
    return 0;
}

}  // namespace tea::cli
