// The Vulkan GEMM (backends/vulkan/gemm.hpp, shaders/gemm.glsl) on the Vulkan device (lavapipe in
// CI) with the Khronos validation layer and synchronization validation on: any message fails.
// Operands go host -> staging -> device-local, the product is recorded between precise barriers,
// D comes back through a readback buffer; every element is checked bit for bit against
// graph/matmul_order.hpp's canonical order and the epilogue computed by a plain loop in the
// element type (the CPU's bits; NaN equal to NaN, -0 unequal to +0), and against a plain double
// triple loop with the forward error bound of a length-k dot product,
//   |D - ref|_ij <= 3 * (k + 2) * eps(T) * (|alpha| (|op(A)||op(B)|)_ij + |beta C_ij| + |bias|) + tiny.
// Covered: the four transpose combinations, f32 and f64, alpha/beta (beta = 0 ignores NaN in C),
// bias along rows and columns, relu, D written in place over C, padded leading dimensions, 1xN,
// Nx1, 1x1, k = 0, k across the canonical order's chunks, special values (NaN, Inf, -0,
// subnormals, products that underflow), sizes that are not multiples of the tiles, NaN/Inf propagation,
// every GPU tiling that fits the device (the H100's tiles run here too), a grid of more than
// 65535 workgroups (split dispatches), tile choice per device and argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/vulkan/gemm.hpp"
#include "graph/matmul_order.hpp"
#include "gemm_test_rig.hpp"

namespace vk = tandem::detail::vk;
using gemm_test::texts;
using tandem::DType;

