#include "report/page.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <tea/bytes.hpp>

#include "report/html_text.hpp"

namespace tea::report {
namespace {

using nlohmann::json;

// Narrows the page's calls, trials and path rows to those whose text holds what the filter box
// says. Without JavaScript the box stays hidden and everything shows.
constexpr std::string_view kScript = R"JS(
(function () {
  var box = document.getElementById('filter');
  if (!box) return;
  box.hidden = false;
  box.addEventListener('input', function () {
    var needle = box.value.toLowerCase();
    var items = document.querySelectorAll('.f');
    for (var i = 0; i < items.length; i++) {
      var hit = needle === '' || items[i].textContent.toLowerCase().indexOf(needle) >= 0;
      items[i].classList.toggle('hide', !hit);
      if (hit && needle !== '' && items[i].tagName === 'DETAILS') items[i].open = true;
    }
  });
})();
)JS";

constexpr std::string_view kStyle = R"CSS(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 48px;color:#1b1b1b}
h1{font-size:28px;margin:0}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
header.verdict{padding:16px;margin:16px 0;border-radius:6px;border:2px solid}
.v-pass{background:#e7f6ea;border-color:#2e7d32}.v-fail{background:#fff4e0;border-color:#b26a00}
.v-invalid{background:#fdecea;border-color:#c62828}.v-unknown{background:#eee;border-color:#777}
table{border-collapse:collapse;width:100%;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f5f5f5}td.k{width:220px;color:#555}
code,pre,.path{font-family:ui-monospace,monospace;font-size:12.5px}pre{background:#f7f7f7;
padding:6px;white-space:pre-wrap;word-break:break-all;max-height:320px;overflow:auto;margin:4px 0}
details{margin:4px 0}details>summary{cursor:pointer}details.call{border:1px solid #e3e3e3;
border-radius:4px;padding:2px 8px}.hide{display:none}.bad{color:#c62828;font-weight:600}
.ok{color:#2e7d32}.warn{color:#b26a00}.note{color:#666}#filter{width:100%;padding:6px;
margin:8px 0;font-size:14px}svg text{font:11px system-ui,sans-serif}
)CSS";

// The policy's source for an inline script or style: its SHA-256, or 'none' when it cannot be
// computed (the page then runs no script and shows unstyled, and still shows everything).
std::string hash_source(std::string_view text) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
        return "'none'";
    }
    return "'sha256-" +
           tea::bytes::base64_encode(
               std::string_view{reinterpret_cast<const char *>(digest.data()), length}) +
           "'";
}

}  // namespace

std::string page(std::string_view title, std::string_view body) {
    std::string out;
    out.reserve(body.size() + 4096);
    out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
    // The policy names the page's one script and one style sheet by their hashes: a script, a
    // handler or a style attribute in record text that escaped the escaping would still not
    // apply, nothing is fetched, and no form or base URL can send the page elsewhere.
    out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src ";
    out += hash_source(kScript);
    out += "; style-src ";
    out += hash_source(kStyle);
    out += "; img-src data:; form-action 'none'; base-uri 'none'\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width\">\n<title>";
    out += html_excerpt(title, 300);
    out += "</title>\n<style>";
    out += kStyle;
    out += "</style></head><body>\n";
    out += body;
    out += "\n<script>";
    out += kScript;
    out += "</script>\n</body></html>\n";
    return out;
}

std::string value_text(const json &value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_null()) return {};
    if (value.is_object() && value.size() == 1 && value.contains("base64") &&
        value["base64"].is_string()) {
        if (auto decoded = tea::bytes::base64_decode(value["base64"].get<std::string>())) {
            return *decoded;
        }
    }
    // A list or a table where a value was expected is named, never printed whole: a record's
    // size is not the page's.
    if (value.is_array()) return "(a list)";
    if (value.is_object()) return "(a table)";
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string field_text(const json &j, std::string_view key) {
    if (!j.is_object()) return {};
    const auto it = j.find(key);
    return it == j.end() ? std::string{} : value_text(*it);
}

const json &field_list(const json &j, std::string_view key) {
    static const json empty = json::array();
    if (!j.is_object()) return empty;
    const auto it = j.find(key);
    return it != j.end() && (it->is_array() || it->is_object()) ? *it : empty;
}

double field_number(const json &j, std::string_view key, double otherwise) {
    if (!j.is_object()) return otherwise;
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : otherwise;
}

std::string decimal(double value) {
    char buf[32];
    (void)std::snprintf(buf, sizeof buf, "%.1f", value);
    return buf;
}

}  // namespace tea::report
