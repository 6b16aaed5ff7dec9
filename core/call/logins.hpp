// The logins of a command's calls: for each registry entry that declares one (or exec --login),
// the grant its adapter answers once, before any target starts, and then, for each call of that
// entry, what the grant puts in the call (the variables, the login's files with the content read
// for this call) and the secrets every record of the run must not hold.
//
// The user's files are opened here and nowhere else, without following a link at their last
// component and within a size cap (redaction/credentials_file.hpp). The content a call is shown is
// the content this call read, and its strings enter the secrets before the target starts: a
// target can print nothing of the file that the redaction does not know. Each file is read again
// when a call settles (reread), so a token the client on the host rotates during a call is known
// before that call's records are written.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tea/login_documents.hpp>
#include <vector>

#include "call/outcome.hpp"
#include "config/config.hpp"
#include "exec/exec_plan.hpp"
#include "plugins/loader.hpp"
#include "redaction/secret_set.hpp"

namespace tea::call {

// An entry that declares a login.
struct LoginAsk {
    std::string entry;       // the registry entry's interface id, or "exec"
    std::string login;       // the adapter's name
    std::string executable;  // the entry's executable, as written
    std::vector<std::string> environment_keys;
};

class Logins {
   public:
    struct Granted {
        LoginAsk ask;
        documents::LoginGrant grant;
        // The variables of the grant the invoker's environment holds, with their values.
        std::vector<std::pair<std::string, std::string>> variables;
    };

    Logins() = default;

    // Asks each entry's adapter for its grant, in order. Exit 2 for an adapter that is not
    // installed (or is another kind of plugin); exit 12 for one that cannot grant (an ABI before
    // 1.7, a refusal such as a confined entry with no route, a grant that breaks the document's
    // rules). Every message begins with the entry. The secrets of every grant are read now.
    static Logins grant(const plugins::Registry &registry, const config::Config &config,
                        const std::vector<LoginAsk> &asks, bool confined);

    // What the grant of `entry` puts in one of its calls: the variables' values in spec.env, and,
    // when `show_files` (a confined call whose backend shows login files), each file read now
    // into spec.login_files. Every string read enters the secrets first. No-op for an entry with
    // no login. Exit 12 when a granted file is gone or is no longer a file the run may read.
    void apply(const std::string &entry, exec::LaunchSpec &spec, bool show_files);

    // Reads every granted file again and keeps its strings: a call has settled.
    void reread();

    [[nodiscard]] bool empty() const { return granted_.empty(); }
    [[nodiscard]] const std::vector<Granted> &granted() const { return granted_; }
    // The matcher of every secret kept now; null when there is none.
    [[nodiscard]] std::shared_ptr<const redaction::SecretMatcher> matcher() const;
    // `text` with every secret kept now replaced by [redacted].
    [[nodiscard]] std::string redact(std::string_view text) const;
    // `doc` with every string in it, keys included, redacted as `redact` does: a record is
    // redacted as the values it holds, never as its JSON text, so it stays valid JSON.
    [[nodiscard]] nlohmann::json redact_record(const nlohmann::json &doc) const;
    // Redacts a file the run wrote (a captured output, an artifact) in place with every secret
    // kept now (redaction/file_redactor.hpp); nothing when there is no secret or no such file.
    // `cut`: the file is a capped copy, whose end may cut a secret short.
    void redact_file(const std::filesystem::path &path, bool cut = false) const;
    // A call has settled: reads every granted file again (reread), then redacts what the runtime
    // prints or records of the call that the target chose: each finding's path and reason (a
    // name it opened, a link's text, an interpreter line), the audit's reason and the egress
    // records (a host it asked for).
    void settle(CallOutcome &outcome);

    // run.json's "logins": each grant as {interface, executable, adapter, variables, files}, the
    // files named "<credentials-file>", never by path or content.
    [[nodiscard]] nlohmann::json records(bool confined) const;

   private:
    // Reads `file` (exit 12 when it is not a regular file within the cap) and keeps its strings.
    std::string read(const documents::LoginFile &file, const std::string &entry);

    std::vector<Granted> granted_;
    redaction::SecretSet secrets_;
};

// What every record of a run names a login's file as, in place of its path.
inline constexpr const char *kCredentialsFileName = "<credentials-file>";

}  // namespace tea::call
