// Errors and faults on the Vulkan device, through the public API (Config::device = "vulkan",
// placement = "gpu"; lavapipe in CI, the Khronos validation layer on):
//  - NaN converted to logical on the GPU: the error reaches the future, naming the op; in a
//    multi-output gather the outputs that do not depend on it stay correct, and the runtime goes on;
//  - injected faults (Config::test_fault: compile, oom, device_lost, submit_failed): the work
//    completes on the CPU, equal to a CPU-only runtime's; after a compile error or an
//    out-of-memory later regions run on the device again, after a lost device on the CPU.
// No validation message in any of them.
//
// No Vulkan device: the tests FAIL (CI installs lavapipe and the validation layers).
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::contains;
using tref::Host;
using tref::seed_of;

namespace {

// ---- runtimes (vulkan_runtime.hpp) ---------------------------------------------------------------

using tvk::cpu_config;
using tvk::expect_device_clean;
using tvk::gpu_config;
using tvk::open_gpu;

// ---- logical ops on NaN: an error on the GPU too -----------------------------------------------

template <class E>
std::string gather_error(const Array& a) {
    try {
        (void)a.gather().get();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected " << typeid(E).name() << ", got: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected " << typeid(E).name() << ", the gather succeeded";
    return {};
}

TEST(VulkanBackendErrors, LogicalOfNaNFailsThroughTheFutureNamingTheOp) {
    auto gpu = open_gpu();
    std::vector<double> d(3000, 1.5);
    d[17] = tref::kNaN;
    d[2999] = -2.0;
    Array x = gpu->array(std::span<const double>(d));
    const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> cases = {
        {"logical", [](const Array& a) { return tandem::logical(a); }},
        {"and", [](const Array& a) { return a & 1.0; }},
        {"or", [](const Array& a) { return 0.0 | tandem::sin(a); }},
        {"xor", [](const Array& a) { return tandem::logical_xor(a > 0.0, a * 2.0); }},
        {"not", [](const Array& a) { return !(a + 1.0); }},
        {"where", [](const Array& a) { return tandem::where(a, 1.0, 2.0); }},
    };
    for (const auto& [name, make] : cases) {
        SCOPED_TRACE(name);
        Array bad = make(x);
        const std::string m = gather_error<tandem::ValueError>(bad);
        EXPECT_TRUE(contains(m, "NaN")) << m;
        EXPECT_TRUE(contains(m, name)) << m;
        EXPECT_THROW((void)bad.gather().get(), tandem::ValueError) << "a second gather gives the same error";
        EXPECT_THROW((void)(bad * 2.0).gather().get(), tandem::ValueError) << "a dependent value fails too";
    }
    // single precision too
    std::vector<float> f(2000, 0.25f);
    f[1999] = std::numeric_limits<float>::quiet_NaN();
    Array xf = gpu->array(std::span<const float>(f), tandem::Shape{1, 2000});
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(xf | 0.0), "NaN"));
    // without NaN: fine, on the GPU
    std::vector<double> ok = {1, 0, -2, 0.5};
    auto h = tandem::logical(gpu->array(std::span<const double>(ok))).gather().get().to_doubles();
    EXPECT_EQ(h, (std::vector<double>{1, 0, 1, 1}));
    expect_device_clean(*gpu);
}

TEST(VulkanBackendErrors, NaNErrorInAMultiOutputGatherLeavesTheOthersCorrect) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(5);
    Host hx = tref::random_host({50, 40}, DType::f64, rng);  // NaN among the values
    hx.v[123] = tref::kNaN;
    Array x = tref::make_array(*gpu, hx);
    Array good = x * 2.0 + tandem::exp(x * 0.001);  // same shape as bad: may share its region
    Array good2 = tandem::floor(x) - 1.0;
    Array bad = tandem::logical_and(x, good);       // NaN in x: an error
    auto f = gpu->gather({good, bad, good2});
    EXPECT_THROW((void)f.get(), tandem::ValueError) << "the plan's future carries the error";
    // Issued together, separately: the bad one fails, the others are correct.
    auto fg = good.gather(), fb = bad.gather(), fg2 = good2.gather();
    EXPECT_THROW((void)fb.get(), tandem::ValueError);
    Array cx = tref::make_array(cpu, hx);
    auto want = cpu.gather({cx * 2.0 + tandem::exp(cx * 0.001), tandem::floor(cx) - 1.0}).get();
    try {
        EXPECT_TRUE(tref::same_values(tref::from_host_array(fg.get()), tref::from_host_array(want[0]), Acc::exact_signed))
            << "x*2 + exp(x/1000) does not depend on the failed and(x, ...)";
        EXPECT_TRUE(tref::same_values(tref::from_host_array(fg2.get()), tref::from_host_array(want[1]), Acc::exact_signed));
    } catch (const std::exception& e) {
        ADD_FAILURE() << "an output that does not depend on the NaN failed: " << e.what();
    }
    // The runtime goes on: new work on the GPU.
    auto h = (x * 0.0 + 3.0).gather().get();
    EXPECT_EQ(h.at(0), 3.0);
    // A multi-output region with a data error is run again on the CPU by design (the GPU flags
    // the error for the whole region; the CPU tells which outputs it reaches): fallbacks allowed.
    expect_device_clean(*gpu, /*fallbacks_allowed=*/true);
}

