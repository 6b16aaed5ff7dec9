#include "evaluation/evaluation.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>
#include <tea/program_path.hpp>

#include "egress/pin.hpp"
#include "evaluation/contract.hpp"
#include "evaluation/corpus.hpp"
#include "evaluation/program_file.hpp"
#include "evaluation/revision_syntax.hpp"
#include "evaluation/skill_target.hpp"
#include "files/skill_folder.hpp"
#include "http/http_client.hpp"
#include "util/closest_match.hpp"
#include "util/fd.hpp"
#include "util/plugin_name.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kMaxFileBytes = std::size_t{16} << 20U;
constexpr std::size_t kMaxStdinBytes = std::size_t{1} << 20U;
constexpr std::size_t kMaxProbeFilesBytes = std::size_t{16} << 20U;
constexpr std::int64_t kMaxCallMs = 86'400'000;
constexpr std::size_t kMaxIdLength = 64;
constexpr std::size_t kMaxHostBytes = 253;

// Where problems go: one file, and in it one entry, probe or the evaluator (the prefix).
class Report {
   public:
    Report(std::vector<Problem> &problems, fs::path file, std::string prefix = {})
        : problems_(&problems), file_(std::move(file)), prefix_(std::move(prefix)) {}

    [[nodiscard]] Report within(std::string prefix) const {
        return {*problems_, file_, std::move(prefix)};
    }
    [[nodiscard]] const fs::path &file() const { return file_; }

    // A problem in `field` (a path such as "egress[1].host"; empty: the place as a whole).
    void operator()(const std::string &field, std::string message) const {
        std::string where = prefix_;
        if (!field.empty()) {
            where += (where.empty() ? "" : " ") + ("field '" + field + "'");
        }
        problems_->push_back({file_, 0, 0, std::move(where), std::move(message)});
    }
    void syntax(std::size_t line, std::size_t column, std::string message) const {
        problems_->push_back({file_, line, column, {}, std::move(message)});
    }

   private:
    std::vector<Problem> *problems_;
    fs::path file_;
    std::string prefix_;
};

// One JSON object's fields, each taken by name; whatever is not taken is an unknown field, refused
// with the fields this object has and the one it most likely meant.
class Fields {
   public:
    Fields(const json &object, const Report &report) : object_(object), report_(report) {}

    const json *take(const std::string &key) {
        if (taken_.insert(key).second) {
            known_.push_back(key);
        }
        return find(key);
    }
    // A field that is not unknown but is never offered as an alternative: one removed from the
    // format, or one that belongs in another object.
    const json *take_unlisted(const std::string &key) {
        taken_.insert(key);
        return find(key);
    }
    const json *require(const std::string &key) {
        const auto *value = take(key);
        if (value == nullptr) {
            report_(key, "is required");
        }
        return value;
    }
    void refuse_unknown(const std::string &field_prefix = {}) const {
        for (const auto &item : object_.items()) {
            if (taken_.count(item.key()) == 0) {
                report_(field_prefix + item.key(),
                        "is unknown: not a field of this format (fields here: " + listed(known_) +
                            ")" + did_you_mean(item.key(), known_));
            }
        }
    }

   private:
    const json *find(const std::string &key) const {
        const auto it = object_.find(key);
        return it == object_.end() ? nullptr : &*it;
    }
    const json &object_;
    const Report &report_;
    std::set<std::string> taken_;
    std::vector<std::string> known_;  // in the order the format lists them
};

std::string in_quotes(const std::string &text) {
    return "'" + text + "'";
}

std::optional<std::string> text(const Report &report, const std::string &field, const json &v) {
    if (!v.is_string()) {
        report(field, "must be a string");
        return std::nullopt;
    }
    auto s = v.get<std::string>();
    // A NUL ends a string at every system call and in every record reader, so what was checked
    // would not be what runs.
    if (s.find('\0') != std::string::npos) {
        report(field, "holds a NUL byte");
        return std::nullopt;
    }
    return s;
}

std::optional<std::vector<std::string>> texts(const Report &report, const std::string &field,
                                              const json &v) {
    if (!v.is_array()) {
        report(field, "must be an array of strings");
        return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
        auto s = text(report, field + "[" + std::to_string(i) + "]", v[i]);
        ok = ok && s.has_value();
        if (s) {
            out.push_back(std::move(*s));
        }
    }
    return ok ? std::optional{std::move(out)} : std::nullopt;
}

std::optional<std::int64_t> integer(const Report &report, const std::string &field, const json &v,
                                    std::int64_t min, std::int64_t max) {
    const auto refuse = [&] {
        report(field,
               "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
        return std::nullopt;
    };
    // An unsigned number above the range would wrap when read as signed.
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))) {
        return refuse();
    }
    const auto n = v.get<std::int64_t>();
    if (n < min || n > max) {
        return refuse();
    }
    return n;
}

// A timeout in milliseconds: the one number whose refusal says what "not positive" means.
std::optional<std::int64_t> milliseconds(const Report &report, const std::string &field,
                                         const json &v) {
    const bool positive = (v.is_number_unsigned() && v.get<std::uint64_t>() > 0) ||
                          (v.is_number_integer() && v.get<std::int64_t>() > 0);
    if (!positive) {
        report(field, "must be a positive integer (milliseconds)");
        return std::nullopt;
    }
    return integer(report, field, v, 1, kMaxCallMs);
}

// "budgets": {"memoryBytes", "processes", "diskBytes"}, the last only where a trial's file
// system is decided (the evaluation, not an entry).
Budgets read_budgets(const Report &report, const json &v, bool per_trial) {
    constexpr std::int64_t min_memory = std::int64_t{16} << 20U;  // below it nothing starts
    constexpr std::int64_t max_bytes = std::int64_t{1} << 50U;
    constexpr std::int64_t max_processes = 4194304;  // the kernel's largest pid_max
    Budgets out;
    if (!v.is_object()) {
        report("budgets", "must be an object (memoryBytes, processes" +
                              std::string{per_trial ? ", diskBytes" : ""} + ")");
        return out;
    }
    Fields f{v, report};
    const auto bytes = [&](const char *key, std::int64_t min) -> std::optional<std::uint64_t> {
        const auto *n = f.take(key);
        if (n == nullptr) {
            return std::nullopt;
        }
        const auto value = integer(report, std::string{"budgets."} + key, *n, min, max_bytes);
        return value ? std::optional{static_cast<std::uint64_t>(*value)} : std::nullopt;
    };
    out.memory_bytes = bytes("memoryBytes", min_memory);
    if (const auto *n = f.take("processes")) {
        if (const auto value = integer(report, "budgets.processes", *n, 1, max_processes)) {
            out.processes = static_cast<std::uint64_t>(*value);
        }
    }
    if (per_trial) {
        out.disk_bytes = bytes("diskBytes", std::int64_t{1} << 20U);
    } else if (f.take_unlisted("diskBytes") != nullptr) {
        report("budgets.diskBytes",
               "is a trial's, shared by every entry's calls: set it in the budgets of "
               "evaluation.json");
    }
    f.refuse_unknown("budgets.");
    return out;
}

