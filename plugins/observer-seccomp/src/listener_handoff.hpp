// The listener's hand-over from the filtered child to its supervisor (and to the probe's parent):
// one byte carrying exactly one descriptor over a Unix socket; sent with tea::send_descriptors.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstring>

namespace tea::seccomp_observer {

// The descriptor received (close-on-exec), or -1 for anything but one byte with one descriptor.
inline int receive_listener(int sock) {
    char byte = 0;
    iovec data{&byte, 1};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    if (::recvmsg(sock, &message, MSG_CMSG_CLOEXEC) != 1) {
        return -1;
    }
    cmsghdr *c = CMSG_FIRSTHDR(&message);
    if (c == nullptr || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) {
        return -1;
    }
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

}  // namespace tea::seccomp_observer
