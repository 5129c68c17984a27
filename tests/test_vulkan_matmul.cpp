// matmul on the Vulkan device (lavapipe in CI, validation on) through the public API: the tiled
// GEMM kernel against the reference of matmul_reference.hpp for every transpose and shapes that
// are not multiples of the tiles, double and single; the result read back, kept on the device
// for a consumer, and fed from a device-resident operand.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <utility>

#include "epilogue_cases.hpp"
#include "matmul_reference.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tref::Host;

namespace {

TEST(VulkanMatmul, EveryTransposeMatchesReference) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(8);
    struct D {
        std::int64_t m, k, n;
    };
    for (DType t : {DType::f64, DType::f32})
        for (const D& d : {D{1, 1, 1}, D{1, 37, 1}, D{9, 70, 1}, D{1, 70, 9}, D{65, 33, 70}, D{128, 64, 129}})
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + std::to_string(d.m) + "x" + std::to_string(d.k) +
                                 "x" + std::to_string(d.n) + (ta ? " A'" : "") + (tb ? " B'" : ""));
                    Host a = tmm::random_matrix(ta ? d.k : d.m, ta ? d.m : d.k, t, rng, true);
                    Host b = tmm::random_matrix(tb ? d.n : d.k, tb ? d.k : d.n, t, rng, true);
                    Host got = tref::gather(tandem::matmul(tref::make_array(*gpu, a), tref::make_array(*gpu, b), {ta, tb}));
                    EXPECT_TRUE(tmm::product_ok(got, a, b, ta, tb));
                }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanMatmul, ChainedOnTheDevice) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(9);
    Host a = tmm::random_matrix(40, 50, DType::f64, rng), b = tmm::random_matrix(50, 30, DType::f64, rng);
    Array A = tref::make_array(*gpu, a), B = tref::make_array(*gpu, b);
    Array C = tandem::matmul(A, B);
    gpu->evaluate({C}).get();  // stays on the device
    Host d = tref::gather(tandem::matmul(C, C, {true, false}) + 1.0);  // C' C + 1, from the device copy
    Host c = tref::gather(C);
    ASSERT_TRUE(tmm::product_ok(c, a, b, false, false));
    Host ctc = tref::gather(tandem::matmul(tref::make_array(*gpu, c), tref::make_array(*gpu, c), {true, false}));
    for (std::size_t i = 0; i < d.v.size(); ++i) EXPECT_NEAR(d.v[i], ctc.v[i] + 1.0, 1e-9 * (1 + std::fabs(ctc.v[i])));
    EXPECT_EQ(gpu->metrics().device_fallbacks, 0u);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanMatmul, TransposeTiles) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(11);
    for (DType t : {DType::f64, DType::f32, DType::logical})
        for (auto [r, c] : {std::pair{2, 3}, {32, 32}, {33, 65}, {100, 7}, {1, 1}}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + std::to_string(r) + "x" + std::to_string(c));
            Host h = tref::random_host({r, c}, t, rng);
            Host got = tref::gather(tandem::transpose(tref::make_array(*gpu, h)));
            ASSERT_EQ(got.dims, (tref::Dims{c, r}));
            for (int i = 0; i < r; ++i)
                for (int j = 0; j < c; ++j) {
                    const double w = h.v[static_cast<std::size_t>(i + r * j)], g = got.v[static_cast<std::size_t>(j + c * i)];
                    ASSERT_TRUE(w == g || (std::isnan(w) && std::isnan(g))) << i << "," << j;
                }
        }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanMatmul, CatCopiesOnTheDevice) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(12);
    for (DType t : {DType::f64, DType::f32, DType::logical})
        for (int dim : {1, 2, 3}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " dim " + std::to_string(dim));
            std::vector<tref::Dims> shapes = dim == 1   ? std::vector<tref::Dims>{{3, 4}, {5, 4}}
                                             : dim == 2 ? std::vector<tref::Dims>{{6, 2}, {6, 7}, {6, 1}}
                                                        : std::vector<tref::Dims>{{3, 2}, {3, 2, 2}};
            std::vector<Array> g, c;
            for (const auto& sh : shapes) {
                Host h = tref::random_host(sh, t, rng);
                g.push_back(tref::make_array(*gpu, h));
                c.push_back(tref::make_array(cpu, h));
            }
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::cat(dim, g)), tref::gather(tandem::cat(dim, c)),
                                          tref::Acc::exact_signed));
        }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanMatmul, RemapsOnTheDevice) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(13);
    for (DType t : {DType::f64, DType::f32, DType::logical}) {
        Host h = tref::random_host({7, 6, 3}, t, rng);
        Array g = tref::make_array(*gpu, h), c = tref::make_array(cpu, h);
        for (int dim : {1, 2, 3}) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " dim " + std::to_string(dim));
            auto same = [&](const std::function<Array(const Array&)>& f) {
                EXPECT_TRUE(tref::same_values(tref::gather(f(g)), tref::gather(f(c)), tref::Acc::exact_signed));
            };
            same([&](const Array& x) { return tandem::flip(x, dim); });
            same([&](const Array& x) { return tandem::circshift(x, -4, dim); });
            same([&](const Array& x) { return tandem::slice(x, dim, 1, 2, tandem::kEnd); });
        }
        EXPECT_TRUE(tref::same_values(tref::gather(tandem::repmat(g, std::vector<std::int64_t>{2, 3})),
                                      tref::gather(tandem::repmat(c, std::vector<std::int64_t>{2, 3})), tref::Acc::exact_signed));
    }
    tvk::expect_device_clean(*gpu);
}

