// A piece of a region (scheduler/streaming.hpp) in flight on a device, for the scheduler's
// streamed and split regions: the copies it pins there while it runs, and its completion, which
// the worker thread running the region waits for.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "scheduler/residency.hpp"
#include "scheduler/streaming.hpp"

namespace tandem::detail {

/// Whether a thread waiting for work on `device` watches it a while before sleeping: a GPU's
/// completion comes from a thread that spins on the GPU already, and a sleeping waiter then
/// costs a wake-up (tens of us on the H200 host) that one device's region does not pay (it
/// completes from that thread itself). A device that is the CPU (lavapipe) needs the cores.
inline bool waiters_poll(const Backend& device) noexcept {
    return device.device_class() == DeviceClass::discrete_gpu || device.device_class() == DeviceClass::integrated_gpu;
}

/// Polls `done` until it holds or `limit` has passed; whether it holds.
template <class Done>
bool poll_for(Done&& done, std::chrono::microseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done())
        if (std::chrono::steady_clock::now() >= until) return false;
    return true;
}

class PieceFlight {
public:
    PieceFlight(StreamPiece piece, Backend& device, ResidencyTable& table)
        : piece_(std::move(piece)), device_(device), table_(table) {
        for (auto& v : piece_.inputs)
            if (!v->device(device.ordinal())) pinned_.push_back(v);  // uploaded with the piece
        for (auto& v : piece_.outputs) pinned_.push_back(v);
    }
    PieceFlight(const PieceFlight&) = delete;
    PieceFlight& operator=(const PieceFlight&) = delete;

    const StreamPiece& piece() const noexcept { return piece_; }
    Backend& device() const noexcept { return device_; }
    /// Bytes it adds to the device: the windows it uploads, its outputs (room to make first).
    std::uint64_t bytes() const {
        std::uint64_t n = 0;
        for (auto& v : pinned_) n += v->bytes();
        return n;
    }
    /// Pins those and records the piece; `wanted`: each output also comes back to the host.
    /// Throws, having unpinned them, when the device refuses it (nothing is then in flight).
    void submit(const std::vector<bool>& wanted) {
        wanted_.reset(new bool[wanted.size()]);
        std::copy(wanted.begin(), wanted.end(), wanted_.get());
        for (auto& v : pinned_) table_.pin(v);
        held_ = true;
        try {
            device_.submit({&piece_.region, piece_.inputs, piece_.outputs, {wanted_.get(), wanted.size()},
                            [this](std::exception_ptr e) {
                                std::lock_guard lock(mutex_);
                                error_ = e;
                                done_ = true;
                                landed_.store(true, std::memory_order_release);
                                cv_.notify_all();
                            },
                            [this](double seconds) { kernel_s_ = seconds; }});
        } catch (...) {
            unpin();
            throw;
        }
        submitted_ = true;
    }
    /// Waits until it is done (at once when it was never submitted), unpins: its error, or null.
    std::exception_ptr wait() {
        if (submitted_) {
            if (waiters_poll(device_)) poll_for([&] { return landed_.load(std::memory_order_acquire); }, kSpin);
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return done_; });
        }
        unpin();
        return error_;
    }
    /// Seconds its kernels took on the device (timestamp queries; 0: unknown), once waited for.
    double kernel_s() const noexcept { return kernel_s_; }
    ~PieceFlight() { wait(); }  // (its callback must not outlive it)

private:
    void unpin() {
        if (held_)
            for (auto& v : pinned_) table_.unpin(*v);
        held_ = false;
    }

    StreamPiece piece_;
    Backend& device_;
    ResidencyTable& table_;
    std::vector<std::shared_ptr<Value>> pinned_;
    std::unique_ptr<bool[]> wanted_;
    std::mutex mutex_;
    std::condition_variable cv_;
    static constexpr std::chrono::microseconds kSpin{2000};
    bool held_ = false, submitted_ = false, done_ = false;
    std::atomic<bool> landed_{false};  // done_, read without the lock
    std::exception_ptr error_;
    double kernel_s_ = 0;  // (written before the completion callback, read after wait)
};

}  // namespace tandem::detail
