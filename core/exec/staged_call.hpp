// (ABI 1.5) The staged call's own parts: the deferred files the runtime fills once the complete
// plan exists, and the check that the complete plan starts the process that was started.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "exec/exec_plan.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {

// A deferred file's runtime end and what it is to be given.
struct DeferredFile {
    int child_fd = -1;
    UniqueFd fd;
    std::string content;
    std::size_t written = 0;

    // Writes what the socket takes now; closes it once all is written or the reader is gone.
    void write_some() {
        while (fd && written < content.size()) {
            const auto n = ::send(fd.get(), content.data() + written, content.size() - written,
                                  MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            }
            if (n <= 0) {
                fd.reset();  // the reader ended: what it read was short, and it must refuse it
                return;
            }
            written += static_cast<std::size_t>(n);
        }
        fd.reset();  // the end of the file: the reader has it whole
    }
};

// The first differing part of a process, or nullptr when the complete plan starts the same one.
const char *differs(const ExecPlan &staged, const ExecPlan &complete);

}  // namespace tea::exec::detail
