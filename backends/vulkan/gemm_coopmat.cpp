// The tensor-core GEMM (shaders/gemm_coopmat.glsl) and the rounding kernel of reduced-precision
// products. See gemm_coopmat.hpp.
#include "backends/vulkan/gemm_coopmat.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "tandem_shaders.hpp"

namespace tandem::detail::vk {
namespace {

constexpr std::uint32_t kMaxGroups = 65535;

/// What gemm_coopmat.glsl's push-constant block holds (std430: this layout, 96 bytes).
struct CoopmatPush {
    std::uint64_t a, b, d;
    std::uint64_t c, bias;
    std::uint32_t m, n, k;
    std::uint32_t lda, ldb, ldd, ldc;
    std::uint32_t tiles_m, tiles_n;
    std::uint32_t flags;
    float alpha, beta;
    std::uint32_t bias_si, bias_sj;
};
static_assert(sizeof(CoopmatPush) == kCoopmatPushBytes);

/// Candidates, best first. Measured on the H100 (bench/bench_gemm_coopmat.cpp, 4096^3, NN and TN,
/// halves packed first, 2026-11-22): 128x128x64/2x4 142 and 144 TFLOP/s; 128x128x32/2x2 149 but
/// 88 (its 64-byte rows of k-contiguous tiles); 256x128x32/4x2 135/133; 128x256x32/2x4 131/134;
/// 128x128x32/2x4 107 (NN); two stages of 128x128x32/2x2 114/109; 128x128x64/2x2 25 (spills).
std::vector<CoopmatTiles> candidates() {
    return {{128, 128, 64, 2, 4, 8}, {128, 128, 32, 2, 4, 8}, {128, 64, 32, 2, 2, 8}, {64, 64, 32, 2, 2, 8},
            {32, 32, 32, 1, 1, 8}};
}

std::string shape_name(const DeviceDescription::CoopmatShape& f) {
    return std::to_string(f.m) + "x" + std::to_string(f.n) + "x" + std::to_string(f.k);
}

}  // namespace

std::uint32_t CoopmatTiles::shared_bytes(const DeviceDescription::CoopmatShape& f) const noexcept {
    // The larger of the two stored layouts of each operand (transposed or not), 8 halves of padding per row.
    const std::uint32_t a = std::max(bk * (bm + 8), bm * (bk + 8)), b = std::max(bk * (bn + 8), bn * (bk + 8));
    return 2 * stages * (a + b) + 4 * warps_m * warps_n * f.n * (f.m + 4);
}

std::string CoopmatTiles::name() const {
    std::ostringstream s;
    s << bm << 'x' << bn << 'x' << bk << '/' << warps_m << 'x' << warps_n << 'g' << group_m;
    if (stages != 1) s << 's' << stages;
    return s.str();
}

std::string CoopmatTiles::invalid_reason(const DeviceDescription::CoopmatShape& f) const {
    if (f.m == 0 || f.n == 0 || f.k == 0) return "no fragment shape";
    if (bm == 0 || bn == 0 || bk == 0 || warps_m == 0 || warps_n == 0 || group_m == 0) return "a zero size";
    if (stages != 1 && stages != 2) return "stages must be 1 or 2";
    if (bm % (warps_m * f.m) != 0) return "bm must be a multiple of warps_m * " + std::to_string(f.m);
    if (bn % (warps_n * f.n) != 0) return "bn must be a multiple of warps_n * " + std::to_string(f.n);
    if (bk % f.k != 0 || bk % 8 != 0) return "bk must be a multiple of " + std::to_string(std::max(f.k, 8u)) + " and 8";
    const std::uint32_t wg = workgroup_size();
    if (wg > 1024) return "workgroup of " + std::to_string(wg) + " invocations";
    if ((bm * bk / 8) % wg != 0 || (bn * bk / 8) % wg != 0)
        return "bm * bk / 8 and bn * bk / 8 must be multiples of the workgroup size " + std::to_string(wg);
    const std::uint32_t fragments = (bm / warps_m / f.m) * (bn / warps_n / f.n);
    if (fragments > 32) return std::to_string(fragments) + " accumulator fragments per subgroup (at most 32)";
    return {};
}

std::string CoopmatTiles::unfit_reason(const DeviceDescription& device) const {
    if (std::string why = invalid_reason(device.coopmat_f16); !why.empty()) return why;
    if (shared_bytes(device.coopmat_f16) > device.shared_memory_bytes)
        return std::to_string(shared_bytes(device.coopmat_f16)) + " bytes of shared memory (the device has " +
               std::to_string(device.shared_memory_bytes) + ")";
    if (workgroup_size() > device.max_workgroup_invocations)
        return std::to_string(workgroup_size()) + " invocations per workgroup (the device allows " +
               std::to_string(device.max_workgroup_invocations) + ")";
    return {};
}

CoopmatTiles choose_coopmat_tiles(const DeviceDescription& device) {
    if (!GemmCoopmat::available(device))
        throw DeviceError("vulkan: " + device.name + " has no tensor-core f16 path" +
                          (device.coopmat_note.empty() ? std::string(" (no VK_NV_cooperative_matrix)")
                                                       : " (" + device.coopmat_note + ")"));
    for (const CoopmatTiles& t : candidates())
        if (t.unfit_reason(device).empty()) return t;
    throw DeviceError("vulkan: no tensor-core GEMM tiling fits " + device.name);
}

Kernel gemm_coopmat_kernel(const DeviceDescription::CoopmatShape& f, const CoopmatTiles& tiles, bool trans_a,
                           bool trans_b, bool vec_loads, CoopmatConversion conversion, CoopmatInput input,
                           GemmActivation activation) {
    if (std::string why = tiles.invalid_reason(f); !why.empty())
        throw ValueError("vulkan tensor-core gemm: tiling " + tiles.name() + " with fragments " + shape_name(f) + ": " + why);
    const bool f16_in = input == CoopmatInput::f16;
    const bool exact = !f16_in && conversion == CoopmatConversion::exact;
    std::ostringstream s;
    s << "#version 460\n"
      << "#define FM " << f.m << "u\n#define FN " << f.n << "u\n#define FK " << f.k << "u\n"
      << "#define BM " << tiles.bm << "u\n#define BN " << tiles.bn << "u\n#define BK " << tiles.bk << "u\n"
      << "#define WARPS_M " << tiles.warps_m << "u\n#define WARPS_N " << tiles.warps_n << "u\n"
      << "#define GROUP_M " << tiles.group_m << "u\n"
      << "#define TRANS_A " << (trans_a ? 1 : 0) << "\n#define TRANS_B " << (trans_b ? 1 : 0) << "\n"
      << "#define VEC_LOADS " << (vec_loads ? 1 : 0) << "\n#define EXACT_CONVERT " << (exact ? 1 : 0) << "\n"
      << "#define INPUT_F16 " << (f16_in ? 1 : 0) << "\n#define STAGES " << tiles.stages << "\n"
      << "#define ACT " << static_cast<int>(activation) << "\n"
      << tandem_shader_gemm_coopmat;
    Kernel k;
    k.glsl = s.str();
    k.key = std::string("gemm_coopmat:") + shape_name(f) + ':' + tiles.name() + ':' + (trans_a ? 't' : 'n') +
            (trans_b ? 't' : 'n') + (vec_loads ? ":v4" : ":v1") + (f16_in ? ":in16" : exact ? ":exact" : ":hw") +
            ":act" + std::to_string(static_cast<int>(activation));
    k.workgroup_size = tiles.workgroup_size();
    k.elements_per_thread = 1;
    k.vector_width = 1;
    k.push_bytes = kCoopmatPushBytes;
    return k;
}

bool gemm_coopmat_vec_loads(const GemmArgs& g, CoopmatInput input) noexcept {
    const std::uint32_t per16 = input == CoopmatInput::f16 ? 8 : 4;  // elements per 16 bytes
    return g.a % 16 == 0 && g.b % 16 == 0 && g.lda % per16 == 0 && g.ldb % per16 == 0;
}

std::string gemm_coopmat_invalid_reason(const GemmArgs& g) {
    if (g.dtype != DType::f32) return "the tensor-core kernel takes single operands";
    if (std::string why = gemm_operands_invalid_reason(g); !why.empty() || g.m == 0 || g.n == 0) return why;
    // Indices inside the kernel are 32-bit: element indices along each dimension, tile origins.
    if (static_cast<std::uint64_t>(g.m) + 256 >= (1ull << 32) || static_cast<std::uint64_t>(g.n) + 256 >= (1ull << 32) ||
        static_cast<std::uint64_t>(g.k) + 256 >= (1ull << 32))
        return "m, n or k too large";
    return {};
}

GemmCoopmat::GemmCoopmat(const Context& context, PipelineCache& pipelines)
    : context_(context), pipelines_(pipelines), tiles_(choose_coopmat_tiles(context.description())) {}

void GemmCoopmat::set_tiles(const CoopmatTiles& tiles) {
    const DeviceDescription& d = context_.description();
    if (std::string why = tiles.invalid_reason(d.coopmat_f16); !why.empty())
        throw ValueError("vulkan tensor-core gemm: tiling " + tiles.name() + ": " + why);
    if (std::string why = tiles.unfit_reason(d); !why.empty())
        throw DeviceError("vulkan tensor-core gemm: tiling " + tiles.name() + " does not fit the device: " + why);
    std::lock_guard lock(mutex_);
    tiles_ = tiles;
}

CoopmatTiles GemmCoopmat::tiles() const {
    std::lock_guard lock(mutex_);
    return tiles_;
}

void GemmCoopmat::set_conversion(CoopmatConversion conversion) {
    std::lock_guard lock(mutex_);
    conversion_ = conversion;
}

CoopmatConversion GemmCoopmat::conversion() const {
    std::lock_guard lock(mutex_);
    return conversion_;
}

void GemmCoopmat::set_input(CoopmatInput input) {
    std::lock_guard lock(mutex_);
    input_ = input;
}

CoopmatInput GemmCoopmat::input() const {
    std::lock_guard lock(mutex_);
    return input_;
}

const ComputePipeline& GemmCoopmat::pipeline(const GemmArgs& args) {
    CoopmatTiles t;
    CoopmatConversion c;
    CoopmatInput in;
    {
        std::lock_guard lock(mutex_);
        t = tiles_;
        c = conversion_;
        in = input_;
    }
    return pipelines_.get(gemm_coopmat_kernel(context_.description().coopmat_f16, t, args.trans_a, args.trans_b,
                                              gemm_coopmat_vec_loads(args, in), c, in, args.activation));
}

std::uint64_t GemmCoopmat::workgroups(const GemmArgs& args) const {
    const CoopmatTiles t = tiles();
    return ((static_cast<std::uint64_t>(args.m) + t.bm - 1) / t.bm) * ((static_cast<std::uint64_t>(args.n) + t.bn - 1) / t.bn);
}

void GemmCoopmat::record(VkCommandBuffer cmd, const GemmArgs& args) {
    if (std::string why = gemm_coopmat_invalid_reason(args); !why.empty())
        throw ValueError("vulkan tensor-core gemm: " + why);
    if (args.m == 0 || args.n == 0) return;
    const CoopmatTiles t = tiles();
    const std::uint64_t tiles_m = (static_cast<std::uint64_t>(args.m) + t.bm - 1) / t.bm;
    const std::uint64_t tiles_n = (static_cast<std::uint64_t>(args.n) + t.bn - 1) / t.bn;
    const std::uint64_t total = tiles_m * tiles_n;
    const std::uint64_t gx = std::min<std::uint64_t>(total, kMaxGroups), gy = (total + gx - 1) / gx;
    if (gy > kMaxGroups || total >= (1ull << 32))
        throw ValueError("vulkan tensor-core gemm: " + std::to_string(total) + " tiles exceed one dispatch");
    const ComputePipeline& p = pipeline(args);
    CoopmatPush push{};
    push.a = args.a;
    push.b = args.b;
    push.d = args.d;
    push.m = args.m;
    push.n = args.n;
    push.k = args.k;
    push.lda = args.lda;
    push.ldb = args.ldb;
    push.ldd = args.ldd;
    push.c = args.beta != 0 ? args.c : 0;
    push.ldc = args.beta != 0 ? args.ldc : 0;
    push.beta = static_cast<float>(args.beta);
    push.bias = args.bias_mode == GemmBias::none ? 0 : args.bias;
    push.bias_si = args.bias_mode == GemmBias::per_row ? 1 : 0;
    push.bias_sj = args.bias_mode == GemmBias::per_column ? 1 : 0;
    push.tiles_m = static_cast<std::uint32_t>(tiles_m);
    push.tiles_n = static_cast<std::uint32_t>(tiles_n);
    // Fragment stores straight to D need 16-byte aligned columns (the lesser of 16 bytes and a
    // column's bytes, Vulkan's rule for OpCooperativeMatrixStoreNV), and no epilogue beyond alpha.
    const bool plain = args.beta == 0 && args.bias_mode == GemmBias::none && args.activation == GemmActivation::none;
    push.flags = (plain && args.d % 16 == 0 && args.ldd % 4 == 0) ? 1u : 0u;
    push.alpha = static_cast<float>(args.alpha);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kCoopmatPushBytes, &push);
    vkCmdDispatch(cmd, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1);
}

