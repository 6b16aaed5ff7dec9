#include "redaction/file_redactor.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>

#include "redaction/stream_redactor.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::redaction {

namespace {

constexpr std::size_t kBlockBytes = 64 * 1024;

Error failure(const std::string &what, const std::filesystem::path &path, int error_number) {
    return runtime_failure("cannot redact " + path.string() + ": " + what + ": " +
                           std::generic_category().message(error_number));
}

// Writes what it is given to a file descriptor in blocks.
class FileSink final : public ByteSink {
   public:
    FileSink(int fd, const std::filesystem::path &path) : fd_(fd), path_(path) {}

    void write(std::string_view bytes) override {
        if (bytes.size() >= buffer_.size()) {
            flush();
            write_all(bytes);
            return;
        }
        if (used_ + bytes.size() > buffer_.size()) flush();
        bytes.copy(buffer_.data() + used_, bytes.size());
        used_ += bytes.size();
    }
    void flush() {
        write_all({buffer_.data(), used_});
        used_ = 0;
    }

   private:
    void write_all(std::string_view bytes) const {
        while (!bytes.empty()) {
            const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw failure("writing the redacted copy", path_, errno);
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
    }

    int fd_;
    const std::filesystem::path &path_;
    std::array<char, kBlockBytes> buffer_{};
    std::size_t used_ = 0;
};

// The redacted copy beside the file, removed unless it was renamed into place.
class TempFile {
   public:
    TempFile(const std::filesystem::path &path, const struct stat &original) {
        name_ = (path.parent_path() / ("." + path.filename().string() + ".redact-XXXXXX")).string();
        fd_.reset(::mkostemp(name_.data(), O_CLOEXEC));
        if (!fd_) throw failure("creating a file beside it", path, errno);
        const bool owner_differs = original.st_uid != ::geteuid() || original.st_gid != ::getegid();
        if ((::geteuid() == 0 && owner_differs &&
             ::fchown(fd_.get(), original.st_uid, original.st_gid) != 0) ||
            ::fchmod(fd_.get(), original.st_mode & 07777) != 0) {
            const int e = errno;
            ::unlink(name_.c_str());
            throw failure("giving the copy the file's owner and mode", path, e);
        }
    }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
    TempFile(TempFile &&) = delete;
    TempFile &operator=(TempFile &&) = delete;
    ~TempFile() {
        if (!renamed_) ::unlink(name_.c_str());
    }

    [[nodiscard]] int fd() const { return fd_.get(); }
    void replace(const std::filesystem::path &path) {
        if (::fsync(fd_.get()) != 0) throw failure("syncing the redacted copy", path, errno);
        fd_.reset();
        if (::rename(name_.c_str(), path.c_str()) != 0) {
            throw failure("renaming the redacted copy over it", path, errno);
        }
        renamed_ = true;
        const UniqueFd dir{::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (dir) (void)::fsync(dir.get());
    }

   private:
    std::string name_;
    UniqueFd fd_;
    bool renamed_ = false;
};

}  // namespace

std::uint64_t redact_file(const std::filesystem::path &path, const SecretMatcher &matcher,
                          bool cut) {
    // O_NOFOLLOW: a link a target left where a record goes would have the runtime rewrite the
    // file it points to. O_NONBLOCK: a fifo there would block the run.
    const UniqueFd in{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    if (!in && errno == ELOOP) {
        throw runtime_failure("cannot redact " + path.string() + ": it is a symbolic link");
    }
    if (!in) throw failure("opening it", path, errno);
    struct stat st {};
    if (::fstat(in.get(), &st) != 0) throw failure("examining it", path, errno);
    if (!S_ISREG(st.st_mode)) {
        throw runtime_failure("cannot redact " + path.string() + ": it is not a regular file");
    }
    if (matcher.empty()) return 0;

    TempFile temp(path, st);
    FileSink sink(temp.fd(), path);
    StreamRedactor redactor(matcher, sink);
    std::string block(kBlockBytes, '\0');
    for (;;) {
        const ssize_t n = ::read(in.get(), block.data(), block.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw failure("reading it", path, errno);
        if (n == 0) break;
        redactor.write({block.data(), static_cast<std::size_t>(n)});
    }
    if (cut) {
        redactor.finish_cut();
    } else {
        redactor.finish();
    }
    if (redactor.redactions() == 0) return 0;
    sink.flush();
    temp.replace(path);
    return redactor.redactions();
}

}  // namespace tea::redaction
