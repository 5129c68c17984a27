// Placement: which backend runs a region. Today the CPU executor is the only backend, so every
// region goes there; the Vulkan backend brings the calibrated, transfer-aware cost model that
// chooses between them (earliest finish time, StarPU's dmda), behind this same call.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace tandem::detail {

struct PlacementDecision {
    Backend* backend;
    std::string reason;  ///< for TANDEM_LOG=exec
};

class Placement {
public:
    /// `backends`: those available, the CPU executor first (it can run every region).
    explicit Placement(std::vector<Backend*> backends);
    PlacementDecision place(const Region& region) const;

private:
    std::vector<Backend*> backends_;
};

}  // namespace tandem::detail
