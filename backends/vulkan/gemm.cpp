// The Vulkan GEMM: tilings, the kernel's source (a prologue of #defines + shaders/gemm.glsl) and
// its recording. See gemm.hpp.
#include "backends/vulkan/gemm.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "backends/vulkan/compiler.hpp"
#include "graph/matmul_order.hpp"
#include "tandem_shaders.hpp"

namespace tandem::detail::vk {
namespace {

constexpr std::uint32_t kMaxGroups = 65535;  // maxComputeWorkGroupCount: Vulkan's minimum, per dimension

/// What gemm.glsl's push-constant block holds (std430: this layout, 104 bytes).
struct GemmPush {
    std::uint64_t a, b, c, d, bias;
    double alpha, beta;
    std::uint32_t m, n, k;
    std::uint32_t lda, ldb, ldc, ldd;
    std::uint32_t bias_si, bias_sj;
    std::uint32_t tile_m0, tile_n0;
    std::uint32_t split;  ///< 0, or split-K: workgroup z sums chunk split - 1 + z into slice z of d
};
static_assert(sizeof(GemmPush) == kGemmPushBytes);

/// Candidates, best first, for devices with a GPU's register file and shared memory. The first
/// that fits the device is taken (choose_gemm_tiles). Measured on the H100 (tandem-gemm-gpu-bench
/// sweeps, docs/benchmarks.md): f64 128x128x8/8x8 16.3 TFLOP/s at 4096 (every other tiling tried,
/// 9-17 at 4096, warp layouts and unpadded bk 12 included, was slower or within 4%); f32
/// 128x128x16/8x8 40.3 (128x128x8/8x8 30.8 since the straight-line epilogue).
std::vector<GemmTiles> gpu_candidates(DType t) {
    if (t == DType::f64)
        return {{128, 128, 8, 8, 8}, {128, 64, 8, 8, 4}, {64, 64, 8, 4, 4}, {32, 32, 8, 2, 2}};
    return {{128, 128, 16, 8, 8}, {128, 128, 8, 8, 8}, {128, 64, 8, 8, 4}, {64, 64, 8, 4, 4}, {32, 32, 8, 4, 4}};
}

/// For CPU implementations of Vulkan (lavapipe): a workgroup is run by one CPU thread over SIMD
/// lanes, so large register tiles only lengthen the unrolled shader (and llvmpipe's compile).
std::vector<GemmTiles> cpu_candidates(DType t) {
    if (t == DType::f64) return {{64, 64, 8, 4, 4}, {32, 32, 8, 2, 2}};
    return {{64, 64, 8, 4, 4}, {32, 32, 8, 4, 4}};
}

/// gemm.glsl's GEMM_EPILOGUE: one store_element per element of the register tile, every index a
/// literal, so that no driver has to unroll a loop over the accumulators (with such loops NVIDIA's
/// compiler kept all f64 accumulators in local memory: 1 TFLOP/s). Invocation (tx, ty) holds rows
/// i0 + g * (bm / tm) * w + p and columns j0 + h * (bn / tn) * w + q in acc[h * w + q][g], component p.
/// GEMM_FLUSH likewise: flush_element(i, j, first, accumulator) for each element.
std::string epilogue_macro(const GemmTiles& t, std::uint32_t w, const char* name = "GEMM_EPILOGUE",
                           const char* call = "store_element(", const char* extra = "") {
    const std::uint32_t threads_m = t.bm / t.tm, threads_n = t.bn / t.tn;
    std::ostringstream s;
    s << "#define " << name;
    for (std::uint32_t h = 0; h < t.tn / w; ++h)
        for (std::uint32_t q = 0; q < w; ++q)
            for (std::uint32_t g = 0; g < t.tm / w; ++g)
                for (std::uint32_t p = 0; p < w; ++p)
                    s << " \\\n    " << call << "i0 + " << g * threads_m * w + p << "u, j0 + " << h * threads_n * w + q
                      << "u, " << extra << "COMP(acc[" << h * w + q << "][" << g << "], " << p << "));";
    s << "\n";
    return s.str();
}

}  // namespace

std::uint32_t GemmTiles::vector_width(DType dtype) const noexcept {
    return vw != 0 ? vw : (dtype == DType::f64 ? 2 : 4);
}

std::uint32_t GemmTiles::shared_bytes(DType dtype) const noexcept {
    const std::uint32_t w = vector_width(dtype);
    return 2 * bk * ((bm / w + pad) + (bn / w + pad)) * w * static_cast<std::uint32_t>(dtype_size(dtype));
}

std::string GemmTiles::name() const {
    std::ostringstream s;
    s << bm << 'x' << bn << 'x' << bk << '/' << tm << 'x' << tn;
    if (vw != 0) s << 'v' << vw;
    if (wm != 0) s << 'w' << wm;
    if (pad == 0) s << "p0";
    return s.str();
}

std::string GemmTiles::invalid_reason(DType dtype) const {
    if (dtype != DType::f32 && dtype != DType::f64) return "GEMM is for single and double only";
    if (vw != 0 && vw != 1 && vw != 2 && vw != 4) return "vw must be 0, 1, 2 or 4";
    if (pad > 1) return "pad must be 0 or 1";
    if (vector_width(dtype) * dtype_size(dtype) > 16) return "vectors of more than 16 bytes";
    const std::uint32_t w = vector_width(dtype);
    if (bm == 0 || bn == 0 || bk == 0 || tm == 0 || tn == 0) return "a zero tile size";
    if (tm % w != 0 || tn % w != 0) return "tm and tn must be multiples of the vector width " + std::to_string(w);
    if (bm % tm != 0 || bn % tn != 0) return "bm must be a multiple of tm and bn of tn";
    const std::uint32_t wg = workgroup_size();
    if (wg == 0 || wg > 1024) return "workgroup of " + std::to_string(wg) + " invocations";
    if ((bm * bk) % wg != 0 || (bn * bk) % wg != 0)
        return "bm * bk and bn * bk must be multiples of the workgroup size " + std::to_string(wg);
    if (tm * tn > 256) return "register tile larger than 256 elements";
    if (kMatmulChunk % bk != 0)
        return "bk must divide the canonical order's chunk of " + std::to_string(kMatmulChunk) + " (graph/matmul_order.hpp)";
    if (wm != 0) {
        if (wm != 2 && wm != 4 && wm != 8 && wm != 16) return "wm must be 0, 2, 4, 8 or 16";
        if (wg % 32 != 0) return "wm needs a workgroup of a multiple of 32 invocations";
        if ((bm / tm) % wm != 0 || (bn / tn) % (32 / wm) != 0)
            return "wm x (32 / wm) must divide the (bm / tm) x (bn / tn) invocations";
    }
    return {};
}

std::string GemmTiles::unfit_reason(DType dtype, const DeviceDescription& device) const {
    if (std::string why = invalid_reason(dtype); !why.empty()) return why;
    if (shared_bytes(dtype) > device.shared_memory_bytes)
        return std::to_string(shared_bytes(dtype)) + " bytes of shared memory (the device has " +
               std::to_string(device.shared_memory_bytes) + ")";
    if (workgroup_size() > device.max_workgroup_invocations)
        return std::to_string(workgroup_size()) + " invocations per workgroup (the device allows " +
               std::to_string(device.max_workgroup_invocations) + ")";
    return {};
}

GemmTiles choose_gemm_tiles(const DeviceDescription& device, DType dtype) {
    const auto candidates = device.type == "cpu" ? cpu_candidates(dtype) : gpu_candidates(dtype);
    for (const GemmTiles& t : candidates)
        if (t.unfit_reason(dtype, device).empty()) return t;
    throw DeviceError("vulkan gemm: no tiling fits " + device.name + " (" + std::to_string(device.shared_memory_bytes) +
                      " bytes of shared memory, " + std::to_string(device.max_workgroup_invocations) +
                      " invocations per workgroup)");
}

Kernel gemm_kernel(DType dtype, bool trans_a, bool trans_b, GemmActivation activation, const GemmTiles& tiles,
                   const std::string& defines, bool symmetric, bool split) {
    if (symmetric && tiles.bm != tiles.bn) throw ValueError("vulkan gemm: a symmetric product needs square tiles, not " + tiles.name());
    if (std::string why = tiles.invalid_reason(dtype); !why.empty())
        throw ValueError("vulkan gemm: tiling " + tiles.name() + ": " + why);
    const bool f64 = dtype == DType::f64;
    const std::uint32_t w = tiles.vector_width(dtype);
    const std::string vt = w == 1 ? (f64 ? "double" : "float") : std::string(f64 ? "dvec" : "vec") + std::to_string(w);
    std::ostringstream s;
    s << "#version 460\n"
         "#extension GL_EXT_buffer_reference : require\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
         "#extension GL_EXT_control_flow_attributes : require\n"
      << "#define T " << (f64 ? "double" : "float") << "\n"
      << "#define VT " << vt << "\n"
      << "#define VW " << w << "u\n"
      << (w == 1 ? "#define COMP(v, i) (v)\n#define SET_COMP(v, i, x) v = x\n"
                 : "#define COMP(v, i) (v)[i]\n#define SET_COMP(v, i, x) v[i] = x\n")
      << "#define ELEMENT_BYTES " << (f64 ? 8 : 4) << "\n"
      << "#define BM " << tiles.bm << "u\n#define BN " << tiles.bn << "u\n#define BK " << tiles.bk << "u\n"
      << "#define TM " << tiles.tm << "u\n#define TN " << tiles.tn << "u\n"
      << "#define TRANS_A " << (trans_a ? 1 : 0) << "\n#define TRANS_B " << (trans_b ? 1 : 0) << "\n"
      << "#define ACT " << static_cast<int>(activation) << "\n"
      << "#define WARP_M " << tiles.wm << "\n"
      << "#define PAD " << tiles.pad << "u\n"
      << "#define SYMMETRIC " << (symmetric ? 1 : 0) << "\n"
      << "#define SPLIT " << (split ? 1 : 0) << "\n"
      << "#define CHUNK " << kMatmulChunk << "u\n"
      << epilogue_macro(tiles, w) << epilogue_macro(tiles, w, "GEMM_FLUSH", "flush_element(", "first, ")
      << defines << (defines.empty() || defines.back() == '\n' ? "" : "\n") << tandem_shader_gemm;
    Kernel k;
    k.glsl = s.str();
    k.key = std::string("gemm:") + (f64 ? "f64" : "f32") + ':' + (trans_a ? 't' : 'n') + (trans_b ? 't' : 'n') + ':' +
            tiles.name() + ":act" + std::to_string(static_cast<int>(activation)) + (symmetric ? ":sym" : "") + (split ? ":split" : "") +
            (defines.empty() ? "" : ":" + defines);
    k.workgroup_size = tiles.workgroup_size();
    k.elements_per_thread = tiles.tm * tiles.tn;
    k.vector_width = 1;
    k.push_bytes = kGemmPushBytes;
    return k;
}

std::string gemm_operands_invalid_reason(const GemmArgs& g) {
    const std::uint64_t a_rows = g.trans_a ? g.k : g.m, b_rows = g.trans_b ? g.n : g.k;
    auto too_small = [](const char* name, std::uint32_t ld, std::uint64_t rows) {
        return std::string(name) + " = " + std::to_string(ld) + " is less than the " + std::to_string(rows) + " rows";
    };
    if (g.lda < std::max<std::uint64_t>(1, a_rows)) return too_small("lda", g.lda, a_rows) + " of A as stored";
    if (g.ldb < std::max<std::uint64_t>(1, b_rows)) return too_small("ldb", g.ldb, b_rows) + " of B as stored";
    if (g.ldd < std::max<std::uint64_t>(1, g.m)) return too_small("ldd", g.ldd, g.m) + " of D";
    if (g.beta != 0 && g.ldc < std::max<std::uint64_t>(1, g.m)) return too_small("ldc", g.ldc, g.m) + " of C";
    if (g.m == 0 || g.n == 0) return {};
    const std::uint64_t es = dtype_size(g.dtype);
    auto misaligned = [&](VkDeviceAddress p) { return p % es != 0; };
    if (g.d == 0) return "no address for D";
    if (g.k > 0 && (g.a == 0 || g.b == 0)) return "no address for A or B";
    if (g.beta != 0 && g.c == 0) return "beta != 0 but no address for C";
    if (g.beta != 0 && g.c == g.d && g.k > kMatmulChunk)
        return "D may be C only when k <= " + std::to_string(kMatmulChunk) + " (D holds the chunk sums, gemm.glsl)";
    if (g.bias_mode != GemmBias::none && g.bias == 0) return "a bias mode but no address for the bias";
    if (misaligned(g.a) || misaligned(g.b) || misaligned(g.c) || misaligned(g.d) || misaligned(g.bias))
        return "an address not aligned to the element size " + std::to_string(es);
    return {};
}

std::string gemm_invalid_reason(const GemmArgs& g, const GemmTiles& tiles) {
    if (g.dtype != DType::f32 && g.dtype != DType::f64) return "element type must be single or double";
    if (std::string why = gemm_operands_invalid_reason(g); !why.empty() || g.m == 0 || g.n == 0) return why;
    // Inside a tile the kernel forms 32-bit element offsets: up to max(bm, bn, bk) * ld.
    const std::uint64_t span = std::max({tiles.bm, tiles.bn, tiles.bk}) + 1ull;
    if (span * std::max(g.lda, g.ldb) >= (1ull << 32))
        return "leading dimension " + std::to_string(std::max(g.lda, g.ldb)) + " too large for the kernel's 32-bit tile offsets";
    // Tile origins along m and n are 32-bit too.
    if (static_cast<std::uint64_t>(g.m) + tiles.bm >= (1ull << 32) || static_cast<std::uint64_t>(g.n) + tiles.bn >= (1ull << 32))
        return "m or n too large";
    return {};
}

Gemm::Gemm(const Context& context, PipelineCache& pipelines)
    : context_(context),
      pipelines_(pipelines),
      f32_(choose_gemm_tiles(context.description(), DType::f32)),
      f64_(choose_gemm_tiles(context.description(), DType::f64)) {}

void Gemm::set_tiles(DType dtype, const GemmTiles& tiles) {
    if (std::string why = tiles.invalid_reason(dtype); !why.empty())
        throw ValueError("vulkan gemm: tiling " + tiles.name() + ": " + why);
    if (std::string why = tiles.unfit_reason(dtype, context_.description()); !why.empty())
        throw DeviceError("vulkan gemm: tiling " + tiles.name() + " does not fit the device: " + why);
    std::lock_guard lock(mutex_);
    (dtype == DType::f64 ? f64_ : f32_) = tiles;
    variants_.clear();
}

void Gemm::set_defines(DType dtype, std::string defines) {
    std::lock_guard lock(mutex_);
    (dtype == DType::f64 ? f64_defines_ : f32_defines_) = std::move(defines);
    variants_.clear();
}

GemmTiles Gemm::tiles(DType dtype) const {
    std::lock_guard lock(mutex_);
    return dtype == DType::f64 ? f64_ : f32_;
}

std::uint32_t Gemm::variant(const GemmArgs& args, bool split) const {
    const GemmTiles t = tiles(args.dtype);
    const bool symmetric = args.symmetric && t.bm == t.bn;
    return (args.dtype == DType::f64 ? 1u : 0u) | (args.trans_a ? 2u : 0u) | (args.trans_b ? 4u : 0u) |
           (symmetric ? 8u : 0u) | static_cast<std::uint32_t>(args.activation) << 4 | (split ? 1u << 7 : 0u);
}

bool Gemm::built(const GemmArgs& args, bool split) const {
    const std::uint32_t v = variant(args, split);
    std::lock_guard lock(mutex_);
    return variants_.count(v) > 0;
}

const ComputePipeline& Gemm::pipeline(const GemmArgs& args, bool split) {
    // Writing the kernel's source to look its pipeline up took ~40 us of host time a call (a
    // split product records one call per part): the variants found are kept by their traits.
    const GemmTiles t = tiles(args.dtype);
    const bool symmetric = args.symmetric && t.bm == t.bn;
    const std::uint32_t variant = this->variant(args, split);
    std::string defines;
    {
        std::lock_guard lock(mutex_);
        if (auto it = variants_.find(variant); it != variants_.end()) return *it->second;
        defines = args.dtype == DType::f64 ? f64_defines_ : f32_defines_;
    }
    // The canonical order's bits need -0 kept (the padding's -0 products) and, in single, the
    // subnormals the CPU keeps, where the device lets a shader ask for them.
    const DeviceDescription& d = context_.description();
    if (d.signed_zero_preserve) defines += kPreserveSignedZerosMarker;
    if (d.denorm_preserve_f32 && args.dtype == DType::f32) defines += kPreserveF32DenormalsMarker;
    // A device whose fma() rounds twice: the fused multiply-add emulated (in double: f32 needs it).
    if (!d.fma_fused && d.float64) defines += "#define FMA_EMULATED 1\n";
    const ComputePipeline& p =
        pipelines_.get(gemm_kernel(args.dtype, args.trans_a, args.trans_b, args.activation, t, defines, symmetric, split));
    std::lock_guard lock(mutex_);
    variants_.emplace(variant, &p);
    return p;
}

std::uint64_t Gemm::tile_count(const GemmArgs& args) const {
    const auto [gm, gn] = grid(args);
    const GemmTiles t = tiles(args.dtype);
    if (args.symmetric && t.bm == t.bn) return std::uint64_t{gm} * (gm + 1) / 2;
    return std::uint64_t{gm} * gn;
}

std::pair<std::uint32_t, std::uint32_t> Gemm::grid(const GemmArgs& args) const {
    const GemmTiles t = tiles(args.dtype);
    return {static_cast<std::uint32_t>((static_cast<std::uint64_t>(args.m) + t.bm - 1) / t.bm),
            static_cast<std::uint32_t>((static_cast<std::uint64_t>(args.n) + t.bn - 1) / t.bn)};
}

std::uint32_t Gemm::split_parts(const GemmArgs& args) const {
    // A long k and too few output tiles to fill a large GPU (the H100 has 132 SMs): one workgroup
    // per tile and chunk of the canonical order (graph/matmul_order.hpp), the chunks' sums added in
    // order -- the same bits as one workgroup per tile and as the CPU. The chunks run in waves of
    // `parts` (workgroup z), each followed by the sum of its slices onto D: enough parts per wave
    // to fill the device, and at most kMaxScratchBytes of slices. (W5's X'X of a 65536 x 128 X:
    // 3 tiles, one wave of 64 chunks; of a 1048576 x 512 X: 10 tiles, waves of 51.)
    constexpr std::uint64_t kTargetGroups = 512, kMaxScratchBytes = std::uint64_t{256} << 20;
    const bool plain = args.alpha == 1 && args.beta == 0 && args.bias_mode == GemmBias::none &&
                       args.activation == GemmActivation::none && args.ldd == args.m;
    if (!plain || args.m == 0 || args.n == 0) return 1;
    const std::uint64_t tiles = tile_count(args);
    if (tiles >= kTargetGroups / 4) return 1;
    const std::uint64_t chunks = (std::uint64_t{args.k} + kMatmulChunk - 1) / kMatmulChunk;
    const std::uint64_t slice = split_scratch_bytes(args, 1);
    const std::uint64_t parts = std::min({chunks, std::max<std::uint64_t>(2, kTargetGroups / tiles),
                                          kMaxScratchBytes / std::max<std::uint64_t>(1, slice), std::uint64_t{kMaxGroups}});
    return parts >= 2 ? static_cast<std::uint32_t>(parts) : 1;
}

std::uint64_t Gemm::split_scratch_bytes(const GemmArgs& args, std::uint32_t parts) {
    return std::uint64_t{parts} * args.m * args.n * dtype_size(args.dtype);
}

Kernel Gemm::split_sum_kernel(DType dtype) {
    const bool f64 = dtype == DType::f64;
    const std::string T = f64 ? "double" : "float", ES = f64 ? "8" : "4";
    Kernel k;
    k.glsl = "#version 450\n"
             "#extension GL_EXT_buffer_reference : require\n"
             "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
             "layout(local_size_x = 256) in;\n"
             "layout(buffer_reference, std430, buffer_reference_align = " + ES + ") buffer Elem { " + T + " v; };\n"
             "layout(push_constant) uniform Push { uint64_t src, dst, count, parts, onto_dst, m, tile; } pc;\n"
             "void main() {\n"
             "    const uint64_t i = (uint64_t(gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256ul +\n"
             "                       gl_LocalInvocationID.x;\n"
             "    if (i >= pc.count) return;\n"
             // A symmetric product's slices hold its upper tiles (edge tile: pc.tile): an element
             // of a tile below the diagonal is read at its mirror, the same products.
             "    uint64_t e = i;\n"
             "    if (pc.tile != 0ul) {\n"
             "        const uint64_t r = i % pc.m, c = i / pc.m;\n"
             "        if (r / pc.tile > c / pc.tile) e = c + r * pc.m;\n"
             "    }\n"
             // The first slice, or (a later wave) D's sum so far plus the first slice; then the rest,
             // in order: the canonical order's sum of the chunks.
             "    precise " + T + " s = Elem(pc.src + e * " + ES + "ul).v;\n"
             "    if (pc.onto_dst != 0ul) {\n"
             "        precise " + T + " d = Elem(pc.dst + i * " + ES + "ul).v;\n"
             "        s = d + s;\n"
             "    }\n"
             "    for (uint64_t p = 1ul; p < pc.parts; ++p) {\n"
             "        precise " + T + " x = Elem(pc.src + (p * pc.count + e) * " + ES + "ul).v;\n"
             "        s = s + x;\n"
             "    }\n"
             "    Elem(pc.dst + i * " + ES + "ul).v = s;\n"
             "}\n";
    k.key = std::string("tandem-gemm-split-sum 3;") + (f64 ? "f64" : "f32");
    k.workgroup_size = 256;
    k.elements_per_thread = 1;
    k.vector_width = 1;
    k.push_bytes = 56;
    return k;
}

std::uint32_t Gemm::record_split(VkCommandBuffer cmd, const GemmArgs& args, std::uint32_t parts, VkDeviceAddress scratch,
                                 const ComputePipeline& sum) {
    if (std::string why = gemm_invalid_reason(args, tiles(args.dtype)); !why.empty()) throw ValueError("vulkan gemm: " + why);
    if (args.m == 0 || args.n == 0) return 0;
    const std::uint64_t mn = std::uint64_t{args.m} * args.n;
    const std::uint64_t chunks = (std::uint64_t{args.k} + kMatmulChunk - 1) / kMatmulChunk;
    const GemmTiles t = tiles(args.dtype);
    const std::uint64_t symmetric_tile = args.symmetric && t.bm == t.bn ? t.bm : 0;  // slices: the upper tiles only
    if (parts < 2 || parts > kMaxGroups) throw ValueError("vulkan gemm: a split product needs 2 to 65535 parts a wave");
    const std::uint64_t groups = (mn + 255) / 256;
    const std::uint64_t gx = std::min<std::uint64_t>(groups, kMaxGroups), gy = (groups + gx - 1) / gx;
    if (gy > kMaxGroups) throw ValueError("vulkan gemm: a split product of " + std::to_string(mn) + " elements exceeds one dispatch");
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    std::uint32_t dispatches = 0;
    for (std::uint64_t c0 = 0; c0 < chunks; c0 += parts) {
        const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(parts, chunks - c0));
        if (c0 > 0)  // the last wave's sum has read the slices and written D
            vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                 &barrier, 0, nullptr, 0, nullptr);
        GemmArgs wave = args;
        wave.d = scratch;
        dispatches += dispatch(cmd, wave, static_cast<std::uint32_t>(c0 + 1), count);
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                             &barrier, 0, nullptr, 0, nullptr);
        struct {
            std::uint64_t src, dst, count, parts, onto_dst, m, tile;
        } push{scratch, args.d, mn, count, c0 > 0 ? 1u : 0u, args.m, symmetric_tile};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, sum.pipeline);
        vkCmdPushConstants(cmd, sum.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
        vkCmdDispatch(cmd, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1);
        ++dispatches;
    }
    return dispatches;
}

