// One region split over several devices at once (data parallelism): lavapipe opened twice
// (Config::device = "vulkan:0,vulkan:0") with Config::split = "always". Every kind of region that
// splits gives the bits of the same program on one device (reductions included: partials in the
// canonical order), with special values and odd sizes; a value split by one region is read in
// place, part by part, by the next; each input crosses the link once; a reader that cannot take
// it in parts gets it assembled; a sum of a long vector folds its second level on the devices; a
// device lost mid-program costs a rerun, never a value.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "draw_loop.hpp"
#include "matmul_reference.hpp"
#include "reference.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

tandem::Config two_devices(const std::string& split = "always") {
    tandem::Config c = tvk::gpu_config();
    c.device = "vulkan:0,vulkan:0";
    c.split = split;
    return c;
}

/// What a runtime did between two of its metrics: regions split, values assembled, bytes moved.
tandem::Metrics moved_between(const tandem::Metrics& m0, const tandem::Metrics& m1) {
    tandem::Metrics d;
    d.split_regions = m1.split_regions - m0.split_regions;
    d.split_values_assembled = m1.split_values_assembled - m0.split_values_assembled;
    d.upload_bytes = m1.upload_bytes - m0.upload_bytes;
    d.download_bytes = m1.download_bytes - m0.download_bytes;
    return d;
}

/// Once its work is done: no region fell back to the CPU, no validation message.
void expect_devices_clean(Runtime& rt) {
    rt.wait_idle();
    EXPECT_EQ(rt.metrics().device_fallbacks, 0u);
    EXPECT_EQ(rt.metrics().validation_messages, 0u);
}

void expect_same(const std::vector<tandem::HostArray>& got, const std::vector<tandem::HostArray>& want, Acc acc) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), acc)) << "output " << k;
}

