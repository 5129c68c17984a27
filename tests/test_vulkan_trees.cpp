// Random fused trees and multi-output plans on the Vulkan device, through the public API: a GPU
// runtime (Config::device = "vulkan", placement = "gpu"; lavapipe in CI, the Khronos
// validation layer on) against a CPU-only runtime fed the same inputs:
//  - random fused trees (random_trees.hpp), the root and an inner node gathered together:
//    bit-identical without transcendental ops; trees of ops with bounded derivatives (sin, tanh,
//    exp(-|x|), hypot, ...) within a tolerance relative to magnitude, in double and single;
//  - multi-output plans, regions of several shapes, values kept on the device for a later plan,
//    a plan split between the CPU and the GPU (device_min_elements);
//  - an array larger than lavapipe's maxStorageBufferRange (128 MiB).
// Every test ends with Metrics::validation_messages == 0, and checks that the regions did run on
// the device (no silent fallback to the CPU).
//
// No Vulkan device: the tests FAIL (CI installs lavapipe and the validation layers).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "random_trees.hpp"
#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

// ---- runtimes (vulkan_runtime.hpp) ---------------------------------------------------------------

using tvk::cpu_config;
using tvk::expect_device_clean;
using tvk::gpu_config;
using tvk::open_gpu;

// ---- random fused trees -------------------------------------------------------------------------

using ttree::Built;
using ttree::Generator;
using ttree::Kind;
using ttree::ShapeSet;
using ttree::Tree;

// 13x11x7 = 1001 elements: lavapipe runs f64 transcendentals slowly, a few thousand at most.
const ShapeSet kFull{"13x11x7", {{13, 11, 7}, {13, 1, 7}, {1, 11, 1}, {1, 1}, {13, 11}, {1, 11, 7}}};
const ShapeSet kEmpty{"13x0x7", {{13, 0, 7}, {13, 1, 7}, {1, 0, 1}, {1, 1}, {13, 0}, {1, 1, 7}}};

// Every non-transcendental op, comparisons, logical ops and where, mixed element types with
// special values: bit-identical to the CPU.
const ttree::Family kExactOps{ttree::Style::mixed, ttree::row_ops(1, false, {"single", "double"}),
                              ttree::row_ops(2, false, {"ldivide"})};

// Ops with bounded derivatives (transcendentals among them) on leaves in [-2, 2] + NaN/Inf:
// close to the CPU relative to the magnitude bound; double leaves, then single.
const std::vector<std::string> kBoundedUnary = {"uminus", "abs",       "sin",       "cos",       "tanh",
                                                "atan",   "exp(-abs)", "sqrt(abs)", "log1p(abs)"};
const std::vector<std::string> kBoundedBinary = {"plus", "minus", "times", "min", "max", "hypot", "div1abs"};
const ttree::Family kBoundedOps{ttree::Style::bounded, kBoundedUnary, kBoundedBinary, DType::f64};
const ttree::Family kBoundedSingleOps{ttree::Style::bounded, kBoundedUnary, kBoundedBinary, DType::f32};

void run_trees(const ttree::Family& family, const ShapeSet& shapes, int count, std::uint64_t base_seed) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    int max_depth_seen = 0, with_trans = 0;
    for (int it = 0; it < count; ++it) {
        const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(it);
        Generator gen(seed, family);
        Tree t = gen.make(shapes, 1 + it % 8);
        max_depth_seen = std::max(max_depth_seen, t.depth);
        with_trans += t.transcendental ? 1 : 0;
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + t.describe());
        // the root and an inner node, gathered together (a multi-output plan)
        int inner = t.root;
        for (int tries = 0; tries < 10; ++tries) {
            const int j = static_cast<int>((seed * 31 + static_cast<std::uint64_t>(tries) * 7) % t.nodes.size());
            if (t.nodes[static_cast<std::size_t>(j)].kind != Kind::number) {
                inner = j;
                break;
            }
        }
        Built bg(*gpu, t), bc(cpu, t);
        std::vector<tandem::HostArray> hg, hc;
        const auto m0 = gpu->metrics();
        try {
            hc = cpu.gather({bc.array(t.root), bc.array(inner)}).get();
            hg = gpu->gather({bg.array(t.root), bg.array(inner)}).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
            break;
        }
        EXPECT_EQ(gpu->metrics().device_fallbacks, m0.device_fallbacks) << "a region fell back to the CPU";
        for (int k = 0; k < 2; ++k) {
            const Host g = tref::from_host_array(hg[static_cast<std::size_t>(k)]);
            const Host c = tref::from_host_array(hc[static_cast<std::size_t>(k)]);
            const char* which = k == 0 ? "root" : "inner node";
            // every family, transcendentals included: one math library on both executors
            EXPECT_TRUE(tref::same_values(g, c, Acc::exact_signed)) << which << ": GPU vs CPU";
        }
        if (::testing::Test::HasFailure()) break;  // one failing tree is enough to look at
    }
    EXPECT_EQ(max_depth_seen, 8) << "the generator should reach depth 8";
    if (family.style == ttree::Style::bounded && shapes.name == kFull.name) {
        EXPECT_GT(with_trans, count / 2) << "most bounded trees should hold a transcendental op";
    }
    expect_device_clean(*gpu);
}

