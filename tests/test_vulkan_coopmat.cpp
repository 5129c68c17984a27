// Reduced-precision matrix products (MatmulPrecision f16 / bf16) on the Vulkan device:
// - the rounding of f32 to half and bfloat16 (round_to_f16 / round_to_bf16 on the CPU, the same
//   bits in the device's rounding kernel) against an independent reference (frexp / nearbyint);
// - the tensor-core kernel (backends/vulkan/gemm_coopmat, shaders/gemm_coopmat.glsl): every variant
//   compiles through the project's glslang (on any machine); on a device with VK_NV_cooperative_matrix
//   it is checked against a double reference on the rounded operands with the bound
//   3 (k + 2) 2^-23 (|op(A)||op(B)|)_ij, products with k = 1 bit for bit (a product of two halves
//   is exact in single), every transpose, sizes that are not multiples of the fragments or tiles,
//   1xN, Nx1, empty, k = 0, padded leading dimensions, NaN/Inf/overflow, both f32 -> f16
//   conversions and every tiling that fits. lavapipe has no cooperative matrices: those tests say
//   so and skip (they run on the GPU machine: bash .gpu/run.sh tandem-vulkan-tests --gtest_filter='*Coop*');
// - matmul(A, B, {.., precision}) through the public API on the device (the tensor cores where
//   there are, the rounding kernel + f32 GEMM elsewhere) and on the CPU, against the same reference.
// The Khronos validation layer is on where it is installed; any message fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "epilogue_cases.hpp"
#include "gemm_test_rig.hpp"
#include "matmul_reference.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"
#include "vulkan_runtime.hpp"

namespace vk = tandem::detail::vk;
namespace cpu = tandem::detail::cpu;
using tandem::DType;
using tandem::MatmulPrecision;

namespace {

constexpr const char* kNoTensorCores =
    "the Vulkan device has no usable VK_NV_cooperative_matrix f16 path (lavapipe has none), so the tensor-core "
    "kernel cannot run here; run this test on a GPU with it (the H100: bash .gpu/run.sh tandem-vulkan-tests "
    "--gtest_filter='*Coop*')";

// ---- an independent reference of the rounding -----------------------------------------------------

/// x rounded to `p` significant bits (ties to even), the quantum at least 2^qmin (subnormals),
/// magnitudes rounding to 2^emax or more giving Inf.
float round_ref(float x, int p, int qmin, int emax) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0f) return x;
    int e = 0;
    (void)std::frexp(static_cast<double>(x), &e);  // |x| = m 2^e, m in [0.5, 1)
    const int q = std::max(e - p, qmin);
    const double v = std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), -q)), q);
    if (std::fabs(v) >= std::ldexp(1.0, emax)) return std::copysign(std::numeric_limits<float>::infinity(), x);
    return std::copysign(static_cast<float>(v), x);
}
float ref_f16(float x) { return round_ref(x, 11, -24, 16); }
float ref_bf16(float x) { return round_ref(x, 8, -133, 128); }

/// The same bits (any NaN matching any NaN): roundings keep the sign of zero.
bool same(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}
/// The same value (NaN matching NaN, -0 matching +0): a sum's zero may take either sign.
bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// Values at the edges of half's and bfloat16's ranges and ties.
std::vector<float> special_values() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 65536.0f, 1e9f,
                            0x1p-14f, 0x1p-15f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1.8p-24f, 0x1.4p-24f,
                            1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 0x1.fep127f,
                            0x1.ff8p127f, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(), 0x1p-130f, 0x1.81p-130f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 3.14159265f, -2.71828182f, 1.0f / 3.0f};
    const std::size_t n = v.size();
    for (std::size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    return v;
}

std::vector<float> random_bits(std::size_t count, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(count);
    for (auto& x : v) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    return v;
}