// A view of a device-resident value stays on the device: nothing is downloaded or uploaded
// for it, and its consumer runs there.
TEST(VulkanMatmul, ReshapeOfADeviceValue) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(10);
    Host a = tmm::random_matrix(64, 48, DType::f64, rng);
    Array A = tref::make_array(*gpu, a);
    Array C = A * 3.0;
    gpu->evaluate({C}).get();
    const auto m0 = gpu->metrics();
    Host s = tref::gather(tandem::sum(tandem::reshape(C, tandem::Shape{48, 64}), 1));
    const auto m1 = gpu->metrics();
    EXPECT_EQ(m1.upload_bytes - m0.upload_bytes, 0u);
    EXPECT_EQ(m1.download_bytes - m0.download_bytes, 64u * 8u) << "only the 1 x 64 sums come back";
    for (int j = 0; j < 64; ++j) {
        double want = 0;
        for (int i = 0; i < 48; ++i) want += 3.0 * a.v[static_cast<std::size_t>(i + 48 * j)];
        EXPECT_NEAR(s.v[static_cast<std::size_t>(j)], want, 1e-12 * 48 * 10);
    }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanMatmul, EpilogueFoldsIntoTheGemm) {
    // fused on the device vs the same chain unfused on the device: the same bits
    auto gpu = tvk::open_gpu();
    auto plain = tvk::open_gpu(tvk::unfused_gpu_config());
    std::mt19937_64 rng(62);
    tep::check_chains(*gpu, *plain, rng);
    tvk::expect_device_clean(*gpu);
    tvk::expect_device_clean(*plain);
}

}  // namespace

