#include "ring_reader.hpp"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace tea::ebpf {

namespace {

// A record's whole length in the ring: its header, its bytes, rounded up to eight.
std::uint64_t record_span(std::uint32_t header) {
    const std::uint64_t length = header & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
    return (length + BPF_RINGBUF_HDR_SZ + 7) / 8 * 8;
}

}  // namespace

RingReader::RingReader(int map_fd, std::size_t data_bytes, std::size_t window_bytes)
    : page_{static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))},
      data_bytes_{data_bytes},
      window_bytes_{window_bytes} {
    if (data_bytes_ == 0 || (data_bytes_ & (data_bytes_ - 1)) != 0 || data_bytes_ % page_ != 0) {
        throw std::system_error(EINVAL, std::generic_category(),
                                "the ring buffer's size is not a power of two of whole pages");
    }
    if (window_bytes_ == 0 || window_bytes_ % page_ != 0) {
        throw std::system_error(EINVAL, std::generic_category(),
                                "the ring buffer's window is not a number of whole pages");
    }
    // The window is mapped again as it moves, for as long as the reader lives.
    fd_ = OwnedFd{::fcntl(map_fd, F_DUPFD_CLOEXEC, 0)};
    if (fd_.get() < 0) {
        throw std::system_error(errno, std::generic_category(),
                                "the ring buffer's descriptor could not be kept");
    }
    // The kernel lets the reader write its own position and nothing else.
    consumer_page_ = ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (consumer_page_ == MAP_FAILED) {
        const int error = errno;
        consumer_page_ = nullptr;
        throw std::system_error(error, std::generic_category(),
                                "the ring buffer's reader position could not be mapped");
    }
    producer_page_ =
        ::mmap(nullptr, page_, PROT_READ, MAP_SHARED, fd_.get(), static_cast<off_t>(page_));
    if (producer_page_ == MAP_FAILED) {
        const int error = errno;
        producer_page_ = nullptr;
        ::munmap(consumer_page_, page_);
        throw std::system_error(error, std::generic_category(),
                                "the ring buffer's programs' position could not be mapped");
    }
}

RingReader::~RingReader() {
    if (window_ != nullptr) {
        ::munmap(const_cast<char *>(window_), window_len_);
    }
    ::munmap(producer_page_, page_);
    ::munmap(consumer_page_, page_);
}

std::uint64_t RingReader::producer() const {
    return __atomic_load_n(static_cast<const std::uint64_t *>(producer_page_), __ATOMIC_ACQUIRE);
}

std::uint64_t RingReader::consumer() const {
    return __atomic_load_n(static_cast<const std::uint64_t *>(consumer_page_), __ATOMIC_ACQUIRE);
}

const char *RingReader::bytes_at(std::size_t offset, std::size_t length) {
    if (window_ != nullptr && offset >= window_at_ && offset + length <= window_at_ + window_len_) {
        return window_ + (offset - window_at_);
    }
    if (window_ != nullptr) {
        ::munmap(const_cast<char *>(window_), window_len_);
        window_ = nullptr;
    }
    // From the page the bytes begin in, at least a window long and long enough for them, and
    // never past the second copy of the data area.
    const std::size_t at = offset / page_ * page_;
    const std::size_t needed = (offset + length - at + page_ - 1) / page_ * page_;
    const std::size_t len = std::min(std::max(window_bytes_, needed), 2 * data_bytes_ - at);
    // The data area begins after the reader's page and the programs' page.
    void *mapped =
        ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_.get(), static_cast<off_t>(2 * page_ + at));
    if (mapped == MAP_FAILED) {
        unmapped_ = "the ring buffer's data could not be mapped (" +
                    std::generic_category().message(errno) + ")";
        return nullptr;
    }
    unmapped_.clear();  // what failed before has passed
    window_ = static_cast<const char *>(mapped);
    window_at_ = at;
    window_len_ = len;
    ++windows_mapped_;
    return window_ + (offset - at);
}

std::size_t RingReader::consume(const Sink &sink) {
    auto *position = static_cast<std::uint64_t *>(consumer_page_);
    const std::uint64_t mask = data_bytes_ - 1;
    std::uint64_t at = __atomic_load_n(position, __ATOMIC_ACQUIRE);
    // Up to where the programs stood on entry: a flood behind it waits for the next call, so that
    // the caller (who holds the observer's lock) is never held for as long as it lasts.
    const std::uint64_t end = producer();
    // Positions no kernel writes (a kept ring whose reader position another root process moved):
    // a header read there could fall past the window, so nothing is read.
    if ((at & 7U) != 0 || at > end || end - at > data_bytes_) {
        inconsistent_ = true;
        return 0;
    }
    std::size_t handed = 0;
    while (at < end) {
        const std::size_t offset = at & mask;
        // Headers are eight-aligned in a ring of whole pages: one never wraps.
        const char *head = bytes_at(offset, BPF_RINGBUF_HDR_SZ);
        if (head == nullptr) {
            return handed;
        }
        const auto header =
            __atomic_load_n(reinterpret_cast<const std::uint32_t *>(head), __ATOMIC_ACQUIRE);
        if ((header & BPF_RINGBUF_BUSY_BIT) != 0) {
            return handed;  // reserved, not yet committed: the records behind it wait
        }
        const std::uint64_t span = record_span(header);
        // A length no program could have reserved is the kernel's or a corruption's: the reader
        // stops there rather than read past the data area.
        if (span > data_bytes_) {
            inconsistent_ = true;
            return handed;
        }
        if ((header & BPF_RINGBUF_DISCARD_BIT) == 0) {
            const std::size_t length = header & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
            // Past the end of the data area, the window reads the second copy: one piece.
            const char *record = bytes_at(offset, BPF_RINGBUF_HDR_SZ + length);
            if (record == nullptr) {
                return handed;
            }
            sink(std::string_view{record + BPF_RINGBUF_HDR_SZ, length});
            ++handed;
        }
        at += span;
        __atomic_store_n(position, at, __ATOMIC_RELEASE);
    }
    return handed;
}

}  // namespace tea::ebpf