bool name_like(const std::string &s) {
    return !s.empty() && s.size() <= kMaxIdLength && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

bool check_name(const Report &report, const std::string &field, const std::string &s) {
    if (!name_like(s)) {
        report(field, in_quotes(s) + " is not a name: 1 to 64 of the characters A-Z a-z 0-9 . _ -");
        return false;
    }
    return true;
}

// Paths reach the confinement as bind-mount arguments, environment values and records; a
// control character could forge a record's line, a quote or backslash could change how a
// mount option or a shell-quoted plan is split. None can be carried faithfully, so none is taken.
std::optional<std::string> uncarriable(const std::string &path) {
    for (const char c : path) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            return std::string{"holds a control character; the confinement cannot carry it"};
        }
        if (c == '\'' || c == '"') {
            return std::string{"holds a quote; the confinement cannot carry it"};
        }
        if (c == '\\') {
            return std::string{"holds a backslash; the confinement cannot carry it"};
        }
    }
    return std::nullopt;
}

bool check_carriable(const Report &report, const std::string &field, const std::string &path) {
    if (auto why = uncarriable(path)) {
        report(field, std::move(*why));
        return false;
    }
    return true;
}

// A path inside the workspace or the project: relative, and made only of named components, so
// it can never climb out of the directory it is joined to.
bool check_relative(const Report &report, const std::string &field, const std::string &path) {
    if (!check_carriable(report, field, path)) {
        return false;
    }
    if (path.empty()) {
        report(field, "is empty");
        return false;
    }
    if (path.front() == '/') {
        report(field, in_quotes(path) + " is absolute; write it relative");
        return false;
    }
    std::size_t start = 0;
    while (start <= path.size()) {
        const auto end = std::min(path.find('/', start), path.size());
        const auto component = path.substr(start, end - start);
        if (component.empty() || component == "." || component == "..") {
            // A ".." climbs out of the directory the path is joined to.
            report(field, in_quotes(path) +
                              " must be made of named components (no empty, '.' or '..' one)");
            return false;
        }
        start = end + 1;
    }
    return true;
}

// Whether canonical `inner` lies inside canonical `outer` (strictly: not `outer` itself).
bool inside(const fs::path &outer, const fs::path &inner, bool strictly) {
    const auto rel = inner.lexically_relative(outer);
    if (rel.empty() || *rel.begin() == "..") {
        return false;
    }
    return !strictly || rel != ".";
}

// The path with every symbolic link followed (what the kernel will open), or nothing.
std::optional<fs::path> resolved(const fs::path &path) {
    std::error_code ec;
    auto out = fs::weakly_canonical(path, ec);
    if (ec) {
        return std::nullopt;
    }
    return out;
}

bool regular_file(const fs::path &path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

// Reads a file of at most kMaxFileBytes. A fifo or device is refused after an open that cannot
// block, so a planted fifo cannot hang the check; an oversized file is refused without reading.
std::optional<std::string> read_bounded(const fs::path &path, std::string &content) {
    const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
    if (!fd) {
        return "cannot be opened: " + std::generic_category().message(errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::string{"is not a regular file"};
    }
    if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes) {
        return "is " + std::to_string(st.st_size) + " bytes; the limit is 16 MiB";
    }
    content.clear();
    char buffer[65536];
    for (;;) {
        const auto n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return "cannot be read: " + std::generic_category().message(errno);
        }
        if (n == 0) {
            return std::nullopt;
        }
        content.append(buffer, static_cast<std::size_t>(n));
        // The file may grow after fstat.
        if (content.size() > kMaxFileBytes) {
            return std::string{"is over 16 MiB"};
        }
    }
}

// nlohmann's byte offset as the 1-based line and column an editor shows.
std::pair<std::size_t, std::size_t> line_and_column(const std::string &content, std::size_t byte) {
    std::size_t line = 1;
    std::size_t column = 0;
    for (std::size_t i = 0; i < byte; ++i) {
        if (i < content.size() && content[i] == '\n' && i + 1 < byte) {
            ++line;
            column = 0;
        } else {
            ++column;
        }
    }
    return {line, std::max<std::size_t>(column, 1)};
}

