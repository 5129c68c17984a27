// The scan kernel (cumsum, cumprod, cummax, cummin): an invocation per line along the scanned
// dimension, walking it in order with the running value in double -- the CPU's order and
// arithmetic, so the same bits. Consecutive invocations take consecutive lines (coalesced when
// the scanned dimension is not the first). One kernel per (op, element type).
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"
#include "graph/op_table.hpp"

namespace tandem::detail::vk {

/// Push constants: uint64 source, uint64 destination, uint64 inner, len, outer.
inline constexpr std::uint32_t kScanPushBytes = 40;
inline constexpr std::uint32_t kScanWorkgroup = 256;

Kernel scan_kernel(OpKind op, DType dtype);

}  // namespace tandem::detail::vk
