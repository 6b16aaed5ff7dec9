// The strings a login's credentials file contributes to the secrets a run redacts.
//
// A file that is valid JSON contributes every string of kMinimumSecretBytes bytes or more that it
// holds as a value, at any depth (in objects and in arrays), except the values of the fields
// its adapter names as no secret (for Claude Code: scopes, subscriptionType, rateLimitTier),
// which stay readable in the records. Numbers, booleans and null are no secrets.
//
// Keys: a key spelled like a field name (ASCII letters, digits and '_', not starting with a
// digit: accessToken, refresh_token, OPENAI_API_KEY) names a field of the file's format, the
// same in every user's file; it discloses nothing, and replacing it would rewrite the same
// identifiers in a target's code and answers. Any other key is data a map is keyed by (a
// server, an account, possibly a token) and contributes like a value. A format that keys a map
// by a secret spelled like an identifier needs its adapter to name those strings itself.
//
// A text that is not valid JSON (a read that a rewrite of the file tore, or bytes that are not
// UTF-8) contributes its whole text, each run of bytes between ASCII whitespace, and each quoted
// string (as written, and unescaped when it can be; an unterminated one at the end to the end
// of the text), each of kMinimumSecretBytes bytes or more: nothing in a torn text says which
// string belongs to which field, so the fields that are no secret are not spared, and neither
// are keys.
//
// Lengths are counted in bytes, so a string of 8 characters is always at least 8 bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tea::redaction {

inline constexpr std::size_t kMinimumSecretBytes = 8;

struct CredentialsStrings {
    std::vector<std::string> strings;  // in the order found; may repeat
    bool torn = false;                 // the text was not valid JSON
};

CredentialsStrings credentials_strings(std::string_view text,
                                       const std::vector<std::string> &non_secret_fields);

}  // namespace tea::redaction
