// Reduced-precision matrix products on a Vulkan device (MatmulPrecision, tandem/linalg.hpp):
//
// - GemmCoopmat: the f16 product on tensor cores through VK_NV_cooperative_matrix
//   (shaders/gemm_coopmat.glsl), D = act(alpha * f16(op(A)) * f16(op(B)) + beta * C + bias) with f32
//   operands and result, sums in f32, the epilogue as the f32 GEMM's (gemm.hpp). The operands are rounded either by two packing dispatches into half-size
//   temporaries first (pack_f16_kernel, CoopmatInput::f16, the default) or while the kernel stages
//   its tiles through shared memory (CoopmatInput::f32); the tiles reach shared memory as halves
//   either way. Only on devices whose DeviceDescription::coopmat_f16 is set (Context then enables
//   the extension, shaderFloat16 and the Vulkan memory model). glslang 12 (Debian 12) compiles
//   GL_NV_cooperative_matrix but neither GL_KHR_cooperative_matrix nor bfloat16 types, so bf16
//   has no tensor-core path here.
// - round_kernel / record_round: x -> round_to_f16(x) or round_to_bf16(x) (the bits of
//   backends/cpu/gemm.cpp's) into a temporary, for the products that run through the f32 GEMM
//   (gemm.hpp): bf16 everywhere, f16 on devices without the extension (lavapipe).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/gemm.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "graph/region.hpp"
#include "tandem/linalg.hpp"

namespace tandem::detail::vk {

/// The MatmulPrecision of a matmul region.
inline MatmulPrecision matmul_precision_of(const Region& r) noexcept {
    return static_cast<MatmulPrecision>(r.matmul_precision);
}

/// How the tensor-core kernel converts f32 to f16 while staging the tiles.
enum class CoopmatConversion : std::uint8_t {
    hardware,  ///< the GPU's f32 -> f16 conversion (round to nearest even on NVIDIA; checked by the tests)
    exact,     ///< integer arithmetic with the bits of round_to_f16 (for devices whose conversion differs)
};

/// What the tensor-core kernel reads.
enum class CoopmatInput : std::uint8_t {
    f32,  ///< the f32 operands, converted (CoopmatConversion) while the tiles are staged
    f16,  ///< halves already rounded by pack_f16_kernel (exact: round_to_f16's bits) into temporaries
};

/// One tiling of the tensor-core kernel: the workgroup computes a bm x bn tile of D in steps of bk
/// along k with warps_m x warps_n subgroups of 32, each owning a (bm / warps_m) x (bn / warps_n)
/// block of fragments; tiles are visited in groups of group_m tile rows; stages: 1 or 2 shared
/// buffers of the tiles.
struct CoopmatTiles {
    std::uint32_t bm = 128, bn = 128, bk = 32, warps_m = 2, warps_n = 4, group_m = 8, stages = 1;

    std::uint32_t workgroup_size() const noexcept { return 32 * warps_m * warps_n; }
    /// Shared memory of one workgroup (the f16 tiles and the f32 scratch fragments).
    std::uint32_t shared_bytes(const DeviceDescription::CoopmatShape& f) const noexcept;
    /// "128x128x32/2x4g8" ("...s2" with two stages).
    std::string name() const;
    /// Empty if valid for fragments `f`, else why not.
    std::string invalid_reason(const DeviceDescription::CoopmatShape& f) const;
    /// Empty if it also fits `device` (shared memory, invocations), else why not.
    std::string unfit_reason(const DeviceDescription& device) const;