TEST(VulkanCoopmatRounding, CpuRoundingMatchesReference) {
    std::vector<float> xs = special_values();
    const auto more = random_bits(1 << 22, 5);
    xs.insert(xs.end(), more.begin(), more.end());
    // Every float around half's smallest subnormal, normal and largest finite values.
    for (float c : {0x1p-24f, 0x1p-14f, 65504.0f, 0x1p-133f, 0x1p-126f})
        for (int d = -3000; d <= 3000; ++d) xs.push_back(std::bit_cast<float>(std::bit_cast<std::uint32_t>(c) + d));
    int bad = 0;
    for (float x : xs) {
        if (!same(cpu::round_to_f16(x), ref_f16(x)) && bad++ < 5)
            ADD_FAILURE() << "round_to_f16(" << x << ") = " << cpu::round_to_f16(x) << ", reference " << ref_f16(x);
        if (!same(cpu::round_to_bf16(x), ref_bf16(x)) && bad++ < 5)
            ADD_FAILURE() << "round_to_bf16(" << x << ") = " << cpu::round_to_bf16(x) << ", reference " << ref_bf16(x);
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(cpu::round_to_f16(65519.99f), 65504.0f);
    EXPECT_TRUE(std::isinf(cpu::round_to_f16(65520.0f)));
    EXPECT_EQ(cpu::round_to_f16(0x1p-25f), 0.0f);
    EXPECT_TRUE(std::signbit(cpu::round_to_f16(-0x1p-26f)));
    EXPECT_EQ(cpu::round_to_f16(0x1.8p-25f), 0x1p-24f);
    EXPECT_EQ(cpu::round_to_bf16(1.0f + 0x1p-8f), 1.0f);        // tie to even
    EXPECT_EQ(cpu::round_to_bf16(1.0f + 0x3p-8f), 1.0f + 0x1p-6f);  // tie to even (up)
    EXPECT_TRUE(std::isinf(cpu::round_to_bf16(std::numeric_limits<float>::max())));
}

// ---- a device with the validation layer (where installed) -----------------------------------------

bool validation_layer_installed() {
    vk::ContextOptions o;
    o.validation = true;
    try {
        vk::Context::create(o);
        return true;
    } catch (const tandem::DeviceError& e) {
        return std::string(e.what()).find("not installed") == std::string::npos;
    }
}

class Rig : public gemm_test::DeviceRig {
public:
    explicit Rig(bool validation_on) : DeviceRig(validation_on, 512 * gemm_test::MiB), validation(validation_on) {
        if (vk::GemmCoopmat::available(ctx->description())) coop = std::make_unique<vk::GemmCoopmat>(*ctx, *pipelines);
    }

    /// Records the copy of `arr` (`count` floats) back, submits, waits, returns it.
    std::vector<float> finish(const std::shared_ptr<vk::DeviceArray>& arr, std::size_t count) {
        // `arr` was last written by a kernel or, when none ran, by put()'s upload copy.
        return read_back<float>(arr, count, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    }

    bool validation = false;
};

Rig& rig() {
    static Rig r(validation_layer_installed());
    return r;
}

TEST(VulkanCoopmatRounding, DeviceKernelGivesTheCpuBits) {
    Rig& r = rig();
    std::vector<float> xs = special_values();
    const auto more = random_bits(1 << 20, 6);
    xs.insert(xs.end(), more.begin(), more.end());
    for (MatmulPrecision p : {MatmulPrecision::f16, MatmulPrecision::bf16}) {
        SCOPED_TRACE(tandem::to_string(p));
        const vk::ComputePipeline& pipe = r.pipelines->get(vk::round_kernel(p));
        r.begin();
        auto src = r.put(xs);
        auto dst = r.device->allocate(xs.size() * sizeof(float));
        r.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT);
        vk::record_round(r.cmd, pipe, src->address(), dst->address(), xs.size());
        const std::vector<float> got = r.finish(dst, xs.size());
        int bad = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const float want = p == MatmulPrecision::f16 ? cpu::round_to_f16(xs[i]) : cpu::round_to_bf16(xs[i]);
            if (!same(got[i], want) && bad++ < 5)
                ADD_FAILURE() << "x = " << xs[i] << " (0x" << std::hex << std::bit_cast<std::uint32_t>(xs[i]) << std::dec
                              << "): device " << got[i] << ", CPU " << want;
        }
        EXPECT_EQ(bad, 0);
    }
    EXPECT_THROW(vk::round_kernel(MatmulPrecision::full), tandem::ValueError);
    r.expect_clean();
}

