#include "report/run_report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "files/beneath.hpp"
#include "report/html_text.hpp"
#include "report/page.hpp"
#include "report/timeline_svg.hpp"

namespace tea::report {
namespace {

using nlohmann::json;
namespace stdfs = std::filesystem;

// One table cell of record text: its bytes, the bytes of it shown, and its class ("" for none).
struct Cell {
    std::string_view bytes;
    std::size_t limit;
    std::string_view cls = {};
};

struct Html {
    std::string s;
    // A table row of escaped cells; a filterable row is narrowed by the page's filter box.
    Html &row(std::initializer_list<Cell> cells, bool filterable) {
        s += filterable ? "<tr class=\"f\">" : "<tr>";
        for (const auto &c : cells) {
            s += c.cls.empty() ? "<td>" : "<td class=\"" + std::string{c.cls} + "\">";
            s += html_excerpt(c.bytes, c.limit);
            s += "</td>";
        }
        s += "</tr>\n";
        return *this;
    }
    Html &raw(std::string_view text) {
        s += text;
        return *this;
    }
    // Escaped text from a record, cut at `limit` bytes.
    Html &text(std::string_view bytes, std::size_t limit) {
        s += html_excerpt(bytes, limit);
        return *this;
    }
};

std::string format_ms(double ms) {
    char buf[32];
    if (ms >= 1000) {
        (void)std::snprintf(buf, sizeof buf, "%.2f s", ms / 1000);
    } else {
        (void)std::snprintf(buf, sizeof buf, "%.1f ms", ms);
    }
    return buf;
}

// A count from a record (a JSON number of any size) as digits, without a cast that a huge or
// negative value would make undefined.
std::string count(double value) {
    char buf[64];
    (void)std::snprintf(buf, sizeof buf, "%.0f", std::clamp(value, 0.0, 1e18));
    return buf;
}

// "n more not shown" after a list of `total` items cut at `bound`.
void more(Html &h, std::size_t total, std::size_t bound, std::string_view what) {
    if (total > bound) {
        h.raw("<p class=\"note\">").raw(std::to_string(total - bound)).raw(" more ").raw(what);
        h.raw(" not shown (the records hold every one)</p>");
    }
}

class RunPage {
   public:
    explicit RunPage(const RunReportInput &in) : in_(in), b_(in.bounds) {}

    std::string render() {
        verdict();
        h_.raw(
            "<input id=\"filter\" type=\"search\" hidden placeholder=\"Filter calls, trials "
            "and paths\" aria-label=\"Filter\">\n");
        run_table();
        timeline();
        trials_table();
        calls();
        manifest();
        egress();
        h_.raw("<footer class=\"note\"><p>Written by ").text(in_.generator, 100);
        h_.raw(" from the records in <code>").text(in_.run_dir.string(), b_.string_excerpt);
        h_.raw(
              "</code>. Outputs are shown as the records keep them (already redacted when an "
              "entry declares a login); each is cut at ")
            .raw(std::to_string(b_.output_excerpt))
            .raw(" bytes.</p></footer>");
        const auto run_id = field_text(in_.run, "runId");
        return page("tea-evaluate report: " + (run_id.empty() ? std::string{"run"} : run_id) +
                        " - " + in_.verdict,
                    h_.s);
    }

   private:
    const json &run() const { return in_.run; }

    // Whether the page reached its size bound; the first time, it says so where it stopped.
    bool full() {
        if (h_.s.size() < b_.page_bytes) return false;
        if (!cut_) {
            cut_ = true;
            h_.raw("<p class=\"bad\">The page stops here: it reached its bound of ")
                .raw(std::to_string(b_.page_bytes))
                .raw(" bytes. The records hold the rest.</p>");
        }
        return true;
    }

    void kv(std::string_view key, std::string_view value_html) {
        h_.raw("<tr><td class=\"k\">")
            .raw(key)
            .raw("</td><td>")
            .raw(value_html)
            .raw("</td></tr>\n");
    }
    void kv_text(std::string_view key, const std::string &bytes) {
        kv(key, bytes.empty() ? "<span class=\"note\">(none)</span>"
                              : html_excerpt(bytes, b_.string_excerpt));
    }

