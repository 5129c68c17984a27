// matmul on the CPU executor (Tandem's GEMM under oneTBB) through the public API, against the
// reference of matmul_reference.hpp (bound and canonical bits): shapes including vectors, empty and sizes that are not
// multiples of any block, every transpose combination, double, single, mixed and logical
// operands, NaN/Inf, the product feeding fused expressions, MATLAB's scalar case, shape errors.
#include <gtest/gtest.h>

#include <bit>

#include <random>

#include "matmul_reference.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Host;

namespace {

tandem::Config cpu_config() {
    tandem::Config c;
    c.device = "cpu";
    return c;
}

struct Dims3 {
    std::int64_t m, k, n;
};
const Dims3 kSizes[] = {{1, 1, 1}, {1, 7, 1}, {5, 1, 4}, {1, 9, 6}, {6, 9, 1}, {17, 33, 9}, {64, 64, 64},
                        {130, 70, 95}, {0, 4, 3}, {3, 0, 5}, {4, 5, 0}};

TEST(Matmul, EveryTransposeEverySizeMatchesReference) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(3);
    for (DType t : {DType::f64, DType::f32}) {
        for (const Dims3& d : kSizes)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + std::to_string(d.m) + "x" + std::to_string(d.k) +
                                 "x" + std::to_string(d.n) + (ta ? " A'" : "") + (tb ? " B'" : ""));
                    Host a = tmm::random_matrix(ta ? d.k : d.m, ta ? d.m : d.k, t, rng, true);
                    Host b = tmm::random_matrix(tb ? d.n : d.k, tb ? d.k : d.n, t, rng, true);
                    Host got = tref::gather(tandem::matmul(tref::make_array(rt, a), tref::make_array(rt, b), {ta, tb}));
                    EXPECT_TRUE(tmm::product_ok(got, a, b, ta, tb));
                }
    }
}

// X'X and XX' of a tall (wide) X run as syrk over fixed slices of k, summed in order and
// mirrored: against the reference, exactly symmetric, special values through; one slice and
// several (16384 each).
TEST(Matmul, ProductWithOwnTransposeIsSymmetricAndMatchesReference) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(5);
    for (DType t : {DType::f64, DType::f32})
        for (auto [k, n] : {std::pair{40, 9}, std::pair{40000, 7}, std::pair{36000, 20}})
            for (bool left : {true, false}) {
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + " k " + std::to_string(k) + " n " + std::to_string(n) +
                             (left ? " X'X" : " XX'"));
                const Host x = tmm::random_matrix(left ? k : n, left ? n : k, t, rng, k < 100);
                const Array X = tref::make_array(rt, x);
                const Host got = tref::gather(tandem::matmul(X, X, {left, !left}));
                EXPECT_TRUE(tmm::product_ok(got, x, x, left, !left));
                std::size_t asymmetric = 0;
                for (std::int64_t j = 0; j < n; ++j)
                    for (std::int64_t i = 0; i < n; ++i)
                        asymmetric += std::bit_cast<std::uint64_t>(got.v[static_cast<std::size_t>(i + j * n)]) !=
                                      std::bit_cast<std::uint64_t>(got.v[static_cast<std::size_t>(j + i * n)]);
                EXPECT_EQ(asymmetric, 0u);
            }
}

TEST(Matmul, MixedTypesScalarsAndFusedConsumers) {
    Runtime rt(cpu_config());
    std::mt19937_64 rng(4);
    Host a = tmm::random_matrix(20, 30, DType::f64, rng), b = tmm::random_matrix(30, 10, DType::f32, rng);
    Host l = tmm::random_matrix(30, 10, DType::logical, rng);
    Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), L = tref::make_array(rt, l);
    Host ab = tref::gather(tandem::matmul(A, B));
    EXPECT_EQ(ab.dtype, DType::f32) << "single wins";
    Host a32 = a;
    for (auto& v : a32.v) v = tref::to_type(v, DType::f32);
    a32.dtype = DType::f32;
    EXPECT_TRUE(tmm::product_ok(ab, a32, b, false, false));
    Host al = tref::gather(tandem::matmul(A, L));
    EXPECT_TRUE(tmm::product_ok(al, a, l, false, false)) << "logical counts as double";
    // a 1 x 1 operand multiplies elementwise (MATLAB)
    Host two = tref::gather(tandem::matmul(rt.fill(2.0, tandem::Shape{1, 1}), A));
    for (std::size_t i = 0; i < a.v.size(); ++i) ASSERT_EQ(two.v[i], 2.0 * a.v[i]);
    // the product feeds an elementwise consumer and a reduction; a constant operand is computed
    const auto m0 = rt.metrics();
    Host s = tref::gather(tandem::sum(tandem::matmul(A, rt.ones(tandem::Shape{30, 1})) * 2.0 + 1.0, tandem::all_dims));
    const auto m1 = rt.metrics();
    long double want = 0;
    for (double v : a.v) want += 2.0L * v;
    want += 20;
    EXPECT_NEAR(s.v.at(0), static_cast<double>(want), 1e-9);
    EXPECT_LE(m1.regions_executed - m0.regions_executed, 3u) << "ones, the product, the fused sum";
}

