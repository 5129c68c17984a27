// Reductions on the Vulkan device (lavapipe in CI, validation layer on), against the scalar
// reference of reduce_reference.hpp: every op along every dimension of shapes that take each
// kernel shape -- an invocation per output, a workgroup per output (runs of at least a workgroup),
// and both split into parts with a second pass (few outputs: a full reduction never runs on one
// workgroup) -- with NaN/Inf/-0/subnormals, in double, single and logical; fused producers;
// the same bits every run; a NaN converted to logical inside a reduction fails its future.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "reduce_reference.hpp"
#include "tail_cases.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"
#include "vulkan_runtime.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tred::Op;
using tref::Dims;
using tref::Host;

namespace {

const std::vector<Dims> kShapes = {
    {0, 0}, {0, 3}, {1, 1}, {1, 7}, {9, 1}, {5, 6}, {3, 4, 2},
    {700, 3},     // runs of a workgroup or more along dim 1
    {20000, 2},   // few long runs: parts and a second pass
    {3, 900},     // few strided outputs: parts along dim 2
    {7, 0, 2},
};
const Op kOps[] = {Op::sum, Op::prod, Op::mean, Op::max, Op::min, Op::argmax, Op::argmin, Op::any, Op::all};

class VulkanReduce : public ::testing::TestWithParam<DType> {};

TEST_P(VulkanReduce, EveryOpEveryDimMatchesReference) {
    const DType t = GetParam();
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(4321 + static_cast<int>(t));
    int checked = 0;
    for (const Dims& shape : kShapes) {
        for (Op op : kOps) {
            const Host x = tred::random_data(shape, t, rng, /*specials=*/true, /*near_one=*/op == Op::prod);
            const Array a = tref::make_array(*gpu, x);
            for (int dim : {0, 1, 2, 3, -1}) {
                if ((op == Op::argmax || op == Op::argmin) && dim < 0) continue;
                SCOPED_TRACE(std::string(tred::name(op)) + " of " + tref::dims_str(shape) + " " + tref::dtype_str(t) +
                             " dim " + std::to_string(dim));
                const int d0 = dim == 0 ? tred::default_dim(x.dims, op) : dim < 0 ? -1 : dim - 1;
                EXPECT_TRUE(tred::matches(tref::gather(tred::call(op, a, dim)), tred::reduce(x, op, d0)));
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 300);
    tvk::expect_device_clean(*gpu);
}

TEST_P(VulkanReduce, ScansSameBitsAsDocumented) {
    const DType t = GetParam();
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(99 + static_cast<int>(t));
    for (const Dims& shape : kShapes)
        for (tred::ScanOp op : {tred::ScanOp::cumsum, tred::ScanOp::cumprod, tred::ScanOp::cummax, tred::ScanOp::cummin}) {
            const Host x = tred::random_data(shape, t, rng, true, op == tred::ScanOp::cumprod);
            const Array a = tref::make_array(*gpu, x);
            for (int dim : {1, 2, 3}) {
                SCOPED_TRACE("scan " + std::to_string(static_cast<int>(op)) + " of " + tref::dims_str(shape) + " dim " +
                             std::to_string(dim));
                EXPECT_TRUE(tref::same_values(tref::gather(tred::call_scan(op, a, dim)), tred::scan(x, op, dim - 1)));
            }
        }
    tvk::expect_device_clean(*gpu);
}

// Lines longer than one dispatch walks (backends/vulkan/scan.hpp: several dispatches in turn,
// the running values carried in double between them): the reference's bits, along the first
// dimension and along the second.
TEST_P(VulkanReduce, ScansOfLinesLongerThanOneDispatchWalks) {
    const DType t = GetParam();
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(7 + static_cast<int>(t));
    for (const Dims& shape : {Dims{70001, 2}, Dims{3, 65537}})
        for (tred::ScanOp op : {tred::ScanOp::cumsum, tred::ScanOp::cumprod, tred::ScanOp::cummax, tred::ScanOp::cummin}) {
            const Host x = tred::random_data(shape, t, rng, true, op == tred::ScanOp::cumprod);
            const Array a = tref::make_array(*gpu, x);
            const int dim = shape[0] > shape[1] ? 1 : 2;
            SCOPED_TRACE("scan " + std::to_string(static_cast<int>(op)) + " of " + tref::dims_str(shape) + " dim " +
                         std::to_string(dim));
            EXPECT_TRUE(tref::same_values(tref::gather(tred::call_scan(op, a, dim)), tred::scan(x, op, dim - 1)));
        }
    tvk::expect_device_clean(*gpu);
}

INSTANTIATE_TEST_SUITE_P(VulkanReduce, VulkanReduce, ::testing::Values(DType::f64, DType::f32, DType::logical),
                         [](const auto& p) { return std::string(tref::dtype_str(p.param)); });

// The settings: another workgroup size, the shared-memory tree instead of subgroup shuffles:
// the same answers.
TEST(VulkanReduceSettings, WorkgroupAndTree) {
    struct Case {
        std::uint32_t wg;
        bool subgroups;
    };
    for (const Case& c : {Case{64, false}, Case{32, true}, Case{128, true}, Case{1024, false}}) {
        SCOPED_TRACE("wg " + std::to_string(c.wg) + (c.subgroups ? " subgroups" : " tree"));
        tandem::Config cfg = tvk::gpu_config();
        cfg.reduction_workgroup = c.wg;
        cfg.vulkan_subgroups = c.subgroups;
        auto gpu = tvk::open_gpu(cfg);
        std::mt19937_64 rng(c.wg);
        for (const Dims& shape : {Dims{300, 5}, Dims{5, 300}, Dims{4000, 1}, Dims{64, 64}, Dims{5000, 3}}) {
            for (Op op : {Op::sum, Op::max, Op::argmin, Op::all}) {
                const Host x = tred::random_data(shape, DType::f64, rng, true);
                const Array a = tref::make_array(*gpu, x);
                for (int dim : {1, 2}) {
                    SCOPED_TRACE(std::string(tred::name(op)) + " of " + tref::dims_str(shape) + " dim " + std::to_string(dim));
                    EXPECT_TRUE(tred::matches(tref::gather(tred::call(op, a, dim)), tred::reduce(x, op, dim - 1)));
                }
            }
        }
        tvk::expect_device_clean(*gpu);
    }
}

// A region of many reductions (one input, twelve sums and extrema fused together) needs more
// shared memory than the default workgroup has room for on lavapipe: the kernel takes a smaller
// workgroup and runs on the device (it ran on the CPU before), with the CPU's bits.
TEST(VulkanReduceSettings, ManyReductionsInOneRegionFitTheSharedMemory) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("many reductions"));
    const Host x = tred::random_data({5000, 3}, DType::f64, rng, true);
    auto program = [&](tandem::Runtime& rt) {
        const Array a = tref::make_array(rt, x);
        std::vector<Array> outs;
        for (int k = 1; k <= 6; ++k) {
            outs.push_back(tandem::sum(a * static_cast<double>(k), 1));
            outs.push_back(tandem::max(a - static_cast<double>(k), {}, 1));
        }
        return rt.gather(outs).get();
    };
    const auto got = program(*gpu), want = program(cpu);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), tref::Acc::exact)) << k;
    tvk::expect_device_clean(*gpu);
}

