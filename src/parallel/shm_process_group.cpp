#include "parallel/shm_process_group.h"

#include <unistd.h>

namespace lmrun::parallel {

struct ShmProcessGroup::Header {
    static constexpr uint64_t kMagic = 0x6c6d72756e746731ull;  // "lmruntg1"
    uint64_t magic = 0;
    int32_t size = 0;
    ShmRingBuffer::Shape ring;
    ShmCollectives::Shape collectives;
    WaitPolicy wait;
    size_t ring_offset = 0;
    size_t collectives_offset = 0;
    alignas(64) std::atomic<uint32_t> aborted{0};
};

ShmProcessGroup::ShmProcessGroup(SharedMemory memory, int rank, pid_t parent_pid)
    : ProcessGroup(rank, reinterpret_cast<Header*>(memory.data())->size), memory_(std::move(memory)) {
    header_ = reinterpret_cast<Header*>(memory_.data());
    wait_.aborted = &header_->aborted;
    wait_.parent_pid = parent_pid;
    wait_.policy = header_->wait;
    ring_ = std::make_unique<ShmRingBuffer>(memory_.data() + header_->ring_offset, header_->ring, rank - 1,
                                            wait_);
    collectives_ = std::make_unique<ShmCollectives>(memory_.data() + header_->collectives_offset,
                                                    header_->collectives, rank, wait_);
}

ShmProcessGroup::~ShmProcessGroup() = default;

Result<std::unique_ptr<ShmProcessGroup>> ShmProcessGroup::create(const Options& options) {
    if (options.size < 2)
        return make_error(ErrorKind::Internal, "a shared-memory group needs 2 or more ranks");
    Header header;
    header.magic = Header::kMagic;
    header.size = options.size;
    header.ring = ShmRingBuffer::Shape{options.size - 1, 4, options.max_message_bytes};
    header.collectives = ShmCollectives::Shape{options.size, options.max_collective_bytes};
    header.wait = options.wait;
    header.ring_offset = round_up_to_page(sizeof(Header));
    header.collectives_offset =
        header.ring_offset + round_up_to_page(ShmRingBuffer::required_bytes(header.ring));
    const size_t total = header.collectives_offset + ShmCollectives::required_bytes(header.collectives);
    LMRUN_ASSIGN_OR_RETURN(SharedMemory memory, SharedMemory::create("lmrun-tp", total));
    Header* shared = new (memory.data()) Header();
    shared->magic = header.magic;
    shared->size = header.size;
    shared->ring = header.ring;
    shared->collectives = header.collectives;
    shared->wait = header.wait;
    shared->ring_offset = header.ring_offset;
    shared->collectives_offset = header.collectives_offset;
    return std::unique_ptr<ShmProcessGroup>(new ShmProcessGroup(std::move(memory), 0, 0));
}

Result<std::unique_ptr<ShmProcessGroup>> ShmProcessGroup::attach(int fd, int rank, pid_t parent_pid) {
    LMRUN_ASSIGN_OR_RETURN(SharedMemory memory, SharedMemory::attach(fd));
    const auto* header = reinterpret_cast<const Header*>(memory.data());
    if (memory.size() < sizeof(Header) || header->magic != Header::kMagic)
        return make_error(ErrorKind::Internal, "descriptor {} is not a tensor-parallel group segment", fd);
    if (rank < 1 || rank >= header->size)
        return make_error(ErrorKind::Internal, "rank {} outside a group of {}", rank, header->size);
    return std::unique_ptr<ShmProcessGroup>(new ShmProcessGroup(std::move(memory), rank, parent_pid));
}

void ShmProcessGroup::abort() {
    header_->aborted.store(1, std::memory_order_release);
    ring_->wake_all();
    collectives_->wake_all();
}

bool ShmProcessGroup::failed() const {
    return failed_ || wait_.aborted_now();
}

void ShmProcessGroup::check(bool completed) {
    if (!completed) failed_ = true;
}

void ShmProcessGroup::all_reduce(float* data, int64_t count) {
    if (!failed()) check(collectives_->all_reduce(data, count));
}

void ShmProcessGroup::gather(const void* local, size_t bytes, void* out) {
    if (!failed()) check(collectives_->gather(local, bytes, out));
}

void ShmProcessGroup::gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                                     int64_t out_cols) {
    if (!failed()) check(collectives_->gather_columns(local, num_rows, local_cols, out, out_cols));
}

std::span<const std::byte> ShmProcessGroup::broadcast(std::span<const std::byte> message) {
    if (failed()) return {};
    if (rank() == 0) {
        check(ring_->write(message));
        return failed() ? std::span<const std::byte>() : message;
    }
    std::span<const std::byte> received = ring_->read();
    if (received.data() == nullptr) failed_ = true;
    return received;
}

void ShmProcessGroup::barrier() {
    if (!failed()) check(collectives_->barrier());
}

}  // namespace lmrun::parallel
