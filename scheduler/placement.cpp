#include "scheduler/placement.hpp"

namespace tandem::detail {

Placement::Placement(Backend& cpu, Backend* device, std::int64_t min_device_elements)
    : cpu_(&cpu), device_(device), min_device_elements_(min_device_elements) {}

PlacementDecision Placement::place(const Region& region) const {
    if (region.kind == RegionKind::view) return {cpu_, "a view: shares its input's value"};
    if (!device_ || !device_enabled_.load()) return {cpu_, "cpu only"};
    if (region.shape.numel() < min_device_elements_) return {cpu_, "small: below device_min_elements"};
    if (region.kind == RegionKind::concat && region.reduce_extents().outer * static_cast<std::int64_t>(region.inputs.size()) > 4096)
        return {cpu_, "a concatenation of many short runs (copy regions)"};
    if (region.kind == RegionKind::scan) {
        // A device scan runs an invocation per line: few lines leave the GPU idle.
        const auto e = region.reduce_extents();
        if (e.inner * e.outer * 64 < min_device_elements_) return {cpu_, "a scan of too few lines for the device"};
    }
    return {device_, "large enough for the device"};
}

}  // namespace tandem::detail