    void verdict() {
        const std::string cls = in_.verdict == "pass"      ? "v-pass"
                                : in_.verdict == "fail"    ? "v-fail"
                                : in_.verdict == "invalid" ? "v-invalid"
                                                           : "v-unknown";
        std::string word = in_.verdict;
        for (auto &ch : word) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        h_.raw("<header class=\"verdict ").raw(cls).raw("\"><h1 id=\"verdict\">").text(word, 20);
        h_.raw("</h1><p>Run <code>").text(field_text(run(), "runId"), 200).raw("</code>");
        if (!in_.run.is_object()) h_.raw(" (run.json is missing or torn)");
        h_.raw("</p>");
        if (in_.reasons.empty()) {
            h_.raw(in_.verdict == "pass"
                       ? "<p>The records prove a sound run, and every trial passed.</p>"
                       : "<p>No reason was given.</p>");
        } else {
            // A long list stays short on the page: the first reasons, then the rest folded.
            constexpr std::size_t kFirst = 10;
            h_.raw("<p>Why:</p><ol id=\"reasons\">");
            std::size_t n = 0;
            for (const auto &reason : in_.reasons) {
                if (n == b_.reasons) break;
                if (n == kFirst) {
                    h_.raw("</ol><details><summary>")
                        .raw(std::to_string(in_.reasons.size() - kFirst))
                        .raw(" more reasons</summary><ol start=\"")
                        .raw(std::to_string(kFirst + 1))
                        .raw("\">");
                }
                ++n;
                h_.raw("<li>").text(reason, b_.string_excerpt).raw("</li>");
            }
            h_.raw(n > kFirst ? "</ol></details>" : "</ol>");
            more(h_, in_.reasons.size(), b_.reasons, "reasons");
        }
        h_.raw("</header>\n");
    }

    void run_table() {
        h_.raw("<h2>The run</h2><table class=\"kv\">\n");
        kv_text("status", field_text(run(), "status"));
        kv_text("started", field_text(run(), "startedAt"));
        kv_text("finished", field_text(run(), "finishedAt"));
        kv_text("confinement", field_text(run(), "confinement"));
        kv_text("declared confinement", field_text(run(), "declaredConfinement"));
        kv_text("backend", field_text(run(), "backend"));
        kv_text("observer", field_text(run(), "observer"));
        kv_text("executor", run().is_object() && run().contains("executor")
                                ? field_text(run(), "executor")
                                : std::string{"local"});
        kv_text("condition arm", field_text(run(), "conditionArm"));
        const auto &source = field_list(run(), "source");
        kv_text("source", field_text(source, "kind"));
        kv_text("commit", field_text(source, "commit"));
        kv_text("history", field_text(source, "history"));
        kv_text("evaluation", field_text(run(), "evaluation"));
        kv_text("project", field_text(run(), "project"));
        const auto &weakened = field_list(run(), "weakened");
        std::string w;
        std::size_t n = 0;
        for (const auto &item : weakened) {
            if (n++ == b_.list_items) break;
            w += html_excerpt(field_text(item, "setting") + " " + field_text(item, "value") + ": " +
                                  field_text(item, "effect"),
                              b_.string_excerpt) +
                 "<br>";
        }
        kv("weakened", w.empty() ? "<span class=\"ok\">nothing</span>"
                                 : "<span class=\"bad\">" + w + "</span>");
        kv_text("summary", field_text(run(), "summary"));
        h_.raw("</table>\n");
    }

    void timeline() {
        const auto svg = calls_timeline(run(), b_.trials, b_.calls_per_trial);
        if (svg.empty()) return;
        h_.raw(
              "<h2>Calls over time</h2><p class=\"note\">One row per trial, one bar per call, "
              "end to end (the time between calls is not drawn).</p>\n")
            .raw(svg)
            .raw("\n");
    }