namespace {

// One device with validation, heaps, a pipeline cache in memory, a Gemm, one command buffer.
class Rig : public gemm_test::DeviceRig {
public:
    Rig() : DeviceRig(true, 64 * gemm_test::MiB) { gemm = std::make_unique<vk::Gemm>(*ctx, *pipelines); }
};

Rig& rig() {
    static Rig r;  // one device for the suite: lavapipe's pipelines compile once per variant
    return r;
}

struct Case {
    bool ta = false, tb = false;
    std::uint32_t m = 0, n = 0, k = 0;
    double alpha = 1, beta = 0;
    std::uint32_t pad = 0;  // extra rows of every leading dimension
    vk::GemmBias bias = vk::GemmBias::none;
    vk::GemmActivation act = vk::GemmActivation::none;
    bool in_place = false;  // D is C
};

std::string describe(const Case& c) {
    return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " m=" + std::to_string(c.m) + " n=" +
           std::to_string(c.n) + " k=" + std::to_string(c.k) + " alpha=" + std::to_string(c.alpha) +
           " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad) + " bias=" +
           std::to_string(static_cast<int>(c.bias)) + " act=" + std::to_string(static_cast<int>(c.act)) +
           (c.in_place ? " in place" : "");
}

template <class T>
struct Host {
    std::uint32_t lda, ldb, ldc;
    std::vector<T> a, b, c, bias;
};

template <class T>
Host<T> make(const Case& c, std::uint32_t seed) {
    Host<T> h;
    const gemm_test::Layout l = gemm_test::layout(c);
    h.lda = l.lda;
    h.ldb = l.ldb;
    h.ldc = l.ldc;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    auto fill = [&](std::vector<T>& v, std::size_t count) {
        v.resize(count);
        for (auto& x : v) x = static_cast<T>(u(rng));
    };
    fill(h.a, std::size_t{h.lda} * l.a_cols);
    fill(h.b, std::size_t{h.ldb} * l.b_cols);
    fill(h.c, std::size_t{h.ldc} * c.n);
    fill(h.bias, gemm_test::bias_count(c));
    return h;
}

// Runs the product on the device; returns D (ldc x n, as stored; padding rows as C had them when
// in place, else zero-initialised by the test).
template <class T>
std::vector<T> run(const Case& c, const Host<T>& h) {
    Rig& r = rig();
    const DType dt = sizeof(T) == 8 ? DType::f64 : DType::f32;
    r.begin();
    auto a = r.put(h.a), b = r.put(h.b), cc = r.put(h.c);
    auto bias = r.put(h.bias);
    std::vector<T> zeros(h.c.size(), T(0));
    auto d = c.in_place ? cc : r.put(zeros);
    r.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vk::GemmArgs g = gemm_test::gemm_args(c, dt);
    g.a = a->address();
    g.b = b->address();
    g.c = cc->address();
    g.d = d->address();
    g.bias = bias->address();
    g.lda = h.lda;
    g.ldb = h.ldb;
    g.ldc = h.ldc;
    g.ldd = h.ldc;
    r.gemm->record(r.cmd, g);
    return r.read_back<T>(d, h.c.size(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
}

// D(i, j) in the canonical order, then the kernel's epilogue, each step rounded on its own, in T.
template <class T>
T canonical(const Case& c, const Host<T>& h, std::uint32_t i, std::uint32_t j) {
    const T x = tandem::detail::canonical_dot<T>(
        c.k, [&](std::int64_t p) { return c.ta ? h.a[p + std::size_t{i} * h.lda] : h.a[i + std::size_t(p) * h.lda]; },
        [&](std::int64_t p) { return c.tb ? h.b[j + std::size_t(p) * h.ldb] : h.b[p + std::size_t{j} * h.ldb]; });
    T v = static_cast<T>(c.alpha) * x;
    if (c.beta != 0) v = v + static_cast<T>(c.beta) * h.c[i + std::size_t{j} * h.ldc];
    if (c.bias == vk::GemmBias::per_row) v = v + h.bias[i];
    if (c.bias == vk::GemmBias::per_column) v = v + h.bias[j];
    if (c.act == vk::GemmActivation::relu) v = v > T(0) ? v : T(0);
    if (c.act == vk::GemmActivation::relu_zero_first) v = std::isnan(v) ? T(0) : (T(0) > v ? T(0) : v);
    return v;
}

template <class T>
bool same_bits(T x, T y) {
    return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
}

// Every element of D against the canonical order's bits.
template <class T>
void expect_canonical(const Case& c, const Host<T>& h, const std::vector<T>& d) {
    int mismatches = 0;
    for (std::uint32_t j = 0; j < c.n; ++j)
        for (std::uint32_t i = 0; i < c.m; ++i) {
            const T got = d[i + std::size_t{j} * h.ldc], want = canonical(c, h, i, j);
            if (!same_bits(got, want) && ++mismatches <= 5)
                ADD_FAILURE() << "D(" << i << "," << j << ") = " << got << ", the canonical order gives " << want;
        }
    EXPECT_EQ(mismatches, 0) << "elements not the canonical order's bits";
}

// The product split along k (Gemm::record_split) in waves of `parts` chunks; returns D as run().
template <class T>
std::vector<T> run_split(const Case& c, const Host<T>& h, std::uint32_t parts, bool symmetric = false) {
    Rig& r = rig();
    const DType dt = sizeof(T) == 8 ? DType::f64 : DType::f32;
    const vk::ComputePipeline& sum = r.pipelines->get(vk::Gemm::split_sum_kernel(dt));
    r.begin();
    auto a = r.put(h.a), b = symmetric ? a : r.put(h.b);
    std::vector<T> zeros(h.c.size(), T(0)), slices(std::size_t{parts} * c.m * c.n, T(0));
    auto d = r.put(zeros), scratch = r.put(slices);
    r.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vk::GemmArgs g = gemm_test::gemm_args(c, dt);
    g.a = a->address();
    g.b = b->address();
    g.d = d->address();
    g.lda = h.lda;
    g.ldb = symmetric ? h.lda : h.ldb;
    g.ldd = c.m;
    g.symmetric = symmetric;
    const std::uint32_t chunks = (c.k + tandem::detail::kMatmulChunk - 1) / tandem::detail::kMatmulChunk;
    EXPECT_EQ(r.gemm->record_split(r.cmd, g, parts, scratch->address(), sum), 2 * ((chunks + parts - 1) / parts));
    return r.read_back<T>(d, h.c.size(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
}

template <class T>
void check(const Case& c, std::uint32_t seed = 7) {
    SCOPED_TRACE(describe(c) + (sizeof(T) == 4 ? " single" : " double"));
    const Host<T> h = make<T>(c, seed);
    const std::vector<T> d = run(c, h);
    expect_canonical(c, h, d);
    const double eps = std::numeric_limits<T>::epsilon();
    int failures = 0;
    for (std::uint32_t j = 0; j < c.n; ++j)
        for (std::uint32_t i = 0; i < h.ldc; ++i) {
            const std::size_t at = i + std::size_t{j} * h.ldc;
            if (i >= c.m) {
                ASSERT_EQ(d[at], c.in_place ? h.c[at] : T(0)) << "padding row " << i << " of column " << j << " written";
                continue;
            }
            auto [ref, mag, nan] = gemm_test::reference(
                c, i, j,
                [&](std::uint32_t r, std::uint32_t p) -> double {
                    return c.ta ? h.a[p + std::size_t{r} * h.lda] : h.a[r + std::size_t{p} * h.lda];
                },
                [&](std::uint32_t p, std::uint32_t col) -> double {
                    return c.tb ? h.b[col + std::size_t{p} * h.ldb] : h.b[p + std::size_t{col} * h.ldb];
                },
                [&] { return h.c[at]; }, [&](std::uint32_t b) -> double { return h.bias[b]; });
            (void)nan;
            double bound = gemm_test::dot_bound(c.k, eps, mag) + std::numeric_limits<T>::min();
            if (c.act != vk::GemmActivation::none) ref = std::isnan(ref) ? 0.0 : std::max(ref, 0.0);
            const double got = d[at];
            if (!(std::fabs(got - ref) <= bound) && ++failures <= 5)
                ADD_FAILURE() << "D(" << i << "," << j << ") = " << got << ", reference " << ref << ", error "
                              << std::fabs(got - ref) << " > bound " << bound;
        }
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}

template <class T>
void all_transposes(Case c) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            c.ta = ta;
            c.tb = tb;
            check<T>(c);
        }
}

// Restores the device's own tilings when a test that overrides them ends.
struct TilesGuard {
    vk::GemmTiles f32 = rig().gemm->tiles(DType::f32), f64 = rig().gemm->tiles(DType::f64);
    ~TilesGuard() {
        rig().gemm->set_tiles(DType::f32, f32);
        rig().gemm->set_tiles(DType::f64, f64);
    }
};

}  // namespace

TEST(VulkanGemm, AllTransposesSizes) {
    for (auto [m, n, k] : {std::tuple{64u, 64u, 64u}, {37u, 53u, 29u}, {130u, 70u, 300u}, {5u, 131u, 9u}}) {
        all_transposes<float>({false, false, m, n, k});
        all_transposes<double>({false, false, m, n, k});
    }
}

TEST(VulkanGemm, InnerDimensionAcrossChunks) {
    // k = 1, 2 and 3 chunks and a bit (the chains flushed into D between chunks), a k that is a
    // multiple of the chunk, with an epilogue (C and a bias read once, after the last chunk).
    for (std::uint32_t k : {1024u, 1100u, 2048u, 3100u}) {
        all_transposes<float>({false, false, 37, 21, k});
        all_transposes<double>({false, false, 21, 37, k});
    }
    Case c{true, false, 70, 66, 1300, -1.5, 0.5, 2};
    c.bias = vk::GemmBias::per_row;
    c.act = vk::GemmActivation::relu_zero_first;
    check<float>(c);
    check<double>(c);
}

template <class T>
void special_values_case() {
    SCOPED_TRACE(sizeof(T) == 4 ? "single" : "double");
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), T(-0.0), T(0), std::numeric_limits<T>::min(),
                          -std::numeric_limits<T>::min(), T(1e-30), T(-1e-30), T(1), T(-1)};
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> pick(0, static_cast<int>(std::size(specials)) - 1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            const Case c{ta, tb, 33, 19, 700};
            Host<T> h = make<T>(c, 9);
            for (auto& v : h.a) v = rng() % 16 == 0 ? specials[pick(rng)] : static_cast<T>(u(rng));
            for (auto& v : h.b) v = rng() % 16 == 0 ? specials[pick(rng)] : static_cast<T>(u(rng));
            SCOPED_TRACE(describe(c));
            expect_canonical(c, h, run(c, h));
        }
    // A chain that underflows to -0 keeps it past the positions beyond k (padded as -0 * +0).
    const Case c{false, false, 1, 1, 1};
    Host<T> h = make<T>(c, 1);
    const T tiny = std::numeric_limits<T>::min();
    h.a = {-tiny};
    h.b = {tiny};
    const std::vector<T> d = run(c, h);
    EXPECT_TRUE(std::signbit(d[0]) && d[0] == T(0)) << d[0];
    expect_canonical(c, h, d);
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}

