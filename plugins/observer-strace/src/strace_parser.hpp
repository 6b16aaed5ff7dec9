// Streaming parser for the trace text strace writes with
//   strace -f --seccomp-bpf --decode-pids=pidns --decode-fds=path -qq -e trace=<list> -o FILE
// It turns the text into the file accesses the Linux audit judges. The parser never trusts the
// text to be complete: anything it cannot account for (a line cut short, a line it cannot read, a
// call that never returned) makes it lossy, because an audit that silently misses an access would
// report an incomplete list as evidence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tea::strace {

// The comma-separated list for `-e trace=`. Calls that only some architectures have carry
// strace's `?` prefix, so the same list is accepted on x86-64 and on arm64.
std::string_view traced_syscalls();

// The command that produces the text this parser reads: `strace` (a path) with the options above,
// writing to trace_file, up to and including the "--" after which the traced command follows.
std::vector<std::string> strace_command(const std::string &strace, const std::string &trace_file);

// What a call did to the path it names.
enum class AccessKind : std::uint8_t {
    Read,       // opened for reading (a directory opened for reading included)
    Write,      // opened for writing or truncated
    Create,     // a new name: O_CREAT, creat, mkdir, mknod, the new name of rename/link/symlink
    Remove,     // unlink, rmdir, the old name of rename
    Exec,       // execve/execveat of the path
    List,       // getdents of a directory
    ReadLink,   // readlink of a symbolic link
    ChangeDir,  // chdir/fchdir into the path
    Other,      // names a file without reading it: an O_PATH open, the existing name of link
};

std::string_view to_string(AccessKind kind);

struct AccessEvent {
    int pid = 0;  // in strace's pid namespace, as the trace prints it
    std::string syscall;
    // The path as the process passed it, unescaped to its exact bytes. For an fd-only call
    // (getdents, fchdir) it is the fd's path as strace decoded it.
    std::string path_asked;
    // path_asked made absolute against the dirfd's decoded path or the process's working
    // directory and normalised lexically: "." and ".." are folded, symbolic links are not
    // followed. This is the path the process asked for, as an absolute path.
    std::string path_lexical;
    // The real path: the kernel's path of the returned fd when strace decoded one (a link is
    // followed, "/proc/self/fd/N" names its file; "pipe:[N]" names no file), otherwise
    // path_lexical; for an exec of a file the call made, that file. Empty when neither
    // could be established, which also makes the parser lossy when the call succeeded.
    std::string path_resolved;
    long long result = 0;  // the return value; -1 when unknown
    // The errno name ("ENOENT") of a failed call; "?" when the outcome is unknown (the process
    // died in the call, or the trace ended first). Empty on success.
    std::string error;
    AccessKind kind = AccessKind::Other;
    bool success = false;
    // The executable the process runs: the resolved path of its last successful execve,
    // inherited across fork; empty before the trace shows one. It attributes an access (bwrap's
    // own setup runs under bwrap's image), but it is no boundary: a target can exec bwrap too.
    std::string image;
    // What path_asked names once the links this trace shows the call making are followed, set
    // when path_resolved alone cannot be trusted to be the file reached: a successful exec (no
    // descriptor comes back), a refused write, and an open in a descriptor table another task
    // shares whose descriptor names another path than the one asked for (a sibling can swap the
    // descriptor before strace reads it). A name the call found in place is left as it is, for
    // the runtime to follow on the host. Empty otherwise.
    std::string path_named;
    // Non-empty: why the file reached cannot be told from the trace (a link loop, a dirfd strace
    // did not decode). The judge lists such an access.
    std::string unverified;
    // Exec only: the argument vector as strace printed it. strace shortens long strings and long
    // vectors (argv_truncated then says so); it is for diagnostics, never for a decision.
    std::vector<std::string> argv;
    bool argv_truncated = false;
};

using EventSink = std::function<void(const AccessEvent &)>;

// Limits that keep memory bounded on hostile or broken input. Exceeding one makes the parser
// lossy; it then drops what did not fit and carries on.
struct ParserLimits {
    std::size_t max_line_bytes = std::size_t{1} << 20;
    std::size_t max_processes = std::size_t{1} << 19;
    std::size_t max_pending_bytes = std::size_t{64} << 20;  // all unfinished calls together
    std::size_t max_deferred_events = std::size_t{1} << 16;
};

// How working directories are known. strace prints the directory behind every AT_FDCWD and every
// dirfd it decodes, so most relative paths resolve from the kernel's own answer and the tracked
// directory resyncs from it. Calls without a dirfd (open, execve, readlink, mkdir, unlink, rename,
// chdir...) use the tracked directory: chdir and fchdir move it, a fork copies it, a clone with
// CLONE_FS (every thread) shares it. A child that runs before its parent's clone returns has its
// relative accesses held until the clone's result names it.
//
// What the trace cannot tell: with -qq strace prints no normal exit, so a reused pid is
// recognised only when a clone returns it (its state then starts afresh). A path the kernel
// reports for a deleted file or directory keeps its " (deleted)" suffix verbatim; every ancestor
// of the real path stays a prefix of the reported one, so a judgment by directory is unaffected.
//
// Not thread-safe; one parser per trace.
class Parser {
   public:
    // initial_cwd is the working directory of the first process in the trace (the one strace
    // started); every other process inherits its directory through the fork that made it.
    explicit Parser(std::string initial_cwd, ParserLimits limits = {});
    ~Parser();
    Parser(Parser &&) noexcept;
    Parser &operator=(Parser &&) noexcept;
    Parser(const Parser &) = delete;
    Parser &operator=(const Parser &) = delete;

    // Feeds the next piece of the trace; pieces may split lines and escapes anywhere. Calls sink
    // for every access completed so far. The event passed to sink is only valid for the call.
    void feed(std::string_view chunk, const EventSink &sink);
    // Ends the trace: an unterminated last line, a call still unfinished or a path that could
    // not be resolved makes the parser lossy. Events still held back are delivered.
    void finish(const EventSink &sink);

    bool lossy() const;
    // Why the parser is lossy (the first few reasons and a count); empty when it is not.
    std::string lossy_reason() const;

    // Counters for diagnostics and the benchmark.
    std::uint64_t lines() const;
    std::uint64_t events() const;

   private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace tea::strace
