// User kernels on the Vulkan device (lavapipe in CI, the validation layer on): the GLSL bodies
// (tests/kernel_cases.hpp), what moves and what does not, and the device's own faults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "kernel_cases.hpp"
#include "vulkan_runtime.hpp"

namespace fs = std::filesystem;

namespace {

/// The groups ran on the device, none fell back, the validation layer said nothing (for cases
/// whose data is made on the device: nothing to upload).
void expect_kernels_on_device(tandem::Runtime& rt) {
    rt.wait_idle();
    const auto m = rt.metrics();
    EXPECT_GT(m.device_regions, 0u);
    EXPECT_EQ(m.device_fallbacks, 0u);
    EXPECT_EQ(m.validation_messages, 0u) << "the Vulkan validation layer reported problems (see stderr)";
}

}  // namespace

TEST(VulkanKernel, ElementwiseWithSpecialValues) {
    auto rt = tvk::open_gpu();
    kernel_cases::elementwise_with_specials(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, DependencyKinds) {
    auto rt = tvk::open_gpu();
    kernel_cases::dependency_kinds(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, ReadWriteInPlace) {
    auto rt = tvk::open_gpu();
    kernel_cases::read_write_in_place(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, InteropWithArrays) {
    auto rt = tvk::open_gpu();
    kernel_cases::interop_with_arrays(*rt);
    expect_kernels_on_device(*rt);
}

TEST(VulkanKernel, HostTaskAndHostAccessor) {
    auto rt = tvk::open_gpu();
    kernel_cases::host_task_and_host_accessor(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, ExplicitAndInOrderDependencies) {
    auto rt = tvk::open_gpu();
    kernel_cases::explicit_and_in_order_dependencies(*rt);
}

TEST(VulkanKernel, ThrowingBodyPoisonsDependantsOnly) {
    auto rt = tvk::open_gpu();
    kernel_cases::throwing_body_poisons_dependants_only(*rt);
}

TEST(VulkanKernel, BadInputIsRefusedAtSubmit) {
    auto rt = tvk::open_gpu();
    kernel_cases::bad_input_is_refused_at_submit(*rt);
}

TEST(VulkanKernel, BufferOutlivingItsRuntime) { kernel_cases::buffer_outliving_its_runtime(tvk::gpu_config()); }

namespace {

using kernel_cases::Buffer;
using kernel_cases::Handler;
using kernel_cases::Item;
using kernel_cases::Kernel;
using kernel_cases::Queue;
using kernel_cases::Range;
using kernel_cases::Shape;
namespace access = tandem::access;

/// y(i, j) = x(i, j) + 1 with a mistake on the body's second line (both bodies, or GLSL only).
const Kernel& broken() {
    static const Kernel k = Kernel("broken").accessors({"x", "y"}).glsl(
        "double v = x(item.x, item.y);\n"
        "y(item.x, item.y) = v + undeclared_thing;\n");
    return k;
}

}  // namespace

TEST(VulkanKernel, WriteAndNoInitTransferNothing) {
    // The old contents of a buffer the group only writes never go up: what is uploaded is what
    // the groups read, counted by the device.
    auto rt = tvk::open_gpu();
    const std::int64_t m = 256, n = 128;
    const std::uint64_t bytes = static_cast<std::uint64_t>(m * n) * 8;
    Buffer x(*rt, std::vector<double>(static_cast<std::size_t>(m * n), 2.0), Shape{m, n}, "x");
    Buffer y(*rt, std::vector<double>(static_cast<std::size_t>(m * n), -1.0), Shape{m, n}, "y");  // on the host
    Queue q(*rt);
    kernel_cases::submit_axpb(q, x, y, 3.0, 0.0, /*no_init=*/false);  // access::write
    q.wait();
    EXPECT_EQ(rt->metrics().upload_bytes, bytes) << "only x went up";
    static const Kernel fill = Kernel("fill").accessors({"y"}).glsl("y(item.x, item.y) = 5.0;");
    q.submit([&](Handler& h) {
        h.require(y, access::read_write, tandem::no_init);
        h.parallel_for(Range(m, n), fill);
    });
    q.wait();
    EXPECT_EQ(rt->metrics().upload_bytes, bytes) << "read_write with no_init uploaded the old contents";
    const auto v = kernel_cases::values(y);
    EXPECT_EQ(v.front(), 5.0);
    EXPECT_EQ(v.back(), 5.0);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, CompileErrorWithACppBodyRunsOnTheCpu) {
    auto rt = tvk::open_gpu();
    const std::int64_t n = 300;
    Buffer x(*rt, kernel_cases::specials(n, 9), Shape{n, 1}, "x");
    Buffer y(*rt, Shape{n, 1}, tandem::DType::f64, "y");
    Queue q(*rt);
    q.submit([&](Handler& h) {
        auto in = h.require<double>(x, access::read);
        auto out = h.require<double>(y, access::write);
        h.parallel_for(Range(n, 1), broken(), [=](Item it) { out[it] = in[it] + 1.0; });
    });
    q.wait();
    std::vector<double> want = kernel_cases::specials(n, 9);
    for (double& w : want) w += 1.0;
    kernel_cases::expect_values(kernel_cases::values(y), want, 0, "run on the CPU instead");
    EXPECT_EQ(rt->metrics().device_fallbacks, 1u);
    EXPECT_EQ(rt->metrics().validation_messages, 0u);
}

TEST(VulkanKernel, CompileErrorOfAGlslOnlyKernelArrivesThroughItsEvent) {
    auto rt = tvk::open_gpu();
    const std::int64_t n = 300;
    Buffer x(*rt, kernel_cases::specials(n, 9), Shape{n, 1}, "x");
    Buffer y(*rt, Shape{n, 1}, tandem::DType::f64, "y");
    Queue q(*rt);
    auto ev = q.submit([&](Handler& h) {
        h.require(x, access::read);
        h.require(y, access::write);
        h.parallel_for(Range(n, 1), broken());
    });
    try {
        ev.wait();
        ADD_FAILURE() << "a GLSL body that does not compile ran";
    } catch (const tandem::KernelCompileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("kernel 'broken'"), std::string::npos) << what;
        EXPECT_NE(what.find("line 2"), std::string::npos) << what;
        EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << what;
    }
    EXPECT_THROW(y.array().gather().get(), tandem::KernelCompileError) << "its output is poisoned";
    EXPECT_EQ(rt->metrics().validation_messages, 0u);
}

TEST(VulkanKernel, WritingThroughAReadAccessorDoesNotCompile) {
    auto rt = tvk::open_gpu();
    Buffer x(*rt, std::vector<double>(64, 1.0), Shape{8, 8}, "x");
    Buffer y(*rt, Shape{8, 8}, tandem::DType::f64, "y");
    static const Kernel k = Kernel("writes_its_input").accessors({"x", "y"}).glsl(
        "y(item.x, item.y) = 1.0;\nx(item.x, item.y) = 2.0;\n");
    Queue q(*rt);
    auto ev = q.submit([&](Handler& h) {
        h.require(x, access::read);
        h.require(y, access::write);
        h.parallel_for(Range(8, 8), k);
    });
    try {
        ev.wait();
        ADD_FAILURE() << "a write through a read accessor compiled";
    } catch (const tandem::KernelCompileError& e) {
        EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
    // (In C++ the read accessor's elements are const: `in[it] = 1` does not compile.)
    static_assert(std::is_same_v<tandem::Accessor<double, tandem::AccessMode::read>::reference, const double&>);
}

TEST(VulkanKernel, DeviceLostMidGroupFinishesOnTheCpuOrFailsClearly) {
    tandem::Config c = tvk::gpu_config();
    c.test_fault = "device_lost_later:1";  // lost when its first batch completes
    auto rt = tvk::open_gpu(c);
    const std::int64_t m = 64, n = 64;
    auto xs = kernel_cases::specials(m * n, 11);
    Buffer x(*rt, std::span<const double>(xs), Shape{m, n}, "x");
    Buffer y(*rt, Shape{m, n}, tandem::DType::f64, "y");
    Buffer z(*rt, Shape{m, n}, tandem::DType::f64, "z");
    Queue q(*rt);
    kernel_cases::submit_axpb(q, x, y, 2.0, 1.0);  // both bodies: finishes on the CPU
    q.wait();
    std::vector<double> want(xs);
    for (double& w : want) w = 2.0 * w + 1.0;
    kernel_cases::expect_values(kernel_cases::values(y), want, 4e-16, "finished on the CPU");
    static const Kernel copy = Kernel("copy_only_on_device").accessors({"y", "z"}).glsl("z(item.x, item.y) = y(item.x, item.y);");
    auto ev = q.submit([&](Handler& h) {  // GLSL only, the device gone: a clear error
        h.require(y, access::read);
        h.require(z, access::write);
        h.parallel_for(Range(m, n), copy);
    });
    try {
        ev.wait();
        ADD_FAILURE() << "a GLSL-only kernel ran without its device";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("copy_only_on_device"), std::string::npos) << e.what();
    }
}

TEST(VulkanKernel, IndependentGroupsRunOnTheCpuAndTheDeviceAtOnce) {
    // A GLSL-only group (the device) and a C++-only one (the CPU), no buffer in common: the trace
    // shows them overlapping, not only both done.
    const fs::path file = fs::temp_directory_path() / ("tandem-kernel-trace-" + std::to_string(::getpid()) + ".json");
    {
        tandem::Config c = tvk::gpu_config();
        c.placement = "auto";
        c.trace_file = file.string();
        auto rt = tvk::open_gpu(c);
        const std::int64_t n = 1 << 14;
        Buffer a(*rt, std::vector<double>(static_cast<std::size_t>(n), 0.5), Shape{n, 1}, "a");
        Buffer b(*rt, Shape{n, 1}, tandem::DType::f64, "b");
        Buffer c2(*rt, Shape{n, 1}, tandem::DType::f64, "c");
        static const Kernel spin = Kernel("spin").accessors({"a", "b"}).scalars({"rounds"}).glsl(
            "double v = a(item.x, 0);\n"
            "for (int k = 0; k < int(rounds); ++k) v = v * 0.999 + 0.001;\n"
            "b(item.x, 0) = v;\n");
        Queue q(*rt);
        auto on_device = q.submit([&](Handler& h) {
            h.require(a, access::read);
            h.require(b, access::write);
            h.scalars({20000});
            h.parallel_for(Range(n), spin);
        });
        auto on_cpu = q.submit([&](Handler& h) {
            auto out = h.require<double>(c2, access::write);
            h.host_task([=] {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0;
            });
        });
        on_device.wait();
        on_cpu.wait();
        EXPECT_NEAR(kernel_cases::values(b)[5], 1.0 - 0.5 * std::pow(0.999, 20000), 1e-9);
        EXPECT_EQ(rt->metrics().validation_messages, 0u);
    }
    std::ifstream in(file);
    ASSERT_TRUE(in) << "no trace written to " << file;
    const nlohmann::json doc = nlohmann::json::parse(in);
    double dev_start = -1, dev_end = -1, cpu_start = -1, cpu_end = -1;
    for (const auto& e : doc.at("traceEvents")) {
        if (e.at("ph") != "X") continue;
        const std::string name = e.at("name").get<std::string>();
        const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
        if (name.find("spin") != std::string::npos) dev_start = ts, dev_end = end;
        if (name.find("host_task") != std::string::npos) cpu_start = ts, cpu_end = end;
    }
    ASSERT_GE(dev_start, 0) << doc.dump();
    ASSERT_GE(cpu_start, 0) << doc.dump();
    EXPECT_LT(std::max(dev_start, cpu_start), std::min(dev_end, cpu_end))
        << "device " << dev_start << ".." << dev_end << " us, cpu " << cpu_start << ".." << cpu_end << " us: no overlap";
    fs::remove(file);
}

TEST(VulkanKernel, ARangeBeyondOneDispatchsGridAndLogicalBuffers) {
    // 2^24 + 3 items in one dimension: more workgroups than a dispatch has a dimension, so the
    // items come from a linear index; a logical buffer's bytes through an 8-bit accessor.
    auto rt = tvk::open_gpu();
    const std::int64_t n = (std::int64_t{1} << 24) + 3;
    Buffer flags(*rt, Shape{n, 1}, tandem::DType::logical, "flags");
    static const Kernel mark = Kernel("mark_multiples_of_3").accessors({"f"}).glsl("f(item.x, 0) = uint8_t(item.x % 3u == 0u ? 1 : 0);");
    Queue q(*rt);
    q.submit([&](Handler& h) {
        auto f = h.require<std::uint8_t>(flags, access::write, tandem::no_init);
        h.parallel_for(Range(n), mark, [=](Item it) { f[it.linear] = it.linear % 3 == 0 ? 1 : 0; });
    });
    const double count = tandem::sum(flags.array(), tandem::all_dims).gather().get().at(0);
    EXPECT_EQ(count, static_cast<double>((n + 2) / 3));
    tandem::HostAccessor<std::uint8_t, tandem::AccessMode::read> h(flags);
    EXPECT_EQ(h[n - 1], (n - 1) % 3 == 0 ? 1 : 0);
    EXPECT_EQ(h[(n / 3) * 3], 1);
    expect_kernels_on_device(*rt);
}

// Large 2-D and 3-D ranges: an invocation runs 2 or 4 items along the last dimension
// (backends/vulkan/user_kernel.hpp), ragged at its end, each item whole even where the body
// returns early; the GLSL body gives the C++ body's bits (sums and differences only: nothing a
// compiler could contract).
TEST(VulkanKernel, LargeRangesRunSeveralItemsAnInvocation) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    static const Kernel k2 = Kernel("neighbours_2d").accessors({"u", "v"}).glsl(R"(
uint i = item.x, j = item.y;
if (i == 0u || j == 0u || i + 1u == range.x || j + 1u == range.y) { v(i, j) = -u(i, j); return; }
v(i, j) = u(i - 1u, j) + u(i + 1u, j) - u(i, j - 1u) + u(i, j + 1u) - u(i, j);
)");
    static const Kernel k3 = Kernel("neighbours_3d").accessors({"u", "v"}).glsl(R"(
uint i = item.x, j = item.y, k = item.z;
if (k == 0u || k + 1u == range.z) { v(i, j, k) = u(i, j, k) + 0.5; return; }
v(i, j, k) = u(i, j, k - 1u) - u(i, j, k + 1u) + u(i, j, k);
)");
    for (const Shape& s : {Shape{2048, 1100}, Shape{2048, 2053}, Shape{64, 64, 1027}}) {
        auto run = [&](tandem::Runtime& rt) {
            std::vector<double> start(static_cast<std::size_t>(s.numel()));
            for (std::size_t e = 0; e < start.size(); ++e) start[e] = static_cast<double>(static_cast<int>(e * 7 % 13) - 6);
            Buffer u(rt.array(std::span<const double>(start), s), "u"), v(rt, s, tandem::DType::f64, "v");
            Queue q(rt);
            q.submit([&](Handler& h) {
                auto a = h.require<double>(u, access::read);
                auto b = h.require<double>(v, access::write, tandem::no_init);
                const std::int64_t m = s[0], n = s[1];
                if (s.ndims() == 2)
                    h.parallel_for(Range(m, n), k2, [=](Item it) {
                        const std::int64_t i = it[0], j = it[1];
                        if (i == 0 || j == 0 || i + 1 == m || j + 1 == n) {
                            b(i, j) = -a(i, j);
                            return;
                        }
                        b(i, j) = a(i - 1, j) + a(i + 1, j) - a(i, j - 1) + a(i, j + 1) - a(i, j);
                    });
                else
                    h.parallel_for(Range(m, n, s[2]), k3, [=](Item it) {
                        const std::int64_t i = it[0], j = it[1], kk = it[2];
                        if (kk == 0 || kk + 1 == s[2]) {
                            b(i, j, kk) = a(i, j, kk) + 0.5;
                            return;
                        }
                        b(i, j, kk) = a(i, j, kk - 1) - a(i, j, kk + 1) + a(i, j, kk);
                    });
            });
            return v.array().gather().get();
        };
        const tandem::HostArray got = run(*gpu), want = run(cpu);
        ASSERT_EQ(got.shape(), want.shape());
        const double* g = got.data<double>();
        const double* w = want.data<double>();
        std::int64_t bad = 0, first = -1;
        for (std::int64_t e = 0; e < s.numel(); ++e)
            if (std::memcmp(g + e, w + e, sizeof(double)) != 0 && bad++ == 0) first = e;
        EXPECT_EQ(bad, 0) << s.to_string() << ": first difference at " << first;
    }
    expect_kernels_on_device(*gpu);
}
