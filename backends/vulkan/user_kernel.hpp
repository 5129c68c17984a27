// A user kernel's GLSL body as a complete compute shader: its accessors as buffer references
// (read-only where the group only reads), their subscripts as macros, its scalars as consts, the
// item index computed from the invocation; addresses, extents and scalars in push constants, so a
// kernel compiles once per structure whatever its buffers' sizes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "graph/kernel_call.hpp"

namespace tandem::detail::vk {

inline constexpr std::uint32_t kUserKernelWorkgroup = 256;

/// How a kernel's items map to invocations: the range's shape as the dispatch's grid (a
/// workgroup of 256 x 1 x 1, 32 x 8 x 1 or 8 x 8 x 4 items by the range's dimensions: no
/// division per item), or, for a range whose grid exceeds a dispatch's 65535 workgroups a
/// dimension, a linear index split into the item's (a division and a remainder per item).
/// On a large 2-D or 3-D range an invocation runs `per_invocation` items along the last
/// dimension, one after the other: neighbours' loads are shared (a stencil reads the column
/// beside its own; on an H100 the heat step goes from 0.102 to 0.096 ms with 4), and a million
/// invocations or more are left to fill the device.
struct UserKernelGrid {
    bool linear = false;
    std::array<std::uint32_t, 3> local{kUserKernelWorkgroup, 1, 1};
    std::array<std::uint32_t, 3> groups{0, 0, 0};  ///< the dispatch's (0 anywhere: no item)
    std::uint32_t per_invocation = 1;  ///< items an invocation runs, along dimension `last`
    std::uint32_t last = 0;
};
/// Invocations a range keeps at least when its items are shared out several to one.
inline constexpr std::uint64_t kUserKernelMinInvocations = std::uint64_t{1} << 20;
UserKernelGrid user_kernel_grid(const KernelCall& call);

/// The compute shader of `call` (its key names the kernel and hashes the whole text).
Kernel user_kernel(const KernelCall& call);

/// A kernel region's shader, and its pipeline once built (kept in the region's memo).
struct UserKernel {
    explicit UserKernel(Kernel k) : kernel(std::move(k)) {}
    Kernel kernel;
    mutable std::atomic<const ComputePipeline*> pipeline{nullptr};
};
/// Its push constants: the accessors' addresses (in order), the scalars, the item count, the
/// range and the accessors' extents, laid out as user_kernel() declares them.
std::vector<std::byte> user_kernel_push(const KernelCall& call, const std::vector<std::uint64_t>& addresses);
/// glslang's complaint about the shader of `call` (ShaderCompileError's text) in the terms of the
/// body its author wrote: each error with the body's own line number and that line.
std::string user_kernel_compile_error(const KernelCall& call, const std::string& compiler_message);

}  // namespace tandem::detail::vk
