// Indexing on the Vulkan device (lavapipe in CI, validation on): the cases of indexing_cases.hpp
// through the gather, scatter (claim + write passes) and find (count, prefix, write) kernels;
// bad subscripts found by the device; a find over many blocks; results the same bits as the CPU.
#include <gtest/gtest.h>

#include <random>

#include "indexing_cases.hpp"
#include "vulkan_runtime.hpp"

namespace {

TEST(VulkanIndexing, Gather) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(51);
    tix::gathers(*gpu, rng);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanIndexing, MasksAndFind) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(52);
    tix::masks_and_find(*gpu, rng);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanIndexing, Assign) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(53);
    tix::assignments(*gpu, rng);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanIndexing, Permute) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(55);
    tix::permutes(*gpu, rng);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanIndexing, BadSubscriptsFoundOnTheDevice) {
    auto gpu = tvk::open_gpu();
    tix::bad_subscripts(*gpu);
    // subscripts computed on the device (no host copy): the position, without the value
    std::vector<double> d{1, 2, 3};
    const tandem::Array A = gpu->array(std::span<const double>(d), tandem::Shape{1, 3});
    try {
        tandem::index(A, A * 2.0).gather().get();
        ADD_FAILURE() << "no error";
    } catch (const tandem::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("index: subscript I(2): index exceeds the number of array elements; index must not exceed 3"),
                  std::string::npos)
            << e.what();
    }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanIndexing, LargeFindAndScatterMatchTheCpu) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(54);
    // over 256 blocks of the find kernels (the prefix pass walks several per invocation)
    const tref::Host m = tix::random_mask({4096 * 300 + 17, 1}, rng, 0.3);
    const tref::Host pg = tref::gather(tandem::find(tref::make_array(*gpu, m)));
    const tref::Host pc = tref::gather(tandem::find(tref::make_array(cpu, m)));
    EXPECT_TRUE(tref::same_values(pg, pc));
    EXPECT_EQ(pg.v, tix::ref_find(m));
    // many repeated subscripts: the last assignment wins on the device too
    const tref::Host a = tref::random_host({1000, 1}, tandem::DType::f64, rng);
    const tref::Host I = tix::random_subscripts(200000, 1000, tandem::DType::f64, rng);
    const tref::Host b = tref::random_host({1, 200000}, tandem::DType::f64, rng);
    const auto run = [&](tandem::Runtime& rt) {
        return tref::gather(tandem::assign(tref::make_array(rt, a), tref::make_array(rt, I), tref::make_array(rt, b)));
    };
    const tref::Host g = run(*gpu);
    EXPECT_TRUE(tref::same_values(g, run(cpu)));
    EXPECT_TRUE(tref::same_values(g, tix::ref_scatter(a, I.v, -1, b, tandem::DType::f64)));
    tvk::expect_device_clean(*gpu);
}

}  // namespace
