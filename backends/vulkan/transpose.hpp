// The 2-D transpose kernel: 32 x 32 tiles through shared memory (one row of padding against bank
// conflicts), so both the reads of the source's columns and the writes of the result's columns
// are coalesced. One kernel per element type; sizes and addresses in push constants.
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"
#include "tandem/dtype.hpp"

namespace tandem::detail::vk {

/// Push constants: uint64 source address, uint64 destination address, uint32 rows, uint32 cols
/// of the source (column-major); the result is cols x rows.
inline constexpr std::uint32_t kTransposePushBytes = 24;
inline constexpr std::uint32_t kTransposeTile = 32;

Kernel transpose_kernel(DType dtype);

}  // namespace tandem::detail::vk