// Grids beyond 65535 workgroups (split into x * y, a few workgroups of the rounding with nothing to
// do): a workgroup per output (256 x 65537, runs along dimension 1) and strided rows (2^21 + 32
// outputs along dimension 2): every output right, nothing written out of place.
TEST(VulkanReduceSettings, GridsBeyondTheDispatchLimit) {
    // With 32-invocation workgroups the short runs take a workgroup each (65537 of them); with the
    // default ones they share workgroups (kReduceLanes invocations a run).
    tandem::Config wg32 = tvk::gpu_config();
    wg32.reduction_workgroup = 32;
    auto narrow = tvk::open_gpu(wg32);
    for (tandem::Runtime* rt : {narrow.get(), tvk::open_gpu().release()}) {
        std::unique_ptr<tandem::Runtime> owned(rt == narrow.get() ? nullptr : rt);
        const std::int64_t rows = 256, cols = 65537;
        std::vector<float> v(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i % 7) + (i / static_cast<std::size_t>(rows)) % 3);
        Array a = rt->array(std::span<const float>(v), tandem::Shape{rows, cols});
        const Host got = tref::gather(tandem::sum(a, 1));
        ASSERT_EQ(got.v.size(), static_cast<std::size_t>(cols));
        std::size_t bad = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
            double want = 0;
            for (std::int64_t i = 0; i < rows; ++i) want += v[static_cast<std::size_t>(i + rows * j)];
            bad += got.v[static_cast<std::size_t>(j)] != want;
        }
        EXPECT_EQ(bad, 0u);
        tvk::expect_device_clean(*rt);
    }
    auto gpu = tvk::open_gpu();
    {
        const std::int64_t rows = (std::int64_t{1} << 21) + 32, cols = 2;
        std::vector<double> v(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 1000);
        Array a = gpu->array(std::span<const double>(v), tandem::Shape{rows, cols});
        const Host got = tref::gather(tandem::sum(a, 2));
        ASSERT_EQ(got.v.size(), static_cast<std::size_t>(rows));
        std::size_t bad = 0;
        for (std::int64_t i = 0; i < rows; ++i)
            bad += got.v[static_cast<std::size_t>(i)] != v[static_cast<std::size_t>(i)] + v[static_cast<std::size_t>(i + rows)];
        EXPECT_EQ(bad, 0u);
    }
    tvk::expect_device_clean(*gpu);
}