TEST(VulkanGemm, SpecialValuesGiveTheCanonicalBits) {
    special_values_case<float>();
    special_values_case<double>();
}

TEST(VulkanGemm, SplitInWavesGivesTheUnsplitBits) {
    // k of 5 chunks and a bit, in waves of 2 and of 4 parts (the later waves' sums start from D),
    // every transpose; and A'A split (the symmetric kernel's slices hold the upper tiles, the sum
    // reads a lower element at its mirror).
    for (std::uint32_t parts : {2u, 4u})
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                const Case c{ta, tb, 37, 21, 5 * 1024 + 77};
                SCOPED_TRACE(describe(c) + " parts " + std::to_string(parts));
                const Host<float> hf = make<float>(c, 3);
                expect_canonical(c, hf, run_split(c, hf, parts));
                const Host<double> hd = make<double>(c, 4);
                expect_canonical(c, hd, run_split(c, hd, parts));
            }
    Case c{true, false, 150, 150, 3 * 1024 + 5};  // several tiles: slices keep the upper ones
    Host<double> h = make<double>(c, 5);
    h.b = h.a;
    h.ldb = h.lda;
    expect_canonical(c, h, run_split(c, h, 2, true));
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}

TEST(VulkanGemm, AlphaBetaPaddingInPlace) {
    all_transposes<float>({false, false, 45, 38, 33, -2.5, 0.5, 3});
    all_transposes<double>({false, false, 45, 38, 33, 0.75, -1.0, 5});
    Case c{false, true, 70, 66, 40, 1.5, 2.0, 1};
    c.in_place = true;
    check<float>(c);
    check<double>(c);
}

