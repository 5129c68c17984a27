#include "runtime/memory.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>

#include "tandem/error.hpp"

namespace tandem::detail {

namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;   // 2 MiB: a transparent huge page
constexpr std::size_t kAlign = 64;                    // a cache line; what vector loads like

std::string format_bytes(std::size_t b) {
    const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, unit[u]);
    return buf;
}
}  // namespace

std::shared_ptr<Storage> Storage::view(std::shared_ptr<Storage> parent, std::size_t offset, std::size_t bytes) {
    if (offset + bytes > parent->bytes()) throw Error("Storage::view: bytes past the end of the storage (bug)");
    auto s = std::shared_ptr<Storage>(new Storage());
    s->data_ = static_cast<std::byte*>(parent->data()) + offset;
    s->bytes_ = bytes;
    s->keep_alive_ = std::move(parent);
    return s;
}

Storage::~Storage() {
    if (pool_) pool_->release(data_, capacity_);
}

HostPool::HostPool(std::size_t limit_bytes, std::uint64_t memory_bytes) : limit_(limit_bytes), memory_(memory_bytes) {}

HostPool::~HostPool() { trim(); }

std::size_t HostPool::size_class(std::size_t bytes) noexcept {
    // Large buffers in whole huge pages, so that equal-sized arrays reuse each other's memory;
    // small ones in cache lines.
    if (bytes >= kHuge / 2) return (bytes + kHuge - 1) / kHuge * kHuge;
    return std::max<std::size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
}

std::shared_ptr<Storage> HostPool::allocate(std::size_t bytes, const std::string& what) {
    if (memory_ && bytes > memory_)
        throw OutOfMemoryError("out of memory: " + what + " needs " + format_bytes(bytes) + ", more than the " +
                               format_bytes(memory_) + " of physical memory");
    std::size_t cap = size_class(bytes);
    void* p = nullptr;
    {
        std::lock_guard lock(mutex_);
        // The newest of its class (the likeliest to be in cache).
        auto it = free_.upper_bound({cap, UINT64_MAX});
        if (it != free_.begin() && std::prev(it)->first.first == cap) {
            --it;
            p = it->second;
            order_.erase(it->first.second);
            free_.erase(it);
            cached_ -= cap;
        }
    }
    if (p) {
        hits_.fetch_add(1, std::memory_order_relaxed);
    } else {
        p = std::aligned_alloc(cap >= kHuge ? kHuge : kAlign, cap);
        if (!p)
            throw OutOfMemoryError("out of memory: " + what + " needs " + format_bytes(bytes) +
                                   " and the allocation failed");
        // No MADV_HUGEPAGE: with the kernel's usual defrag=madvise it makes first touch compact
        // memory synchronously, measured 4x slower for a fresh 128 MiB array.
        allocated_.fetch_add(cap, std::memory_order_relaxed);
    }
    auto s = std::shared_ptr<Storage>(new Storage());
    s->data_ = p;
    s->bytes_ = bytes;
    s->capacity_ = cap;
    s->pool_ = shared_from_this();
    return s;
}

void HostPool::release(void* p, std::size_t capacity) noexcept {
    std::vector<void*> evicted;
    {
        std::lock_guard lock(mutex_);
        if (capacity > limit_) {
            evicted.push_back(p);
        } else {
            const std::uint64_t age = ++age_;
            free_.emplace(std::make_pair(capacity, age), p);
            order_.emplace(age, capacity);
            cached_ += capacity;
            while (cached_ > limit_ && !order_.empty()) {
                const auto [oldest, cap] = *order_.begin();
                order_.erase(order_.begin());
                auto it = free_.find({cap, oldest});
                evicted.push_back(it->second);
                free_.erase(it);
                cached_ -= cap;
            }
        }
    }
    for (void* q : evicted) std::free(q);
}

HostPoolStats HostPool::stats() const {
    return {allocated_.load(std::memory_order_relaxed), hits_.load(std::memory_order_relaxed)};
}

void HostPool::trim() {
    std::lock_guard lock(mutex_);
    for (auto& [key, p] : free_) std::free(p);
    free_.clear();
    order_.clear();
    cached_ = 0;
}

}  // namespace tandem::detail