// Tree counts keep this file near a minute on lavapipe with validation: every tree is a new
// kernel, and lavapipe compiles f64 transcendental code slowly (~0.2 s a tree).
TEST(VulkanBackendTrees, ExactOpsBitIdenticalToCpu) { run_trees(kExactOps, kFull, 100, 21000); }
TEST(VulkanBackendTrees, ExactOpsBitIdenticalToCpuEmpty) { run_trees(kExactOps, kEmpty, 16, 23000); }
TEST(VulkanBackendTrees, BoundedOpsDoubleCloseToCpu) { run_trees(kBoundedOps, kFull, 40, 25000); }
TEST(VulkanBackendTrees, BoundedOpsSingleCloseToCpu) { run_trees(kBoundedSingleOps, kFull, 24, 27000); }

// Placement never changes the answer: random exact trees, reduced along each dimension and in
// all (sums, products, means, max, min: several chunks of the canonical order along the first
// dimension), give the same bits with every region on the CPU, on the device, and placed by the
// cost model.
TEST(VulkanBackendTrees, ReducedTreesSameBitsOnEveryPlacement) {
    const ShapeSet kLong{"2100x3x2", {{2100, 3, 2}, {2100, 1, 2}, {1, 3, 1}, {1, 1}, {2100, 3}, {1, 3, 2}}};
    tandem::Config automatic = gpu_config();
    automatic.placement = "auto";
    auto gpu = open_gpu();
    auto placed = open_gpu(automatic);
    Runtime cpu(cpu_config());
    for (int it = 0; it < 24; ++it) {
        const std::uint64_t seed = 29000 + static_cast<std::uint64_t>(it);
        Generator gen(seed, kExactOps);
        Tree t = gen.make(kLong, 1 + it % 6);
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + t.describe());
        auto reduced = [&](Runtime& rt) {
            Built b(rt, t);
            const Array x = tandem::as_double(b.array(t.root));
            std::vector<Array> rs;
            for (int dim : {1, 2, 3}) {
                rs.push_back(tandem::sum(x, dim));
                rs.push_back(tandem::prod(x * 1e-3 + 1.0, dim));
                rs.push_back(tandem::mean(x, dim, tandem::NanFlag::omitnan));
                rs.push_back(tandem::max(x, {}, dim));
            }
            rs.push_back(tandem::sum(x, tandem::all_dims));
            rs.push_back(tandem::min(x, tandem::all_dims));
            return rt.gather(rs).get();
        };
        const auto hc = reduced(cpu), hg = reduced(*gpu), ha = reduced(*placed);
        ASSERT_EQ(hc.size(), hg.size());
        for (std::size_t k = 0; k < hc.size(); ++k) {
            const Host c = tref::from_host_array(hc[k]);
            EXPECT_TRUE(tref::same_values(tref::from_host_array(hg[k]), c, Acc::exact_signed)) << "result " << k << ": GPU vs CPU";
            EXPECT_TRUE(tref::same_values(tref::from_host_array(ha[k]), c, Acc::exact_signed)) << "result " << k << ": auto vs CPU";
        }
        if (::testing::Test::HasFailure()) break;
    }
    expect_device_clean(*gpu);
}

// ---- plans: several outputs, several shapes, CPU and GPU together -----------------------------

