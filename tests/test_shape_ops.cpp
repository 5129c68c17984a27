// reshape and column: the same elements in column-major order, free (no region runs, nothing is
// written: the value is shared), of inputs, computed values, constants and failed values;
// consumers of a reshaped value fuse as usual; shape errors; dot of a row and a column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "remap_cases.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::Runtime;
using tandem::Shape;

namespace {

tandem::Config cpu_config() {
    tandem::Config c;
    c.device = "cpu";
    return c;
}

TEST(Reshape, SameElementsNewShapeNoWork) {
    Runtime rt(cpu_config());
    std::vector<double> d(24);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(i);
    Array x = rt.array(std::span<const double>(d), Shape{4, 6});
    Array y = x * 2.0;
    rt.evaluate({y}).get();
    const auto m0 = rt.metrics();
    auto r = tandem::reshape(y, Shape{2, 3, 4}).gather().get();
    const auto m1 = rt.metrics();
    EXPECT_EQ(r.shape(), (Shape{2, 3, 4}));
    for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(r.data<double>()[i], 2.0 * d[i]);
    EXPECT_EQ(m1.regions_executed - m0.regions_executed, 0u) << "a reshape computes nothing";
    EXPECT_EQ(m1.elements_written - m0.elements_written, 0u) << "a reshape writes nothing";
    EXPECT_EQ(tandem::column(x).shape(), (Shape{24, 1}));
    // a reshaped value feeds fused consumers; the producer runs once
    auto s = tref::gather(tandem::sum(tandem::reshape(x + 1.0, Shape{6, 4}), 1));
    ASSERT_EQ(s.v.size(), 4u);
    for (int j = 0; j < 4; ++j) {
        double want = 0;
        for (int i = 0; i < 6; ++i) want += d[static_cast<std::size_t>(i + 6 * j)] + 1.0;
        EXPECT_EQ(s.v[static_cast<std::size_t>(j)], want);
    }
    // a constant is computed, then shared
    auto o = tandem::reshape(rt.ones(Shape{2, 3}), Shape{3, 2}).gather().get();
    EXPECT_EQ(o.to_doubles(), std::vector<double>(6, 1.0));
    EXPECT_EQ(tandem::reshape(x, Shape{4, 6}).node(), x.node()) << "the same shape is the same array";
}

TEST(Reshape, ErrorsAndFailedValues) {
    Runtime rt(cpu_config());
    Array x = rt.ones(Shape{2, 3});
    try {
        tandem::reshape(x, Shape{4, 2});
        ADD_FAILURE() << "no error";
    } catch (const tandem::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
    }
    std::vector<double> n = {1, NAN};
    Array bad = tandem::logical(rt.array(std::span<const double>(n)));
    EXPECT_THROW(tandem::reshape(bad, Shape{1, 2}).gather().get(), tandem::ValueError);
}

TEST(Reshape, DotOfARowAndAColumn) {
    Runtime rt(cpu_config());
    std::vector<double> a = {1, 2, 3}, b = {4, -5, 6};
    Array row = rt.array(std::span<const double>(a), Shape{1, 3}), col = rt.array(std::span<const double>(b), Shape{3, 1});
    EXPECT_EQ(tandem::dot(row, col).gather().get().to_doubles(), std::vector<double>{12.0});
}

TEST(Transpose, EveryShapeAndTypeMatchesAndMatmulReadsItInPlace) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(21);
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32, tandem::DType::logical})
        for (auto [r, c] : {std::pair{1, 1}, {1, 9}, {9, 1}, {3, 5}, {64, 64}, {65, 130}, {200, 3}, {0, 4}}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + std::to_string(r) + "x" + std::to_string(c));
            tref::Host h = tref::random_host({r, c}, t, rng);
            tref::Host got = tref::gather(tandem::transpose(tref::make_array(rt, h)));
            ASSERT_EQ(got.dims, (tref::Dims{c, r}));
            ASSERT_EQ(got.dtype, t);
            for (int i = 0; i < r; ++i)
                for (int j = 0; j < c; ++j) {
                    const double w = h.v[static_cast<std::size_t>(i + r * j)], g = got.v[static_cast<std::size_t>(j + c * i)];
                    ASSERT_TRUE(w == g || (std::isnan(w) && std::isnan(g))) << i << "," << j;
                }
        }
    // The product's operands are drawn in [-10, 10]: random_host's 1e300 magnitudes overflow to
    // +-Inf and NaN in a sum of 40 products, where the comparison says nothing.
    std::uniform_real_distribution<double> u(-10.0, 10.0);
    tref::Host a{{40, 30}, tandem::DType::f64, {}}, b{{40, 20}, tandem::DType::f64, {}};
    for (tref::Host* h : {&a, &b})
        for (std::int64_t e = 0; e < tref::numel(h->dims); ++e) h->v.push_back(u(rng));
    Array A = tref::make_array(rt, a), B = tref::make_array(rt, b);
    const auto m0 = rt.metrics();
    tref::Host p = tref::gather(tandem::matmul(tandem::transpose(A), B));
    const auto m1 = rt.metrics();
    EXPECT_EQ(m1.regions_executed - m0.regions_executed, 1u) << "A' read in place: no transpose region";
    tref::Host q = tref::gather(tandem::matmul(A, B, {true, false}));
    EXPECT_TRUE(tref::same_values(p, q));  // NaN-aware, should a NaN ever appear
    EXPECT_THROW(tandem::transpose(rt.ones(Shape{2, 2, 2})), tandem::ShapeError);
    EXPECT_TRUE(tref::same_values(tref::gather(tandem::transpose(tandem::transpose(A))), a));
}

