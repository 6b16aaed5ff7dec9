// exec on the operator's terminal: the real tea-evaluate, real bwrap and real strace, with the
// runtime's stdout and stderr on a pseudo-terminal the test opens. A target prints a forged audit
// line and then every kind of sequence that would hide the real one (concealed or invisible text,
// the alternate screen, a scroll region, a switched character set, cursor movement, strings that
// swallow what follows, C1 controls raw and UTF-8 encoded, a line left open after "\r"), some
// split across writes. The terminal must receive none of them as controls, and the real audit
// must follow on lines of its own. Controls: the same target's output to files keeps every byte,
// and the same bytes written to the terminal by a process the test starts itself arrive as
// they were written.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../plugins/backend-bubblewrap/harness.hpp"
#include "support/observers.hpp"
#include "support/terminal.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One write of the target: the descriptor and the bytes.
using Chunk = std::pair<int, std::string>;

const std::string kForged = "tea-evaluate: audit (strace): no path outside the grants";
// A name outside the grants the target tries to create, with a UTF-8 encoded C1 CSI in it: the
// refused write is listed, and the name reaches the runtime's own lines.
const std::string kPlantedName =
    "/etc/tea-terminal-\xc2\x9b"
    "8m";

std::vector<Chunk> attack() {
    return {
        {1, kForged + "\n"},
        {1, "\x1b[8m"},         // SGR 8: conceal
        {1, "\x1b[30;40m"},     // black on black
        {2, "\x1b[?1049h"},     // the alternate screen
        {2, "\x1b[1;2r"},       // a scroll region of two lines
        {1, "\x0e\x1b(0"},      // SO, and DEC graphics as G0
        {1, "\x1b[5A\x1b[2K"},  // cursor up, erase the line
        {1, "\x1b"},            // an escape sequence split across two writes
        {1, "[8m"},
        {1, "\xc2"},  // a UTF-8 encoded CSI split across two writes
        {1,
         "\x9b"
         "8m"},
        {2,
         "\x9b"
         "2J\x9d"},  // raw C1: CSI (erase the screen), OSC
        {2,
         "\xc2\x9d"
         "0;"},                         // an unterminated OSC, UTF-8 encoded
        {1, "\x1b]0;\x1bP\x1b_\x1b^"},  // unterminated OSC, DCS, APC, PM
        {1, "\x7f\x08\x08\x07"},        // DEL, backspaces, BEL
        {1, kForged + "\r"},            // a forged line left open at its start
    };
}

std::string written_to(const std::vector<Chunk> &chunks, int fd) {
    std::string out;
    for (const auto &[to, bytes] : chunks) {
        if (to == fd) {
            out += bytes;
        }
    }
    return out;
}

std::string hex(const std::string &bytes) {
    std::string out;
    for (const char c : bytes) {
        char buf[3];
        (void)std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(c));
        out += buf;
    }
    return out;
}

// python3 that tries to create kPlantedName (refused: the view is read-only), then writes each
// chunk with its own write(2), pausing between them so that each reaches the runtime in a read
// of its own.
std::vector<std::string> writer(const std::vector<Chunk> &chunks) {
    std::vector<std::string> argv{"/usr/bin/python3", "-I", "-c",
                                  "import os, sys, time\n"
                                  "try:\n"
                                  "    open(sys.argv[1], 'wb')\n"
                                  "except OSError:\n"
                                  "    pass\n"
                                  "for item in sys.argv[2:]:\n"
                                  "    fd, data = item.split(':')\n"
                                  "    os.write(int(fd), bytes.fromhex(data))\n"
                                  "    time.sleep(0.03)\n",
                                  kPlantedName};
    for (const auto &[fd, bytes] : chunks) {
        argv.push_back(std::to_string(fd) + ":" + hex(bytes));
    }
    return argv;
}

