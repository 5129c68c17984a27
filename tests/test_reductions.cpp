// Reductions on the CPU executor against a scalar reference (reduce_reference.hpp): every op along
// every dimension (and beyond the last, and over all elements) of random shapes -- empty, vectors,
// N-D, larger than a block along and across the reduced dimension -- in double, single and
// logical, with NaN, Inf, -0 and subnormals; MATLAB's NaN and empty rules; fusion of elementwise
// producers (one pass, no temporary) and the boundary where a result expands back; determinism
// across runs and thread counts; the composite functions; argument errors.
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reduce_reference.hpp"
#include "tail_cases.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tred::Op;
using tref::Dims;
using tref::Host;

namespace {

tandem::Config cpu_config(int threads = 0) {
    tandem::Config c;
    c.device = "cpu";
    if (threads > 0) c.cpu_threads = threads;
    return c;
}

const std::vector<Dims> kShapes = {
    {0, 0}, {0, 3}, {4, 0}, {1, 1}, {1, 7}, {9, 1}, {5, 6}, {3, 4, 2}, {2, 1, 3, 2},
    {2049, 3},     // longer than a block along dim 1
    {3, 5000},     // long along dim 2, few outputs: the reduced dimension is split into chunks
    {2500, 3},     // more than a block of outputs across dim 2
    {7, 0, 2},
};
const Op kOps[] = {Op::sum, Op::prod, Op::mean, Op::max, Op::min, Op::argmax, Op::argmin, Op::any, Op::all};

class ReduceOps : public ::testing::TestWithParam<DType> {};

TEST_P(ReduceOps, EveryOpEveryDimMatchesReference) {
    const DType t = GetParam();
    Runtime rt(cpu_config());
    std::mt19937_64 rng(1234 + static_cast<int>(t));
    int checked = 0;
    for (const Dims& shape : kShapes) {
        for (Op op : kOps) {
            const bool prod = op == Op::prod;
            const Host x = tred::random_data(shape, t, rng, /*specials=*/true, /*near_one=*/prod);
            const Array a = tref::make_array(rt, x);
            for (int dim : {0, 1, 2, 3, 5, -1}) {
                if ((op == Op::argmax || op == Op::argmin) && dim < 0) continue;  // no [M, I] over 'all'
                SCOPED_TRACE(std::string(tred::name(op)) + " of " + tref::dims_str(shape) + " " + tref::dtype_str(t) +
                             " dim " + std::to_string(dim));
                const int d0 = dim == 0 ? tred::default_dim(x.dims, op) : dim < 0 ? -1 : dim - 1;
                const Host got = tref::gather(tred::call(op, a, dim));
                EXPECT_TRUE(tred::matches(got, tred::reduce(x, op, d0)));
                ++checked;
                if (op == Op::sum || op == Op::prod || op == Op::mean) {
                    const Host g2 = tref::gather(tred::call(op, a, dim, tandem::NanFlag::omitnan));
                    EXPECT_TRUE(tred::matches(g2, tred::reduce(x, op, d0, /*omitnan=*/true))) << "omitnan";
                }
            }
        }
    }
    EXPECT_GT(checked, 500);
}

INSTANTIATE_TEST_SUITE_P(Reductions, ReduceOps, ::testing::Values(DType::f64, DType::f32, DType::logical),
                         [](const auto& p) { return std::string(tref::dtype_str(p.param)); });

TEST_P(ReduceOps, ScansEveryDimExactlyAsDocumented) {
    const DType t = GetParam();
    Runtime rt(cpu_config());
    std::mt19937_64 rng(77 + static_cast<int>(t));
    for (const Dims& shape : kShapes)
        for (tred::ScanOp op : {tred::ScanOp::cumsum, tred::ScanOp::cumprod, tred::ScanOp::cummax, tred::ScanOp::cummin}) {
            const Host x = tred::random_data(shape, t, rng, true, op == tred::ScanOp::cumprod);
            const Array a = tref::make_array(rt, x);
            for (int dim : {0, 1, 2, 3}) {
                SCOPED_TRACE("scan " + std::to_string(static_cast<int>(op)) + " of " + tref::dims_str(shape) + " dim " +
                             std::to_string(dim));
                const int d0 = dim == 0 ? tred::default_dim(x.dims, Op::max) : dim - 1;
                EXPECT_TRUE(tref::same_values(tref::gather(tred::call_scan(op, a, dim)), tred::scan(x, op, d0)));
            }
        }
}

TEST(Reductions, MatlabRulesOnSmallCases) {
    Runtime rt(cpu_config());
    const std::vector<double> m = {1, 2, 3, 4, 5, 6};  // [1 3 5; 2 4 6]
    Array x = rt.array(std::span<const double>(m), tandem::Shape{2, 3});
    EXPECT_EQ(tref::gather(tandem::sum(x)).v, (std::vector<double>{3, 7, 11}));
    EXPECT_EQ(tref::gather(tandem::sum(x, 2)).v, (std::vector<double>{9, 12}));
    EXPECT_EQ(tref::gather(tandem::sum(x, 3)).v, m) << "a singleton dimension";
    EXPECT_EQ(tref::gather(tandem::prod(x, tandem::all_dims)).v, (std::vector<double>{720}));
    const std::vector<double> e;
    Array empty = rt.array(std::span<const double>(e), tandem::Shape{0, 0});
    Host s = tref::gather(tandem::sum(empty));
    EXPECT_EQ(s.dims, (Dims{1, 1}));
    EXPECT_EQ(s.v, (std::vector<double>{0}));
    EXPECT_EQ(tref::gather(tandem::prod(empty)).v, (std::vector<double>{1}));
    EXPECT_TRUE(std::isnan(tref::gather(tandem::mean(empty)).v.at(0)));
    EXPECT_EQ(tref::gather(tandem::max(empty)).dims, (Dims{0, 0}));
    EXPECT_EQ(tref::gather(tandem::max(rt.zeros(tandem::Shape{0, 3}))).dims, (Dims{0, 3}));
    EXPECT_EQ(tref::gather(tandem::sum(rt.zeros(tandem::Shape{0, 3}))).v, (std::vector<double>(3, 0.0)));
    // NaN: included by sum, omitted by max; [NaN NaN] has max NaN at index 1
    const std::vector<double> n = {1, NAN, NAN, NAN};
    Array y = rt.array(std::span<const double>(n), tandem::Shape{2, 2});
    Host sy = tref::gather(tandem::sum(y));
    EXPECT_TRUE(std::isnan(sy.v[0]) && std::isnan(sy.v[1]));
    EXPECT_EQ(tref::gather(tandem::sum(y, tandem::NanFlag::omitnan)).v, (std::vector<double>{1, 0}));
    auto mi = tandem::max_index(y);
    Host mv = tref::gather(mi.value), ix = tref::gather(mi.index);
    EXPECT_EQ(mv.v[0], 1);
    EXPECT_TRUE(std::isnan(mv.v[1]));
    EXPECT_EQ(ix.v, (std::vector<double>{1, 1}));
    // ties: the first
    const std::vector<double> tie = {2, 5, 5, 1};
    EXPECT_EQ(tref::gather(tandem::max_index(rt.array(std::span<const double>(tie)), 1).index).v, (std::vector<double>{2}));
    // any ignores NaN, all counts it as nonzero
    const std::vector<double> nanonly = {NAN, 0};
    Array z = rt.array(std::span<const double>(nanonly));
    EXPECT_EQ(tref::gather(tandem::any(z)).v, (std::vector<double>{0}));
    EXPECT_EQ(tref::gather(tandem::all(rt.array(std::span<const double>(n.data(), 2)))).v, (std::vector<double>{1}));
    // types: single stays single, logical sums to double, any/all are logical
    EXPECT_EQ(tandem::sum(tandem::single(x)).dtype(), DType::f32);
    EXPECT_EQ(tandem::sum(x > 2.0).dtype(), DType::f64);
    EXPECT_EQ(tandem::any(x).dtype(), DType::logical);
    EXPECT_EQ(tandem::max_index(x).index.dtype(), DType::f64);
}

TEST(Reductions, CompositeFunctions) {
    Runtime rt(cpu_config());
    const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
    Array x = rt.array(std::span<const double>(v));
    EXPECT_DOUBLE_EQ(tref::gather(tandem::var(x, 1)).v.at(0), 4.0);
    EXPECT_DOUBLE_EQ(tref::gather(tandem::stdev(x, 1)).v.at(0), 2.0);
    EXPECT_DOUBLE_EQ(tref::gather(tandem::var(x)).v.at(0), 32.0 / 7.0);
    EXPECT_EQ(tref::gather(tandem::var(rt.array(std::span<const double>(v.data(), 1)))).v.at(0), 0.0) << "n = 1";
    EXPECT_EQ(tref::gather(tandem::nnz(x - 4.0)).v.at(0), 5.0);
    const std::vector<double> a = {1, 2, 3}, b = {4, -5, 6};
    Array va = rt.array(std::span<const double>(a)), vb = rt.array(std::span<const double>(b));
    EXPECT_EQ(tref::gather(tandem::dot(va, vb)).v.at(0), 12.0);
    EXPECT_DOUBLE_EQ(tref::gather(tandem::norm(vb)).v.at(0), std::sqrt(77.0));
    EXPECT_EQ(tref::gather(tandem::norm(vb, 1.0)).v.at(0), 15.0);
    EXPECT_EQ(tref::gather(tandem::norm(vb, INFINITY)).v.at(0), 6.0);
    EXPECT_EQ(tref::gather(tandem::norm(vb, -INFINITY)).v.at(0), 4.0);
    EXPECT_NEAR(tref::gather(tandem::norm(vb, 3.0)).v.at(0), std::cbrt(64.0 + 125.0 + 216.0), 1e-12);
    // MATLAB's norm neither overflows nor underflows on the way; NaN in, NaN out.
    auto vec = [&](std::vector<double> e) { return rt.array(std::span<const double>(e)); };
    auto norm_of = [&](std::vector<double> e, double p) { return tref::gather(tandem::norm(vec(std::move(e)), p)).v.at(0); };
    EXPECT_NEAR(norm_of({1e200, 1e200}, 2) / (std::sqrt(2.0) * 1e200), 1.0, 1e-15);
    EXPECT_NEAR(norm_of({3e-200, 4e-200}, 2) / 5e-200, 1.0, 1e-15);
    EXPECT_NEAR(norm_of({1e200, -1e200}, 3) / (std::cbrt(2.0) * 1e200), 1.0, 1e-15);
    EXPECT_NEAR(norm_of({3e-200, 4e-200}, 1) / 7e-200, 1.0, 1e-15);
    EXPECT_EQ(norm_of({3, 4}, 2), 5.0) << "the plain sum where nothing overflows";
    EXPECT_EQ(norm_of({INFINITY, 1e200}, 2), INFINITY);
    EXPECT_EQ(norm_of({0, 0, 0}, 2), 0.0);
    for (double p : {1.0, 2.0, 3.0, HUGE_VAL, -HUGE_VAL}) {
        EXPECT_TRUE(std::isnan(norm_of({NAN, 1}, p))) << p;
        EXPECT_TRUE(std::isnan(norm_of({1e-300, NAN, 1e-300}, p))) << p;
    }
    const auto big_single = tref::gather(tandem::norm(tandem::single(vec({1e30, 1e30}))));
    EXPECT_EQ(big_single.dtype, DType::f32);
    EXPECT_NEAR(big_single.v.at(0) / (std::sqrt(2.0) * 1e30), 1.0, 1e-6) << "single: x * x overflows there";
    EXPECT_EQ(tref::gather(tandem::norm(rt.zeros(tandem::Shape{0, 1}))).v.at(0), 0.0);
    for (double p : {1.0, 3.0, HUGE_VAL, -HUGE_VAL})
        EXPECT_EQ(tref::gather(tandem::norm(rt.zeros(tandem::Shape{0, 1}), p)).v.at(0), 0.0) << "norm of nothing, p = " << p;
    // var and std of nothing are NaN (MATLAB), with either weight.
    for (int w : {0, 1}) {
        EXPECT_TRUE(std::isnan(tref::gather(tandem::var(rt.zeros(tandem::Shape{0, 1}), w)).v.at(0))) << w;
        EXPECT_TRUE(std::isnan(tref::gather(tandem::stdev(rt.zeros(tandem::Shape{0, 1}), w)).v.at(0))) << w;
    }
    const Host vcols = tref::gather(tandem::var(rt.zeros(tandem::Shape{0, 3})));
    EXPECT_EQ(vcols.dims, (tref::Dims{1, 3}));
    for (double e : vcols.v) EXPECT_TRUE(std::isnan(e));
    // max and min of a logical array are logical; their indices double.
    const Array mask = vec({0, 1, 0}) > 0.5;
    EXPECT_EQ(tandem::max(mask).dtype(), DType::logical);
    EXPECT_EQ(tandem::min(mask, {}, 1).dtype(), DType::logical);
    EXPECT_EQ(tref::gather(tandem::max(mask)).v.at(0), 1.0);
    EXPECT_EQ(tandem::max_index(mask).index.dtype(), DType::f64);
    // var along a dimension of a matrix, against the two-pass reference
    std::mt19937_64 rng(7);
    Host m = tred::random_data({40, 30}, DType::f64, rng, false);
    Host got = tref::gather(tandem::var(tref::make_array(rt, m), 0, 2));
    for (int i = 0; i < 40; ++i) {
        long double mu = 0, ss = 0;
        for (int k = 0; k < 30; ++k) mu += m.v[static_cast<std::size_t>(i + 40 * k)];
        mu /= 30;
        for (int k = 0; k < 30; ++k) {
            long double d = m.v[static_cast<std::size_t>(i + 40 * k)] - mu;
            ss += d * d;
        }
        EXPECT_NEAR(got.v[static_cast<std::size_t>(i)], static_cast<double>(ss / 29), 1e-12 * static_cast<double>(ss));
    }
}

TEST(Reductions, ProducerFoldsIntoTheReduction) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(11);
    Host ha = tred::random_data({300, 200}, DType::f64, rng, false), hb = tred::random_data({300, 200}, DType::f64, rng, false);
    Array a = tref::make_array(rt, ha), b = tref::make_array(rt, hb);
    const auto m0 = rt.metrics();
    Host got = tref::gather(tandem::sum(a * b, 2));
    const auto m1 = rt.metrics();
    EXPECT_EQ(m1.regions_executed - m0.regions_executed, 1u) << "sum(a .* b, 2) is one region";
    EXPECT_EQ(m1.elements_written - m0.elements_written, 300u) << "no temporary of a .* b is written";
    Host prod_ab = ha;
    for (std::size_t i = 0; i < prod_ab.v.size(); ++i) prod_ab.v[i] = ha.v[i] * hb.v[i];
    EXPECT_TRUE(tred::matches(got, tred::reduce(prod_ab, Op::sum, 1)));
    // mean(x.^2): one reduce region, the division its tail
    const auto m2 = rt.metrics();
    tref::gather(tandem::mean(a * a));
    const auto m3 = rt.metrics();
    EXPECT_EQ(m3.regions_executed - m2.regions_executed, 1u);
    EXPECT_EQ(m3.elements_written - m2.elements_written, 400u) << "the sums and the means, no 300 x 200 temporary";
    // mean(x, 'omitnan'): both sums from one pass, the division their tail
    const auto m4 = rt.metrics();
    tref::gather(tandem::mean(a, 1, tandem::NanFlag::omitnan));
    const auto m5 = rt.metrics();
    EXPECT_EQ(m5.regions_executed - m4.regions_executed, 1u) << "one reduce region with two sums and the division";
}