void Gemm::record(VkCommandBuffer cmd, const GemmArgs& args) {
    if (std::string why = gemm_invalid_reason(args, tiles(args.dtype)); !why.empty()) throw ValueError("vulkan gemm: " + why);
    if (args.m == 0 || args.n == 0) return;
    dispatch(cmd, args, 0, 1);
}

std::uint32_t Gemm::dispatch(VkCommandBuffer cmd, const GemmArgs& args, std::uint32_t split, std::uint32_t parts) {
    const GemmTiles t = tiles(args.dtype);
    const ComputePipeline& p = pipeline(args, split != 0);
    GemmPush push{};
    push.a = args.a;
    push.b = args.b;
    push.c = args.beta != 0 ? args.c : 0;
    push.d = args.d;
    push.bias = args.bias_mode == GemmBias::none ? 0 : args.bias;
    push.alpha = args.alpha;
    push.beta = args.beta;
    push.m = args.m;
    push.n = args.n;
    push.k = args.k;
    push.lda = args.lda;
    push.ldb = args.ldb;
    push.ldc = args.beta != 0 ? args.ldc : 0;
    push.ldd = args.ldd;
    push.bias_si = args.bias_mode == GemmBias::per_row ? 1 : 0;
    push.bias_sj = args.bias_mode == GemmBias::per_column ? 1 : 0;
    push.split = split;
    const auto [gm, gn] = grid(args);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    std::uint32_t dispatches = 0;
    if (args.symmetric && t.bm == t.bn) {
        // The upper triangle of tiles as one list (gemm.glsl maps a workgroup to its tile).
        const std::uint64_t count = tile_count(args);
        for (std::uint64_t w0 = 0; w0 < count; w0 += kMaxGroups) {
            push.tile_m0 = static_cast<std::uint32_t>(w0);
            push.tile_n0 = 0;
            vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kGemmPushBytes, &push);
            vkCmdDispatch(cmd, static_cast<std::uint32_t>(std::min<std::uint64_t>(kMaxGroups, count - w0)), 1, parts);
            ++dispatches;
        }
        return dispatches;
    }
    for (std::uint32_t m0 = 0; m0 < gm; m0 += kMaxGroups)
        for (std::uint32_t n0 = 0; n0 < gn; n0 += kMaxGroups) {
            push.tile_m0 = m0;
            push.tile_n0 = n0;
            vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kGemmPushBytes, &push);
            vkCmdDispatch(cmd, std::min(kMaxGroups, gm - m0), std::min(kMaxGroups, gn - n0), parts);
            ++dispatches;
        }
    return dispatches;
}

}  // namespace tandem::detail::vk
