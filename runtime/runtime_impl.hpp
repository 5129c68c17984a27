// The runtime's parts, wired together: configuration, topology, graph table, memory pool, CPU
// executor and scheduler. One per tandem::Runtime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <utility>

#include "backends/cpu/cpu_backend.hpp"
#include "graph/node.hpp"
#include "runtime/continuations.hpp"
#include "runtime/memory.hpp"
#include "scheduler/scheduler.hpp"
#include "tandem/config.hpp"
#include "tandem/runtime.hpp"

namespace tandem::detail {

/// Work on the runtime's behalf from threads of its own (a queue's background flush) holds the
/// runtime only between enter() and leave(): the owner closes the gate and waits before it lets go,
/// so such a thread never drops the last reference (destroying the runtime on one of its threads).
class BackgroundGate {
public:
    /// False once closed: the runtime is going away.
    bool enter() {
        std::lock_guard lock(mutex_);
        if (closed_) return false;
        ++inside_;
        return true;
    }
    void leave() {
        std::lock_guard lock(mutex_);
        if (--inside_ == 0) idle_.notify_all();
    }
    void close_and_wait() {
        std::unique_lock lock(mutex_);
        closed_ = true;
        idle_.wait(lock, [&] { return inside_ == 0; });
    }

private:
    std::mutex mutex_;
    std::condition_variable idle_;
    int inside_ = 0;
    bool closed_ = false;
};

class RuntimeImpl {
public:
    RuntimeImpl(Runtime& owner, Config config);
    /// Waits for the work in flight, then keeps what the cost model learned in its calibration file.
    ~RuntimeImpl();

    Runtime& owner() noexcept { return owner_; }
    const Config& config() const noexcept { return config_; }
    NodeTable& nodes() noexcept { return nodes_; }
    HostPool& pool() noexcept { return *pool_; }
    Scheduler& scheduler() noexcept { return *scheduler_; }
    ContinuationPool& continuations() noexcept { return *continuations_.pool; }
    const CpuTopology& topology() const noexcept { return topology_; }
    int threads() const noexcept { return threads_; }
    const char* cpu_isa() const noexcept { return cpu_->isa(); }
    /// The first device, or null (the only one, unless Config::device lists several).
    Backend* device() const noexcept { return devices_.empty() ? nullptr : devices_[0].get(); }
    /// Every device in use, in ordinal order.
    std::vector<Backend*> devices() const;
    const std::string& device_note() const noexcept { return device_note_; }
    const std::shared_ptr<BackgroundGate>& gate() const noexcept { return gate_; }

    /// The random-number generator's state: its seed, and the next stream (each rand/randn call
    /// takes one, so every call draws numbers of its own).
    void seed(std::uint64_t s) noexcept {
        rng_seed_.store(s);
        rng_stream_.store(0);
    }
    std::pair<std::uint64_t, std::uint64_t> next_stream() noexcept { return {rng_seed_.load(), rng_stream_++}; }

    /// A materialised Input node copied from (or adopting) host data.
    std::shared_ptr<Node> input(DType dtype, const Shape& shape, std::shared_ptr<Storage> storage);

private:
    /// Opens the devices Config::device asks for; an unavailable "auto" device leaves a note.
    std::vector<std::unique_ptr<Backend>> open_devices();
    std::unique_ptr<Backend> open_device(const std::string& request, std::size_t ordinal);
    /// Config::device as a list of devices to open ("auto" and "all" looked up).
    std::vector<std::string> device_requests();

    Runtime& owner_;
    Config config_;
    CpuTopology topology_;
    int threads_;
    NodeTable nodes_;
    std::shared_ptr<HostPool> pool_;
    std::unique_ptr<cpu::CpuBackend> cpu_;
    std::string device_note_;                // why no device is in use (set by open_device)
    std::vector<std::unique_ptr<Backend>> devices_;  // the Vulkan backends in use
    std::atomic<std::uint64_t> rng_seed_{0}, rng_stream_{0};
    std::shared_ptr<BackgroundGate> gate_ = std::make_shared<BackgroundGate>();
    /// Stopped (its queue run, its threads joined) after the scheduler is gone and before the
    /// rest: the last continuations still see the runtime's parts.
    struct Continuations {
        std::shared_ptr<ContinuationPool> pool = std::make_shared<ContinuationPool>();
        ~Continuations() { pool->stop(); }
    } continuations_;
    std::unique_ptr<Scheduler> scheduler_;  // last: destroyed first, after waiting for its work
};

/// The runtime an Array belongs to.
RuntimeImpl& runtime_of(const Array& a);

}  // namespace tandem::detail
