// Fusion, observed through Runtime::metrics(): elementwise chains of one shape run as one
// region, shared subexpressions are computed once (nodes are hash-consed), several outputs of
// one shape come out of one region, computed values are not recomputed, scalars fold into
// regions, shape changes are region boundaries, and unfused_config() runs one region
// per op. Every case also checks the values. Runtimes get an explicit Config (Runtime() would
// read TANDEM_FUSION and friends from the environment, which must not change these counts).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "draw_loop.hpp"
#include "graph/region.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::Config;
using tandem::Metrics;
using tandem::Runtime;
using tandem::Shape;

namespace {

Config unfused_config() {
    Config c;
    c.fusion = false;
    return c;
}

Config config_with(int threads, std::int64_t block) {
    Config c;
    c.cpu_threads = threads;
    c.block_elements = block;
    return c;
}

struct Delta {
    std::uint64_t plans, regions, ops, failed;
};

Delta diff(const Metrics& before, const Metrics& after) {
    return {after.plans - before.plans, after.regions_executed - before.regions_executed,
            after.ops_executed - before.ops_executed, after.regions_failed - before.regions_failed};
}

std::vector<double> ramp(std::int64_t n, double lo, double hi) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n);
    return v;
}

/// A materialised leaf: gathered once so that later metrics see only the expression's work.
Array leaf(Runtime& rt, const std::vector<double>& v, const Shape& s) {
    Array a = rt.array(std::span<const double>(v), s);
    (void)a.gather().get();
    return a;
}

/// The chain used below: ten elementwise ops on one shape, with scalars mixed in.
Array chain10(const Array& x) {
    Array y = tandem::sin(x);   // 1
    y = y * 2.0;                // 2
    y = y + x;                  // 3
    y = tandem::abs(y);         // 4
    y = tandem::sqrt(y);        // 5
    y = y - 0.25;               // 6
    y = tandem::exp(-y);        // 7, 8 (uminus, exp)
    y = tandem::max(y, x);      // 9
    y = y / 3.0;                // 10
    return y;
}
double chain10_ref(double x) {
    double y = std::sin(x);
    y = y * 2.0;
    y = y + x;
    y = std::fabs(y);
    y = std::sqrt(y);
    y = y - 0.25;
    y = std::exp(-y);
    y = tref::ref_max(y, x);
    return y / 3.0;
}

::testing::AssertionResult near_all(const std::vector<double>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const bool ok = (std::isnan(got[i]) && std::isnan(want[i])) || std::abs(got[i] - want[i]) <= 1e-13 * (1 + std::abs(want[i]));
        if (!ok) return ::testing::AssertionFailure() << "[" << i << "] got " << tref::fmt(got[i]) << " want " << tref::fmt(want[i]);
    }
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Fusion, ChainOfTenOpsIsOneRegion) {
    Runtime rt{Config{}};
    const auto xv = ramp(5000, -3, 3);
    Array x = leaf(rt, xv, Shape{50, 100});
    Array y = chain10(x);
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 10u);
    EXPECT_EQ(d.plans, 1u);
    EXPECT_EQ(d.failed, 0u);
    std::vector<double> want;
    for (double v : xv) want.push_back(chain10_ref(v));
    EXPECT_TRUE(near_all(h.to_doubles(), want));
    EXPECT_GE(rt.metrics().elements_written, 5000u);
}

TEST(Fusion, FusionOffRunsOneRegionPerOp) {
    Runtime rt(unfused_config());
    EXPECT_FALSE(rt.config().fusion);
    EXPECT_FALSE(rt.info().fusion);
    const auto xv = ramp(5000, -3, 3);
    Array x = leaf(rt, xv, Shape{50, 100});
    Array y = chain10(x);
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 10u);
    EXPECT_EQ(d.ops, 10u);
    std::vector<double> want;
    for (double v : xv) want.push_back(chain10_ref(v));
    EXPECT_TRUE(near_all(h.to_doubles(), want));
}

TEST(Fusion, FusedAndUnfusedAreBitIdentical) {
    Runtime fused{Config{}}, unfused(unfused_config());
    const auto xv = ramp(7777, -5, 5);
    auto a = tref::gather(chain10(fused.array(std::span<const double>(xv), Shape{7777, 1})));
    auto b = tref::gather(chain10(unfused.array(std::span<const double>(xv), Shape{7777, 1})));
    EXPECT_TRUE(tref::same_values(a, b, tref::Acc::exact_signed));
}

TEST(Fusion, NodesAreHashConsed) {
    Runtime rt{Config{}};
    std::vector<double> v = {1, 2, 3};
    Array a = rt.array(std::span<const double>(v));
    Array b = rt.array(std::span<const double>(v));
    EXPECT_EQ((a * b).node(), (a * b).node());
    EXPECT_EQ(tandem::sin(a).node(), tandem::sin(a).node());
    EXPECT_EQ((a + 1.0).node(), (a + 1.0).node());
    EXPECT_NE((a + 1.0).node(), (a + 2.0).node());
    EXPECT_NE((a * b).node(), (a + b).node());
    EXPECT_NE(a.node(), b.node()) << "two uploads are two values even with equal contents";
}

