// Lineage: a value that lived only on a device that is then lost is computed again on the CPU,
// from the operations that produced it (the recipe its node keeps instead of its operands). The
// device is lost by Config::test_fault = "device_lost_later:N" when its Nth batch completes;
// each step of a program is evaluated (left on the device) in a batch of its own, so the loss
// comes after results that exist nowhere else. After it every value -- the step that failed,
// the steps before it, the steps after it, gathered or read by later work -- equals a CPU
// runtime's bit for bit, nothing fails, and the message says so once (lavapipe, validation on).
//
// Long loops keep bounded recipes: past 1024 device regions on a chain a result also comes back
// with its batch (a checkpoint), and a loss recomputes from there.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "random_trees.hpp"
#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tref::Acc;
using tref::Host;

namespace {

using tvk::cpu_config;
using tvk::gpu_config;
using tvk::open_gpu;

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

tandem::Config losing_config(int batch) {
    tandem::Config c = gpu_config();
    c.test_fault = "device_lost_later:" + std::to_string(batch);
    c.region_records = 4096;
    return c;
}

/// A program of every region kind, step by step: elementwise with broadcasting and special
/// values, a reduction, a scan, a transpose, random numbers, a matrix product, single precision,
/// a reduction over all.
std::vector<Array> staged_program(Runtime& rt, const Host& ha, const Host& hb, const Host& hf) {
    Array a = tref::make_array(rt, ha), b = tref::make_array(rt, hb), f = tref::make_array(rt, hf);
    Array x = tandem::exp(a * 0.01) * b + tandem::sin(b);
    Array s = tandem::sum(x, 1);
    Array c = tandem::cumsum(x, 2) - s;
    Array t = tandem::transpose(c);
    Array r = tandem::rand(rt, t.shape()) + t * 0.5;
    Array m = tandem::matmul(r, x);
    Array y = f * tandem::single(t) + 1.0f;
    Array z = tandem::sum(y, tandem::all_dims) + tandem::sum(m, tandem::all_dims);
    return {x, s, c, t, r, m, y, z};
}

class VulkanLineage : public ::testing::TestWithParam<int> {};

// The device is lost when the Nth step's batch completes: the steps before it lived only there.
TEST_P(VulkanLineage, ValuesOnlyOnALostDeviceAreComputedAgain) {
    const int lost_at = GetParam();
    std::mt19937_64 rng(4100 + static_cast<std::uint64_t>(lost_at));
    const Host ha = tref::random_host({37, 23}, DType::f64, rng);  // NaN, Inf, -0 among them
    const Host hb = tref::random_host({37, 1}, DType::f64, rng);
    const Host hf = tref::random_host({23, 37}, DType::f32, rng);
    testing::internal::CaptureStderr();
    std::unique_ptr<Runtime> gpu;
    try {
        gpu = open_gpu(losing_config(lost_at));
    } catch (...) {
        std::cerr << testing::internal::GetCapturedStderr();
        throw;
    }
    Runtime cpu(cpu_config());
    const std::vector<Array> steps = staged_program(*gpu, ha, hb, hf);
    for (std::size_t k = 0; k < steps.size(); ++k) {
        try {
            gpu->evaluate({steps[k]}).get();  // a batch each; the results stay on the device
        } catch (const std::exception& e) {
            ADD_FAILURE() << "step " << k << " threw: " << e.what();
        }
    }
    std::vector<tandem::HostArray> got;
    try {
        got = gpu->gather(steps).get();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "the gather after the loss threw: " << e.what();
    }
    gpu->wait_idle();
    const std::string err = testing::internal::GetCapturedStderr();
    const auto want = cpu.gather(staged_program(cpu, ha, hb, hf)).get();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
            << "step " << k;
    const auto m = gpu->metrics();
    EXPECT_GE(m.values_recomputed, 1u) << "the steps before the loss lived only on the device";
    EXPECT_EQ(m.regions_failed, 0u);
    EXPECT_EQ(m.validation_messages, 0u) << err;
    EXPECT_EQ(occurrences(err, "computed again on the CPU"), 1u) << "said once:\n" << err;
    // Nothing that lived on the device before the loss ran there again.
    std::size_t on_device_after = 0, seen_cpu = 0;
    for (const auto& rec : gpu->region_records()) {
        if (rec.executor == "cpu") ++seen_cpu;
        else if (seen_cpu > 0 && !rec.fell_back && !rec.failed) ++on_device_after;
    }
    EXPECT_EQ(on_device_after, 0u) << "a region ran on the lost device";
}

INSTANTIATE_TEST_SUITE_P(VulkanLineage, VulkanLineage, ::testing::Values(2, 4, 6, 8),
                         [](const auto& p) { return "lost_at_batch_" + std::to_string(p.param); });

// Random trees (every exact op, special values, shared subexpressions), each node evaluated on
// the device in its own batch, the device lost partway: every node gathered afterwards has the
// CPU's bits.
TEST(VulkanLineageTrees, RandomTreesEvaluatedNodeByNodeSurviveTheLoss) {
    const ttree::ShapeSet shapes{"9x7x3", {{9, 7, 3}, {9, 1, 3}, {1, 7, 1}, {1, 1}, {9, 7}, {1, 7, 3}}};
    const ttree::Family family{ttree::Style::mixed,
                               {"uminus", "abs", "sqrt", "floor", "round", "sign", "isnan", "single", "double"},
                               {"plus", "minus", "times", "rdivide", "mod", "min", "max"}};
    int recomputed_trees = 0;
    for (int it = 0; it < 8; ++it) {
        const std::uint64_t seed = 43000 + static_cast<std::uint64_t>(it);
        ttree::Generator gen(seed, family);
        const ttree::Tree t = gen.make(shapes, 4 + it % 4);
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + t.describe());
        std::vector<int> order;  // the tree's array nodes, operands first (Tree::nodes is built so)
        for (int i = 0; i < static_cast<int>(t.nodes.size()); ++i)
            if (t.nodes[static_cast<std::size_t>(i)].kind != ttree::Kind::number &&
                t.nodes[static_cast<std::size_t>(i)].kind != ttree::Kind::leaf)
                order.push_back(i);
        testing::internal::CaptureStderr();
        auto gpu = open_gpu(losing_config(2 + it % 5));
        Runtime cpu(cpu_config());
        ttree::Built bg(*gpu, t), bc(cpu, t);
        std::vector<Array> ga, ca;
        for (int i : order) {
            ga.push_back(bg.array(i));
            ca.push_back(bc.array(i));
            try {
                gpu->evaluate({ga.back()}).get();
            } catch (const std::exception& e) {
                ADD_FAILURE() << "node " << i << " threw: " << e.what();
            }
        }
        std::vector<tandem::HostArray> got;
        try {
            got = gpu->gather(ga).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
        }
        gpu->wait_idle();
        const std::string err = testing::internal::GetCapturedStderr();
        const auto want = cpu.gather(ca).get();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << "node " << order[k];
        const auto m = gpu->metrics();
        EXPECT_EQ(m.regions_failed, 0u);
        EXPECT_EQ(m.validation_messages, 0u) << err;
        recomputed_trees += m.values_recomputed > 0 ? 1 : 0;
        if (::testing::Test::HasFailure()) break;
    }
    EXPECT_GE(recomputed_trees, 4) << "most trees should have lost device-only values";
}

