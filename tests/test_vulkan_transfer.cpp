// Host <-> device copies of the Vulkan backend, through the public API: copies of 1 MiB or more
// go to the copy queue (the dedicated transfer queue where the device has one; on lavapipe the
// compute queue, in submissions of their own) ordered by timeline semaphores; smaller ones ride
// in the compute batch. Every result is compared bit for bit with the same IEEE arithmetic on
// the host, the copy-queue path is checked to have been taken (Metrics::copy_queue_submits),
// copy times are measured (Metrics::upload_ms / download_ms), and the validation layer, with
// synchronization validation, must say nothing.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/tandem.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::Shape;

namespace {

constexpr std::int64_t kLarge = (std::int64_t{2} << 20) / 8;  // 2 MiB of doubles: the copy queue
constexpr std::int64_t kSmall = 1000;                          // 8 KB: in the compute batch

std::vector<double> data(std::int64_t n, std::uint64_t seed) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = static_cast<double>(seed >> 11) * 0x1p-45 - 100.0;
    }
    return v;
}

/// Elements of `got` that differ in bits from f(i), and the first one.
template <class F>
void expect_bits(const tandem::HostArray& got, std::int64_t n, F f, const char* what) {
    ASSERT_EQ(got.numel(), n) << what;
    const double* p = got.data<double>();
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < n; ++i)
        if (std::bit_cast<std::uint64_t>(p[i]) != std::bit_cast<std::uint64_t>(f(i))) {
            if (first < 0) first = i;
            ++bad;
        }
    EXPECT_EQ(bad, 0) << what << ": first difference at " << first;
}

TEST(VulkanCopyQueue, LargeUploadsAndReadbacksInFlightTogether) {
    auto gpu = tvk::open_gpu();
    constexpr int kJobs = 4;
    std::vector<std::vector<double>> in;
    std::vector<tandem::Future<tandem::HostArray>> out;
    for (int k = 0; k < kJobs; ++k) {
        in.push_back(data(kLarge, 17 + k));
        Array x = gpu->array(std::span<const double>(in.back()), Shape{kLarge, 1});
        out.push_back((x * 2.0 + k).gather());  // not waited for: the next upload overlaps it
    }
    for (int k = 0; k < kJobs; ++k) {
        const auto& v = in[static_cast<std::size_t>(k)];
        expect_bits(out[static_cast<std::size_t>(k)].get(), kLarge,
                    [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] * 2.0 + k; }, "x*2+k");
    }
    const auto m = gpu->metrics();
    EXPECT_GE(m.copy_queue_submits, 2u * kJobs) << "an upload and a readback per job on the copy queue";
    EXPECT_EQ(m.upload_bytes, static_cast<std::uint64_t>(kJobs * kLarge * 8));
    EXPECT_EQ(m.download_bytes, static_cast<std::uint64_t>(kJobs * kLarge * 8));
    EXPECT_GT(m.upload_ms, 0.0) << "copy-queue uploads are timed";
    EXPECT_GT(m.download_ms, 0.0) << "copy-queue readbacks are timed";
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCopyQueue, UploadedValueReadByLaterBatches) {
    auto gpu = tvk::open_gpu();
    const auto v = data(kLarge, 5);
    Array x = gpu->array(std::span<const double>(v), Shape{kLarge, 1});
    expect_bits((x + 1.0).gather().get(), kLarge, [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] + 1.0; },
                "x+1");
    const auto uploads = gpu->metrics().upload_bytes;
    // The device copy is reused: no second upload, and the later batch reads it.
    expect_bits((x * 3.0).gather().get(), kLarge, [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] * 3.0; },
                "x*3");
    EXPECT_EQ(gpu->metrics().upload_bytes, uploads) << "x was uploaded again";
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCopyQueue, ResidentValueDownloadedLater) {
    auto gpu = tvk::open_gpu();
    const auto v = data(kLarge, 9);
    Array x = gpu->array(std::span<const double>(v), Shape{kLarge, 1});
    Array y = x * x - 0.5;
    gpu->evaluate({y}).get();  // y stays on the device
    const auto before = gpu->metrics();
    EXPECT_EQ(before.download_bytes, 0u) << "evaluate copied to the host";
    expect_bits(y.gather().get(), kLarge,
                [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(i)] - 0.5; },
                "x.*x-0.5");
    const auto after = gpu->metrics();
    EXPECT_EQ(after.download_bytes, static_cast<std::uint64_t>(kLarge * 8));
    EXPECT_GT(after.copy_queue_submits, before.copy_queue_submits) << "the download went through the copy queue";
    EXPECT_GT(after.download_ms, 0.0);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCopyQueue, ResidentValueDownloadedWhileItsBatchIsOpen) {
    // y's batch is still being recorded when z's download needs it: it is submitted first.
    auto gpu = tvk::open_gpu();
    const auto v = data(kLarge, 11);
    Array x = gpu->array(std::span<const double>(v), Shape{kLarge, 1});
    Array y = x + 2.0;
    auto fy = gpu->evaluate({y});
    auto fz = (y * 0.25).gather();
    fy.get();
    expect_bits(fz.get(), kLarge, [&](std::int64_t i) { return (v[static_cast<std::size_t>(i)] + 2.0) * 0.25; },
                "(x+2)*0.25");
    expect_bits(y.gather().get(), kLarge, [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] + 2.0; }, "x+2");
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCopyQueue, SmallCopiesStayInTheComputeBatch) {
    auto gpu = tvk::open_gpu();
    const auto v = data(kSmall, 3);
    Array x = gpu->array(std::span<const double>(v), Shape{kSmall, 1});
    expect_bits((x - 1.0).gather().get(), kSmall, [&](std::int64_t i) { return v[static_cast<std::size_t>(i)] - 1.0; },
                "x-1");
    const auto m = gpu->metrics();
    EXPECT_EQ(m.copy_queue_submits, 0u) << "small copies should not cost submissions of their own";
    EXPECT_GT(m.upload_ms, 0.0) << "in-batch uploads are timed too";
    EXPECT_GT(m.download_ms, 0.0) << "in-batch readbacks are timed too";
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCopyQueue, LargeAndSmallInOnePlan) {
    auto gpu = tvk::open_gpu();
    const auto a = data(kLarge, 21), b = data(kSmall, 22);
    Array x = gpu->array(std::span<const double>(a), Shape{kLarge, 1});
    Array s = gpu->array(std::span<const double>(b), Shape{kSmall, 1});
    Array one = gpu->array(std::span<const double>(b.data(), 1), Shape{1, 1});
    auto got = gpu->gather({x / 4.0, s + 4.0, x - one}).get();
    expect_bits(got[0], kLarge, [&](std::int64_t i) { return a[static_cast<std::size_t>(i)] / 4.0; }, "x/4");
    expect_bits(got[1], kSmall, [&](std::int64_t i) { return b[static_cast<std::size_t>(i)] + 4.0; }, "s+4");
    expect_bits(got[2], kLarge, [&](std::int64_t i) { return a[static_cast<std::size_t>(i)] - b[0]; }, "x-s(1)");
    tvk::expect_device_clean(*gpu);
}

}  // namespace