TEST(VulkanGemm, BiasAndRelu) {
    for (auto bias : {vk::GemmBias::per_row, vk::GemmBias::per_column})
        for (auto act : {vk::GemmActivation::none, vk::GemmActivation::relu}) {
            Case c{true, false, 67, 71, 19, 1.0, 0.5};
            c.bias = bias;
            c.act = act;
            check<float>(c);
            check<double>(c);
        }
}

TEST(VulkanGemm, VectorAndEmptyShapes) {
    for (auto [m, n, k] : {std::tuple{1u, 200u, 33u}, {200u, 1u, 33u}, {1u, 1u, 1000u}, {1u, 1u, 1u}, {9u, 7u, 0u}}) {
        all_transposes<float>({false, false, m, n, k, 1.5, 0.5, 2});
        all_transposes<double>({false, false, m, n, k, 1.5, 0.5, 0});
    }
    // k = 0 and beta = 0: D = 0 + bias.
    Case c{false, false, 9, 7, 0, 1.0, 0.0};
    c.bias = vk::GemmBias::per_column;
    check<double>(c);
    // Empty results record nothing.
    for (auto [m, n] : {std::pair{0u, 5u}, {5u, 0u}, {0u, 0u}}) {
        const vk::GemmArgs g = gemm_test::empty_args(m, n);
        rig().begin();
        EXPECT_NO_THROW(rig().gemm->record(rig().cmd, g));
        rig().submit_and_wait();
    }
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}

template <class T>
void nan_inf_case() {
    SCOPED_TRACE(sizeof(T) == 4 ? "single" : "double");
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    const std::uint32_t m = 40, n = 30, k = 20;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Case c{ta, tb, m, n, k, 1.0, 1.0};
            Host<T> h;
            h.lda = ta ? k : m;
            h.ldb = tb ? n : k;
            h.ldc = m;
            h.a.assign(std::size_t{m} * k, T(1));
            h.b.assign(std::size_t{k} * n, T(0.5));
            h.c.assign(std::size_t{m} * n, T(7));
            auto A = [&](std::uint32_t i, std::uint32_t p) -> T& { return h.a[ta ? p + i * k : i + p * m]; };
            auto B = [&](std::uint32_t p, std::uint32_t j) -> T& { return h.b[tb ? j + p * n : p + j * k]; };
            A(2, 3) = nan;
            A(5, 1) = inf;
            B(1, 4) = T(0);
            h.c[17 + 9 * m] = nan;
            std::vector<T> d = run(c, h);
            for (std::uint32_t j = 0; j < n; ++j)
                for (std::uint32_t i = 0; i < m; ++i) {
                    const T got = d[i + j * m];
                    if (i == 2 || (i == 5 && j == 4) || (i == 17 && j == 9))
                        EXPECT_TRUE(std::isnan(got)) << "D(" << i << "," << j << ") = " << got;
                    else if (i == 5) EXPECT_EQ(got, inf) << "D(5," << j << ")";
                    else EXPECT_EQ(got, T(7 + 0.5 * (j == 4 ? k - 1 : k))) << "D(" << i << "," << j << ")";
                }
            // beta = 0: C (NaN at (17, 9)) is not read.
            c.beta = 0;
            d = run(c, h);
            EXPECT_EQ(d[17 + 9 * m], T(0.5 * k));
            EXPECT_TRUE(std::isnan(d[2 + 7 * m]));
            EXPECT_EQ(d[5 + 7 * m], inf);
            // relu is MATLAB's max(x, 0), the graph op the epilogue replaces: NaN gives 0.
            c.act = vk::GemmActivation::relu;
            c.alpha = -1;
            d = run(c, h);
            EXPECT_EQ(d[2 + 7 * m], T(0));
            EXPECT_EQ(d[5 + 7 * m], T(0));
            EXPECT_EQ(d[0], T(0));
        }
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}

