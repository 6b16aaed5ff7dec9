// The secrets a run redacts: a set that only grows, from the run's start to its end.
//
// It holds the value of a login's token variable (at any length, as bytes) and the strings its
// credentials file has held at any read since the run began (credentials_strings.hpp), so a token
// the client on the host rotated out of the file during a call is still replaced in what that
// call printed, as is the one that took its place. Each secret is kept with the spellings a JSON
// record gives it (escaped: a newline as \n, a quote as \", and with non-ASCII or bytes that are
// not UTF-8 as \uXXXX or U+FFFD), since a target's output lands in run.json too.
//
// Bounded: at most kMaxSecretBytes bytes of secrets, spellings included. An addition past it is
// refused whole (a tea::Error with exit 12 naming where the strings came from) and changes nothing.
//
// Not thread-safe: one thread adds and asks for the matcher, or the caller guards it. A matcher
// it handed out stays valid and unchanged after the set grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "redaction/secret_matcher.hpp"

namespace tea::redaction {

class SecretSet {
   public:
    static constexpr std::size_t kMaxSecretBytes = std::size_t{1} << 20U;

    struct Added {
        std::size_t secrets = 0;  // new secrets, spellings included
        bool torn = false;        // the credentials text was not valid JSON
    };

    // A token variable's value (an empty one is no secret). `source` names it in errors.
    Added add_value(std::string_view value, const std::string &source);
    // The strings of a credentials file's text. `source` names the file in errors.
    Added add_credentials(std::string_view text, const std::vector<std::string> &non_secret_fields,
                          const std::string &source);
    // Reads the open credentials file `fd` (credentials_file.hpp: a regular file, capped) and adds
    // its strings. `name` names the file in errors.
    Added add_from_file(int fd, const std::string &name,
                        const std::vector<std::string> &non_secret_fields);

    // Every secret kept, in the order first added.
    [[nodiscard]] const std::vector<std::string> &secrets() const noexcept { return secrets_; }
    // Bytes of secrets kept.
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    // The matcher of every secret kept now; built on the first call after the set grew.
    [[nodiscard]] std::shared_ptr<const SecretMatcher> matcher() const;

   private:
    Added add_all(const std::vector<std::string> &strings, const std::string &source);

    std::vector<std::string> secrets_;
    std::unordered_set<std::string> known_;
    std::size_t bytes_ = 0;
    mutable std::shared_ptr<const SecretMatcher> matcher_;  // of secrets_, or null when stale
};

}  // namespace tea::redaction
