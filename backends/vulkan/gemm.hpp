// Matrix multiply on a Vulkan device: a tiled, register-blocked GEMM compute shader
// (shaders/gemm.glsl) for f32 and f64 with a fused elementwise epilogue,
//   D = act(alpha * op(A) * op(B) + beta * C + bias),
// column-major, op = none or transpose (read in place through the stored layout: nothing is
// copied), bias a vector added along rows (length m) or columns (length n), act none or relu.
// Arrays are device addresses (GL_EXT_buffer_reference, as in the rest of the backend: no
// descriptor sets); D may be C when k <= kMatmulChunk (beyond, D holds the chunk sums).
// Standalone: the graph's matmul node records it through Gemm.
//
// Tiles are chosen per device and element type from its DeviceDescription (choose_gemm_tiles):
// the workgroup's shared memory (two buffers of the A and B tiles) must fit the device's
// maxComputeSharedMemorySize -- 48 KiB on NVIDIA, 32 KiB on lavapipe -- and its invocations
// maxComputeWorkGroupInvocations.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "tandem/dtype.hpp"

namespace tandem::detail::vk {

/// One tiling of the GEMM kernel: the workgroup computes a bm x bn tile of D in steps of bk
/// along k; each of its (bm / tm) * (bn / tn) invocations holds a tm x tn register tile.
struct GemmTiles {
    std::uint32_t bm = 64, bn = 64, bk = 8, tm = 4, tn = 4;
    /// Elements per vector of the shared tiles and register fragments: 0 for the widest (16-byte
    /// vec4 / dvec2), else 1, 2 or 4 (at most 16 bytes).
    std::uint32_t vw = 0;
    /// How the invocations of each group of 32 (an NVIDIA warp) share the tile: 0 puts them along m
    /// (invocation i at row-thread i % (bm / tm)); 2, 4, 8 or 16 makes a wm x (32 / wm) block of
    /// row-threads x column-threads in which lanes 2i, 2i+1 load the same A fragment and lanes i,
    /// i^2 the same B fragment (pairs that NVIDIA's shared memory may return in one cycle; no
    /// faster on the H100). Every layout is correct on any device; only speed differs.
    std::uint32_t wm = 0;
    /// 1: one vector of padding per row of the shared tiles (against bank conflicts of the stores
    /// that transpose); 0: none, which lets a deeper bk fit the device's shared memory.
    std::uint32_t pad = 1;

    /// The vector width used for `dtype` (vw, or the 16-byte default).
    std::uint32_t vector_width(DType dtype) const noexcept;

    std::uint32_t workgroup_size() const noexcept { return (bm / tm) * (bn / tn); }
    /// Shared memory of one workgroup for `dtype`: two buffers of the bk x bm and bk x bn tiles,
    /// in vectors of vector_width(dtype) elements, `pad` vectors of padding per row.
    std::uint32_t shared_bytes(DType dtype) const noexcept;
    /// "128x128x8/8x8" (and "v1" etc. when vw is set, "w8" etc. when wm is, "p0" without padding).
    std::string name() const;
    /// Empty if the tiling is valid for `dtype` (divisibility; every invocation loads the same
    /// number of elements of each tile), else why not.
    std::string invalid_reason(DType dtype) const;
    /// Empty if it also fits `device` (shared memory, workgroup invocations), else why not.
    std::string unfit_reason(DType dtype, const DeviceDescription& device) const;

    bool operator==(const GemmTiles&) const = default;

};

enum class GemmBias : std::uint8_t {
    none,
    per_row,     ///< bias has m elements: D(i, j) += bias[i] (MATLAB's A*B + b with b a column)
    per_column,  ///< bias has n elements: D(i, j) += bias[j] (A*B + b with b a row)
};

/// relu: MATLAB's max(x, 0) (NaN gives 0); relu_zero_first: max(0, x), which keeps a -0.
enum class GemmActivation : std::uint8_t { none, relu, relu_zero_first };

/// One product. Addresses are device addresses of arrays of `dtype` elements, each aligned to
/// the element size (DeviceHeap's are 256-byte aligned). Leading dimensions are in elements.
struct GemmArgs {
    DType dtype = DType::f32;
    bool trans_a = false, trans_b = false;
    std::uint32_t m = 0, n = 0, k = 0;  ///< op(A) is m x k, op(B) k x n, C and D m x n
    VkDeviceAddress a = 0, b = 0;
    VkDeviceAddress c = 0;              ///< read only when beta != 0 (BLAS: beta == 0 ignores C, NaN included)
    VkDeviceAddress d = 0;              ///< the result; may equal c when k <= kMatmulChunk (ValueError otherwise)
    VkDeviceAddress bias = 0;           ///< read only when bias_mode != none
    std::uint32_t lda = 0, ldb = 0, ldc = 0, ldd = 0;  ///< A stored m x k (k x m transposed), B k x n (n x k)
    double alpha = 1, beta = 0;         ///< rounded to float for f32
    GemmBias bias_mode = GemmBias::none;
    GemmActivation activation = GemmActivation::none;
    /// D = A' A or A A' (b == a, one operand transposed, so m == n): D is symmetric and only the
    /// tiles on and above the diagonal are computed, each stored twice (record() falls back to
    /// the whole grid where the tiling is not square). The same bits as the full product: both
    /// halves' elements are the same products summed in the same order.
    bool symmetric = false;
};

/// The tiling Tandem uses for `dtype` on `device`: the first of its candidates (largest first)
/// that fits the device. Throws DeviceError if none fits (a device below Vulkan's minimum limits).
GemmTiles choose_gemm_tiles(const DeviceDescription& device, DType dtype);

/// The kernel (GLSL source, cache key, workgroup size, push-constant bytes) for one variant.
/// Throws ValueError for an invalid tiling (GemmTiles::invalid_reason).
/// `defines`: extra preprocessor lines pasted before shaders/gemm.glsl (experiments, e.g.
/// "#define MAD(a, b, c) ((a) * (b) + (c))"); part of the cache key.
/// `symmetric`: the variant that computes the upper triangle of tiles of a symmetric D (GemmArgs).
/// `split`: the split-K variant (record_split's).
Kernel gemm_kernel(DType dtype, bool trans_a, bool trans_b, GemmActivation activation, const GemmTiles& tiles,
                   const std::string& defines = "", bool symmetric = false, bool split = false);

/// Bytes of the push-constant block of every GEMM kernel.
inline constexpr std::uint32_t kGemmPushBytes = 104;

/// Records GEMMs into command buffers, with pipelines from a PipelineCache. Thread-safe.
class Gemm {
public:
    /// Tiles from choose_gemm_tiles for each element type.
    Gemm(const Context& context, PipelineCache& pipelines);

