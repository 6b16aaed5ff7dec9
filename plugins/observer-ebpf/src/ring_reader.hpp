// The reader of a BPF ring buffer the kernel's programs write to, mapped a window at a time.
//
// The kernel fills every page table entry of a ring buffer's mapping when it is mapped, and empties
// them when it is unmapped: for the 16 MiB ring, 4,096 pages each way for one copy of its data area
// (libbpf's reader maps both, 8,192), whatever a session reads.
// This reader maps only a window of the data area around the records it is reading, and moves it
// on as it reads: a session pays for the pages its records took. The kernel lays the data area out
// twice in a row, so a window that reaches past the end holds a record that wraps around it in
// one piece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "owned_fd.hpp"

namespace tea::ebpf {

class RingReader {
   public:
    // A record's bytes.
    using Sink = std::function<void(std::string_view record)>;

    // The window's default size: a few hundred records of a typical open.
    static constexpr std::size_t kWindowBytes = std::size_t{256} << 10;

    // Reads the ring buffer map `map_fd` (the reader keeps a descriptor of its own), whose data
    // area is `data_bytes` (a power of two of whole pages), through windows of `window_bytes`
    // (whole pages; a record longer than that gets a window of its own size). Throws
    // std::system_error naming what the kernel refused.
    RingReader(int map_fd, std::size_t data_bytes, std::size_t window_bytes = kWindowBytes);
    RingReader(const RingReader &) = delete;
    RingReader &operator=(const RingReader &) = delete;
    ~RingReader();

    // Hands every record written up to the programs' position on entry to `sink`, in order, up to
    // the first one a program has reserved and not yet committed; records a program discarded are
    // skipped. Returns how many were handed.
    std::size_t consume(const Sink &sink);

    // Whether a consume found positions or a length no kernel writes (then it read nothing more).
    [[nodiscard]] bool inconsistent() const { return inconsistent_; }

    // Why the last consume could not map the window its next record lies in (empty once a window
    // is mapped again); it stopped there, and the records from there on wait unread.
    [[nodiscard]] const std::string &unmapped() const { return unmapped_; }

    // The positions the programs have reserved up to, and the reader has passed.
    [[nodiscard]] std::uint64_t producer() const;
    [[nodiscard]] std::uint64_t consumer() const;

    // Windows mapped so far (each move of the window maps one).
    [[nodiscard]] std::size_t windows_mapped() const { return windows_mapped_; }

   private:
    // The bytes [offset, offset + length) of the data area (offset under its size, offset +
    // length at most twice it), through the window, moved there if they lie outside it; nullptr
    // when that window could not be mapped.
    const char *bytes_at(std::size_t offset, std::size_t length);

    OwnedFd fd_;  // the reader's own descriptor of the ring
    std::size_t page_ = 0;
    std::size_t data_bytes_ = 0;
    std::size_t window_bytes_ = 0;
    void *consumer_page_ = nullptr;  // read-write: the reader's position
    void *producer_page_ = nullptr;  // read-only: the programs' position
    const char *window_ = nullptr;   // read-only: data bytes [window_at_, window_at_ + window_len_)
    std::size_t window_at_ = 0;
    std::size_t window_len_ = 0;
    std::size_t windows_mapped_ = 0;
    bool inconsistent_ = false;
    std::string unmapped_;
};

}  // namespace tea::ebpf
