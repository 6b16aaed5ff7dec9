// A login adapter plugin around one grant function: it takes no configuration, needs nothing of
// the host to probe, and reads the request and writes the grant with tea/login_documents.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tea/login_documents.hpp>
#include <tea/plugin.hpp>

namespace tea::login {

using GrantFunction = documents::LoginGrant (*)(const documents::LoginRequest &);

template <const char *Name, GrantFunction Grant>
class Adapter {
   public:
    Adapter(tea::sdk::Host /*host*/, std::string_view config_json) {
        const auto config = nlohmann::json::parse(config_json, nullptr, false);
        if (!config.is_object() || !config.empty()) {
            throw tea::sdk::Invalid("the login adapter '" + std::string{Name} +
                                    "' takes no configuration ([plugin." + Name +
                                    "] must be empty)");
        }
    }

    void probe() {}  // needs nothing from the host until an entry asks for a grant

    std::string grant(std::string_view request_json) {
        documents::LoginRequest request;
        try {
            request = documents::decode_login_request(request_json);
        } catch (const documents::DocumentError &e) {
            throw tea::sdk::Invalid(e.what());
        }
        return documents::encode(Grant(request));
    }
};

}  // namespace tea::login
