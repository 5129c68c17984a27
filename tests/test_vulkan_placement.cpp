// Placement with a device, end to end (lavapipe here). A runtime with automatic placement reads
// the calibration file for its machine (calibrate/calibration_file.hpp): its rates decide
// placement, `tandem info` names the file; a file of another machine leaves the built-in
// defaults, and what a runtime learned from its runs is kept there for the next. TANDEM_TRACE
// records the regions of both executors, the copies and the kernel builds.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include "calibrate/calibration_file.hpp"
#include "reference.hpp"
#include "tandem/calibration.hpp"
#include "runtime/runtime_impl.hpp"
#include "vulkan_runtime.hpp"

namespace fs = std::filesystem;
using namespace tandem::detail;

namespace {

/// A calibration of this machine (the key and device identity of a runtime opened with `c`, which
/// has no file yet: `probe_placement` gets its placement text) with a discrete GPU's default rates
/// and a link of next to no latency.
Calibration discrete_gpu_calibration(const tandem::Config& c, std::string* probe_placement = nullptr) {
    auto probe = tvk::open_gpu(c);
    if (probe_placement) *probe_placement = probe->info().placement;
    RuntimeImpl& impl = probe->impl();
    Calibration cal;
    cal.machine = machine_key(impl.topology(), impl.threads());
    cal.created_unix_s = 1'790'000'000;
    cal.profile = default_machine_profile(cal.machine.cpu_threads, {DeviceClass::discrete_gpu});
    cal.profile.devices[0].identity = impl.device()->identity();
    cal.profile.devices[0].link.sync_s = 1e-6;
    cal.profile.devices[0].link.latency_s = 1e-7;
    return cal;
}

/// A calibration file of the test's own in a temporary folder (removed at the end), and a config
/// with automatic placement that reads it.
struct CalibrationDir {
    explicit CalibrationDir(const std::string& name)
        : dir(fs::temp_directory_path() / ("tandem-vk-" + name + "-" + std::to_string(::getpid()))) {
        fs::create_directories(dir);
        config.placement = "auto";
        config.calibration_file = path();
    }
    ~CalibrationDir() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    std::string path() const { return (dir / "calibration.json").string(); }
    fs::path dir;
    tandem::Config config = tvk::gpu_config();
};

/// discrete_gpu_calibration with a CPU so slow that every region wins on the device.
Calibration device_wins_calibration(const tandem::Config& c) {
    Calibration cal = discrete_gpu_calibration(c);
    for (auto& rate : cal.profile.cpu.ops_per_s) rate = {1e7, 1e7};
    cal.profile.cpu.flops_per_s = {1e7, 1e7};
    return cal;
}

}  // namespace

TEST(VulkanCalibration, TheRuntimeReadsItsMachinesCalibration) {
    const fs::path dir = fs::temp_directory_path() / ("tandem-vk-calibration-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "calibration.json").string();
    tandem::Config c = tvk::gpu_config();
    c.placement = "auto";
    c.calibration_file = path;
    // A calibration that makes the device far faster than the CPU: even a small region goes there.
    std::string defaults;
    Calibration cal = discrete_gpu_calibration(c, &defaults);
    EXPECT_NE(defaults.find("built-in defaults"), std::string::npos) << "no file yet: " << defaults;
    // and a CPU far slower than any (a host of many cores would otherwise win a small region),
    // though faster than a kernel's build (the first run's CPU time: 1 ms, the build's 50 ms)
    cal.profile.cpu.ops_per_s[static_cast<std::size_t>(CostClass::transcendental)] = {1e8, 1e8};
    write_calibration(cal, path);
    {
        auto rt = tvk::open_gpu(c);
        EXPECT_NE(rt->info().placement.find("calibration " + path), std::string::npos) << rt->info().placement;
        std::vector<double> v(100000, 0.5);
        auto x = rt->array(std::span<const double>(v), tandem::Shape{100000, 1});
        // The first run goes to the CPU while the device's kernel builds in the background (a
        // cold pipeline costs more than this region); once built, the calibrated rates put the
        // region on the device.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        do {
            auto h = tandem::sum(tandem::exp(x)).gather().get();
            EXPECT_NEAR(h.at(0), 100000 * std::exp(0.5), 1e-6);
        } while (rt->metrics().device_regions == 0 && std::chrono::steady_clock::now() < until);
        EXPECT_GT(rt->metrics().device_regions, 0u) << "the calibrated rates put it on the device";
        EXPECT_EQ(rt->metrics().pipelines_built_ahead, 2u) << "its kernel and its split's second pass, built while the CPU ran it";
    }
    // The same file for another machine: ignored, the defaults (which keep work off lavapipe).
    cal.machine.cpu_threads += 1;
    write_calibration(cal, path);
    {
        auto rt = tvk::open_gpu(c);
        EXPECT_NE(rt->info().placement.find("cannot be used"), std::string::npos) << rt->info().placement;
        std::vector<double> v(100000, 0.5);
        auto x = rt->array(std::span<const double>(v), tandem::Shape{100000, 1});
        (void)tandem::sum(tandem::exp(x)).gather().get();
        if (rt->impl().device()->device_class() == DeviceClass::cpu_device)
            EXPECT_EQ(rt->metrics().device_regions, 0u) << "lavapipe's default rates keep this on the CPU";
    }
    fs::remove_all(dir);
}

