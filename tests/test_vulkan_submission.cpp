// Who records a device region (lavapipe, validation layer on). A recording that would wait -- a
// kernel not built yet, an input to bring from another device -- is made by the device's
// submitting thread, never by the thread that launched it: a gather returns at once, CPU work
// of the same plan goes on meanwhile, and the values are the CPU's. A recording that cannot
// wait is made where it is launched (no hand-off on the path of a warm program).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

#include "reference.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Array curve(const Array& x) { return tandem::sin(x) * 2.0 + tandem::abs(x) / (1.0 + x * x); }

// Every kernel build takes 1.5 s longer (Config::test_fault = slow_compile): a thread that waited
// for one would be seen waiting. The margin is the build's: a gather that returns in well under
// it did not wait, however slow the machine.
constexpr double kDidNotWait_s = 0.75;

tandem::Config slow_builds() {
    tandem::Config c = tvk::gpu_config();
    c.test_fault = "slow_compile";
    return c;
}

}  // namespace

TEST(VulkanSubmission, AGatherDoesNotWaitForAKernelBeingBuilt) {
    auto gpu = tvk::open_gpu(slow_builds());
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("submission cold"));
    const Host hx = tref::random_host({20000, 1}, DType::f64, rng);
    const Array y = curve(tref::make_array(*gpu, hx));
    const auto t0 = Clock::now();
    auto done = gpu->evaluate({y});
    const double returned_s = seconds_since(t0);
    EXPECT_LT(returned_s, kDidNotWait_s) << "evaluate() waited for the kernel's build";
    auto value = y.gather();
    done.get();
    EXPECT_GE(seconds_since(t0), 1.5) << "the build did take its time (else this test shows nothing)";
    EXPECT_TRUE(tref::same_values(tref::from_host_array(value.get()), tref::gather(curve(tref::make_array(cpu, hx))),
                                  Acc::exact_signed));
    gpu->wait_idle();
    EXPECT_GE(gpu->metrics().recordings_handed_off, 1u);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanSubmission, CpuWorkOfThePlanGoesOnWhileADeviceKernelBuilds) {
    tandem::Config c = slow_builds();
    c.device_min_elements = 1000;  // the small region stays on the CPU, the large one goes to the device
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("submission side by side"));
    const Host hbig = tref::random_host({20000, 1}, DType::f64, rng), hsmall = tref::random_host({100, 1}, DType::f64, rng);
    const Array big = curve(tref::make_array(*gpu, hbig)), small = tandem::exp(tref::make_array(*gpu, hsmall)) - 1.0;
    const auto t0 = Clock::now();
    auto both = gpu->gather({big, small});  // the device region first in the plan
    auto small_alone = small.gather();
    const Host got_small = tref::from_host_array(small_alone.get());
    EXPECT_LT(seconds_since(t0), kDidNotWait_s) << "the CPU region waited for the device's build";
    EXPECT_FALSE(both.ready()) << "the device region is still building";
    const auto got = both.get();
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[0]), tref::gather(curve(tref::make_array(cpu, hbig))),
                                  Acc::exact_signed));
    const Host want_small = tref::gather(tandem::exp(tref::make_array(cpu, hsmall)) - 1.0);
    EXPECT_TRUE(tref::same_values(got_small, want_small, Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got[1]), want_small, Acc::exact_signed));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_EQ(m.device_regions, 1u);
    EXPECT_EQ(m.recordings_handed_off, 1u);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanSubmission, AWarmProgramIsRecordedWhereItIsLaunched) {
    // Once its kernels are built, a program records on the thread that gathers it: no hand-off
    // (a thread hop on the path of every short program), and the same bits.
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(tref::seed_of("submission warm"));
    const Host hx = tref::random_host({5000, 1}, DType::f64, rng);
    const Array x = tref::make_array(*gpu, hx);
    const Host first = tref::gather(tandem::sum(curve(x)));  // cold: built on the submitting thread
    gpu->wait_idle();
    const auto cold = gpu->metrics();
    EXPECT_GE(cold.recordings_handed_off, 1u);
    for (int i = 0; i < 5; ++i) {
        const Host again = tref::gather(tandem::sum(curve(x)));
        EXPECT_TRUE(tref::same_values(again, first, Acc::exact_signed)) << "run " << i;
    }
    gpu->wait_idle();
    const auto warm = gpu->metrics();
    EXPECT_EQ(warm.recordings_handed_off, cold.recordings_handed_off) << "warm kernels are recorded in place";
    EXPECT_GE(warm.device_regions, cold.device_regions + 5);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanSubmission, ALongChainIsSentInAFewBatches) {
    // A chain of small regions recorded by one thread goes to the device in batches that grow
    // (the backend sends one early when it finds the device idle: 4 dispatches, then 8, 16, ...).
    // A completion that recorded nothing used to send the batch being filled as well, at every
    // batch done: when the recording ran slower than the device (W5's power iteration on the
    // H100, its head launched by a CPU job), each batch held a region or two. (Lavapipe runs
    // slower than this thread records: 4-5 batches either way here; the guard is for the rule.)
    auto gpu = tvk::open_gpu();
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("submission chain"));
    const Host hg = tref::random_host({64, 64}, DType::f64, rng);
    auto power = [](Runtime& rt, const Host& g) {
        const Array G = tref::make_array(rt, g);
        Array v = rt.ones({64, 1});
        for (int i = 0; i < 60; ++i) {
            const Array Gv = tandem::matmul(G, v);
            v = Gv / tandem::sum(tandem::abs(Gv));
        }
        return v;
    };
    const Host first = tref::gather(power(*gpu, hg));  // builds the kernels
    gpu->wait_idle();
    const auto before = gpu->metrics();
    const Host again = tref::gather(power(*gpu, hg));
    gpu->wait_idle();
    const auto after = gpu->metrics();
    const std::uint64_t regions = after.device_regions - before.device_regions;
    const std::uint64_t batches = after.device_batches - before.device_batches;
    EXPECT_GE(regions, 120u);
    EXPECT_LE(batches, 12u) << regions << " regions";
    EXPECT_TRUE(tref::same_values(again, first, Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(again, tref::gather(power(cpu, hg)), Acc::exact_signed));
    tvk::expect_device_clean(*gpu);
}