std::vector<Array> plan_values(Runtime& rt, const Host& col, const Host& row, const Host& mat, const Host& small) {
    Array c = tref::make_array(rt, col), r = tref::make_array(rt, row), m = tref::make_array(rt, mat),
          s = tref::make_array(rt, small);
    Array e = tandem::exp(c * 0.01) + r;            // exp on the column, expanded by the row
    Array big = e * m - tandem::sin(m);             // large: n x k
    Array small_v = tandem::tanh(s) * 2.0 + 1.0;    // small: 1 x k
    Array mixed = big / (1.0 + tandem::abs(small_v));  // large region reading a small value
    Array tall = tandem::hypot(c, 3.0);             // n x 1
    Array cmp = (big > small_v) | (m < 0.0);        // logical output
    Array sgl = tandem::single(big) + 1.0;          // single output
    return {e, big, small_v, mixed, tall, cmp, sgl, small_v - 1.0, tandem::round(big * 1e3)};
}

void compare_plans(const std::vector<tandem::HostArray>& got, const std::vector<tandem::HostArray>& want,
                   const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        const Host g = tref::from_host_array(got[k]), w = tref::from_host_array(want[k]);
        // transcendentals inside, the same bits: both executors run one math library
        EXPECT_TRUE(tref::same_values(g, w, Acc::exact_signed)) << what << ": output " << k;
    }
}

TEST(VulkanBackendPlans, MultiOutputSeveralShapesMatchCpu) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(77);
    const std::int64_t n = 300, k = 40;
    Host col = tref::random_host({n, 1}, DType::f64, rng, false), row = tref::random_host({1, k}, DType::f64, rng, false),
         mat = tref::random_host({n, k}, DType::f64, rng, false), small = tref::random_host({1, k}, DType::f64, rng, false);
    for (auto* h : {&col, &row, &mat, &small})
        for (auto& x : h->v) x = std::fmod(x, 4.0);
    const auto want = cpu.gather(plan_values(cpu, col, row, mat, small)).get();
    const auto got = gpu->gather(plan_values(*gpu, col, row, mat, small)).get();
    compare_plans(got, want, "one plan on the GPU");
    // Gathered one by one too (values reused from the device where they are there).
    auto vals = plan_values(*gpu, col, row, mat, small);
    std::vector<tandem::Future<tandem::HostArray>> fs;
    for (auto& v : vals) fs.push_back(v.gather());
    std::vector<tandem::HostArray> one_by_one;
    for (auto& f : fs) one_by_one.push_back(f.get());
    compare_plans(one_by_one, want, "separate gathers on the GPU");
    // A value computed on the GPU, kept there, used by a later plan.
    Array kept = vals[1] * 2.0;
    auto h1 = kept.gather().get();
    Array later = kept + tandem::cos(vals[0]);
    auto h2 = later.gather().get();
    auto cv = plan_values(cpu, col, row, mat, small);
    auto w1 = (cv[1] * 2.0).gather().get();
    auto w2 = ((cv[1] * 2.0) + tandem::cos(cv[0])).gather().get();
    compare_plans({h1, h2}, {w1, w2}, "a GPU value used by a later plan");
    expect_device_clean(*gpu);
}

TEST(VulkanBackendPlans, SmallRegionsOnCpuLargeOnGpuInOnePlan) {
    // device_min_elements = 1000: the 1 x 40 regions run on the CPU, the 300 x 40 ones on the GPU,
    // in one plan; the results equal a CPU-only runtime's.
    tandem::Config c = gpu_config();
    c.device_min_elements = 1000;
    auto mixed = open_gpu(c);
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(78);
    const std::int64_t n = 300, k = 40;
    Host col = tref::random_host({n, 1}, DType::f64, rng, false), row = tref::random_host({1, k}, DType::f64, rng, false),
         mat = tref::random_host({n, k}, DType::f64, rng, false), small = tref::random_host({1, k}, DType::f64, rng, false);
    for (auto* h : {&col, &row, &mat, &small})
        for (auto& x : h->v) x = std::fmod(x, 4.0);
    const auto m0 = mixed->metrics();
    const auto got = mixed->gather(plan_values(*mixed, col, row, mat, small)).get();
    const auto m1 = mixed->metrics();
    const auto want = cpu.gather(plan_values(cpu, col, row, mat, small)).get();
    compare_plans(got, want, "a plan split between CPU and GPU");
    EXPECT_GT(m1.device_regions - m0.device_regions, 0u) << "the large regions should run on the GPU";
    EXPECT_GT(m1.regions_executed - m0.regions_executed, m1.device_regions - m0.device_regions)
        << "the small regions should run on the CPU";
    // A large value on the GPU read by a region below the threshold (0 elements, on the CPU), and
    // a small CPU value read by a GPU region.
    Array big = tandem::exp(tref::make_array(*mixed, mat) * 0.1);  // GPU, stays there
    Array none = big + mixed->zeros(tandem::Shape{n, k, 0});       // n x k x 0: CPU
    Array s = tandem::sin(tref::make_array(*mixed, small));        // CPU
    Array both = big * s;                                          // GPU
    auto h = mixed->gather({none, both}).get();
    Array cbig = tandem::exp(tref::make_array(cpu, mat) * 0.1);
    auto hw = cpu.gather({cbig + cpu.zeros(tandem::Shape{n, k, 0}), cbig * tandem::sin(tref::make_array(cpu, small))}).get();
    compare_plans(h, hw, "GPU value read by an empty CPU region; CPU value read by a GPU region");
    expect_device_clean(*mixed);
}