TEST(Reductions, ResultExpandedBackIsARegionBoundary) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(12);
    Host hx = tred::random_data({50, 40}, DType::f64, rng, false);
    Array x = tref::make_array(rt, hx);
    const auto m0 = rt.metrics();
    Host got = tref::gather(x - tandem::mean(x));
    const auto m1 = rt.metrics();
    EXPECT_EQ(m1.regions_executed - m0.regions_executed, 2u) << "the sum with the division as its tail, then x - mean";
    for (int j = 0; j < 40; ++j) {
        long double mu = 0;
        for (int i = 0; i < 50; ++i) mu += hx.v[static_cast<std::size_t>(i + 50 * j)];
        mu /= 50;
        for (int i = 0; i < 50; ++i) {
            const auto k = static_cast<std::size_t>(i + 50 * j);
            EXPECT_NEAR(got.v[k], static_cast<double>(hx.v[k] - mu), 1e-13);
        }
    }
    // A value wanted as well as reduced stays an elementwise output: two regions.
    Array sq = x * x;
    const auto m2 = rt.metrics();
    auto both = rt.gather({sq, tandem::sum(sq, 1)}).get();
    const auto m3 = rt.metrics();
    EXPECT_EQ(m3.regions_executed - m2.regions_executed, 2u);
    EXPECT_EQ(both[0].numel(), 2000);
}