TEST(Fusion, SharedSubexpressionIsComputedOnce) {
    Runtime rt{Config{}};
    const auto av = ramp(4096, -2, 2), bv = ramp(4096, 1, 3);
    Array a = leaf(rt, av, Shape{64, 64});
    Array b = leaf(rt, bv, Shape{64, 64});
    Array y = (a * b) + tandem::sin(a * b);  // a*b built twice: one node
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.ops, 3u) << "times, sin, plus";
    EXPECT_EQ(d.regions, 1u);
    std::vector<double> want;
    for (std::size_t i = 0; i < av.size(); ++i) want.push_back(av[i] * bv[i] + std::sin(av[i] * bv[i]));
    EXPECT_TRUE(near_all(h.to_doubles(), want));
}

// Reductions of one input along one dimension share a pass: a batch's sum and max (and mean's
// division, their tail) are one region; its variance about that mean another. The unfused
// runtime's values, bit for bit.
TEST(Fusion, ReductionsOfOneInputAlongOneDimensionShareARegion) {
    Runtime rt{Config{}}, plain(unfused_config());
    const auto bv = ramp(5000, -3, 7);
    auto batch_stats = [&](Runtime& r) {
        Array b = leaf(r, bv, Shape{1000, 5});
        const Array m = tandem::mean(b);
        return std::vector<Array>{m, tandem::max(b), tandem::mean(tandem::power(b - m, 2.0)), tandem::sum(b, 2)};
    };
    const auto m0 = rt.metrics();
    auto got = rt.gather(batch_stats(rt)).get();
    EXPECT_EQ(diff(m0, rt.metrics()).regions, 3u) << "sum and max of b along dim 1, the variance, the sum along dim 2";
    auto want = plain.gather(batch_stats(plain)).get();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].to_doubles(), want[k].to_doubles()) << k;
}

TEST(Fusion, SharedSubexpressionWithFusionOff) {
    Runtime rt(unfused_config());
    const auto av = ramp(1000, -2, 2);
    Array a = leaf(rt, av, Shape{1000, 1});
    Array c = a * a;
    Array y = c + tandem::sin(c) + tandem::cos(c);
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.ops, 5u) << "times, sin, cos, plus, plus";
    EXPECT_EQ(d.regions, 5u);
    std::vector<double> want;
    for (double x : av) want.push_back(x * x + std::sin(x * x) + std::cos(x * x));
    EXPECT_TRUE(near_all(h.to_doubles(), want));
}

TEST(Fusion, MultiOutputGatherIsOneRegion) {
    Runtime rt{Config{}};
    const auto av = ramp(3000, -1, 1);
    Array a = leaf(rt, av, Shape{30, 100});
    Array c = tandem::exp(a) * 0.5;
    Array y = c + 1.0;
    Array z = tandem::tanh(c) - a;
    const auto m0 = rt.metrics();
    auto hs = rt.gather({y, z}).get();
    auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 5u) << "exp, times, plus, tanh, minus";
    EXPECT_EQ(d.plans, 1u);
    ASSERT_EQ(hs.size(), 2u);
    std::vector<double> wy, wz;
    for (double x : av) {
        wy.push_back(std::exp(x) * 0.5 + 1.0);
        wz.push_back(std::tanh(std::exp(x) * 0.5) - x);
    }
    EXPECT_TRUE(near_all(hs[0].to_doubles(), wy));
    EXPECT_TRUE(near_all(hs[1].to_doubles(), wz));

    // Already computed: no new work, neither together nor one by one.
    const auto m1 = rt.metrics();
    auto again = rt.gather({y, z}).get();
    auto hy = y.gather().get();
    auto hz = z.gather().get();
    d = diff(m1, rt.metrics());
    EXPECT_EQ(d.regions, 0u);
    EXPECT_EQ(d.ops, 0u);
    EXPECT_EQ(d.plans, 0u);
    EXPECT_EQ(hy.to_doubles(), hs[0].to_doubles());
    EXPECT_EQ(hz.to_doubles(), hs[1].to_doubles());
    EXPECT_EQ(again[1].to_doubles(), hs[1].to_doubles());
}

TEST(Fusion, ComputedValuesAreReused) {
    Runtime rt{Config{}};
    const auto av = ramp(2000, 0, 4);
    Array a = leaf(rt, av, Shape{2000, 1});
    Array y = tandem::sin(a) * tandem::cos(a);
    (void)y.gather().get();
    const auto m0 = rt.metrics();
    Array w = y * 2.0 + 1.0;
    auto h = w.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 2u) << "y is not recomputed";
    std::vector<double> want;
    for (double x : av) want.push_back(std::sin(x) * std::cos(x) * 2.0 + 1.0);
    EXPECT_TRUE(near_all(h.to_doubles(), want));
}