// ---- an array larger than maxStorageBufferRange -------------------------------------------------

TEST(VulkanBackendLarge, ArrayLargerThanMaxStorageBufferRange) {
    // 136 MiB of doubles: more than lavapipe's 128 MiB maxStorageBufferRange.
    const std::int64_t n = (std::int64_t{136} << 20) / 8;
    auto gpu = open_gpu();
    std::vector<double> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < a.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = static_cast<double>(s >> 11) * 0x1p-40 - 4096.0;
        b[i] = static_cast<double>(i) * 0.25 + 1.0 / static_cast<double>(1 + (i & 1023));
    }
    Array x = gpu->array(std::span<const double>(a), tandem::Shape{n, 1});
    Array y = gpu->array(std::span<const double>(b), tandem::Shape{n, 1});
    const auto h = (x + y).gather().get();
    ASSERT_EQ(h.numel(), n);
    const double* p = h.data<double>();
    std::int64_t bad = 0, first_bad = -1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double want = a[i] + b[i];  // the CPU executor's result: one IEEE addition
        if (std::bit_cast<std::uint64_t>(p[i]) != std::bit_cast<std::uint64_t>(want)) {
            if (first_bad < 0) first_bad = static_cast<std::int64_t>(i);
            ++bad;
        }
    }
    EXPECT_EQ(bad, 0) << "elements differ from the CPU, first at index " << first_bad << " (byte offset "
                      << first_bad * 8 << ")"
                      << (first_bad >= 0 ? ": got " + tref::fmt(p[first_bad]) + ", expected " +
                                               tref::fmt(a[static_cast<std::size_t>(first_bad)] + b[static_cast<std::size_t>(first_bad)])
                                         : std::string());
    EXPECT_EQ(p[n - 1], a.back() + b.back()) << "the last element (beyond 128 MiB)";
    expect_device_clean(*gpu);
}

}  // namespace

namespace {

/// The harness's W2, small: `d = x - mu` read by the variance's reduction and by the chain
/// after it, which recomputes it (graph/fusion.cpp) instead of reading it back.
std::vector<Host> normalise(Runtime& rt, const std::vector<float>& v, std::int64_t h, std::int64_t w, std::int64_t b) {
    Array x = rt.array(std::span<const float>(v), tandem::Shape{h, w, b});
    Array mu = tandem::mean(tandem::mean(x, 1), 2);
    Array d = x - mu;
    Array sigma = tandem::sqrt(tandem::mean(tandem::mean(d * d, 1), 2));
    Array out = tandem::min(tandem::max(d / (sigma + 1e-6) * 0.25 + 0.5, 0.0), 1.0);
    return {tref::gather(out), tref::gather(tandem::mean(out, tandem::all_dims)), tref::gather(sigma)};
}

}  // namespace

