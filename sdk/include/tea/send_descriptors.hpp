// Sends descriptors over a Unix stream socket (SCM_RIGHTS) with one byte of data, as
// tea-bridge-relay hands its connection to the service to the host. C++17, like the rest of the
// SDK.
#ifndef TEA_SEND_DESCRIPTORS_HPP
#define TEA_SEND_DESCRIPTORS_HPP

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstring>
#include <vector>

namespace tea {

// sendmsg's result: 1 when the byte and the descriptors went, -1 with errno set otherwise.
inline long send_descriptors(int unix_fd, const std::vector<int> &fds, int flags = 0) {
    char byte = 'S';
    iovec data{&byte, 1};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
    return ::sendmsg(unix_fd, &message, flags | MSG_NOSIGNAL);
}

}  // namespace tea

#endif
