#include "ring_reader.hpp"

#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

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

RingReader::RingReader(int map_fd, std::size_t data_bytes)
    : page_{static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))}, data_bytes_{data_bytes} {
    if (data_bytes_ == 0 || (data_bytes_ & (data_bytes_ - 1)) != 0 || data_bytes_ % page_ != 0) {
        throw std::system_error(EINVAL, std::generic_category(),
                                "the ring buffer's size is not a power of two of whole pages");
    }
    // The kernel lets the reader write its own position and nothing else.
    consumer_page_ = ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
    if (consumer_page_ == MAP_FAILED) {
        consumer_page_ = nullptr;
        throw std::system_error(errno, std::generic_category(),
                                "the ring buffer's reader position could not be mapped");
    }
    producer_area_ = ::mmap(nullptr, page_ + data_bytes_, PROT_READ, MAP_SHARED, map_fd,
                            static_cast<off_t>(page_));
    if (producer_area_ == MAP_FAILED) {
        const int error = errno;
        producer_area_ = nullptr;
        ::munmap(consumer_page_, page_);
        consumer_page_ = nullptr;
        throw std::system_error(error, std::generic_category(),
                                "the ring buffer's data could not be mapped");
    }
}

RingReader::~RingReader() {
    if (producer_area_ != nullptr) {
        ::munmap(producer_area_, page_ + data_bytes_);
    }
    if (consumer_page_ != nullptr) {
        ::munmap(consumer_page_, page_);
    }
}

std::uint64_t RingReader::producer() const {
    return __atomic_load_n(static_cast<const std::uint64_t *>(producer_area_), __ATOMIC_ACQUIRE);
}

std::uint64_t RingReader::consumer() const {
    return __atomic_load_n(static_cast<const std::uint64_t *>(consumer_page_), __ATOMIC_ACQUIRE);
}

std::size_t RingReader::consume(const Sink &sink) {
    auto *position = static_cast<std::uint64_t *>(consumer_page_);
    const char *data = static_cast<const char *>(producer_area_) + page_;
    const std::uint64_t mask = data_bytes_ - 1;
    std::uint64_t at = __atomic_load_n(position, __ATOMIC_ACQUIRE);
    // Up to where the programs stood on entry: a flood behind it waits for the next call, so that
    // the caller (who holds the observer's lock) is never held for as long as it lasts.
    const std::uint64_t end = producer();
    // Positions no kernel writes (a kept ring whose reader position another root process moved):
    // a header read there could fall past the mapping, so nothing is read.
    if ((at & 7U) != 0 || at > end || end - at > data_bytes_) {
        inconsistent_ = true;
        return 0;
    }
    std::size_t handed = 0;
    while (at < end) {
        const std::size_t offset = at & mask;
        // Headers are eight-aligned in a ring of whole pages: one never wraps.
        const auto header = __atomic_load_n(reinterpret_cast<const std::uint32_t *>(data + offset),
                                            __ATOMIC_ACQUIRE);
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
            const std::size_t start = (offset + BPF_RINGBUF_HDR_SZ) & mask;
            const std::size_t before_end = data_bytes_ - start;
            if (length <= before_end) {
                sink(std::string_view{data + start, length}, {});
            } else {
                sink(std::string_view{data + start, before_end},
                     std::string_view{data, length - before_end});
            }
            ++handed;
        }
        at += span;
        __atomic_store_n(position, at, __ATOMIC_RELEASE);
    }
    return handed;
}

}  // namespace tea::ebpf