/// The reference concatenation of hosts along dim (0-based).
tref::Host cat_ref(int dim, const std::vector<tref::Host>& hs) {
    tref::Host out;
    tref::Dims d = hs.front().dims;
    while (d.size() <= static_cast<std::size_t>(dim)) d.push_back(1);
    std::int64_t inner = 1, outer = 1, total = 0;
    for (int q = 0; q < dim; ++q) inner *= d[static_cast<std::size_t>(q)];
    for (std::size_t q = static_cast<std::size_t>(dim) + 1; q < d.size(); ++q) outer *= d[q];
    for (const auto& h : hs) total += dim < static_cast<int>(h.dims.size()) ? h.dims[static_cast<std::size_t>(dim)] : 1;
    d[static_cast<std::size_t>(dim)] = total;
    out.dims = tref::normalize(d);
    out.dtype = hs.front().dtype;
    for (std::int64_t o = 0; o < outer; ++o)
        for (const auto& h : hs) {
            const std::int64_t l = dim < static_cast<int>(h.dims.size()) ? h.dims[static_cast<std::size_t>(dim)] : 1;
            for (std::int64_t e = 0; e < inner * l; ++e) out.v.push_back(h.v[static_cast<std::size_t>(o * inner * l + e)]);
        }
    return out;
}

TEST(Cat, HorzVertAndNDMatchReference) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(31);
    struct Case {
        int dim;
        std::vector<tref::Dims> shapes;
    };
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32, tandem::DType::logical})
        for (const Case& c : {Case{1, {{2, 3}, {4, 3}, {1, 3}}}, Case{2, {{3, 1}, {3, 4}, {3, 2}}},
                              Case{3, {{2, 2}, {2, 2, 3}}}, Case{1, {{0, 3}, {2, 3}}}, Case{2, {{5, 2}, {5, 0}, {5, 1}}}}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " dim " + std::to_string(c.dim));
            std::vector<tref::Host> hs;
            std::vector<Array> as;
            for (const auto& sh : c.shapes) {
                hs.push_back(tref::random_host(sh, t, rng));
                as.push_back(tref::make_array(rt, hs.back()));
            }
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::cat(c.dim, as)), cat_ref(c.dim - 1, hs), tref::Acc::exact_signed));
        }
    // [] is skipped; single wins; mismatched shapes name them
    std::vector<double> e;
    Array empty = rt.array(std::span<const double>(e), Shape{0, 0});
    Array a = rt.ones(Shape{2, 2}), b = tandem::single(rt.ones(Shape{2, 1}));
    EXPECT_EQ(tandem::horzcat({empty, a, b}).shape(), (Shape{2, 3}));
    EXPECT_EQ(tandem::horzcat({a, b}).dtype(), tandem::DType::f32);
    try {
        tandem::vertcat({a, b});
        ADD_FAILURE() << "no error";
    } catch (const tandem::ShapeError& err) {
        EXPECT_NE(std::string(err.what()).find("2x1"), std::string::npos) << err.what();
    }
}