struct Case {
    const char* name;
    std::vector<std::pair<tref::Dims, DType>> inputs;
    std::function<std::vector<Array>(Runtime&, const std::vector<Array>&)> make;
    Acc against_cpu;  ///< exact where every executor computes the same bits
    /// Operands of products: values in [-2, 2] with NaN and Inf (tmm::random_matrix), not the
    /// magnitudes up to 1e300 whose products overflow inside lavapipe's emulated fused
    /// multiply-add (its own NaN, not the CPU's Inf: the matmul suites' subject, not splitting's).
    bool product_data = false;
    /// Finite values in [-10, 10]: long sums whose every bit depends on the order of their
    /// additions (no NaN or value of 1e300 that swamps the rest).
    bool moderate_data = false;
};

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
        {"elementwise f64",
         {{{100003, 1}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::max(x[0] * 3.0, x[0] - 1.0) + tandem::floor(x[0] * 0.5)}; },
         Acc::exact_signed},
        {"elementwise transcendental f32",
         {{{70001, 1}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::sin(x[0]) * x[0] + 0.5}; },
         Acc::exact},
        {"sum of every element",
         {{{150001, 1}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::sum(x[0] * x[0] - 1.0)}; },
         Acc::exact},
        {"sum, max and prod of a single matrix",
         {{{331, 777}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             return std::vector<Array>{tandem::sum(x[0]), tandem::max(x[0]), tandem::prod(x[0] * 0.0 + 1.0), tandem::mean(x[0])};
         },
         Acc::exact},
        {"sums of millions of elements (the partials' later levels folded on the host)",
         {{{3000017, 1}, DType::f64}, {{2, 1100000}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             return std::vector<Array>{tandem::sum(x[0] * 0.5), tandem::sum(x[1], 2), tandem::prod(x[0] * 0.0 + 1.0)};
         },
         Acc::exact},
        {"means of millions of elements (their tails run on the host's folded results)",
         {{{3000017, 1}, DType::f64}, {{2, 1100000}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             return std::vector<Array>{tandem::mean(x[0] * 0.5), 2.0 * tandem::sqrt(tandem::mean(x[1] * x[1], 2)) + 1.0,
                                       tandem::mean(x[1], tandem::all_dims) - 3.0, tandem::sum(x[0] * x[0])};
         },
         Acc::exact, false, true},
        {"the harness's W2: normalised images, then the mean of every pixel (a tail on a sum of millions)",
         {{{64, 128, 200}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             const Array mu = tandem::mean(tandem::mean(x[0], 1), 2);
             const Array d = x[0] - mu;
             const Array sigma = tandem::sqrt(tandem::mean(tandem::mean(d * d, 1), 2));
             const Array out = tandem::min(tandem::max(d / (sigma + 1e-6) * 0.25 + 0.5, 0.0), 1.0);
             return std::vector<Array>{tandem::mean(out, tandem::all_dims)};
         },
         Acc::exact, false, true},
        {"sums of vectors cut on second-level blocks (each piece folds its blocks on its device)",
         // 4 * 1024^2 - 1000 elements: a piece of two blocks, one of one, the rest's 1023 chunks, a tail of 24.
         {{{4193304, 1}, DType::f64}, {{1, 4193304}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             return std::vector<Array>{tandem::sum(x[0] * 0.5), tandem::prod(x[0] * 0.0 + 1.0), tandem::mean(x[1], 2),
                                       tandem::sum(tandem::abs(x[0]) * -0.0)};
         },
         Acc::exact},
        {"sum of each row (along the split dimension)",
         {{{300, 2500}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::sum(x[0] + 1.0, 2)}; },
         Acc::exact},
        {"sum of each column (along another dimension)",
         {{{300, 2500}, DType::f64}, {{300, 1}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::sum(x[0] - x[1], 1)}; },
         Acc::exact},
        {"cumsum along the columns",
         {{{64, 3001}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::cumsum(x[0], 1)}; },
         Acc::exact},
        {"per-image statistics (a value per position of the split dimension)",
         {{{32, 64, 7}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) {
             const Array mu = tandem::mean(tandem::mean(x[0], 1), 2);
             const Array d = x[0] - mu;
             return std::vector<Array>{mu, tandem::sum(d * d, tandem::all_dims)};
         },
         Acc::exact},
        {"products by blocks of their result's columns, with epilogues",
         {{{37, 300}, DType::f64}, {{300, 1001}, DType::f64}, {{37, 1001}, DType::f64}, {{1, 1001}, DType::f64}, {{300, 37}, DType::f64}},
         [](Runtime&, const std::vector<Array>& x) {
             return std::vector<Array>{tandem::matmul(x[0], x[1]),
                                       tandem::max(2.0 * tandem::matmul(x[4], x[1], {.transpose_a = true}) + 0.5 * x[2] + x[3], 0.0)};
         },
         Acc::exact_signed, true},
        {"a single-precision product plus a bias per row",
         {{{64, 129}, DType::f32}, {{129, 77}, DType::f32}, {{64, 1}, DType::f32}},
         [](Runtime&, const std::vector<Array>& x) { return std::vector<Array>{tandem::matmul(x[0], x[1]) + x[2]}; },
         Acc::exact_signed, true},
        {"random numbers",
         {},
         [](Runtime& rt, const std::vector<Array>&) {
             tandem::seed(rt, 7);
             Array u = tandem::rand(rt, {1001, 37});
             Array n = tandem::randn(rt, {1001, 37});
             return std::vector<Array>{u * 2.0 + n, tandem::sum(n * n)};
         },
         Acc::exact},
    };
    return all;
}

std::vector<tandem::HostArray> run(Runtime& rt, const Case& c, const std::vector<Host>& hosts) {
    std::vector<Array> xs;
    for (const Host& h : hosts) xs.push_back(tref::make_array(rt, h));
    return rt.gather(c.make(rt, xs)).get();
}

TEST(VulkanSplit, EveryKindOfRegionGivesTheBitsOfOneDevice) {
    auto two = tvk::open_gpu(two_devices());
    auto one = tvk::open_gpu(tvk::gpu_config());
    Runtime cpu(tvk::cpu_config());
    for (const Case& c : cases()) {
        SCOPED_TRACE(c.name);
        std::mt19937_64 rng(tref::seed_of(c.name));
        std::vector<Host> hosts;
        for (const auto& [dims, t] : c.inputs)
            hosts.push_back(c.product_data ? tmm::random_matrix(dims[0], dims[1], t, rng, true) : tref::random_host(dims, t, rng, !c.moderate_data));
        if (c.moderate_data)
            for (Host& h : hosts)
                for (double& v : h.v) v = tref::to_type(20.0 * (static_cast<double>(rng() >> 11) * 0x1p-53) - 10.0, h.dtype);
        const auto before = two->metrics();
        const auto got = run(*two, c, hosts);
        two->wait_idle();
        const auto after = two->metrics();
        EXPECT_GT(after.split_regions, before.split_regions) << "split over the two devices";
        ASSERT_EQ(after.device_regions_each.size(), 2u);
        EXPECT_GT(after.device_regions_each[0], before.device_regions_each[0]);
        EXPECT_GT(after.device_regions_each[1], before.device_regions_each[1]);
        {
            SCOPED_TRACE("against one device");
            expect_same(got, run(*one, c, hosts), Acc::exact_signed);
        }
        SCOPED_TRACE("against the CPU");
        expect_same(got, run(cpu, c, hosts), c.against_cpu);
    }
    tvk::expect_device_clean(*two);
}

// A value split by one region stays in parts on the devices; the next region split the same
// way reads each part in place (nothing crosses the link); a reader that takes it whole gets it
// assembled, once.
TEST(VulkanSplit, ASplitValueIsReadInPlaceByTheNextSplitRegion) {
    auto two = tvk::open_gpu(two_devices());
    Runtime cpu(tvk::cpu_config());
    constexpr std::int64_t n = 1 << 18;
    auto program = [&](Runtime& rt, bool evaluate) {
        Array k = tandem::column(rt.colon(0.0, static_cast<double>(n - 1)));
        Array x = tandem::sin(k * 0.001) * 2.0;
        if (evaluate) rt.evaluate({x}).get();
        const auto m0 = rt.metrics();
        Array s = tandem::sum(x * x);
        Array y = tandem::exp(x) - 1.0;
        auto first = rt.gather({s}).get();
        rt.wait_idle();
        const auto m1 = rt.metrics();
        if (evaluate) {
            EXPECT_EQ(m1.upload_bytes - m0.upload_bytes, 0u) << "x's parts were read where they are";
            EXPECT_EQ(m1.split_values_assembled, m0.split_values_assembled);
            EXPECT_GT(m1.split_regions, m0.split_regions);
        }
        // A reader that cannot take x in parts: an element by its index, a product.
        Array whole = tandem::matmul(tandem::transpose(x), x);
        auto second = rt.gather({y, whole}).get();
        if (evaluate) {
            rt.wait_idle();
            EXPECT_GE(rt.metrics().split_values_assembled, m1.split_values_assembled + 1);
        }
        first.insert(first.end(), second.begin(), second.end());
        return first;
    };
    const auto got = program(*two, true);
    const auto want = program(cpu, false);
    // sin and exp: the device's own math (the same on both devices, not the CPU's bits).
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::ulp, 64)) << k;
    auto one = tvk::open_gpu(tvk::gpu_config());
    auto single = [&] {
        Array k = tandem::column(one->colon(0.0, static_cast<double>(n - 1)));
        Array x = tandem::sin(k * 0.001) * 2.0;
        return one->gather({tandem::sum(x * x), tandem::exp(x) - 1.0, tandem::matmul(tandem::transpose(x), x)}).get();
    }();
    expect_same(got, single, Acc::exact_signed);
    expect_devices_clean(*two);
}

// A sum of a long vector split over the devices folds the canonical order's second level where
// each piece runs: a value per 1024^2 elements comes back, not one per 1024 (W1's 1e8 elements:
// 97657 partials), and the bits are one device's. The vector, made split, is read in place.
TEST(VulkanSplit, ASumOfALongVectorFoldsItsSecondLevelOnTheDevices) {
    constexpr std::int64_t n = 4 * 1024 * 1024 - 1000;
    auto program = [](Runtime& rt, tandem::Metrics* moved) {
        Array k = tandem::column(rt.colon(0.0, static_cast<double>(n - 1)));
        Array x = tandem::sin(k * 0.001) * 2.0 - 0.25;
        rt.evaluate({x}).get();
        rt.wait_idle();
        const tandem::Metrics m0 = rt.metrics();
        auto got = rt.gather({tandem::sum(x * x), tandem::mean(x)}).get();
        rt.wait_idle();
        const tandem::Metrics m1 = rt.metrics();
        if (moved) *moved = moved_between(m0, m1);
        return got;
    };
    auto two = tvk::open_gpu(two_devices());
    tandem::Metrics moved;
    const auto got = program(*two, &moved);
    EXPECT_GE(moved.split_regions, 1u);
    EXPECT_EQ(moved.split_values_assembled, 0u) << "x's parts were read where they are";
    EXPECT_EQ(moved.upload_bytes, 0u);
    // Two reductions: 3 folded partials, the rest's 1023 and the tail's 1 each (8 bytes), not 4095.
    EXPECT_LE(moved.download_bytes, 2u * 8u * (3u + 1023u + 1u));
    auto one = tvk::open_gpu(tvk::gpu_config());
    expect_same(got, program(*one, nullptr), Acc::exact_signed);
    expect_devices_clean(*two);
}

// A split sum with many partials (17M elements: 16602 come back) folds them on several cores
// (in blocks of chunks of the next level): the bits of one device, sums and products.
TEST(VulkanSplit, ManyPartialsFoldOnSeveralCoresToOneDevicesBits) {
    constexpr std::int64_t n = 17'000'000;
    auto program = [](Runtime& rt) {
        Array x = tandem::sin(tandem::column(rt.colon(0.0, static_cast<double>(n - 1))) * 0.001);
        return rt.gather({tandem::sum(x * 0.5), tandem::prod(x * 0.0 + 1.0), tandem::sum(tandem::single(x), 1)}).get();
    };
    auto two = tvk::open_gpu(two_devices());
    const auto got = program(*two);
    two->wait_idle();
    EXPECT_GE(two->metrics().split_regions, 1u);
    auto one = tvk::open_gpu(tvk::gpu_config());
    expect_same(got, program(*one), Acc::exact_signed);
    expect_devices_clean(*two);
}

// A vector that the same plan reads as images (W2 makes its images so) is cut where the
// per-image statistics cut the images, not on second-level blocks: 124 images of 33792 pixels
// (one a column), 62 each; blocks would cut the vector at 2^21 elements, mid-image, and have it
// assembled.
TEST(VulkanSplit, AVectorReadAsImagesIsCutOnImagesNotOnBlocks) {
    constexpr std::int64_t pixels = 33 * 1024, images = 124, n = pixels * images;
    auto program = [](Runtime& rt, tandem::Metrics* moved) {
        Array k = tandem::column(rt.colon(0.0, static_cast<double>(n - 1)));
        Array x = tandem::sin(k * 0.001) * 2.0 - 0.25;
        const tandem::Metrics m0 = rt.metrics();
        const Array imgs = tandem::reshape(x, {pixels, images});
        const Array mu = tandem::mean(imgs, 1);
        const Array d = imgs - mu;
        auto got = rt.gather({mu, tandem::sum(d * d, tandem::all_dims), tandem::sum(x)}).get();
        rt.wait_idle();
        if (moved) *moved = moved_between(m0, rt.metrics());
        return got;
    };
    auto two = tvk::open_gpu(two_devices());
    tandem::Metrics moved;
    const auto got = program(*two, &moved);
    EXPECT_GE(moved.split_regions, 2u);
    EXPECT_EQ(moved.split_values_assembled, 1u) << "mu, which the program gathers; x was read in parts where it was made";
    auto one = tvk::open_gpu(tvk::gpu_config());
    expect_same(got, program(*one, nullptr), Acc::exact_signed);
    expect_devices_clean(*two);
}

// A chain whose end reads it whole (a product's A) is not left in parts on the way: centring a
// matrix and multiplying it by its transpose assembles only the product's result, split by
// blocks of its columns, for the host.
TEST(VulkanSplit, AResultIsNotLeftInPartsForAReaderThatReadsItWhole) {
    auto two = tvk::open_gpu(two_devices());
    std::mt19937_64 rng(tref::seed_of("split before a product"));
    const Host h = tref::random_host({4096, 64}, DType::f64, rng, false);
    Array X = tref::make_array(*two, h);
    const Array Xc = X - tandem::mean(X, 1);
    auto got = two->gather({tandem::matmul(Xc, Xc, {.transpose_a = true}), tandem::sum(X, tandem::all_dims)}).get();
    two->wait_idle();
    const auto m = two->metrics();
    EXPECT_EQ(m.split_values_assembled, 1u) << "the product's result, for the host; not Xc";
    EXPECT_EQ(m.split_regions, 2u) << "the product and the sum of every element";
    auto one = tvk::open_gpu(tvk::gpu_config());
    Array X1 = tref::make_array(*one, h);
    const Array Xc1 = X1 - tandem::mean(X1, 1);
    expect_same(got, one->gather({tandem::matmul(Xc1, Xc1, {.transpose_a = true}), tandem::sum(X1, tandem::all_dims)}).get(),
                Acc::exact_signed);
    EXPECT_EQ(m.validation_messages, 0u);
}

// A host array read by a split region goes up once, a window to each device.
TEST(VulkanSplit, EachInputCrossesTheLinkOnce) {
    auto two = tvk::open_gpu(two_devices());
    std::mt19937_64 rng(tref::seed_of("split uploads"));
    const Host h = tref::random_host({200000, 1}, DType::f64, rng);
    Array x = tref::make_array(*two, h);
    const auto m0 = two->metrics();
    auto got = two->gather({tandem::sum(tandem::abs(x))}).get();
    two->wait_idle();
    const auto m1 = two->metrics();
    EXPECT_EQ(m1.split_regions - m0.split_regions, 1u);
    EXPECT_EQ(m1.upload_bytes - m0.upload_bytes, 200000u * 8);
    // The windows stay on their devices as x's parts: the next reader split the same way moves nothing.
    auto again = two->gather({tandem::sum(x * 2.0)}).get();
    two->wait_idle();
    const auto m2 = two->metrics();
    EXPECT_EQ(m2.split_regions - m1.split_regions, 1u);
    EXPECT_EQ(m2.upload_bytes - m1.upload_bytes, 0u);
    Runtime cpu(tvk::cpu_config());
    expect_same(got, cpu.gather({tandem::sum(tandem::abs(tref::make_array(cpu, h)))}).get(), Acc::exact);
    expect_same(again, cpu.gather({tandem::sum(tref::make_array(cpu, h) * 2.0)}).get(), Acc::exact);
    tvk::expect_device_clean(*two);
}

// A value whole on one device, read by a split region: only the window the other device's piece
// reads comes down and goes up (half of it), and it stays there as a part.
TEST(VulkanSplit, AValueWholeOnOneDeviceSendsOnlyTheOtherDevicesWindow) {
    constexpr std::int64_t n = 1 << 20;
    struct Moved {
        std::uint64_t split = 0, down = 0, up = 0, again = 0;  // `again`: bytes the second reader moved
    };
    auto program = [](Runtime& rt, Moved* moved) {
        // A scan along the split dimension is not split: x is made whole on one device.
        Array x = tandem::cumsum(tandem::column(rt.colon(0.0, static_cast<double>(n - 1))) * 1e-3, 1);
        rt.evaluate({x}).get();
        rt.wait_idle();
        const tandem::Metrics m0 = rt.metrics();
        auto got = rt.gather({tandem::sum(tandem::sin(x) * 2.0)}).get();
        rt.wait_idle();
        const tandem::Metrics m1 = rt.metrics();
        auto again = rt.gather({tandem::sum(tandem::cos(x))}).get();
        rt.wait_idle();
        const tandem::Metrics m2 = rt.metrics();
        if (moved)
            *moved = {m1.split_regions - m0.split_regions, m1.download_bytes - m0.download_bytes,
                      m1.upload_bytes - m0.upload_bytes, m2.upload_bytes - m1.upload_bytes};
        got.insert(got.end(), again.begin(), again.end());
        return got;
    };
    auto two = tvk::open_gpu(two_devices());
    Moved moved;
    const auto got = program(*two, &moved);
    EXPECT_EQ(moved.split, 1u);
    constexpr std::uint64_t half = n / 2 * 8, partials = 8 * 2048;
    EXPECT_GE(moved.down, half);
    EXPECT_LE(moved.down, half + partials) << "the other device's window, not all of x";
    EXPECT_EQ(moved.up, half);
    EXPECT_EQ(moved.again, 0u) << "x's window stayed there as a part";
    auto one = tvk::open_gpu(tvk::gpu_config());
    expect_same(got, program(*one, nullptr), Acc::exact_signed);
    expect_devices_clean(*two);
}

// Automatic splitting: small regions are not worth a piece per device; a large one is.
TEST(VulkanSplit, TheCostModelSplitsOnlyWhatGains) {
    tandem::Config c = two_devices("auto");
    c.region_records = 8;
    auto two = tvk::open_gpu(c);
    Array small = two->ones({1000, 1});
    two->gather({tandem::sum(small * 2.0)}).get();
    two->wait_idle();
    EXPECT_EQ(two->metrics().split_regions, 0u) << "a region of 1000 elements";
    Array large = two->ones({1 << 22, 1});
    two->gather({tandem::sum(tandem::exp(large) * 2.0)}).get();
    two->wait_idle();
    EXPECT_EQ(two->metrics().split_regions, 1u) << "a region of 4M elements";
    tandem::Config off = two_devices("off");
    auto never = tvk::open_gpu(off);
    never->gather({tandem::sum(tandem::exp(never->ones({1 << 22, 1})) * 2.0)}).get();
    never->wait_idle();
    EXPECT_EQ(never->metrics().split_regions, 0u);
}

// Independent pipelines (W8): they go whole to the devices, each filling one while another runs
// on the other, though one alone is split. (The last ones may be split still: nothing independent
// of them is left to fill the other device.)
TEST(VulkanSplit, IndependentPipelinesGoWholeToTheDevices) {
    constexpr int kPipelines = 6;
    auto two = tvk::open_gpu(two_devices("auto"));
    auto pipeline = [](Runtime& rt, int i) {
        Array x = tandem::column(rt.colon(0.0, static_cast<double>((1 << 22) + i - 1))) * 1e-6;
        return tandem::sum(tandem::exp(-x * x / 2.0) * tandem::cos(3.0 * x) + x / static_cast<double>(i));
    };
    two->gather({pipeline(*two, 1)}).get();
    two->wait_idle();
    ASSERT_GE(two->metrics().split_regions, 1u) << "one alone is split";
    const tandem::Metrics m0 = two->metrics();
    std::vector<Array> sums;
    for (int i = 1; i <= kPipelines; ++i) sums.push_back(pipeline(*two, i));
    const auto got = two->gather(sums).get();
    two->wait_idle();
    const tandem::Metrics m1 = two->metrics();
    EXPECT_LE(m1.split_regions - m0.split_regions, 2u) << "of " << 2 * kPipelines << " regions";
    EXPECT_GE(m1.device_regions_each[0], m0.device_regions_each[0] + 4);
    EXPECT_GE(m1.device_regions_each[1], m0.device_regions_each[1] + 4);
    auto one = tvk::open_gpu(tvk::gpu_config());
    std::vector<Array> ones;
    for (int i = 1; i <= kPipelines; ++i) ones.push_back(pipeline(*one, i));
    expect_same(got, one->gather(ones).get(), Acc::exact_signed);
    EXPECT_EQ(m1.device_fallbacks, 0u);
    EXPECT_EQ(m1.validation_messages, 0u);
}

// W3's kind of program started in steps (Config::start_depth) on two devices: each started
// piece of the loop is split, its result left in parts where the pieces ran, and the next piece
// is recorded behind it on each device and reads it in place. The bits are those of the whole
// loop on one device, and nothing goes up or comes down between the pieces.
TEST(VulkanSplit, ALoopStartedInStepsRunsSplitBehindItself) {
    tandem::Config c = two_devices();
    c.start_depth = 8;
    auto two = tvk::open_gpu(c);
    tandem::Config w = tvk::gpu_config();
    w.start_depth = 0;
    auto one = tvk::open_gpu(w);
    constexpr std::int64_t m = 1 << 18;  // steps heavy enough to start (Config::start_depth)
    const tandem::Metrics m0 = two->metrics();
    const draw_loop::Runs got = draw_loop::run(*two, 2, /*steps=*/40, m), want = draw_loop::run(*one, 2, 40, m);
    two->wait_idle();
    const tandem::Metrics d = moved_between(m0, two->metrics());
    EXPECT_EQ(want.plans, 2u);
    EXPECT_GT(got.plans, 2u * 4) << "each run's loop started at least four times before its gather";
    EXPECT_GE(d.split_regions, got.plans - 2) << "every piece of the loop split";
    EXPECT_EQ(d.split_values_assembled, 2u * 2) << "only what each run gathers (its paths, its means), no piece of the loop";
    // Up: each run's starting paths (m doubles); down: the results (m paths, 1 x 2 means) and the
    // means' partials. Nothing of the loop's pieces.
    EXPECT_LE(d.upload_bytes, 2u * m * 8);
    EXPECT_LE(d.download_bytes, 2u * (m * 8 + 4096));
    ASSERT_EQ(got.values.size(), want.values.size());
    for (std::size_t r = 0; r < got.values.size(); ++r)
        EXPECT_TRUE(draw_loop::same_bits(got.values[r], want.values[r])) << "run " << r;
    expect_devices_clean(*two);
    expect_devices_clean(*one);
}

// One of the two devices lost while a split program runs: what it held is computed again, the
// region runs elsewhere, every value is right, and later work goes to the other device.
TEST(VulkanSplit, ADeviceLostMidProgramCostsTimeNotValues) {
    tandem::Config c = two_devices();
    c.test_fault = "device_lost_later:2@1";
    testing::internal::CaptureStderr();
    auto two = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    constexpr std::int64_t n = 100000;
    auto program = [&](Runtime& rt, bool evaluate) {
        Array k = tandem::column(rt.colon(0.0, static_cast<double>(n - 1)));
        Array x = tandem::max(k * 0.5, 7.0) - tandem::floor(k * 0.25);
        if (evaluate) rt.evaluate({x}).get();
        Array s = tandem::sum(x * 2.0);
        Array y = x * 3.0 + 1.0;
        auto out = rt.gather({s, y}).get();
        auto more = rt.gather({tandem::sum(y - x)}).get();
        out.insert(out.end(), more.begin(), more.end());
        return out;
    };
    expect_same(program(*two, true), program(cpu, false), Acc::exact_signed);
    two->wait_idle();
    const std::string err = testing::internal::GetCapturedStderr();
    const auto m = two->metrics();
    EXPECT_EQ(m.regions_failed, 0u) << err;
    EXPECT_GE(m.device_fallbacks + m.values_recomputed, 1u) << "the lost device's work was done again" << err;
    EXPECT_EQ(m.validation_messages, 0u) << err;
}

}  // namespace

// Each device's pieces are recorded on a thread of their own, side by side. One device refusing
// its piece (no memory, a kernel that does not compile, a batch the queue refused) while the
// other's is in flight: that one finishes, the region runs on the CPU, nothing waits forever,
// and the next splits use both devices again.
TEST(VulkanSplit, APieceRefusedByOneDeviceWhileTheOthersRunsCostsARerunNotAValue) {
    for (const char* fault : {"oom@1", "compile@1", "submit_failed@1"}) {
        SCOPED_TRACE(fault);
        tandem::Config c = two_devices();
        c.test_fault = fault;
        testing::internal::CaptureStderr();
        auto two = tvk::open_gpu(c);
        Runtime cpu(tvk::cpu_config());
        constexpr std::int64_t n = 300007;
        auto program = [&](Runtime& rt) {
            Array k = tandem::column(rt.colon(0.0, static_cast<double>(n - 1)));
            Array x = tandem::sin(k * 0.001) * 3.0 - tandem::floor(k * 0.25);
            std::vector<tandem::HostArray> out = rt.gather({tandem::sum(x * x), x * 0.5}).get();
            for (int step = 0; step < 3; ++step) {
                auto more = rt.gather({tandem::sum(x * static_cast<double>(step) + 1.0), tandem::max(x - 2.0, -1.0)}).get();
                out.insert(out.end(), more.begin(), more.end());
            }
            return out;
        };
        expect_same(program(*two), program(cpu), Acc::exact_signed);
        two->wait_idle();
        const std::string err = testing::internal::GetCapturedStderr();
        const auto m = two->metrics();
        EXPECT_EQ(m.regions_failed, 0u) << err;
        EXPECT_GE(m.device_fallbacks, 1u) << "the refused piece's region ran again on the CPU" << err;
        EXPECT_NE(err.find("split region"), std::string::npos) << "the fault hit a split region's piece" << err;
        EXPECT_GE(m.split_regions, 1u) << "later regions still split" << err;
        EXPECT_EQ(m.validation_messages, 0u) << err;
    }
}