TEST(Reductions, DeterministicAcrossRunsAndThreads) {
    std::mt19937_64 rng(99);
    Host hx = tred::random_data({3000, 700}, DType::f64, rng, false);
    auto bits = [&](int threads, int dim) {
        Runtime rt(cpu_config(threads));
        Array x = tref::make_array(rt, hx);
        Array r = dim == 0 ? tandem::sum(x * 1.5 + 0.25, tandem::all_dims) : tandem::sum(x * 1.5 + 0.25, dim);
        Host h = tref::gather(r);
        std::vector<std::uint64_t> b;
        for (double v : h.v) b.push_back(std::bit_cast<std::uint64_t>(v));
        return b;
    };
    for (int dim : {0, 1, 2}) {
        SCOPED_TRACE("dim " + std::to_string(dim));
        const auto one = bits(1, dim);
        EXPECT_EQ(one, bits(1, dim));
        EXPECT_EQ(one, bits(2, dim)) << "the thread count changed the bits";
    }
}

// The reduction loops are compiled once per instruction set (backends/cpu/reduce_<isa>.cpp) and
// picked with the block kernels (Config::cpu_isa caps both): every variant must give the bits of
// the baseline one -- NaN included -- for every op, type and layout (contiguous, strided with few
// or many outputs, long and short rows, fused producers).
TEST(Reductions, SameBitsOnEveryInstructionSet) {
    const std::vector<Dims> shapes = {{3000, 70}, {70, 3000}, {5, 9000}, {2049, 3, 4}, {40, 33, 3}, {4100, 1}, {1, 5000}};
    auto run = [&](const std::string& isa) {
        tandem::Config c = cpu_config();
        c.cpu_isa = isa;
        Runtime rt(c);
        std::mt19937_64 rng(2024);
        std::vector<std::uint64_t> bits;
        for (const Dims& shape : shapes)
            for (DType t : {DType::f64, DType::f32, DType::logical})
                for (bool specials : {false, true}) {
                    const Host hx = tred::random_data(shape, t, rng, specials);
                    const Host hp = tred::random_data(shape, t, rng, specials, /*near_one=*/true);
                    const Array x = tref::make_array(rt, hx), p = tref::make_array(rt, hp);
                    std::vector<Array> rs;
                    for (int dim : {1, 2, 3}) {
                        rs.push_back(tandem::sum(x, dim));
                        rs.push_back(tandem::prod(p, dim));
                        rs.push_back(tandem::mean(x, dim, tandem::NanFlag::omitnan));
                        rs.push_back(tandem::max(x, {}, dim));
                        const auto mi = tandem::min_index(x, dim);
                        rs.push_back(mi.value);
                        rs.push_back(mi.index);
                        rs.push_back(tandem::max_index(x, dim).index);
                        rs.push_back(tandem::any(x, dim));
                        rs.push_back(tandem::all(x, dim));
                        if (t != DType::logical) {
                            rs.push_back(tandem::sum(x * p, dim));        // fused producers
                            rs.push_back(tandem::mean(x * x, dim));
                        }
                    }
                    rs.push_back(tandem::sum(x, tandem::all_dims));
                    rs.push_back(tandem::prod(p, tandem::all_dims));
                    rs.push_back(tandem::max(x, tandem::all_dims));
                    const auto results = rt.gather(rs);
                    for (const tandem::HostArray& h : results.get())
                        for (double v : h.to_doubles()) bits.push_back(std::bit_cast<std::uint64_t>(v));
                }
        return std::make_pair(rt.info().cpu_isa, bits);
    };
    const auto base = run("baseline");
    ASSERT_EQ(base.first, "baseline");
    ASSERT_GT(base.second.size(), 100000u);
    for (const char* isa : {"avx2", "avx512"}) {
        const auto got = run(isa);
        SCOPED_TRACE(std::string(isa) + " (dispatched to " + got.first + ")");
        ASSERT_EQ(got.second.size(), base.second.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < base.second.size(); ++i)
            if (got.second[i] != base.second[i] && ++bad <= 5)
                ADD_FAILURE() << "value " << i << ": " << std::bit_cast<double>(got.second[i]) << " vs baseline "
                              << std::bit_cast<double>(base.second[i]);
        EXPECT_EQ(bad, 0u);
    }
}