// The loss found by a download itself (the device seemed fine when the plan was made): a gather
// of device-only values plans them again, and a CPU region that reads one waits for it to be
// computed again.
TEST(VulkanLineage, ALossFoundByADownloadIsRecoveredToo) {
    std::mt19937_64 rng(4200);
    const Host ha = tref::random_host({41, 17}, DType::f64, rng);
    const Host hb = tref::random_host({41, 17}, DType::f64, rng);
    auto program = [&](Runtime& rt) {
        Array a = tref::make_array(rt, ha), b = tref::make_array(rt, hb);
        Array x = tandem::cos(a) * b - tandem::floor(b * 3.0);
        Array y = tandem::sum(x, 1);
        return std::vector<Array>{x, y, y * 2.0 + 1.0};
    };
    Runtime cpu(cpu_config());
    const auto want = cpu.gather(program(cpu)).get();
    for (const bool gathered : {true, false}) {
        SCOPED_TRACE(gathered ? "the values gathered" : "a CPU region reads one");
        tandem::Config c = gpu_config();
        c.test_fault = "device_lost_in_download";
        c.device_min_elements = 100;  // the 1x17 region of the third value runs on the CPU
        testing::internal::CaptureStderr();
        auto gpu = open_gpu(c);
        const std::vector<Array> g = program(*gpu);
        std::vector<tandem::HostArray> got;
        try {
            gpu->evaluate({g[0], g[1]}).get();  // both stay on the device
            if (gathered) {
                got = gpu->gather({g[0], g[1]}).get();
            } else {
                got = gpu->gather({g[2]}).get();  // its region downloads y first
                auto rest = gpu->gather({g[0], g[1]}).get();
                got.insert(got.begin(), rest.begin(), rest.end());
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << "threw: " << e.what();
        }
        gpu->wait_idle();
        const std::string err = testing::internal::GetCapturedStderr();
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << "value " << k;
        const auto m = gpu->metrics();
        EXPECT_GE(m.values_recomputed, 1u);
        EXPECT_EQ(m.regions_failed, 0u);
        EXPECT_EQ(m.validation_messages, 0u) << err;
        EXPECT_EQ(occurrences(err, "computed again on the CPU"), 1u) << err;
    }
}

// An intermediate result (only its plan refers to it) keeps no recipe, so building the same
// expression again while that plan runs must not find it: a new node is computed, with its own.
TEST(VulkanLineage, AnExpressionBuiltAgainDoesNotFindAnIntermediateWithoutARecipe) {
    std::mt19937_64 rng(4300);
    const Host hx = tref::random_host({300, 40}, DType::f64, rng);
    testing::internal::CaptureStderr();
    auto gpu = open_gpu(losing_config(3));
    Runtime cpu(cpu_config());
    Array x = tref::make_array(*gpu, hx);
    Array z = tandem::cumsum(x, 1) + 1.0;  // the scan's result: an intermediate of z's plan
    auto f = gpu->evaluate({z});
    Array y = tandem::cumsum(x, 1);  // the same expression, built while that plan runs
    std::vector<tandem::HostArray> got;
    try {
        f.get();
        gpu->evaluate({y * 2.0}).get();  // batch 2
        Array w = y + 3.0;
        gpu->evaluate({w}).get();  // batch 3: the device is lost, w runs on the CPU, from y
        got = gpu->gather({y, z, w}).get();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
    }
    gpu->wait_idle();
    const std::string err = testing::internal::GetCapturedStderr();
    Array cx = tref::make_array(cpu, hx);
    const auto want = cpu.gather({tandem::cumsum(cx, 1), tandem::cumsum(cx, 1) + 1.0, tandem::cumsum(cx, 1) + 3.0}).get();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed));
    EXPECT_GE(gpu->metrics().values_recomputed, 1u);
    EXPECT_EQ(gpu->metrics().regions_failed, 0u);
    EXPECT_EQ(gpu->metrics().validation_messages, 0u) << err;
}