TEST(VulkanGemm, NanAndInfPropagate) {
    nan_inf_case<float>();
    nan_inf_case<double>();
}

TEST(VulkanGemm, EveryTilingThatFitsTheDevice) {
    // The GPU tilings (the H100 takes the largest) run on lavapipe too where they fit.
    TilesGuard guard;
    const vk::DeviceDescription& dev = rig().ctx->description();
    // {..., vw, wm, pad}: wm arranges the 32 invocations of a warp as a wm x (32 / wm) block,
    // pad 0 drops the shared tiles' padding (deeper bk).
    const std::vector<vk::GemmTiles> tilings = {{128, 128, 8, 8, 8},       {128, 64, 8, 8, 4},        {64, 64, 8, 4, 4},
                                                {32, 32, 8, 4, 4},         {32, 32, 8, 2, 2},         {64, 128, 16, 4, 8},
                                                {64, 64, 8, 4, 4, 1},      {128, 64, 8, 8, 4, 1},     {32, 32, 8, 4, 4, 2},
                                                {128, 128, 16, 8, 8},      {128, 128, 12, 8, 8, 0, 0, 0},
                                                {64, 64, 8, 4, 4, 0, 4},   {64, 64, 8, 4, 4, 1, 8},   {32, 64, 8, 2, 4, 0, 2},
                                                {64, 64, 12, 4, 4, 0, 16, 0}};
    int ran = 0;
    for (DType dt : {DType::f32, DType::f64})
        for (const vk::GemmTiles& t : tilings) {
            if (!t.unfit_reason(dt, dev).empty()) continue;
            SCOPED_TRACE(t.name());
            rig().gemm->set_tiles(dt, t);
            ++ran;
            if (dt == DType::f32) all_transposes<float>({false, false, 200, 141, 37, 1.0, 0.5});
            else all_transposes<double>({false, false, 141, 200, 37, -1.0, 0.5});
        }
    EXPECT_GE(ran, 12);
}

TEST(VulkanGemm, EpilogueNamesEveryAccumulatorOnce) {
    // The epilogue is straight-line code (GEMM_EPILOGUE): one store_element per element of the
    // register tile, each with literal indices. A loop over the accumulators there made NVIDIA's
    // compiler keep them all in local memory for f64 (1 TFLOP/s instead of 16).
    for (const vk::GemmTiles& t : {vk::GemmTiles{128, 128, 8, 8, 8}, vk::GemmTiles{64, 64, 8, 4, 4, 1},
                                   vk::GemmTiles{128, 64, 8, 8, 4, 0, 8}})
        for (DType dt : {DType::f32, DType::f64}) {
            SCOPED_TRACE(t.name());
            const std::string glsl = vk::gemm_kernel(dt, false, false, vk::GemmActivation::none, t).glsl;
            // The macro's definition: from #define to the first line that does not continue.
            const std::size_t from = glsl.find("#define GEMM_EPILOGUE");
            ASSERT_NE(from, std::string::npos);
            std::size_t to = glsl.find('\n', from);
            while (to != std::string::npos && glsl[to - 1] == '\\') to = glsl.find('\n', to + 1);
            const std::string src = glsl.substr(from, to - from);
            std::vector<std::string> seen;
            for (std::size_t at = src.find("store_element(i0 + "); at != std::string::npos;
                 at = src.find("store_element(i0 + ", at + 1))
                seen.push_back(src.substr(at, src.find(';', at) - at));
            EXPECT_EQ(seen.size(), std::size_t{t.tm} * t.tn);
            std::sort(seen.begin(), seen.end());
            EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "an element stored twice";
        }
}

