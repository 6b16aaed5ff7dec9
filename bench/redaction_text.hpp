// What the redaction benchmarks stream: a login's secrets of every kind and target-like output
// with some of them planted in it. Header-only, shared by redaction_bench (the redactor alone) and
// capture_redaction_bench (a call's output captured through it).
#pragma once

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tea::bench {

class Random {
   public:
    explicit Random(unsigned seed) : engine_(seed) {}
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }
    std::string from(std::string_view alphabet, std::size_t length) {
        std::string s;
        for (std::size_t i = 0; i < length; ++i) s.push_back(alphabet[below(alphabet.size())]);
        return s;
    }

   private:
    std::mt19937_64 engine_;
};

constexpr std::string_view kBase64Url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kHex = "0123456789abcdef";

// What a login's files and variable give a run: OAuth tokens with their common prefixes, a JWT,
// ids, e-mail addresses, and strings of 8 bytes or more of all kinds.
inline std::vector<std::string> make_secrets(std::size_t count, Random &random) {
    std::vector<std::string> secrets;
    auto add = [&](std::string s) {
        if (secrets.size() < count) secrets.push_back(std::move(s));
    };
    for (int i = 0; i < 4; ++i) {
        add("sk-ant-oat01-" + random.from(kBase64Url, 95));
        add("sk-ant-ort01-" + random.from(kBase64Url, 95));
    }
    add("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9." + random.from(kBase64Url, 600) + "." +
        random.from(kBase64Url, 342));
    for (int i = 0; i < 10; ++i) {
        add(random.from(kHex, 8) + "-" + random.from(kHex, 4) + "-" + random.from(kHex, 4) + "-" +
            random.from(kHex, 4) + "-" + random.from(kHex, 12));
        add(random.from("abcdefghijklmnopqrstuvwxyz", 6 + random.below(6)) + "@example.com");
        add(random.from(kHex, 40));
    }
    while (secrets.size() < count) add(random.from(kBase64Url, 8 + random.below(113)));
    return secrets;
}

// About `bytes` of what targets print, with `secrets` planted every 256 KiB or so.
inline std::string make_output(std::size_t bytes, const std::vector<std::string> &secrets,
                               Random &random, std::size_t &planted) {
    static const char *const kWords[] = {
        "the",    "agent",  "wrote", "a",         "file",    "in",     "its",    "workspace",
        "and",    "read",   "error", "function",  "return",  "const",  "auto",   "request",
        "token",  "model",  "tool",  "result",    "message", "stream", "status", "ok",
        "failed", "passed", "test",  "assistant", "user",    "which",  "when",   "then"};
    static const char *const kLines[] = {
        "    if (result.status != Status::ok) return result;\n",
        "  \"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text\"},\n",
        "2026-12-06T10:42:17.123Z INFO  call settled exit=0 elapsed_ms=1834\n",
        "+    const std::string path = workspace / \"src\" / \"main.cpp\";\n",
        "test_parser.py::test_round_trip PASSED                               [ 42%]\n",
        "Authorization: Bearer sk-ant-oat01-",  // a near miss: the prefix, then other bytes
        "sk-ant-api03-not-a-secret-of-this-run but shaped like one\n",
    };
    std::string out;
    out.reserve(bytes + 4096);
    std::size_t next_secret = 256 * 1024;
    planted = 0;
    while (out.size() < bytes) {
        switch (random.below(6)) {
            case 0:
            case 1:
                for (std::size_t n = 5 + random.below(15); n > 0; --n) {
                    out += kWords[random.below(std::size(kWords))];
                    out += ' ';
                }
                out += ".\n";
                break;
            case 2:
                out += kLines[random.below(std::size(kLines))];
                break;
            case 3:
                out += "commit " + random.from(kHex, 40) + "\n";
                break;
            case 4:
                out += "{\"id\": \"msg_" + random.from(kBase64Url, 24) +
                       "\", \"n\": " + std::to_string(random.below(100000)) + "}\n";
                break;
            default:
                out += "    " + random.from("abcdefghijklmnopqrstuvwxyz_", 3 + random.below(12)) +
                       "(" + random.from("abcdefghijklmnopqrstuvwxyz", 1 + random.below(8)) +
                       ");\n";
        }
        if (out.size() >= next_secret) {
            out += "printed: " + secrets[random.below(secrets.size())] + "\n";
            ++planted;
            next_secret += 256 * 1024 - 1024 + random.below(2048);
        }
    }
    return out;
}

}  // namespace tea::bench
