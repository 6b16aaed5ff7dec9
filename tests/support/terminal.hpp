// A pseudo-terminal a test opens and hands to a process as its stdout and stderr, in raw mode so
// that what reaches it is exactly what was written (no "\n" turned into "\r\n"), read by a thread
// of the test so that a writer never blocks on a full terminal.
#pragma once

#include <string>
#include <thread>

namespace tea::test {

class Terminal {
   public:
    Terminal();
    Terminal(const Terminal &) = delete;
    Terminal &operator=(const Terminal &) = delete;
    Terminal(Terminal &&) = delete;
    Terminal &operator=(Terminal &&) = delete;
    ~Terminal();

    // The terminal's device (the pty's slave side), close-on-exec: a process gets it through
    // a dup2 onto 0, 1 or 2.
    [[nodiscard]] int device() const { return slave_; }
    // The device's path (/dev/pts/N).
    [[nodiscard]] const std::string &path() const { return path_; }
    // Closes the test's own copy of the device and returns every byte written to the terminal
    // once no process holds the device open any more.
    std::string output();

   private:
    int master_ = -1;
    int slave_ = -1;
    std::string path_;
    std::string received_;
    std::thread reader_;
};

}  // namespace tea::test