Kernel round_kernel(MatmulPrecision precision) {
    if (precision != MatmulPrecision::f16 && precision != MatmulPrecision::bf16)
        throw ValueError(std::string("vulkan: no rounding kernel for precision ") + to_string(precision));
    const bool f16 = precision == MatmulPrecision::f16;
    std::string glsl =
        "#version 450\n"
        "#extension GL_EXT_buffer_reference : require\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        "layout(local_size_x = 256) in;\n"
        "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };\n"
        "layout(push_constant) uniform Push { uint64_t src, dst, count; } pc;\n";
    if (f16)
        glsl +=
            // round_to_f16 (backends/cpu/gemm.cpp), on the bits.
            "uint round_bits(uint u) {\n"
            "    const uint sign = u & 0x80000000u, a = u & 0x7fffffffu;\n"
            "    if (a > 0x7f800000u) return u;\n"
            "    if (a >= 0x477ff000u) return sign | 0x7f800000u;\n"
            "    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu);\n"
            "    const uint e = a >> 23;\n"
            "    if (e < 101u) return sign;\n"
            "    const uint mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;\n"
            "    uint q = mant >> shift;\n"
            "    const uint rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);\n"
            "    if (rem > halfway || (rem == halfway && (q & 1u) != 0u)) ++q;\n"
            "    return sign | floatBitsToUint(float(q) * (1.0 / 16777216.0));\n"
            "}\n";
    else
        glsl +=
            // round_to_bf16.
            "uint round_bits(uint u) {\n"
            "    if ((u & 0x7fffffffu) > 0x7f800000u) return u;\n"
            "    return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;\n"
            "}\n";
    glsl +=
        "void main() {\n"
        "    const uint64_t i = (uint64_t(gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256ul +\n"
        "                       gl_LocalInvocationID.x;\n"
        "    if (i >= pc.count) return;\n"
        "    Word(pc.dst + i * 4ul).v = round_bits(Word(pc.src + i * 4ul).v);\n"
        "}\n";
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = std::string("tandem-round 1;") + (f16 ? "f16" : "bf16");
    k.workgroup_size = kRoundWorkgroup;
    k.elements_per_thread = 1;
    k.vector_width = 1;
    k.push_bytes = kRoundPushBytes;
    return k;
}

