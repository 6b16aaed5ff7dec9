// The records the eBPF observer's kernel programs send (ebpf_event.h), turned into the access
// events the core's judge decides on. Pure: no kernel, no plugin; its tests feed it records.
#ifndef TEA_EBPF_EVENTS_HPP
#define TEA_EBPF_EVENTS_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <tea/documents.hpp>

namespace tea::ebpf {

// What the records held that no event can carry; any of them makes the audit incomplete.
struct DecodeTally {
    std::uint64_t records = 0;
    std::uint64_t malformed = 0;   // a record shorter than it says, or of an unknown kind
    std::uint64_t unreadable = 0;  // a path string the program could not read back
    // While the sink takes an exec's events: the name the exec was given, as the process wrote it
    // (relative or not), which a backend's target start names; empty otherwise.
    std::string_view exec_name;
};

using EventSink = std::function<void(const documents::ObservedEventView &)>;

// Decodes one record into zero, one or two events (an exec through an interpreter reports the
// script and the interpreter). Objects outside the file system (a pipe, a socket, a memfd) give
// none, as an open of one through /proc/self/fd gives none under strace.
void decode_record(std::string_view record, DecodeTally &tally, const EventSink &sink);

// The path a region of names (leaf first, each ending in a NUL) spells, from the root.
std::string path_of_names(std::string_view names);

}  // namespace tea::ebpf

#endif
