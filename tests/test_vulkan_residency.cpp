// The device's memory budget, end to end on lavapipe (Config::device_memory_limit): a program
// whose working set is several times the budget completes on the device, evicting least recently
// used copies and writing back the ones that lived only there, with the CPU's bits; inputs go up
// once and results come down once; a region that cannot fit streams through the device in pieces.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "reference.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

constexpr std::int64_t kN = 64 * 1024;  // 512 KiB a double array
constexpr std::uint64_t kArrayBytes = kN * 8;

/// One step of a chain: exact arithmetic only, so every executor gives the same bits.
Array step(const Array& x, const Array& y) { return tandem::max(x, y) - tandem::floor(x) + y * 0.5; }

}  // namespace

TEST(VulkanResidency, AWorkingSetSixTimesTheBudgetCompletesOnTheDeviceWithTheCpusBits) {
    tandem::Config c = tvk::gpu_config();
    c.device_memory_limit = "4M";
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("residency chain"));
    constexpr int kSteps = 24;  // 24 inputs and 24 results of 512 KiB: 24 MiB against 4 MiB
    std::vector<Host> xs;
    for (int i = 0; i < kSteps; ++i) xs.push_back(tref::random_host({kN, 1}, DType::f64, rng));
    auto run = [&](Runtime& rt, bool one_at_a_time) {
        std::vector<Array> ys;
        Array y = tref::make_array(rt, xs[0]);
        for (int i = 0; i < kSteps; ++i) {
            y = step(tref::make_array(rt, xs[static_cast<std::size_t>(i)]), y);
            // Computed and left on the device: the only copy, until the budget needs its room.
            if (one_at_a_time) rt.evaluate({y}).get();
            ys.push_back(y);
        }
        return rt.gather(ys).get();
    };
    const auto got = run(*gpu, true);
    const auto want = run(cpu, false);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
            << "step " << k;
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_EQ(m.device_memory_budget, 4u << 20);
    EXPECT_EQ(m.device_regions, static_cast<std::uint64_t>(kSteps)) << "every step on the device";
    EXPECT_GT(m.evictions, 0u);
    EXPECT_GT(m.write_backs, 0u) << "results that lived only on the device were written back before their room went";
    EXPECT_LE(m.device_peak_resident_bytes, 4u << 20) << "the copies counted never exceeded the budget";
    // Each input went up once; each result came down once, by a write-back or by the gather.
    EXPECT_EQ(m.upload_bytes, (kSteps + 1) * kArrayBytes);
    EXPECT_EQ(m.download_bytes, kSteps * kArrayBytes);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanResidency, InputsGoUpOnceAndResultsComeDownOnce) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(tref::seed_of("residency once"));
    Host ha = tref::random_host({kN, 1}, DType::f64, rng), hb = tref::random_host({kN, 1}, DType::f64, rng);
    Array a = tref::make_array(*gpu, ha), b = tref::make_array(*gpu, hb);
    Array s = a + b, p = a * b;
    gpu->evaluate({s}).get();
    gpu->evaluate({p}).get();
    Array r = tandem::max(s, p) - a;  // a third plan over the same inputs
    const auto first = r.gather().get();
    const auto again = r.gather().get();
    (void)a.gather().get();  // an input: its host copy, nothing to download
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_EQ(m.upload_bytes, 2 * kArrayBytes) << "a and b, once each";
    EXPECT_EQ(m.download_bytes, kArrayBytes) << "r, once";
    EXPECT_EQ(m.evictions, 0u) << "the default budget is far above this";
    EXPECT_TRUE(tref::same_values(tref::from_host_array(again), tref::from_host_array(first), Acc::exact_signed));
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanResidency, ARegionLargerThanTheBudgetStreamsThroughTheDevice) {
    tandem::Config c = tvk::gpu_config();
    c.device_memory_limit = "1M";  // 512 KiB in and 512 KiB out fit; two in and one out do not
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("residency too large"));
    Host ha = tref::random_host({kN, 1}, DType::f64, rng), hb = tref::random_host({kN, 1}, DType::f64, rng);
    auto run = [&](Runtime& rt) {
        Array a = tref::make_array(rt, ha), b = tref::make_array(rt, hb);
        return rt.gather({a * 2.0, step(a, b)}).get();
    };
    const auto got = run(*gpu), want = run(cpu);
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_EQ(m.device_fallbacks, 0u) << "streamed, not refused by the device";
    EXPECT_GE(m.streamed_regions, 1u) << "in pieces that fit (scheduler/streaming.hpp; test_vulkan_streaming.cpp)";
    EXPECT_EQ(m.validation_messages, 0u);
}

