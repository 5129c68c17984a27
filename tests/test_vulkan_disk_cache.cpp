// The on-disk pipeline cache through the public API (Config::pipeline_cache_dir) on the Vulkan
// device (lavapipe in CI, the Khronos validation layer on): a second runtime finds every pipeline
// in the cache written by the first; corrupt files (SPIR-V and the VkPipelineCache blob) are
// reported, ignored and rebuilt, and the rebuilt files serve the next runtime. The results always
// match a CPU-only runtime. (The cache's internals are tested in test_vulkan_codegen.cpp.)
//
// No Vulkan device: the tests FAIL (CI installs lavapipe and the validation layers).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::Runtime;
using tref::Acc;
using tref::contains;

namespace {

// ---- runtimes (vulkan_runtime.hpp) ---------------------------------------------------------------

using tvk::cpu_config;
using tvk::expect_device_clean;
using tvk::gpu_config;
using tvk::open_gpu;

// ---- the on-disk pipeline cache -------------------------------------------------------------------

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-vk-cache-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::vector<std::filesystem::path> files(const std::string& ext) const {
        std::vector<std::filesystem::path> r;
        for (const auto& e : std::filesystem::directory_iterator(path))
            if (e.path().extension() == ext) r.push_back(e.path());
        return r;
    }
};

std::vector<Array> cache_exprs(Runtime& rt) {
    std::vector<double> d(500);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(i) * 0.01 - 2.0;
    Array x = rt.array(std::span<const double>(d), tandem::Shape{25, 20});
    Array row = rt.array(std::span<const double>(d.data(), 20), tandem::Shape{1, 20});
    return {tandem::sin(x) * 2.0 + x, tandem::exp(-tandem::abs(x)) + row, tandem::single(x) * 0.5 > row};
}

TEST(VulkanBackendPipelineCache, SecondRuntimeUsesTheDiskCacheAndCorruptFilesAreRebuilt) {
    TempDir dir;
    tandem::Config c = gpu_config();
    c.pipeline_cache_dir = dir.path.string();
    Runtime cpu(cpu_config());
    const auto want = cpu.gather(cache_exprs(cpu)).get();
    auto check = [&](const std::vector<tandem::HostArray>& got, const std::string& what) {
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << what << ": output " << k;
    };
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "cold runtime");
        const auto m = gpu->metrics();
        EXPECT_GT(m.pipeline_misses, 0u) << "the first runtime compiles";
        EXPECT_EQ(m.pipeline_disk_hits, 0u);
        expect_device_clean(*gpu);
    }
    const auto spv = dir.files(".spv");
    EXPECT_FALSE(spv.empty()) << "no SPIR-V file written under " << dir.path;
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "warm runtime");
        const auto m = gpu->metrics();
        EXPECT_EQ(m.pipeline_misses, 0u) << "the second runtime should find every pipeline in the disk cache";
        EXPECT_GT(m.pipeline_disk_hits + m.pipeline_hits, 0u);
        expect_device_clean(*gpu);
    }
    // Garbage in every cache file (the SPIR-V files and the VkPipelineCache blob): reported,
    // ignored, rebuilt; the results are still right.
    const auto blobs = dir.files(".bin");
    EXPECT_FALSE(blobs.empty()) << "no pipeline cache blob written under " << dir.path;
    for (const auto& p : blobs) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out << "garbage instead of a pipeline cache blob";
    }
    for (const auto& p : dir.files(".spv")) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out << "this is not SPIR-V, just garbage written by the test " << p.filename().string();
    }
    testing::internal::CaptureStderr();
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "runtime over corrupt files");
        const auto m = gpu->metrics();
        EXPECT_GT(m.pipeline_misses, 0u) << "corrupt files must be rebuilt";
        expect_device_clean(*gpu);
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(contains(err, "pipeline cache") && contains(err, "rebuilt")) << "no report of the corrupt files; stderr:\n" << err;
    for (const auto& p : spv) EXPECT_TRUE(contains(err, p.filename().string())) << "not reported: " << p << "\n" << err;
    for (const auto& p : blobs) EXPECT_TRUE(contains(err, p.filename().string())) << "not reported: " << p << "\n" << err;
    {
        // The rebuilt files serve the next runtime again.
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "runtime after the rebuild");
        EXPECT_EQ(gpu->metrics().pipeline_misses, 0u) << "the rebuilt files should be valid";
        expect_device_clean(*gpu);
    }
}

}  // namespace
