// The call's output as the runner captures it: each stream read from its pipe, redacted when asked
// (redaction/stream_redactor.hpp), into a capped file and, when asked, copied to the runtime's own
// stream (shown as text on a terminal, exec/terminal_text.hpp).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/call_runner.hpp"
#include "exec/plan_descriptors.hpp"
#include "exec/terminal_text.hpp"
#include "redaction/stream_redactor.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {

constexpr std::size_t read_chunk = std::size_t{64} * 1024;

// A terminal the call's output is shown on, and whether what was last shown there left a line
// open. Both streams share one when they are shown on the same terminal.
struct TerminalLine {
    int fd = -1;
    bool open = false;

    // The runtime's own lines after the call start on a line of their own: a target cannot leave
    // half a forged line (or a "\r") for the runtime's first line to complete or overwrite.
    void end() {
        if (open) {
            (void)::write(fd, "\n", 1);  // a terminal that is gone has nothing left to show
            open = false;
        }
    }
};

// One stream of the call: what the target writes is counted, redacted when the spec names
// secrets, then kept in the capped file and copied to the tee.
struct Capture final : redaction::ByteSink {
    UniqueFd pipe;
    UniqueFd file;
    const OutputSpec *spec = nullptr;
    StreamResult result;
    bool tee_ok = true;
    // When the tee is a terminal: the target's bytes are shown, never acted on, so that it cannot
    // forge or hide the runtime's lines (terminal_text.hpp). The file keeps them exact.
    std::optional<TerminalText> terminal;
    TerminalLine *line = nullptr;
    // Stands between the pipe and both the file and the tee, so that neither sees a login's
    // secret, whole or split across the target's writes; it holds back less than the longest one.
    std::optional<redaction::StreamRedactor> redactor;
    std::uint64_t delivered_bytes = 0;  // of the redacted stream

    void start_redacting() {
        if (spec->redact && !spec->redact->empty()) {
            redactor.emplace(*spec->redact, *this);
        }
    }

    void consume(const char *data, std::size_t size) {
        result.total_bytes += size;
        if (redactor) {
            redactor->write({data, size});
        } else {
            write({data, size});
        }
    }

    // The stream as it is kept and shown (redacted when the spec names secrets): the cap bounds
    // these bytes, so a cut can shorten a marker but never leaves part of a secret.
    void write(std::string_view bytes) override {
        delivered_bytes += bytes.size();
        if (file) {
            const auto room = spec->cap_bytes - std::min(spec->cap_bytes, result.kept_bytes);
            const auto keep = std::min<std::uint64_t>(room, bytes.size());
            if (keep > 0) {
                write_all(file.get(), bytes.data(), keep);
                result.kept_bytes += keep;
            }
        }
        if (delivered_bytes > spec->cap_bytes) {
            result.truncated = true;
        }
        if (spec->tee_fd < 0 || !tee_ok) {
            return;
        }
        tee(terminal ? terminal->render(bytes) : bytes);
    }

    // What the redactor held back (the stream's last bytes, which might have begun a secret that
    // never came), then what the terminal still holds back of a sequence cut at the stream's end,
    // escaped.
    void end_of_stream() {
        if (redactor) {
            redactor->finish();
            result.redactions = redactor->redactions();
        }
        if (terminal && spec->tee_fd >= 0 && tee_ok) {
            tee(terminal->finish());
        }
    }

    void tee(std::string_view bytes) {
        if (bytes.empty()) {
            return;
        }
        // A closed reader of the runtime's stdout ends the copy, not the call.
        const char *p = bytes.data();
        std::size_t left = bytes.size();
        while (left > 0) {
            const auto n = ::write(spec->tee_fd, p, left);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                tee_ok = false;
                return;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        if (line != nullptr) {
            line->open = bytes.back() != '\n';
        }
    }

    // Reads what is there; false at end of file.
    bool read_some() {
        // Left uninitialised: zeroing 64 KiB on every read costs page faults, and
        // read() fills what is used.
        std::array<char, read_chunk> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
        for (;;) {
            const auto n = ::read(pipe.get(), buffer.data(), buffer.size());
            if (n > 0) {
                consume(buffer.data(), static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && errno == EAGAIN) {
                return true;
            }
            pipe.reset();
            return false;
        }
    }
};

// The device of a terminal descriptor; nullopt when the descriptor is no terminal.
std::optional<dev_t> terminal_device(int fd);

// Decided once per call, when (and only when) a tee goes to a terminal: anything else (a pipe, a
// file, a record) is given the target's bytes unchanged.
void show_on_terminals(std::array<Capture, 2> &captures, std::array<TerminalLine, 2> &lines);

UniqueFd open_capture_file(const OutputSpec &spec);

}  // namespace tea::exec::detail