    bool operator==(const CoopmatTiles&) const = default;
};

/// Bytes of the tensor-core kernel's push constants.
inline constexpr std::uint32_t kCoopmatPushBytes = 96;

/// The kernel for one variant. vec_loads: 16-byte loads of interior groups (gemm_coopmat_vec_loads).
/// Throws ValueError for an invalid tiling.
Kernel gemm_coopmat_kernel(const DeviceDescription::CoopmatShape& fragment, const CoopmatTiles& tiles, bool trans_a,
                           bool trans_b, bool vec_loads, CoopmatConversion conversion,
                           CoopmatInput input = CoopmatInput::f32, GemmActivation activation = GemmActivation::none);

/// Whether `args` allows the 16-byte loads (A and B 16-byte aligned; lda and ldb multiples of 4
/// for f32, of 8 for packed halves).
bool gemm_coopmat_vec_loads(const GemmArgs& args, CoopmatInput input = CoopmatInput::f32) noexcept;

/// dst (packed halves) = round_to_f16(src[i]) for `count` floats, as binary16 bits (integer
/// arithmetic, exact); push constants as round_kernel's. dst needs packed_f16_bytes(count).
Kernel pack_f16_kernel();
inline std::uint64_t packed_f16_bytes(std::uint64_t count) noexcept { return (count * 2 + 15) / 16 * 16; }
/// Records the packing of `count` floats (one dispatch; nothing for 0). No barrier recorded.
void record_pack_f16(VkCommandBuffer cmd, const ComputePipeline& pipeline, VkDeviceAddress src, VkDeviceAddress dst,
                     std::uint64_t count);

/// The tiling for `device` (its first candidate that fits). Throws DeviceError without coopmat_f16.
CoopmatTiles choose_coopmat_tiles(const DeviceDescription& device);

/// Records f16 tensor-core products. Cheap to construct (pipelines live in the PipelineCache);
/// thread-safe.
class GemmCoopmat {
public:
    /// Whether `device` has the tensor-core path (DeviceDescription::coopmat_f16).
    static bool available(const DeviceDescription& device) noexcept { return device.coopmat_f16.m != 0; }

    /// Throws DeviceError if the context's device does not have it.
    GemmCoopmat(const Context& context, PipelineCache& pipelines);

    /// Overrides the tiling (benchmarks, tests): ValueError if invalid, DeviceError if it does not fit.
    void set_tiles(const CoopmatTiles& tiles);
    CoopmatTiles tiles() const;
    void set_conversion(CoopmatConversion conversion);
    CoopmatConversion conversion() const;
    /// What record() takes as A and B: packed halves (the default: on the H100 1-8% faster than
    /// converting while staging, and exact whatever the GPU's conversion does) or f32.
    void set_input(CoopmatInput input);
    CoopmatInput input() const;

    /// The pipeline `args` needs, compiled (or loaded) now.
    const ComputePipeline& pipeline(const GemmArgs& args);

    /// Records D = act(alpha * f16(op(A)) * f16(op(B)) + beta * C + bias) into `cmd` (one dispatch;
    /// nothing for an empty D; the epilogue alone for k = 0), the epilogue as Gemm's (each step
    /// rounded on its own; C and the bias are not rounded to half). args.dtype f32, else ValueError
    /// (nothing recorded), as for bad sizes or addresses. With input() f16, args.a and args.b are
    /// packed halves (pack_f16_kernel of the f32 operands, same leading dimensions). Barriers as
    /// Gemm::record: none recorded.
    void record(VkCommandBuffer cmd, const GemmArgs& args);

    /// Workgroups of `args` with the current tiles (tiles of D).
    std::uint64_t workgroups(const GemmArgs& args) const;

private:
    const Context& context_;
    PipelineCache& pipelines_;
    mutable std::mutex mutex_;
    CoopmatTiles tiles_;
    CoopmatConversion conversion_ = CoopmatConversion::hardware;
    CoopmatInput input_ = CoopmatInput::f16;  // measured: as fast or faster than f32 at every tiling
};

/// Empty if the tensor-core kernel can run `args`, else why not.
std::string gemm_coopmat_invalid_reason(const GemmArgs& args);

/// Push constants of the rounding kernel: uint64 source, uint64 destination, uint64 count.
inline constexpr std::uint32_t kRoundPushBytes = 24;
inline constexpr std::uint32_t kRoundWorkgroup = 256;

/// dst[i] = round_to_f16(src[i]) or round_to_bf16(src[i]) (f32 arrays, integer arithmetic: the
/// bits the CPU computes). `precision` f16 or bf16, else ValueError.
Kernel round_kernel(MatmulPrecision precision);

/// Records the rounding of `count` floats (one dispatch; nothing for 0). No barrier recorded.
void record_round(VkCommandBuffer cmd, const ComputePipeline& pipeline, VkDeviceAddress src, VkDeviceAddress dst,
                  std::uint64_t count);

}  // namespace tandem::detail::vk