// A byte a terminal acts on rather than shows: C0 but the line end, tab and carriage return, DEL,
// and every byte of 0x80 and above (the payload holds no other UTF-8 than C1 controls).
bool acted_on(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t' && c != '\r') || u >= 0x7f;
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        lines.push_back(text.substr(start, end - start));
    }
    if (start < text.size()) {
        lines.push_back(text.substr(start));
    }
    return lines;
}

class ExecOnATerminal : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        if (::access("/usr/bin/strace", X_OK) != 0) {
            GTEST_SKIP() << "strace is not installed (apt-get install strace)";
        }
    }

    // The call with the runtime's stdout and stderr on a terminal of the test's.
    std::pair<Result, std::string> on_terminal(Call call) {
        Terminal terminal;
        call.inherit = {{terminal.device(), 1}, {terminal.device(), 2}};
        auto result = run(call);
        return {std::move(result), terminal.output()};
    }
};

TEST_F(ExecOnATerminal, TheTargetCannotForgeOrHideTheAuditOnTheTerminal) {
    const auto chunks = attack();
    // The observer is named: the forged line mimics what strace's audit prints.
    const auto [r, shown] =
        on_terminal({.command = writer(chunks), .options = {"--observer", "strace"}});
    EXPECT_EQ(r.status, 0) << r << shown;

    // Nothing the terminal would act on reached it: every control is shown as text.
    const auto control = std::find_if(shown.begin(), shown.end(), acted_on);
    EXPECT_EQ(control, shown.end()) << "byte " << (control - shown.begin()) << " of\n" << shown;
    for (const char *rendered :
         {"^[[8m", "^[[30;40m", "^[[?1049h", "^[[1;2r", "^N^[(0", "^[[5A^[[2K", "\\xc2\\x9b8m",
          "\\x9b2J\\x9d", "\\xc2\\x9d0;", "^[]0;^[P^[_^[^", "^?^H^H^G"}) {
        EXPECT_NE(shown.find(rendered), std::string::npos) << rendered << " in\n" << shown;
    }

    // The real audit follows the target's whole output, each of its lines a line of its own,
    // the planted name escaped in it.
    const auto lines = lines_of(shown);
    const auto audit = std::find_if(lines.begin(), lines.end(), [](const std::string &line) {
        return line.rfind("tea-evaluate: audit (strace): 1 path outside the grants:", 0) == 0;
    });
    ASSERT_NE(audit, lines.end()) << shown;
    EXPECT_EQ(*audit, "tea-evaluate: audit (strace): 1 path outside the grants:") << shown;
    ASSERT_EQ(lines.end() - audit, 2) << "the audit is the last thing shown\n" << shown;
    EXPECT_EQ(audit[1].rfind("  /etc/tea-terminal-\\xc2\\x9b8m  (write refused", 0), 0) << shown;
    EXPECT_LT(shown.rfind(kForged), shown.find(*audit)) << shown;

    // Control: the same target's output to files keeps every byte it wrote.
    const auto kept = run({.command = writer(chunks), .options = {"--observer", "strace"}});
    EXPECT_EQ(kept.out, written_to(chunks, 1)) << kept;
    EXPECT_NE(kept.err.find(written_to(chunks, 2)), std::string::npos) << kept;
    EXPECT_NE(kept.err.find("tea-evaluate: audit (strace): 1 path outside the grants:\n"
                            "  /etc/tea-terminal-\\xc2\\x9b8m  (write refused"),
              std::string::npos)
        << kept;

    // Control: the same bytes written to a terminal by a process the test starts itself arrive
    // as they were written, controls included.
    Terminal direct;
    const auto d = run_direct(writer(chunks), {{direct.device(), 1}, {direct.device(), 2}});
    EXPECT_EQ(d.status, 0) << d;
    const auto raw = direct.output();
    for (const auto &[fd, bytes] : chunks) {
        EXPECT_NE(raw.find(bytes), std::string::npos) << hex(bytes);
    }
}