// A loop longer than the checkpoint depth: results come back now and then, and a loss
// recomputes only the steps since the last checkpoint (the recipes a loop keeps are bounded).
TEST(VulkanLineageLoops, ALongLoopRecomputesFromItsLastCheckpoint) {
    constexpr int kSteps = 1100;  // past one checkpoint (1024 device regions on the chain)
    tandem::Config c = losing_config(kSteps);  // lost when the last step completes
    testing::internal::CaptureStderr();
    auto gpu = open_gpu(c);
    Runtime cpu(cpu_config());
    std::vector<double> start(300);
    for (std::size_t i = 0; i < start.size(); ++i) start[i] = static_cast<double>(i) - 150.5;
    start[7] = tref::kNaN;
    Array x = gpu->array(std::span<const double>(start));
    Array w = cpu.array(std::span<const double>(start));
    for (int k = 0; k < kSteps; ++k) {
        x = x * 0.75 + tandem::sin(x) * 0.125;
        w = w * 0.75 + tandem::sin(w) * 0.125;
        try {
            gpu->evaluate({x}).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "step " << k << " threw: " << e.what();
            break;
        }
    }
    tandem::HostArray got;
    try {
        got = x.gather().get();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "gather threw: " << e.what();
    }
    gpu->wait_idle();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(tref::same_values(tref::from_host_array(got), tref::from_host_array(w.gather().get()), Acc::exact_signed));
    const auto m = gpu->metrics();
    EXPECT_GE(m.lineage_checkpoints, 1u);
    EXPECT_LE(m.lineage_checkpoints, 2u) << "a checkpoint per 1024 device regions on the chain";
    EXPECT_GE(m.values_recomputed, 1u);
    EXPECT_EQ(m.validation_messages, 0u) << err;
    std::size_t on_cpu = 0;
    for (const auto& rec : gpu->region_records()) on_cpu += rec.executor == "cpu" ? 1 : 0;
    EXPECT_GE(on_cpu, 1u);
    EXPECT_LE(on_cpu, static_cast<std::size_t>(kSteps - 1024 + 2)) << "recomputed from before the checkpoint";
}

}  // namespace

// A small value the user keeps at the end of a long chain of one plan (a power iteration's
// vector) comes back to the host with its batch instead of keeping a recipe that copies the
// chain; at the end of a short chain it keeps its recipe and stays on the device alone.
TEST(VulkanLineage, ASmallValueAtTheEndOfALongChainComesBackInsteadOfARecipe) {
    auto gpu = open_gpu(gpu_config());
    Runtime cpu(cpu_config());
    auto chain = [](Runtime& rt, int steps) {
        std::vector<double> start(256);
        for (std::size_t i = 0; i < start.size(); ++i) start[i] = static_cast<double>(i % 17) - 8.25;
        start[3] = -0.0;
        Array v = rt.array(std::span<const double>(start));
        for (int k = 0; k < steps; ++k) v = v / tandem::norm(v) * 2.0 + 0.5;  // the norm's reductions cut regions
        return v;
    };
    Array short_v = chain(*gpu, 2);
    auto before = gpu->metrics();
    gpu->evaluate({short_v}).get();
    gpu->wait_idle();
    EXPECT_EQ(gpu->metrics().download_bytes, before.download_bytes) << "a short chain's end stays on the device";
    Array long_v = chain(*gpu, 60);
    before = gpu->metrics();
    gpu->evaluate({long_v}).get();
    gpu->wait_idle();
    const auto after = gpu->metrics();
    EXPECT_GE(after.download_bytes - before.download_bytes, 256u * 8) << "a long chain's small end came back";
    EXPECT_TRUE(tref::same_values(tref::gather(long_v), tref::gather(chain(cpu, 60)), Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(tref::gather(short_v), tref::gather(chain(cpu, 2)), Acc::exact_signed));
    tvk::expect_device_clean(*gpu);
}