    void trials_table() {
        const auto &trials = field_list(run(), "trials");
        h_.raw("<h2>Trials</h2>");
        if (trials.empty()) {
            h_.raw("<p class=\"bad\">run.json holds no trial.</p>");
            return;
        }
        h_.raw(
            "<table id=\"trials\"><tr><th>trial</th><th>verdict</th><th>calls</th><th>time"
            "</th><th>audit</th><th>paths outside the grants</th><th>infrastructure errors"
            "</th></tr>\n");
        std::size_t shown = 0;
        for (const auto &trial : trials) {
            if (shown++ == b_.trials || full()) break;
            double total = 0;
            for (const auto &call : field_list(trial, "calls")) {
                total += field_number(call, "elapsedMs", 0);
            }
            const auto channel = field_text(trial, "observedMountsChannel");
            const auto observed = field_list(trial, "observedMounts").size();
            const double infra = field_number(trial, "infrastructureErrors", 0);
            const auto &verdict = field_list(trial, "verdict");
            h_.raw("<tr class=\"f\"><td>").text(field_text(trial, "index"), 20).raw("</td><td>");
            h_.text(field_text(verdict, "verdict"), 50).raw("</td><td>");
            h_.raw(std::to_string(field_list(trial, "calls").size())).raw("</td><td>");
            h_.raw(format_ms(total)).raw("</td><td class=\"");
            h_.raw(channel == "complete" ? "ok" : "bad").raw("\">").text(channel, 50);
            std::size_t reasons = 0;
            for (const auto &why : field_list(trial, "lossyReasons")) {
                if (reasons++ == b_.list_items) break;
                h_.raw("<br>").text(value_text(why), b_.string_excerpt);
            }
            h_.raw("</td><td").raw(observed > 0 ? " class=\"bad\"" : "").raw(">");
            h_.raw(std::to_string(observed)).raw("</td><td").raw(infra > 0 ? " class=\"bad\"" : "");
            h_.raw(">").raw(count(infra)).raw("</td></tr>\n");
        }
        h_.raw("</table>\n");
        more(h_, trials.size(), b_.trials, "trials");
    }

    // The call's output file, read beneath the run's folder with no link followed: an altered
    // record naming "../../.ssh/id_rsa", or a link in the records, never puts another file on the
    // page.
    void output(const std::string &trial, const json &call, std::string_view stream) {
        const auto name = field_text(call, stream);
        if (name.empty()) return;
        std::string why;
        const auto head = trial.empty() ? std::nullopt
                                        : files::read_head_beneath(in_.run_dir, trial + "/" + name,
                                                                   b_.output_excerpt, &why);
        const double total = field_number(call, std::string{stream} + "Bytes", -1);
        h_.raw("<p>").raw(stream).raw(" (");
        h_.raw(total >= 0 ? count(total) + " bytes written" : std::string{"size not recorded"});
        h_.raw("):</p>");
        if (!head) {
            h_.raw("<p class=\"bad\">its file <code>")
                .text(name, 500)
                .raw("</code> cannot be read");
            if (!why.empty()) h_.raw(" (").text(why, 200).raw(")");
            h_.raw("</p>");
            return;
        }
        h_.raw("<pre>").raw(html_text(*head, true));
        if (total > static_cast<double>(head->size())) {
            h_.raw("\n<span class=\"note\">… cut here: ")
                .raw(count(total - static_cast<double>(head->size())))
                .raw(" more bytes were written; the records keep them in ")
                .text(trial + "/" + name, 500)
                .raw("</span>");
        }
        h_.raw("</pre>");
    }

