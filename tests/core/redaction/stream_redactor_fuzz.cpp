// libFuzzer target for the streaming redaction (secret_matcher.hpp, stream_redactor.hpp). Checks,
// on random secrets and random streams cut at random points, that the output equals the naive
// replacement of the whole stream (naive_redaction.hpp), that no secret is left in any run of
// bytes the redaction kept, that a write never leaves more than the longest secret - 1 bytes
// held back, and that one marker is counted per marker written. Built with TEA_FUZZ_REPLAY_MAIN
// it is a plain program that replays a corpus, so any compiler exercises the same checks.
//
// An input is: a byte of flags (bits 0-1: the alphabet, raw bytes or 2, 4 or 26 letters, so that
// secrets overlap and nest; bit 2: secrets up to 300 bytes long instead of 24), a byte giving the
// number of secrets (1 to 8), a byte per secret giving its length, the secrets' bytes, then the
// stream; a last byte seeds the lengths of the writes (0 to 63 bytes each).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/redaction/naive_redaction.hpp"
#include "redaction/stream_redactor.hpp"

namespace {

using namespace tea::redaction;

void require(bool holds, const char *what) {
    if (!holds) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

class Input {
   public:
    Input(const std::uint8_t *data, std::size_t size) : data_(data), size_(size) {}
    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
    std::string_view rest() const {
        return {reinterpret_cast<const char *>(data_) + at_, size_ - std::min(at_, size_)};
    }

   private:
    const std::uint8_t *data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

char in_alphabet(std::uint8_t b, unsigned alphabet) {
    switch (alphabet) {
        case 1:
            return static_cast<char>('a' + b % 2);
        case 2:
            return static_cast<char>('a' + b % 4);
        case 3:
            return static_cast<char>('a' + b % 26);
        default:
            return static_cast<char>(b);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 3) return 0;
    Input input(data, size - 1);
    const std::uint8_t flags = input.byte();
    const unsigned alphabet = flags & 3U;
    const std::size_t max_length = (flags & 4U) != 0 ? 300 : 24;
    const std::size_t count = 1 + input.byte() % 8;
    std::vector<std::size_t> lengths;
    for (std::size_t i = 0; i < count; ++i) lengths.push_back(1 + input.byte() % max_length);
    std::vector<std::string> secrets;
    for (const auto length : lengths) {
        std::string secret;
        for (std::size_t i = 0; i < length; ++i)
            secret.push_back(in_alphabet(input.byte(), alphabet));
        secrets.push_back(secret);
    }
    std::string stream;
    for (const char c : input.rest())
        stream.push_back(in_alphabet(static_cast<std::uint8_t>(c), alphabet));

    const auto expected = tea::test::naive_redaction(stream, secrets);
    for (const auto &kept : expected.passed) {
        for (const auto &secret : secrets) {
            require(kept.find(secret) == std::string::npos, "no secret in a run of kept bytes");
        }
    }

    const SecretMatcher matcher(secrets);
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    std::uint32_t seed = data[size - 1];
    for (std::size_t at = 0; at < stream.size();) {
        seed = seed * 1103515245U + 12345U;
        const std::size_t length = std::min<std::size_t>((seed >> 16U) % 64, stream.size() - at);
        redactor.write(std::string_view{stream}.substr(at, length));
        at += length;
        require(redactor.held() < matcher.longest() || redactor.held() == 0,
                "at most the longest secret - 1 bytes held back");
    }
    redactor.finish();
    require(redactor.held() == 0, "nothing held back after finish");
    require(sink.text == expected.text, "the output is the naive replacement");
    require(redactor.redactions() == expected.markers, "one count per marker");
    return 0;
}

#ifdef TEA_FUZZ_REPLAY_MAIN
#include "support/fuzz_replay_main.hpp"
#endif