// ---- the tensor-core kernel -------------------------------------------------------------------------

TEST(VulkanCoopmat, EveryKernelVariantCompiles) {
    // glslang only (no device needed): every fragment shape NVIDIA lists for f16 x f16 + f32,
    // transposes, load widths and conversions of the default tiling, and every candidate tiling.
    const std::vector<vk::CoopmatTiles> tilings = {{128, 128, 32, 2, 4, 8}, {128, 64, 32, 2, 2, 8}, {64, 64, 32, 2, 2, 8},
                                                   {32, 32, 32, 1, 1, 8},   {128, 256, 32, 2, 4, 8}, {256, 128, 32, 4, 2, 8}};
    int compiled = 0;
    for (auto f : {vk::DeviceDescription::CoopmatShape{16, 16, 16}, {16, 8, 16}, {16, 8, 8}})
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (bool vec : {false, true})
                    for (auto c : {vk::CoopmatConversion::hardware, vk::CoopmatConversion::exact}) {
                        for (auto in : {vk::CoopmatInput::f32, vk::CoopmatInput::f16}) {
                            if (in == vk::CoopmatInput::f16 && c == vk::CoopmatConversion::exact) continue;  // the same kernel
                            vk::CoopmatTiles t = tilings[0];
                            t.stages = vec ? 2 : 1;
                            const vk::Kernel k = vk::gemm_coopmat_kernel(f, t, ta, tb, vec, c, in);
                            SCOPED_TRACE(k.key);
                            EXPECT_FALSE(vk::compile_compute_shader(k.glsl).empty());
                            ++compiled;
                        }
                    }
    for (const auto& t : tilings) {
        SCOPED_TRACE(t.name());
        EXPECT_FALSE(vk::compile_compute_shader(vk::gemm_coopmat_kernel({16, 16, 16}, t, true, false, true,
                                                                         vk::CoopmatConversion::hardware).glsl).empty());
    }
    EXPECT_EQ(compiled, 72);
    EXPECT_FALSE(vk::compile_compute_shader(vk::pack_f16_kernel().glsl).empty());
    EXPECT_THROW(vk::gemm_coopmat_kernel({16, 16, 16}, {96, 128, 32, 4, 4, 8}, false, false, true,
                                         vk::CoopmatConversion::hardware),
                 tandem::ValueError);  // 96 is no multiple of 4 subgroups x 16 rows
}

TEST(VulkanCoopmat, DeviceReportsCooperativeMatrix) {
    const vk::DeviceDescription& d = rig().ctx->description();
    std::string shapes;
    for (const auto& s : d.cooperative_matrix_shapes) shapes += "\n  " + s;
    std::cout << "[ info     ] " << d.name << ": VK_NV_cooperative_matrix shapes:" << (shapes.empty() ? " none" : shapes)
              << "\n[ info     ] tensor-core f16 GEMM: "
              << (vk::GemmCoopmat::available(d) ? std::to_string(d.coopmat_f16.m) + "x" + std::to_string(d.coopmat_f16.n) +
                                                      "x" + std::to_string(d.coopmat_f16.k)
                                                : "off" + (d.coopmat_note.empty() ? std::string() : " (" + d.coopmat_note + ")"))
              << (rig().validation ? "" : " [validation layer not installed: not validated]") << "\n";
    if (!vk::GemmCoopmat::available(d)) {
        EXPECT_EQ(d.coopmat_f16.m, 0u);
        GTEST_SKIP() << kNoTensorCores;
    }
    EXPECT_TRUE(d.shader_float16);
    EXPECT_TRUE(d.vulkan_memory_model);
    EXPECT_TRUE(d.vulkan_memory_model_device_scope);
    EXPECT_EQ(d.subgroup_size, 32u);
    EXPECT_NE(vk::coopmat_text(d).find("f16 matmul"), std::string::npos) << vk::coopmat_text(d);
}