// The parse error's own words, without nlohmann's "[json.exception...] ... column N: " lead.
std::string parse_message(const std::string &what) {
    const auto column = what.find("column ");
    const auto colon = what.find(": ", column == std::string::npos ? 0 : column);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Parses a JSON file into `doc`, true when it holds an object; a syntax error or a duplicate key
// is a problem. A duplicate is refused because readers disagree on which copy wins: a check could
// pass one value and a run use the other.
bool parse_file(const Report &report, std::optional<json> &doc) {
    std::string content;
    if (auto why = read_bounded(report.file(), content)) {
        report({}, std::move(*why));
        return false;
    }
    std::vector<std::set<std::string>> open_objects;
    std::vector<std::string> duplicates;
    const json::parser_callback_t watch = [&](int /*depth*/, json::parse_event_t event,
                                              json &parsed) {
        if (event == json::parse_event_t::object_start) {
            open_objects.emplace_back();
        } else if (event == json::parse_event_t::object_end && !open_objects.empty()) {
            open_objects.pop_back();
        } else if (event == json::parse_event_t::key && !open_objects.empty() &&
                   parsed.is_string() &&
                   !open_objects.back().insert(parsed.get<std::string>()).second) {
            duplicates.push_back(parsed.get<std::string>());
        }
        return true;
    };
    try {
        doc = json::parse(content, watch);
    } catch (const json::parse_error &e) {
        const auto [line, column] = line_and_column(content, e.byte);
        report.syntax(line, column, parse_message(e.what()));
        return false;
    } catch (const json::exception &e) {
        // A number beyond a double's range is refused as out_of_range, without a position.
        const std::string what = e.what();
        const auto lead = what.find("] ");
        report({}, lead == std::string::npos ? what : what.substr(lead + 2));
        return false;
    }
    for (const auto &key : duplicates) {
        report({}, "the key " + in_quotes(key) + " appears twice in one object");
    }
    if (!doc->is_object()) {
        report({}, "must hold a JSON object");
        return false;
    }
    return true;
}

// ---- registry entries ----

bool check_host(const Report &report, const std::string &field, const std::string &host) {
    if (host.empty()) {
        report(field, "is empty");
        return false;
    }
    if (host.front() == '[') {
        report(field, in_quotes(host) +
                          " is spelled otherwise than a URL's host appears in this field: write "
                          "the address without brackets");
        return false;
    }
    // A wildcard would admit hosts nobody listed (any subdomain an attacker registers).
    if (host.find('*') != std::string::npos) {
        report(field, in_quotes(host) + " holds a wildcard; list each host the target may reach");
        return false;
    }
    if (host.find(':') != std::string::npos) {
        in6_addr address{};
        if (::inet_pton(AF_INET6, host.c_str(), &address) != 1) {
            report(field, in_quotes(host) + " is neither a host name nor an IPv6 address");
            return false;
        }
    } else if (host.size() > kMaxHostBytes) {
        report(field, "is " + std::to_string(host.size()) + " bytes; a host name is at most 253");
        return false;
    }
    for (const char c : host) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':';
        if (!allowed) {
            report(field, in_quotes(host) +
                              " holds a character other than letters, digits, '.', '-' and '_'");
            return false;
        }
    }
    // The proxy compares the host a request names, which a URL always spells in lowercase: an
    // uppercase item would never match, or match only a client that does not normalise.
    if (std::any_of(host.begin(), host.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
        report(field, in_quotes(host) +
                          " is spelled otherwise than a URL spells it: write it in lowercase");
        return false;
    }
    if (host.find(':') == std::string::npos &&
        (host.front() == '.' || host.back() == '.' || host.find("..") != std::string::npos)) {
        report(field, in_quotes(host) + " has an empty label (a leading, trailing or double '.')");
        return false;
    }
    return true;
}

bool ip_literal(const std::string &s) {
    in_addr v4{};
    in6_addr v6{};
    return ::inet_pton(AF_INET, s.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, s.c_str(), &v6) == 1;
}

// How an empty "egress" list reads: an entry's is no network at all; an agent's would read the
// same way, but an agent without egress has the invoker's network, so it is refused.
enum class EmptyEgress { no_network, refused };

// An "egress" list: an entry's, a rubric judge's, or a conversation agent's (`field` names it).
void read_egress(const Report &report, const json &v, std::vector<EgressItem> &items,
                 const std::string &field = "egress", EmptyEgress empty = EmptyEgress::no_network) {
    if (!v.is_array()) {
        report(field, "must be an array of {host, port, addresses or pinned}");
        return;
    }
    if (v.empty() && empty == EmptyEgress::refused) {
        // Written to cut the agent off, [] would leave it the invoker's whole network.
        report(field,
               "is empty: an agent without egress has the invoker's network, so list the hosts "
               "it may reach (its model API's), or remove the field");
        return;
    }
    std::set<std::pair<std::string, std::int64_t>> seen;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto at = field + "[" + std::to_string(i) + "]";
        if (!v[i].is_object()) {
            report(at, "must be an object {host, port, addresses or pinned}");
            continue;
        }
        Fields f{v[i], report};
        EgressItem item;
        bool ok = true;
        if (const auto *h = f.require("host")) {
            const auto host = text(report, at + ".host", *h);
            ok = host && check_host(report, at + ".host", *host) && ok;
            item.host = host.value_or("");
        } else {
            ok = false;
        }
        if (const auto *p = f.require("port")) {
            const auto port = integer(report, at + ".port", *p, 1, 65535);
            ok = port.has_value() && ok;
            item.port = static_cast<std::uint16_t>(port.value_or(0));
        } else {
            ok = false;
        }
        const auto *addresses = f.take("addresses");
        const auto *pinned = f.take("pinned");
        if (addresses != nullptr && pinned != nullptr) {
            report(at + ".pinned",
                   "excludes 'addresses': 'addresses' filters what the host resolves to, "
                   "'pinned' connects to its addresses without resolving the host; keep one");
        } else if (addresses != nullptr) {
            if (auto list = texts(report, at + ".addresses", *addresses)) {
                for (std::size_t k = 0; k < list->size(); ++k) {
                    if (!ip_literal((*list)[k])) {
                        report(at + ".addresses[" + std::to_string(k) + "]",
                               in_quotes((*list)[k]) + " is not an IPv4 or IPv6 address");
                    }
                }
                item.addresses = std::move(*list);
            }
        } else if (pinned != nullptr) {
            if (auto list = texts(report, at + ".pinned", *pinned)) {
                if (auto problem = egress::pin_problem(item.host, *list)) {
                    report(at + ".pinned", *problem);
                }
                item.addresses = std::move(*list);
                item.pinned = true;
            }
        }
        f.refuse_unknown(at + ".");
        if (ok && !seen.emplace(item.host, item.port).second) {
            report(at,
                   "lists " + item.host + " port " + std::to_string(item.port) + " a second time");
        }
        items.push_back(std::move(item));
    }
}

void read_system_paths(const Report &report, const json &v, Entry &entry) {
    auto list = texts(report, "systemPaths", v);
    if (!list) {
        return;
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto field = "systemPaths[" + std::to_string(i) + "]";
        const auto &p = (*list)[i];
        if (!check_carriable(report, field, p)) {
            continue;
        }
        if (p.empty() || p.front() != '/') {
            report(field, in_quotes(p) + " is relative; a system path is absolute");
            continue;
        }
        auto normal = fs::path{p}.lexically_normal().string();
        while (normal.size() > 1 && normal.back() == '/') {
            normal.pop_back();
        }
        // Granting "/" would let the target read the whole host, the grading material included.
        if (normal == "/") {
            report(field, "grants the whole file system; name the directories the target reads");
            continue;
        }
        entry.system_paths.push_back(normal);
    }
}

// "login": a plugin's name; whether an adapter of that name is installed is the command's question
// (check and run ask the plugins found).
std::optional<std::string> login_adapter(const Report &report, const json &v) {
    auto s = text(report, "login", v);
    if (s && !is_valid_plugin_name(*s)) {
        report("login", in_quotes(*s) + " is not a login adapter's name");
        return std::nullopt;
    }
    return s;
}

void read_environment_keys(const Report &report, const json &v, std::vector<std::string> &keys) {
    auto list = texts(report, "environmentKeys", v);
    if (!list) {
        return;
    }
    // HOME, XDG_*, TMPDIR, TMP, TEMP and the proxy variables are accepted like any name: the
    // backend and the call's route set the runtime's values after these, so the host's value of
    // one of them never reaches a confined target (docs/evaluation-format.md#environmentkeys).
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto field = "environmentKeys[" + std::to_string(i) + "]";
        const auto &key = (*list)[i];
        const bool well_formed = !key.empty() && !(key.front() >= '0' && key.front() <= '9') &&
                                 std::all_of(key.begin(), key.end(), [](char c) {
                                     return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                            (c >= '0' && c <= '9') || c == '_';
                                 });
        if (!well_formed) {
            report(field, in_quotes(key) + " is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        } else if (!seen.insert(key).second) {
            report(field, in_quotes(key) + " is listed twice");
        } else {
            keys.push_back(key);
        }
    }
}

