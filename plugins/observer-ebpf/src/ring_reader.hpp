// The reader of a BPF ring buffer the kernel's programs write to, mapped once.
//
// The kernel lays the data area out twice in a row, so that a reader can take a record that wraps
// around its end as one piece; libbpf's reader maps both copies, and the kernel fills every page
// table entry of them at once. This reader maps the data area once (half the pages to fill and to
// empty) and hands a record that wraps as its two pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace tea::ebpf {

class RingReader {
   public:
    // A record's bytes: `first`, then `second` when it wraps around the end of the data area
    // (empty otherwise).
    using Sink = std::function<void(std::string_view first, std::string_view second)>;

    // Maps the ring buffer map `map_fd`, whose data area is `data_bytes` (a power of two of whole
    // pages). Throws std::system_error naming what the kernel refused.
    RingReader(int map_fd, std::size_t data_bytes);
    RingReader(const RingReader &) = delete;
    RingReader &operator=(const RingReader &) = delete;
    ~RingReader();

    // Hands every record written up to the programs' position on entry to `sink`, in order, up to
    // the first one a program has reserved and not yet committed; records a program discarded are
    // skipped. Returns how many were handed.
    std::size_t consume(const Sink &sink);

    // Whether a consume found positions or a length no kernel writes (then it read nothing more).
    [[nodiscard]] bool inconsistent() const { return inconsistent_; }

    // The positions the programs have reserved up to, and the reader has passed.
    [[nodiscard]] std::uint64_t producer() const;
    [[nodiscard]] std::uint64_t consumer() const;

   private:
    std::size_t page_ = 0;
    std::size_t data_bytes_ = 0;
    void *consumer_page_ = nullptr;  // read-write: the reader's position
    void *producer_area_ = nullptr;  // read-only: the programs' position, then the data, once
    bool inconsistent_ = false;
};

}  // namespace tea::ebpf
