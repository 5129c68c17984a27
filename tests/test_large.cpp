// Outputs larger than the caches take another store path (non-temporal stores from a block
// register, see backends/cpu/program.hpp): the same values, every element, tails included.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reference.hpp"

namespace {

// 16 MiB is the threshold; one element past it and a length that is no multiple of a vector.
constexpr std::int64_t kDoubles = (std::int64_t{16} << 20) / 8 + 2053;
constexpr std::int64_t kFloats = (std::int64_t{16} << 20) / 4 + 1031;

TEST(LargeOutputs, DoubleSumAndTranscendentalMatchReference) {
    tandem::Runtime rt{tandem::Config{}};
    std::mt19937_64 rng(7);
    tref::Host a = tref::random_host({kDoubles, 1}, tandem::DType::f64, rng);
    tref::Host b = tref::random_host({kDoubles, 1}, tandem::DType::f64, rng);
    tandem::Array x = tref::make_array(rt, a), y = tref::make_array(rt, b);
    auto got = rt.gather({x + y, tandem::sin(x) * 2.0}).get();
    tref::Host sum = tref::apply({&a, &b}, tandem::DType::f64, tandem::DType::f64,
                                 [](const std::vector<double>& v) { return v[0] + v[1]; });
    tref::Host sine = tref::apply({&a}, tandem::DType::f64, tandem::DType::f64,
                                  [](const std::vector<double>& v) { return std::sin(v[0]) * 2.0; });  // * 2 is exact
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[0]), sum));
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[1]), sine, tref::Acc::ulp, 2));
}

TEST(LargeOutputs, SingleAndLogicalMatchReference) {
    tandem::Runtime rt{tandem::Config{}};
    std::mt19937_64 rng(8);
    tref::Host a = tref::random_host({kFloats, 1}, tandem::DType::f32, rng);
    tandem::Array x = tref::make_array(rt, a);
    auto got = rt.gather({x * x, x > 0.5}).get();
    tref::Host sq = tref::apply({&a}, tandem::DType::f32, tandem::DType::f32,
                                [](const std::vector<double>& v) { return v[0] * v[0]; });
    tref::Host gt = tref::apply({&a}, tandem::DType::f32, tandem::DType::logical,
                                [](const std::vector<double>& v) { return v[0] > 0.5 ? 1.0 : 0.0; });
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[0]), sq));
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[1]), gt));
}

}  // namespace