void read_exit_codes(const Report &report, const json &v, Entry &entry) {
    if (!v.is_array()) {
        report("infrastructureExitCodes", "must be an array of integers from 1 to 255");
        return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto field = "infrastructureExitCodes[" + std::to_string(i) + "]";
        const auto code = integer(report, field, v[i], 1, 255);
        if (!code) {
            continue;
        }
        const auto c = static_cast<int>(*code);
        if (std::find(entry.infrastructure_exit_codes.begin(),
                      entry.infrastructure_exit_codes.end(),
                      c) != entry.infrastructure_exit_codes.end()) {
            report(field, std::to_string(c) + " is listed twice");
            continue;
        }
        entry.infrastructure_exit_codes.push_back(c);
    }
}

void read_subcommand_paths(const Report &report, const json &v, Entry &entry) {
    if (!v.is_array() || v.empty()) {
        report("subcommandPaths",
               "must be a non-empty array of arrays of strings (leave it out to allow any "
               "arguments)");
        return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (auto path = texts(report, "subcommandPaths[" + std::to_string(i) + "]", v[i])) {
            entry.subcommand_paths.push_back(std::move(*path));
        }
    }
}

void read_artifacts(const Report &report, const json &v, Entry &entry) {
    if (!v.is_object()) {
        report("artifacts", "must be an object of name -> workspace-relative path");
        return;
    }
    for (const auto &item : v.items()) {
        const auto field = "artifacts." + item.key();
        const auto path = text(report, field, item.value());
        if (check_name(report, field, item.key()) && path && check_relative(report, field, *path)) {
            entry.artifacts.emplace(item.key(), *path);
        }
    }
}

struct Project {
    std::optional<fs::path> root;  // canonical; empty when it could not be established
};

// Where the target lies: relative, inside the project, a regular file the kernel will execute. A
// target that leads out of the project (by ".." or a link) would run a host program the
// workspace's checkout does not hold; one that cannot be executed would fail every call with 126,
// recorded against the target.
std::optional<fs::path> read_target(const Report &report, const json &v, const Project &project,
                                    Entry &entry) {
    auto target = text(report, "target", v);
    if (!target || !check_relative(report, "target", *target)) {
        return std::nullopt;
    }
    entry.target = *target;
    if (!project.root) {
        return std::nullopt;
    }
    auto where = resolved(*project.root / *target);
    if (!where || !inside(*project.root, *where, true)) {
        report("target",
               in_quotes(*target) + " leads outside the project " + project.root->string());
        return std::nullopt;
    }
    if (is_skill_target(entry)) {
        // The skill is copied into the agent's home on every call: a link in it would carry
        // whatever it points at, and a link to it would run a folder the checkout does not hold.
        if (const auto why = files::why_not_skill_folder(*project.root / *target)) {
            report("target", "the skill folder " + in_quotes(*target) + " " + *why);
        }
    } else if (!regular_file(*where)) {
        report("target", in_quotes(*target) + " is not a regular file in the project");
    } else if (const auto why = why_not_executable(*where)) {
        report("target", in_quotes(*target) + " (" + where->string() + ") " + *why);
    }
    return where;
}

// A toolServer's transport, and for http its endpoint's path, checked as an HTTP probe's path is.
void read_tool_server_transport(const Report &report, Fields &f, Entry &entry) {
    if (const auto *t = f.take("transport")) {
        if (auto s = text(report, "transport", *t)) {
            if (*s == "http" || *s == "stdio") {
                entry.transport = *s;
            } else {
                report("transport", in_quotes(*s) + " is not a transport (stdio, http)");
            }
        }
    }
    const auto *p = f.take("path");
    if (p == nullptr) {
        return;
    }
    if (entry.transport != "http") {
        report("path", "is the endpoint of an http transport; this entry's transport is " +
                           entry.transport);
    } else if (auto s = text(report, "path", *p)) {
        if (auto problem = http::invalid_target(*s)) {
            report("path", *problem);
        } else {
            entry.endpoint_path = *s;
        }
    }
}

struct EntrySeen {
    std::string name;                    // how problems name the entry
    std::optional<fs::path> target;      // resolved, for the cross-entry check
    std::set<std::string> system_paths;  // normalised
};

// Reads registry[index] and appends it to the registry (an empty entry when it is no object).
EntrySeen read_entry(const Report &file_report, const json &v, std::size_t index,
                     const Project &project, Evaluation &evaluation) {
    EntrySeen seen{"registry[" + std::to_string(index) + "]", {}, {}};
    Entry entry;
    if (!v.is_object()) {
        file_report.within(seen.name)({}, "must be an object");
        evaluation.registry.push_back(std::move(entry));
        return seen;
    }
    // The entry is named by its id once the id is a valid one, so hostile ids never name things.
    if (const auto it = v.find("interfaceId");
        it != v.end() && it->is_string() && name_like(it->get<std::string>())) {
        seen.name = "entry '" + it->get<std::string>() + "'";
    }
    const auto report = file_report.within(seen.name);
    Fields f{v, report};
    if (const auto *id = f.require("interfaceId")) {
        if (auto s = text(report, "interfaceId", *id); s && check_name(report, "interfaceId", *s)) {
            entry.interface_id = *s;
        }
    }
    if (const auto *kind = f.take("kind")) {
        if (auto s = text(report, "kind", *kind)) {
            if (*s != "command" && *s != "toolServer" && *s != "http") {
                report("kind", in_quotes(*s) + " is not a kind (command, toolServer, http)");
            }
            entry.kind = *s;
        }
    }
    if (const auto *exe = f.require("executable")) {
        if (auto s = text(report, "executable", *exe); s && check_name(report, "executable", *s)) {
            entry.executable = *s;
        }
    }
    if (entry.kind == "http" && !v.contains("target")) {
        // The runtime starts the service it bridges to; there is no outside server to name.
        (void)f.take("target");
        report("target",
               "is required: an HTTP entry names no server without it (the program "
               "that serves, relative to the project root)");
    } else if (const auto *t = f.require("target")) {
        seen.target = read_target(report, *t, project, entry);
    }
    if (entry.kind == "toolServer") {
        read_tool_server_transport(report, f, entry);
    }
    if (entry.kind != "command") {
        if (const auto *a = f.take("args")) {
            entry.args = texts(report, "args", *a).value_or(std::vector<std::string>{});
        }
        // A server's command line is its entry's: no probe adds to it.
        if (f.take_unlisted("subcommandPaths") != nullptr) {
            report("subcommandPaths",
                   "is for command entries; a " + entry.kind + " entry's arguments are its 'args'");
        }
        entry.subcommand_paths = {{}};
    } else if (const auto *p = f.take("subcommandPaths")) {
        read_subcommand_paths(report, *p, entry);
    } else {
        entry.subcommand_paths = {{}};
    }
    if (const auto *a = f.take("artifacts")) {
        read_artifacts(report, *a, entry);
    }
    if (const auto *e = f.take("environmentKeys")) {
        read_environment_keys(report, *e, entry.environment_keys);
    }
    if (const auto *m = f.require("maxElapsedMs")) {
        entry.max_elapsed_ms = milliseconds(report, "maxElapsedMs", *m).value_or(0);
    }
    if (const auto *c = f.take("infrastructureExitCodes")) {
        read_exit_codes(report, *c, entry);
    }
    if (const auto *s = f.take("systemPaths")) {
        read_system_paths(report, *s, entry);
    }
    if (const auto *e = f.take("egress")) {
        read_egress(report, *e, entry.egress);
    }
    if (const auto *l = f.take("login")) {
        entry.login = login_adapter(report, *l);
    }
    if (const auto *b = f.take("budgets")) {
        entry.budgets = read_budgets(report, *b, false);
    }
    if (f.take_unlisted("network") != nullptr) {
        report("network",
               "was removed; list the hosts the target may reach in 'egress' "
               "([{\"host\": ..., \"port\": ...}])");
    }
    f.refuse_unknown();
    if (is_skill_target(entry)) {
        complete_skill_entry(entry);
    }
    seen.system_paths = {entry.system_paths.begin(), entry.system_paths.end()};
    evaluation.registry.push_back(std::move(entry));
    return seen;
}