// Sums and products in the canonical order of graph/reduce_order.hpp, bit for bit, whatever the
// block size and the instruction set (and, test_vulkan_reduce.cpp, on the GPU).
TEST(Reductions, SumsAddInTheDocumentedOrder) {
    std::mt19937_64 rng(31);
    for (std::int64_t block : {2048, 256}) {
        for (const char* isa : {"baseline", "auto"}) {
            tandem::Config c = cpu_config();
            c.cpu_isa = isa;
            c.block_elements = block;
            Runtime rt(c);
            for (const Dims& d : {Dims{3000, 700}, Dims{700, 3000}, Dims{7, 20000}, Dims{33, 5, 130}, Dims{50001, 2},
                                  Dims{2, 1100000}}) {
                SCOPED_TRACE(tref::dims_str(d) + " block " + std::to_string(block) + " " + isa);
                Host hx = tred::random_data(d, DType::f64, rng, false);
                hx.v[5] = std::numeric_limits<double>::infinity();  // one NaN result (Inf - Inf), one Inf
                hx.v[6] = -std::numeric_limits<double>::infinity();
                hx.v[static_cast<std::size_t>(d[0] + 1)] = std::numeric_limits<double>::infinity();
                const Array x = tref::make_array(rt, hx);
                std::vector<double> hy(hx.v.size());
                for (std::size_t i = 0; i < hy.size(); ++i) hy[i] = hx.v[i] * (hx.v[hy.size() - 1 - i] + 0.5);
                const Array rev = tref::make_array(rt, Host{hx.dims, DType::f64, std::vector<double>(hx.v.rbegin(), hx.v.rend())});
                const Array y = x * (rev + 0.5);
                const std::int64_t n = tref::numel(hx.dims), rows = hx.dims[0], rest = n / rows;
                const std::int64_t cols = hx.dims[1], outer2 = n / (rows * cols);
                tred::expect_bits(tandem::sum(x, 1), tred::canonical(hx.v, 1, rows, rest, false));
                tred::expect_bits(tandem::sum(x, 2), tred::canonical(hx.v, rows, cols, outer2, false));
                tred::expect_bits(tandem::sum(x, tandem::all_dims), tred::canonical(hx.v, 1, n, 1, false));
                tred::expect_bits(tandem::sum(y, 1), tred::canonical(hy, 1, rows, rest, false));  // fused: sum(a .* b)
                tred::expect_bits(tandem::sum(y, 2), tred::canonical(hy, rows, cols, outer2, false));
                // Products near 1 (no overflow) in both layouts, and a float sum (accumulated in double).
                std::vector<double> hp(hx.v.size());
                for (std::size_t i = 0; i < hp.size(); ++i) hp[i] = 1.0 + hx.v[i] * 1e-3;
                const Array p = x * 1e-3 + 1.0;
                tred::expect_bits(tandem::prod(p, 1), tred::canonical(hp, 1, rows, rest, true));
                tred::expect_bits(tandem::prod(p, 2), tred::canonical(hp, rows, cols, outer2, true));
                std::vector<double> hf(hx.v.size());
                for (std::size_t i = 0; i < hf.size(); ++i) hf[i] = static_cast<double>(static_cast<float>(hx.v[i]));
                const Array f = tandem::single(x);
                std::vector<double> want_f = tred::canonical(hf, 1, rows, rest, false);
                for (double& v : want_f) v = static_cast<double>(static_cast<float>(v));
                tred::expect_bits(tandem::sum(f, 1), want_f);
            }
        }
    }
}