    void findings(const json &call) {
        const auto &audit = field_list(call, "audit");
        if (!audit.is_object() || audit.empty()) return;
        const auto audited = audit.find("audited");
        if (audited != audit.end() && audited->is_boolean() && !audited->get<bool>()) {
            h_.raw("<p class=\"warn\">Not audited: ").text(field_text(audit, "why"), 1000);
            h_.raw("</p>");
            return;
        }
        const auto complete = audit.find("complete");
        if (complete != audit.end() && complete->is_boolean() && !complete->get<bool>()) {
            h_.raw("<p class=\"bad\">The audit is incomplete: ")
                .text(field_text(audit, "reason"), 1000)
                .raw("</p>");
        }
        const auto &list = field_list(audit, "findings");
        if (list.empty()) {
            h_.raw("<p class=\"ok\">The audit (").text(field_text(audit, "observer"), 100);
            h_.raw(") listed no path outside the grants.</p>");
            return;
        }
        h_.raw(
            "<table class=\"paths\"><tr><th>path outside the grants</th><th>why it is listed"
            "</th><th>system calls</th><th>count</th><th>refused</th></tr>\n");
        std::size_t n = 0;
        for (const auto &f : list) {
            if (n++ == b_.findings_per_call || full()) break;
            std::string calls;
            for (const auto &sc : field_list(f, "syscalls")) {
                if (calls.size() > 500) break;
                if (!calls.empty()) calls += ", ";
                calls += value_text(sc);
            }
            h_.row({{field_text(f, "path"), b_.string_excerpt, "path bad"},
                    {field_text(f, "reason"), 500},
                    {calls, 500},
                    {field_text(f, "count"), 20},
                    {field_text(f, "refused"), 10}},
                   true);
        }
        h_.raw("</table>");
        more(h_, list.size(), b_.findings_per_call, "listed paths");
        const double omitted = field_number(audit, "omitted", 0);
        if (omitted > 0) {
            h_.raw("<p class=\"bad\">The audit omitted ")
                .raw(count(omitted))
                .raw(" more paths.</p>");
        }
    }

    void refusals(const json &call) {
        const auto &list = field_list(call, "egressRefusals");
        if (list.empty()) return;
        h_.raw(
            "<p>Egress refusals:</p><table><tr><th>host</th><th>port</th><th>reason</th>"
            "<th>count</th></tr>");
        std::size_t n = 0;
        for (const auto &r : list) {
            if (n++ == b_.list_items) break;
            h_.row({{field_text(r, "host"), 300},
                    {field_text(r, "port"), 20},
                    {field_text(r, "reason"), 500},
                    {field_text(r, "count"), 20}},
                   true);
        }
        h_.raw("</table>");
        more(h_, list.size(), b_.list_items, "refusals");
    }

    void call_details(const std::string &trial_dir, const json &call) {
        const auto outcome = call_outcome(call);
        const auto observed = field_list(call, "observedMounts").size();
        // Folded: the summary line says how the call ended and what the audit listed, and a
        // browser lays out a folded call's tables only when it is opened.
        h_.raw("<details class=\"call f\"><summary>");
        h_.text(field_text(call, "probe"), 300).raw(" &middot; ");
        h_.text(field_text(call, "entry"), 300).raw(" &middot; <span class=\"");
        h_.raw(outcome == "ok" ? "ok" : (outcome == "non-zero exit" ? "warn" : "bad"));
        h_.raw("\">").raw(outcome).raw("</span> &middot; status ");
        h_.text(field_text(call, "status"), 20).raw(" &middot; ");
        h_.raw(format_ms(field_number(call, "elapsedMs", 0)));
        if (observed > 0) {
            h_.raw(" &middot; <span class=\"bad\">").raw(std::to_string(observed));
            h_.raw(observed == 1 ? " path" : " paths").raw(" outside the grants</span>");
        }
        h_.raw("</summary>\n<table class=\"kv\">");
        std::string command = field_text(call, "executable");
        for (const auto &arg : field_list(call, "args")) {
            if (command.size() > b_.string_excerpt) break;
            command += ' ';
            command += value_text(arg);
        }
        kv_text("command", command);
        kv_text("exit code", field_text(call, "exitCode"));
        kv_text("signal", field_text(call, "signal"));
        kv_text("timed out", field_text(call, "timedOut"));
        kv_text("infrastructure error", field_text(call, "infrastructureError"));
        if (!field_text(call, "startError").empty()) {
            kv_text("start error", field_text(call, "startError"));
        }
        h_.raw("</table>");
        output(trial_dir, call, "stdout");
        output(trial_dir, call, "stderr");
        findings(call);
        refusals(call);
        h_.raw("</details>\n");
    }

