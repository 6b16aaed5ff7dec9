// An incremental, bounded reader of one HTTP/1.x response, fed the bytes a service sends in
// whatever pieces they arrive. Everything it reads is hostile input (the service is the evaluated
// program): each byte sequence ends in a response, a refusal with its reason, or a need for more.
// It is strict wherever a lenient reading would let the service make the record lie about what it
// answered (two framings, a folded header, a NUL), and it never holds more than the limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/http_types.hpp"

namespace tea::http {

class ResponseParser {
   public:
    enum class State {
        needMore,   // the response is not complete yet
        done,       // a whole response was read; bytes after it are ignored
        malformed,  // the bytes are not a response this parser accepts; reason() says why
        tooLarge,   // the body is longer than Limits::body_bytes; reason() says by how much
    };

    // `head_request`: the request was HEAD, so the response has no body whatever it announces.
    ResponseParser(const Limits &limits, bool head_request);

    // Reads the next bytes. Once the state is not needMore, further bytes are ignored.
    State feed(std::string_view bytes);
    // The peer closed its side: a body read until close ends here. Returns done, or needMore
    // when the response was cut short (closed_sentence() says where).
    State finish();

    State state() const { return state_; }
    const std::string &reason() const { return reason_; }
    // Where a response cut short by the peer's close stopped, in words.
    std::string closed_sentence() const;

    const Response &response() const { return response_; }
    Response take_response() { return std::move(response_); }
    // The final response's head as received, through its blank line.
    const std::string &raw_head() const { return raw_head_; }
    // What was read of the head so far: the final head once read, else the head being read (the
    // record of a refused head).
    const std::string &received_head() const {
        return raw_head_.empty() && phase_ == Phase::head ? pending_ : raw_head_;
    }
    std::size_t received_bytes() const { return received_; }

   private:
    enum class Phase { head, fixedBody, chunkSize, chunkData, chunkDataEnd, trailers, untilClose };

    State feed_head(std::string_view &bytes);
    State parse_head();
    State start_body();
    State feed_fixed(std::string_view &bytes);
    State feed_line(std::string_view &bytes, std::size_t cap, const char *what);
    State chunk_size_line();
    State feed_chunk_data(std::string_view &bytes);
    State trailer_line();
    State append_body(std::string_view bytes);
    State refuse(std::string reason);
    State too_large(std::string reason);

    Limits limits_;
    bool head_request_;
    State state_ = State::needMore;
    Phase phase_ = Phase::head;
    std::string reason_;
    std::string pending_;              // the head, or a chunk-size or trailer line, being read
    std::size_t scanned_ = 0;          // how far pending_ was scanned for its end
    std::size_t head_bytes_used_ = 0;  // bytes of heads already read, interim ones included
    std::size_t trailer_count_ = 0;
    std::uint64_t remaining_ = 0;  // of the fixed body or the current chunk
    std::uint64_t announced_ = 0;  // the Content-Length, for the closed sentence
    std::size_t received_ = 0;
    Response response_;
    std::string raw_head_;
};

std::string to_string(ResponseParser::State state);

}  // namespace tea::http
