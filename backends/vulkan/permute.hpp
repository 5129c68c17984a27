// permute kernels (graph/permute_plan.hpp): where the output's first dimension is contiguous in
// the input, an invocation per output element (reads and writes both coalesced); otherwise
// 32 x 32 tiles of the plane (output dimension 0, the input's contiguous one) through shared
// memory, batched over the other dimensions (the z grid, walked in steps past 65535).
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"

namespace tandem::detail::vk {

/// Dimensions the kernels take after the plan's merging (more: the region runs on the CPU).
inline constexpr int kPermuteMaxDims = 8;

struct PermuteRunsPush {
    std::uint64_t src, dst;
    std::uint32_t dims, numel;
    std::uint32_t extent[kPermuteMaxDims], in_stride[kPermuteMaxDims];
};

struct PermuteTilePush {
    std::uint64_t src, dst;
    std::uint32_t na, nb, sa, ob;  ///< the plane: output dim 0 (input stride sa), contiguous dim (output stride ob)
    std::uint32_t batch_dims, batch;
    std::uint32_t batch_extent[kPermuteMaxDims - 2], batch_in[kPermuteMaxDims - 2], batch_out[kPermuteMaxDims - 2];
};

Kernel permute_kernel(DType dtype, bool tiled);

}  // namespace tandem::detail::vk