    void calls() {
        const auto &trials = field_list(run(), "trials");
        if (trials.empty()) return;
        h_.raw("<h2>Calls</h2>\n");
        std::size_t shown = 0;
        for (const auto &trial : trials) {
            if (shown++ == b_.trials || full()) break;
            const auto index = field_text(trial, "index");
            // Only a trial's own number names its folder: a record's other text never does.
            const bool numeric = !index.empty() && index.size() < 10 &&
                                 index.find_first_not_of("0123456789") == std::string::npos;
            const auto trial_dir = numeric ? "trials/" + index : std::string{};
            const auto &list = field_list(trial, "calls");
            const auto &verdict = field_list(trial, "verdict");
            h_.raw("<details class=\"trial f\" open><summary><strong>Trial ").text(index, 20);
            h_.raw("</strong>: evaluator ").text(field_text(verdict, "verdict"), 50);
            h_.raw(", ").raw(std::to_string(list.size())).raw(" calls</summary>\n");
            const auto &reasons = field_list(verdict, "reasons");
            if (!reasons.empty()) {
                h_.raw("<p>The evaluator's reasons:</p><ul>");
                std::size_t n = 0;
                for (const auto &r : reasons) {
                    if (n++ == b_.reasons) break;
                    h_.raw("<li>").text(value_text(r), b_.string_excerpt).raw("</li>");
                }
                h_.raw("</ul>");
            }
            std::size_t n = 0;
            for (const auto &call : list) {
                if (n++ == b_.calls_per_trial || full()) break;
                call_details(trial_dir, call);
            }
            more(h_, list.size(), b_.calls_per_trial, "calls");
            artifacts(trial);
            h_.raw("</details>\n");
        }
        more(h_, trials.size(), b_.trials, "trials");
    }

    void artifacts(const json &trial) {
        const auto &entries = field_list(trial, "artifacts");
        if (entries.empty() || !entries.is_object()) return;
        h_.raw(
            "<p>Artifacts:</p><table><tr><th>entry</th><th>artifact</th><th>status</th>"
            "<th>path in the workspace</th><th>bytes</th></tr>");
        std::size_t n = 0;
        for (const auto &[entry, named] : entries.items()) {
            if (!named.is_object()) continue;
            for (const auto &[name, a] : named.items()) {
                if (n >= b_.list_items || full()) break;
                ++n;
                h_.row({{entry, 300},
                        {name, 300},
                        {field_text(a, "status"), 50},
                        {field_text(a, "path"), 500},
                        {field_text(a, "bytes"), 30}},
                       false);
            }
            if (n >= b_.list_items) break;
        }
        h_.raw("</table>");
        if (n >= b_.list_items) h_.raw("<p class=\"note\">More artifacts are not shown.</p>");
    }

