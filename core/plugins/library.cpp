#include "plugins/library.hpp"

#include <elf.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tea::plugins {
namespace {

// Libraries stay loaded until the process ends: code a plugin made, and the host tables it
// keeps, must never be unmapped under it.
struct Loaded {
    std::mutex mutex;
    std::deque<boost::dll::shared_library> libraries;
};
Loaded &loaded() {
    // Never freed on purpose: what the libraries made may be used until the process ends.
    static auto *libraries = new Loaded;  // NOLINT(cppcoreguidelines-owning-memory)
    return *libraries;
}

std::runtime_error refusal(const std::filesystem::path &file, const std::string &what) {
    return std::runtime_error{file.string() + ": " + what};
}

// A clearer sentence than dlerror's for the commonest mistake: a file that is no ELF object.
// Read from the descriptor the trust checks were made on.
void check_elf_shared_object(int fd, const std::filesystem::path &library) {
    Elf64_Ehdr header{};
    std::size_t got = 0;
    // The header alone, through pread(2): a stream would fill a buffer of 8 KiB to give 64 bytes.
    while (got < sizeof header) {
        const auto n = ::pread(fd, reinterpret_cast<char *>(&header) + got, sizeof header - got,
                               static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    if (got < 4 || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
        throw refusal(library, "is not a shared object (expected an ELF file, found " +
                                   std::to_string(got) + " bytes of something else)");
    }
    if (got >= sizeof header && header.e_type != ET_DYN) {
        throw refusal(library,
                      "is an ELF file but not a shared object (expected type ET_DYN, "
                      "found type " +
                          std::to_string(header.e_type) + ")");
    }
}

}  // namespace

void *load_library(const std::filesystem::path &path, const char *symbol,
                   const TrustPolicy &trust) {
    const auto fd = open_trusted(path, trust);
    check_elf_shared_object(fd.get(), path);
    // Loaded by its path, not through /proc/self/fd/N: a library that finds its own files from
    // where it was loaded (dladdr, $ORIGIN; the in-tree plugins find their helpers so) would
    // find /proc/self/fd. The path is safe to open again: under a required policy nobody but
    // root can change what it names (open_trusted), so the kernel reaches the file checked.
    boost::dll::shared_library library;
    try {
        library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception &e) {
        throw refusal(path, std::string{"is not a loadable shared object: "} + e.what());
    }
    // The symbol's address (get<T> answers a reference to what lies there).
    void *address = library.has(symbol) ? static_cast<void *>(&library.get<char>(symbol)) : nullptr;
    auto &kept = loaded();
    const std::lock_guard lock{kept.mutex};
    kept.libraries.push_back(std::move(library));  // never unloaded
    return address;
}

}  // namespace tea::plugins