TEST(VulkanCalibration, AProgramBuiltAgainFormsNoKernelAgain) {
    // A region's generated kernel is worked out once on a device (how it reads its inputs, the
    // signature naming it): placement's question whether it is built and the recording share
    // it, and a program built again, fused from the cache, shares the first run's.
    CalibrationDir calibration("forms");
    tandem::Config& c = calibration.config;
    c.placement_learning = false;  // the calibrated rates alone: the device wins every region
    write_calibration(device_wins_calibration(c), calibration.path());
    auto gpu = tvk::open_gpu(c);
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("kernels formed once"));
    const tref::Host hu = tref::random_host({32, 32}, tandem::DType::f64, rng);
    auto heat = [](tandem::Runtime& rt, const tref::Host& u0) {
        tandem::Array u = tref::make_array(rt, u0);
        for (int i = 0; i < 20; ++i)
            u = u + 0.1 * (tandem::circshift(u, 1, 1) + tandem::circshift(u, -1, 2) - 2.0 * u);
        return tandem::sum(u * u);
    };
    const tref::Host expected = tref::gather(heat(cpu, hu));
    // The first runs go to the CPU while the kernels build in the background.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::uint64_t regions = 0, on_device = 0;
    do {
        const auto before = gpu->metrics();
        EXPECT_TRUE(tref::same_values(tref::gather(heat(*gpu, hu)), expected, tref::Acc::exact_signed));
        gpu->wait_idle();
        regions = gpu->metrics().regions_executed - before.regions_executed;
        on_device = gpu->metrics().device_regions - before.device_regions;
    } while (on_device < regions && std::chrono::steady_clock::now() < until);
    ASSERT_EQ(on_device, regions) << "the calibrated rates put every region on the device";
    EXPECT_GE(regions, 20u);  // the 20 steps, the last one fused with the sum
    gpu->wait_idle();
    const auto before = gpu->metrics();
    EXPECT_GE(before.kernels_formed, 1u);
    for (int run = 0; run < 3; ++run)
        EXPECT_TRUE(tref::same_values(tref::gather(heat(*gpu, hu)), expected, tref::Acc::exact_signed));
    gpu->wait_idle();
    const auto after = gpu->metrics();
    EXPECT_EQ(after.plans_fused_from_cache - before.plans_fused_from_cache, 3u);
    EXPECT_EQ(after.device_regions - before.device_regions, 3 * regions);
    EXPECT_EQ(after.kernels_formed, before.kernels_formed) << "a program built again formed its kernels again";
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanCalibration, AGeneratorRunsWhereItsReadersInputsAre) {
    // The scheduler tells placement where the readers of a region with no inputs will run: a
    // start vector read beside a matrix that lives on the device goes to the device. In a plan of
    // a few regions the readers are found by a scan of the later ones; in one of hundreds (300
    // small results gathered with it) from a map of every read.
    CalibrationDir calibration("generator");
    tandem::Config& c = calibration.config;
    c.placement_learning = false;
    c.region_records = 1024;
    write_calibration(device_wins_calibration(c), calibration.path());
    auto gpu = tvk::open_gpu(c);
    tandem::Runtime cpu(tvk::cpu_config());
    std::mt19937_64 rng(tref::seed_of("generator readers"));
    const tref::Host ha = tref::random_host({512, 64}, tandem::DType::f64, rng);
    auto program = [&](tandem::Runtime& rt, const tandem::Array& G, int extra) {
        const tandem::Array v = rt.ones({64, 1}) / 8.0;
        const tandem::Array w = tandem::matmul(G, v);
        std::vector<tandem::Array> out = {tandem::sum(w * w)};
        for (int k = 0; k < extra; ++k) out.push_back(rt.ones({k + 2, 1}) * static_cast<double>(k));  // a region each
        return out;
    };
    const tandem::Array Gc = tandem::matmul(tandem::transpose(tref::make_array(cpu, ha)), tref::make_array(cpu, ha));
    const tref::Host expected = tref::gather(program(cpu, Gc, 0)[0]);
    // G lives on the device (its product's kernel builds in the background: until then it is
    // computed on the CPU).
    const tandem::Array A = tref::make_array(*gpu, ha);
    tandem::Array G;
    const auto built = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (std::uint64_t on = 0; on == 0 && std::chrono::steady_clock::now() < built;) {
        const std::uint64_t before = gpu->metrics().device_regions;
        G = tandem::matmul(tandem::transpose(A), A);
        gpu->evaluate({G}).get();
        gpu->wait_idle();
        on = gpu->metrics().device_regions - before;
    }
    for (const int extra : {0, 300}) {
        SCOPED_TRACE("with " + std::to_string(extra) + " more results in the plan");
        // Kernels build in the background meanwhile: a few runs may go to the CPU first.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        bool on_device = false;
        std::string reason;
        do {
            const std::vector<tandem::Array> out = program(*gpu, G, extra);
            const std::vector<tandem::HostArray> got = gpu->gather(out).get();
            ASSERT_EQ(got.size(), out.size());
            EXPECT_TRUE(tref::same_values(tref::gather(out[0]), expected, tref::Acc::exact_signed));
            if (extra > 0) EXPECT_EQ(got.back().to_doubles(), std::vector<double>(static_cast<std::size_t>(extra) + 1, extra - 1.0));
            gpu->wait_idle();
            for (const auto& r : gpu->region_records())
                if (r.shape == "64x1" && r.kind == "elementwise") on_device = r.executor == "vulkan", reason = r.reason;
        } while (!on_device && std::chrono::steady_clock::now() < until);
        EXPECT_TRUE(on_device) << reason;
        EXPECT_NE(reason.find("readers"), std::string::npos) << reason;
    }
    tvk::expect_device_clean(*gpu);
}