struct Case {
    bool ta = false, tb = false;
    std::uint32_t m = 0, n = 0, k = 0;
    std::uint32_t pad = 0;  // extra rows of every leading dimension
    double alpha = 1, beta = 0;
    vk::GemmBias bias = vk::GemmBias::none;
    vk::GemmActivation act = vk::GemmActivation::none;
};

std::string describe(const Case& c) {
    return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
           " k=" + std::to_string(c.k) + " pad=" + std::to_string(c.pad) + " alpha=" + std::to_string(c.alpha) +
           " beta=" + std::to_string(c.beta) + " bias=" + std::to_string(static_cast<int>(c.bias)) +
           " act=" + std::to_string(static_cast<int>(c.act));
}

struct Operands {
    std::uint32_t lda = 1, ldb = 1, ldd = 1;
    std::vector<float> a, b, c, bias;  // C is ldd x n
};

Operands make(const Case& c, std::mt19937_64& rng, bool specials) {
    Operands h;
    const gemm_test::Layout l = gemm_test::layout(c);
    h.lda = l.lda;
    h.ldb = l.ldb;
    h.ldd = l.ldc;
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    const auto specials_list = special_values();
    auto fill = [&](std::vector<float>& v, std::size_t count) {
        v.resize(count);
        for (auto& x : v) {
            x = u(rng);
            if (specials && rng() % 53 == 0) x = specials_list[rng() % specials_list.size()];
        }
    };
    fill(h.a, std::size_t{h.lda} * l.a_cols);
    fill(h.b, std::size_t{h.ldb} * l.b_cols);
    fill(h.c, c.beta != 0 ? std::size_t{h.ldd} * c.n : 0);
    fill(h.bias, gemm_test::bias_count(c));
    return h;
}

std::vector<float> run_coopmat(const Case& c, const Operands& h) {
    Rig& r = rig();
    r.begin();
    auto a = r.put(h.a), b = r.put(h.b), cc = r.put(h.c), bias = r.put(h.bias);
    const std::size_t d_count = std::size_t{h.ldd} * c.n;
    auto d = r.put(std::vector<float>(d_count, 0.0f));
    r.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vk::GemmArgs g = gemm_test::gemm_args(c, DType::f32);
    g.a = a->address();
    g.b = b->address();
    g.d = d->address();
    if (r.coop->input() == vk::CoopmatInput::f16) {  // the kernel reads the operands packed as halves
        const vk::ComputePipeline& pack = r.pipelines->get(vk::pack_f16_kernel());
        auto pa = r.device->allocate(vk::packed_f16_bytes(h.a.size())), pb = r.device->allocate(vk::packed_f16_bytes(h.b.size()));
        r.keep.push_back(pa);
        r.keep.push_back(pb);
        vk::record_pack_f16(r.cmd, pack, a->address(), pa->address(), h.a.size());
        vk::record_pack_f16(r.cmd, pack, b->address(), pb->address(), h.b.size());
        r.barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT);
        g.a = pa->address();
        g.b = pb->address();
    }
    g.lda = h.lda;
    g.ldb = h.ldb;
    g.ldc = g.ldd = h.ldd;
    g.c = cc->address();
    g.bias = bias->address();
    r.coop->record(r.cmd, g);
    return r.finish(d, d_count);
}

