// rand and randn on the Vulkan device (lavapipe in CI, validation on): the same seed and calls
// give the same bits as the CPU executor -- alone, fused into elementwise expressions (the
// contiguous vector path and the general path), and folded into reductions (which then differ
// from the CPU only by the order of the sum).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tandem/tandem.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tandem::Shape;
using tref::Host;

namespace {

// TANDEM_TEST_VALIDATION=0: without the validation layer (the GPU machine has none; CI keeps it on).
std::unique_ptr<Runtime> open_device() {
    tandem::Config c = tvk::gpu_config();
    if (const char* e = std::getenv("TANDEM_TEST_VALIDATION"); e && std::string(e) == "0") c.vulkan_validation = false;
    return tvk::open_gpu(c);
}

std::vector<std::uint64_t> bits(const tandem::HostArray& h) {
    std::vector<std::uint64_t> b(static_cast<std::size_t>(h.numel()));
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = h.dtype() == DType::f32 ? std::bit_cast<std::uint32_t>(h.data<float>()[i])
                                       : std::bit_cast<std::uint64_t>(h.data<double>()[i]);
    return b;
}

TEST(VulkanRandom, SameBitsAsTheCpu) {
    auto gpu = open_device();
    Runtime cpu(tvk::cpu_config());
    for (Runtime* rt : {gpu.get(), &cpu}) tandem::seed(*rt, 20261122);
    auto draw = [](Runtime& rt) {
        std::vector<Array> out;
        for (DType t : {DType::f64, DType::f32})
            for (const Shape& s : {Shape{1, 1}, Shape{7, 3}, Shape{1001, 5}, Shape{(1 << 18) + 3, 1}}) {
                out.push_back(tandem::rand(rt, s, t));
                out.push_back(tandem::randn(rt, s, t));
            }
        // fused: the vector path (no expanded input) and the general path (an expanded input)
        Array z = tandem::randn(rt, Shape{4099, 3});
        out.push_back(z * 2.0 + tandem::rand(rt, Shape{4099, 3}));
        std::vector<double> col = {1.0, -2.0, 0.5};
        out.push_back(tandem::rand(rt, Shape{4099, 3}) * rt.array(std::span<const double>(col), Shape{1, 3}));
        out.push_back(tandem::randi(rt, 1, 100, Shape{3000, 2}));
        return rt.gather(out).get();
    };
    const auto g = draw(*gpu), c = draw(cpu);
    ASSERT_EQ(g.size(), c.size());
    for (std::size_t k = 0; k < g.size(); ++k) {
        SCOPED_TRACE("array " + std::to_string(k) + " " + g[k].shape().to_string());
        const auto gb = bits(g[k]), cb = bits(c[k]);
        ASSERT_EQ(gb.size(), cb.size());
        std::size_t bad = 0, first = 0;
        for (std::size_t i = 0; i < gb.size(); ++i)
            if (gb[i] != cb[i] && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << "first difference at " << first;
    }
    const auto m = gpu->metrics();
    EXPECT_GT(m.device_regions, 0u);
    EXPECT_EQ(m.device_fallbacks, 0u);
    EXPECT_EQ(m.validation_messages, 0u);
}

TEST(VulkanRandom, FoldedIntoAReduction) {
    auto gpu = open_device();
    Runtime cpu(tvk::cpu_config());
    for (Runtime* rt : {gpu.get(), &cpu}) tandem::seed(*rt, 5);
    auto run = [](Runtime& rt) { return tref::gather(tandem::sum(tandem::randn(rt, Shape{20000, 4}) * 2.0, 1)); };
    const auto m0 = gpu->metrics();
    Host g = run(*gpu);
    const auto m1 = gpu->metrics();
    Host c = run(cpu);
    EXPECT_EQ(m1.device_regions - m0.device_regions, 1u) << "randn generated inside the reduction's kernel";
    ASSERT_EQ(g.v.size(), 4u);
    for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(g.v[j], c.v[j], 1e-9 * 20000) << j;
    const auto m = gpu->metrics();
    EXPECT_EQ(m.upload_bytes, 0u) << "nothing to upload: the numbers are made on the device";
    EXPECT_EQ(m.device_fallbacks, 0u);
    EXPECT_EQ(m.validation_messages, 0u);
}

}  // namespace
