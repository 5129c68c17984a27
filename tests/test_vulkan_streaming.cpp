// Streaming (scheduler/streaming.hpp): regions whose inputs and outputs exceed the device's
// memory budget run on the device anyway, in pieces that fit (a budget of 1 MiB on lavapipe,
// arrays of a few MiB), with the CPU's bits: elementwise regions with broadcasting and several
// outputs, reductions along the first dimension (windows of the result), reductions of every
// element, of vectors and of rows (the canonical order's first-level partials, finished on the
// host), single precision, special values. What cannot stream runs on the CPU; a device lost mid-stream
// costs a rerun on the CPU, never a value. No validation message in any of it.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "matmul_reference.hpp"
#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

constexpr std::uint64_t kBudget = 1u << 20;

tandem::Config streaming_config() {
    tandem::Config c = tvk::gpu_config();
    c.device_memory_limit = "1M";
    c.region_records = 64;
    return c;
}

struct Case {
    std::string name;
    bool streams;  ///< expected to stream (else: the CPU)
    std::function<std::vector<Array>(Runtime&, const std::vector<Host>&)> make;
};

// Matrices of 400 x 700 and 8 x 80000 doubles (2.2 and 5.1 MB), vectors of 300k (2.4 MB), NaN,
// Inf and -0 among them.
std::vector<Host> case_inputs(std::mt19937_64& rng) {
    return {tref::random_host({400, 700}, DType::f64, rng), tref::random_host({400, 700}, DType::f64, rng),
            tref::random_host({400, 1}, DType::f64, rng),   tref::random_host({1, 700}, DType::f64, rng),
            tref::random_host({300000, 1}, DType::f64, rng), tref::random_host({300000, 1}, DType::f64, rng),
            tref::random_host({300000, 1}, DType::f32, rng), tref::random_host({400, 700}, DType::f32, rng),
            // wide matrices for row reductions: whole chunks of 1024 columns must fit a piece
            tref::random_host({8, 80000}, DType::f64, rng), tref::random_host({8, 80000}, DType::f64, rng),
            tref::random_host({8, 1}, DType::f64, rng), tref::random_host({1, 80000}, DType::f64, rng),
            tref::random_host({8, 80000}, DType::f32, rng)};
}

const std::vector<Case> kCases = {
    {"elementwise, broadcast", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), c = tref::make_array(rt, h[2]), r = tref::make_array(rt, h[3]);
         return std::vector<Array>{tandem::exp(-tandem::abs(A)) * c + r * 0.5};
     }},
    {"elementwise, two outputs", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         Array t = A * 2.0 + B;
         return std::vector<Array>{t, tandem::sin(t) - B};
     }},
    {"elementwise, single", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array F = tref::make_array(rt, h[7]);
         return std::vector<Array>{F * F - 3.0f};
     }},
    {"sum, max and mean down the columns", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         return std::vector<Array>{tandem::sum(A * B, 1), tandem::max(A, tandem::Empty{}, 1), tandem::mean(A + B, 1)};
     }},
    {"sum of a vector expression", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array a = tref::make_array(rt, h[4]), b = tref::make_array(rt, h[5]);
         return std::vector<Array>{tandem::sum(a * b + 1.0), tandem::mean(a - b)};
     }},
    {"prod, max, any of a vector", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array a = tref::make_array(rt, h[4]);
         return std::vector<Array>{tandem::prod(1.0 + a * 1e-7), tandem::max(a), tandem::any(a > 2.5)};
     }},
    {"single-precision sum", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array f = tref::make_array(rt, h[6]);
         return std::vector<Array>{tandem::sum(f * 0.5f)};
     }},
    {"sum of every element of a matrix", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         return std::vector<Array>{tandem::sum(A - B, tandem::all_dims)};
     }},
    {"sum, max and mean along the rows (blocked lanes), broadcast inputs", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[8]), B = tref::make_array(rt, h[9]);
         Array c = tref::make_array(rt, h[10]), r = tref::make_array(rt, h[11]);
         return std::vector<Array>{tandem::sum(A * B + c, 2), tandem::max(A - r, tandem::Empty{}, 2),
                                   tandem::mean(A * r, 2)};
     }},
    {"single-precision row sums", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array F = tref::make_array(rt, h[12]);
         return std::vector<Array>{tandem::sum(F * 2.0f, 2)};
     }},
    {"cumsum and cummax down the columns", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         return std::vector<Array>{tandem::cumsum(A, 1), tandem::cummax(B, 1)};
     }},
    {"single-precision cumprod down the columns", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array F = tref::make_array(rt, h[7]);
         return std::vector<Array>{tandem::cumprod(F, 1)};
     }},
    {"flip and circshift down the columns", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         return std::vector<Array>{tandem::flip(A, 1), tandem::circshift(B, 37, 1)};
     }},
    {"vertical concatenation", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]), B = tref::make_array(rt, h[1]);
         return std::vector<Array>{tandem::vertcat({A, B})};
     }},
    {"cumsum along the split dimension (lines across the pieces): the CPU", false,
     [](Runtime& rt, const std::vector<Host>& h) {
         Array A = tref::make_array(rt, h[0]);
         return std::vector<Array>{tandem::cumsum(A, 2)};
     }},
    {"random numbers in column sums (pieces number their elements from their base)", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         tandem::seed(rt, 7);
         Array A = tref::make_array(rt, h[0]);
         return std::vector<Array>{tandem::sum(A * tandem::rand(rt, {400, 700}), 1)};
     }},
    {"random numbers, odd columns, single and double", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         tandem::seed(rt, 11);
         Array A = tref::make_array(rt, h[0]), F = tref::make_array(rt, h[7]);
         return std::vector<Array>{A + tandem::randn(rt, {400, 700}), F * tandem::rand(rt, {400, 700}, DType::f32)};
     }},
    {"random numbers in a sum of every element", true,
     [](Runtime& rt, const std::vector<Host>& h) {
         tandem::seed(rt, 13);
         Array a = tref::make_array(rt, h[4]);
         return std::vector<Array>{tandem::sum(a + tandem::randn(rt, {300000, 1}))};
     }},
    {"linspace and colon", true,
     [](Runtime& rt, const std::vector<Host>&) {
         return std::vector<Array>{tandem::sin(rt.linspace(-3.0, 5.0, 300001)) * 2.0,
                                   rt.colon(1.0, 0.5, 150000.0) + 0.25};
     }},
};