// ---- injected faults: the work completes on the CPU ---------------------------------------------

/// A few plans, each compared with a CPU runtime.
void run_fault_workload(Runtime& rt, Runtime& cpu, const std::string& what) {
    std::mt19937_64 rng(seed_of(what));
    Host a = tref::random_host({40, 30}, DType::f64, rng), b = tref::random_host({40, 1}, DType::f64, rng);
    Host fa = tref::random_host({40, 30}, DType::f32, rng);
    auto exprs = [](Runtime& r, const Host& ha, const Host& hb, const Host& hf) {
        Array x = tref::make_array(r, ha), y = tref::make_array(r, hb), z = tref::make_array(r, hf);
        Array p = x + y * 2.0;
        Array q = tandem::max(p, 0.5) - tandem::floor(x);
        Array s = z * 3.0f + 1.0;
        return std::vector<Array>{p, q, s, tandem::mod(q, y), p > y};
    };
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(what + " round " + std::to_string(round));
        std::vector<tandem::HostArray> got;
        try {
            got = rt.gather(exprs(rt, a, b, fa)).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
            continue;
        }
        const auto want = cpu.gather(exprs(cpu, a, b, fa)).get();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << "output " << k;
        for (auto& x : a.v) x = x * 0.5 + 1.0;  // new inputs each round
    }
}

class VulkanBackendFault : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanBackendFault, WorkCompletesOnTheCpu) {
    tandem::Config c = gpu_config();
    c.test_fault = GetParam();
    testing::internal::CaptureStderr();
    std::unique_ptr<Runtime> gpu;
    try {
        gpu = open_gpu(c);
    } catch (...) {
        std::cerr << testing::internal::GetCapturedStderr();
        throw;
    }
    Runtime cpu(cpu_config());
    run_fault_workload(*gpu, cpu, "fault " + GetParam());
    gpu->wait_idle();
    const auto m = gpu->metrics();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_GE(m.device_fallbacks, 1u) << "the injected fault should make a region fall back to the CPU";
    // Said once per cause, not once per region.
    std::size_t said = 0;
    for (std::size_t at = err.find("said once"); at != std::string::npos; at = err.find("said once", at + 1)) ++said;
    EXPECT_GE(said, 1u) << err;
    EXPECT_LE(said, 2u) << "a message per region:\n" << err;
    EXPECT_EQ(m.validation_messages, 0u) << "validation messages; stderr:\n" << err;
    EXPECT_EQ(m.regions_failed, 0u) << "a fallback is not a failure";
    const bool lost = GetParam() == "device_lost" || GetParam() == "submit_failed";
    if (!lost) {
        // The device works after a compile error or an out-of-memory: later regions run there.
        EXPECT_GT(m.device_regions, m.device_fallbacks) << "later regions should run on the device again";
        expect_device_clean(*gpu, /*fallbacks_allowed=*/true);
    } else {
        // After the device is lost, later gathers still work (on the CPU).
        std::vector<double> d = {1, 2, 3};
        Array v = gpu->array(std::span<const double>(d));
        EXPECT_EQ((v * 2.0 + 1.0).gather().get().to_doubles(), (std::vector<double>{3, 5, 7}));
        EXPECT_EQ(gpu->metrics().validation_messages, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(VulkanBackend, VulkanBackendFault, ::testing::Values("compile", "oom", "device_lost", "submit_failed"),
                         [](const auto& p) { return p.param; });

}  // namespace