// Many short runs along dimension 1 (at least kReduceGroups outputs, runs shorter than
// kNarrowRunLength): kReduceLanes invocations an output, several outputs a workgroup, the last
// workgroup partly idle; every op against the reference, specials included, the same bits twice.
TEST(VulkanReduceSettings, ManyShortRunsShareAWorkgroup) {
    for (std::uint32_t wg : {64u, 256u}) {
        tandem::Config cfg = tvk::gpu_config();
        cfg.reduction_workgroup = wg;
        auto gpu = tvk::open_gpu(cfg);
        std::mt19937_64 rng(wg);
        for (const Dims& shape : {Dims{300, 4100}, Dims{257, 4099, 1}})
            for (DType t : {DType::f64, DType::f32})
                for (Op op : {Op::sum, Op::prod, Op::max, Op::argmin, Op::all}) {
                    SCOPED_TRACE(std::string(tred::name(op)) + " of " + tref::dims_str(shape) + " " + tref::dtype_str(t) +
                                 " wg " + std::to_string(wg));
                    // (A product with specials depends on its order: 0 * Inf after an underflow.)
                    const Host x = tred::random_data(shape, t, rng, op != Op::prod, op == Op::prod);
                    const Array a = tref::make_array(*gpu, x);
                    const Host got = tref::gather(tred::call(op, a, 1));
                    EXPECT_TRUE(tred::matches(got, tred::reduce(x, op, 0)));
                    const Host again = tref::gather(tred::call(op, a * 1.0, 1));
                    if (op != Op::all) EXPECT_TRUE(tref::same_values(again, got, tref::Acc::exact_signed));
                }
        tvk::expect_device_clean(*gpu);
    }
}

TEST(VulkanReduceSettings, WorkgroupBeyondTheDeviceIsAConfigError) {
    tandem::Config cfg = tvk::gpu_config();
    cfg.reduction_workgroup = 1024;
    try {
        tandem::Runtime rt(cfg);  // lavapipe allows 1024: then it works
        SUCCEED();
    } catch (const tandem::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("TANDEM_REDUCTION_WG"), std::string::npos) << e.what();
    }
    cfg.reduction_workgroup = 48;
    EXPECT_THROW(tandem::Runtime{cfg}, tandem::ConfigError);
}