/// Checks D against the double reference on the rounded operands; k == 1 and alpha == 1: bit for bit.
void check(const Case& c, std::uint64_t seed, bool specials = false) {
    SCOPED_TRACE(describe(c) + " " + rig().coop->tiles().name() +
                 (rig().coop->input() == vk::CoopmatInput::f16              ? " packed halves"
                  : rig().coop->conversion() == vk::CoopmatConversion::exact ? " exact conversion"
                                                                              : " hardware conversion"));
    std::mt19937_64 rng(seed);
    const Operands h = make(c, rng, specials);
    const std::vector<float> d = run_coopmat(c, h);
    auto A = [&](std::uint32_t i, std::uint32_t p) {
        return ref_f16(c.ta ? h.a[p + std::size_t{i} * h.lda] : h.a[i + std::size_t{p} * h.lda]);
    };
    auto B = [&](std::uint32_t p, std::uint32_t j) {
        return ref_f16(c.tb ? h.b[j + std::size_t{p} * h.ldb] : h.b[p + std::size_t{j} * h.ldb]);
    };
    int failures = 0;
    for (std::uint32_t j = 0; j < c.n; ++j)
        for (std::uint32_t i = 0; i < h.ldd; ++i) {
            const float got = d[i + std::size_t{j} * h.ldd];
            if (i >= c.m) {
                if (got != 0.0f && failures++ < 5) ADD_FAILURE() << "padding row " << i << " of column " << j << " written";
                continue;
            }
            auto [ref, mag, nan] = gemm_test::reference(
                c, i, j, A, B, [&] { return h.c[i + std::size_t{j} * h.ldd]; },
                [&](std::uint32_t b) -> double { return h.bias[b]; });
            const bool plain = c.beta == 0 && c.bias == vk::GemmBias::none && c.act == vk::GemmActivation::none;
            if (c.act != vk::GemmActivation::none) {  // relu: NaN gives 0
                if (nan || std::isnan(ref)) nan = false, ref = 0;
                ref = std::max(ref, 0.0);
            }
            bool ok;
            if (nan || std::isnan(ref)) ok = std::isnan(got);
            else if (std::isinf(ref)) ok = got == ref || std::isnan(got);
            else if (c.k == 1 && c.alpha == 1 && plain) ok = same_value(got, static_cast<float>(ref));  // exact
            else ok = std::fabs(got - ref) <= gemm_test::dot_bound(c.k, 0x1p-23, mag) + 1e-38;
            if (!ok && failures++ < 5)
                ADD_FAILURE() << "D(" << i << "," << j << ") = " << got << ", reference " << ref << " (bound "
                              << gemm_test::dot_bound(c.k, 0x1p-23, mag) << ")";
        }
    EXPECT_EQ(failures, 0);
}

void all_transposes(Case c, std::uint64_t seed, bool specials = false) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            c.ta = ta;
            c.tb = tb;
            check(c, seed++, specials);
        }
}

struct Restore {
    vk::CoopmatTiles tiles = rig().coop->tiles();
    vk::CoopmatConversion conversion = rig().coop->conversion();
    vk::CoopmatInput input = rig().coop->input();
    ~Restore() {
        rig().coop->set_tiles(tiles);
        rig().coop->set_conversion(conversion);
        rig().coop->set_input(input);
    }
};

/// The three ways the kernel takes its operands.
struct Mode {
    vk::CoopmatInput input;
    vk::CoopmatConversion conversion;
};
const Mode kModes[] = {{vk::CoopmatInput::f32, vk::CoopmatConversion::hardware},
                       {vk::CoopmatInput::f32, vk::CoopmatConversion::exact},
                       {vk::CoopmatInput::f16, vk::CoopmatConversion::hardware}};
void set_mode(const Mode& m) {
    rig().coop->set_input(m.input);
    rig().coop->set_conversion(m.conversion);
}