TEST(Reductions, SettingsFromTheEnvironmentAreChecked) {
    struct Bad {
        const char* var;
        const char* value;
    };
    for (const Bad& b : {Bad{"TANDEM_REDUCTION_WG", "100"}, Bad{"TANDEM_REDUCTION_WG", "2048"},
                         Bad{"TANDEM_REDUCTION_WG", "x"}, Bad{"TANDEM_VULKAN_SUBGROUPS", "2"},
                         Bad{"TANDEM_F32_SUBNORMALS", "flush"},
                         Bad{"TANDEM_REDUCTION_THREADS", "0"}, Bad{"TANDEM_REDUCTION_THREADS", "-3"}}) {
        ::setenv(b.var, b.value, 1);
        try {
            tandem::Config::from_environment();
            ADD_FAILURE() << b.var << "=" << b.value << " was accepted";
        } catch (const tandem::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(b.var), std::string::npos) << e.what();
        }
        ::unsetenv(b.var);
    }
    ::setenv("TANDEM_REDUCTION_WG", "128", 1);
    ::setenv("TANDEM_REDUCTION_THREADS", "65536", 1);
    const auto c = tandem::Config::from_environment();
    EXPECT_EQ(c.reduction_workgroup, 128u);
    EXPECT_EQ(c.reduction_threads, 65536);
    ::unsetenv("TANDEM_REDUCTION_WG");
    ::unsetenv("TANDEM_REDUCTION_THREADS");
}

