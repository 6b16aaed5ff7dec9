// The port file of a started service (docs/services-bridge-design.md): an empty file the host
// makes in the bridge's directory before the call, into which the service writes the loopback
// port it listens on. The target owns the file's content, so the host reads it as hostile: no
// link followed, no fifo waited on, a few bytes at most, a decimal port and nothing else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tea::bridge {

inline constexpr const char *kPortFileName = "port";
// "65535\n" with room to spare: a file longer than this is refused, never read whole.
inline constexpr std::size_t kMaxPortFileBytes = 16;

// Makes `<dir>/port`, empty, mode 0600, owned by `owner` (uid, gid) when given so that the target's
// identity can write it. Throws tea::Error naming the path when it cannot.
void make_port_file(const std::filesystem::path &dir,
                    std::optional<std::pair<unsigned, unsigned>> owner = std::nullopt);

// Empties the bridge's directory (the port file and a relay's socket from an attempt whose target
// never started) and makes the empty port file again, for the session's retry: a port or socket
// left from the first attempt would otherwise be read, or refused by the new relay, as this one's.
void reset_bridge_directory(const std::filesystem::path &dir);

struct PortFileReading {
    enum class State { empty, port, refused };
    State state = State::empty;
    std::uint16_t port = 0;  // when state is port
    std::string sentence;    // why, when state is empty or refused
};

// Reads `<dir>/port` once: empty (the service has not written yet), a port, or a refusal naming
// the path and what it holds.
PortFileReading read_port_file(const std::filesystem::path &dir);

// Judges the port file already opened as `fd` (named `path` in sentences): read_port_file's second
// half, apart so that a test can hand it a file removed after its open.
PortFileReading read_opened_port_file(int fd, const std::string &path);

}  // namespace tea::bridge