/// A reference remap along dim (0-based): output extent m, position k reads f(k).
tref::Host remap_ref(const tref::Host& x, int dim, std::int64_t m, const std::function<std::int64_t(std::int64_t)>& f) {
    tref::Dims d = x.dims;
    while (d.size() <= static_cast<std::size_t>(dim)) d.push_back(1);
    std::int64_t inner = 1, outer = 1;
    for (int q = 0; q < dim; ++q) inner *= d[static_cast<std::size_t>(q)];
    for (std::size_t q = static_cast<std::size_t>(dim) + 1; q < d.size(); ++q) outer *= d[q];
    const std::int64_t n = d[static_cast<std::size_t>(dim)];
    tref::Host y = x;
    d[static_cast<std::size_t>(dim)] = m;
    y.dims = tref::normalize(d);
    y.v.assign(static_cast<std::size_t>(inner * m * outer), 0.0);
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t k = 0; k < m; ++k)
            for (std::int64_t i = 0; i < inner; ++i)
                y.v[static_cast<std::size_t>(i + inner * (k + m * o))] = x.v[static_cast<std::size_t>(i + inner * (f(k) + n * o))];
    return y;
}

TEST(Remap, FlipCircshiftRepmatSlice) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(41);
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32, tandem::DType::logical}) {
        tref::Host h = tref::random_host({5, 4, 3}, t, rng);
        Array a = tref::make_array(rt, h);
        for (int dim : {1, 2, 3}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " dim " + std::to_string(dim));
            const std::int64_t n = h.dims[static_cast<std::size_t>(dim - 1)];
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::flip(a, dim)),
                                          remap_ref(h, dim - 1, n, [&](std::int64_t k) { return n - 1 - k; }), tref::Acc::exact_signed));
            for (std::int64_t sh : {1, -2, 7}) {
                const std::int64_t s0 = ((sh % n) + n) % n;
                EXPECT_TRUE(tref::same_values(tref::gather(tandem::circshift(a, sh, dim)),
                                              remap_ref(h, dim - 1, n, [&](std::int64_t k) { return (k - s0 + n) % n; }),
                                              tref::Acc::exact_signed)) << "shift " << sh;
            }
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::slice(a, dim, 2, 2, tandem::kEnd)),
                                          remap_ref(h, dim - 1, (n - 2) / 2 + 1, [&](std::int64_t k) { return 1 + 2 * k; }),
                                          tref::Acc::exact_signed));
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::slice(a, dim, n, -1, 1)),
                                          remap_ref(h, dim - 1, n, [&](std::int64_t k) { return n - 1 - k; }), tref::Acc::exact_signed));
        }
        tref::Host r = tref::gather(tandem::repmat(a, std::vector<std::int64_t>{2, 1, 2}));
        tref::Host want = remap_ref(remap_ref(h, 0, 10, [](std::int64_t k) { return k % 5; }), 2, 6, [](std::int64_t k) { return k % 3; });
        EXPECT_TRUE(tref::same_values(r, want, tref::Acc::exact_signed));
    }
    Array x = rt.ones(Shape{3, 4});
    EXPECT_EQ(tandem::slice(x, 2, 3, 1, 2).shape(), (Shape{3, 0})) << "an empty range";
    try {
        tandem::slice(x, 2, 2, 1, 5);
        ADD_FAILURE() << "no error";
    } catch (const tandem::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("index 5"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("extent 4"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tandem::slice(x, 1, 0, 1, 2), tandem::IndexError);
    EXPECT_THROW(tandem::slice(x, 1, 1, 0, 2), tandem::ValueError);
    EXPECT_EQ(tandem::repmat(x, 2, 3).shape(), (Shape{6, 12}));
}

// Remaps read by elementwise ops and reductions are folded into the reads (graph/fusion.cpp):
// random chains of circshift / flip / ranges / repmat, summed with broadcasting and reduced, give
// the bits of the same program with every remap materialised (fusion off).
TEST(FoldedRemaps, RandomChainsMatchMaterialisedRemapsBitForBit) {
    tandem::Config off = cpu_config(), small_blocks = cpu_config();
    off.fusion = false;
    small_blocks.block_elements = 64;  // blocks that start inside runs, planes and wraps
    small_blocks.cpu_threads = 2;
    small_blocks.log = std::getenv("TANDEM_LOG") ? std::getenv("TANDEM_LOG") : "";
    Runtime fused(small_blocks), plain(off);
    std::mt19937_64 rng(tref::seed_of("FoldedRemaps.RandomChains"));
    const std::vector<tref::Dims> shapes = {{7, 5, 3}, {1, 6, 4}, {9, 1}, {2, 3, 2, 2}, {33, 17}, {13, 11, 5}};
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32})
        for (const auto& dims : shapes)
            for (int trial = 0; trial < 12; ++trial) {
                const tref::Host h = tref::random_host(dims, t, rng);
                const tremap::Recipe recipe = tremap::random_recipe(dims, rng);
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims) + " trial " + std::to_string(trial));
                const tremap::Outputs f = tremap::build(tref::make_array(fused, h), recipe);
                const tremap::Outputs p = tremap::build(tref::make_array(plain, h), recipe);
                fused.evaluate({f.out, f.reduced_out, f.reduced_remap}).get();  // one plan, as a program would
                EXPECT_TRUE(tref::same_values(tref::gather(f.out), tref::gather(p.out), tref::Acc::exact_signed));
                EXPECT_TRUE(tref::same_values(tref::gather(f.reduced_out), tref::gather(p.reduced_out), tref::Acc::exact_signed));
                EXPECT_TRUE(tref::same_values(tref::gather(f.reduced_remap), tref::gather(p.reduced_remap), tref::Acc::exact_signed));
            }
}

