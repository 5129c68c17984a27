// Several devices in one runtime: lavapipe opened twice (Config::device = "vulkan:0,vulkan:0",
// two logical devices with queues, memory and pipelines of their own). Placement spreads
// independent work over both; a value computed on one and read on the other goes through the
// host; the results are the CPU's bits; each device keeps its own memory budget.
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

tandem::Config two_devices() {
    tandem::Config c = tvk::gpu_config();
    c.device = "vulkan:0,vulkan:0";
    return c;
}

/// Exact arithmetic: every executor gives the same bits.
Array pipeline(const Array& x, double k) { return tandem::max(x * k, x - k) + tandem::floor(x * 0.5); }

void expect_same(const std::vector<tandem::HostArray>& got, const std::vector<tandem::HostArray>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
            << "output " << k;
}

}  // namespace

TEST(VulkanDevices, TwoLogicalDevicesShareOneProgram) {
    auto gpu = tvk::open_gpu(two_devices());
    EXPECT_NE(gpu->info().placement.find("2 devices"), std::string::npos) << gpu->info().placement;
    bool listed = false;
    for (const auto& d : gpu->info().devices) listed = listed || d.find("[in use x2]") != std::string::npos;
    EXPECT_TRUE(listed) << "tandem info shows the physical device in use twice";
    // Each device says its device group (lavapipe's one device: a group of its own; a group of
    // several names its peers).
    for (const auto& d : gpu->info().devices)
        EXPECT_TRUE(d.find(", device group: its own") != std::string::npos || d.find(", device group with vulkan:") != std::string::npos)
            << d;
    const std::string& caches = gpu->info().pipeline_cache;
    const auto first = caches.find("vulkan:");
    EXPECT_TRUE(first != std::string::npos && caches.find("; vulkan:", first) != std::string::npos)
        << "each device's kernel cache, named by its device: " << caches;
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("two devices"));
    std::vector<Host> xs;
    // Shapes apart, so that fusion does not make one multi-output region of them.
    for (int i = 0; i < 8; ++i) xs.push_back(tref::random_host({20000 + i, 1}, DType::f64, rng));
    auto run = [&](Runtime& rt) {
        // Eight independent pipelines in one gather: placement balances them over the devices.
        std::vector<Array> outs;
        for (int i = 0; i < 8; ++i) outs.push_back(pipeline(tref::make_array(rt, xs[static_cast<std::size_t>(i)]), i + 0.5));
        return rt.gather(outs).get();
    };
    expect_same(run(*gpu), run(cpu));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    ASSERT_EQ(m.device_regions_each.size(), 2u);
    EXPECT_GT(m.device_regions_each[0], 0u) << "both devices take work";
    EXPECT_GT(m.device_regions_each[1], 0u) << "both devices take work";
    EXPECT_EQ(m.device_regions_each[0] + m.device_regions_each[1], m.device_regions);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanDevices, AValueComputedOnOneDeviceIsReadOnTheOther) {
    tandem::Config config = two_devices();
    config.region_records = 16;
    auto gpu = tvk::open_gpu(config);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("across devices"));
    Host ha = tref::random_host({30000, 1}, DType::f64, rng), hb = tref::random_host({30000, 1}, DType::f64, rng);
    auto run = [&](Runtime& rt, bool evaluate) {
        Array a = pipeline(tref::make_array(rt, ha), 2.0), b = pipeline(tref::make_array(rt, hb), 3.0);
        // Computed in plans of their own, in flight together, they stay where they ran (one on
        // each device, as the second finds the first busy); the next plan reads both in one region.
        if (evaluate) {
            auto fa = rt.evaluate({a});
            auto fb = rt.evaluate({b});
            fa.get();
            fb.get();
        }
        Array c = tandem::max(a, b) - a * 0.25;
        return rt.gather({c, a, b}).get();
    };
    expect_same(run(*gpu, true), run(cpu, false));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    ASSERT_EQ(m.device_regions_each.size(), 2u);
    EXPECT_EQ(m.device_regions_each[0], 2u) << "a, then c";
    EXPECT_EQ(m.device_regions_each[1], 1u) << "b";
    const auto records = gpu->region_records();
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[2].bytes_read, 2u * 30000 * 8) << "c read a and b, one of them from the other device";
    EXPECT_GE(m.recordings_handed_off, 1u) << "c waited for b's download on device 0's submitting thread";
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanDevices, EachDeviceKeepsItsOwnBudget) {
    tandem::Config c = two_devices();
    c.device_memory_limit = "2M";
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("budgets"));
    std::vector<Host> xs;
    for (int i = 0; i < 12; ++i) xs.push_back(tref::random_host({64 * 1024, 1}, DType::f64, rng));  // 512 KiB each
    auto run = [&](Runtime& rt, bool evaluate) {
        std::vector<Array> ys;
        for (int i = 0; i < 12; ++i) {
            ys.push_back(pipeline(tref::make_array(rt, xs[static_cast<std::size_t>(i)]), i));
            if (evaluate) rt.evaluate({ys.back()}).get();
        }
        return rt.gather(ys).get();
    };
    expect_same(run(*gpu, true), run(cpu, false));
    gpu->wait_idle();
    const auto m = gpu->metrics();
    EXPECT_GT(m.evictions, 0u);
    EXPECT_LE(m.device_peak_resident_bytes, 2u << 20);
    EXPECT_EQ(m.device_fallbacks, 0u);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanDevices, ADeviceListIsValidated) {
    tandem::Config c = tvk::gpu_config();
    for (const char* bad : {"vulkan:0,cpu", "vulkan:0,,vulkan:0", "auto,vulkan", "vulkan,vulkan,vulkan,vulkan,vulkan,vulkan,vulkan,vulkan,vulkan"}) {
        c.device = bad;
        try {
            c.validate();
            ADD_FAILURE() << "no ConfigError for " << bad;
        } catch (const tandem::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("TANDEM_DEVICE"), std::string::npos) << e.what();
        }
    }
}
