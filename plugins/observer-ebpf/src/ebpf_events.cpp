#include "ebpf_events.hpp"

#include <fcntl.h>

#include <array>
#include <cstring>
#include <string>
#include <tea/path_components.hpp>
#include <vector>

#include "ebpf_event.h"

namespace tea::ebpf {
namespace {

using documents::Access;

constexpr std::size_t kHeader = sizeof(tea_ebpf_event);
// Not a walk's status: the reason of an open whose descriptor may have been displaced.
constexpr std::uint8_t kWalkDisplaced = 0xff;
// FMODE_CREATED: the open made the file.
constexpr std::uint32_t kModeCreated = 0x100000;

constexpr std::array<const char *, TEA_EBPF_CALL_END> kCallNames{
    "",         "open",       "openat",     "openat2",        "creat",   "open_by_handle_at",
    "getdents", "getdents64", "readlink",   "readlinkat",     "mkdir",   "mkdirat",
    "mknod",    "mknodat",    "unlink",     "unlinkat",       "rmdir",   "rename",
    "renameat", "renameat2",  "link",       "linkat",         "symlink", "symlinkat",
    "truncate", "execve",     "execveat",   "io_uring_setup", "close",   "close",
    "dup2",     "dup3",       "close_range"};

std::string_view call_name(std::uint16_t call) {
    return call < kCallNames.size() ? kCallNames[call] : "?";
}

// The kind an open's flags ask for, as the strace observer reads them from the trace.
Access open_access(std::uint32_t flags, std::uint32_t mode) {
    if ((flags & O_PATH) != 0) {
        return Access::other;  // a handle that reads nothing: a metadata probe
    }
    if ((flags & O_CREAT) != 0 || (flags & __O_TMPFILE) == __O_TMPFILE ||
        (mode & kModeCreated) != 0) {
        return Access::create;
    }
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0) {
        return Access::write;
    }
    return Access::read;
}

// The kind of a call that names a path, for the name the event carries.
Access named_access(const tea_ebpf_event &e) {
    switch (e.call) {
        case TEA_EBPF_OPEN:
        case TEA_EBPF_OPENAT:
        case TEA_EBPF_OPENAT2:
            return open_access(e.file_flags, 0);
        case TEA_EBPF_CREAT:
        case TEA_EBPF_MKDIR:
        case TEA_EBPF_MKDIRAT:
        case TEA_EBPF_MKNOD:
        case TEA_EBPF_MKNODAT:
        case TEA_EBPF_LINK:
        case TEA_EBPF_LINKAT:
        case TEA_EBPF_SYMLINK:
        case TEA_EBPF_SYMLINKAT:
            return Access::create;
        case TEA_EBPF_UNLINK:
        case TEA_EBPF_UNLINKAT:
        case TEA_EBPF_RMDIR:
            return Access::remove;
        case TEA_EBPF_RENAME:
        case TEA_EBPF_RENAMEAT:
        case TEA_EBPF_RENAMEAT2:
            return e.role == TEA_EBPF_ROLE_OLD ? Access::remove : Access::create;
        case TEA_EBPF_READLINK:
        case TEA_EBPF_READLINKAT:
            return Access::readlink;
        case TEA_EBPF_TRUNCATE:
            return Access::write;
        case TEA_EBPF_EXECVE:
        case TEA_EBPF_EXECVEAT:
            return Access::exec;
        default:
            return Access::other;
    }
}

std::string_view walk_failure(std::uint8_t walk) {
    switch (walk) {
        case TEA_EBPF_WALK_OUTSIDE:
            return "its file lies outside the process's root (a detached mount or another "
                   "namespace)";
        case TEA_EBPF_WALK_TOO_LONG:
            return "its path is longer than the observer's walk keeps";
        case TEA_EBPF_WALK_NO_FILE:
            return "the kernel held no file at its descriptor when the call returned";
        case kWalkDisplaced:
            return "another task sharing its descriptor table closed or replaced a descriptor "
                   "while it ran: the file at the number it returned may not be the one it "
                   "opened";
        default:
            return "the observer could not walk its path";
    }
}

// The text of region `i` of a record (the regions follow the header one after another, each of
// its bytes), or false when it lies outside the record.
bool region(std::string_view record, const tea_ebpf_event &e, int i, std::string_view *out) {
    std::size_t at = kHeader;
    for (int j = 0; j < i; ++j) {
        at += e.bytes[j];
    }
    const std::size_t bytes = e.bytes[i];
    if (bytes == 0) {
        *out = {};
        return true;
    }
    if (bytes > TEA_EBPF_NAMES + TEA_EBPF_NAME_MAX || at + bytes > record.size()) {
        return false;
    }
    *out = record.substr(at, bytes);
    return true;
}

// A string the kernel copied, without its NUL.
std::string_view c_string(std::string_view bytes) {
    return bytes.substr(0, bytes.find('\0'));
}

std::string joined(const std::string &base, std::string_view name) {
    if (name.empty() || name[0] == '/') {
        return std::string{name};
    }
    return base == "/" ? "/" + std::string{name} : base + "/" + std::string{name};
}

// `path` without its empty and "." components and its trailing slashes: the same name to the
// kernel's lookup. ".." is kept, since what it climbs out of depends on the links before it.
std::string without_dots(std::string_view path) {
    std::string out;
    std::vector<std::string> rest;
    tea::path_components::push_reversed(rest, path);
    for (auto it = rest.rbegin(); it != rest.rend(); ++it) {
        if (*it != ".") {
            out += "/" + *it;
        }
    }
    return out.empty() ? std::string{"/"} : out;
}

std::string errno_name(std::int32_t ret) {
    if (ret >= 0) {
        return {};
    }
    const char *name = ::strerrorname_np(-ret);
    return name != nullptr ? name : "E" + std::to_string(-ret);
}

}  // namespace