TEST(VulkanGemm, GridWiderThan65535GroupsIsSplit) {
    TilesGuard guard;
    rig().gemm->set_tiles(DType::f32, {32, 32, 8, 4, 4});
    // 65536 + 1 tiles along m: two dispatches along x.
    Case c{false, false, 32u * 65536u + 5u, 1, 2, 1.0, 0.0};
    vk::GemmArgs g;
    g.dtype = DType::f32;
    g.m = c.m;
    g.n = 1;
    EXPECT_EQ(rig().gemm->grid(g).first, 65537u);
    check<float>(c);
}

TEST(VulkanGemm, TilesChosenPerDevice) {
    vk::DeviceDescription nvidia;
    nvidia.type = "discrete";
    nvidia.shared_memory_bytes = 48 * 1024;
    nvidia.max_workgroup_invocations = 1024;
    const vk::GemmTiles f64 = vk::choose_gemm_tiles(nvidia, DType::f64), f32 = vk::choose_gemm_tiles(nvidia, DType::f32);
    EXPECT_LE(f64.shared_bytes(DType::f64), 48u * 1024);
    EXPECT_LE(f32.shared_bytes(DType::f32), 48u * 1024);
    EXPECT_EQ(f64.bm, 128u);
    vk::DeviceDescription small = nvidia;
    small.shared_memory_bytes = 32 * 1024;
    const vk::GemmTiles f64s = vk::choose_gemm_tiles(small, DType::f64);
    EXPECT_LE(f64s.shared_bytes(DType::f64), 32u * 1024);
    const vk::DeviceDescription& here = rig().ctx->description();
    for (DType dt : {DType::f32, DType::f64}) {
        const vk::GemmTiles t = rig().gemm->tiles(dt);
        EXPECT_EQ(t.unfit_reason(dt, here), "") << t.name();
        EXPECT_LE(t.shared_bytes(dt), here.shared_memory_bytes);
    }
    vk::DeviceDescription tiny = nvidia;
    tiny.shared_memory_bytes = 1024;
    EXPECT_THROW(vk::choose_gemm_tiles(tiny, DType::f64), tandem::DeviceError);
    EXPECT_THROW(rig().gemm->set_tiles(DType::f32, {128, 128, 8, 3, 8}), tandem::ValueError);
    EXPECT_THROW(rig().gemm->set_tiles(DType::f32, {64, 64, 8, 4, 4, 0, 3}), tandem::ValueError);   // wm 3
    EXPECT_THROW(rig().gemm->set_tiles(DType::f32, {64, 64, 8, 4, 4, 0, 32}), tandem::ValueError);  // wm 32
    EXPECT_THROW(rig().gemm->set_tiles(DType::f32, {32, 32, 8, 4, 4, 0, 16}), tandem::ValueError);  // 8x8 invocations
    EXPECT_THROW(rig().gemm->set_tiles(DType::f32, {64, 64, 8, 4, 4, 0, 0, 2}), tandem::ValueError);  // pad 2
    EXPECT_EQ(vk::GemmTiles({128, 128, 12, 8, 8, 0, 8, 0}).name(), "128x128x12/8x8w8p0");
    EXPECT_EQ(vk::GemmTiles({128, 128, 12, 8, 8, 0, 0, 0}).shared_bytes(DType::f64), 48u * 1024);
}

TEST(VulkanGemm, BadArgumentsThrowBeforeRecording) {
    vk::GemmArgs g;
    g.dtype = DType::f64;
    g.m = 10;
    g.n = 10;
    g.k = 10;
    g.a = g.b = g.d = 256;
    g.lda = 9;  // < m
    g.ldb = g.ldd = 10;
    rig().begin();
    EXPECT_THROW(rig().gemm->record(rig().cmd, g), tandem::ValueError);
    g.lda = 10;
    g.beta = 1;  // C needed but absent
    EXPECT_THROW(rig().gemm->record(rig().cmd, g), tandem::ValueError);
    g.beta = 0;
    g.a = 260;  // misaligned for doubles
    EXPECT_THROW(rig().gemm->record(rig().cmd, g), tandem::ValueError);
    rig().submit_and_wait();
    EXPECT_EQ(rig().ctx->validation_messages(), 0u) << texts(*rig().ctx);
}
