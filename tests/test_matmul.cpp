// matmul on the CPU executor (OpenBLAS under oneTBB) through the public API, against the
// reference of matmul_reference.hpp: shapes including vectors, empty and sizes that are not
// multiples of any block, every transpose combination, double, single, mixed and logical
// operands, NaN/Inf, the product feeding fused expressions, MATLAB's scalar case, shape errors.
#include <gtest/gtest.h>

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

}  // namespace