namespace {

/// Placement never changes a product's bits: operands with NaN and Inf among them, every
/// transpose, a k of several chunks of the canonical order (and one split on the device), X'X
/// (the symmetric kernel), folded epilogues, a product of a product, with every region on the
/// CPU, on the device, and placed by the cost model.
TEST(VulkanMatmul, ProductsSameBitsOnEveryPlacement) {
    tandem::Config automatic = tvk::gpu_config();
    automatic.placement = "auto";
    auto gpu = tvk::open_gpu();
    auto placed = tvk::open_gpu(automatic);
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(41);
    for (DType t : {DType::f64, DType::f32}) {
        SCOPED_TRACE(tref::dtype_str(t));
        const Host a = tmm::random_matrix(90, 1300, t, rng, true), b = tmm::random_matrix(1300, 70, t, rng, true);
        const Host c = tmm::random_matrix(90, 70, t, rng, true), bias = tmm::random_matrix(90, 1, t, rng, false);
        const Host x = tmm::random_matrix(6000, 24, t, rng, false), y = tmm::random_matrix(70, 33, t, rng, true);
        auto program = [&](tandem::Runtime& rt) {
            const Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), C = tref::make_array(rt, c);
            const Array Bias = tref::make_array(rt, bias), X = tref::make_array(rt, x), Y = tref::make_array(rt, y);
            const Array AB = tandem::matmul(A, B);
            return rt.gather({AB, tandem::matmul(B, A, {true, true}), AB * 2.5 + C * 0.5,
                              tandem::max(tandem::matmul(A, B) + Bias, 0.0), tandem::matmul(X, X, {true, false}),
                              tandem::matmul(AB, Y), tandem::matmul(X, tandem::matmul(X, X, {true, false}))})
                .get();
        };
        const auto hc = program(cpu), hg = program(*gpu), ha = program(*placed);
        ASSERT_EQ(hc.size(), hg.size());
        for (std::size_t k = 0; k < hc.size(); ++k) {
            const Host want = tref::from_host_array(hc[k]);
            EXPECT_TRUE(tref::same_values(tref::from_host_array(hg[k]), want, tref::Acc::exact_signed)) << "result " << k << ": GPU vs CPU";
            EXPECT_TRUE(tref::same_values(tref::from_host_array(ha[k]), want, tref::Acc::exact_signed)) << "result " << k << ": auto vs CPU";
        }
    }
    tvk::expect_device_clean(*gpu);
}

/// A long inner dimension and a small result (X'X of a tall X): Gemm::split_parts splits k into
/// its chunks of the canonical order, one workgroup each (one dispatch for the wave), summed in
/// order (a second dispatch) -- the unsplit kernel's and the CPU's bits. Every transpose (the
/// slices of A and B are offset differently), a k that is not a multiple of the chunk, special
/// values; against the reference, and the same bits on every run.
TEST(VulkanMatmul, LongInnerDimensionIsSplitAndSummedInOrder) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(13);
    for (DType t : {DType::f64, DType::f32})
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                const std::int64_t m = 20, k = 12011, n = 13;
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + (ta ? " A'" : "") + (tb ? " B'" : ""));
                Host a = tmm::random_matrix(ta ? k : m, ta ? m : k, t, rng, true);
                Host b = tmm::random_matrix(tb ? n : k, tb ? k : n, t, rng, true);
                const Array A = tref::make_array(*gpu, a), B = tref::make_array(*gpu, b);
                const auto before = gpu->metrics().device_dispatches;
                Host got = tref::gather(tandem::matmul(A, B, {ta, tb}));
                EXPECT_EQ(gpu->metrics().device_dispatches - before, 2u) << "not split in one wave (the chunks, their sum)";
                EXPECT_TRUE(tmm::product_ok(got, a, b, ta, tb));
                // A fresh node (a * 1 is not folded; -0 and NaN stay): the product runs again.
                Host again = tref::gather(tandem::matmul(A * 1.0, B, {ta, tb}));
                EXPECT_TRUE(tref::same_values(again, got, tref::Acc::exact_signed)) << "a second run gave other bits";
            }
    // X'X of a tall X, the harness's W5 shape in small.
    Host x = tmm::random_matrix(30000, 16, DType::f64, rng, false);
    Array X = tref::make_array(*gpu, x);
    Host g = tref::gather(tandem::matmul(X, X, {true, false}));
    EXPECT_TRUE(tmm::product_ok(g, x, x, true, false));
    tvk::expect_device_clean(*gpu);
}