    void manifest() {
        h_.raw("<h2>The isolation manifest</h2>");
        const auto &m = in_.manifest;
        if (!m.is_object()) {
            h_.raw("<p class=\"bad\">manifest.json is missing or torn.</p>");
            return;
        }
        h_.raw(
            "<p>Granted to the targets:</p><table><tr><th>mount</th><th>access</th><th>what"
            "</th></tr>");
        std::size_t n = 0;
        for (const auto &a : field_list(m, "allowedMounts")) {
            if (n++ == b_.list_items) break;
            std::string what = field_text(a, "what");
            for (const auto &p : field_list(a, "paths")) {
                if (what.size() > b_.string_excerpt) break;
                what += (what.empty() ? "" : " ") + value_text(p);
            }
            h_.row({{field_text(a, "mount"), 200},
                    {field_text(a, "access"), 50},
                    {what, b_.string_excerpt}},
                   false);
        }
        h_.raw("</table>");
        const auto &allowed = field_list(m, "allowedMounts");
        more(h_, allowed.size(), b_.list_items, "grants");
        const auto &observed = field_list(m, "observedMounts");
        if (observed.empty()) {
            h_.raw("<p class=\"ok\">No target reached a path outside the grants.</p>");
        } else {
            h_.raw("<p class=\"bad\">Reached outside the grants (each makes the run Invalid):</p>");
            // A long list folds, so the withheld inputs below stay in reach.
            const bool fold = observed.size() > 20;
            if (fold) {
                h_.raw("<details><summary>")
                    .raw(std::to_string(observed.size()))
                    .raw(" paths</summary>");
            }
            h_.raw("<table><tr><th>path</th><th>trials</th><th>reason</th></tr>");
            n = 0;
            for (const auto &o : observed) {
                if (n++ == b_.findings_per_call || full()) break;
                std::string trials;
                for (const auto &t : field_list(o, "trials")) {
                    if (trials.size() > 500) break;
                    trials += (trials.empty() ? "" : ", ") + value_text(t);
                }
                h_.row({{o.is_object() ? field_text(o, "path") : value_text(o), b_.string_excerpt,
                         "path bad"},
                        {trials, 500},
                        {field_text(o, "reason"), 500}},
                       true);
            }
            h_.raw("</table>");
            if (fold) h_.raw("</details>");
            more(h_, observed.size(), b_.findings_per_call, "paths");
        }
        h_.raw(
            "<p>Withheld from the targets:</p><table><tr><th>input</th><th>path</th><th>"
            "what withheld it</th></tr>");
        n = 0;
        for (const auto &f : field_list(m, "forbiddenInputs")) {
            if (n++ == b_.list_items) break;
            h_.row({{field_text(f, "input"), 500},
                    {field_text(f, "path"), b_.string_excerpt, "path"},
                    {field_text(f, "note"), b_.string_excerpt}},
                   false);
        }
        h_.raw("</table>\n");
        const auto &forbidden = field_list(m, "forbiddenInputs");
        more(h_, forbidden.size(), b_.list_items, "withheld inputs");
    }

    void egress() {
        const auto &items = field_list(run(), "egress");
        const auto &refused = field_list(run(), "egressRefusals");
        if (items.empty() && refused.empty()) return;
        h_.raw("<h2>Egress</h2>");
        if (!items.empty()) {
            h_.raw("<table><tr><th>entry</th><th>allowed</th></tr>");
            std::size_t n = 0;
            for (const auto &e : items) {
                if (n++ == b_.list_items) break;
                std::string allowed;
                for (const auto &i : field_list(e, "items")) {
                    if (allowed.size() > b_.string_excerpt) break;
                    allowed += (allowed.empty() ? "" : ", ") + field_text(i, "host") + ":" +
                               field_text(i, "port");
                }
                h_.row({{field_text(e, "entry"), 300},
                        {allowed.empty() ? std::string{"(no item)"} : allowed, b_.string_excerpt}},
                       false);
            }
            h_.raw("</table>");
            more(h_, items.size(), b_.list_items, "entries");
        }
        if (!refused.empty()) {
            h_.raw(
                "<p>Calls whose route refused a request:</p><table><tr><th>trial</th><th>"
                "entry</th><th>probe</th><th>refusals</th></tr>");
            std::size_t n = 0;
            for (const auto &r : refused) {
                if (n++ == b_.list_items) break;
                std::string what;
                for (const auto &x : field_list(r, "refusals")) {
                    if (what.size() > b_.string_excerpt) break;
                    what += (what.empty() ? "" : "; ") + field_text(x, "host") + ":" +
                            field_text(x, "port") + " " + field_text(x, "reason");
                }
                h_.row({{field_text(r, "trialIndex"), 20},
                        {field_text(r, "entry"), 300},
                        {field_text(r, "probe"), 300},
                        {what, b_.string_excerpt}},
                       true);
            }
            h_.raw("</table>");
            more(h_, refused.size(), b_.list_items, "calls");
        }
    }

    const RunReportInput &in_;
    const Bounds &b_;
    Html h_;
    bool cut_ = false;
};

}  // namespace

std::string run_report(const RunReportInput &input) {
    return RunPage{input}.render();
}

}  // namespace tea::report