TEST(Fusion, SecondGatherRunsNothing) {
    Runtime rt{Config{}};
    Array a = leaf(rt, ramp(100, 0, 1), Shape{10, 10});
    Array y = tandem::exp(a) + a;
    auto h1 = y.gather().get();
    const auto m0 = rt.metrics();
    auto h2 = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 0u);
    EXPECT_EQ(d.plans, 0u);
    EXPECT_EQ(h1.to_doubles(), h2.to_doubles());
}

TEST(Fusion, ShapeChangeIsARegionBoundary) {
    Runtime rt{Config{}};
    const auto cv = ramp(5, -1, 1), rv = ramp(4, 0, 2);
    Array col = leaf(rt, cv, Shape{5, 1});
    Array row = leaf(rt, rv, Shape{1, 4});
    Array y = tandem::exp(col) + row;
    EXPECT_EQ(y.shape(), Shape({5, 4}));
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 2u);
    EXPECT_EQ(d.ops, 2u);
    for (std::int64_t j = 0; j < 4; ++j)
        for (std::int64_t i = 0; i < 5; ++i)
            EXPECT_NEAR(h.at({i, j}), std::exp(cv[static_cast<std::size_t>(i)]) + rv[static_cast<std::size_t>(j)], 1e-14);
}

TEST(Fusion, ExpansionOfLeavesNeedsNoBoundary) {
    Runtime rt{Config{}};
    Array col = leaf(rt, ramp(5, -1, 1), Shape{5, 1});
    Array row = leaf(rt, ramp(4, 0, 2), Shape{1, 4});
    Array y = tandem::sin(col + row) * 2.0;  // every op has the output shape
    const auto m0 = rt.metrics();
    auto h = y.gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 3u);
    EXPECT_EQ(h.shape(), Shape({5, 4}));
}

TEST(Fusion, ScalarsFoldIntoTheRegion) {
    Runtime rt{Config{}};
    const auto xv = ramp(1000, -1, 1);
    Array x = leaf(rt, xv, Shape{1000, 1});
    auto m0 = rt.metrics();
    auto h = (x + 1.0).gather().get();
    auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 1u);
    for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(h.at(static_cast<std::int64_t>(i)), xv[i] + 1.0);

    m0 = rt.metrics();
    auto h2 = (2 * x - 0.5 / (x * x + 3.0)).gather().get();
    d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 1u);
    EXPECT_EQ(d.ops, 5u);
    for (std::size_t i = 0; i < xv.size(); ++i)
        EXPECT_EQ(h2.at(static_cast<std::int64_t>(i)), 2 * xv[i] - 0.5 / (xv[i] * xv[i] + 3.0));
}

TEST(Fusion, IndependentSameShapeValuesOneRegionEach) {
    Runtime rt{Config{}};
    Array a = leaf(rt, ramp(500, 0, 1), Shape{500, 1});
    Array b = leaf(rt, ramp(500, 1, 2), Shape{500, 1});
    const auto m0 = rt.metrics();
    (void)(a + b).gather().get();
    (void)(a - b).gather().get();
    const auto d = diff(m0, rt.metrics());
    EXPECT_EQ(d.regions, 2u);
    EXPECT_EQ(d.plans, 2u);
}

TEST(Fusion, BlockBoundariesDoNotMatter) {
    // Results must not depend on the block size of the CPU interpreter.
    const auto xv = ramp(10007, -4, 4);
    tref::Host first;
    for (std::int64_t block : {64, 112, 2048, 1048576}) {
        SCOPED_TRACE("block_elements=" + std::to_string(block));
        Runtime rt(config_with(0, block));
        auto h = tref::gather(chain10(rt.array(std::span<const double>(xv), Shape{10007, 1})));
        if (first.v.empty()) first = h;
        else EXPECT_TRUE(tref::same_values(h, first, tref::Acc::exact_signed));
    }
}

TEST(Fusion, ThreadCountDoesNotMatter) {
    const auto xv = ramp(20000, -4, 4);
    tref::Host first;
    for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("cpu_threads=" + std::to_string(threads));
        Runtime rt(config_with(threads, 256));
        EXPECT_EQ(rt.info().cpu_threads, threads);
        auto h = tref::gather(chain10(rt.array(std::span<const double>(xv), Shape{100, 200})));
        if (first.v.empty()) first = h;
        else EXPECT_TRUE(tref::same_values(h, first, tref::Acc::exact_signed));
    }
}

TEST(Fusion, DescribeNamesTheOps) {
    Runtime rt{Config{}};
    Array a = rt.zeros(Shape{2, 2});
    const std::string s = (tandem::sin(a) + 1.0).describe();
    EXPECT_NE(s.find("sin"), std::string::npos) << s;
    EXPECT_NE(s.find("plus"), std::string::npos) << s;
}

TEST(Fusion, WaitIdle) {
    Runtime rt{Config{}};
    Array a = leaf(rt, ramp(50000, 0, 1), Shape{50000, 1});
    auto f = tandem::exp(tandem::sin(a)).gather();
    rt.wait_idle();
    EXPECT_TRUE(f.ready());
    EXPECT_EQ(f.get().numel(), 50000);
}

