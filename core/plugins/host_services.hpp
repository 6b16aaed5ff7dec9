// The services the host hands a library it loaded (tea_host_services of tea/plugin.h): logging
// into the runtime's log, an operation's error sentence, and output buffers the host owns.
#pragma once

#include <tea/plugin.h>

#include <cstddef>
#include <string>

// The host-owned handles the ABI declares; defined here, opaque to plugins.
struct tea_error {
    std::string message;
};
struct tea_buffer {
    std::string data;
    std::size_t limit = 0;  // the most bytes buffer_append lets it hold
};

namespace tea::plugins {

// A services table of its own for the library `name` (its log lines are tagged with it), kept
// until the process ends: a library may keep the pointer it is handed.
const tea_host_services *host_services_for(const std::string &name);

}  // namespace tea::plugins
