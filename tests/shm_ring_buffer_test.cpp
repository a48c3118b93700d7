// The step ring: one writer, several readers (threads here; the executor tests run it across
// processes), in order, across many wrap-arounds of a small ring, messages read in place;
// waits give up when the group is aborted or the parent is gone.
#include "parallel/shm_ring_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "parallel/shared_memory.h"

namespace lmrun::parallel {
namespace {

struct Ring {
    explicit Ring(ShmRingBuffer::Shape ring_shape) : shape(ring_shape) {
        memory = std::move(SharedMemory::create("ring-test", ShmRingBuffer::required_bytes(shape)).value());
    }
    ShmRingBuffer::Shape shape;
    SharedMemory memory;
    std::atomic<uint32_t> aborted{0};
};

// Message i: its length varies with i (0 .. 200 bytes), every byte is a function of i.
std::vector<std::byte> message(uint32_t i) {
    std::vector<std::byte> bytes((i * 37) % 201);
    for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = std::byte((i + b * 7) & 0xff);
    return bytes;
}

TEST(ShmRingBuffer, EveryReaderGetsEveryMessageInOrderAcrossWrapArounds) {
    Ring ring({3, 2, 256});
    WaitContext wait;
    wait.aborted = &ring.aborted;
    wait.policy.spin_ns = 1000;  // sleep soon: readers and writer share few cores
    constexpr uint32_t kMessages = 2000;
    std::vector<int> mismatches(3, 0);
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r) {
        readers.emplace_back([&, r] {
            ShmRingBuffer reader(ring.memory.data(), ring.shape, r, wait);
            for (uint32_t i = 0; i < kMessages; ++i) {
                std::span<const std::byte> got = reader.read();
                std::vector<std::byte> want = message(i);
                if (got.size() != want.size() || !std::equal(want.begin(), want.end(), got.begin()))
                    ++mismatches[r];
            }
        });
    }
    ShmRingBuffer writer(ring.memory.data(), ring.shape, -1, wait);
    for (uint32_t i = 0; i < kMessages; ++i) ASSERT_TRUE(writer.write(message(i)));
    for (std::thread& reader : readers) reader.join();
    EXPECT_EQ(mismatches, std::vector<int>(3, 0));
}

TEST(ShmRingBuffer, AReaderWaitingForAMessageGivesUpWhenTheGroupIsAborted) {
    Ring ring({1, 2, 64});
    WaitContext wait;
    wait.aborted = &ring.aborted;
    ShmRingBuffer reader(ring.memory.data(), ring.shape, 0, wait);
    ShmRingBuffer writer(ring.memory.data(), ring.shape, -1, wait);
    std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ring.aborted = 1;
        writer.wake_all();
    });
    const int64_t start = monotonic_ns();
    std::span<const std::byte> got = reader.read();
    aborter.join();
    EXPECT_EQ(got.data(), nullptr);
    EXPECT_LT(monotonic_ns() - start, 2'000'000'000);  // woken, not left to sleep on
}

TEST(ShmRingBuffer, AWriterWaitingForASlotGivesUpWhenTheGroupIsAborted) {
    Ring ring({1, 2, 64});
    WaitContext wait;
    wait.aborted = &ring.aborted;
    ShmRingBuffer writer(ring.memory.data(), ring.shape, -1, wait);
    const std::byte byte{1};
    ASSERT_TRUE(writer.write(std::span(&byte, 1)));
    ASSERT_TRUE(writer.write(std::span(&byte, 1)));  // both slots full: nobody reads
    std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ring.aborted = 1;
        writer.wake_all();
    });
    EXPECT_FALSE(writer.write(std::span(&byte, 1)));
    aborter.join();
}

// A worker whose parent (rank 0) is gone stops waiting by itself: its parent pid no longer
// matches. Here the "parent" is a pid that is not ours.
TEST(ShmRingBuffer, AReaderWhoseParentIsGoneGivesUp) {
    Ring ring({1, 2, 64});
    WaitContext wait;
    wait.aborted = &ring.aborted;
    wait.parent_pid = getppid() + 1;
    wait.policy.check_interval_ns = 10'000'000;
    ShmRingBuffer reader(ring.memory.data(), ring.shape, 0, wait);
    EXPECT_EQ(reader.read().data(), nullptr);
}

}  // namespace
}  // namespace lmrun::parallel
