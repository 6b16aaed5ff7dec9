// The eBPF observer's ring buffer reader (src/ring_reader.hpp) against the real kernel: a small
// program of the test's own writes records into a ring through bpf_ringbuf_output, lap after lap,
// so that records wrap around the end of the data area at ever different places; the reader,
// which maps a window of that area at a time, hands every one whole and in order.
#include "ring_reader.hpp"

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "owned_fd.hpp"

namespace tea::ebpf {
namespace {

constexpr std::uint32_t kRingBytes = 4096;
// Each record: eight copies of the packet's length. With its 8-byte header it takes 72 bytes of
// the ring, which 4,096 is not a multiple of: the laps wrap at a new place each time.
constexpr std::size_t kSlots = 8;
constexpr std::uint32_t kRecordBytes = kSlots * 8;

// An opcode of its class, operation and source (several of which are 0).
constexpr std::uint8_t op(unsigned cls, unsigned operation, unsigned source) {
    return static_cast<std::uint8_t>(cls + operation + source);
}

bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off,
              std::int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

// A socket filter that writes eight copies of skb->len to the ring `map_fd` and lets the packet
// through; its descriptor, or -1 (errno set).
int load_writer(int map_fd) {
    std::vector<bpf_insn> p;
    p.push_back(insn(op(BPF_LDX, BPF_MEM, BPF_W), BPF_REG_6, BPF_REG_1, 0, 0));  // r6 = skb->len
    for (int slot = 1; slot <= static_cast<int>(kSlots); ++slot) {
        // *(u64 *)(r10 - 8 * slot) = r6
        p.push_back(insn(op(BPF_STX, BPF_MEM, BPF_DW), BPF_REG_10, BPF_REG_6,
                         static_cast<std::int16_t>(-8 * slot), 0));
    }
    p.push_back(insn(op(BPF_LD, BPF_DW, BPF_IMM), BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd));
    p.push_back(insn(0, 0, 0, 0, 0));
    p.push_back(insn(op(BPF_ALU64, BPF_MOV, BPF_X), BPF_REG_2, BPF_REG_10, 0, 0));
    p.push_back(
        insn(op(BPF_ALU64, BPF_ADD, BPF_K), BPF_REG_2, 0, 0, -8 * static_cast<int>(kSlots)));
    p.push_back(insn(op(BPF_ALU64, BPF_MOV, BPF_K), BPF_REG_3, 0, 0, kRecordBytes));
    p.push_back(insn(op(BPF_ALU64, BPF_MOV, BPF_K), BPF_REG_4, 0, 0, 0));
    p.push_back(insn(op(BPF_JMP, BPF_CALL, 0), 0, 0, 0, BPF_FUNC_ringbuf_output));
    p.push_back(insn(op(BPF_ALU64, BPF_MOV, BPF_K), BPF_REG_0, 0, 0, 0));
    p.push_back(insn(op(BPF_JMP, BPF_EXIT, 0), 0, 0, 0, 0));
    return bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "tea_ring_test", "GPL", p.data(), p.size(),
                         nullptr);
}

// Runs the program once on a packet of `length` bytes.
bool write_record(int prog_fd, std::size_t length) {
    std::vector<char> packet(length, '\0');
    bpf_test_run_opts run{};
    run.sz = sizeof run;
    run.data_in = packet.data();
    run.data_size_in = static_cast<std::uint32_t>(packet.size());
    run.repeat = 1;
    return bpf_prog_test_run_opts(prog_fd, &run) == 0;
}

struct Handed {
    std::vector<std::uint64_t> values;  // each record's value, when its eight copies agree
    std::size_t torn = 0;               // records whose copies disagree or whose size is wrong
};

RingReader::Sink into(Handed &h) {
    return [&h](std::string_view bytes) {
        if (bytes.size() != kRecordBytes) {
            ++h.torn;
            return;
        }
        std::array<std::uint64_t, kSlots> copies{};
        std::memcpy(copies.data(), bytes.data(), bytes.size());
        for (const auto v : copies) {
            if (v != copies[0]) {
                ++h.torn;
                return;
            }
        }
        h.values.push_back(copies[0]);
    };
}

// A 4 KiB ring of the test's own, the program that writes to it, and a reader whose window is
// one page: a record that crosses the end of the data area needs a window longer than that.
class RingReaderTest : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "loading a BPF program needs root";
        }
        make_ring(kRingBytes);
        reader_ = std::make_unique<RingReader>(ring_.get(), kRingBytes, kRingBytes);
    }

    void make_ring(std::uint32_t bytes) {
        ring_ =
            OwnedFd{bpf_map_create(BPF_MAP_TYPE_RINGBUF, "tea_ring_test", 0, 0, bytes, nullptr)};
        ASSERT_GE(ring_.get(), 0) << std::strerror(errno);
        writer_ = OwnedFd{load_writer(ring_.get())};
        ASSERT_GE(writer_.get(), 0) << std::strerror(errno);
    }

    // Writes `laps` laps of a ring of `ring_bytes` through `reader`, reading ten records at a
    // time; returns what was handed.
    Handed laps_through(RingReader &reader, std::uint32_t ring_bytes, std::size_t laps) {
        Handed h;
        const std::size_t records = laps * ring_bytes / (kRecordBytes + 8);
        for (std::size_t i = 0; i < records; ++i) {
            EXPECT_TRUE(write_record(writer_.get(), 64 + i % 1000)) << std::strerror(errno);
            if (i % 10 == 9 || i + 1 == records) {
                reader.consume(into(h));
                EXPECT_EQ(reader.consumer(), reader.producer());
            }
        }
        EXPECT_EQ(h.values.size(), records);
        return h;
    }

    OwnedFd ring_;
    OwnedFd writer_;
    std::unique_ptr<RingReader> reader_;
};