std::string path_of_names(std::string_view names) {
    std::vector<std::string_view> parts;
    while (!names.empty()) {
        const auto nul = names.find('\0');
        parts.push_back(names.substr(0, nul));
        names = nul == std::string_view::npos ? std::string_view{} : names.substr(nul + 1);
    }
    if (parts.empty()) {
        return "/";
    }
    std::string path;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        path += '/';
        path += *it;
    }
    return path;
}

void decode_record(std::string_view record, DecodeTally &tally, const EventSink &sink) {
    ++tally.records;
    tea_ebpf_event e{};
    if (record.size() < kHeader) {
        ++tally.malformed;
        return;
    }
    std::memcpy(&e, record.data(), kHeader);
    const auto pid = static_cast<int>(e.tgid & 0x7fffffffU);
    std::string_view r0;
    std::string_view r1;
    std::string_view r2;
    switch (e.kind) {
        case TEA_EBPF_OPENED:
        case TEA_EBPF_LISTED: {
            if (!region(record, e, 0, &r0) || !region(record, e, 1, &r1) ||
                !region(record, e, 2, &r2)) {
                ++tally.malformed;
                return;
            }
            if (e.walk[0] == TEA_EBPF_WALK_PSEUDO) {
                return;  // a pipe, socket or anonymous inode: no file of the file system
            }
            const auto path = path_of_names(r0);
            // Attack: a task sharing the table swaps a decoy onto the number before the program
            // reads it, in a way the programs could not follow: the file is not vouched for.
            const bool displaced = (e.flags & TEA_EBPF_FLAG_UNVERIFIED) != 0;
            const bool whole = e.walk[0] == TEA_EBPF_WALK_ROOT && !displaced;
            const auto access =
                e.kind == TEA_EBPF_LISTED ? Access::list : open_access(e.file_flags, e.file_mode);
            // In a shared descriptor table, what the string named is judged too: another task
            // could have put a decoy on the descriptor before the program read it.
            std::string named;
            if (e.bytes[1] > 0 && e.walk[1] == TEA_EBPF_WALK_ROOT && !c_string(r1).empty()) {
                const auto name = c_string(r1);
                if (name[0] == '/' || e.walk[2] == TEA_EBPF_WALK_ROOT) {
                    named = joined(path_of_names(r2), name);
                }
                // A name spelt with "//", "/./" or a trailing slash names the file at the
                // descriptor as plainly as the kernel's path does: nothing to follow.
                if (named == path || (named.front() == '/' && without_dots(named) == path)) {
                    named.clear();
                }
            }
            // In a shared table the string is read back to be judged too; a task that made its
            // page unreadable before it could be would hide a swapped descriptor: the audit is
            // then incomplete, never silently whole.
            if (e.kind == TEA_EBPF_OPENED && e.walk[1] == TEA_EBPF_WALK_NO_FILE) {
                ++tally.unreadable;
            }
            // With no file left at the descriptor, the name is all there is to list.
            const bool name_only = e.walk[0] == TEA_EBPF_WALK_NO_FILE && !named.empty();
            const std::string_view asked = name_only ? named : path;
            sink({pid,
                  call_name(e.call),
                  asked,
                  whole ? std::string_view{path} : std::string_view{},
                  access,
                  true,
                  {},
                  named,
                  whole ? std::string_view{} : walk_failure(displaced ? kWalkDisplaced : e.walk[0]),
                  1});
            return;
        }
        case TEA_EBPF_NAMED: {
            if (!region(record, e, 0, &r0) || !region(record, e, 1, &r1)) {
                ++tally.malformed;
                return;
            }
            if (e.walk[1] != TEA_EBPF_WALK_ROOT || c_string(r1).empty()) {
                ++tally.unreadable;
                return;
            }
            const auto name = c_string(r1);
            const bool relative = name[0] != '/';
            const bool base_whole = !relative || e.walk[0] == TEA_EBPF_WALK_ROOT;
            const auto asked = joined(path_of_names(r0), name);
            const auto error = errno_name(e.ret);
            const auto access = named_access(e);
            // A name written, made, removed or run reached whatever its links led to when the
            // call ran: the runtime follows it on the host after the call (the judge's "named").
            const bool follow = access == Access::write || access == Access::create ||
                                access == Access::remove || access == Access::exec;
            sink({pid,
                  call_name(e.call),
                  asked,
                  {},
                  access,
                  e.ret >= 0,
                  error,
                  follow ? std::string_view{asked} : std::string_view{},
                  base_whole ? std::string_view{} : walk_failure(e.walk[0]),
                  1});
            return;
        }
        case TEA_EBPF_EXEC: {
            if (!region(record, e, 0, &r0) || !region(record, e, 1, &r1) ||
                (e.bytes[2] > 0 && !region(record, e, 2, &r2))) {
                ++tally.malformed;
                return;
            }
            if (e.walk[1] != TEA_EBPF_WALK_ROOT || c_string(r1).empty()) {
                ++tally.unreadable;
                return;
            }
            const auto name = c_string(r1);
            const bool relative = name[0] != '/';
            const bool base_whole = !relative || e.walk[2] == TEA_EBPF_WALK_ROOT;
            const auto asked = joined(path_of_names(r2), name);
            const auto file = path_of_names(r0);
            tally.exec_name = name;
            const bool file_whole = e.walk[0] == TEA_EBPF_WALK_ROOT;
            if (e.script != 0) {
                // The kernel ran an interpreter for the file asked for (#!, binfmt_misc): the
                // script is judged by its name, as the strace observer judges every exec, and
                // the interpreter by its file.
                sink({pid,
                      "execve",
                      asked,
                      {},
                      Access::exec,
                      true,
                      {},
                      asked,
                      base_whole ? std::string_view{} : walk_failure(e.walk[2]),
                      1});
                sink({pid,
                      "execve",
                      file,
                      file_whole ? std::string_view{file} : std::string_view{},
                      Access::exec,
                      true,
                      {},
                      {},
                      file_whole ? std::string_view{} : walk_failure(e.walk[0]),
                      1});
                tally.exec_name = {};
                return;
            }
            std::string_view why;
            if (!file_whole) {
                why = walk_failure(e.walk[0]);
            } else if (!base_whole) {
                why = walk_failure(e.walk[2]);
            }
            sink({pid,
                  "execve",
                  asked,
                  file_whole ? std::string_view{file} : std::string_view{},
                  Access::exec,
                  true,
                  {},
                  {},
                  why,
                  1});
            tally.exec_name = {};
            return;
        }
        case TEA_EBPF_LOADER: {
            if (!region(record, e, 0, &r0)) {
                ++tally.malformed;
                return;
            }
            if (e.walk[0] == TEA_EBPF_WALK_NO_FILE || r0.empty()) {
                ++tally.unreadable;  // a loader mapped, but not found to be named
                return;
            }
            // Run by the kernel for the program, without a call of the program's own: an exec
            // of its own, as the strace observer's runtime adds it from the program's file.
            const auto file = path_of_names(r0);
            const bool whole = e.walk[0] == TEA_EBPF_WALK_ROOT;
            sink({pid,
                  "execve",
                  file,
                  whole ? std::string_view{file} : std::string_view{},
                  Access::exec,
                  true,
                  {},
                  {},
                  whole ? std::string_view{} : walk_failure(e.walk[0]),
                  1});
            return;
        }
        default:
            ++tally.malformed;
            return;
    }
}

}  // namespace tea::ebpf