TEST(VulkanCoopmat, ProductsMatchTheRoundedReference) {
    if (!rig().coop) GTEST_SKIP() << kNoTensorCores;
    Restore restore;
    for (const Mode& mode : kModes) {
        set_mode(mode);
        for (auto [m, n, k] : {std::tuple{128u, 128u, 32u}, {256u, 256u, 256u}, {37u, 53u, 29u}, {130u, 70u, 300u},
                               {5u, 131u, 9u}, {1u, 200u, 33u}, {200u, 1u, 33u}, {1u, 1u, 1000u}, {1u, 1u, 1u},
                               {17u, 16u, 15u}, {300u, 257u, 129u}})
            all_transposes({false, false, m, n, k}, m * 7919u + n * 31u + k);
        all_transposes({false, false, 64, 48, 40, 3}, 11);   // padded leading dimensions (odd: scalar loads, staged stores)
        all_transposes({false, false, 96, 80, 64, 4}, 12);   // padded by 4: f32 vector loads, direct stores
        all_transposes({false, false, 96, 80, 64, 8}, 14);   // padded by 8: vector loads of halves too
        all_transposes({false, false, 70, 33, 20, 0, -2.5}, 13);  // alpha
    }
    rig().expect_clean();
}

TEST(VulkanCoopmat, FusedEpilogue) {
    // act(alpha * P + beta * C + bias) in the kernel's epilogue (the graph folds such chains into
    // the product: graph/fusion.cpp), every input mode, edge tiles and interior ones.
    if (!rig().coop) GTEST_SKIP() << kNoTensorCores;
    Restore restore;
    for (const Mode& mode : kModes) {
        set_mode(mode);
        for (auto bias : {vk::GemmBias::none, vk::GemmBias::per_row, vk::GemmBias::per_column})
            for (auto act : {vk::GemmActivation::none, vk::GemmActivation::relu, vk::GemmActivation::relu_zero_first}) {
                Case c{true, false, 256, 128, 40, 0, 1.5, 0.5};
                c.bias = bias;
                c.act = act;
                check(c, 61);
                c = Case{false, true, 67, 45, 33, 1, -2.0, 0.0};
                c.bias = bias;
                c.act = act;
                check(c, 62);
            }
    }
    rig().expect_clean();
}

TEST(VulkanCoopmat, EmptyAndZeroDepth) {
    if (!rig().coop) GTEST_SKIP() << kNoTensorCores;
    all_transposes({false, false, 40, 30, 0}, 21);  // k = 0: D = 0
    for (auto [m, n] : {std::pair{0u, 5u}, {5u, 0u}, {0u, 0u}}) {
        const vk::GemmArgs g = gemm_test::empty_args(m, n);
        rig().begin();
        EXPECT_NO_THROW(rig().coop->record(rig().cmd, g));
        auto d = rig().put({0.0f});
        rig().finish(d, 1);
    }
    vk::GemmArgs bad;
    bad.m = bad.n = bad.k = 4;
    bad.lda = bad.ldb = bad.ldd = 4;
    bad.a = bad.b = bad.d = 256;
    bad.beta = 1;  // and no C
    rig().begin();
    EXPECT_THROW(rig().coop->record(rig().cmd, bad), tandem::ValueError);
    bad.beta = 0;
    bad.dtype = DType::f64;
    EXPECT_THROW(rig().coop->record(rig().cmd, bad), tandem::ValueError);
    rig().finish(rig().put({0.0f}), 1);
    rig().expect_clean();
}

TEST(VulkanCoopmat, OuterProductsAreExactAndSpecialsPropagate) {
    if (!rig().coop) GTEST_SKIP() << kNoTensorCores;
    Restore restore;
    for (const Mode& mode : kModes) {
        set_mode(mode);
        // k = 1: D = round(a) round(b)' bit for bit, with specials (overflow to Inf, ties, subnormals, NaN).
        all_transposes({false, false, 150, 70, 1}, 31, true);
        // Inf and NaN inside sums.
        all_transposes({false, false, 67, 45, 50}, 32, true);
    }
    rig().expect_clean();
}