// ---- introspection ------------------------------------------------------------------------------

TEST(Introspection, InfoDescribesTheRuntime) {
    Runtime rt(config_with(2, 4096));
    const auto info = rt.info();
    EXPECT_FALSE(info.version.empty());
    EXPECT_FALSE(info.build.empty());
    EXPECT_EQ(info.cpu_threads, 2);
    EXPECT_EQ(info.block_elements, 4096);
    EXPECT_EQ(rt.config().block_elements, 4096);
    EXPECT_TRUE(info.cpu_isa == "baseline" || info.cpu_isa == "avx2" || info.cpu_isa == "avx512") << info.cpu_isa;
    EXPECT_GT(info.topology.pus, 0);
    EXPECT_GT(info.topology.allowed_pus, 0);
    EXPECT_GT(info.topology.memory_bytes, 0u);
    if (info.devices.empty()) {
        EXPECT_FALSE(info.devices_note.empty()) << "why there are no devices";
    }
    const std::string text = tandem::to_text(info), json = tandem::to_json(info);
    EXPECT_NE(text.find(info.version), std::string::npos) << text;
    EXPECT_NE(text.find(info.cpu_isa), std::string::npos) << text;
    ASSERT_FALSE(json.empty());
    EXPECT_EQ(json.front(), '{') << json;
    EXPECT_NE(json.find("\"cpu_isa\""), std::string::npos) << json;
    EXPECT_NE(json.find(info.version), std::string::npos) << json;
}

TEST(Introspection, AutoThreadsUseTheAllowedCores) {
    Runtime rt{Config{}};
    const auto info = rt.info();
    EXPECT_GE(info.cpu_threads, 1);
    EXPECT_LE(info.cpu_threads, std::max(1, info.topology.allowed_pus));
}

TEST(Introspection, HostBuffersAreReused) {
    Runtime rt{Config{}};
    const auto xv = ramp(100000, -1, 1);
    Array x = leaf(rt, xv, Shape{1000, 100});
    for (int round = 0; round < 3; ++round) {
        // each result is dropped before the next: its buffer can serve the next one
        auto h = (x * static_cast<double>(round) + 1.0).gather().get();
        EXPECT_EQ(h.at(99999), xv[99999] * round + 1.0);
    }
    const auto m = rt.metrics();
    EXPECT_GT(m.host_pool_hits, 0u);
    EXPECT_GE(m.host_bytes_allocated, 100000u * sizeof(double));
    EXPECT_GE(m.elements_written, 300000u);
}

namespace {

/// Images normalised by their own mean and spread (the harness's W2, small): `d = x - mu` is
/// read by the variance's reduction and by the chain after it.
std::vector<Array> normalise(Runtime& rt, const std::vector<double>& v, std::int64_t h, std::int64_t w, std::int64_t b) {
    Array x = rt.array(std::span<const double>(v), Shape{h, w, b});
    Array mu = tandem::mean(tandem::mean(x, 1), 2);
    Array d = x - mu;
    Array sigma = tandem::sqrt(tandem::mean(tandem::mean(d * d, 1), 2));
    Array out = tandem::min(tandem::max(d / (sigma + 1e-6) * 0.25 + 0.5, 0.0), 1.0);
    return {out, tandem::mean(out, tandem::all_dims)};
}

}  // namespace

TEST(Fusion, CheapProducerReadTwiceIsRecomputedNotWritten) {
    const std::int64_t h = 37, w = 53, b = 3;
    std::mt19937_64 rng(7);
    std::vector<double> v = tref::random_values(h * w * b, tandem::DType::f64, rng, false);
    v[3] = NAN;
    v[10] = -0.0;
    Runtime fused{Config{}}, plain{unfused_config()};
    const auto f = normalise(fused, v, h, w, b), p = normalise(plain, v, h, w, b);
    // The same bits as every op materialised (the recomputed `x - mu` is the same op).
    for (std::size_t k = 0; k < f.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::gather(f[k]), tref::gather(p[k]), tref::Acc::exact_signed)) << k;
    // Only the mean is wanted: x is read three times (mu, sigma, the chain folded into its mean)
    // and nothing of x's size is written.
    Runtime lean{Config{}};
    const Metrics before = lean.metrics();
    const Array m = normalise(lean, v, h, w, b)[1];
    m.gather().get();
    const Metrics after = lean.metrics();
    // (What is written: the column sums of mu's and sigma's first reductions, 2 x w x b, and scalars.)
    EXPECT_LT(after.elements_written - before.elements_written, static_cast<std::uint64_t>(2 * w * b + 32))
        << "an array of x's size was written: " << after.elements_written - before.elements_written << " elements";
}