// Two entries that start the same program with different system paths would grant it different
// reads depending on which entry a probe names; the grants of one program are one decision.
void check_shared_targets(const Report &report, const std::vector<EntrySeen> &entries) {
    std::map<fs::path, const EntrySeen *> first;  // by target: the first entry naming it
    for (const auto &entry : entries) {
        if (!entry.target) {
            continue;
        }
        const auto [it, added] = first.emplace(*entry.target, &entry);
        if (!added && it->second->system_paths != entry.system_paths) {
            report.within(entry.name)("systemPaths",
                                      "starts the same target as " + it->second->name +
                                          " with different systemPaths; give both the same list");
        }
    }
}

void read_registry(const Report &report, const json &v, const Project &project,
                   Evaluation &evaluation) {
    if (!v.is_array() || v.empty()) {
        report("registry", "must be a non-empty array of entries");
        return;
    }
    std::vector<EntrySeen> seen;
    std::set<std::string> ids;
    for (std::size_t i = 0; i < v.size(); ++i) {
        seen.push_back(read_entry(report, v[i], i, project, evaluation));
        const auto &id = evaluation.registry.back().interface_id;
        if (!id.empty() && !ids.insert(id).second) {
            report.within(seen.back().name)("interfaceId",
                                            in_quotes(id) + " names an earlier entry too");
        }
    }
    check_shared_targets(report, seen);
}

// ---- the evaluator ----

// The grader runs outside the confinement with the evaluation folder readable: a program outside
// the project (by ".." or a link) is one that neither the project nor its history holds. One that
// cannot be executed would leave every trial without a verdict.
void check_evaluator_program(const Report &report, const std::string &program,
                             const Project &project, const fs::path &folder) {
    const std::string field = "command[0]";
    if (!check_carriable(report, field, program)) {
        return;
    }
    if (program.empty() || program.front() == '/') {
        report(field, in_quotes(program) + " must be a path relative to the evaluation folder");
        return;
    }
    const auto where = resolved(folder / program);
    if (!where) {
        report(field, in_quotes(program) + " cannot be resolved");
    } else if (project.root && !inside(*project.root, *where, true)) {
        report(field, in_quotes(program) + " leads outside the project " + project.root->string());
    } else if (!regular_file(*where)) {
        report(field, in_quotes(program) + " is not a regular file");
    } else if (const auto why = why_not_executable(*where)) {
        report(field, in_quotes(program) + " (" + where->string() + ") " + *why);
    }
}

// rubric.md: a regular file inside the evaluation folder, reached through no link (a link could
// show the judge a file the evaluation does not hold, and change between check and run).
void read_rubric_file(const Report &report, const std::string &name, const fs::path &folder,
                      RubricJudge &judge) {
    if (!check_relative(report, "rubric", name)) {
        return;
    }
    fs::path at = folder;
    for (const auto &component : fs::path{name}) {
        at /= component;
        std::error_code ec;
        if (fs::symlink_status(at, ec).type() == fs::file_type::symlink) {
            report("rubric", in_quotes(name) + " passes through the link " + at.string() +
                                 "; the rubric must be a file of the evaluation folder");
            return;
        }
    }
    std::string text;
    if (auto why = read_bounded(at, text)) {
        report("rubric", in_quotes(name) + " (" + at.string() + ") " + *why);
        return;
    }
    std::vector<std::string> problems;
    judge.rubric = parse_rubric(text, problems);
    for (const auto &problem : problems) {
        report("rubric", in_quotes(name) + ": " + problem);
    }
    judge.rubric_file = name;
}

// The judge's CLI: an absolute path, or a name looked up on PATH now, so that check says when
// it is missing and every trial runs the same file.
void read_judge_program(const Report &report, const std::string &program, RubricJudge &judge) {
    judge.program = program;
    if (program.empty() || (program.front() != '/' && program.find('/') != std::string::npos)) {
        report("program", in_quotes(program) + " must be an absolute path or a name on PATH");
        return;
    }
    fs::path file = program;
    if (program.front() != '/') {
        const char *path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
        const auto found = program_path::resolve(
            program, path == nullptr ? std::nullopt : std::optional<std::string_view>{path});
        if (!found) {
            report("program", in_quotes(program) + " is not found on PATH");
            return;
        }
        file = found.path;
    }
    // The file a link leads to, as the kernel will run it: a link changed after check runs nothing
    // else.
    if (const auto target = resolved(file)) {
        file = *target;
    }
    if (!regular_file(file)) {
        report("program", in_quotes(program) + " (" + file.string() + ") is not a regular file");
    } else if (const auto why = why_not_executable(file)) {
        report("program", in_quotes(program) + " (" + file.string() + ") " + *why);
    } else {
        judge.program_path = file;
    }
}