Kernel pack_f16_kernel() {
    std::string glsl =
        "#version 450\n"
        "#extension GL_EXT_buffer_reference : require\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        "layout(local_size_x = 256) in;\n"
        "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };\n"
        "layout(push_constant) uniform Push { uint64_t src, dst, count; } pc;\n"
        // round_to_f16 (backends/cpu/gemm.cpp) as binary16 bits.
        "uint half_bits(uint u) {\n"
        "    const uint sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
        "    if (a > 0x7f800000u) return sign | 0x7e00u;\n"
        "    if (a >= 0x477ff000u) return sign | 0x7c00u;\n"
        "    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);\n"
        "    const uint e = a >> 23;\n"
        "    if (e < 101u) return sign;\n"
        "    const uint mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;\n"
        "    uint q = mant >> shift;\n"
        "    const uint rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);\n"
        "    if (rem > halfway || (rem == halfway && (q & 1u) != 0u)) ++q;\n"
        "    return sign | q;\n"
        "}\n"
        "void main() {\n"
        "    // Invocation i packs elements 2i and 2i + 1 into word i.\n"
        "    const uint64_t i = (uint64_t(gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256ul +\n"
        "                       gl_LocalInvocationID.x;\n"
        "    if (2ul * i >= pc.count) return;\n"
        "    const uint lo = half_bits(Word(pc.src + 8ul * i).v);\n"
        "    const uint hi = 2ul * i + 1ul < pc.count ? half_bits(Word(pc.src + 8ul * i + 4ul).v) : 0u;\n"
        "    Word(pc.dst + 4ul * i).v = lo | (hi << 16);\n"
        "}\n";
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = "tandem-pack-f16 1";
    k.workgroup_size = kRoundWorkgroup;
    k.elements_per_thread = 2;
    k.vector_width = 1;
    k.push_bytes = kRoundPushBytes;
    return k;
}

