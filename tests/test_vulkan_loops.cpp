// Repeated steps written as loops (graph/repeat.hpp, the Vulkan code generator): a program built
// by a loop in the user's code compiles to a kernel whose size does not grow with the number of
// steps, and computes the same bits as the straight-line kernel and as the CPU executor.
//  - find_repeat on hand-built programs: the run, its copies, what shrinks it (a value of a middle
//    copy read after the run), what breaks it (a copy reading two copies back);
//  - generate(): the loop's kernel is the same size for 16 and 256 steps, the straight one grows;
//  - through the public API on the device (lavapipe in CI, validation on): Monte Carlo steps with
//    random numbers (single and double), a step reading an array input and values from before the
//    run, an intermediate step gathered with the last, a reduction after the run: the loop and the
//    straight-line kernel (Config::vulkan_loops = false) give the same bits, and the CPU's values
//    within the transcendental functions' few ulp (random numbers are the same bits everywhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "draw_loop.hpp"
#include "graph/repeat.hpp"
#include "region_builder.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

namespace {

using namespace tandem::detail;
using namespace tandem::detail::vk;
using tandem::Array;
using tandem::DType;
using tandem::Shape;

/// s = 1 (a scalar product), then `steps` of s = s .* exp(a + b * randn) in type t: a time step
/// of geometric Brownian motion, as fusion lays it out (5 instructions a step).
Builder gbm_region(int steps, DType t) {
    Builder b(Shape{1000, 1});
    auto s = b.op(OpKind::Mul, {Builder::scalar(100, t), Builder::scalar(1, t)});
    for (int k = 0; k < steps; ++k) {
        auto g = b.op(OpKind::RandN, {}, DType::f64, {7, 0, static_cast<double>(k + 1)});
        b.r.program[g].dtype = t;
        b.r.program[g].compute = t;
        auto m = b.op(OpKind::Mul, {Builder::scalar(0.1, t), b.value(g)});
        auto a = b.op(OpKind::Add, {Builder::scalar(0.0075, t), b.value(m)});
        auto e = b.op(OpKind::Exp, {b.value(a)});
        s = b.op(OpKind::Mul, {b.value(s), b.value(e)});
    }
    b.out(s);
    return b;
}

TEST(Repeat, FindsTheStepsOfALoop) {
    for (DType t : {DType::f32, DType::f64}) {
        const Builder b = gbm_region(40, t);
        const auto rep = find_repeat(b.r);
        ASSERT_TRUE(rep.has_value());
        EXPECT_EQ(rep->period, 5u);
        // Copy 0 may start anywhere in the first step; every step after it is a copy.
        EXPECT_EQ(rep->begin + rep->period * rep->count, b.r.program.size());
        EXPECT_GE(rep->count, 39u);
    }
    // Too few steps to be worth a loop.
    EXPECT_FALSE(find_repeat(gbm_region(3, DType::f64).r).has_value());
}

TEST(Repeat, AValueOfAMiddleStepReadAfterTheRunEndsItThere) {
    Builder b = gbm_region(40, DType::f64);
    const auto whole = find_repeat(b.r);
    ASSERT_TRUE(whole.has_value());
    // Step 20's value (the last Mul of that step) is also an output: the run must end with it.
    const std::uint32_t step20 = 1 + 5 * 20 + 4;
    b.out(step20);
    const auto rep = find_repeat(b.r);
    ASSERT_TRUE(rep.has_value());
    EXPECT_LE(rep->end(), step20 + 1);
    EXPECT_GE(step20, rep->end() - rep->period);  // in the last copy
    // Read by an instruction after the run instead: the same.
    Builder c = gbm_region(40, DType::f64);
    c.out(c.op(OpKind::Add, {c.value(step20), c.value(static_cast<std::uint32_t>(c.r.program.size() - 1))}));
    const auto rep2 = find_repeat(c.r);
    ASSERT_TRUE(rep2.has_value());
    EXPECT_GE(step20, rep2->end() - rep2->period);
    EXPECT_LT(step20, rep2->end());
}

TEST(Repeat, AStepReadingTwoStepsBackIsNotACopy) {
    // x(k) = x(k - 1) + x(k - 2): every instruction alike, but each reads two copies back.
    Builder b(Shape{8, 1});
    std::vector<std::uint32_t> x = {b.op(OpKind::Mul, {b.input(DType::f64, Shape{8, 1}), Builder::scalar(1)})};
    x.push_back(b.op(OpKind::Mul, {b.value(x[0]), Builder::scalar(2)}));
    for (int k = 0; k < 40; ++k) x.push_back(b.op(OpKind::Add, {b.value(x[x.size() - 1]), b.value(x[x.size() - 2])}));
    b.out(x.back());
    const auto rep = find_repeat(b.r);
    // Period 1 fails (two back); period 2 holds (x(k - 2) is the previous copy's first value).
    if (rep) {
        EXPECT_EQ(rep->period % 2, 0u);
    }
    // An input read by every step and a value from before the run are the same in each copy.
    Builder c(Shape{8, 1});
    auto in = c.input(DType::f64, Shape{8, 1});
    auto k0 = c.op(OpKind::Sin, {in});
    auto acc = c.op(OpKind::Mul, {in, Builder::scalar(0.5)});
    for (int k = 0; k < 30; ++k) acc = c.op(OpKind::Add, {c.value(c.op(OpKind::Mul, {c.value(acc), c.value(k0)})), in});
    c.out(acc);
    const auto rc = find_repeat(c.r);
    ASSERT_TRUE(rc.has_value());
    EXPECT_EQ(rc->period, 2u);
    EXPECT_GE(rc->count, 29u);
}

TEST(VulkanLoops, KernelSizeDoesNotGrowWithTheSteps) {
    for (DType t : {DType::f32, DType::f64}) {
        CodegenOptions loop, straight;
        straight.loops = false;
        const Kernel k16 = kernel_for(gbm_region(16, t).r, loop), k256 = kernel_for(gbm_region(256, t).r, loop);
        EXPECT_NE(k16.glsl.find("tdmk_t"), std::string::npos) << "no loop in the kernel";
        // Only numbers grow (slot indices, the step count): a few characters.
        EXPECT_LT(k256.glsl.size(), k16.glsl.size() + 64) << "the loop's kernel grew with the steps";
        EXPECT_NE(k16.key, k256.key) << "the step count is part of the key";
        const Kernel s16 = kernel_for(gbm_region(16, t).r, straight), s64 = kernel_for(gbm_region(64, t).r, straight);
        EXPECT_EQ(s16.glsl.find("tdmk_t"), std::string::npos);
        EXPECT_GT(s64.glsl.size(), s16.glsl.size() + 48 * 400) << "straight-line code: a few hundred characters a step";
        EXPECT_NE(s16.key, k16.key);
    }
}

/// A gathered value of the API test and the relative tolerance against the CPU.
struct Result {
    std::vector<double> v;
    double tol;
};
Result values(const Array& a, double tol) { return {a.gather().get().to_doubles(), tol}; }

/// The programs of the API test, in one runtime: the values compared. Few steps: lavapipe's
/// compiler takes seconds for the straight-line kernels already (and grows faster than the steps).
std::vector<Result> loop_programs(tandem::Runtime& rt) {
    std::vector<Result> out;
    tandem::seed(rt, 42);
    // An odd length leaves a tail for the fast path.
    const std::int64_t M = 4099;
    for (DType t : {DType::f32, DType::f64}) {
        // Geometric Brownian motion: S .* exp(mu dt + sig sqrt(dt) randn), then a payoff's mean.
        Array S = 100.0 * rt.ones({M, 1}, t);
        for (int k = 0; k < 8; ++k) S = S * tandem::exp(0.0075 + 0.1 * tandem::randn(rt, {M, 1}, t));
        const double tol = t == DType::f32 ? 1e-4 : 1e-12;  // 8 exps of a few ulp each
        out.push_back(values(S, tol));
        out.push_back(values(tandem::mean(tandem::max(S - 100.0, 0.0)), tol));
    }
    // A step reading an array input and a value from before the run (both the same in every
    // copy), with special values; an intermediate step gathered with the last one.
    std::vector<double> xv(M);
    for (std::int64_t i = 0; i < M; ++i) xv[static_cast<std::size_t>(i)] = std::sin(0.37 * static_cast<double>(i)) * 3.0;
    xv[5] = NAN;
    xv[6] = INFINITY;
    xv[7] = -0.0;
    Array x = rt.array(std::span<const double>(xv));
    Array w = tandem::cos(x) * 0.5;
    Array y = x;
    Array mid;
    for (int k = 0; k < 9; ++k) {
        const Array z = y * w + x;
        y = z / (1.0 + tandem::abs(z)) - 0.25 * y;
        if (k == 5) mid = y;
    }
    auto both = rt.gather({y, mid});
    for (const auto& h : both.get()) out.push_back({h.to_doubles(), 1e-12});
    // The run feeding a reduction along dim 1 of a matrix (a region of its own after the steps).
    Array A = tandem::reshape(x, Shape{M, 1}) * rt.ones({1, 3});
    for (int k = 0; k < 12; ++k) A = A * 0.5 + 1.0 / (1.0 + A * A);
    out.push_back(values(tandem::sum(A, 1), 1e-12));
    return out;
}

TEST(VulkanLoops, LoopStraightLineAndCpuGiveTheSameBits) {
    tandem::Runtime cpu(tvk::cpu_config());
    const auto want = loop_programs(cpu);
    tandem::Config straight_cfg = tvk::gpu_config();
    straight_cfg.vulkan_loops = false;
    auto loop = tvk::open_gpu();
    auto straight = tvk::open_gpu(straight_cfg);
    const auto got_loop = loop_programs(*loop);
    const auto got_straight = loop_programs(*straight);
    ASSERT_EQ(got_loop.size(), want.size());
    ASSERT_EQ(got_straight.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
        ASSERT_EQ(got_loop[k].v.size(), want[k].v.size());
        ASSERT_EQ(got_straight[k].v.size(), want[k].v.size());
        int bad_bits = 0, bad_values = 0;
        for (std::size_t e = 0; e < want[k].v.size(); ++e) {
            const double l = got_loop[k].v[e], s = got_straight[k].v[e], c = want[k].v[e];
            bad_bits += std::bit_cast<std::uint64_t>(l) != std::bit_cast<std::uint64_t>(s);
            const bool close = (std::isnan(l) && std::isnan(c)) || l == c ||
                               std::fabs(l - c) <= want[k].tol * std::max(1.0, std::fabs(c));
            bad_values += !close;
        }
        EXPECT_EQ(bad_bits, 0) << "program value " << k << ": the loop and the straight-line kernel differ";
        EXPECT_EQ(bad_values, 0) << "program value " << k << ": the device differs from the CPU";
    }
    tvk::expect_device_clean(*loop);
    tvk::expect_device_clean(*straight);
}

TEST(VulkanLoops, ALoopDrawingNewNumbersEachRunIsFusedOnceAndDrawsItsOwn) {
    // The loop kernel of a run fused from the cache takes that run's streams: the same bits as a
    // runtime that fuses every plan, the CPU's values (single-precision exp: within 1e-5 on any
    // processor's vector paths), new numbers each run.
    tandem::Config off_cfg = tvk::gpu_config();
    off_cfg.plan_cache = "off";
    auto cached = tvk::open_gpu();  // verify mode: each hit fused again and compared
    auto fused = tvk::open_gpu(off_cfg);
    tandem::Runtime cpu(tvk::cpu_config());
    const draw_loop::Runs a = draw_loop::run(*cached, 4, 24), b = draw_loop::run(*fused, 4, 24);
    const draw_loop::Runs c = draw_loop::run(cpu, 4, 24);
    EXPECT_EQ(a.hits, 3u) << "the runs after the first";
    EXPECT_EQ(b.hits, 0u);
    ASSERT_EQ(a.values.size(), 4u);
    for (std::size_t r = 0; r < a.values.size(); ++r) {
        EXPECT_TRUE(draw_loop::same_bits(a.values[r], b.values[r])) << "run " << r;
        EXPECT_TRUE(draw_loop::close(a.values[r], c.values[r], 1e-5)) << "run " << r << ": the device against the CPU";
        if (r > 0) {
            EXPECT_NE(a.values[r], a.values[r - 1]) << "run " << r << " drew the numbers of the last";
        }
    }
    tvk::expect_device_clean(*cached);
    tvk::expect_device_clean(*fused);
}

}  // namespace