TEST(VulkanStreaming, RegionsLargerThanTheBudgetStreamWithTheCpusBits) {
    std::mt19937_64 rng(tref::seed_of("streaming"));
    const std::vector<Host> inputs = case_inputs(rng);
    Runtime cpu(tvk::cpu_config());
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.name);
        auto gpu = tvk::open_gpu(streaming_config());
        std::vector<tandem::HostArray> got;
        try {
            got = gpu->gather(c.make(*gpu, inputs)).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "threw: " << e.what();
            continue;
        }
        const auto want = cpu.gather(c.make(cpu, inputs)).get();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << "output " << k;
        gpu->wait_idle();
        const auto m = gpu->metrics();
        if (c.streams) {
            EXPECT_GE(m.streamed_regions, 1u);
            EXPECT_GE(m.streamed_pieces, 2 * m.streamed_regions) << "a region larger than the budget takes pieces";
            EXPECT_LE(m.device_peak_resident_bytes, kBudget);
            bool said = false;
            for (const auto& rec : gpu->region_records()) said |= rec.reason.find("streamed") != std::string::npos;
            EXPECT_TRUE(said) << "the region record says why it streamed";
        } else {
            EXPECT_EQ(m.streamed_regions, 0u);
        }
        EXPECT_EQ(m.device_fallbacks, 0u);
        EXPECT_EQ(m.regions_failed, 0u);
        EXPECT_EQ(m.validation_messages, 0u);
    }
}

// Streamed results feed later regions (on the device, within the budget) and a gather.
TEST(VulkanStreaming, StreamedResultsFeedTheRestOfTheProgram) {
    std::mt19937_64 rng(tref::seed_of("streaming chain"));
    const std::vector<Host> inputs = case_inputs(rng);
    auto program = [&](Runtime& rt) {
        Array A = tref::make_array(rt, inputs[0]), B = tref::make_array(rt, inputs[1]);
        Array s = tandem::sum(A * B, 1);  // streamed: 1 x 700
        Array t = s * 2.0 - tandem::max(s);  // small: on the device
        return std::vector<Array>{t, tandem::sum(t, 2)};
    };
    auto gpu = tvk::open_gpu(streaming_config());
    Runtime cpu(tvk::cpu_config());
    const auto got = gpu->gather(program(*gpu)).get();
    const auto want = cpu.gather(program(cpu)).get();
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed));
    gpu->wait_idle();
    EXPECT_GE(gpu->metrics().streamed_regions, 1u);
    EXPECT_EQ(gpu->metrics().validation_messages, 0u);
}