// Xc = X - mean(X) read by a product (so it is written) and by the sum of its square (var): the
// square is not written; the reduction recomputes it from X as it reads. The same bits as every op
// materialised.
TEST(Fusion, ReductionRecomputesTheSquareOfAValueWrittenAnyway) {
    const std::int64_t n = 301, d = 7;
    std::mt19937_64 rng(11);
    std::vector<double> v = tref::random_values(n * d, tandem::DType::f64, rng, false);
    v[5] = NAN;
    v[40] = -0.0;
    auto run = [&](Runtime& rt) {
        const Array X = leaf(rt, v, Shape{n, d});
        const Array Xc = X - tandem::mean(X);
        const Array G = tandem::matmul(Xc, Xc, {.transpose_a = true});
        const Array s = tandem::sum(Xc * Xc, 1);
        rt.evaluate({X}).get();
        const Metrics before = rt.metrics();
        rt.evaluate({G, s}).get();  // one plan for both
        auto out = std::pair{tref::gather(G), tref::gather(s)};
        return std::pair{out, rt.metrics().elements_written - before.elements_written};
    };
    Runtime fused{Config{}}, plain{unfused_config()};
    const auto [f, written] = run(fused);
    const auto [p, plain_written] = run(plain);
    EXPECT_TRUE(tref::same_values(f.first, p.first, tref::Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(f.second, p.second, tref::Acc::exact_signed));
    // Xc (n d), the product (d d), the means and the sums; not Xc's square (another n d).
    EXPECT_LT(written, static_cast<std::uint64_t>(n * d + d * d + 4 * d + 16)) << written << " elements written";
    EXPECT_GT(plain_written, static_cast<std::uint64_t>(2 * n * d));
}

namespace {

/// Softmax along `dim` (rows reduced and broadcast back): e = exp(x - max(x)) is read by its sum
/// and by e ./ sum(e); then a checksum of the result against x.
struct Softmax {
    Array p, checksum;
};
Softmax softmax(const Array& x, int dim) {
    const Array e = tandem::exp(x - tandem::max(x, {}, dim));
    const Array p = e / tandem::sum(e, dim);
    return {p, tandem::sum(p * x, tandem::all_dims)};
}

}  // namespace

// e is not written: the sum folds into e's region and the division recomputes e (one
// transcendental, spared a write and a read back). The bits of every op materialised, for rows
// and for columns, in double and single, with NaN, infinities and -0 among the inputs.
TEST(Fusion, SoftmaxRecomputesItsExponentialInsteadOfWritingIt) {
    const std::int64_t n = 67, d = 45;
    std::mt19937_64 rng(23);
    std::uniform_real_distribution<double> within(-40.0, 40.0);  // exp's range, in single too
    std::vector<double> v(static_cast<std::size_t>(n * d));
    for (double& x : v) x = within(rng);
    v[3] = NAN;                  // a NaN row and column
    v[100] = INFINITY;           // exp(Inf - Inf): NaN
    v[200] = -INFINITY;          // exp(-Inf - m) = 0
    v[301] = -0.0;
    for (const bool single : {false, true})
        for (const int dim : {1, 2}) {
            SCOPED_TRACE(std::string(single ? "single" : "double") + ", dim " + std::to_string(dim));
            auto input = [&](Runtime& rt) {
                Array x = leaf(rt, v, Shape{n, d});
                if (single) {
                    x = tandem::single(x);
                    rt.evaluate({x}).get();
                }
                return x;
            };
            Runtime fused{Config{}}, plain{unfused_config()};
            const Array xf = input(fused), xp = input(plain);
            const Metrics before = fused.metrics();
            const Softmax f = softmax(xf, dim);
            (void)f.checksum.gather().get();
            const Metrics after = fused.metrics();
            const Softmax p = softmax(xp, dim);
            EXPECT_TRUE(tref::same_values(tref::gather(f.checksum), tref::gather(p.checksum), tref::Acc::exact_signed));
            // The max, the sum of e, the division folded into the checksum's sum.
            EXPECT_EQ(after.regions_executed - before.regions_executed, 3u);
            EXPECT_LT(after.elements_written - before.elements_written, static_cast<std::uint64_t>(2 * (n + d) + 8))
                << "an array of x's size was written";
            // Wanted, p is written once and has the same bits.
            EXPECT_TRUE(tref::same_values(tref::gather(softmax(xf, dim).p), tref::gather(p.p), tref::Acc::exact_signed));
        }
}

TEST(FusionCache, AProgramBuiltAgainOnOtherDataIsFusedFromTheCache) {
    // Fusion's result is remembered by the plan's structure; verify mode fuses every hit again
    // and fails the gather if the regions differ.
    Config c;
    c.device = "cpu";
    c.plan_cache = "verify";
    Runtime rt(c);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    auto data = [&] {
        std::vector<double> v(6 * 5);
        for (double& x : v) x = normal(rng);
        return v;
    };
    auto program = [](const Array& x, double k) { return tandem::sum(tandem::exp(-(x * x)) * k + x, 1); };
    auto expected = [](const std::vector<double>& v, double k) {  // the sums down the columns of 6 x 5
        std::vector<double> out(5, 0.0);
        for (int j = 0; j < 5; ++j)
            for (int i = 0; i < 6; ++i) {
                const double x = v[static_cast<std::size_t>(i + 6 * j)];
                out[static_cast<std::size_t>(j)] += std::exp(-(x * x)) * k + x;
            }
        return out;
    };
    auto near_all = [](const std::vector<double>& a, const std::vector<double>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (std::abs(a[i] - b[i]) > 1e-12 * (1 + std::abs(b[i]))) return false;
        return true;
    };
    const auto d1 = data(), d2 = data(), d3 = data(), d4 = data(), d5 = data();
    const Array x1 = rt.array(std::span<const double>(d1), Shape{6, 5});
    const Array x2 = rt.array(std::span<const double>(d2), Shape{6, 5});
    const Array x3 = rt.array(std::span<const double>(d3), Shape{6, 5});

    EXPECT_TRUE(near_all(program(x1, 0.5).gather().get().to_doubles(), expected(d1, 0.5)));
    const Metrics first = rt.metrics();
    EXPECT_EQ(first.plans_fused_from_cache, 0u);
    EXPECT_TRUE(near_all(program(x2, 0.5).gather().get().to_doubles(), expected(d2, 0.5)));
    const Metrics second = rt.metrics();
    EXPECT_EQ(second.plans, first.plans + 1);
    EXPECT_EQ(second.plans_fused_from_cache, 1u) << "the same structure on other data";
    EXPECT_EQ(second.regions_executed - first.regions_executed, first.regions_executed) << "the same regions";

    // Another constant is another program (it is in the kernel); so are other extents.
    EXPECT_TRUE(near_all(program(x3, 0.25).gather().get().to_doubles(), expected(d3, 0.25)));
    EXPECT_EQ(rt.metrics().plans_fused_from_cache, 1u);
    const Array wide = rt.array(std::span<const double>(d3), Shape{5, 6});
    (void)program(wide, 0.5).gather().get();
    EXPECT_EQ(rt.metrics().plans_fused_from_cache, 1u);

    // Two targets of one plan: another set of wanted nodes, another entry; then a hit.
    for (const auto* d : {&d4, &d5}) {
        const Array a = rt.array(std::span<const double>(*d), Shape{6, 5});
        const Array e = tandem::exp(-(a * a));
        auto both = rt.gather({tandem::sum(e * 0.5 + a, 1), e}).get();
        EXPECT_TRUE(near_all(both[0].to_doubles(), expected(*d, 0.5)));
        EXPECT_EQ(both[1].numel(), 30);
    }
    EXPECT_EQ(rt.metrics().plans_fused_from_cache, 2u);
}

TEST(FusionCache, ALoopDrawingNewNumbersEachRunIsFusedOnceAndDrawsItsOwn) {
    // A draw's seed and stream are parameters of the plan, not its structure: every run after
    // the first is fused from the cache (verify mode fuses it again and compares, the draws'
    // streams included), and each run's numbers are its own, bit for bit those of a runtime
    // that fuses every plan.
    auto runs = [](const char* plan_cache) {
        Config c;
        c.device = "cpu";
        c.plan_cache = plan_cache;
        Runtime rt(c);
        return draw_loop::run(rt, 4);
    };
    const draw_loop::Runs cached = runs("verify"), fused = runs("off");
    EXPECT_EQ(cached.plans, 4u);
    EXPECT_EQ(cached.hits, 3u) << "the runs after the first";
    EXPECT_EQ(fused.hits, 0u);
    ASSERT_EQ(cached.values.size(), 4u);
    for (std::size_t r = 0; r < cached.values.size(); ++r) {
        EXPECT_TRUE(draw_loop::same_bits(cached.values[r], fused.values[r])) << "run " << r;
        if (r > 0) {
            EXPECT_NE(cached.values[r], cached.values[r - 1]) << "run " << r << " drew the numbers of the last";
        }
    }
}

TEST(FusionCache, ARegionsBackendMemoIsKeptByMovesAndSharedOnlyOnPurpose) {
    // What a device's backend worked out about a region (its kernel) must not follow a copy,
    // which may be made into another region (a piece, a tail), but follows a move, and the
    // fusion cache shares it between the regions of one structure.
    using tandem::detail::BackendMemo;
    using tandem::detail::Region;
    Region a;
    const auto note = std::make_shared<int>(7);
    a.memo.set(1, note);
    EXPECT_EQ(a.memo.get(1), note);
    EXPECT_EQ(a.memo.get(0), nullptr);
    Region copy = a;
    EXPECT_EQ(copy.memo.get(1), nullptr) << "a copy starts without";
    copy = a;
    EXPECT_EQ(copy.memo.get(1), nullptr);
    copy.memo.share(a.memo);
    EXPECT_EQ(copy.memo.get(1), note);
    copy.memo.set(2, note);
    EXPECT_EQ(a.memo.get(2), note) << "shared: one memo";
    Region moved = std::move(a);
    EXPECT_EQ(moved.memo.get(1), note) << "a move keeps it";
    Region other;
    other.memo.set(1, std::make_shared<int>(8));
    other = std::move(moved);
    EXPECT_EQ(other.memo.get(1), note);
    static_assert(BackendMemo::kSlots >= 8);
}

TEST(FusionCache, OffFusesEveryPlan) {
    Config c;
    c.device = "cpu";
    c.plan_cache = "off";
    Runtime rt(c);
    const std::vector<double> v = {1, 2, 3, 4};
    for (int i = 0; i < 3; ++i) {
        const Array x = rt.array(std::span<const double>(v), Shape{4, 1});
        EXPECT_EQ(tandem::sum(x * 2.0 + 1.0, 2).gather().get().to_doubles(), (std::vector<double>{3, 5, 7, 9}));
    }
    EXPECT_EQ(rt.metrics().plans_fused_from_cache, 0u);
    c.plan_cache = "sometimes";
    EXPECT_THROW(Runtime{c}, tandem::ConfigError);
}

// ---- chains started while they are built (Config::start_depth) --------------------------------

TEST(ChainStart, ADeepChainComputesWhileTheProgramBuildsOnIt) {
    // Two operations a step on 2^18 elements: with start_depth 16 the chain starts computing
    // every 8 steps (when the thread makes its next node), with no gather, each start one plan of
    // one region; what is built on a started value reads it. The bits are those of the whole
    // chain fused in one region.
    constexpr std::int64_t n = std::int64_t{1} << 18;
    auto inputs = ramp(n, -3.0, 3.0);
    inputs[3] = std::nan("");
    inputs[4] = INFINITY;
    inputs[5] = -INFINITY;
    inputs[6] = -0.0;
    const Shape shape{n, 1};
    auto run = [&](std::int64_t start_depth, std::vector<Delta>& seen) {
        Config c = config_with(2, 256);
        c.start_depth = start_depth;
        Runtime rt(c);
        const Array x = leaf(rt, inputs, shape);
        const Metrics m0 = rt.metrics();
        Array y = x;
        for (int i = 0; i < 7; ++i) y = y * 0.75 + 1.0;  // 14 deep
        rt.wait_idle();
        seen.push_back(diff(m0, rt.metrics()));
        for (int i = 7; i < 40; ++i) y = y * 0.75 + 1.0;  // 80 deep
        rt.wait_idle();
        seen.push_back(diff(m0, rt.metrics()));
        auto got = y.gather().get().to_doubles();
        seen.push_back(diff(m0, rt.metrics()));
        return got;
    };
    std::vector<Delta> started, whole;
    const auto got = run(16, started), want = run(0, whole);
    EXPECT_EQ(started[0].plans, 0u) << "a chain shallower than start_depth waits for its gather";
    EXPECT_EQ(started[1].plans, 4u) << "started at depths 16, 32, 48 and 64 (the head at 80 waits for the next node)";
    EXPECT_EQ(started[1].regions, 4u);
    EXPECT_EQ(started[1].ops, 64u);
    EXPECT_EQ(started[2].plans, 5u);
    EXPECT_EQ(started[2].regions, 5u);
    EXPECT_EQ(started[2].ops, 80u) << "no operation computed twice";
    EXPECT_EQ(whole[1].plans, 0u);
    EXPECT_EQ(whole[2].regions, 1u);
    EXPECT_EQ(whole[2].ops, 80u);
    ASSERT_EQ(got.size(), want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double r = inputs[i];
        for (int k = 0; k < 40; ++k) r = r * 0.75 + 1.0;
        differ += std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]) ||
                  std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(r);
    }
    EXPECT_EQ(differ, 0u) << "elements whose bits differ from the whole chain's or the reference's";
}