void read_rubric_judge(const Report &report, Fields &f, const fs::path &folder,
                       Evaluator &evaluator) {
    RubricJudge judge;
    if (const auto *r = f.require("rubric")) {
        if (auto name = text(report, "rubric", *r)) {
            read_rubric_file(report, *name, folder, judge);
        }
    }
    if (const auto *a = f.require("agent")) {
        if (auto agent = text(report, "agent", *a); agent && *agent != "claude") {
            report("agent", in_quotes(*agent) + " is not an agent a judge can run (claude)");
        }
    }
    if (const auto *p = f.require("program")) {
        if (auto program = text(report, "program", *p)) {
            read_judge_program(report, *program, judge);
        }
    }
    if (const auto *m = f.require("model")) {
        if (auto model = text(report, "model", *m)) {
            // The model is pinned: an empty name would leave the CLI's default, which changes.
            const bool named = !model->empty() && model->size() <= 128 &&
                               std::none_of(model->begin(), model->end(),
                                            [](char c) { return c <= ' ' || c == 0x7f; });
            if (!named) {
                report("model", in_quotes(*model) +
                                    " must name the model: 1 to 128 characters, no space or "
                                    "control character");
            } else {
                judge.model = *model;
            }
        }
    }
    if (f.take_unlisted("temperature") != nullptr) {
        // Pinning it is what the field would promise, and the CLI cannot keep that promise.
        report("temperature",
               "cannot be pinned: Claude Code 2.1.332 has no flag or variable for it (it sends "
               "its own, 1, for every model that takes one); remove it "
               "(docs/agent-evaluations.md#rubric-judges)");
    }
    if (const auto *l = f.take("login")) {
        judge.login = login_adapter(report, *l);
    }
    if (const auto *e = f.take("environmentKeys")) {
        read_environment_keys(report, *e, judge.environment_keys);
    }
    if (const auto *e = f.take("egress")) {
        read_egress(report, *e, judge.egress, "egress", EmptyEgress::refused);
    }
    if (const auto *a = f.take("artifacts")) {
        if (auto list = texts(report, "artifacts", *a)) {
            for (std::size_t i = 0; i < list->size(); ++i) {
                const auto &item = (*list)[i];
                const auto slash = item.find('/');
                if (slash == std::string::npos || slash == 0 || slash + 1 == item.size() ||
                    item.find('/', slash + 1) != std::string::npos) {
                    report("artifacts[" + std::to_string(i) + "]",
                           in_quotes(item) + " must be '<entry>/<artifact name>'");
                } else {
                    judge.artifacts.push_back(item);
                }
            }
        }
    }
    if (const auto *r = f.take("retries")) {
        judge.retries = static_cast<int>(integer(report, "retries", *r, 0, 5).value_or(0));
    }
    if (const auto *m = f.take("maxScore")) {
        judge.max_score = integer(report, "maxScore", *m, 1, kMaxRubricScore).value_or(1);
    }
    if (const auto *t = f.take("passThreshold")) {
        // Thousandths at most, so that the decision is made exactly, in integers.
        const double value = t->is_number() ? t->get<double>() : -1;
        const double permille = value * 1000;
        if (!t->is_number() || value < 0 || value > 1 ||
            std::abs(permille - std::round(permille)) > 1e-6) {
            report("passThreshold", "must be a number from 0 to 1 with at most three decimals");
        } else {
            judge.pass_threshold_permille = static_cast<std::int64_t>(std::round(permille));
        }
    }
    evaluator.rubric = std::move(judge);
}

void read_evaluator(const Report &file_report, const json &v, const Project &project,
                    Evaluation &evaluation) {
    const auto report = file_report.within("evaluator");
    if (!v.is_object()) {
        report({}, "must be an object {command, maxElapsedMs} or {\"kind\": \"rubric\", ...}");
        return;
    }
    Fields f{v, report};
    auto &evaluator = evaluation.evaluator;
    if (const auto *k = f.take("kind")) {
        if (auto kind = text(report, "kind", *k)) {
            if (*kind != "command" && *kind != "rubric") {
                report("kind", in_quotes(*kind) + " is not an evaluator kind (command, rubric)");
                return;
            }
            evaluator.kind = *kind;
        }
    }
    if (evaluator.kind == "rubric") {
        read_rubric_judge(report, f, evaluation.folder, evaluator);
    } else if (const auto *c = f.require("command")) {
        auto command = texts(report, "command", *c);
        if (command && command->empty()) {
            report("command", "must name the evaluator's program");
        } else if (command) {
            check_evaluator_program(report, command->front(), project, evaluation.folder);
            evaluator.command = std::move(*command);
        }
    }
    if (const auto *m = f.take("maxElapsedMs")) {
        evaluator.max_elapsed_ms = milliseconds(report, "maxElapsedMs", *m).value_or(0);
    }
    f.refuse_unknown();
}

// ---- probes ----

bool matches_a_path(const std::vector<std::string> &args, const Entry &entry) {
    return std::any_of(
        entry.subcommand_paths.begin(), entry.subcommand_paths.end(), [&](const auto &path) {
            return path.size() <= args.size() && std::equal(path.begin(), path.end(), args.begin());
        });
}

std::string list_of(const std::vector<std::vector<std::string>> &paths) {
    std::string out;
    for (const auto &path : paths) {
        out += out.empty() ? "[" : ", [";
        for (std::size_t i = 0; i < path.size(); ++i) {
            out += (i == 0 ? "" : " ") + path[i];
        }
        out += "]";
    }
    return out;
}

void read_probe_files(const Report &report, const json &v, Probe &probe) {
    if (!v.is_object()) {
        report("files", "must be an object of workspace-relative path -> content");
        return;
    }
    std::size_t total = 0;
    for (const auto &item : v.items()) {
        const auto field = "files." + item.key();
        const auto content = text(report, field, item.value());
        if (!check_relative(report, field, item.key()) || !content) {
            continue;
        }
        total += content->size();
        probe.files.emplace(item.key(), *content);
    }
    if (total > kMaxProbeFilesBytes) {
        report("files", "hold " + std::to_string(total) + " bytes; the limit is 16 MiB");
    }
}

// "corpus": workspace path -> the name of a file under corpus/, resolved by load_corpus.
void read_probe_corpus(const Report &report, const json &v, Probe &probe) {
    if (!v.is_object()) {
        report("corpus", "must be an object of workspace-relative path -> corpus file name");
        return;
    }
    for (const auto &item : v.items()) {
        const auto field = "corpus." + item.key();
        const auto name = text(report, field, item.value());
        if (!check_relative(report, field, item.key()) || !name ||
            !check_relative(report, field, *name)) {
            continue;
        }
        if (probe.files.count(item.key()) != 0) {
            report(field, "writes the path \"files\" writes too");
            continue;
        }
        probe.corpus.emplace(item.key(), *name);
    }
}

// The registry's valid ids, in file order: what a probe's "entry" may name.
std::vector<std::string> interface_ids(const Evaluation &evaluation) {
    std::vector<std::string> ids;
    for (const auto &e : evaluation.registry) {
        if (!e.interface_id.empty()) {
            ids.push_back(e.interface_id);
        }
    }
    return ids;
}

// A server's probe takes neither a command's arguments (the entry's `args` are the server's) nor
// its stdin; each is refused with the kind's reason.
void refuse_command_fields(const Report &report, Fields &f, const std::string &kind,
                           const std::string &why_args, const std::string &why_stdin) {
    for (const char *refused : {"args", "stdin"}) {
        if (f.take_unlisted(refused) != nullptr) {
            report(refused, "is not taken by a probe of " + kind + ": " +
                                (std::string_view{refused} == "args" ? why_args : why_stdin));
        }
    }
}

