#include "evaluation/http_call.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "http/http_client.hpp"

namespace tea::evaluation {

using nlohmann::json;

HttpCall::HttpCall(const HttpProbe &probe, std::chrono::milliseconds max_elapsed)
    : probe_{probe},
      timeout_{probe.timeout_ms ? std::chrono::milliseconds{*probe.timeout_ms} : max_elapsed},
      service_{max_elapsed} {
    if (probe_.expect) {
        // Until a conversation took place: a service that never started met nothing.
        expect_met_ = false;
        differences_.push_back("no request was sent: the service did not start");
    }
}

exec::Conversation HttpCall::conversation() {
    return {false, [this](const exec::ConversationChannel &channel) { talk(channel); }};
}

void HttpCall::talk(const exec::ConversationChannel &channel) {
    exchanges_ = json::array();
    differences_ = json::array();
    expect_met_ = !probe_.expect;
    const auto port = service_.open(channel);
    if (!port) {
        if (probe_.expect) {
            differences_.push_back("no request was sent: " + *service_.failed_to_start());
        }
        return;
    }
    // Over the relay's own connection to the service, checked by the bridge: the service sees
    // the request as from any client of the bridge, with no relay on its path.
    const auto start = std::chrono::steady_clock::now();
    std::string refusal;
    const auto connection = service_.connect(timeout_, refusal);
    http::Exchange exchange;
    if (connection) {
        const auto left = std::max(std::chrono::milliseconds{1},
                                   timeout_ - std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::steady_clock::now() - start));
        exchange = http::exchange(connection.get(), probe_.request,
                                  "127.0.0.1:" + std::to_string(*port), left);
    } else {
        exchange.outcome = http::Outcome::connectFailed;
        exchange.sentence = "no connection to the service: " + refusal;
    }
    exchanges_.push_back(http::exchange_record(probe_.request, exchange));
    service_.close();
    if (!probe_.expect) {
        return;
    }
    if (exchange.outcome != http::Outcome::response) {
        differences_.push_back("no answer: " + http::to_string(exchange.outcome) + " (" +
                               exchange.sentence + ")");
    } else {
        for (auto &d : http_differences(*probe_.expect, exchange.response)) {
            differences_.push_back(std::move(d));
        }
    }
    expect_met_ = differences_.empty();
}

void HttpCall::settle(const exec::CallResult &result) {
    service_.settle(result);
    if (service_.infrastructure_error() && probe_.expect) {
        differences_ = json::array({"no request was sent: " + *service_.failed_to_start()});
    }
}

json HttpCall::record() const {
    json out{{"service", service_.record()}, {"exchanges", exchanges_}};
    if (probe_.expect) {
        out["expect"] = {{"met", expect_met_}, {"differences", differences_}};
    }
    return out;
}

}  // namespace tea::evaluation