TEST(VulkanBackendTrees, RecomputedProducerMatchesTheMaterialisedOne) {
    const std::int64_t h = 61, w = 37, b = 2;
    std::mt19937_64 rng(11);
    std::vector<float> v(static_cast<std::size_t>(h * w * b));
    for (float& e : v) e = static_cast<float>(tref::random_values(1, DType::f32, rng, false)[0]);
    v[4] = NAN;
    v[9] = -0.0f;
    auto gpu = open_gpu();
    auto plain = open_gpu(tvk::unfused_gpu_config());
    Runtime cpu(cpu_config());
    const auto g = normalise(*gpu, v, h, w, b), p = normalise(*plain, v, h, w, b), c = normalise(cpu, v, h, w, b);
    for (std::size_t k = 0; k < g.size(); ++k) {
        EXPECT_TRUE(tref::same_values(g[k], p[k], Acc::exact_signed)) << "recomputed vs materialised, value " << k;
        EXPECT_TRUE(tref::same_values(g[k], c[k], Acc::exact_signed)) << "device vs CPU, value " << k;
    }
    expect_device_clean(*gpu);
    expect_device_clean(*plain);
}

// A reduction recomputing the square of a value that a product reads (Xc = X - mean(X): var's
// sum of Xc.^2 squares X - mu as it reads): the bits of every op materialised, on the device.
TEST(VulkanBackendTrees, ReductionRecomputingItsInputMatchesTheMaterialisedOne) {
    const std::int64_t n = 517, d = 9;
    std::mt19937_64 rng(19);
    std::vector<double> v = tref::random_values(n * d, DType::f64, rng, false);
    v[7] = NAN;
    v[30] = -0.0;
    auto run = [&](Runtime& rt) {
        const Array X = rt.array(std::span<const double>(v), tandem::Shape{n, d});
        const Array Xc = X - tandem::mean(X);
        const Array s = tandem::sum(Xc * Xc, 1);
        const Array G = tandem::matmul(Xc, Xc, {.transpose_a = true});
        rt.evaluate({G, s}).get();
        return tref::gather(s);
    };
    auto gpu = open_gpu();
    auto plain = open_gpu(tvk::unfused_gpu_config());
    EXPECT_TRUE(tref::same_values(run(*gpu), run(*plain), Acc::exact_signed));
    expect_device_clean(*gpu);
    expect_device_clean(*plain);
}

namespace {

/// Softmax along `dim`: e = exp(x - max(x)) read by its sum and by e ./ sum(e), which
/// recomputes it (graph/fusion.cpp) instead of reading it back.
std::vector<Host> softmax(Runtime& rt, const std::vector<double>& v, std::int64_t n, std::int64_t d, int dim, bool single) {
    Array x = rt.array(std::span<const double>(v), tandem::Shape{n, d});
    if (single) x = tandem::single(x);
    rt.evaluate({x}).get();  // a leaf: the region counts below are the softmax's
    const Array e = tandem::exp(x - tandem::max(x, {}, dim));
    const Array p = e / tandem::sum(e, dim);
    return {tref::gather(p), tref::gather(tandem::sum(p * x, tandem::all_dims))};
}

}  // namespace

TEST(VulkanBackendTrees, SoftmaxWithItsExponentialRecomputedMatchesTheMaterialisedOne) {
    const std::int64_t n = 53, d = 29;
    std::mt19937_64 rng(29);
    std::uniform_real_distribution<double> within(-40.0, 40.0);
    std::vector<double> v(static_cast<std::size_t>(n * d));
    for (double& x : v) x = within(rng);
    v[2] = NAN;
    v[60] = INFINITY;
    v[90] = -INFINITY;
    v[121] = -0.0;
    auto gpu = open_gpu();
    auto plain = open_gpu(tvk::unfused_gpu_config());
    Runtime cpu(cpu_config());
    for (const bool single : {false, true})
        for (const int dim : {1, 2}) {
            SCOPED_TRACE(std::string(single ? "single" : "double") + ", dim " + std::to_string(dim));
            const auto before = gpu->metrics();
            const auto g = softmax(*gpu, v, n, d, dim, single);
            // x's cast (single); p's plan: the max, the sum with e folded in, the division; the checksum.
            EXPECT_EQ(gpu->metrics().device_regions - before.device_regions, single ? 5u : 4u);
            const auto p = softmax(*plain, v, n, d, dim, single), c = softmax(cpu, v, n, d, dim, single);
            for (std::size_t k = 0; k < g.size(); ++k) {
                EXPECT_TRUE(tref::same_values(g[k], p[k], Acc::exact_signed)) << "recomputed vs materialised, value " << k;
                // One reduction order and one exp on both executors: the same bits.
                EXPECT_TRUE(tref::same_values(g[k], c[k], Acc::exact_signed)) << "device vs CPU, value " << k;
            }
        }
    expect_device_clean(*gpu);
    expect_device_clean(*plain);
}