TEST(VulkanReduceFused, ProducerInTheKernelAndOmitnan) {
    auto gpu = tvk::open_gpu();
    std::mt19937_64 rng(5);
    Host ha = tred::random_data({600, 40}, DType::f64, rng, true), hb = tred::random_data({600, 40}, DType::f64, rng, true);
    Array a = tref::make_array(*gpu, ha), b = tref::make_array(*gpu, hb);
    const auto m0 = gpu->metrics();
    Host got = tref::gather(tandem::sum(a * b + 1.0, 2));
    const auto m1 = gpu->metrics();
    EXPECT_EQ(m1.device_regions - m0.device_regions, 1u) << "one region on the device";
    EXPECT_EQ(m1.elements_written - m0.elements_written, 600u) << "no temporary";
    Host p = ha;
    for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = ha.v[i] * hb.v[i] + 1.0;
    EXPECT_TRUE(tred::matches(got, tred::reduce(p, Op::sum, 1)));
    Host m = tref::gather(tandem::mean(a, 1, tandem::NanFlag::omitnan));
    EXPECT_TRUE(tred::matches(m, tred::reduce(ha, Op::mean, 0, true)));
    Host v = tref::gather(tandem::var(a, 1, 1));
    ASSERT_EQ(v.v.size(), 40u);
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanReduceFused, SameBitsEveryRunAndCloseToTheCpu) {
    std::mt19937_64 rng(17);
    Host hx = tred::random_data({5000, 60}, DType::f32, rng, false);
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    for (int dim : {1, 2, -1}) {
        SCOPED_TRACE("dim " + std::to_string(dim));
        auto run = [&](tandem::Runtime& rt) {
            Array x = tref::make_array(rt, hx);
            return tref::gather(dim < 0 ? tandem::sum(tandem::sin(x) * 2.0f, tandem::all_dims)
                                        : tandem::sum(tandem::sin(x) * 2.0f, dim));
        };
        const Host g1 = run(*gpu), g2 = run(*gpu), c = run(cpu);
        ASSERT_EQ(g1.v.size(), g2.v.size());
        for (std::size_t i = 0; i < g1.v.size(); ++i) {
            EXPECT_EQ(std::bit_cast<std::uint64_t>(g1.v[i]), std::bit_cast<std::uint64_t>(g2.v[i])) << i;
            EXPECT_NEAR(g1.v[i], c.v[i], 1e-4 * (1.0 + std::fabs(c.v[i]))) << i;
        }
    }
    tvk::expect_device_clean(*gpu);
}

// Placement never changes a sum: the device adds in the canonical order of graph/reduce_order.hpp,
// the CPU's, bit for bit -- every layout (contiguous, strided, a chunk, several, several levels of
// partials), fused producers, float data, products, mean, every workgroup size and both trees.
TEST(VulkanReduceFused, SumsAndProductsAreTheCpusBits) {
    {
        auto gpu = tvk::open_gpu();
        const std::vector<double> d{1e16, 1.0, -1e16};
        const Array x = gpu->array(std::span<const double>(d));
        tred::expect_bits(tandem::sum(x), {1.0});  // lanes 0, 1, 2; the tree adds lane 2 to lane 0 first
    }
    struct Case {
        std::uint32_t wg;
        bool subgroups;
        std::int64_t threads;  // strided: 1 = kStridedLanes lanes an invocation, 2^40 = one lane each
    };
    std::mt19937_64 rng(23);
    tandem::Runtime cpu(tvk::cpu_config());
    for (const Case& c : {Case{256, true, 0}, Case{32, false, std::int64_t{1} << 40}, Case{1024, true, 1},
                          Case{64, false, 40000}, Case{256, false, std::int64_t{1} << 40}}) {
        tandem::Config cfg = tvk::gpu_config();
        cfg.reduction_workgroup = c.wg;
        cfg.vulkan_subgroups = c.subgroups;
        cfg.reduction_threads = c.threads;
        auto gpu = tvk::open_gpu(cfg);
        const std::vector<Dims> shapes = c.wg == 256 ? std::vector<Dims>{Dims{3000, 70}, Dims{70, 3000}, Dims{7, 20}, Dims{33, 5, 130},
                                                                         Dims{3, 1100000}, Dims{1100000, 2}, Dims{1, 1}, Dims{6, 2}, Dims{5, 3}, Dims{8000, 3}, Dims{5000, 2}, Dims{8193, 2}}
                                                     : std::vector<Dims>{Dims{3000, 70}, Dims{33, 5, 130}, Dims{2, 40000}};
        for (const Dims& d : shapes) {
            SCOPED_TRACE(tref::dims_str(d) + " wg " + std::to_string(c.wg) + (c.subgroups ? " subgroups" : " tree") +
                         " threads " + std::to_string(c.threads));
            const Host hx = tred::random_data(d, DType::f64, rng, false);
            const std::int64_t n = tref::numel(d), rows = d[0], cols = d[1], outer2 = n / (rows * cols);
            std::vector<double> hy(hx.v.size()), hf(hx.v.size());
            for (std::size_t i = 0; i < hy.size(); ++i) {
                hy[i] = hx.v[i] * 1e-3 + 1.0;
                hf[i] = static_cast<double>(static_cast<float>(hx.v[i]));
            }
            for (tandem::Runtime* rt : {gpu.get(), &cpu}) {
                const Array x = tref::make_array(*rt, hx);
                const Array y = x * 1e-3 + 1.0;  // fused into the reduction
                tred::expect_bits(tandem::sum(x, 1), tred::canonical(hx.v, 1, rows, n / rows, false));
                tred::expect_bits(tandem::sum(x, 2), tred::canonical(hx.v, rows, cols, outer2, false));
                tred::expect_bits(tandem::sum(x, tandem::all_dims), tred::canonical(hx.v, 1, n, 1, false));
                tred::expect_bits(tandem::prod(y, 1), tred::canonical(hy, 1, rows, n / rows, true));
                tred::expect_bits(tandem::prod(y, 2), tred::canonical(hy, rows, cols, outer2, true));
                std::vector<double> want_f = tred::canonical(hf, rows, cols, outer2, false);
                for (double& v : want_f) v = static_cast<double>(static_cast<float>(v));
                tred::expect_bits(tandem::sum(tandem::single(x), 2), want_f);
            }
            tred::expect_bits(tandem::mean(tref::make_array(*gpu, hx), 2), tref::gather(tandem::mean(tref::make_array(cpu, hx), 2)).v);
        }
        tvk::expect_device_clean(*gpu);
    }
}

