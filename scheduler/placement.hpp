// Placement: which backend runs a region. With a device present, a region goes to the device
// when it is large enough to pay for a submission (Config::device_min_elements); the calibrated,
// transfer-aware cost model (earliest finish time, StarPU's dmda) is the scheduler issue's, and
// will replace this rule behind the same call.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "backends/backend.hpp"

namespace tandem::detail {

struct PlacementDecision {
    Backend* backend = nullptr;
    const char* reason = "";  ///< for TANDEM_LOG=exec
};

class Placement {
public:
    /// `device` may be null (CPU only). Regions of at least `min_device_elements` elements go
    /// to the device.
    Placement(Backend& cpu, Backend* device, std::int64_t min_device_elements);
    PlacementDecision place(const Region& region) const;
    Backend& cpu() const noexcept { return *cpu_; }
    Backend* device() const noexcept { return device_; }
    /// Sends no more work to the device (after it was lost).
    void disable_device() noexcept { device_enabled_.store(false); }

private:
    Backend* cpu_;
    Backend* device_;
    std::int64_t min_device_elements_;
    std::atomic<bool> device_enabled_{true};
};

}  // namespace tandem::detail
