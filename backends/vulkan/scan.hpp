// The scan kernel (cumsum, cumprod, cummax, cummin): an invocation per line along the scanned
// dimension, walking it in order with the running value in double -- the CPU's order and
// arithmetic, so the same bits. Consecutive invocations take consecutive lines (coalesced when
// the scanned dimension is not the first). One kernel per (op, element type).
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"
#include "graph/op_table.hpp"

namespace tandem::detail::vk {

/// Push constants: uint64 source, destination, carry, inner, len, outer, first, last.
inline constexpr std::uint32_t kScanPushBytes = 64;
inline constexpr std::uint32_t kScanWorkgroup = 256;
/// Steps of a line one dispatch walks: a longer line is walked by several dispatches in turn,
/// each starting from the running values the last one left (in double) in a carry buffer.
/// llvmpipe (lavapipe) ends an invocation's loops after 65535 iterations in all, silently: a
/// cumsum of 70000 elements came back with its tail 0.
inline constexpr std::uint64_t kScanStepsPerDispatch = 32768;

Kernel scan_kernel(OpKind op, DType dtype);

}  // namespace tandem::detail::vk