/// X'X and XX' compute only the tiles on and above the diagonal (Gemm's symmetric variant) and
/// store the rest mirrored: the same bits as the full product of X with a copy of itself (each
/// element the same products in the same order), special values included; sizes around the
/// tile (64 on lavapipe), a long k (split as well), an empty k.
TEST(VulkanMatmul, ProductWithOwnTransposeComputesHalfWithTheFullProductsBits) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(17);
    {
        // The symmetric variant is a kernel of its own: X'X compiles it after X'Y's.
        const Host x = tmm::random_matrix(100, 30, DType::f64, rng, false);
        const Array X = tref::make_array(*gpu, x), Y = tref::make_array(*gpu, x);
        tref::gather(tandem::matmul(X, Y, {true, false}));
        const auto misses = gpu->metrics().pipeline_misses;
        tref::gather(tandem::matmul(X, X, {true, false}));
        EXPECT_EQ(gpu->metrics().pipeline_misses - misses, 1u) << "X'X did not take the symmetric kernel";
    }
    for (DType t : {DType::f64, DType::f32})
        for (auto [rows, cols] : {std::pair{7, 5}, std::pair{65, 130}, std::pair{200, 64}, std::pair{13000, 70},
                                  std::pair{0, 9}})
            for (bool left : {true, false}) {  // X'X, or XX'
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                             (left ? " X'X" : " XX'"));
                const Host x = tmm::random_matrix(left ? rows : cols, left ? cols : rows, t, rng, true);
                const Array X = tref::make_array(*gpu, x), Y = tref::make_array(*gpu, x);  // Y: a copy
                const tandem::MatmulOptions o{left, !left};
                const Host half = tref::gather(tandem::matmul(X, X, o));
                const Host full = tref::gather(tandem::matmul(X, Y, o));
                EXPECT_TRUE(tref::same_values(half, full, tref::Acc::exact_signed));
                if (rows > 0) EXPECT_TRUE(tmm::product_ok(half, x, x, left, !left));
            }
    tvk::expect_device_clean(*gpu);
}

}  // namespace

namespace {

/// Power iteration on a symmetric matrix, the harness's W5 loop: matrix-vector products (a
/// reduction over a view of v), norms and divisions.
Array power_steps(tandem::Runtime& rt, const Array& G, int steps) {
    Array v = rt.ones({G.shape()[0], 1}) / std::sqrt(static_cast<double>(G.shape()[0]));
    for (int i = 0; i < steps; ++i) {
        const Array Gv = tandem::matmul(G, v);
        v = Gv / tandem::norm(Gv);
    }
    return v;
}

}  // namespace

/// The views that vector products take of v (reshape) follow v onto the device: the loop runs
/// without a download or a host round trip per step, and gives the CPU's values.
TEST(VulkanMatmul, PowerIterationStaysOnTheDevice) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(23);
    const std::int64_t d = 48;
    const Host x = tmm::random_matrix(200, d, DType::f64, rng, false);
    auto run = [&](tandem::Runtime& rt, std::uint64_t* downloaded) {
        const Array X = tref::make_array(rt, x);
        const Array G = tandem::matmul(X, X, {true, false});
        rt.evaluate({G}).get();
        const auto before = rt.metrics().download_bytes;
        const Host v = tref::gather(power_steps(rt, G, 12));
        if (downloaded) *downloaded = rt.metrics().download_bytes - before;
        return v;
    };
    std::uint64_t downloaded = 0;
    const Host on_gpu = run(*gpu, &downloaded);
    const Host on_cpu = run(cpu, nullptr);
    EXPECT_EQ(downloaded, static_cast<std::uint64_t>(d * 8)) << "only the result comes back";
    EXPECT_TRUE(tref::same_values(on_gpu, on_cpu, tref::Acc::ulp, 1e6));  // sums in other orders
    tvk::expect_device_clean(*gpu);
}