// A heat step's four circshifts are one region that writes only the result (no shifted copy), and
// so is the same stencil written with ranges; a remap the program also wants is computed once and
// still folded into the other reads; a remap that does not compose with the one read after it (a
// repmat then a circshift of its 2n positions) is computed, and the circshift folds into the read.
TEST(FoldedRemaps, StencilsAreOnePassWithoutShiftedCopies) {
    tandem::Config off = cpu_config();
    off.fusion = false;
    Runtime rt(cpu_config()), plain(off);
    std::mt19937_64 rng(5);
    const tref::Host h = tref::random_host({64, 48}, tandem::DType::f64, rng);
    const Array u = tref::make_array(rt, h), pu = tref::make_array(plain, h);
    (void)u.gather().get();
    auto run = [&](const Array& a, std::uint64_t regions, std::uint64_t written) {
        const auto m0 = rt.metrics();
        tref::Host got = tref::gather(a);
        const auto m1 = rt.metrics();
        EXPECT_EQ(m1.regions_executed - m0.regions_executed, regions);
        EXPECT_EQ(m1.elements_written - m0.elements_written, written);
        return got;
    };
    EXPECT_TRUE(tref::same_values(run(tremap::heat_step(u), 1, 64 * 48), tref::gather(tremap::heat_step(pu)), tref::Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(run(tremap::interior_step(u), 1, 62 * 46), tref::gather(tremap::interior_step(pu)),
                                  tref::Acc::exact_signed));
    // Ten steps in one plan: ten regions, each reading the one before through four shifts.
    Array v = u, pv = pu;
    for (int s = 0; s < 10; ++s) {
        v = tremap::heat_step(v);
        pv = tremap::heat_step(pv);
    }
    EXPECT_TRUE(tref::same_values(run(v, 10, 10 * 64 * 48), tref::gather(pv), tref::Acc::exact_signed));
    // Wanted too: the circshift is written once (its own region) and the sum reads u shifted.
    const Array c = tandem::circshift(u, 3, 2), w = c + 2.0 * u;
    const auto m0 = rt.metrics();
    rt.evaluate({c, w}).get();
    EXPECT_EQ(rt.metrics().regions_executed - m0.regions_executed, 2u);
    EXPECT_TRUE(tref::same_values(tref::gather(w), tref::gather(tandem::circshift(pu, 3, 2) + 2.0 * pu), tref::Acc::exact_signed));
    // repmat, then a circshift over its 128 rows: mod 128 then mod 64 do not compose.
    const Array r = tandem::circshift(tandem::repmat(u, 2, 1), 5, 1) - 1.0;
    const Array pr = tandem::circshift(tandem::repmat(pu, 2, 1), 5, 1) - 1.0;
    EXPECT_TRUE(tref::same_values(run(r, 2, 2 * 128 * 48), tref::gather(pr), tref::Acc::exact_signed));
    // repmat read directly, and flipped: positions wrap any number of times.
    auto tiles = [](const Array& a) { return tandem::repmat(a, 3, 2) * 2.0 - tandem::flip(tandem::repmat(a, 3, 2), 1); };
    EXPECT_TRUE(tref::same_values(run(tiles(u), 1, 6 * 64 * 48), tref::gather(tiles(pu)), tref::Acc::exact_signed));
    // An empty range read with a shifted array of its shape.
    const Array e = tandem::slice(u, 1, 3, 1, 2) + tandem::circshift(tandem::slice(u, 1, 5, 1, 4), 1, 2);
    EXPECT_EQ(tref::gather(e).dims, (tref::Dims{0, 48}));
}

}  // namespace
