#include "parallel/shm_ring_buffer.h"

#include <cstring>

#include "core/check.h"

namespace lmrun::parallel {

struct ShmRingBuffer::Control {
    WakeWord published;  // word = number of messages published (wraps around)
    WakeWord released;   // bumped by every release, for a writer waiting for a slot
};

struct alignas(64) ShmRingBuffer::Cursor {
    std::atomic<uint32_t> consumed{0};  // messages this reader released
};

namespace {

constexpr size_t kSlotHeaderBytes = 64;

size_t round_up_64(size_t bytes) {
    return (bytes + 63) / 64 * 64;
}

// a - b as a signed distance, so counters may wrap.
int32_t distance(uint32_t a, uint32_t b) {
    return int32_t(a - b);
}

}  // namespace

size_t ShmRingBuffer::required_bytes(const Shape& shape) {
    return sizeof(Control) + sizeof(Cursor) * size_t(shape.num_readers) +
           size_t(shape.num_slots) * (kSlotHeaderBytes + round_up_64(shape.slot_bytes));
}

ShmRingBuffer::ShmRingBuffer(std::byte* region, const Shape& shape, int reader, const WaitContext& wait)
    : shape_(shape),
      slot_stride_(kSlotHeaderBytes + round_up_64(shape.slot_bytes)),
      reader_(reader),
      wait_(wait) {
    LMRUN_CHECK(shape.num_slots >= 1 && shape.num_readers >= 1 && reader < shape.num_readers,
                "bad ring shape");
    control_ = reinterpret_cast<Control*>(region);
    cursors_ = reinterpret_cast<Cursor*>(region + sizeof(Control));
    slots_ = region + sizeof(Control) + sizeof(Cursor) * size_t(shape.num_readers);
}

std::byte* ShmRingBuffer::slot(uint32_t index) const {
    return slots_ + size_t(index % uint32_t(shape_.num_slots)) * slot_stride_;
}

bool ShmRingBuffer::write(std::span<const std::byte> message) {
    LMRUN_CHECK(reader_ < 0, "only the writer writes");
    LMRUN_CHECK(message.size() <= shape_.slot_bytes, "message of %zu bytes exceeds the ring's %zu",
                message.size(), shape_.slot_bytes);
    // Slot next_ % num_slots last held message next_ - num_slots: every reader must have released it.
    const uint32_t must_be_consumed = next_ + 1 - uint32_t(shape_.num_slots);
    auto slot_free = [&] {
        for (int r = 0; r < shape_.num_readers; ++r) {
            if (distance(must_be_consumed, cursors_[r].consumed.load(std::memory_order_acquire)) > 0)
                return false;
        }
        return true;
    };
    if (!wait_until(control_->released, wait_, slot_free)) return false;
    std::byte* target = slot(next_);
    const uint64_t size = message.size();
    std::memcpy(target, &size, sizeof(size));
    if (!message.empty()) std::memcpy(target + kSlotHeaderBytes, message.data(), message.size());
    ++next_;
    control_->published.notify();  // release: the payload is visible before the count
    return true;
}

std::span<const std::byte> ShmRingBuffer::read() {
    LMRUN_CHECK(reader_ >= 0, "the writer does not read");
    if (holding_) {
        cursors_[reader_].consumed.store(next_, std::memory_order_release);
        control_->released.notify();
        holding_ = false;
    }
    const uint32_t index = next_;
    auto published = [&] {
        return distance(control_->published.word.load(std::memory_order_acquire), index) > 0;
    };
    if (!wait_until(control_->published, wait_, published)) return {};
    const std::byte* source = slot(index);
    uint64_t size = 0;
    std::memcpy(&size, source, sizeof(size));
    LMRUN_CHECK(size <= shape_.slot_bytes, "corrupt ring slot");
    ++next_;
    holding_ = true;
    return std::span<const std::byte>(source + kSlotHeaderBytes, size_t(size));
}

void ShmRingBuffer::wake_all() {
    futex_wake_all(control_->published.word);
    futex_wake_all(control_->released.word);
}

}  // namespace lmrun::parallel
