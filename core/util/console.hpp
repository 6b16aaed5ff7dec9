// The runtime's own messages on its standard output and error, written without std::cout and
// std::cerr.
//
// Those two are built, with the six other standard streams, by a std::ios_base::Init object that
// <iostream> places in every file including it, before main runs, at a cost every command pays
// (bench/README.md). The
// runtime never uses them, so no file of it includes <iostream> (cli/main.cpp keeps CLI11's
// inclusion of it from building them). Tests check that the executable builds none and that no
// source of the runtime names them: a write to one that was never built would crash.
//
//   console::err() << "tea-evaluate: " << what << '\n';
//
// A statement's text is formatted into a buffer and handed to stdio whole when the statement
// ends (then flushed), so a line from the run's progress thread is never cut by another's.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <ostream>
#include <sstream>
#include <string_view>

namespace tea::console {

class Line {
   public:
    explicit Line(std::FILE *to) : to_{to} {}
    Line(const Line &) = delete;
    Line &operator=(const Line &) = delete;
    Line(Line &&) = delete;
    Line &operator=(Line &&) = delete;
    ~Line() {
        // A view, not a copy: nothing here allocates, so nothing here can throw.
        const std::string_view text = buffer_.view();
        // A closed or full stream loses the message, as it would through std::cerr.
        (void)std::fwrite(text.data(), 1, text.size(), to_);
        (void)std::fflush(to_);
    }

    template <typename T>
    Line &operator<<(const T &value) {
        buffer_ << value;
        return *this;
    }
    // std::flush, std::endl and the other manipulators of a whole stream.
    Line &operator<<(std::ostream &(*manipulator)(std::ostream &)) {
        manipulator(buffer_);
        return *this;
    }

   private:
    std::ostringstream buffer_;
    std::FILE *to_;
};

// Whether `to` is a terminal. A JSON document printed there is dumped ASCII-only (every other
// character as \uXXXX, the same document): its strings may hold a name a target chose, and the
// terminal would act on a C1 control in one (exec/terminal_text.hpp).
inline bool on_terminal(std::FILE *to) {
    return ::isatty(::fileno(to)) != 0;
}

// One statement's text for standard output (--json documents, listings).
inline Line out() {
    return Line{stdout};
}
// One statement's text for standard error (messages, summaries, audit lines).
inline Line err() {
    return Line{stderr};
}

}  // namespace tea::console
