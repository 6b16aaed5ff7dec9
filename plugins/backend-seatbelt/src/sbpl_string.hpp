// A path written as an SBPL string literal, or refused. The profile is handed to sandbox-exec as
// one string, so a path is the one place where text the evaluation controls enters the profile.
#pragma once

#include <string>
#include <string_view>

namespace tea::seatbelt {

// `path` as a quoted SBPL string. Throws tea::sdk::Unavailable (exit 12), naming `what` and the
// path, when the path is not absolute, holds a quote, a backslash or a control character, or is
// not UTF-8.
std::string sbpl_string(std::string_view path, std::string_view what);

// The same checks without the quoting, for paths the plan carries but the profile does not.
void check_path(std::string_view path, std::string_view what);

}  // namespace tea::seatbelt
