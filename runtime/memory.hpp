// Host memory: Storage is one buffer of elements; HostPool keeps freed large buffers for reuse,
// since a fresh 100 MB buffer costs more in page faults than a pass of arithmetic over it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::detail {

class HostPool;

/// A block of host memory holding an array's elements. Owns its memory (returned to its pool
/// when the last reference dies) or an adopted std::vector.
class Storage {
public:
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() noexcept { return data_; }
    const void* data() const noexcept { return data_; }
    std::size_t bytes() const noexcept { return bytes_; }

    /// Bytes [offset, offset + bytes) of `parent`, without copying (kept alive by the view).
    static std::shared_ptr<Storage> view(std::shared_ptr<Storage> parent, std::size_t offset, std::size_t bytes);

    /// Takes a vector without copying it.
    template <class T>
    static std::shared_ptr<Storage> adopt(std::vector<T>&& v) {
        auto owned = std::make_shared<std::vector<T>>(std::move(v));
        auto s = std::shared_ptr<Storage>(new Storage());
        s->data_ = owned->data();
        s->bytes_ = owned->size() * sizeof(T);
        s->keep_alive_ = std::move(owned);
        return s;
    }

private:
    friend class HostPool;
    Storage() = default;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;      ///< bytes asked for
    std::size_t capacity_ = 0;   ///< bytes allocated (pool size class)
    std::shared_ptr<HostPool> pool_;
    std::shared_ptr<void> keep_alive_;
};

struct HostPoolStats {
    std::uint64_t bytes_allocated = 0;  ///< fresh memory taken from the system
    std::uint64_t hits = 0;             ///< allocations served from the pool
};

/// Size-classed cache of freed buffers, bounded in bytes. Thread-safe.
class HostPool : public std::enable_shared_from_this<HostPool> {
public:
    /// `limit_bytes`: most bytes kept for reuse; `memory_bytes`: physical memory, a request
    /// beyond which is refused at once (0 = unknown).
    HostPool(std::size_t limit_bytes, std::uint64_t memory_bytes);
    ~HostPool();

    /// `what` names the value for an OutOfMemoryError ("sin 3x4 double").
    std::shared_ptr<Storage> allocate(std::size_t bytes, const std::string& what);
    HostPoolStats stats() const;
    /// Frees every cached buffer.
    void trim();

private:
    friend class Storage;
    void release(void* p, std::size_t capacity) noexcept;
    static std::size_t size_class(std::size_t bytes) noexcept;

    std::size_t limit_;
    std::uint64_t memory_;
    mutable std::mutex mutex_;
    /// The cached buffers by (capacity, age), and their capacities by age (oldest first, for
    /// eviction): a reuse or an eviction is a lookup, not a scan (a program of many small
    /// values, a loop of command groups' tokens, caches thousands).
    std::map<std::pair<std::size_t, std::uint64_t>, void*> free_;
    std::map<std::uint64_t, std::size_t> order_;
    std::uint64_t age_ = 0;
    std::size_t cached_ = 0;
    std::atomic<std::uint64_t> allocated_{0}, hits_{0};
};

}  // namespace tandem::detail