// A product whose B and result exceed the budget streams by blocks of its result's columns (A
// whole in each piece, B's columns and the bias's windows): each element's sum in the canonical
// order, the CPU's bits. B transposed is read by rows: the product is not cut (the CPU runs it).
TEST(VulkanStreaming, AProductStreamsByBlocksOfItsResultsColumns) {
    std::mt19937_64 rng(tref::seed_of("streamed product"));
    const Host a = tmm::random_matrix(100, 150, DType::f64, rng, true), b = tmm::random_matrix(150, 1200, DType::f64, rng, true);
    const Host bias = tmm::random_matrix(1, 1200, DType::f64, rng, true), bt = tmm::random_matrix(1200, 150, DType::f64, rng, true);
    auto program = [&](Runtime& rt, bool transposed) {
        Array A = tref::make_array(rt, a), Bias = tref::make_array(rt, bias);
        if (transposed) return std::vector<Array>{tandem::matmul(A, tref::make_array(rt, bt), {.transpose_b = true})};
        return std::vector<Array>{tandem::matmul(A, tref::make_array(rt, b)) * 2.0 + Bias};
    };
    Runtime cpu(tvk::cpu_config());
    for (const bool transposed : {false, true}) {
        SCOPED_TRACE(transposed ? "B transposed" : "B as it is");
        auto gpu = tvk::open_gpu(streaming_config());
        const auto got = gpu->gather(program(*gpu, transposed)).get();
        const auto want = cpu.gather(program(cpu, transposed)).get();
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[0]), tref::from_host_array(want[0]), Acc::exact_signed));
        gpu->wait_idle();
        const auto m = gpu->metrics();
        if (!transposed) {
            EXPECT_EQ(m.streamed_regions, 1u);
            EXPECT_GE(m.streamed_pieces, 4u) << "1.4 MB of B and 0.96 MB of result in a 1 MB budget";
            EXPECT_LE(m.device_peak_resident_bytes, kBudget);
        } else {
            EXPECT_EQ(m.streamed_regions, 0u);
        }
        EXPECT_EQ(m.device_fallbacks, 0u);
        EXPECT_EQ(m.validation_messages, 0u);
    }
}

// The case, scaled down: three arrays computed on the device, which cannot hold them
// together (the budget wrote the oldest back), and sum(a .* b + c). The region streams, reading
// the two still on the device in place: what goes up is the one written back, nothing else.
TEST(VulkanStreaming, InputsOnTheDeviceAreReadInPlace) {
    constexpr std::int64_t n = 45000;  // 360 KB an array: two fit the budget with their inputs, three do not
    std::mt19937_64 rng(tref::seed_of("streaming in place"));
    std::vector<Host> h;
    for (int k = 0; k < 3; ++k) h.push_back(tref::random_host({n, 1}, DType::f64, rng));
    auto make = [&](Runtime& rt, int k) { return tandem::exp(tref::make_array(rt, h[static_cast<std::size_t>(k)]) * 1e-3); };
    auto gpu = tvk::open_gpu(streaming_config());
    Runtime cpu(tvk::cpu_config());
    std::vector<Array> g;
    for (int k = 0; k < 3; ++k) {
        g.push_back(make(*gpu, k));
        gpu->evaluate({g.back()}).get();  // computed on the device, left there
    }
    gpu->wait_idle();
    const auto before = gpu->metrics();
    EXPECT_GE(before.write_backs, 1u) << "the budget should have written the oldest back";
    Array s = tandem::sum(g[0] * g[1] + g[2]);
    const auto got = s.gather().get();
    gpu->wait_idle();
    const auto m = gpu->metrics();
    const auto want = tandem::sum(make(cpu, 0) * make(cpu, 1) + make(cpu, 2)).gather().get();
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got), tref::from_host_array(want), Acc::exact_signed));
    EXPECT_EQ(m.streamed_regions, 1u);
    EXPECT_LE(m.upload_bytes - before.upload_bytes, before.written_back_bytes) << "only what was written back goes up";
    EXPECT_LE(m.download_bytes - before.download_bytes, 4096u) << "only the partials come back";
    EXPECT_LE(m.device_peak_resident_bytes, kBudget);
    EXPECT_EQ(m.validation_messages, 0u);
}

// The device lost while a region streams: the CPU runs it; every value is right.
TEST(VulkanStreaming, ADeviceLostMidStreamCostsARerunOnTheCpu) {
    std::mt19937_64 rng(tref::seed_of("streaming lost"));
    const std::vector<Host> inputs = case_inputs(rng);
    tandem::Config c = streaming_config();
    c.test_fault = "device_lost";
    testing::internal::CaptureStderr();
    auto gpu = tvk::open_gpu(c);
    Runtime cpu(tvk::cpu_config());
    const Case& sum_case = kCases[4];
    const auto got = gpu->gather(sum_case.make(*gpu, inputs)).get();
    const auto want = cpu.gather(sum_case.make(cpu, inputs)).get();
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed));
    gpu->wait_idle();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_GE(gpu->metrics().device_fallbacks, 1u) << err;
    EXPECT_EQ(gpu->metrics().regions_failed, 0u);
    EXPECT_EQ(gpu->metrics().validation_messages, 0u) << err;
}

}  // namespace
