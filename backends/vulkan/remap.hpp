// The remap kernel (flip, circshift, repmat, ranges): an invocation per output element reads
// input position (a k + b) mod n along one dimension. One kernel per element type; the mapping in
// push constants.
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"

namespace tandem::detail::vk {

/// Push constants: uint64 source, destination; int64 inner, out_len, outer, in_len, a, b.
inline constexpr std::uint32_t kRemapPushBytes = 64;
inline constexpr std::uint32_t kRemapWorkgroup = 256;

Kernel remap_kernel(DType dtype);

}  // namespace tandem::detail::vk