TEST(VulkanCoopmat, EveryTilingThatFitsTheDevice) {
    if (!rig().coop) GTEST_SKIP() << kNoTensorCores;
    Restore restore;
    const vk::DeviceDescription& dev = rig().ctx->description();
    int ran = 0;
    for (const vk::CoopmatTiles& t : {vk::CoopmatTiles{128, 128, 32, 2, 4, 8}, {128, 64, 32, 2, 2, 8}, {64, 64, 32, 2, 2, 8},
                                      {32, 32, 32, 1, 1, 8}, {128, 256, 32, 2, 4, 8}, {256, 128, 32, 4, 2, 4},
                                      {128, 128, 64, 2, 2, 1}, {128, 128, 32, 2, 4, 8, 2}, {128, 64, 32, 2, 2, 8, 2},
                                      {64, 64, 32, 2, 2, 8, 2}}) {
        if (!t.unfit_reason(dev).empty()) continue;
        rig().coop->set_tiles(t);
        ++ran;
        for (const Mode& mode : {kModes[0], kModes[2]}) {  // NN and TT (all four: ProductsMatchTheRoundedReference)
            set_mode(mode);
            check({false, false, 300, 270, 70}, 41 + ran);
            check({true, true, 300, 270, 70}, 51 + ran);
        }
    }
    EXPECT_GE(ran, 6);
    EXPECT_THROW(rig().coop->set_tiles({128, 128, 32, 3, 4, 8}), tandem::ValueError);
    rig().expect_clean();
}

// ---- matmul(..., precision) through the public API ----------------------------------------------------

tref::Host rounded(const tref::Host& h, MatmulPrecision p) {
    tref::Host r = h;
    for (auto& v : r.v) v = p == MatmulPrecision::f16 ? ref_f16(static_cast<float>(v)) : ref_bf16(static_cast<float>(v));
    return r;
}

TEST(VulkanCoopmatMatmul, ReducedPrecisionOnTheDeviceMatchesReference) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu_rt(tvk::cpu_config());
    std::mt19937_64 rng(51);
    const bool tensor_cores = rig().coop != nullptr;  // this device has them
    for (MatmulPrecision p : {MatmulPrecision::f16, MatmulPrecision::bf16})
        for (auto [m, k, n] : {std::tuple{1, 1, 1}, {1, 37, 1}, {9, 70, 1}, {1, 70, 9}, {65, 33, 70}, {128, 64, 129},
                               {0, 4, 3}, {3, 0, 5}})
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    SCOPED_TRACE(std::string(tandem::to_string(p)) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                                 std::to_string(n) + (ta ? " A'" : "") + (tb ? " B'" : ""));
                    tref::Host a = tmm::random_matrix(ta ? k : m, ta ? m : k, DType::f32, rng, true);
                    tref::Host b = tmm::random_matrix(tb ? n : k, tb ? k : n, DType::f32, rng, true);
                    for (auto& v : a.v)
                        if (rng() % 41 == 0) v = 70000.0;  // beyond half: Inf in f16, finite in bf16
                    const tandem::MatmulOptions o{ta, tb, p};
                    tref::Host got = tref::gather(tandem::matmul(tref::make_array(*gpu, a), tref::make_array(*gpu, b), o));
                    // On tensor cores (f16 where the device has them) the sums are the matrix units' own.
                    EXPECT_TRUE(tmm::product_ok(got, rounded(a, p), rounded(b, p), ta, tb, !(p == MatmulPrecision::f16 && tensor_cores)));
                    tref::Host on_cpu =
                        tref::gather(tandem::matmul(tref::make_array(cpu_rt, a), tref::make_array(cpu_rt, b), o));
                    EXPECT_TRUE(tmm::product_ok(on_cpu, rounded(a, p), rounded(b, p), ta, tb));
                }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCoopmatMatmul, FoldedEpiloguesGiveTheUnfusedBits) {
    // The chains of epilogue_cases.hpp after a reduced-precision product: folded into it (the
    // tensor-core kernel's epilogue, or the f32 GEMM's after the rounding kernel) vs computed
    // unfused on the same backend (fusion off): the same bits; and on the CPU likewise.
    auto gpu = tvk::open_gpu();
    auto plain = tvk::open_gpu(tvk::unfused_gpu_config());
    tandem::Runtime cpu_rt(tvk::cpu_config());
    tandem::Config cpu_plain_config = tvk::cpu_config();
    cpu_plain_config.fusion = false;
    tandem::Runtime cpu_plain(cpu_plain_config);
    std::mt19937_64 rng(71);
    for (MatmulPrecision p : {MatmulPrecision::f16, MatmulPrecision::bf16})
        for (auto [m, k, n] : {std::tuple{7, 5, 9}, std::tuple{130, 40, 129}}) {
            const tref::Host a = tref::random_host({m, k}, DType::f32, rng, false), b = tref::random_host({k, n}, DType::f32, rng, false);
            const tref::Host c = tref::random_host({m, n}, DType::f32, rng, true);
            const tref::Host r = tref::random_host({m, 1}, DType::f32, rng, true), q = tref::random_host({1, n}, DType::f32, rng, true);
            for (const tep::Chain& ch : tep::chains()) {
                SCOPED_TRACE(ch.name + " " + tandem::to_string(p) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                             std::to_string(n));
                auto run = [&](tandem::Runtime& rt) {
                    const tandem::Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), C = tref::make_array(rt, c);
                    const tandem::Array R = tref::make_array(rt, r), Q = tref::make_array(rt, q);
                    rt.evaluate({A, B, C, R, Q}).get();
                    return tref::gather(ch.f(tandem::matmul(A, B, {false, false, p}), C, R, Q));
                };
                EXPECT_TRUE(tref::same_values(run(*gpu), run(*plain))) << "device";
                EXPECT_TRUE(tref::same_values(run(cpu_rt), run(cpu_plain))) << "CPU";
            }
        }
    tvk::expect_device_clean(*gpu);
    tvk::expect_device_clean(*plain);
}