void record_pack_f16(VkCommandBuffer cmd, const ComputePipeline& pipeline, VkDeviceAddress src, VkDeviceAddress dst,
                     std::uint64_t count) {
    // One invocation per pair: the rounding kernel's dispatch over ceil(count / 2) "elements".
    if (count == 0) return;
    const std::uint64_t pairs = (count + 1) / 2, groups = (pairs + kRoundWorkgroup - 1) / kRoundWorkgroup;
    const std::uint64_t gx = std::min<std::uint64_t>(groups, kMaxGroups), gy = (groups + gx - 1) / gx;
    if (gy > kMaxGroups) throw ValueError("vulkan: packing " + std::to_string(count) + " elements exceeds one dispatch");
    struct {
        std::uint64_t src, dst, count;
    } push{src, dst, count};
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
    vkCmdPushConstants(cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kRoundPushBytes, &push);
    vkCmdDispatch(cmd, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1);
}

void record_round(VkCommandBuffer cmd, const ComputePipeline& pipeline, VkDeviceAddress src, VkDeviceAddress dst,
                  std::uint64_t count) {
    if (count == 0) return;
    const std::uint64_t groups = (count + kRoundWorkgroup - 1) / kRoundWorkgroup;
    const std::uint64_t gx = std::min<std::uint64_t>(groups, kMaxGroups), gy = (groups + gx - 1) / gx;
    if (gy > kMaxGroups) throw ValueError("vulkan: rounding " + std::to_string(count) + " elements exceeds one dispatch");
    struct {
        std::uint64_t src, dst, count;
    } push{src, dst, count};
    static_assert(sizeof push == kRoundPushBytes);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
    vkCmdPushConstants(cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kRoundPushBytes, &push);
    vkCmdDispatch(cmd, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1);
}

}  // namespace tandem::detail::vk
