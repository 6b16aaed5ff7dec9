// Replaces every secret of a set by "[redacted]" in a stream that arrives in pieces of any size.
//
// What is replaced: every byte that lies inside any occurrence of any secret. Occurrences that
// overlap (share a byte) become one "[redacted]", so of two secrets "abcd" and "cdef" nothing of
// "abcdef" survives, and of a secret and a longer one it begins or ends, the longer one goes
// whole; occurrences that only touch become one marker each, as a plain replacement would write
// them. A secret split across two writes, or across many, is found as if it came in one.
//
// What is held back: a byte is written once no secret that ends later can cover it, that is,
// when it lies before the longest suffix of the stream that begins some secret. So between
// writes at most (longest secret - 1) bytes wait in the redactor, and finish() writes them.
// Memory is that and the matcher's, whatever the stream's length; nothing is allocated per byte
// or per write.
//
// Not thread-safe: one stream, one thread. The matcher must outlive the redactor; a secret set
// that grows later does not change a stream under way (redact the finished file again with the
// grown set: file_redactor.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redaction/secret_matcher.hpp"

namespace tea::redaction {

// What every occurrence becomes.
inline constexpr std::string_view kRedactedMarker = "[redacted]";

// Where the redacted stream goes.
class ByteSink {
   public:
    ByteSink() = default;
    ByteSink(const ByteSink &) = delete;
    ByteSink &operator=(const ByteSink &) = delete;
    ByteSink(ByteSink &&) = delete;
    ByteSink &operator=(ByteSink &&) = delete;
    virtual ~ByteSink() = default;
    virtual void write(std::string_view bytes) = 0;
};

// A sink that appends to a string.
class StringSink final : public ByteSink {
   public:
    void write(std::string_view bytes) override { text.append(bytes); }
    std::string text;
};

class StreamRedactor {
   public:
    StreamRedactor(const SecretMatcher &matcher, ByteSink &sink);

    // Passes `bytes` on, redacted; may hold back the last few until the next write or finish().
    void write(std::string_view bytes);
    // Writes what is held back, redacted: the end of the stream. A write after it begins a new
    // stream.
    void finish();
    // The end of a stream that was cut short (a capped copy): the bytes held back as the start of
    // a secret become a marker too, since the rest of the secret may be what the cut took.
    void finish_cut();

    // Markers written so far.
    [[nodiscard]] std::uint64_t redactions() const noexcept { return redactions_; }
    // Bytes held back now (at most longest secret - 1 between writes).
    [[nodiscard]] std::size_t held() const noexcept { return held_.size(); }

   private:
    struct Covered {  // stream offsets [begin, end) inside some occurrence
        std::uint64_t begin;
        std::uint64_t end;
    };
    // The bytes of the current write and those held back from earlier ones, by stream offset.
    struct Window {
        std::string_view held;
        std::uint64_t held_begin;
        std::string_view chunk;
        std::uint64_t chunk_begin;
    };

    void cover(std::uint64_t begin, std::uint64_t end);
    void write_decided(std::uint64_t safe, const Window &window);
    void pass(std::uint64_t from, std::uint64_t to, const Window &window);
    void hold(const Window &window);

    const SecretMatcher &matcher_;
    ByteSink &sink_;
    SecretMatcher::State state_ = SecretMatcher::kRoot;
    std::uint64_t position_ = 0;    // bytes taken in
    std::uint64_t decided_ = 0;     // every byte before it has been written (or replaced)
    std::uint64_t run_end_ = 0;     // end of the covered run whose marker was written last
    std::vector<Covered> pending_;  // covered runs after decided_, in order, not overlapping
    std::string held_;              // the bytes [decided_, position_)
    std::uint64_t redactions_ = 0;
};

}  // namespace tea::redaction