TEST(VulkanTrace, RegionsOfBothExecutorsAreTraced) {
    // TANDEM_TRACE (Config::trace_file): the regions of a plan split between the CPU (the small
    // ones, below device_min_elements) and the device, each on its lane, written at the end.
    const fs::path file = fs::temp_directory_path() / ("tandem-trace-" + std::to_string(::getpid()) + ".json");
    {
        tandem::Config c = tvk::gpu_config();
        c.device_min_elements = 1000;
        c.trace_file = file.string();
        auto rt = tvk::open_gpu(c);
        std::vector<double> v(300 * 40, 0.25);
        auto big = rt->array(std::span<const double>(v), tandem::Shape{300, 40});
        auto col = tandem::sum(tandem::exp(big) * 2.0, 1);  // 300 x 40 on the device, 1 x 40 result
        std::vector<double> w(40, 1.0);
        auto row = rt->array(std::span<const double>(w), tandem::Shape{1, 40});
        auto small = tandem::sqrt(col) + row;                  // 1 x 40, reads host data: on the CPU
        auto h = small.gather().get();
        EXPECT_NEAR(h.at(0), std::sqrt(300 * 2 * std::exp(0.25)) + 1.0, 1e-9);
        // 2 MiB up and 2 MiB down: copies with submissions of their own, on the transfers lane.
        std::vector<double> large(256 * 1024, 1.5);
        auto l = rt->array(std::span<const double>(large), tandem::Shape{256 * 1024, 1});
        EXPECT_EQ((l * 2.0).gather().get().at(7), 3.0);
        tvk::expect_device_clean(*rt);
    }
    std::ifstream in(file);
    ASSERT_TRUE(in) << "no trace written to " << file;
    const nlohmann::json doc = nlohmann::json::parse(in);
    bool device_lane = false, cpu_lane = false, upload = false, download = false, compile = false;
    for (const auto& e : doc.at("traceEvents")) {
        if (e.at("ph") != "X") continue;
        EXPECT_GE(e.at("dur").get<double>(), 0.0);
        EXPECT_GE(e.at("ts").get<double>(), 0.0);
        const int lane = e.at("tid").get<int>();
        const std::string name = e.at("name").get<std::string>();
        if (lane == 1000) {  // transfers
            EXPECT_EQ(e.at("args").at("bytes").get<std::uint64_t>(), 2u << 20) << e.dump();
            (name == "upload" ? upload : download) = true;
        } else if (lane == 1001) {  // kernel builds
            EXPECT_EQ(name, "kernel compile") << "the pipeline cache is in memory: every build compiles";
            compile = true;
        } else {
            (lane == 0 ? device_lane : cpu_lane) = true;
        }
    }
    EXPECT_TRUE(device_lane) << doc.dump();
    EXPECT_TRUE(cpu_lane) << doc.dump();
    EXPECT_TRUE(upload && download) << doc.dump();
    EXPECT_TRUE(compile) << doc.dump();
    fs::remove(file);
}

