// Runtimes for the Vulkan tests: every region on the Vulkan device (lavapipe in CI) with the
// Khronos validation layer on, and the checks every GPU test ends with.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "tandem/tandem.hpp"

namespace tvk {

inline tandem::Config gpu_config() {
    tandem::Config c;
    c.device = "vulkan";
    c.placement = "gpu";  // every region goes to the device
    c.vulkan_validation = true;
    c.pipeline_cache_dir = "none";
    c.plan_cache = "verify";  // every plan fused from the cache is fused again and compared
    return c;
}

/// gpu_config with fusion off: one region per op, the reference fused programs are checked against.
inline tandem::Config unfused_gpu_config() {
    tandem::Config c = gpu_config();
    c.fusion = false;
    return c;
}

/// Automatic placement on the Vulkan device with a size floor no test region reaches: every
/// region stays on the CPU unless something asks for the device (to_device, a user kernel);
/// the latest `records` region runs kept (Runtime::region_records).
inline tandem::Config small_on_cpu_config(std::size_t records = 64) {
    tandem::Config c = gpu_config();
    c.placement = "auto";
    c.device_min_elements = 1 << 20;
    c.region_records = records;
    return c;
}

inline tandem::Config cpu_config() {
    tandem::Config c;
    c.device = "cpu";
    c.plan_cache = "verify";
    return c;
}

/// A runtime on the Vulkan device. No device: the test fails here, saying why.
inline std::unique_ptr<tandem::Runtime> open_gpu(const tandem::Config& c = gpu_config()) {
    std::unique_ptr<tandem::Runtime> rt;
    try {
        rt = std::make_unique<tandem::Runtime>(c);
    } catch (const tandem::DeviceError& e) {
        throw std::runtime_error(
            std::string("no Vulkan device could be opened (Config::device = \"vulkan\", validation on); CI must "
                        "install mesa-vulkan-drivers (lavapipe) and vulkan-validationlayers: ") +
            e.what());
    }
    bool in_use = false;
    for (const auto& d : rt->info().devices) in_use = in_use || d.find("[in use") != std::string::npos;
    if (!in_use) throw std::runtime_error("Config::device = \"vulkan\" gave a runtime with no device in use");
    return rt;
}

/// The end of every GPU test: the device did the work, without a fallback, and the validation
/// layer said nothing.
inline void expect_device_clean(tandem::Runtime& rt, bool fallbacks_allowed = false) {
    rt.wait_idle();
    const auto m = rt.metrics();
    EXPECT_GT(m.device_regions, 0u) << "no region ran on the device";
    EXPECT_GT(m.device_batches, 0u);
    EXPECT_GT(m.device_dispatches, 0u);
    EXPECT_GT(m.upload_bytes, 0u);
    EXPECT_GT(m.download_bytes, 0u);
    if (!fallbacks_allowed) {
        EXPECT_EQ(m.device_fallbacks, 0u) << "device regions ran on the CPU instead";
    }
    EXPECT_EQ(m.validation_messages, 0u) << "the Vulkan validation layer reported problems (see stderr)";
}

}  // namespace tvk