TEST(ChainStart, ALightChainWaitsForItsGather) {
    // The same chain on 1000 elements: under 2^18 elements an operation, planning it in pieces
    // costs more than it wins, so nothing starts however deep it is.
    Config c = config_with(2, 256);
    c.start_depth = 16;
    Runtime rt(c);
    const Array x = leaf(rt, ramp(1000, -3.0, 3.0), Shape{1000, 1});
    const Metrics m0 = rt.metrics();
    Array y = x;
    for (int i = 0; i < 100; ++i) y = y * 0.75 + 1.0;
    rt.wait_idle();
    EXPECT_EQ(diff(m0, rt.metrics()).plans, 0u);
    (void)y.gather().get();
    EXPECT_EQ(diff(m0, rt.metrics()).regions, 1u);
}

TEST(ChainStart, AMonteCarloLoopStartedInStepsDrawsTheNumbersOfTheWholeLoop) {
    // A loop of 40 draw steps (W3's kind) started every 8 steps: each piece of the loop draws its
    // own steps' numbers, so every run gives the bits of the loop fused whole, and the pieces
    // after the first of each run are fused from the cache (verify mode compares them).
    auto runs = [](std::int64_t start_depth) {
        Config c;
        c.device = "cpu";
        c.plan_cache = "verify";
        c.start_depth = start_depth;
        Runtime rt(c);
        return draw_loop::run(rt, 3, /*steps=*/40, /*m=*/std::int64_t{1} << 18);
    };
    const draw_loop::Runs started = runs(8), whole = runs(0);
    EXPECT_EQ(whole.plans, 3u);
    EXPECT_GT(started.plans, 3u * 4) << "each run's loop started at least four times before its gather";
    EXPECT_GT(started.hits, started.plans / 2);
    ASSERT_EQ(started.values.size(), whole.values.size());
    for (std::size_t r = 0; r < started.values.size(); ++r)
        EXPECT_TRUE(draw_loop::same_bits(started.values[r], whole.values[r])) << "run " << r;
}

