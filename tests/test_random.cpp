// rand, randn and randi through the graph on the CPU executor: reproducible from the seed, a
// stream per call, the same bits as the Philox core (backends/cpu/philox.hpp) element by element,
// the distributions (mean, variance, Kolmogorov-Smirnov on 1e6 draws; randi's frequencies),
// generation fused into the expressions and reductions that use it, and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels.hpp"
#include "backends/cpu/philox.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tandem::Shape;
using tref::Host;

namespace {

tandem::Config cpu_config() {
    tandem::Config c;
    c.device = "cpu";
    return c;
}

std::vector<std::uint64_t> bits(const tandem::HostArray& h) {
    std::vector<std::uint64_t> b(static_cast<std::size_t>(h.numel()));
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = h.dtype() == DType::f32 ? std::bit_cast<std::uint32_t>(h.data<float>()[i])
                                       : std::bit_cast<std::uint64_t>(h.data<double>()[i]);
    return b;
}

TEST(Random, SameSeedSameBitsAndAStreamPerCall) {
    Runtime rt(cpu_config());
    tandem::seed(rt, 1234);
    auto a = tandem::rand(rt, Shape{300, 7}).gather().get();
    auto b = tandem::rand(rt, Shape{300, 7}).gather().get();  // the next stream
    tandem::seed(rt, 1234);
    auto c = tandem::rand(rt, Shape{300, 7}).gather().get();
    EXPECT_EQ(bits(a), bits(c)) << "the same seed and calls give the same numbers";
    EXPECT_NE(bits(a), bits(b)) << "two calls draw different numbers";
    tandem::seed(rt, 1235);
    EXPECT_NE(bits(tandem::rand(rt, Shape{300, 7}).gather().get()), bits(a));
}

TEST(Random, ElementsAreThePhiloxCoreFunctions) {
    Runtime rt(cpu_config());
    const std::uint64_t seed = 0xDEADBEEFCAFEF00Dull;
    tandem::seed(rt, seed);
    auto u = tandem::rand(rt, Shape{5001, 1}).gather().get();                 // stream 0
    auto uf = tandem::rand(rt, Shape{5001, 1}, DType::f32).gather().get();    // stream 1
    auto z = tandem::randn(rt, Shape{5001, 1}).gather().get();                // stream 2
    auto zf = tandem::randn(rt, Shape{5001, 1}, DType::f32).gather().get();   // stream 3
    namespace px = tandem::detail;
    for (std::uint64_t i = 0; i < 5001; ++i) {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(u.data<double>()[i]), std::bit_cast<std::uint64_t>(px::rand_f64(seed, 0, i))) << i;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(uf.data<float>()[i]), std::bit_cast<std::uint32_t>(px::rand_f32(seed, 1, i))) << i;
        ASSERT_EQ(std::bit_cast<std::uint64_t>(z.data<double>()[i]), std::bit_cast<std::uint64_t>(px::randn_f64(seed, 2, i))) << i;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(zf.data<float>()[i]), std::bit_cast<std::uint32_t>(px::randn_f32(seed, 3, i))) << i;
    }
}

/// sqrt(n) * the Kolmogorov-Smirnov distance of sorted samples from a CDF.
template <class Cdf>
double ks(std::vector<double> x, Cdf cdf) {
    std::sort(x.begin(), x.end());
    double d = 0;
    const double n = static_cast<double>(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double f = cdf(x[i]);
        d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
    }
    return std::sqrt(n) * d;
}

// Each instruction set's kernels make the streams (randn f32 lane-parallel, vectorised): the
// element functions' bits at every alignment of the first element and length, on this CPU's ISAs.
TEST(Random, EveryIsaKernelGivesTheElementFunctionsBits) {
    namespace cpu = tandem::detail::cpu;
    namespace td = tandem::detail;
    const std::uint64_t seed = 0x1234567890ABCDEFull, stream = 77;
    int tables = 0;
    for (const cpu::KernelTable* k : {cpu::kernels_baseline(), cpu::kernels_avx2(), cpu::kernels_avx512()}) {
        if (!k) continue;
        ++tables;
        SCOPED_TRACE(k->isa);
        for (std::uint64_t first : {0ull, 1ull, 2ull, 3ull, 4ull, 4093ull, (1ull << 32) - 5})
            for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{4}, std::size_t{7}, std::size_t{31},
                                  std::size_t{32}, std::size_t{33}, std::size_t{2048}, std::size_t{2051}}) {
                std::vector<double> d(n), dn(n);
                std::vector<float> f(n), fn(n);
                k->rand[0](seed, stream, first, n, d.data());
                k->rand[1](seed, stream, first, n, f.data());
                k->randn[0](seed, stream, first, n, dn.data());
                k->randn[1](seed, stream, first, n, fn.data());
                std::size_t bad = 0;
                for (std::size_t j = 0; j < n; ++j) {
                    const std::uint64_t i = first + j;
                    bad += std::bit_cast<std::uint64_t>(d[j]) != std::bit_cast<std::uint64_t>(td::rand_f64(seed, stream, i));
                    bad += std::bit_cast<std::uint32_t>(f[j]) != std::bit_cast<std::uint32_t>(td::rand_f32(seed, stream, i));
                    bad += std::bit_cast<std::uint64_t>(dn[j]) != std::bit_cast<std::uint64_t>(td::randn_f64(seed, stream, i));
                    bad += std::bit_cast<std::uint32_t>(fn[j]) != std::bit_cast<std::uint32_t>(td::randn_f32(seed, stream, i));
                }
                EXPECT_EQ(bad, 0u) << "first " << first << ", n " << n;
            }
    }
    EXPECT_GE(tables, 1);
}