TEST(VulkanResidency, OutOfDeviceMemoryEvictsAndTriesAgainOnTheDevice) {
    tandem::Config c = tvk::gpu_config();
    c.test_fault = "oom_later";  // the fourth region finds the device out of memory
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("residency oom"));
    std::vector<Host> xs;
    for (int i = 0; i < 4; ++i) xs.push_back(tref::random_host({kN, 1}, DType::f64, rng));
    auto run = [&](Runtime& rt) {
        std::vector<Array> ys;
        Array y = tref::make_array(rt, xs[0]);
        for (int i = 0; i < 4; ++i) {
            y = step(tref::make_array(rt, xs[static_cast<std::size_t>(i)]), y);
            rt.evaluate({y}).get();  // three results live only on the device when the fourth comes
            ys.push_back(y);
        }
        return rt.gather(ys).get();
    };
    testing::internal::CaptureStderr();
    const auto got = run(*gpu);
    const std::string err = testing::internal::GetCapturedStderr();
    const auto want = run(cpu);
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
            << "step " << k;
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_EQ(m.memory_retries, 1u);
    EXPECT_EQ(m.write_backs, 3u) << "the three results that lived only on the device";
    EXPECT_EQ(m.device_regions, 4u) << "the fourth region ran on the device after all";
    EXPECT_EQ(err.find("runs on the CPU instead"), std::string::npos) << err;
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanResidency, WorkInFlightThatFillsTheBudgetMakesTheNextRegionWait) {
    tandem::Config c = tvk::gpu_config();
    c.device_memory_limit = "3M";
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("residency waits"));
    std::vector<Host> xs;
    for (int i = 0; i < 12; ++i) xs.push_back(tref::random_host({kN + i, 1}, DType::f64, rng));  // apart: not fused
    auto run = [&](Runtime& rt) {
        // Twelve regions in one plan, each reading a 512 KiB input: recorded together, their
        // inputs would need 6 MiB at once; pinned while in flight, none can be evicted.
        std::vector<Array> sums;
        for (const Host& x : xs) sums.push_back(tandem::max(tref::make_array(rt, x), 0.5) * 2.0);
        return rt.gather(sums).get();
    };
    const auto got = run(*gpu), want = run(cpu);
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_GT(m.budget_waits, 0u) << "later regions waited for earlier ones to complete";
    EXPECT_LE(m.device_peak_resident_bytes, 3u << 20);
    EXPECT_EQ(m.device_regions, 12u);
    tvk::expect_device_clean(*gpu);
}

// A chain of device regions planned at once (one gather at its end) whose results nothing else
// reads: each step's result goes once its reader is done, so 32 steps of 512 KiB run within a
// 3 MiB budget without writing any of them back (they kept their device memory until the last
// step was done: the budget then forced write-backs of results nobody would read).
TEST(VulkanResidency, AChainPlannedAtOnceLetsEachStepGoOnceItsReaderIsDone) {
    tandem::Config c = tvk::gpu_config();
    c.device_memory_limit = "3M";
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("residency chain at once"));
    const Host x0 = tref::random_host({256, 256}, DType::f64, rng);  // 512 KiB
    constexpr int kSteps = 32;
    auto run = [&](Runtime& rt) {
        Array y = tref::make_array(rt, x0);
        // A transpose does not fuse with the one after it: a region a step, each reading the last.
        for (int i = 0; i < kSteps; ++i) y = tandem::transpose(tandem::max(y, -1.0) * 0.5 + 0.25);
        return y.gather().get();
    };
    const auto got = run(*gpu), want = run(cpu);
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got), tref::from_host_array(want), Acc::exact_signed));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_GE(m.device_regions, static_cast<std::uint64_t>(kSteps)) << "every step on the device";
    EXPECT_EQ(m.write_backs, 0u) << "a step's result outlived its reader";
    EXPECT_LE(m.device_peak_resident_bytes, 3u << 20);
    EXPECT_EQ(m.download_bytes, kArrayBytes) << "only the last step's result came down";
    tvk::expect_device_clean(*gpu);
}
