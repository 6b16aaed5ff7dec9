// The Seatbelt profile (SBPL) of one call, from what the call is granted. Pure: it reads no file
// and runs nothing, so every profile can be checked on any host (tests/plugins/backend-seatbelt).
//
// SBPL decides an operation by the last rule that matches it, so the profile is written in
// layers, each one narrowing what the layers before it opened:
//   1. deny everything; allow the process, signal, sysctl and Mach operations a program needs;
//   2. metadata everywhere (a lookup, a stat), then file data, exec and mapping of the read grants:
//      the system runtime roots, the declared systemPaths, the runtime, the read-only grants and
//      the workspace; writes to the workspace and to the devices a shell writes;
//   3. the user's private root closed whole, then the call's own directories beneath it granted
//      back (home, temp directory, bridge, the egress socket's directory read-only) and the
//      metadata of the root and of the home's parent answered, never their listing;
//   4. writes to every read-only grant refused;
//   5. the withheld paths (the evaluation folder, the project's git directory) closed last, so
//      no grant before them, however broad, reaches into them; then each directory from a
//      writable grant down to a withheld or read-only path inside it kept from being renamed
//      or removed, since a rule names a path and a rename would move the closed path off it;
//   6. the network closed; connect() to every Unix socket path refused, then the call's own
//      directories, mDNSResponder and syslog allowed back, and the withheld paths closed again;
//      with a route out, the egress shim's loopback port and the proxy's socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tea::seatbelt {

// The macOS directories every program reads: the system, its libraries and tools, its
// configuration, zone data and logging filter, and the system interpreters' library folders.
const std::vector<std::string> &system_roots();

// The two sockets a toolchain needs: the C library's name lookups, and the BSD log.
const std::vector<std::string> &system_sockets();

struct ProfileRequest {
    std::string workspace;                  // read-write
    std::string temp_dir;                   // read-write; "" when the call has none
    std::string home;                       // read-write; "" when the call has none
    std::string private_root;               // closed, apart from the call's directories
    std::string run_dir;                    // the home's parent: metadata only
    std::string bridge_dir;                 // read-write; "" without a bridge
    std::string egress_socket;              // "" without a route out
    std::uint16_t egress_port = 0;          // the shim's loopback port
    std::vector<std::string> withhold;      // closed to every operation, last
    std::vector<std::string> read_only;     // readable, never writable
    std::vector<std::string> system_paths;  // readable
    std::string runtime_prefix;             // readable; "" or "/" for none
};

// The target's profile. Throws tea::sdk::Unavailable naming a path no profile can carry.
std::string target_profile(const ProfileRequest &request);

// The evaluation layer's profile: everything allowed but writes under `read_only`.
std::string grader_profile(const std::vector<std::string> &read_only);

}  // namespace tea::seatbelt