TEST(Random, DistributionsOnAMillionDraws) {
    Runtime rt(cpu_config());
    tandem::seed(rt, 7);
    constexpr double kCritical = 1.949;  // KS at alpha = 0.001
    for (DType t : {DType::f64, DType::f32}) {
        SCOPED_TRACE(tref::dtype_str(t));
        Host u = tref::gather(tandem::rand(rt, Shape{1000000, 1}, t));
        Host z = tref::gather(tandem::randn(rt, Shape{1000000, 1}, t));
        double mu = 0, mz = 0, vz = 0;
        for (double v : u.v) {
            ASSERT_GT(v, 0.0);
            ASSERT_LT(v, 1.0);
            mu += v;
        }
        for (double v : z.v) mz += v;
        mu /= 1e6;
        mz /= 1e6;
        for (double v : z.v) vz += (v - mz) * (v - mz);
        vz /= 1e6 - 1;
        EXPECT_NEAR(mu, 0.5, 0.002);
        EXPECT_NEAR(mz, 0.0, 0.005);
        EXPECT_NEAR(vz, 1.0, 0.005);
        EXPECT_LT(ks(u.v, [](double x) { return x; }), kCritical);
        EXPECT_LT(ks(z.v, [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }), kCritical);
    }
}

TEST(Random, RandiRangeAndFrequencies) {
    Runtime rt(cpu_config());
    Host k = tref::gather(tandem::randi(rt, -2, 3, Shape{600000, 1}));
    std::vector<int> count(6, 0);
    for (double v : k.v) {
        ASSERT_EQ(v, std::floor(v));
        ASSERT_GE(v, -2.0);
        ASSERT_LE(v, 3.0);
        ++count[static_cast<std::size_t>(v + 2)];
    }
    double chi2 = 0;
    for (int c : count) chi2 += (c - 1e5) * (c - 1e5) / 1e5;
    EXPECT_LT(chi2, 20.5) << "chi-square, 5 degrees of freedom, alpha = 0.001";
    Host one = tref::gather(tandem::randi(rt, 6, Shape{1000, 1}));
    EXPECT_EQ(*std::min_element(one.v.begin(), one.v.end()), 1.0);
    EXPECT_EQ(*std::max_element(one.v.begin(), one.v.end()), 6.0);
}

TEST(Random, GenerationFusesIntoItsConsumers) {
    Runtime rt(cpu_config());
    const auto m0 = rt.metrics();
    Host s = tref::gather(tandem::sum(tandem::randn(rt, Shape{4000, 250}) * 2.0, 1));
    const auto m1 = rt.metrics();
    EXPECT_EQ(m1.regions_executed - m0.regions_executed, 1u) << "randn folded into the sum";
    EXPECT_EQ(m1.elements_written - m0.elements_written, 250u) << "no random array written";
    double total = 0;
    for (double v : s.v) total += v;
    EXPECT_NEAR(total / (250 * 4000), 0.0, 0.01);
}

TEST(Random, ArgumentErrors) {
    Runtime rt(cpu_config());
    EXPECT_THROW(tandem::rand(rt, Shape{2, 2}, DType::logical), tandem::DTypeError);
    EXPECT_THROW(tandem::randi(rt, 5, 4, Shape{2, 2}), tandem::ValueError);
    EXPECT_THROW(tandem::randi(rt, 0, std::int64_t{1} << 50, Shape{2, 2}), tandem::ValueError);
    EXPECT_EQ(tandem::rand(rt, Shape{0, 3}).gather().get().numel(), 0);
}

}  // namespace
