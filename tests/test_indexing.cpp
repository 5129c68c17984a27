// Indexing on the CPU executor: the shared cases of indexing_cases.hpp, plus what is decided when
// the op is built (shapes, types, argument errors) and the fusion of a masked scalar assignment.
#include <gtest/gtest.h>

#include <random>

#include "indexing_cases.hpp"

namespace {

tandem::Config cpu_config() {
    tandem::Config c;
    c.device = "cpu";
    return c;
}

TEST(Indexing, Gather) {
    tandem::Runtime rt(cpu_config());
    std::mt19937_64 rng(41);
    tix::gathers(rt, rng);
}

TEST(Indexing, MasksAndFind) {
    tandem::Runtime rt(cpu_config());
    std::mt19937_64 rng(42);
    tix::masks_and_find(rt, rng);
}

TEST(Indexing, Assign) {
    tandem::Runtime rt(cpu_config());
    std::mt19937_64 rng(43);
    tix::assignments(rt, rng);
}

TEST(Indexing, Permute) {
    tandem::Runtime rt(cpu_config());
    std::mt19937_64 rng(44);
    tix::permutes(rt, rng);
    const tandem::Array A = rt.ones(tandem::Shape{2, 3, 4});
    EXPECT_THROW(tandem::permute(A, {1, 2}), tandem::ValueError);
    EXPECT_THROW(tandem::permute(A, {1, 2, 2}), tandem::ValueError);
    EXPECT_THROW(tandem::permute(A, {0, 1, 2}), tandem::ValueError);
    // only singletons move: free (a reshape of the same value)
    const tandem::Array v = rt.ones(tandem::Shape{5, 1, 3});
    EXPECT_EQ(tandem::permute(v, {2, 1, 3}).shape(), (tandem::Shape{1, 5, 3}));
    rt.evaluate({v}).get();
    const auto m0 = rt.metrics();
    tandem::permute(v, {2, 1, 3}).gather().get();
    EXPECT_EQ(rt.metrics().elements_written - m0.elements_written, 0u);
}

TEST(Indexing, BadSubscripts) {
    tandem::Runtime rt(cpu_config());
    tix::bad_subscripts(rt);
}

TEST(Indexing, ShapesTypesAndArgumentErrors) {
    tandem::Runtime rt(cpu_config());
    const tandem::Array A = rt.ones(tandem::Shape{3, 4});
    const tandem::Array I = rt.ones(tandem::Shape{1, 2});
    EXPECT_THROW(tandem::index(A, 0, I), tandem::ValueError);
    EXPECT_THROW(tandem::index(A, tandem::Array()), tandem::ValueError);
    // a logical subscript along a dimension: a vector, no longer than the extent
    EXPECT_THROW(tandem::index(A, 1, rt.ones(tandem::Shape{1, 4}) > 0.0), tandem::IndexError);
    EXPECT_THROW(tandem::index(A, 1, rt.ones(tandem::Shape{2, 2}) > 0.0), tandem::ShapeError);
    // the right side: a scalar or the selection's size
    EXPECT_THROW(tandem::assign(A, I, rt.ones(tandem::Shape{1, 3})), tandem::ShapeError);
    EXPECT_THROW(tandem::assign(A, 2, I, rt.ones(tandem::Shape{3, 3})), tandem::ShapeError);
    EXPECT_EQ(tandem::assign(A, 2, I, rt.ones(tandem::Shape{3, 2})).shape(), (tandem::Shape{3, 4}));
    // types: a keeps its own; a logical a takes a numeric right side's
    EXPECT_EQ(tandem::assign(astype(A, tandem::DType::f32), I, 2.0).dtype(), tandem::DType::f32);
    EXPECT_EQ(tandem::assign(A > 0.0, I, 2.0).dtype(), tandem::DType::f64);
    EXPECT_EQ(tandem::assign(A > 0.0, I, rt.ones(tandem::Shape{1, 1}) > 0.0).dtype(), tandem::DType::logical);
    EXPECT_EQ(tandem::index(A, 2, rt.ones(tandem::Shape{5, 1})).shape(), (tandem::Shape{3, 5}));
    EXPECT_EQ(tandem::index(A, 3, rt.ones(tandem::Shape{1, 2})).shape(), (tandem::Shape{3, 4, 2}));
}

TEST(Indexing, MaskedScalarAssignmentFuses) {
    tandem::Runtime rt(cpu_config());
    std::vector<double> d{-1, 2, -3, 4};
    const tandem::Array x = rt.array(std::span<const double>(d), tandem::Shape{2, 2});
    const tandem::Array y = tandem::assign(x, x < 0.0, 0.0) * 2.0;  // max(x, 0) * 2, one region
    const auto m0 = rt.metrics();
    const auto got = tref::gather(y);
    EXPECT_EQ(got.v, (std::vector<double>{0, 4, 0, 8}));
    EXPECT_EQ(rt.metrics().regions_executed - m0.regions_executed, 1u);
}

}  // namespace