TEST(VulkanCoopmatMatmul, OuterProductIsBitForBitTheCpus) {
    // k = 1: every backend gives round(a_i) * round(b_j) exactly, specials included.
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu_rt(tvk::cpu_config());
    // Specials, except the tiniest (bfloat16 keeps them, and their products are f32 subnormals,
    // which GPUs may flush to zero in single-precision arithmetic).
    std::vector<float> col, row;
    for (float x : special_values())
        if (!(x != 0.0f && std::fabs(x) < 0x1p-100f)) col.push_back(x);
    for (int i = 0; i < 40; ++i) row.push_back(std::ldexp(1.0f + static_cast<float>(i) / 64.0f, i % 7 - 3) * (i % 2 ? -1.0f : 1.0f));
    for (MatmulPrecision p : {MatmulPrecision::f16, MatmulPrecision::bf16}) {
        SCOPED_TRACE(tandem::to_string(p));
        const tandem::Shape sc{static_cast<std::int64_t>(col.size()), 1}, sr{1, static_cast<std::int64_t>(row.size())};
        const tandem::MatmulOptions o{false, false, p};
        const tandem::HostArray g = tandem::matmul(gpu->array(std::span<const float>(col), sc),
                                                   gpu->array(std::span<const float>(row), sr), o).gather().get();
        const tandem::HostArray c = tandem::matmul(cpu_rt.array(std::span<const float>(col), sc),
                                                   cpu_rt.array(std::span<const float>(row), sr), o).gather().get();
        int bad = 0;
        for (std::size_t j = 0; j < row.size(); ++j)
            for (std::size_t i = 0; i < col.size(); ++i) {
                const float want = p == MatmulPrecision::f16 ? ref_f16(col[i]) * ref_f16(row[j]) : ref_bf16(col[i]) * ref_bf16(row[j]);
                const float gv = g.data<float>()[i + col.size() * j], cv = c.data<float>()[i + col.size() * j];
                if ((!same_value(gv, want) || !same_value(cv, want)) && bad++ < 5)
                    ADD_FAILURE() << col[i] << " * " << row[j] << ": device " << gv << ", CPU " << cv << ", reference " << want;
            }
        EXPECT_EQ(bad, 0);
    }
    tvk::expect_device_clean(*gpu);
}

}  // namespace
