#include "call/logins.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "exec/environment.hpp"
#include "plugins/selection.hpp"
#include "redaction/credentials_file.hpp"
#include "redaction/file_redactor.hpp"
#include "redaction/json_redactor.hpp"
#include "util/error.hpp"

namespace tea::call {

namespace {

// The invoker's real home, as a login adapter looks for files under it: HOME, else the account's.
std::string invoker_home() {
    if (const char *home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
        return home;
    }
    if (const auto *pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
        return pw->pw_dir;
    }
    return {};
}

// Whether a grant keeps to what the host applies: a file the host can open by absolute path, a
// variable name that the environment can hold, each home path once.
void check_grant(const documents::LoginGrant &grant, const std::string &who) {
    for (const auto &file : grant.files) {
        if (file.source.empty() || file.source.front() != '/') {
            throw host_error(who + " names the file '" + file.source +
                             "', which is not an absolute path");
        }
    }
    for (std::size_t i = 0; i < grant.files.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (grant.files[i].home_path == grant.files[j].home_path) {
                throw host_error(who + " links two files at " + grant.files[i].home_path);
            }
        }
    }
}

}  // namespace

Logins Logins::grant(const plugins::Registry &registry, const config::Config &config,
                     const std::vector<LoginAsk> &asks, bool confined) {
    Logins out;
    const auto env = exec::current_environment();
    const auto home = invoker_home();
    for (const auto &ask : asks) {
        const std::string who = "entry '" + ask.entry + "': login '" + ask.login + "'";
        plugins::Selected adapter;
        try {
            adapter = plugins::select_login(registry, config, ask.login);
        } catch (const Error &e) {
            throw Error(e.code(), "entry '" + ask.entry + "': " + e.what());
        }
        if (!adapter.plugin->capabilities().login_grant) {
            // Grants before 1.7 were provisional documents: never read one as a grant.
            throw host_error(who + ": the adapter implements plugin ABI 1." +
                             std::to_string(adapter.plugin->abi_minor()) +
                             ", and this tea-evaluate asks for grants from adapters of 1.7 or "
                             "later; upgrade the adapter");
        }
        documents::LoginRequest request{
            ask.entry, ask.login, ask.executable, home, env, ask.environment_keys, confined};
        const auto &ops = std::get<tea_login_ops>(adapter.plugin->ops());
        std::string answer;
        try {
            answer = adapter.instance->transform(ops.grant, "grant", documents::encode(request));
        } catch (const std::exception &e) {
            // Among them the adapter's own refusal of a confined entry that has no route: no
            // target may start without the login it declares, or its failure would look like
            // its own.
            throw host_error("entry '" + ask.entry + "': " + e.what());
        }
        Granted granted{ask, {}, {}};
        try {
            granted.grant = documents::decode_login_grant(answer);
        } catch (const documents::DocumentError &e) {
            throw host_error(who + ": the adapter's grant is malformed: " + e.what());
        }
        check_grant(granted.grant, who);
        for (const auto &name : granted.grant.variables) {
            std::string value;
            if (exec::find_variable(env, name, &value) != nullptr) {
                (void)out.secrets_.add_value(value, "the variable " + name);
                granted.variables.emplace_back(name, value);
            }
        }
        for (const auto &extra : granted.grant.redact) {
            (void)out.secrets_.add_value(extra, who);
        }
        if (confined && granted.variables.empty() && granted.grant.files.empty()) {
            // An adapter that grants nothing to a confined entry has left it without its login.
            throw host_error(who +
                             ": the adapter granted no variable the environment holds and "
                             "no file; set \"confinement\": false in evaluation.json to "
                             "run the entry with your own home and environment");
        }
        out.granted_.push_back(std::move(granted));
        for (const auto &file : out.granted_.back().grant.files) {
            (void)out.read(file, ask.entry);
        }
    }
    return out;
}

std::string Logins::read(const documents::LoginFile &file, const std::string &entry) {
    const auto fd = redaction::open_credentials_file(file.source);
    if (!fd) {
        // Granted at the start, gone now: the entry would run without its login.
        throw host_error("entry '" + entry + "': the login file " + file.source +
                         " is gone; log in again on this host, or export the token");
    }
    auto text = redaction::read_credentials_file(fd.get(), file.source);
    (void)secrets_.add_credentials(text, file.public_fields, file.source);
    return text;
}

void Logins::apply(const std::string &entry, exec::LaunchSpec &spec, bool show_files) {
    for (const auto &g : granted_) {
        if (g.ask.entry != entry) {
            continue;
        }
        for (const auto &[name, value] : g.variables) {
            exec::set_variable(spec.env, name, value);
        }
        for (const auto &file : g.grant.files) {
            auto content = read(file, entry);
            if (show_files) {
                spec.login_files.push_back({file.home_path, std::move(content)});
            }
        }
    }
}

void Logins::reread() {
    for (const auto &g : granted_) {
        for (const auto &file : g.grant.files) {
            const auto fd = redaction::open_credentials_file(file.source);
            if (fd) {
                // A file removed since the call began adds nothing; the strings it held are kept.
                (void)secrets_.add_from_file(fd.get(), file.source, file.public_fields);
            }
        }
    }
}

std::shared_ptr<const redaction::SecretMatcher> Logins::matcher() const {
    if (secrets_.secrets().empty()) {
        return nullptr;
    }
    return secrets_.matcher();
}

std::string Logins::redact(std::string_view text) const {
    const auto m = matcher();
    return m ? redaction::redact_text(*m, text) : std::string{text};
}

nlohmann::json Logins::redact_record(const nlohmann::json &doc) const {
    const auto m = matcher();
    return m ? redaction::redact_json(*m, doc) : doc;
}

void Logins::redact_file(const std::filesystem::path &path, bool cut) const {
    const auto m = matcher();
    std::error_code ec;
    if (m && std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) {
        (void)redaction::redact_file(path, *m, cut);
    }
}

void Logins::settle(CallOutcome &outcome) {
    reread();
    const auto m = matcher();
    if (!m) {
        return;
    }
    for (auto &f : outcome.audit.findings) {
        f.path = redaction::redact_text(*m, f.path);
        f.reason = redaction::redact_text(*m, f.reason);
    }
    outcome.audit.reason = redaction::redact_text(*m, outcome.audit.reason);
    outcome.egress_records = redaction::redact_json(*m, outcome.egress_records);
}

nlohmann::json Logins::records(bool confined) const {
    auto out = nlohmann::json::array();
    for (const auto &g : granted_) {
        auto variables = nlohmann::json::array();
        for (const auto &[name, value] : g.variables) {
            variables.push_back(name);
        }
        auto files = nlohmann::json::array();
        if (confined) {
            // An opted-out target reads the user's files where they are: nothing is linked.
            for (const auto &file : g.grant.files) {
                files.push_back({{"file", kCredentialsFileName}, {"homePath", file.home_path}});
            }
        }
        out.push_back({{"interface", g.ask.entry},
                       {"executable", g.ask.executable},
                       {"adapter", g.ask.login},
                       {"variables", variables},
                       {"files", files}});
    }
    return out;
}

}  // namespace tea::call
