// Folded remaps on the Vulkan device (lavapipe in CI, validation on): the random chains of
// remap_cases.hpp read through index maps in the generated kernels (every wrap kind: none,
// once, any: a repmat read directly) give the CPU executor's bits with every remap materialised; reductions of them the
// device's own bits with fusion off; a heat step is one dispatch.
#include <gtest/gtest.h>

#include <random>

#include "remap_cases.hpp"
#include "vulkan_runtime.hpp"

namespace {

TEST(VulkanFoldedRemaps, RandomChainsMatchMaterialisedRemaps) {
    auto gpu = tvk::open_gpu();
    tandem::Config cpu_off = tvk::cpu_config();
    cpu_off.fusion = false;
    auto gpu_plain = tvk::open_gpu(tvk::unfused_gpu_config());
    tandem::Runtime cpu(cpu_off);
    std::mt19937_64 rng(tref::seed_of("VulkanFoldedRemaps.RandomChains"));
    const std::vector<tref::Dims> shapes = {{7, 5, 3}, {1, 6, 4}, {9, 1}, {33, 17}, {13, 11, 5}};
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32})
        for (const auto& dims : shapes)
            for (int trial = 0; trial < 3; ++trial) {
                const tref::Host h = tref::random_host(dims, t, rng);
                const tremap::Recipe recipe = tremap::random_recipe(dims, rng);
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims) + " trial " + std::to_string(trial));
                const tremap::Outputs f = tremap::build(tref::make_array(*gpu, h), recipe);
                const tremap::Outputs p = tremap::build(tref::make_array(*gpu_plain, h), recipe);
                const tremap::Outputs c = tremap::build(tref::make_array(cpu, h), recipe);
                gpu->evaluate({f.out, f.reduced_out, f.reduced_remap}).get();
                EXPECT_TRUE(tref::same_values(tref::gather(f.out), tref::gather(c.out), tref::Acc::exact_signed));
                EXPECT_TRUE(tref::same_values(tref::gather(f.reduced_out), tref::gather(p.reduced_out), tref::Acc::exact_signed));
                EXPECT_TRUE(tref::same_values(tref::gather(f.reduced_remap), tref::gather(p.reduced_remap), tref::Acc::exact_signed));
            }
    tvk::expect_device_clean(*gpu);
    tvk::expect_device_clean(*gpu_plain);
}

// Ten heat steps: one dispatch each (no remap kernel), the CPU's bits; the ranges stencil too.
TEST(VulkanFoldedRemaps, StencilStepIsOneDispatch) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(8);
    const tref::Host h = tref::random_host({96, 70}, tandem::DType::f64, rng);
    tandem::Array u = tref::make_array(*gpu, h), cu = tref::make_array(cpu, h);
    gpu->evaluate({u}).get();
    tandem::Array v = u, cv = cu;
    for (int s = 0; s < 10; ++s) {
        v = tremap::heat_step(v);
        cv = tremap::heat_step(cv);
    }
    const auto m0 = gpu->metrics();
    const tref::Host got = tref::gather(v);
    const auto m1 = gpu->metrics();
    EXPECT_EQ(m1.device_regions - m0.device_regions, 10u);
    EXPECT_EQ(m1.device_dispatches - m0.device_dispatches, 10u);
    EXPECT_TRUE(tref::same_values(got, tref::gather(cv), tref::Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(tref::gather(tremap::interior_step(u)), tref::gather(tremap::interior_step(cu)),
                                  tref::Acc::exact_signed));
    // repmat read directly, and flipped: positions wrap any number of times (a remainder).
    auto tiles = [](const tandem::Array& a) { return tandem::repmat(a, 3, 2) * 2.0 - tandem::flip(tandem::repmat(a, 3, 2), 1); };
    EXPECT_TRUE(tref::same_values(tref::gather(tiles(u)), tref::gather(tiles(cu)), tref::Acc::exact_signed));
    tvk::expect_device_clean(*gpu);
}

}  // namespace