TEST_F(RingReaderTest, HandsEveryRecordWholeAndInOrderAcrossTheEndOfTheRing) {
    // Nothing written, nothing handed.
    Handed h;
    EXPECT_EQ(reader_->consume(into(h)), 0U);
    // Ten laps of the ring, read ten records at a time (fewer than its 56 fit).
    std::vector<std::size_t> lengths;
    for (std::size_t i = 0; i < 570; ++i) {
        const std::size_t length = 64 + i;
        ASSERT_TRUE(write_record(writer_.get(), length)) << std::strerror(errno);
        lengths.push_back(length);
        if (i % 10 == 9) {
            EXPECT_EQ(reader_->consume(into(h)), 10U);
            EXPECT_EQ(reader_->consumer(), reader_->producer());
        }
    }
    EXPECT_EQ(h.torn, 0U);
    ASSERT_EQ(h.values.size(), lengths.size());
    // The program sees the packet less its link-layer header: the same offset for every record.
    const auto offset =
        static_cast<std::int64_t>(lengths[0]) - static_cast<std::int64_t>(h.values[0]);
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        EXPECT_EQ(static_cast<std::int64_t>(lengths[i]) - static_cast<std::int64_t>(h.values[i]),
                  offset)
            << "record " << i;
    }
    // Records did cross the end of the data area (those whose bytes begin before it and end
    // after it), and came whole from the window over the area's second copy.
    std::size_t crossing = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const std::size_t start = (i * (kRecordBytes + 8) + 8) % kRingBytes;
        crossing += start + kRecordBytes > kRingBytes ? 1U : 0U;
    }
    EXPECT_GT(crossing, 0U);
    EXPECT_EQ(reader_->consumer(), std::uint64_t{570} * (kRecordBytes + 8));
}

// A window smaller than the ring moves on with the records: each record whole and in order, one
// window mapped for each page the reading crossed. Control: a window as long as the ring's two
// copies is mapped once for all the laps.
TEST_F(RingReaderTest, AWindowSmallerThanTheRingMovesOnWithTheRecords) {
    constexpr std::uint32_t kLargerRing = 64 << 10;
    make_ring(kLargerRing);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    RingReader paged{ring_.get(), kLargerRing, page};
    Handed h = laps_through(paged, kLargerRing, 4);
    EXPECT_EQ(h.torn, 0U);
    for (std::size_t i = 1; i < h.values.size(); ++i) {
        // In order: each record's value is one more than the last's, but where the lengths start
        // over at 64.
        EXPECT_TRUE(h.values[i] == h.values[i - 1] + 1 || i % 1000 == 0) << "record " << i;
    }
    EXPECT_GE(paged.windows_mapped(), 4 * kLargerRing / page);
    EXPECT_TRUE(paged.unmapped().empty()) << paged.unmapped();

    make_ring(kLargerRing);
    RingReader whole{ring_.get(), kLargerRing, 2 * kLargerRing};
    h = laps_through(whole, kLargerRing, 4);
    EXPECT_EQ(h.torn, 0U);
    EXPECT_EQ(whole.windows_mapped(), 1U);
}

// A ring the reader has not drained refuses what it has no room for: the reader's position is
// what the kernel frees room by, so a reader that never moved it would lose every record after
// the first lap. Control for the test above: without a consume, the 57th record is lost.
TEST_F(RingReaderTest, ARingNotDrainedIsFullAfterOneLap) {
    for (std::size_t i = 0; i < 100; ++i) {
        ASSERT_TRUE(write_record(writer_.get(), 64 + i));
    }
    Handed h;
    EXPECT_EQ(reader_->consume(into(h)), kRingBytes / (kRecordBytes + 8));
    EXPECT_EQ(h.torn, 0U);
}

// A reader position no kernel writes (a kept ring another root process changed) is read from
// nowhere: a header read at a misaligned position could fall past the one mapping. Control: the
// same ring, its position put back, is read.
TEST_F(RingReaderTest, APositionNoKernelWritesIsNotReadFrom) {
    for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(write_record(writer_.get(), 64 + i));
    }
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void *mapped = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, ring_.get(), 0);
    ASSERT_NE(mapped, MAP_FAILED) << std::strerror(errno);
    auto *position = static_cast<std::uint64_t *>(mapped);
    __atomic_store_n(position, std::uint64_t{4}, __ATOMIC_RELEASE);
    Handed h;
    EXPECT_EQ(reader_->consume(into(h)), 0U);
    EXPECT_TRUE(reader_->inconsistent());
    __atomic_store_n(position, std::uint64_t{0}, __ATOMIC_RELEASE);
    EXPECT_EQ(reader_->consume(into(h)), 3U);
    EXPECT_EQ(h.torn, 0U);
    ::munmap(mapped, page);
}

// A size that is not a power of two of whole pages is refused before anything is mapped.
TEST(RingReader, ASizeThatIsNotAPowerOfTwoOfPagesIsRefused) {
    EXPECT_THROW(RingReader(-1, 0), std::system_error);
    EXPECT_THROW(RingReader(-1, std::size_t{3} * 4096), std::system_error);
    EXPECT_THROW(RingReader(-1, 1024), std::system_error);
    EXPECT_THROW(RingReader(-1, 4096, 0), std::system_error);
    EXPECT_THROW(RingReader(-1, 4096, 1000), std::system_error);
    // Control: good sizes on a descriptor that is no ring fail at the descriptor.
    try {
        RingReader reader{-1, 4096};
        ADD_FAILURE() << "a ring of descriptor -1 was mapped";
    } catch (const std::system_error &e) {
        EXPECT_NE(std::string{e.what()}.find("descriptor could not be kept"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace tea::ebpf
