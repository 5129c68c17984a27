// GLSL generation for a fused region. Kernels are shape-agnostic and constant-agnostic: sizes,
// strides and array addresses travel in a small argument block, scalars in push constants
// (arguments.hpp: the layout, and pack_arguments, which fills it), so one pipeline serves every
// size and every constant value of the same expression.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/vulkan/arguments.hpp"
#include "graph/region.hpp"

namespace tandem::detail::vk {

struct CodegenOptions {
    std::uint32_t workgroup_size = 256;     ///< invocations per workgroup
    /// Elements each invocation computes. Workgroup g covers the tile of workgroup_size *
    /// elements_per_thread consecutive elements from g * tile; invocation l of it computes
    /// elements l, l + workgroup_size, l + 2 * workgroup_size, ... of the tile, so each
    /// subgroup's loads and stores of one step are contiguous (coalesced) on every device.
    std::uint32_t elements_per_thread = 4;
    /// The contiguous fast path (see Kernel::vector_width): used when no input is strided and the
    /// element count fits in 32 bits. Off: every kernel takes the general path (tests compare them).
    bool contiguous_fast_path = true;
    /// Map a folded remap's positions in 32-bit integers where its input allows (InputWalk's upper
    /// case). Off: always in 64 bits (tests compare the two, bit for bit).
    bool narrow_maps = true;
    /// Write a run of repeated steps in the program (graph/repeat.hpp: a loop in the user's code)
    /// as a loop, so that the kernel's size and compile time do not grow with the step count.
    /// Off: straight-line code (tests compare the two, bit for bit).
    bool loops = true;
    std::uint32_t max_push_bytes = 128;     ///< the device's maxPushConstantsSize
    /// Correct f64 `/` and `sqrt` to IEEE round-to-nearest with an exact (Dekker) residual.
    /// Off by default: lavapipe's (and NVIDIA's/AMD's) f64 division and sqrt are measured IEEE
    /// (tests/test_vulkan_codegen.cpp checks lavapipe); Vulkan itself promises less, so a
    /// device that fails the check should turn this on. f32 `/` and `sqrt` are always computed
    /// in f64 and rounded once, which is exact (53 >= 2*24 + 2) whatever the device's f32 ops.
    bool exact_f64_div_sqrt = false;
    std::uint32_t max_shared_bytes = 32768;  ///< the device's maxComputeSharedMemorySize
    bool subgroup_shuffle = false;           ///< reductions combine with subgroup shuffles (where a subgroup holds 32 lanes)
    /// Kernels keep fp32 subnormals (the device supports DenormPreserve for 32-bit floats): f32
    /// arithmetic then gives the CPU's bits there too.
    bool preserve_f32_denormals = false;
    /// Kernels ask for signed zeros, infinities and NaN to be kept (the device supports
    /// SignedZeroInfNanPreserve for 32- and 64-bit floats).
    bool preserve_signed_zeros = false;
    /// Single-precision arithmetic, comparisons and conversions guarded against a device that may
    /// flush fp32 subnormals (one that cannot promise DenormPreserve: NVIDIA, lavapipe): where a
    /// subnormal is involved they are redone from exact conversions, giving the CPU's bits. Off:
    /// plain float operations.
    bool f32_guarded = false;
    std::uint32_t reduction_workgroup_size = 256;  ///< invocations per workgroup of reduce kernels
    std::uint64_t reduction_threads = 0;           ///< see plan_reduce (0: kStridedThreads)
};

/// The generated kernel and what the backend needs to launch it.
struct Kernel {
    std::string glsl;                      ///< complete source, `#version 450` first
    std::string key;                       ///< stable text identifying the kernel (hash input)
    std::uint32_t workgroup_size = 0;
    /// Elements each invocation computes (at most; the last invocations may have fewer).
    std::uint32_t elements_per_thread = 0;
    /// 1: the general path (64-bit indices, one element per step, strided inputs allowed).
    /// V > 1: the contiguous fast path, for regions whose inputs are all full or scalar and whose
    /// element count is below 2^32 (generate() decides from the region; the key says which):
    /// 32-bit indices; each step of an invocation loads and stores V consecutive elements of every
    /// full array at once (dvec2 for f64, vec4 for f32, V = 2 when any full array is f64, else 4),
    /// invocation l of a workgroup taking vector l, l + workgroup_size, ... of the group's tile,
    /// so a subgroup's accesses of one step are consecutive 16-byte chunks; the last count % V
    /// elements are done, one at a time, by the invocation whose vector index is count / V.
    /// Arrays must start 4 * V-byte aligned (DeviceHeap's are 256-byte aligned).
    std::uint32_t vector_width = 1;
    std::uint32_t push_bytes = 0;          ///< size of the push-constant block
    std::vector<InputAccess> access;       ///< per region input
    std::vector<InputWalk> walks;          ///< per region input: how it is walked (strided only)
    /// Reduce regions: the combine passes (folding each output's chunk partials, a level a
    /// dispatch), compiled only when a launch needs it; same push constants (the count: the
    /// level) and argument block.
    std::string combine_glsl, combine_key;
    /// Reduce regions with a tail (Region::tail): the tail's own kernel, of which both passes
    /// paste the per-element code as a function, and where its argument block starts (after the
    /// region's own, pack_arguments fills both).
    std::shared_ptr<const Kernel> tail;
    std::uint64_t reduction_threads = 0;  ///< reduce kernels: the plan_reduce setting they were made for
    std::uint64_t tail_args_offset = 0;
};

/// Writes the kernel for `region` with the given input accesses (see access_for); the contiguous
/// fast path when the accesses and the region's element count allow it (Kernel::vector_width).
/// The kernel then serves every region of the same expression below 2^32 elements;
/// pack_arguments refuses it (DeviceError) for a region of 2^32 elements or more.
Kernel generate(const Region& region, std::span<const InputAccess> access, std::span<const InputWalk> walks,
                const CodegenOptions& options);

}  // namespace tandem::detail::vk