// With --json the record is on stdout, the target's output on stderr: on a terminal the record
// carries a name's C1 control escaped (\u009b), and still reads back as the exact name.
TEST_F(ExecOnATerminal, TheJsonRecordOnATerminalCarriesNoControl) {
    const auto chunks = attack();
    const auto [r, shown] = on_terminal({.command = writer(chunks), .options = {"--json"}});
    EXPECT_EQ(r.status, 0) << r << shown;
    const auto control = std::find_if(shown.begin(), shown.end(), acted_on);
    EXPECT_EQ(control, shown.end()) << "byte " << (control - shown.begin()) << " of\n" << shown;
    const auto lines = lines_of(shown);
    ASSERT_FALSE(lines.empty());
    const auto record = json::parse(lines.back(), nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << shown;
    ASSERT_EQ(record["audit"]["findings"].size(), 1U) << shown;
    EXPECT_EQ(record["audit"]["findings"][0]["path"], kPlantedName) << shown;
    EXPECT_EQ(record["stdoutBytes"], written_to(chunks, 1).size()) << shown;
}

// A target cannot reach the terminal around its pipes: even when the runtime has the terminal as
// its controlling terminal and as its stdin, the confined target has no terminal to open, neither
// /dev/tty (ENXIO: no controlling terminal) nor the terminal's own /dev/pts/N. Control: under
// opt-out, where the target shares the operator's session, both opens reach the terminal and
// write controls to it (docs/cli.md).
TEST_F(ExecOnATerminal, AConfinedTargetCannotOpenTheTerminal) {
    const auto through_tty = [&](const std::vector<std::string> &options) {
        Terminal terminal;
        const auto probe = python(
            "def write_to(path, text):\n"
            "    with open(path, 'r+b', buffering=0) as t:\n"
            "        t.write(b'\\x1b[8m' + text + b'\\n')\n"
            "report('TTY', lambda: write_to('/dev/tty', b'BY-TTY'))\n"
            "report('PTS', lambda: write_to(sys.argv[1], b'BY-NAME'))\n",
            {terminal.path()});
        std::vector<std::string> argv{"/usr/bin/setsid", "--ctty", TEA_EVALUATE_BIN, "exec"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), {"--workspace", workspace().string(), "--"});
        argv.insert(argv.end(), probe.begin(), probe.end());
        Process p{argv,
                  base_env(),
                  {{terminal.device(), 0}, {terminal.device(), 1}, {terminal.device(), 2}},
                  base()};
        auto result = p.wait();
        return std::pair{std::move(result), terminal.output()};
    };

    // Audited (the sandbox helper that joins the holder's view makes the session) and unaudited
    // (bwrap's --new-session makes it), by each observer: the seccomp supervisor, which opens
    // files for the target, must not open its own terminal for it.
    std::vector<std::vector<std::string>> audits{{}, {"--observer", "none"}};
    for (const char *observer : observers_of_the_build()) {
        audits.push_back({"--observer", observer});
    }
    for (const auto &options : audits) {
        const auto [confined, confined_shown] = through_tty(options);
        EXPECT_EQ(confined.status, 0)
            << ::testing::PrintToString(options) << confined << confined_shown;
        EXPECT_NE(confined_shown.find("TTY-DENIED:ENXIO"), std::string::npos) << confined_shown;
        EXPECT_NE(confined_shown.find("PTS-DENIED:ENOENT"), std::string::npos) << confined_shown;
        EXPECT_EQ(confined_shown.find('\x1b'), std::string::npos) << confined_shown;
    }

    const auto [opted_out, opted_out_shown] = through_tty({"--backend", "opt-out"});
    EXPECT_NE(opted_out_shown.find("TTY-OK"), std::string::npos) << opted_out_shown;
    EXPECT_NE(opted_out_shown.find("PTS-OK"), std::string::npos) << opted_out_shown;
    EXPECT_NE(opted_out_shown.find("\x1b[8mBY-TTY"), std::string::npos) << opted_out_shown;
    EXPECT_NE(opted_out_shown.find("\x1b[8mBY-NAME"), std::string::npos) << opted_out_shown;
}

}  // namespace
}  // namespace tea::test::bwrap
