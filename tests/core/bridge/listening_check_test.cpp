// The check of where a service listens (core/bridge/listening_check), against real sockets of
// this process's network namespace read through /proc/<pid>/net, and against tables' text.
#include "bridge/listening_check.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "util/fd.hpp"

namespace {

// A socket listening on `address` at a port the system picks (or at `port`).
tea::UniqueFd listen_on(int family, const char *address, std::uint16_t &port) {
    tea::UniqueFd fd{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage storage{};
    socklen_t size = 0;
    if (family == AF_INET) {
        auto &a = reinterpret_cast<sockaddr_in &>(storage);
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        ::inet_pton(AF_INET, address, &a.sin_addr);
        size = sizeof a;
    } else {
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        auto &a = reinterpret_cast<sockaddr_in6 &>(storage);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        ::inet_pton(AF_INET6, address, &a.sin6_addr);
        size = sizeof a;
    }
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr *>(&storage), size), 0) << address;
    EXPECT_EQ(::listen(fd.get(), 8), 0);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&storage), &size);
    port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in &>(storage).sin_port
                                   : reinterpret_cast<sockaddr_in6 &>(storage).sin6_port);
    return fd;
}

TEST(ListeningCheck, LoopbackIsAccepted) {
    std::uint16_t port = 0;
    const auto v4 = listen_on(AF_INET, "127.0.0.1", port);
    auto r = tea::bridge::check_listening(::getpid(), port);
    EXPECT_TRUE(r.ok) << r.refusal;
    EXPECT_TRUE(r.ipv4);
    EXPECT_FALSE(r.ipv6);
    const auto v6 = listen_on(AF_INET6, "::1", port);
    r = tea::bridge::check_listening(::getpid(), port);
    EXPECT_TRUE(r.ok) << r.refusal;
    EXPECT_TRUE(r.ipv6);
}

TEST(ListeningCheck, EveryAddressIsRefusedAndNamed) {
    std::uint16_t port = 0;
    {
        const auto any = listen_on(AF_INET, "0.0.0.0", port);
        const auto r = tea::bridge::check_listening(::getpid(), port);
        EXPECT_FALSE(r.ok);
        EXPECT_NE(r.refusal.find("listens on 0.0.0.0 port " + std::to_string(port)),
                  std::string::npos)
            << r.refusal;
    }
    std::uint16_t port6 = 0;
    const auto any6 = listen_on(AF_INET6, "::", port6);
    const auto r = tea::bridge::check_listening(::getpid(), port6);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.refusal.find("listens on :: port"), std::string::npos) << r.refusal;
}

TEST(ListeningCheck, LoopbackBesideAnotherAddressIsRefused) {
    const std::string heading = "  sl  local_address rem_address   st\n";
    const std::string tcp = heading +
                            "   0: 0100007F:1F90 00000000:0000 0A\n"
                            "   1: 0A00000A:1F90 00000000:0000 0A\n";
    const auto r = tea::bridge::listening_in(tcp, "", 8080);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.refusal.find("10.0.0.10 port 8080"), std::string::npos) << r.refusal;
    // Control: loopback alone, and a connection (not a listener) elsewhere, pass.
    const auto alone = tea::bridge::listening_in(heading +
                                                     "   0: 0100007F:1F90 00000000:0000 0A\n"
                                                     "   1: 0A00000A:1F90 0100007F:9999 01\n",
                                                 "", 8080);
    EXPECT_TRUE(alone.ok) << alone.refusal;
}

TEST(ListeningCheck, NothingListeningIsSaidSo) {
    std::uint16_t port = 0;
    { const auto gone = listen_on(AF_INET, "127.0.0.1", port); }
    const auto r = tea::bridge::check_listening(::getpid(), port);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.refusal,
              "nothing listens on port " + std::to_string(port) + " in the call's network");
}

}  // namespace