    /// Overrides the tiling of `dtype` (benchmarks, tests). Throws ValueError if it is invalid,
    /// DeviceError if it does not fit the device.
    void set_tiles(DType dtype, const GemmTiles& tiles);
    GemmTiles tiles(DType dtype) const;
    /// Extra #define lines for `dtype`'s kernels (gemm_kernel's `defines`; benchmarks).
    void set_defines(DType dtype, std::string defines);

    /// The pipeline `args` needs (`split`: record_split's variant), compiled (or loaded) now: a
    /// later record() of the same variant does not compile.
    const ComputePipeline& pipeline(const GemmArgs& args, bool split = false);
    /// Whether pipeline(args, split) is built already (it would not compile).
    bool built(const GemmArgs& args, bool split = false) const;
    /// What identifies pipeline(args, split)'s kernel among this device's GEMM variants.
    std::uint32_t variant(const GemmArgs& args, bool split = false) const;

    /// Records the product into `cmd`: bind, push constants, dispatch (several dispatches when
    /// the grid exceeds 65535 workgroups along a dimension); nothing for an empty D. No barrier
    /// is recorded: the caller makes A, B, C and bias visible to compute-shader reads before,
    /// and orders D's compute-shader writes before its next use after. Throws ValueError for
    /// invalid arguments (nothing recorded), ShaderCompileError / DeviceError from the pipeline.
    void record(VkCommandBuffer cmd, const GemmArgs& args);

    /// Dispatch geometry of `args` with the current tiles (workgroups along m and n).
    std::pair<std::uint32_t, std::uint32_t> grid(const GemmArgs& args) const;
    /// Output tiles `args` computes: the grid, or its upper triangle for a symmetric product.
    std::uint64_t tile_count(const GemmArgs& args) const;

    // ---- split-K: a product with few output tiles and a long inner dimension (X'X of a tall X:
    // 128 x 128 from k = 65536) keeps a few workgroups busy and the rest of the device idle. Its
    // k is split into the canonical order's chunks (graph/matmul_order.hpp), each a GEMM into its
    // own m x n slice of a scratch buffer, then the slices are summed in order: the same bits as
    // the unsplit kernel and the CPU.
    /// The parts for `args` (1: not split). Split only without an epilogue and with ldd == m.
    std::uint32_t split_parts(const GemmArgs& args) const;
    /// Scratch bytes record_split needs for `parts` a wave.
    static std::uint64_t split_scratch_bytes(const GemmArgs& args, std::uint32_t parts);
    /// The kernel that sums the slices (split_sum's pipeline; compile it before recording).
    static Kernel split_sum_kernel(DType dtype);
    /// Records the chunks in waves of `parts` (split_parts'; at least 2), each a dispatch of one
    /// workgroup per tile and chunk into the scratch's slices, a barrier, and their sum onto
    /// args.d with `sum` (split_sum_kernel's pipeline), then a barrier before the next wave. The
    /// caller's barriers as for record(). Returns the dispatches recorded.
    std::uint32_t record_split(VkCommandBuffer cmd, const GemmArgs& args, std::uint32_t parts, VkDeviceAddress scratch,
                               const ComputePipeline& sum);

private:
    /// Binds the pipeline and dispatches the grid (split: GemmPush::split; parts: workgroups
    /// along z). Returns the dispatches recorded.
    std::uint32_t dispatch(VkCommandBuffer cmd, const GemmArgs& args, std::uint32_t split, std::uint32_t parts);

    const Context& context_;
    PipelineCache& pipelines_;
    mutable std::mutex mutex_;
    GemmTiles f32_, f64_;
    std::string f32_defines_, f64_defines_;
    std::map<std::uint32_t, const ComputePipeline*> variants_;  // pipeline(): by dtype, transposes, symmetry, activation
};

/// Checks `args` against `tiles` (sizes, leading dimensions, alignment, addresses, the 32-bit
/// offsets the kernel uses inside a tile); empty if valid, else why not.
/// The checks every GEMM kernel makes of its operands (leading dimensions, addresses and their
/// alignment to the element size); empty if they hold. gemm_invalid_reason adds the tiling's.
std::string gemm_operands_invalid_reason(const GemmArgs& args);
std::string gemm_invalid_reason(const GemmArgs& args, const GemmTiles& tiles);

}  // namespace tandem::detail::vk