// A toolServer probe's request; its stdin is the runtime's conversation and its command line the
// entry's.
void read_tool_server_fields(const Report &report, Fields &f, const Entry &entry, Probe &probe) {
    refuse_command_fields(report, f, "a toolServer entry",
                          "the server's arguments are the entry's 'args'",
                          "the server's stdin carries the runtime's requests");
    const ToolServerProbeFields fields{f.require("method"), f.take("params"), f.take("expect"),
                                       f.take("timeoutMs")};
    if (fields.method == nullptr) {
        return;  // reported as required
    }
    probe.tool_server = read_tool_server_probe(
        fields, entry.max_elapsed_ms,
        [&](const std::string &field, const std::string &message) { report(field, message); });
}

// An HTTP probe's request and what its answer should be; the service's command line is the
// entry's, and its stdin is not the probe's.
void read_http_fields(const Report &report, Fields &f, const Entry &entry, Probe &probe) {
    refuse_command_fields(report, f, "an http entry",
                          "the service's arguments are the entry's 'args'",
                          "the probe's request is 'request'");
    const ProbeProblem problem = [&](const std::string &field, const std::string &message) {
        report(field, message);
    };
    HttpProbe http;
    bool fine = true;
    if (const auto *r = f.require("request")) {
        auto request = read_http_request(*r, problem);
        fine = request.has_value();
        if (request) http.request = std::move(*request);
    } else {
        fine = false;
    }
    if (const auto *e = f.take("expect")) {
        http.expect = read_http_expect(*e, problem);
        fine = http.expect.has_value() && fine;
    }
    if (const auto *t = f.take("timeoutMs")) {
        http.timeout_ms = read_probe_timeout(*t, entry.max_elapsed_ms, problem);
        fine = http.timeout_ms.has_value() && fine;
    }
    if (fine) probe.http = std::move(http);
}

void read_probe(const Report &file_report, const std::string &name, const json &doc,
                bool registry_known, Evaluation &evaluation) {
    Probe probe;
    probe.name = name;
    probe.file = file_report.file();
    const auto report = file_report.within("probe '" + name + "'");
    Fields f{doc, report};
    const Entry *entry = nullptr;
    if (const auto *e = f.require("entry")) {
        if (auto s = text(report, "entry", *e)) {
            probe.entry = *s;
            entry = evaluation.entry(*s);
            if (!name_like(*s) || (entry == nullptr && registry_known)) {
                const auto ids = interface_ids(evaluation);
                report("entry", in_quotes(*s) + " names no entry of the registry" +
                                    (ids.empty() ? "" : " (entries: " + listed(ids) + ")") +
                                    did_you_mean(*s, ids));
            }
        }
    }
    const bool tool_server = entry != nullptr && entry->kind == "toolServer";
    const bool http = entry != nullptr && entry->kind == "http";
    if (tool_server) {
        read_tool_server_fields(report, f, *entry, probe);
    } else if (http) {
        read_http_fields(report, f, *entry, probe);
    }
    if (const auto *a = tool_server || http ? nullptr : f.take("args")) {
        probe.args = texts(report, "args", *a).value_or(std::vector<std::string>{});
    }
    if (entry != nullptr && !entry->subcommand_paths.empty() &&
        !matches_a_path(probe.args, *entry)) {
        report("args", "start with none of the entry's subcommandPaths (" +
                           list_of(entry->subcommand_paths) + ")");
    }
    const json *conversation = tool_server || http ? nullptr : f.take("conversation");
    if (conversation != nullptr) {
        probe.conversation = read_conversation_probe(
            *conversation, evaluation.folder, entry != nullptr ? entry->max_elapsed_ms : 0,
            [&](const std::string &field, const std::string &message) { report(field, message); });
        const auto agent = conversation->find("agent");
        if (agent != conversation->end() && agent->is_object() && agent->contains("egress")) {
            std::vector<EgressItem> items;
            read_egress(report, (*agent)["egress"], items, "conversation.agent.egress",
                        EmptyEgress::refused);
            if (probe.conversation) probe.conversation->agent.egress = std::move(items);
        }
        if (f.take_unlisted("stdin") != nullptr) {
            report("stdin",
                   "is not taken by a probe with a conversation: the target's stdin "
                   "carries the agent's messages");
        }
    }
    if (const auto *s = tool_server || http || conversation ? nullptr : f.take("stdin")) {
        if (auto in = text(report, "stdin", *s)) {
            if (in->size() > kMaxStdinBytes) {
                report("stdin", "is " + std::to_string(in->size()) + " bytes; the limit is 1 MiB");
            }
            probe.stdin_text = std::move(*in);
        }
    }
    if (const auto *files = f.take("files")) {
        read_probe_files(report, *files, probe);
    }
    if (const auto *corpus = f.take("corpus")) {
        read_probe_corpus(report, *corpus, probe);
    }
    if (const auto *r = f.take("revision")) {
        if (auto revision = text(report, "revision", *r)) {
            if (auto why = malformed_revision(*revision)) {
                report("revision", in_quotes(*revision) + " " + *why);
            } else {
                probe.revision = std::move(*revision);
            }
        }
    }
    f.refuse_unknown();
    evaluation.probes.push_back(std::move(probe));
}

void read_probes(const Report &report, const fs::path &dir, bool registry_known,
                 Evaluation &evaluation, std::vector<Problem> &problems) {
    std::error_code ec;
    std::vector<std::pair<std::string, fs::path>> found;
    fs::directory_iterator it{dir, ec};
    for (; !ec && it != fs::directory_iterator{}; it.increment(ec)) {
        const auto &path = it->path();
        if (path.extension() == ".json") {
            found.emplace_back(path.stem().string(), path);
        }
    }
    if (ec) {
        report("probes", "the directory " + dir.string() + " cannot be read: " + ec.message());
        return;
    }
    if (found.empty()) {
        report("probes", "the directory " + dir.string() + " holds no probe (*.json)");
        return;
    }
    std::sort(found.begin(), found.end());
    for (const auto &[name, path] : found) {
        const Report probe_report{problems, path};
        if (!name_like(name)) {
            probe_report({}, "the probe's name " + in_quotes(name) +
                                 " is not 1 to 64 of the characters A-Z a-z 0-9 . _ -");
            continue;
        }
        std::optional<json> doc;
        if (parse_file(probe_report, doc)) {
            read_probe(probe_report, name, *doc, registry_known, evaluation);
        }
    }
}

// ---- evaluation.json ----