TEST(Matmul, ShapeErrorsNameTheDimensions) {
    Runtime rt(cpu_config());
    Array a = rt.ones(tandem::Shape{2, 3}), b = rt.ones(tandem::Shape{4, 5});
    try {
        tandem::matmul(a, b);
        ADD_FAILURE() << "no error";
    } catch (const tandem::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("4x5"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tandem::matmul(rt.ones(tandem::Shape{2, 2, 2}), rt.ones(tandem::Shape{2, 2})), tandem::ShapeError);
    EXPECT_NO_THROW(tandem::matmul(a, rt.ones(tandem::Shape{2, 5}), {true, false}));  // A' is 3x2
}

// ---- reduced precision (MatmulPrecision f16 / bf16) -------------------------------------------------

/// x rounded to `p` significant bits (ties to even), quantum at least 2^qmin, magnitudes that round
/// to 2^emax or more: Inf. Independent of the library's integer implementation.
double round_ref(double x, int p, int qmin, int emax) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
    int e = 0;
    (void)std::frexp(x, &e);
    const int q = std::max(e - p, qmin);
    const double v = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);
    if (std::fabs(v) >= std::ldexp(1.0, emax)) return std::copysign(INFINITY, x);
    return std::copysign(v, x);
}
double round_to(double x, tandem::MatmulPrecision p) {
    return p == tandem::MatmulPrecision::f16 ? round_ref(x, 11, -24, 16) : round_ref(x, 8, -133, 128);
}
Host rounded(const Host& h, tandem::MatmulPrecision p) {
    Host r = h;
    for (auto& v : r.v) v = round_to(v, p);
    return r;
}
/// Single matrix with values across half's range: ordinary, beyond 65504, in half's subnormals,
/// below them, NaN and Inf.
Host wide_matrix(std::int64_t r, std::int64_t c, std::mt19937_64& rng) {
    Host h = tmm::random_matrix(r, c, DType::f32, rng, true);
    std::uniform_real_distribution<double> e(-30.0, 20.0);
    for (auto& v : h.v)
        if (rng() % 7 == 0) v = tref::to_type(std::copysign(std::exp2(e(rng)), v), DType::f32);
    return h;
}

TEST(Matmul, ReducedPrecisionMatchesTheRoundedReference) {
    // Against a long double product of the rounded operands (rounded by round_ref, not by the library).
    Runtime rt(cpu_config());
    std::mt19937_64 rng(21);
    for (auto p : {tandem::MatmulPrecision::f16, tandem::MatmulPrecision::bf16})
        for (const Dims3& d : kSizes)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    SCOPED_TRACE(std::string(tandem::to_string(p)) + " " + std::to_string(d.m) + "x" + std::to_string(d.k) +
                                 "x" + std::to_string(d.n) + (ta ? " A'" : "") + (tb ? " B'" : ""));
                    Host a = wide_matrix(ta ? d.k : d.m, ta ? d.m : d.k, rng);
                    Host b = wide_matrix(tb ? d.n : d.k, tb ? d.k : d.n, rng);
                    Host got = tref::gather(tandem::matmul(tref::make_array(rt, a), tref::make_array(rt, b), {ta, tb, p}));
                    EXPECT_TRUE(tmm::product_ok(got, rounded(a, p), rounded(b, p), ta, tb));
                }
}

