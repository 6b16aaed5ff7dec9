// A reader of a text/event-stream body (the Server-Sent Events format) fed in whatever pieces it
// arrives: lines end in CRLF, LF or CR; a blank line ends an event; `data:` fields make its data
// (joined by LF); `event:`, `id:`, `retry:` and comments (':') are read and set aside. The stream
// is the evaluated server's word, so a line that is no field of the format is handed back as
// junk rather than ignored as a browser would, and memory is bounded by what the caller feeds
// (the HTTP client's body limit).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tea::services {

class SseEvents {
   public:
    using OnData = std::function<void(const std::string &data)>;
    using OnJunk = std::function<void(std::string_view line)>;

    SseEvents(OnData on_data, OnJunk on_junk)
        : on_data_(std::move(on_data)), on_junk_(std::move(on_junk)) {}

    // Reads the next bytes; each event they complete goes to on_data (events without data are
    // not dispatched, as the format says).
    void feed(std::string_view bytes);
    // The stream ended: an event cut short before its blank line is not dispatched; what it held
    // goes to on_junk.
    void finish();

   private:
    void line(std::string_view text);

    OnData on_data_;
    OnJunk on_junk_;
    std::string pending_;      // bytes of a line not yet ended
    bool after_cr_ = false;    // the last line ended in CR: an LF next belongs to it
    std::string data_;         // the event's data so far
    bool has_data_ = false;    // a data field was seen in this event
    std::string event_lines_;  // the event's lines, for on_junk when the stream cuts it short
};

}  // namespace tea::services