TEST(VulkanReduceFused, NanToLogicalInsideAReductionFailsItsFuture) {
    auto gpu = tvk::open_gpu();
    std::vector<double> d(3000, 1.0);
    d[1234] = NAN;
    Array x = gpu->array(std::span<const double>(d));
    EXPECT_THROW(tandem::any(tandem::logical(x) & (x > 0.0)).gather().get(), tandem::ValueError);
    // the runtime goes on
    EXPECT_EQ(tref::gather(tandem::sum(tandem::isnan(x) * 2.0)).v.at(0), 2.0);
    const auto m = gpu->metrics();
    EXPECT_EQ(m.validation_messages, 0u);
}

}  // namespace

// Reductions' tails on the device (tail_cases.hpp): the tail runs in the reduce kernel (every plan:
// short and long contiguous runs, strided outputs, two passes) and gives the bits of the same
// program with fusion off on the device; the CPU's within the reduction-order bound.
TEST(VulkanReduceTail, WorkOnTheResultsAloneIsTheReductionsTail) {
    std::mt19937_64 rng(37);
    auto gpu = tvk::open_gpu();
    auto plain = tvk::open_gpu(tvk::unfused_gpu_config());
    Runtime cpu(tvk::cpu_config());
    for (const DType t : {DType::f64, DType::f32})
        for (const Dims& shape : ttail::shapes()) {
            const Host x = tred::random_data(shape, t, rng, /*specials=*/true);
            const Array xg = tref::make_array(*gpu, x), xp = tref::make_array(*plain, x), xc = tref::make_array(cpu, x);
            gpu->evaluate({xg}).get();
            for (const ttail::Case& c : ttail::cases()) {
                SCOPED_TRACE(c.name + " of " + tref::dims_str(shape) + " " + tref::dtype_str(t));
                const auto before = gpu->metrics();
                const Host got = tref::gather(c.f(xg));
                if (x.numel() > 0) {
                    EXPECT_EQ(gpu->metrics().device_regions - before.device_regions, c.regions);
                }
                EXPECT_TRUE(tref::same_values(got, tref::gather(c.f(xp)), tref::Acc::exact_signed));
                // Sums in another order than the CPU's: NaN and Inf where the CPU has them.
                const Host want = tref::gather(c.f(xc));
                ASSERT_EQ(got.v.size(), want.v.size());
                for (std::size_t k = 0; k < want.v.size(); ++k) {
                    const double g = got.v[k], w = want.v[k];
                    if (std::isnan(w) || std::isinf(w)) {
                        EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << "[" << k << "] " << g << " vs " << w;
                    } else {
                        EXPECT_NEAR(g, w, (t == DType::f32 ? 1e-3 : 1e-9) * (1.0 + std::abs(w))) << "[" << k << "]";
                    }
                }
            }
        }
    tvk::expect_device_clean(*gpu);
    tvk::expect_device_clean(*plain);
}