TEST(Matmul, ReducedPrecisionRoundsEveryElement) {
    // k = 1 and scalar operands: each result is round(a) * round(b), exact in single, so bit for bit.
    Runtime rt(cpu_config());
    std::vector<float> x;
    for (float v : {0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e9f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1.8p-24f,
                    1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 0x1.ff8p127f, 3.14159265f, INFINITY, NAN}) {
        x.push_back(v);
        x.push_back(-v);
    }
    const auto n = static_cast<std::int64_t>(x.size());
    for (auto p : {tandem::MatmulPrecision::f16, tandem::MatmulPrecision::bf16}) {
        SCOPED_TRACE(tandem::to_string(p));
        Array col = rt.array(std::span<const float>(x), tandem::Shape{n, 1});
        Array one = rt.array(std::span<const float>(std::vector<float>{1.0f}), tandem::Shape{1, 1});
        Array three = rt.array(std::span<const float>(std::vector<float>{3.0f}), tandem::Shape{1, 1});
        const tandem::MatmulOptions o{false, false, p};
        auto expect_column = [&](const tandem::Array& got_array, double factor, const char* what, std::size_t column = 0) {
            Host got = tref::gather(got_array);
            ASSERT_GE(got.v.size(), x.size() * (column + 1)) << what;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const double want = round_to(x[i], p) * factor, g = got.v[i + x.size() * column];
                EXPECT_TRUE((std::isnan(want) && std::isnan(g)) || g == tref::to_type(want, DType::f32))
                    << what << ": x = " << x[i] << " gives " << g << ", expected " << want;
            }
        };
        // A product with k = 1 (the general GEMM path) and the scalar cases.
        Array row = rt.array(std::span<const float>(std::vector<float>{1.0f, 3.0f}), tandem::Shape{1, 2});
        expect_column(tandem::matmul(col, row, o), 1.0, "column * [1 3], first column", 0);
        expect_column(tandem::matmul(col, row, o), 3.0, "column * [1 3], second column", 1);
        expect_column(tandem::matmul(col, one, o), 1.0, "column * 1");
        expect_column(tandem::matmul(three, col, {false, true, p}), 3.0, "3 * column' (a row)");
        expect_column(tandem::matmul(col, three, o), 3.0, "column * 3 (scalar: elementwise, rounded)");
        Host t = tref::gather(tandem::matmul(three, col, {false, true, p}));
        EXPECT_EQ(t.dims, (tref::Dims{1, n})) << "the transpose of the other operand applies to a scalar product";
    }
    // Full precision: the scalar case still honours the transpose (MATLAB's 3 * x').
    Host t = tref::gather(tandem::matmul(rt.fill(3.0, tandem::Shape{1, 1}), rt.ones(tandem::Shape{4, 1}), {false, true}));
    EXPECT_EQ(t.dims, (tref::Dims{1, 4}));
}

TEST(Matmul, ReducedPrecisionKeepsItsRoundingWhenAnEpilogueFolds) {
    // alpha * P + beta * C + bias, relu folded into the product's region: the operands are still
    // rounded (the same bits as the chain computed unfused, which rounds them too).
    Runtime fused(cpu_config());
    tandem::Config plain_config = cpu_config();
    plain_config.fusion = false;
    Runtime plain(plain_config);
    std::mt19937_64 rng(23);
    const Host a = tmm::random_matrix(33, 17, DType::f32, rng), b = tmm::random_matrix(17, 65, DType::f32, rng);
    const Host c = tmm::random_matrix(33, 65, DType::f32, rng), r = tmm::random_matrix(33, 1, DType::f32, rng);
    for (auto p : {tandem::MatmulPrecision::f16, tandem::MatmulPrecision::bf16}) {
        SCOPED_TRACE(tandem::to_string(p));
        auto run = [&](Runtime& rt) {
            const Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), C = tref::make_array(rt, c);
            const Array R = tref::make_array(rt, r);
            rt.evaluate({A, B, C, R}).get();
            return tref::gather(tandem::max(tandem::matmul(A, B, {false, false, p}) * 2.0 + C * 0.25 + R, 0.0));
        };
        const Host got = run(fused), want = run(plain);
        EXPECT_TRUE(tref::same_values(got, want));
        // and it is the rounded product: far from the unrounded one
        Host full = tref::gather(tandem::matmul(tref::make_array(plain, a), tref::make_array(plain, b)));
        Host rounded_product = tref::gather(tandem::matmul(tref::make_array(plain, a), tref::make_array(plain, b), {false, false, p}));
        EXPECT_TRUE(tmm::product_ok(rounded_product, rounded(a, p), rounded(b, p), false, false));
        EXPECT_FALSE(tref::same_values(full, rounded_product));
    }
}

TEST(Matmul, ReducedPrecisionNeedsSingleOperands) {
    Runtime rt(cpu_config());
    Array s = rt.ones(tandem::Shape{3, 3}, DType::f32), d = rt.ones(tandem::Shape{3, 3}), l = rt.ones(tandem::Shape{3, 3}, DType::logical);
    for (auto p : {tandem::MatmulPrecision::f16, tandem::MatmulPrecision::bf16}) {
        try {
            tandem::matmul(d, s, {false, false, p});
            ADD_FAILURE() << "no error";
        } catch (const tandem::DTypeError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("A (3x3) is double"), std::string::npos) << what;
            EXPECT_NE(what.find(tandem::to_string(p)), std::string::npos) << what;
        }
        try {
            tandem::matmul(s, l, {false, false, p});
            ADD_FAILURE() << "no error";
        } catch (const tandem::DTypeError& e) {
            EXPECT_NE(std::string(e.what()).find("B (3x3) is logical"), std::string::npos) << e.what();
        }
        EXPECT_THROW(tandem::matmul(rt.scalar(2.0), s, {false, false, p}), tandem::DTypeError) << "a double scalar too";
        EXPECT_NO_THROW(tandem::matmul(s, s, {false, false, p}));
    }
    EXPECT_NO_THROW(tandem::matmul(d, s));  // full precision mixes types as before
}

}  // namespace