TEST(Reductions, ArgumentErrors) {
    Runtime rt(cpu_config());
    Array x = rt.ones(tandem::Shape{2, 3});
    EXPECT_THROW(tandem::sum(x, 0), tandem::ValueError);
    EXPECT_THROW(tandem::max(x, {}, -1), tandem::ValueError);
    EXPECT_THROW(tandem::var(x, 2), tandem::ValueError);
    EXPECT_THROW(tandem::dot(x, x), tandem::ShapeError);
    EXPECT_THROW(tandem::dot(rt.ones(tandem::Shape{3, 1}), rt.ones(tandem::Shape{4, 1})), tandem::ShapeError);
    EXPECT_THROW(tandem::norm(x), tandem::ShapeError);
    EXPECT_THROW(tandem::norm(rt.ones(tandem::Shape{3, 1}), 0.5), tandem::ValueError);
    try {
        tandem::sum(x, 0);
    } catch (const tandem::ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos) << e.what();
    }
}

}  // namespace

// Elementwise work on reductions' results alone runs as the reduce region's tail: one region
// where there were two, the bits of the unfused program (double and single, with NaN, Inf, -0,
// empty and long reductions).
TEST(Reductions, WorkOnTheResultsAloneIsTheReductionsTail) {
    std::mt19937_64 rng(31);
    tandem::Config plain_config = cpu_config();
    plain_config.fusion = false;
    Runtime fused(cpu_config()), plain(plain_config);
    for (const DType t : {DType::f64, DType::f32})
        for (const Dims& shape : ttail::shapes()) {
            const Host x = tred::random_data(shape, t, rng, /*specials=*/true);
            const Array xf = tref::make_array(fused, x), xp = tref::make_array(plain, x);
            fused.evaluate({xf}).get();
            for (const ttail::Case& c : ttail::cases()) {
                SCOPED_TRACE(c.name + " of " + tref::dims_str(shape) + " " + tref::dtype_str(t));
                const auto before = fused.metrics().regions_executed;
                const Host got = tref::gather(c.f(xf));
                if (x.numel() > 0) {
                    EXPECT_EQ(fused.metrics().regions_executed - before, c.regions);
                }
                EXPECT_TRUE(tref::same_values(got, tref::gather(c.f(xp)), tref::Acc::exact_signed));
            }
        }
}
