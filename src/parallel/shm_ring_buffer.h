// A ring of message slots in shared memory with one writer (rank 0) and several readers (the
// workers), after vLLM's ShmRingBuffer / broadcast MessageQueue. The writer copies a message
// (plain bytes: each step's input arrays, see step_message.h) into the next slot and publishes
// it by advancing a counter; every reader reads it in place and releases it when it asks for
// the next one; the writer reuses a slot once every reader released it. Nothing is serialised
// and nothing goes through the kernel except the futex wake-up of a reader that fell asleep.
//
// Layout of the region: a control block (published / released counters, futex words), one
// cursor per reader, then num_slots slots of [64-byte header: message size][payload].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "parallel/futex.h"

namespace lmrun::parallel {

class ShmRingBuffer {
  public:
    struct Shape {
        int num_readers = 1;
        int num_slots = 4;
        size_t slot_bytes = 0;  // largest message
    };
    static size_t required_bytes(const Shape& shape);

    // region: required_bytes(shape) bytes of shared memory, zero-filled before any rank uses it.
    // reader: this rank's reader index, or -1 for the writer.
    ShmRingBuffer(std::byte* region, const Shape& shape, int reader, const WaitContext& wait);

    // Writer: copies `message` into the next free slot and publishes it; false if the group gave
    // up while the writer waited for a slot.
    bool write(std::span<const std::byte> message);
    // Reader: releases the message it returned last and returns the next one, in place (valid
    // until the next read()); empty if the group gave up while waiting.
    std::span<const std::byte> read();
    // Wakes every sleeping waiter (after the group's abort flag was set).
    void wake_all();

    size_t max_message_bytes() const { return shape_.slot_bytes; }

  private:
    struct Control;
    struct Cursor;
    std::byte* slot(uint32_t index) const;

    Shape shape_;
    size_t slot_stride_ = 0;
    Control* control_ = nullptr;
    Cursor* cursors_ = nullptr;
    std::byte* slots_ = nullptr;
    int reader_ = -1;
    const WaitContext& wait_;
    uint32_t next_ = 0;  // writer: messages written; reader: index of the next message to read
    bool holding_ = false;
};

}  // namespace lmrun::parallel