// A product whose GEMM variant was never built on the device: the build (priced at what fixed
// kernels are expected to take) costs more than the CPU's product, so the CPU runs it while the
// device builds the GEMM in the background; once it is built, the device takes the product. The
// same value on both.
TEST(VulkanCalibration, AColdProductRunsOnTheCpuWhileItsGemmBuilds) {
    const fs::path dir = fs::temp_directory_path() / ("tandem-vk-coldgemm-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "calibration.json").string();
    tandem::Config c = tvk::gpu_config();
    c.placement = "auto";
    c.calibration_file = path;
    c.placement_learning = false;  // the rates below decide, not lavapipe's real speed
    Calibration cal = discrete_gpu_calibration(c);
    cal.profile.devices[0].rates.flops_per_s = {1e13, 1e13};
    cal.profile.cpu.flops_per_s = {3e10, 3e10};  // 256^3 x 2: 1.1 ms on the CPU
    write_calibration(cal, path);
    {
        auto rt = tvk::open_gpu(c);
        const std::int64_t n = 256;
        std::vector<double> av(static_cast<std::size_t>(n * n)), bv(av.size());
        for (std::size_t i = 0; i < av.size(); ++i) {
            av[i] = std::sin(0.37 * static_cast<double>(i));
            bv[i] = std::cos(0.11 * static_cast<double>(i));
        }
        auto a = rt->array(std::span<const double>(av), tandem::Shape{n, n});
        auto b = rt->array(std::span<const double>(bv), tandem::Shape{n, n});
        const auto first = tandem::matmul(a, b).gather().get();
        EXPECT_EQ(rt->metrics().device_regions, 0u) << "the GEMM's build costs more than the CPU's product";
        EXPECT_EQ(rt->metrics().pipelines_built_ahead, 1u) << "built in the background meanwhile";
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (rt->metrics().device_regions == 0 && std::chrono::steady_clock::now() < until) {
            const auto again = tandem::matmul(a, b).gather().get();
            ASSERT_EQ(again.numel(), first.numel());
            for (std::int64_t i = 0; i < first.numel(); ++i)
                ASSERT_EQ(std::bit_cast<std::uint64_t>(again.at(i)), std::bit_cast<std::uint64_t>(first.at(i))) << i;
        }
        EXPECT_GT(rt->metrics().device_regions, 0u) << "once built, the device takes it";
        EXPECT_EQ(rt->metrics().pipelines_built_ahead, 1u);
    }
    fs::remove_all(dir);
}

TEST(VulkanCalibration, WhatARuntimeLearnsIsKeptForTheNext) {
    const fs::path dir = fs::temp_directory_path() / ("tandem-vk-history-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "calibration.json").string();
    tandem::Config c = tvk::gpu_config();
    c.placement = "auto";
    c.calibration_file = path;
    // Kernels kept on disk: each runtime finds them there, so its first runs are placed as the
    // rates say (a kernel to compile would send them to the CPU first).
    c.pipeline_cache_dir = (dir / "pipelines").string();
    Calibration cal;
    {
        // Its kernels on disk before the first of them (a split sum's second pass included), so
        // that the rates decide from the first run.
        tandem::Config on_device = c;
        on_device.placement = "gpu";
        auto probe = tvk::open_gpu(on_device);
        std::vector<double> big(200000, 0.5), small(10, 0.25);
        auto x = probe->array(std::span<const double>(big), tandem::Shape{200000, 1});
        auto y = probe->array(std::span<const double>(small), tandem::Shape{10, 1});
        probe->gather({tandem::sum(tandem::exp(x)), tandem::sum(y * 2.0)}).get();
        RuntimeImpl& impl = probe->impl();
        cal.machine = machine_key(impl.topology(), impl.threads());
        cal.profile = default_machine_profile(impl.threads(), {DeviceClass::cpu_device});
        cal.profile.devices[0].identity = impl.device()->identity();
    }
    cal.created_unix_s = 1'790'000'000;
    // Rates that send large regions to the device and keep small ones home: both executors run.
    // The device's are far beyond what the CPU's runs can teach the model (under a loaded
    // sanitizer build the device's kernel may come late, the CPU run the big region until then,
    // and the model learn that the CPU takes milliseconds, not the 20 ms these rates say).
    cal.profile.cpu.ops_per_s[static_cast<std::size_t>(CostClass::transcendental)] = {1e7, 1e7};
    cal.profile.devices[0].rates.ops_per_s[static_cast<std::size_t>(CostClass::transcendental)] = {1e13, 1e13};
    write_calibration(cal, path);
    auto run = [&](tandem::Config config) {
        auto rt = tvk::open_gpu(config);
        std::vector<double> big(200000, 0.5), small(10, 0.25);
        SCOPED_TRACE(config.placement_learning ? "learning on" : "learning off");
        // (Until the device takes over, should a kernel still have to be built: a minute, for a
        // sanitizer build on a loaded machine; a run in CI once took 20 s without.)
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (int i = 0; i < 4 || (rt->metrics().device_regions == 0 && std::chrono::steady_clock::now() < until); ++i) {
            auto x = rt->array(std::span<const double>(big), tandem::Shape{200000, 1});
            auto y = rt->array(std::span<const double>(small), tandem::Shape{10, 1});
            auto h = rt->gather({tandem::sum(tandem::exp(x)), tandem::sum(y * 2.0)}).get();
            EXPECT_NEAR(h[0].at(0), 200000 * std::exp(0.5), 1e-6);
            EXPECT_EQ(h[1].at(0), 5.0);
        }
        rt->wait_idle();
        const auto m = rt->metrics();
        EXPECT_GT(m.device_regions, 0u);
        return std::pair{m.runs_learned, rt->info().placement};
    };
    tandem::Config fixed = c;
    fixed.placement_learning = false;
    EXPECT_EQ(run(fixed).first, 0u) << "learning off: nothing learned";
    EXPECT_EQ(load_profile(path, cal.machine, cal.profile).history_size(), 0u) << "and nothing written";
    EXPECT_GE(run(c).first, 8u) << "every region run on either side is learned from";
    const MachineProfile after = load_profile(path, cal.machine, cal.profile);
    EXPECT_GE(after.cpu_history.size(), 1u) << "a CPU signature kept in the file";
    EXPECT_GE(after.devices[0].history.size(), 1u) << "and the device's, under its identity";
    // The 1.6 MB inputs went up by the copy queue: what those uploads cost is kept too.
    bool link = false;
    for (const auto& e : after.devices[0].history.entries()) link |= e.signature == link_signature(true, 200000 * 8);
    EXPECT_TRUE(link) << "the uploads' cost is learned";
    const auto [runs, text] = run(c);
    EXPECT_NE(text.find("refined by"), std::string::npos) << "the next runtime starts from it: " << text;
    fs::remove_all(dir);
}

TEST(VulkanRecords, EachRegionRunIsRecordedWithItsPredictionAndItsTime) {
    tandem::Config c = tvk::gpu_config();
    c.device_min_elements = 1000;  // the small region stays on the CPU
    c.region_records = 3;
    auto rt = tvk::open_gpu(c);
    std::vector<double> v(300 * 40, 0.25), w(40, 1.0);
    auto big = rt->array(std::span<const double>(v), tandem::Shape{300, 40});
    auto row = rt->array(std::span<const double>(w), tandem::Shape{1, 40});
    auto col = tandem::sum(tandem::exp(big) * 2.0, 1);
    (void)(tandem::sqrt(col) + row).gather().get();
    rt->wait_idle();
    auto records = rt->region_records();
    ASSERT_EQ(records.size(), 2u);
    const auto& dev = records[0];
    EXPECT_EQ(dev.kind, "reduce");
    EXPECT_EQ(dev.shape, "300x40");
    EXPECT_EQ(dev.executor, "vulkan");
    EXPECT_NE(dev.ops.find("exp"), std::string::npos) << dev.ops;
    EXPECT_EQ(dev.bytes_read, 300u * 40 * 8);
    EXPECT_EQ(dev.bytes_written, 40u * 8);
    EXPECT_GT(dev.compute_ms, 0) << "its kernels' time, from timestamp queries";
    EXPECT_GE(dev.wall_ms, 0);
    EXPECT_FALSE(dev.failed);
    EXPECT_FALSE(dev.fell_back);
    const auto& host = records[1];
    EXPECT_EQ(host.executor, "cpu");
    EXPECT_NE(host.reason.find("device_min_elements"), std::string::npos) << host.reason;
    EXPECT_GT(host.compute_ms, 0);
    // Only the latest are kept.
    for (int i = 0; i < 3; ++i) (void)(tandem::exp(big) + static_cast<double>(i)).gather().get();
    rt->wait_idle();
    records = rt->region_records();
    ASSERT_EQ(records.size(), 3u);
    for (const auto& r : records) EXPECT_EQ(r.kind, "elementwise");
    // Off by default.
    auto quiet = tvk::open_gpu();
    (void)(tandem::exp(quiet->array(std::span<const double>(w))) * 2.0).gather().get();
    EXPECT_TRUE(quiet->region_records().empty());
}

TEST(VulkanRecords, KernelsAreTimedOnlyWhenAskedFor) {
    // Timestamps cost the GPU time: forced placement learns nothing, so nothing is timed, unless
    // every kernel is asked for (Config::time_kernels).
    for (const bool all : {false, true}) {
        tandem::Config c = tvk::gpu_config();
        c.time_kernels = all;
        auto rt = tvk::open_gpu(c);
        std::vector<double> v(5000, 0.5);
        auto x = rt->array(std::span<const double>(v), tandem::Shape{5000, 1});
        const tandem::Metrics before = rt->metrics();
        for (int i = 0; i < 12; ++i) {
            const double expected = 5000 * (std::exp(0.5) + i);
            EXPECT_NEAR(tandem::sum(tandem::exp(x) + i).gather().get().at(0), expected, 1e-12 * expected) << i;
        }
        const tandem::Metrics after = rt->metrics();
        const std::uint64_t regions = after.device_regions - before.device_regions;
        ASSERT_GE(regions, 12u);
        EXPECT_EQ(after.kernel_timed_regions - before.kernel_timed_regions, all ? regions : 0u) << all;
        if (all) EXPECT_GT(after.kernel_ms, before.kernel_ms);
        else EXPECT_EQ(after.kernel_ms, before.kernel_ms);
    }
}

TEST(VulkanCalibration, EachDeviceIsMeasuredOnceAndReadByItsIdentity) {
    const fs::path dir = fs::temp_directory_path() / ("tandem-vk-devices-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "calibration.json").string();
    tandem::Config c = tvk::gpu_config();
    c.device = "vulkan:0,vulkan:0";  // two logical devices of one physical device: one measurement
    c.placement = "auto";
    c.calibration_file = path;
    tandem::CalibrateOptions o;
    o.quick = true;
    o.output = path;
    std::vector<std::string> steps;
    o.progress = [&](double, const std::string& what) { steps.push_back(what); };
    const tandem::CalibrationResult r = tandem::calibrate(c, o);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const Calibration cal = calibration_from_json(text.str(), path);
    ASSERT_EQ(cal.profile.devices.size(), 1u) << "one entry per physical device";
    EXPECT_GT(cal.profile.devices[0].rates.bytes_per_s, 1e6);
    EXPECT_GT(cal.profile.devices[0].link.upload_bytes_per_s, 1e6);
    EXPECT_NE(r.rates.find("its link"), std::string::npos) << r.rates;
    bool named = false;
    for (const auto& s : steps) named |= s.rfind("vulkan:0: ", 0) == 0;
    EXPECT_TRUE(named) << "the progress names the device measured";
    // Both logical devices take that entry.
    auto rt = tvk::open_gpu(c);
    const std::string placement = rt->info().placement;
    EXPECT_NE(placement.find("device 0"), std::string::npos) << placement;
    EXPECT_NE(placement.find("device 1"), std::string::npos) << placement;
    EXPECT_EQ(placement.find("built-in defaults"), std::string::npos) << "both calibrated: " << placement;
    const MachineProfile p = rt->impl().scheduler().learned().first;
    ASSERT_EQ(p.devices.size(), 2u);
    EXPECT_EQ(p.devices[1].rates.bytes_per_s, cal.profile.devices[0].rates.bytes_per_s);
    rt.reset();
    fs::remove_all(dir);
}

namespace {

/// The executor of each region record, in order.
std::vector<std::string> executors(const tandem::Runtime& rt) {
    std::vector<std::string> e;
    for (const auto& r : rt.region_records()) e.push_back(r.executor);
    return e;
}

}  // namespace

TEST(VulkanPlacement, ValuesAskedForOnTheDeviceRunThereWhateverTheirSize) {
    // MATLAB's gpuArray: a value asked for on the device, and what is computed from it, run
    // there although placement would keep regions this small on the CPU; its operand's other
    // readers do not; the bits are the CPU's.
    const tandem::Config c = tvk::small_on_cpu_config(16);
    auto rt = tvk::open_gpu(c);
    tandem::Runtime cpu(tvk::cpu_config());
    const double nan = std::nan(""), inf = INFINITY;
    const std::vector<double> v = {1.5, -0.0, nan, inf, -inf, 3, 1e-310, -2};
    auto program = [](const tandem::Array& x, const tandem::Array& plain) {
        return std::vector<tandem::Array>{tandem::abs(x) * 2.0 + plain, tandem::max(x, 0.5), tandem::sum(x * x, 2)};
    };
    auto a = rt->array(std::span<const double>(v), tandem::Shape{2, 4});
    auto g = tandem::to_device(a);
    const auto wanted = cpu.gather(program(cpu.array(std::span<const double>(v), tandem::Shape{2, 4}),
                                           cpu.array(std::span<const double>(v), tandem::Shape{2, 4})))
                            .get();
    const auto got = rt->gather(program(g, a)).get();
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(wanted[k]), tref::Acc::exact_signed))
            << "result " << k;
    rt->wait_idle();
    auto records = rt->region_records();
    ASSERT_FALSE(records.empty());
    for (const auto& r : records) {
        EXPECT_EQ(r.executor, "vulkan") << r.ops;
        EXPECT_NE(r.reason.find("to_device"), std::string::npos) << r.reason;
    }
    // The operand itself, read alone, is placed as any value: this small, on the CPU.
    const std::size_t before = rt->region_records().size();
    EXPECT_TRUE(tref::same_values(tref::gather(tandem::abs(a) * 2.0),
                                  tref::gather(tandem::abs(cpu.array(std::span<const double>(v), tandem::Shape{2, 4})) * 2.0),
                                  tref::Acc::exact_signed));
    rt->wait_idle();
    ASSERT_GT(rt->region_records().size(), before);
    EXPECT_EQ(executors(*rt).back(), "cpu");
    // A gathered result is plain data again.
    auto back = rt->array(got[0]);
    EXPECT_FALSE(back.device_requested());
    (void)(back + 1.0).gather().get();
    rt->wait_idle();
    EXPECT_EQ(executors(*rt).back(), "cpu");
    tvk::expect_device_clean(*rt);

    // Placement forced to the CPU wins over the request.
    tandem::Config forced = c;
    forced.placement = "cpu";
    auto on_cpu = tvk::open_gpu(forced);
    auto x = tandem::to_device(on_cpu->array(std::span<const double>(v), tandem::Shape{2, 4}));
    const auto host = on_cpu->gather(program(x, on_cpu->array(std::span<const double>(v), tandem::Shape{2, 4}))).get();
    for (std::size_t k = 0; k < host.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(host[k]), tref::from_host_array(wanted[k]), tref::Acc::exact_signed));
    on_cpu->wait_idle();
    for (const auto& e : executors(*on_cpu)) EXPECT_EQ(e, "cpu");
    EXPECT_EQ(on_cpu->metrics().device_regions, 0u);
}