TEST(ChainStart, AWideExpressionIsNotDeep) {
    // A sum of 256 terms built as a tree is 9 operations deep: nothing starts before its gather.
    Config c = config_with(2, 256);
    c.start_depth = 16;
    Runtime rt(c);
    const auto xs = ramp(std::int64_t{1} << 18, -1.0, 1.0);
    const Array x = leaf(rt, xs, Shape{std::int64_t{1} << 18, 1});
    const Metrics m0 = rt.metrics();
    std::vector<Array> terms;
    for (int i = 0; i < 256; ++i) terms.push_back(x * static_cast<double>(i));
    while (terms.size() > 1) {
        std::vector<Array> next;
        for (std::size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(terms[i] + terms[i + 1]);
        terms = std::move(next);
    }
    rt.wait_idle();
    EXPECT_EQ(diff(m0, rt.metrics()).plans, 0u);
    const auto sum = terms[0].gather().get().to_doubles();
    EXPECT_EQ(diff(m0, rt.metrics()).plans, 1u);
    std::size_t off = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) off += !(std::fabs(sum[i] - xs[i] * (255.0 * 256.0 / 2.0)) <= 1e-9);
    EXPECT_EQ(off, 0u);
}

TEST(ChainStart, AStencilStartsBetweenItsStepsNotInsideOne) {
    // A heat step reads its input five times (four shifts and itself): started at a value inside
    // a step, the rest of the step would read the step's input too, so the start waits for the
    // step's end. Each step stays one region writing only its result, as when the whole loop is
    // planned at once, and the bits are the same.
    constexpr std::int64_t n = 512;  // 2^18 points: steps heavy enough to start
    const auto u0 = ramp(n * n, -1.0, 1.0);
    auto run = [&](std::int64_t start_depth, Delta& seen, std::uint64_t& written) {
        Config c = config_with(2, 2048);
        c.start_depth = start_depth;
        Runtime rt(c);
        Array u = leaf(rt, u0, Shape{n, n});
        const Metrics m0 = rt.metrics();
        for (int s = 0; s < 12; ++s)
            u = u + 0.1 * (tandem::circshift(u, 1, 1) + tandem::circshift(u, -1, 1) + tandem::circshift(u, 1, 2) +
                           tandem::circshift(u, -1, 2) - 4.0 * u);
        auto got = u.gather().get().to_doubles();
        seen = diff(m0, rt.metrics());
        written = rt.metrics().elements_written - m0.elements_written;
        return got;
    };
    Delta started{}, whole{};
    std::uint64_t written_started = 0, written_whole = 0;
    const auto got = run(16, started, written_started), want = run(0, whole, written_whole);
    EXPECT_GT(started.plans, 2u) << "the loop started computing before its gather";
    EXPECT_EQ(whole.plans, 1u);
    EXPECT_EQ(whole.regions, 12u);
    EXPECT_EQ(started.regions, 12u) << "a step cut in two";
    EXPECT_EQ(written_started, written_whole);
    ASSERT_EQ(got.size(), want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) differ += std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]);
    EXPECT_EQ(differ, 0u);
}

TEST(ChainStart, AChainsFirstPieceStartsSooner) {
    // With start_depth 64 a chain's first piece starts at depth 16, so that the executors start
    // while the rest is built; the pieces after it wait for the full depth: two operations a step,
    // 60 steps, starts after steps 8 and 40, then the gather's plan.
    constexpr std::int64_t n = std::int64_t{1} << 18;
    Config c = config_with(2, 2048);
    c.start_depth = 64;
    Runtime rt(c);
    const Array x = leaf(rt, ramp(n, -3.0, 3.0), Shape{n, 1});
    const Metrics m0 = rt.metrics();
    Array y = x;
    for (int i = 0; i < 60; ++i) y = y * 0.75 + 1.0;
    rt.wait_idle();
    EXPECT_EQ(diff(m0, rt.metrics()).plans, 2u);
    EXPECT_EQ(diff(m0, rt.metrics()).ops, 16u + 64u);
    (void)y.gather().get();
    EXPECT_EQ(diff(m0, rt.metrics()).plans, 3u);
    EXPECT_EQ(diff(m0, rt.metrics()).ops, 120u);
}