void read_project(const Report &report, const json *v, Evaluation &evaluation, Project &project) {
    std::string written = "..";
    if (v != nullptr) {
        auto s = text(report, "project", *v);
        if (!s || !check_carriable(report, "project", *s)) {
            return;
        }
        written = *s;
    }
    std::error_code ec;
    auto root = fs::canonical(evaluation.folder / written, ec);
    if (ec || !fs::is_directory(root, ec)) {
        report("project", in_quotes(written) + " is not a directory");
        return;
    }
    if (auto why = uncarriable(root.string())) {
        report("project", "the project root " + root.string() + " " + *why);
        return;
    }
    if (!inside(root, evaluation.folder, true)) {
        report("project", "the evaluation folder " + evaluation.folder.string() +
                              " does not lie inside the project root " + root.string());
        return;
    }
    evaluation.project_root = root;
    project.root = root;
}

// The probes directory; inside the evaluation folder, where the target never looks.
fs::path read_probes_dir(const Report &report, const json *v, const Evaluation &evaluation) {
    std::string written = "probes";
    if (v != nullptr) {
        auto s = text(report, "probes", *v);
        if (!s || !check_carriable(report, "probes", *s)) {
            return {};
        }
        written = *s;
    }
    const auto dir = resolved(evaluation.folder / written);
    if (!dir || !inside(evaluation.folder, *dir, true)) {
        report("probes", in_quotes(written) + " does not lie inside the evaluation folder");
        return {};
    }
    return *dir;
}

void read_settings(const Report &report, Fields &f, Evaluation &evaluation) {
    if (const auto *c = f.take("confinement")) {
        if (c->is_boolean()) {
            evaluation.confinement = c->get<bool>();
        } else {
            report("confinement", "must be true or false");
        }
    }
    if (const auto *c = f.take("canaries")) {
        if (c->is_boolean()) {
            evaluation.canaries = c->get<bool>();
        } else {
            report("canaries", "must be true or false");
        }
    }
    if (const auto *t = f.take("trials")) {
        evaluation.trials = static_cast<int>(integer(report, "trials", *t, 1, 1000).value_or(1));
    }
    if (const auto *b = f.take("budgets")) {
        evaluation.budgets = read_budgets(report, *b, true);
    }
}

}  // namespace

std::string to_string(const Problem &problem) {
    std::string out;
    if (!problem.file.empty()) {
        out += problem.file.string() + ":";
        if (problem.line != 0) {
            out += std::to_string(problem.line) + ":" + std::to_string(problem.column) + ":";
        }
        out += " ";
    }
    if (!problem.where.empty()) {
        out += problem.where + ": ";
    }
    return out + problem.message;
}

const Entry *Evaluation::entry(const std::string &interface_id) const {
    const auto it = std::find_if(registry.begin(), registry.end(),
                                 [&](const Entry &e) { return e.interface_id == interface_id; });
    return it == registry.end() ? nullptr : &*it;
}

std::filesystem::path Evaluation::evaluator_program() const {
    if (evaluator.command.empty()) {
        return {};
    }
    return (folder / evaluator.command.front()).lexically_normal();
}

Loaded load(const std::filesystem::path &folder) {
    Loaded out;
    auto &problems = out.problems;
    auto &evaluation = out.evaluation;
    std::error_code ec;
    const auto absolute = fs::absolute(folder, ec);
    const Report folder_report{problems, absolute / "evaluation.json"};

    // A path of the host that no confinement can carry: reported like the rest, marked so `run`
    // refuses it as a host it cannot confine (exit 12) rather than as a malformed folder.
    const auto cannot_confine = [&](const Report &report, std::string message) {
        report({}, std::move(message));
        problems.back().cannot_confine = true;
    };
    // TMPDIR reaches every bind mount and environment the runtime builds.
    const char *tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
    if (tmp != nullptr) {
        if (auto why = uncarriable(tmp)) {
            cannot_confine(Report{problems, {}, "TMPDIR"}, std::move(*why));
        }
    }
    if (auto why = uncarriable(absolute.string())) {
        cannot_confine(folder_report, "the evaluation folder's path " + *why);
        return out;
    }
    evaluation.folder = fs::canonical(absolute, ec);
    if (ec) {
        folder_report({}, "the evaluation folder " + absolute.string() + " does not exist");
        return out;
    }
    if (!fs::is_directory(evaluation.folder, ec)) {
        folder_report({}, "the evaluation folder " + absolute.string() + " is not a directory");
        return out;
    }
    if (auto why = uncarriable(evaluation.folder.string())) {
        cannot_confine(folder_report, "the evaluation folder's path " + *why);
        return out;
    }
    // A temp directory inside the evaluation folder puts what writes temp files (the evaluator,
    // an opted-out target) among the grading material, where no confinement may grant it.
    if (tmp != nullptr && tmp[0] == '/') {
        if (const auto temp = resolved(tmp); temp && inside(evaluation.folder, *temp, false)) {
            cannot_confine(Report{problems, {}, "TMPDIR"},
                           temp->string() + " lies inside the evaluation folder " +
                               evaluation.folder.string() + "; point TMPDIR elsewhere");
        }
    }
    const Report report{problems, evaluation.folder / "evaluation.json"};
    // The project's root given for its evaluation folder: every field would be reported missing.
    if (fs::status(report.file(), ec).type() == fs::file_type::not_found) {
        const auto conventional = evaluation.folder / ".tea";
        report({}, fs::exists(conventional / "evaluation.json", ec)
                       ? "does not exist; the evaluation folder here is " + conventional.string() +
                             " (check that folder)"
                       : "does not exist; EVAL_DIR is the folder that holds evaluation.json "
                         "(.tea in the project, by convention)");
        return out;
    }

    std::optional<json> doc;
    const bool object = parse_file(report, doc);
    const json empty = json::object();
    Fields f{object ? *doc : empty, report};
    Project project;
    read_settings(report, f, evaluation);
    read_project(report, f.take("project"), evaluation, project);
    bool registry_known = false;
    if (const auto *r = object ? f.require("registry") : nullptr) {
        read_registry(report, *r, project, evaluation);
        registry_known = r->is_array();
    }
    if (const auto *e = object ? f.require("evaluator") : nullptr) {
        read_evaluator(report, *e, project, evaluation);
    }
    evaluation.probes_dir = read_probes_dir(report, f.take("probes"), evaluation);
    f.refuse_unknown();
    if (!evaluation.probes_dir.empty()) {
        read_probes(report, evaluation.probes_dir, registry_known, evaluation, problems);
    }
    load_corpus(evaluation, problems, out.notes);
    const Report contract{problems, evaluation.folder / "contract.json"};
    if (fs::symlink_status(contract.file(), ec).type() != fs::file_type::not_found) {
        std::optional<json> contract_doc;
        if (parse_file(contract, contract_doc)) {
            check_contract(*contract_doc, evaluation,
                           [&](const std::string &field, const std::string &message) {
                               contract(field, message);
                           });
        }
    }
    return out;
}

}  // namespace tea::evaluation
