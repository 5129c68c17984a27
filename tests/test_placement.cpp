// Placement against a fixed cost table (scheduler/placement.hpp, scheduler/cost_model.hpp):
// deterministic decisions for regions that fusion makes from graphs built with the public API,
// with their inputs put on one side or the other by hand. Covers the earliest-finish rule, the
// transfers and the wait for the device, consumers on the host, a busy executor, the close-call
// rule that keeps a chain where its data is, and the forced modes and fixed rules.
#include <gtest/gtest.h>

#include <vector>

#include "plan_helper.hpp"
#include "scheduler/placement.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::Runtime;
using tandem::Shape;
using namespace tandem::detail;

namespace {

struct FakeBackend : Backend {
    explicit FakeBackend(bool host, DeviceClass cls = DeviceClass::discrete_gpu) : host_(host), class_(cls) {}
    std::string_view name() const noexcept override { return host_ ? "cpu" : "device"; }
    bool on_host() const noexcept override { return host_; }
    DeviceClass device_class() const noexcept override { return host_ ? DeviceClass::host : class_; }
    void submit(Submission) override {}
    std::string identity() const override { return id; }
    bool host_;
    DeviceClass class_;
    std::string id;  ///< "": unlike any other
};

/// Round numbers: a CPU at 10 GB/s, a device at 1 TB/s behind a 10 GB/s link with a 50 us
/// round trip.
MachineProfile fixed_profile() {
    MachineProfile m;
    m.cpu.name = "cpu";
    m.cpu.launch_s = 1e-6;
    m.cpu.bytes_per_s = 10e9;
    m.cpu.ops_per_s[1] = {4e9, 8e9};
    m.cpu.ops_per_s[2] = {1e9, 2e9};
    m.cpu.ops_per_s[3] = {0.5e9, 1e9};
    m.cpu.ops_per_s[4] = {0.5e9, 0.5e9};
    m.cpu.flops_per_s = {50e9, 100e9};
    DeviceProfile& d = m.devices.emplace_back();
    d.rates.name = "device";
    d.rates.launch_s = 10e-6;
    d.rates.bytes_per_s = 1e12;
    d.rates.ops_per_s[1] = {1e12, 2e12};
    d.rates.ops_per_s[2] = {2e11, 1e12};
    d.rates.ops_per_s[3] = {1e11, 1e12};
    d.rates.ops_per_s[4] = {5e11, 5e11};
    d.rates.flops_per_s = {5e12, 2e13};
    d.link.upload_bytes_per_s = d.link.download_bytes_per_s = 10e9;
    d.link.latency_s = 10e-6;
    d.link.sync_s = 50e-6;
    return m;
}

Runtime cpu_runtime() {
    tandem::Config c;
    c.device = "cpu";
    return Runtime(c);
}

/// The one region fusion makes for `target` (every node not computed yet, as the scheduler plans).
Region region_of(const Array& target) {
    auto regions = plan_helper::plan({target});
    EXPECT_EQ(regions.size(), 1u);
    return std::move(regions.back());
}

Array data(Runtime& rt, std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n), 0.5);
    return rt.array(std::span<const double>(v), Shape{n, 1});
}

/// A query for `r` with every input on one side, ready now.
PlacementQuery query(const Region& r, bool inputs_on_device, bool output_to_host) {
    PlacementQuery q;
    q.region = &r;
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
        InputSite s;
        s.bytes = r.cost.input_bytes[k];
        s.on_host = !inputs_on_device;
        s.devices = inputs_on_device ? 1u : 0u;
        q.inputs.push_back(s);
    }
    if (output_to_host) q.bytes_to_host = r.cost.bytes_written();
    return q;
}

struct Fixture {
    FakeBackend cpu{true}, device{false};
    Placement automatic{cpu, {&device}, PlacementMode::automatic, 0, fixed_profile()};
};

}  // namespace

TEST(Placement, HeavyArithmeticGoesToTheDeviceLightWorkStaysHome) {
    Runtime rt = cpu_runtime();
    Fixture f;
    const std::int64_t n = 10'000'000;
    Array x = data(rt, n);
    // 3 transcendentals an element: 60 ms on this CPU, 80 MB each way over the link (16 ms).
    const Region heavy = region_of(tandem::exp(tandem::sin(x)) * tandem::cos(x));
    auto d = f.automatic.place(query(heavy, false, true), 0, 0);
    EXPECT_EQ(d.backend, &f.device) << d.reason;
    EXPECT_GT(d.cpu_s, d.device_s);
    // A plain sum of 10 elements: a round trip costs more than the work.
    const Region tiny = region_of(tandem::sum(data(rt, 10) * 2.0));
    d = f.automatic.place(query(tiny, false, true), 0, 0);
    EXPECT_EQ(d.backend, &f.cpu) << d.reason;
    EXPECT_LT(d.cpu_s, d.device_s);
}

TEST(Placement, TransfersDecideLightWork) {
    Runtime rt = cpu_runtime();
    Fixture f;
    Array x = data(rt, 1'000'000);
    const Region light = region_of(x * 2.0 + 1.0);  // 16 MB of traffic, 2 simple ops an element
    // On the host with a host consumer: moving 8 MB each way costs more than 1.6 ms of CPU work.
    EXPECT_EQ(f.automatic.place(query(light, false, true), 0, 0).backend, &f.cpu);
    // Already on the device, feeding device work: downloading it would cost more.
    EXPECT_EQ(f.automatic.place(query(light, true, false), 0, 0).backend, &f.device);
    // A tiny step of a chain that lives on the device stays there: no sync, no transfer.
    const Region step = region_of(data(rt, 16) / 3.0);
    EXPECT_EQ(f.automatic.place(query(step, true, false), 0, 0).backend, &f.device);
}

TEST(Placement, ABusyExecutorAndLateInputsCount) {
    Runtime rt = cpu_runtime();
    Fixture f;
    Array x = data(rt, 10'000'000);
    const Region heavy = region_of(tandem::exp(tandem::sin(x)) * tandem::cos(x));
    EXPECT_EQ(f.automatic.place(query(heavy, false, false), 0, 0).backend, &f.device);
    // The device has a second of work queued: the CPU finishes first.
    auto d = f.automatic.place(query(heavy, false, false), 0, 1.0);
    EXPECT_EQ(d.backend, &f.cpu) << d.reason;
    EXPECT_GT(d.device_s, 1.0);
    // An input that only exists in 2 s delays both sides alike.
    PlacementQuery late = query(heavy, false, false);
    late.inputs[0].ready_s = 2.0;
    d = f.automatic.place(late, 0, 0);
    EXPECT_GT(d.cpu_s, 2.0);
    EXPECT_GT(d.device_s, 2.0);
    EXPECT_EQ(d.backend, &f.device);
}

TEST(Placement, ADeviceOnTheHostsCoresIsNoEscapeFromABusyCpu) {
    // lavapipe runs on the CPU's cores: work queued on the CPU delays it as much.
    Runtime rt = cpu_runtime();
    FakeBackend cpu(true), lavapipe(false, DeviceClass::cpu_device);
    MachineProfile same = fixed_profile();
    same.devices[0].rates = same.cpu;  // as fast as the CPU executor, even
    Placement p(cpu, {&lavapipe}, PlacementMode::automatic, 0, same);
    const Region r = region_of(data(rt, 1'000'000) * 2.0);
    auto d = p.place(query(r, false, false), 1.0, 0);
    EXPECT_EQ(d.backend, &cpu) << d.reason;
    EXPECT_GT(d.device_s, 1.0);
    // A GPU with the same rates is a way out.
    FakeBackend gpu(false, DeviceClass::discrete_gpu);
    Placement q(cpu, {&gpu}, PlacementMode::automatic, 0, same);
    EXPECT_EQ(q.place(query(r, false, false), 1.0, 0).backend, &gpu);
}

TEST(Placement, TransfersQueueOnTheLink) {
    Runtime rt = cpu_runtime();
    Fixture f;
    Array x = data(rt, 10'000'000);
    const Region heavy = region_of(tandem::exp(tandem::sin(x)) * tandem::cos(x));
    // 80 MB to upload (8 ms here): the device still wins on a free link...
    auto d = f.automatic.place(query(heavy, false, false), 0, 0, 0);
    EXPECT_EQ(d.backend, &f.device) << d.reason;
    EXPECT_NEAR(d.transfer_s, 8e-3 + 10e-6, 1e-6);  // what the scheduler charges to the link
    // ...not behind a second of copies already queued there.
    d = f.automatic.place(query(heavy, false, false), 0, 0, 1.0);
    EXPECT_EQ(d.backend, &f.cpu) << d.reason;
    EXPECT_GT(d.device_s, 1.0);
    // Data already on the device needs no copy: the queue does not matter.
    EXPECT_EQ(f.automatic.place(query(heavy, true, false), 0, 0, 1.0).backend, &f.device);
}

TEST(Placement, CloseCallsStayWithTheirInputs) {
    Runtime rt = cpu_runtime();
    Fixture f;
    Array x = data(rt, 1'000'000);
    const Region r = region_of(tandem::sqrt(x) + 1.0);
    // Equal rates on both sides and a free link: the two predictions are within 10%.
    MachineProfile same = fixed_profile();
    same.devices[0].rates = same.cpu;
    same.devices[0].link.latency_s = same.devices[0].link.sync_s = 0;
    same.devices[0].link.upload_bytes_per_s = same.devices[0].link.download_bytes_per_s = 1e18;
    Placement p(f.cpu, {&f.device}, PlacementMode::automatic, 0, same);
    auto on_device = p.place(query(r, true, false), 0, 0);
    EXPECT_EQ(on_device.backend, &f.device) << on_device.reason;
    auto on_host = p.place(query(r, false, false), 0, 0);
    EXPECT_EQ(on_host.backend, &f.cpu) << on_host.reason;
    EXPECT_NEAR(on_device.cpu_s, on_device.device_s, 0.1 * on_device.cpu_s);
}

TEST(Placement, ProductsArePricedByTheirFlops) {
    Runtime rt = cpu_runtime();
    Fixture f;
    std::vector<double> v(512 * 512, 0.25);
    Array a = rt.array(std::span<const double>(v), Shape{512, 512});
    const Region big = region_of(tandem::matmul(a, a));  // 268 MFLOP: 5.4 ms here, 54 us there
    auto d = f.automatic.place(query(big, false, true), 0, 0);
    EXPECT_EQ(big.kind, RegionKind::matmul);
    EXPECT_EQ(d.backend, &f.device) << d.reason;
    std::vector<double> w(4 * 4, 0.25);
    Array s = rt.array(std::span<const double>(w), Shape{4, 4});
    EXPECT_EQ(f.automatic.place(query(region_of(tandem::matmul(s, s)), false, true), 0, 0).backend, &f.cpu);
}

TEST(Placement, ForcedModesFloorsAndFixedRules) {
    Runtime rt = cpu_runtime();
    Fixture f;
    const Region tiny = region_of(data(rt, 10) * 2.0);
    Placement to_device(f.cpu, {&f.device}, PlacementMode::device, 0, fixed_profile());
    EXPECT_EQ(to_device.place(query(tiny, false, true), 0, 0).backend, &f.device);
    Placement floored(f.cpu, {&f.device}, PlacementMode::device, 100, fixed_profile());
    EXPECT_EQ(floored.place(query(tiny, false, true), 0, 0).backend, &f.cpu);
    Array x = data(rt, 10'000'000);
    const Region heavy = region_of(tandem::exp(tandem::sin(x)) * tandem::cos(x));
    Placement to_cpu(f.cpu, {&f.device}, PlacementMode::cpu, 0, fixed_profile());
    EXPECT_EQ(to_cpu.place(query(heavy, false, false), 0, 0).backend, &f.cpu);
    Placement no_device(f.cpu, {}, PlacementMode::automatic, 0, fixed_profile());
    EXPECT_EQ(no_device.place(query(heavy, false, false), 0, 0).backend, &f.cpu);
    Placement lost(f.cpu, {&f.device}, PlacementMode::device, 0, fixed_profile());
    lost.disable_device(0);
    EXPECT_EQ(lost.place(query(heavy, false, false), 0, 0).backend, &f.cpu);
    const Region view = region_of(tandem::reshape(x, Shape{1, 10'000'000}));
    EXPECT_EQ(view.kind, RegionKind::view);
    EXPECT_EQ(to_device.place(query(view, true, false), 0, 0).backend, &f.cpu);  // the scheduler keeps it with its input
}

TEST(Placement, EachDeviceIsPricedByItsOwnRatesAndLink) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, fast{false}, slow{false};
    MachineProfile m = fixed_profile();
    m.devices.push_back(m.devices[0]);
    DeviceProfile& second = m.devices[1];
    second.rates.bytes_per_s /= 10;  // a tenth of the first's speed, behind a link a tenth as fast
    for (auto& c : second.rates.ops_per_s) c = {c[0] / 10, c[1] / 10};
    second.link.upload_bytes_per_s = second.link.download_bytes_per_s = 1e9;
    Placement p(cpu, {&fast, &slow}, PlacementMode::automatic, 0, m);
    const Region heavy = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 1'000'000)))));
    EXPECT_GT(p.compute_s(heavy, 1), 5 * p.compute_s(heavy, 0));
    EXPECT_GT(p.upload_s(1, 8'000'000), 5 * p.upload_s(0, 8'000'000));
    // Both idle, its input on the host: the faster device, by its own rates.
    auto d = p.place(query(heavy, false, true), 0, std::vector<double>{0, 0});
    EXPECT_EQ(d.backend, &fast) << d.reason;
    EXPECT_EQ(d.compute_s, p.compute_s(heavy, 0));
    // The fast one and the CPU busy for a second: the slow one, priced by its rates and its link.
    d = p.place(query(heavy, false, true), 1.0, std::vector<double>{1.0, 0});
    ASSERT_EQ(d.backend, &slow) << d.reason;
    EXPECT_EQ(d.compute_s, p.compute_s(heavy, 1));
    EXPECT_GE(d.transfer_s, p.upload_s(1, heavy.cost.input_bytes[0]));
    // Its input already on the slow device (and the fast one only a little busy): no transfer
    // there beats ten times the compute plus a copy through the host.
    PlacementQuery there = query(heavy, true, false);
    for (auto& in : there.inputs) in.devices = 2u;
    d = p.place(there, 0, std::vector<double>{1e-4, 0});
    EXPECT_EQ(d.transfer_s, 0.0) << d.reason;
    // What one device learns does not move the other's prediction.
    const double before = p.compute_s(heavy, 0);
    for (int i = 0; i < 3; ++i) p.learn(heavy, 1, 20 * p.model_s(heavy, 1));
    EXPECT_EQ(p.compute_s(heavy, 0), before);
    EXPECT_DOUBLE_EQ(p.compute_s(heavy, 1), 20 * p.model_s(heavy, 1));
}

TEST(Placement, EachDeviceHasItsOwnLinkQueueAndMemoryBudget) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, first{false}, second{false};
    MachineProfile m = fixed_profile();
    m.devices.push_back(m.devices[0]);  // alike devices
    const std::int64_t n = 1'000'000;   // 8 MB in, a scalar out
    const Region heavy = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, n)))));
    Placement p(cpu, {&first, &second}, PlacementMode::automatic, 0, m);
    // Idle devices and links: the first; its transfers are charged to its link.
    auto d = p.place(query(heavy, false, true), 1.0, std::vector<double>{0, 0}, std::vector<double>{0, 0});
    EXPECT_EQ(d.backend, &first) << d.reason;
    EXPECT_EQ(d.link, 0);
    // The first device's link busy with 10 ms of uploads: the second's link is its own.
    d = p.place(query(heavy, false, true), 1.0, std::vector<double>{0, 0}, std::vector<double>{10e-3, 0});
    EXPECT_EQ(d.backend, &second) << d.reason;
    EXPECT_EQ(d.link, 1);
    // Budgets per device: 12 MB on the first, none on the second: the second.
    Placement budgets(cpu, {&first, &second}, PlacementMode::device, 0, m, {12'000'000, 0});
    const Region big = region_of(tandem::exp(data(rt, n)) * data(rt, n));  // 24 MB
    d = budgets.place(query(big, false, false), 0, std::vector<double>{0, 0});
    EXPECT_EQ(d.backend, &second) << d.reason;
    EXPECT_EQ(d.stream_pieces, 0) << "it fits there whole";
    // Larger than both: streamed.
    Placement small(cpu, {&first, &second}, PlacementMode::device, 0, m, {12'000'000, 16'000'000});
    d = small.place(query(big, false, false), 0, std::vector<double>{0, 0});
    EXPECT_GT(d.stream_pieces, 0) << d.reason;
}

TEST(Placement, DefaultProfilesAreOrdered) {
    // The built-in defaults (until calibration): a discrete GPU streams and computes faster than
    // the CPU, a Vulkan driver on the CPU slower than the CPU executor itself.
    const MachineProfile both = default_machine_profile(16, {DeviceClass::discrete_gpu, DeviceClass::cpu_device});
    ASSERT_EQ(both.devices.size(), 2u) << "one profile per device";
    const ExecutorProfile &gpu = both.devices[0].rates, &cpu_device = both.devices[1].rates;
    EXPECT_GT(gpu.bytes_per_s, both.cpu.bytes_per_s);
    for (std::size_t c = 1; c < kCostClasses; ++c)
        for (std::size_t t = 0; t < 2; ++t) {
            EXPECT_GT(gpu.ops_per_s[c][t], both.cpu.ops_per_s[c][t]) << c << " " << t;
            EXPECT_LT(cpu_device.ops_per_s[c][t], both.cpu.ops_per_s[c][t]) << c << " " << t;
        }
    EXPECT_GT(cpu_device.launch_s, both.cpu.launch_s);
    EXPECT_GT(both.devices[0].link.sync_s, 0);
}

TEST(Placement, ARegionLargerThanTheDeviceBudgetStreamsOrStaysOnTheCpu) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, device{false};
    const std::int64_t n = 1'000'000;  // 8 MB an array: 16 MB read, 8 MB written
    const Region heavy = region_of(tandem::exp(tandem::sin(data(rt, n))) * data(rt, n));
    Placement roomy(cpu, {&device}, PlacementMode::device, 0, fixed_profile(), {24'000'000});
    auto fits = roomy.place(query(heavy, false, true), 0, 0);
    EXPECT_EQ(fits.backend, &device);
    EXPECT_EQ(fits.stream_pieces, 0) << "it fits: no streaming";
    // Too large for the budget: streamed in pieces of at most a quarter of it when forced; in
    // automatic mode, streamed if that is predicted to finish first.
    Placement forced(cpu, {&device}, PlacementMode::device, 0, fixed_profile(), {23'999'999});
    auto d = forced.place(query(heavy, true, false), 0, 0);
    EXPECT_EQ(d.backend, &device);
    EXPECT_GE(d.stream_pieces, 5) << "24 MB in pieces of at most 6 MB";
    EXPECT_NE(std::string(d.reason).find("streamed"), std::string::npos) << d.reason;
    Placement automatic(cpu, {&device}, PlacementMode::automatic, 0, fixed_profile(), {23'999'999});
    auto a = automatic.place(query(heavy, true, false), 0, 0);
    ASSERT_GE(a.cpu_s, 0);
    ASSERT_GE(a.device_s, 0);
    EXPECT_EQ(a.backend, a.device_s < a.cpu_s ? &device : &cpu);
    EXPECT_EQ(a.stream_pieces > 0, a.backend == &device);
    // What cannot stream (random numbers follow the element's index) stays on the CPU.
    const Region random = region_of(tandem::rand(rt, {n, 3}) * data(rt, n));
    for (PlacementMode mode : {PlacementMode::automatic, PlacementMode::device}) {
        Placement tight(cpu, {&device}, mode, 0, fixed_profile(), {1'000'000});
        auto r = tight.place(query(random, true, false), 0, 0);
        EXPECT_EQ(r.backend, &cpu) << "it cannot be on the device at once, forced or not";
        EXPECT_NE(std::string(r.reason).find("memory budget"), std::string::npos) << r.reason;
    }
}

TEST(PerformanceHistory, TheMedianOfTheLastRunsScalesThePrediction) {
    PerformanceHistory h;  // one executor's
    EXPECT_EQ(h.correction(7), 1.0);
    h.observe(7, 1e-3, 2e-3);
    h.observe(7, 1e-3, 3e-3);
    EXPECT_EQ(h.correction(7), 1.0) << "two runs are not enough";
    h.observe(7, 1e-3, 1.0);  // an outlier (a page fault storm): the median ignores it
    EXPECT_DOUBLE_EQ(h.correction(7), 3.0);
    EXPECT_EQ(h.correction(8), 1.0) << "per signature";
    for (int i = 0; i < 40; ++i) h.observe(7, 1e-3, 0.5e-3);  // only the last 16 count
    EXPECT_DOUBLE_EQ(h.correction(7), 0.5);
    h.observe(9, 1e-6, 1.0);
    h.observe(9, 1e-6, 1.0);
    h.observe(9, 1e-6, 1.0);
    EXPECT_EQ(h.correction(9), PerformanceHistory::kMaxCorrection) << "clamped";
    h.observe(9, 0, 1.0);  // nothing to learn from a zero prediction or a bad time
    h.observe(9, 1, -1.0);
    EXPECT_EQ(h.entries().size(), 2u);
    // Kept for the calibration file oldest first, the last 16 of them.
    for (int i = 1; i <= 20; ++i) h.observe(11, 1.0, i);
    std::vector<double> last16;
    for (int i = 5; i <= 20; ++i) last16.push_back(i);
    EXPECT_EQ(h.entries().back().ratios, last16);
    EXPECT_DOUBLE_EQ(h.correction(11), 12.5);
    PerformanceHistory back;
    back.add(h.entries().back());
    EXPECT_EQ(back.entries().back().ratios, last16);
    EXPECT_DOUBLE_EQ(back.correction(11), 12.5);
}

TEST(PerformanceHistory, RunsAreSampledOnceTheHistoryIsFull) {
    PerformanceHistory h;
    int asked = 0;
    while (h.wants_sample(5)) {  // every run until kSamples are held
        h.observe(5, 1e-3, 2e-3);
        ASSERT_LE(++asked, 100);
    }
    EXPECT_EQ(asked, static_cast<int>(PerformanceHistory::kSamples));
    int sampled = 0;
    for (int i = 0; i < 80; ++i) sampled += h.wants_sample(5);
    EXPECT_EQ(sampled, 80 / static_cast<int>(PerformanceHistory::kSampleEvery)) << "then one in kSampleEvery";
    EXPECT_TRUE(h.wants_sample(6)) << "per signature";
    EXPECT_EQ(h.entries().size(), 1u) << "asking adds nothing to the calibration file";
}

TEST(PerformanceHistory, SignaturesSeparateKindsTypesAndSizes) {
    Runtime rt = cpu_runtime();
    auto sig = [](const Region& r) { return region_signature(r.cost, r.kind); };
    const Region a = region_of(tandem::exp(data(rt, 1100)) + 1.0);
    EXPECT_EQ(sig(a), sig(region_of(tandem::exp(data(rt, 1500)) * 3.0))) << "alike, within a factor of 4 in size";
    EXPECT_NE(sig(a), sig(region_of(tandem::exp(data(rt, 100000)) + 1.0))) << "another size class";
    EXPECT_NE(sig(a), sig(region_of(data(rt, 1100) + 1.0))) << "no transcendental";
    EXPECT_NE(sig(a), sig(region_of(tandem::sum(tandem::exp(data(rt, 1100)))))) << "a reduction";
}

TEST(Placement, WhatRunsTaughtMovesTheDecision) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, device{false};
    // Light work on host data: the model keeps it home (the link costs more than the work).
    const Region light = region_of(data(rt, 1'000'000) * 2.0 + 1.0);
    Placement p(cpu, {&device}, PlacementMode::automatic, 0, fixed_profile());
    EXPECT_EQ(p.place(query(light, false, true), 0, 0).backend, &cpu);
    // But it ran 50x slower than predicted, three times (a slow CPU, a busy machine):
    for (int i = 0; i < 3; ++i) p.learn(light, kHost, 50 * p.model_s(light, kHost));
    EXPECT_DOUBLE_EQ(p.compute_s(light, kHost), 50 * p.model_s(light, kHost));
    EXPECT_EQ(p.compute_s(light, 0), p.model_s(light, 0)) << "per executor: the device learned nothing";
    auto d = p.place(query(light, false, true), 0, 0);
    EXPECT_EQ(d.backend, &device) << d.reason;
    EXPECT_EQ(p.runs_learned(), 3u);
}

TEST(Placement, TheSideNeverRunOnIsExploredUntilItsTimeIsKnown) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, device{false};
    // A region the CPU wins by the model, the device predicted within 1.5x of it.
    const Region r = region_of(tandem::sum(tandem::exp(data(rt, 40'000))));
    MachineProfile m = fixed_profile();
    Placement probe(cpu, {&device}, PlacementMode::automatic, 0, m);
    const auto model = probe.place(query(r, false, true), 0, 0);
    ASSERT_EQ(model.backend, &cpu) << model.reason;
    ASSERT_LE(model.device_s, Placement::kExploreFactor * model.cpu_s) << "within reach of exploring";

    Placement p(cpu, {&device}, PlacementMode::automatic, 0, m);
    p.set_exploration(true);
    // Neither side known: the model's choice.
    EXPECT_EQ(p.place(query(r, false, true), 0, 0).backend, &cpu);
    for (int i = 0; i < 3; ++i) p.learn(r, kHost, p.model_s(r, kHost));
    // The CPU known, the device not: one run there, one at a time.
    auto e = p.place(query(r, false, true), 0, 0);
    ASSERT_EQ(e.backend, &device) << e.reason;
    EXPECT_TRUE(e.exploring);
    EXPECT_NE(std::string(e.reason).find("exploring"), std::string::npos) << e.reason;
    EXPECT_EQ(p.place(query(r, false, true), 0, 0).backend, &cpu) << "one exploring run in flight";
    // It ran 4x faster than predicted there; three such runs and the model knows better.
    for (int i = 0; i < 3; ++i) {
        p.explored(r, 0);
        p.learn(r, 0, 0.25 * p.model_s(r, 0));
    }
    auto after = p.place(query(r, false, true), 0, 0);
    EXPECT_FALSE(after.exploring) << "known now: " << after.reason;
    EXPECT_LT(after.device_s, model.device_s) << "priced by what it taught";
    EXPECT_EQ(p.explorations(), 1u);
    // Far out of reach (predicted 1000x slower on the device): never explored.
    MachineProfile slow = m;
    for (auto& c : slow.devices[0].rates.ops_per_s) c = {c[0] / 1e5, c[1] / 1e5};
    Placement q(cpu, {&device}, PlacementMode::automatic, 0, slow);
    q.set_exploration(true);
    for (int i = 0; i < 3; ++i) q.learn(r, kHost, q.model_s(r, kHost));
    EXPECT_FALSE(q.place(query(r, false, true), 0, 0).exploring);
    // Off (learning off, or a forced mode): never.
    Placement off(cpu, {&device}, PlacementMode::automatic, 0, m);
    for (int i = 0; i < 3; ++i) off.learn(r, kHost, off.model_s(r, kHost));
    EXPECT_EQ(off.place(query(r, false, true), 0, 0).backend, &cpu);
}

TEST(Placement, WhatUploadsTaughtMovesTheDecision) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, device{false};
    Placement p(cpu, {&device}, PlacementMode::automatic, 0, fixed_profile());
    // Heavy work on 8 MB of host data, its one result read back: the device, by the link's rates.
    const Array x = data(rt, 1'000'000);
    const Region heavy = region_of(tandem::sum(tandem::exp(tandem::sin(x)) * tandem::cos(x)));
    auto d = p.place(query(heavy, false, true), 0, 0);
    ASSERT_EQ(d.backend, &device) << d.reason;
    const std::int64_t bytes = heavy.cost.input_bytes[0];
    const double rate_s = p.upload_s(0, bytes);
    // Uploads of that size took 40x the link's rates (a host copy on one core, a busy bus):
    // twice is not enough to believe, three times is, and only for that size.
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(p.upload_s(0, bytes), rate_s);
        p.learn_link(0, true, bytes, 40 * rate_s);
    }
    EXPECT_DOUBLE_EQ(p.upload_s(0, bytes), 40 * rate_s);
    EXPECT_EQ(p.upload_s(0, 64 * bytes), upload_seconds(64 * bytes, p.device_profile(0).link));
    EXPECT_EQ(p.download_s(0, bytes), download_seconds(bytes, p.device_profile(0).link));
    d = p.place(query(heavy, false, true), 0, 0);
    EXPECT_EQ(d.backend, &cpu) << d.reason;
    // Data already on the device pays no upload: the device still.
    EXPECT_EQ(p.place(query(heavy, true, true), 0, 0).backend, &device);
    // Round trips: a scalar on the device that the host's next step reads. Waiting for it took
    // 30x the link's latency three times (the device's queue ran late): the chain stays there.
    const Region step = region_of(data(rt, 1) / 3.0);
    PlacementQuery back = query(step, true, false);
    back.bytes_to_consumers = 8;
    const double wait_s = p.download_s(0, 8);
    for (int i = 0; i < 3; ++i) p.learn_link(0, false, 8, 30 * wait_s);
    EXPECT_DOUBLE_EQ(p.download_s(0, 8), 30 * wait_s);
    EXPECT_EQ(p.place(back, 0, 0).backend, &device);
    // What it learned is kept with the calibration, beside the regions' history.
    bool kept = false;
    for (const auto& e : p.device_profile(0).history.entries()) kept |= e.signature == link_signature(true, bytes) && e.ratios.size() == 3;
    EXPECT_TRUE(kept);
}

TEST(Placement, AChainOnTheDeviceStaysThereWhenItsResultsAreReadLaterInThePlan) {
    Runtime rt = cpu_runtime();
    Fixture f;
    // A tiny step of a chain whose data lives on the device, the device busy for 60 us: run on
    // the CPU it would finish first (download, round trip, 1 us of work)...
    const Region tiny = region_of(data(rt, 16) * 2.0 + 1.0);
    PlacementQuery q = query(tiny, true, false);
    auto alone = f.automatic.place(q, 0, 60e-6);
    EXPECT_EQ(alone.backend, &f.cpu) << alone.reason;
    // ... but when the next steps of the plan read its result, they run on the device, and would
    // wait for the round trip back: it stays.
    q.bytes_to_consumers = 16 * 8;
    auto chained = f.automatic.place(q, 0, 60e-6);
    EXPECT_EQ(chained.backend, &f.device) << chained.reason;
    EXPECT_GT(chained.cpu_s, alone.cpu_s);
    // Likewise the other way: a step of a chain on the host does not hop to an idle device.
    PlacementQuery h = query(tiny, false, false);
    h.bytes_to_consumers = 16 * 8;
    EXPECT_EQ(f.automatic.place(h, 0, 0).backend, &f.cpu);
}

TEST(Placement, AGeneratorGoesWhereItsReadersInputsAre) {
    Runtime rt = cpu_runtime();
    Fixture f;
    // A start vector (a region with no inputs) that the next regions of the plan read, the
    // device busy for 200 us with what came before: the CPU would finish it first...
    const Region start = region_of(rt.ones({128, 1}) / 4.0);
    ASSERT_TRUE(start.inputs.empty());
    PlacementQuery q = query(start, false, false);
    q.bytes_to_consumers = 128 * 8;
    auto unknown = f.automatic.place(q, 0, 200e-6);
    EXPECT_EQ(unknown.backend, &f.cpu) << unknown.reason;
    // ... but its readers' other inputs are on the device, so they run there: not before the
    // device is free, and after a round trip had it run on the CPU. It runs on the device.
    q.consumers_device = [] { return 0; };
    auto busy = f.automatic.place(q, 0, 200e-6);
    EXPECT_EQ(busy.backend, &f.device) << busy.reason;
    EXPECT_EQ(busy.cpu_s, unknown.cpu_s) << "its own finish on the CPU is what it was";
    auto idle = f.automatic.place(q, 0, 0);
    EXPECT_EQ(idle.backend, &f.device) << idle.reason;
    // However long the device is busy: its readers start then, whichever side computed it.
    EXPECT_EQ(f.automatic.place(q, 0, 0.1).backend, &f.device);
    // Readers whose other inputs are on the host (or not known): the CPU, sooner.
    q.consumers_device = [] { return -1; };
    EXPECT_EQ(f.automatic.place(q, 0, 0).backend, &f.cpu);
}

// A region with inputs that the CPU would finish first, beside a device busy with what its readers
// also wait for (W5's var(X): 1 ms on every core, its reader -- the last division -- waiting on
// the device's power iteration anyway): the CPU gains them nothing, and the device computes it
// in a fraction of the CPU's time. On a close call it goes with its readers; not when the device
// would take long over it, nor when the readers are not known to run there.
TEST(Placement, ARegionWhoseReadersWaitOnTheDeviceAnywayGoesWithThemOnACloseCall) {
    Runtime rt = cpu_runtime();
    Fixture f;
    const std::int64_t n = 1'000'000;  // 8 MB: 2.5 ms on this CPU, 20 us on the device
    const Region ssq = region_of(tandem::sum(tandem::power(data(rt, n) - data(rt, 1), 2.0)));
    ASSERT_EQ(ssq.inputs.size(), 2u);
    PlacementQuery q = query(ssq, true, false);
    q.inputs[0].on_host = true;  // the data on both sides, its mean on the device only
    if (q.inputs[0].bytes < q.inputs[1].bytes) std::swap(q.inputs[0].on_host, q.inputs[1].on_host);
    q.bytes_to_consumers = 8;
    const double busy = 4e-3;
    auto alone = f.automatic.place(q, 0, busy);
    ASSERT_EQ(alone.backend, &f.cpu) << "the CPU finishes first: " << alone.reason;
    q.consumers_device = [] { return 0; };
    auto with_readers = f.automatic.place(q, 0, busy);
    EXPECT_EQ(with_readers.backend, &f.device) << with_readers.reason;
    EXPECT_EQ(with_readers.cpu_s, alone.cpu_s) << "its own finish on the CPU is what it was";
    // Readers on the host (or not known): the CPU, sooner.
    q.consumers_device = [] { return -1; };
    EXPECT_EQ(f.automatic.place(q, 0, busy).backend, &f.cpu);
    // A device at half the CPU's speed at it: its queue would grow by more than the CPU's time.
    // The CPU takes it, though the device is busy for long enough to make that a close call.
    MachineProfile slow = fixed_profile();
    slow.devices[0].rates.bytes_per_s = 5e9;
    slow.devices[0].rates.ops_per_s = slow.cpu.ops_per_s;
    Placement modest{f.cpu, {&f.device}, PlacementMode::automatic, 0, slow};
    q.consumers_device = [] { return 0; };
    const double long_busy = 50e-3;
    const auto d = modest.place(q, 0, long_busy);
    EXPECT_EQ(d.backend, &f.cpu) << d.reason;
    EXPECT_LE(d.device_s, 1.1 * long_busy) << "a close call";
}

TEST(Placement, ReadersThatLoseTimeOnTheHostPayForTheUploadOfTheirInput) {
    Runtime rt = cpu_runtime();
    Fixture f;
    // A light pass over 80 MB that lives on the host: alone, the upload (8 ms) costs more than
    // the CPU's pass (16 ms reads at 10 GB/s... the device would take 0.1 ms had it the data).
    const std::int64_t n = 10'000'000;
    const Region pass = region_of(tandem::sum(data(rt, n) * 2.0));
    PlacementQuery q = query(pass, false, false);
    auto first = f.automatic.place(q, 0, 0);
    ASSERT_EQ(first.backend, &f.cpu) << first.reason;
    EXPECT_GT(first.regret_s, 0.0) << "a device holding the data would have been sooner";
    // The scheduler adds each reader's loss to the input's regret; once the losses add up to the
    // upload's time, the upload is paid for, and the next reader goes to the device (where every
    // later reader finds the data).
    double regret = 0;
    int readers = 0;
    for (; readers < 10; ++readers) {
        q.inputs[0].regret_s = regret;
        auto d = f.automatic.place(q, 0, 0);
        if (d.backend == &f.device) break;
        regret += d.regret_s;
    }
    EXPECT_GE(readers, 1) << "not at once";
    EXPECT_LT(readers, 10) << "but soon";
    EXPECT_GE(regret, upload_seconds(q.inputs[0].bytes, fixed_profile().devices[0].link));
}

// Losses of readers earlier in the same plan pay for an upload only for the readers still to come:
// the last reader of a value (tandem-mixed's batch: its sum and max ran on the CPU, then its
// variance) does not send it up for itself alone. Losses of earlier plans (a value read again
// run after run) still count.
TEST(Placement, AnUploadPaidForInThisPlanServesOnlyLaterReaders) {
    Runtime rt = cpu_runtime();
    Fixture f;
    const Region pass = region_of(tandem::sum(data(rt, 10'000'000) * 2.0));
    PlacementQuery q = query(pass, false, false);
    const double up = upload_seconds(q.inputs[0].bytes, fixed_profile().devices[0].link);
    ASSERT_EQ(f.automatic.place(q, 0, 0).backend, &f.cpu);
    q.inputs[0].regret_s = q.inputs[0].regret_plan_s = 2 * up;  // paid for by this plan's readers
    q.inputs[0].read_later = true;
    EXPECT_EQ(f.automatic.place(q, 0, 0).backend, &f.device) << "it serves the readers after this one";
    q.inputs[0].read_later = false;
    EXPECT_EQ(f.automatic.place(q, 0, 0).backend, &f.cpu) << "it would serve this region alone";
    q.inputs[0].regret_plan_s = up / 2;  // the rest paid for by earlier plans
    EXPECT_EQ(f.automatic.place(q, 0, 0).backend, &f.device);
}

// The head of a chain (its result read by the next region of the plan, as each step of a time
// loop reads the last) that reads data living on the host: it stays with the data, and its
// readers with it... until the losses pay for the upload. Had the data been on the device, the
// chain would have gone on there: the loss counts against that, not against a round trip.
TEST(Placement, AChainReadingHostDataMovesToTheDeviceOnceItsLossesPayTheUpload) {
    Runtime rt = cpu_runtime();
    // A host of many cores: its pass over 80 MB (1.6 ms) is quicker than sending the result
    // back for the next step (8 ms), so a step alone on the device never pays.
    MachineProfile profile = fixed_profile();
    profile.cpu.bytes_per_s = 100e9;
    FakeBackend cpu{true}, device{false};
    Placement automatic{cpu, {&device}, PlacementMode::automatic, 0, profile};
    const std::int64_t n = 10'000'000;
    const Region step = region_of(data(rt, n) * 2.0 + 1.0);
    PlacementQuery q = query(step, false, false);
    q.bytes_to_consumers = step.cost.bytes_written();
    auto first = automatic.place(q, 0, 0);
    ASSERT_EQ(first.backend, &cpu) << first.reason;
    EXPECT_GT(first.regret_s, 0.0) << "the chain on the device would have been sooner";
    double regret = 0;
    int runs = 0;
    for (; runs < 10; ++runs) {
        q.inputs[0].regret_s = regret;
        auto d = automatic.place(q, 0, 0);
        if (d.backend == &device) break;
        regret += d.regret_s;
    }
    EXPECT_GE(runs, 1) << "not at once";
    EXPECT_LT(runs, 10) << "but soon";
}

TEST(Placement, AKernelNotBuiltYetIsPricedAndBuiltInTheBackground) {
    Runtime rt = cpu_runtime();
    Fixture f;
    Array x = data(rt, 1'000'000);
    // Already on the device, feeding device work: the device wins when its kernel is built ...
    const Region light = region_of(x * 2.0 + 1.0);
    PlacementQuery q = query(light, true, false);
    auto warm = f.automatic.place(q, 0, 0);
    ASSERT_EQ(warm.backend, &f.device) << warm.reason;
    EXPECT_EQ(warm.warm_up, nullptr);
    // ... but a 200 ms compile first costs more than the download and the CPU's work: the CPU
    // runs it, and the device is named for building the kernel meanwhile.
    q.pipeline_wait_s = [](std::size_t) { return 0.2; };
    auto cold = f.automatic.place(q, 0, 0);
    EXPECT_EQ(cold.backend, &f.cpu) << cold.reason;
    EXPECT_EQ(cold.warm_up, &f.device);
    EXPECT_GT(cold.device_s, warm.device_s + 0.19);
    // A short build overlaps the transfers and still loses to nothing: the device, no warm-up.
    q.pipeline_wait_s = [](std::size_t) { return 1e-6; };
    auto quick = f.automatic.place(q, 0, 0);
    EXPECT_EQ(quick.backend, &f.device) << quick.reason;
    // Heavy work beats a cold device whose build hides behind the uploads: it builds and runs
    // there (nothing to warm up). 40 ms of CPU work; 8 ms up, 8 down.
    const Region heavy = region_of(tandem::exp(tandem::sin(data(rt, 10'000'000))));
    PlacementQuery hq = query(heavy, false, true);
    hq.pipeline_wait_s = [](std::size_t) { return 0.01; };
    auto h = f.automatic.place(hq, 0, 0);
    EXPECT_EQ(h.backend, &f.device) << h.reason;
    EXPECT_EQ(h.warm_up, nullptr);
}

/// The CPU and two alike devices (the fixed profile's device twice), in automatic placement.
struct TwoAlikeDevices {
    static MachineProfile profile() {
        MachineProfile m = fixed_profile();
        m.devices.push_back(m.devices[0]);
        return m;
    }
    FakeBackend cpu{true}, first{false}, second{false};
    Placement p{cpu, {&first, &second}, PlacementMode::automatic, 0, profile()};
};

/// Readers of q's input placed one after another, each adding its loss to the input's regret
/// (as the scheduler does), until one goes to `to` (at most 10): how many did not; `regret`, what
/// they paid.
static int readers_until_moved(Placement& p, PlacementQuery q, const std::vector<double>& busy, const FakeBackend& to, double& regret) {
    int readers = 0;
    for (; readers < 10; ++readers) {
        q.inputs[0].regret_s = regret;
        const auto d = p.place(q, 1.0, busy);
        if (d.backend == &to) break;
        regret += d.regret_s;
    }
    return readers;
}

// Two alike devices, the input on the first, which is busy: the region waits there (a move
// costs more than the wait)... until the readers' waits pay for the move: down and up, or only
// up from a host copy (W8's inputs, made on the CPU and gone up to one device; their readers'
// losses once counted only for a value with no host copy, and W8's eight pipelines stayed 7 to
// 1 on two logical devices of one H200, run after run).
TEST(Placement, ReadersKeptOnABusyDevicePayForMovingTheirInputToAnIdleOne) {
    for (const bool host_copy : {false, true}) {
        SCOPED_TRACE(host_copy ? "with a host copy" : "on the device only");
        Runtime rt = cpu_runtime();
        TwoAlikeDevices two;
        auto& [cpu, first, second, p] = two;
        p.set_split(SplitMode::off);
        const Region heavy = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 1'000'000)))));  // 8 MB
        PlacementQuery q = query(heavy, true, false);  // on device 0
        q.inputs[0].on_host = host_copy;
        const double up = p.upload_s(1, q.inputs[0].bytes), down = p.download_s(0, q.inputs[0].bytes);
        const double move = host_copy ? up : up + down;
        const std::vector<double> busy{0.5 * move, 0};  // the first has half a move's work queued
        auto d = p.place(q, 1.0, busy);
        ASSERT_EQ(d.backend, &first) << "the move costs more than the wait: " << d.reason;
        EXPECT_EQ(d.regret_device, 1);
        EXPECT_GT(d.regret_s, 0.0);
        double regret = 0;
        const int readers = readers_until_moved(p, q, busy, second, regret);
        EXPECT_GE(readers, 1) << "not at once";
        EXPECT_LT(readers, 10) << "but soon";
        EXPECT_GE(regret, move) << "once the move is paid for";
        if (host_copy) EXPECT_LT(regret, up + down) << "no download to pay for";
    }
}

// Splitting over two devices: a large pass whose input is split the same way, or on the host,
// runs in halves; a small one, or one whose input lives whole on one device, does not.
TEST(Placement, ALargeRegionIsSplitOverTheDevicesWhenThatFinishesSooner) {
    Runtime rt = cpu_runtime();
    TwoAlikeDevices two;
    auto& [cpu, first, second, p] = two;
    const Region large = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 100'000'000)))));  // 800 MB
    PlacementQuery in_parts = query(large, true, false);
    in_parts.inputs[0].devices = 0;
    in_parts.inputs[0].parts = 3u;  // split over both already
    auto d = p.place(in_parts, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 3u) << d.reason;
    EXPECT_TRUE(d.split_plan.partials);
    EXPECT_GE(d.split_plan.pieces(), 2);  // (and the partials' tail)
    EXPECT_LT(d.finish_s, 0.6 * p.compute_s(large, 0));
    // Whole on one device: half of it through the host costs more than half the pass saves...
    PlacementQuery whole = query(large, true, false);
    d = p.place(whole, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 0u) << d.reason;
    EXPECT_EQ(d.backend, &first);
    EXPECT_EQ(d.regret_device, kSplitRegret);
    // ...until the readers' losses pay for moving it: then split, and its windows stay as parts.
    double regret = 0;
    int readers = 0;
    for (; readers < 1000; ++readers) {
        whole.inputs[0].regret_s = regret;
        d = p.place(whole, 1.0, std::vector<double>{0, 0});
        if (d.split) break;
        regret += d.regret_s;
    }
    EXPECT_GE(readers, 1);
    EXPECT_LT(readers, 1000);
    // Small: a dispatch and a round trip per device for microseconds of work.
    const Region small = region_of(tandem::sum(tandem::exp(data(rt, 10'000))));
    EXPECT_EQ(p.place(query(small, false, false), 1.0, std::vector<double>{0, 0}).split, 0u);
    // (Unless its input is in parts already: one device would have it assembled through the host.)
    PlacementQuery small_parts = query(small, true, false);
    small_parts.inputs[0].devices = 0;
    small_parts.inputs[0].parts = 3u;
    EXPECT_EQ(p.place(small_parts, 1.0, std::vector<double>{0, 0}).split, 3u);
    // Not when a reader in the plan cannot read it in parts (its results are windows).
    const Region elementwise = region_of(tandem::exp(tandem::sin(data(rt, 100'000'000))));
    PlacementQuery windows = query(elementwise, true, false);
    windows.inputs[0].devices = 0;
    windows.inputs[0].parts = 3u;
    d = p.place(windows, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 3u) << d.reason;
    windows.readers_split = false;
    EXPECT_EQ(p.place(windows, 1.0, std::vector<double>{0, 0}).split, 0u);
    // Off: never.
    p.set_split(SplitMode::off);
    EXPECT_EQ(p.place(in_parts, 1.0, std::vector<double>{0, 0}).split, 0u);
}

// Independent work later in the plan (W8's other pipelines) keeps the other device busy while a
// region runs whole: it is not split then, unless its input is in parts already.
TEST(Placement, ARegionIsNotSplitWhenIndependentWorkFillsTheOtherDevices) {
    Runtime rt = cpu_runtime();
    TwoAlikeDevices two;
    auto& [cpu, first, second, p] = two;
    const Region large = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 100'000'000)))));
    PlacementQuery q = query(large, true, false);
    q.inputs[0].devices = 0;
    q.inputs[0].parts = 3u;
    ASSERT_EQ(p.place(q, 1.0, std::vector<double>{0, 0}).split, 3u);
    q.parallel_slack_s = 7 * p.compute_s(large, 0);
    EXPECT_EQ(p.place(q, 1.0, std::vector<double>{0, 0}).split, 3u) << "its input in parts: read in place";
    // In parts and whole on a device too (a whole input whose windows a split moved, W8's first
    // pipeline after a split run): whole where it is, the seven others on the other device. (It
    // was split run after run, its device doing four and a half pipelines, the other three and a
    // half.)
    q.inputs[0].devices = 2u;
    auto whole = p.place(q, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(whole.split, 0u) << whole.reason;
    EXPECT_EQ(whole.backend, &second) << whole.reason;
    q.inputs[0].devices = 0;
    // Its input on the host: split when nothing else would run on the other device...
    PlacementQuery up = query(large, false, false);
    up.inputs[0].regret_s = 1.0;  // (its upload paid for: priced as free, as an uploaded input)
    auto d = p.place(up, 1.0, std::vector<double>{0, 0});
    ASSERT_EQ(d.split, 3u) << d.reason;
    // ...not when seven more like it, independent of it, can run there meanwhile.
    up.parallel_slack_s = 7 * p.compute_s(large, 0);
    d = p.place(up, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 0u) << d.reason;
    EXPECT_NE(d.backend, &cpu);
    // Too little of it to fill the other device: split.
    up.parallel_slack_s = 0.1 * p.compute_s(large, 0);
    EXPECT_EQ(p.place(up, 1.0, std::vector<double>{0, 0}).split, 3u);
    // Always: split whatever the plan holds.
    up.parallel_slack_s = 7 * p.compute_s(large, 0);
    p.set_split(SplitMode::always);
    EXPECT_EQ(p.place(up, 1.0, std::vector<double>{0, 0}).split, 3u);
}

// An input only in parts over the devices, with a host copy (W8's first input, split once at
// set-up while its upload was not paid for): its region splits, though seven independent ones
// would keep the other device busy; the readers' loss (the share of the other device the pieces
// take) pays for its upload whole, and then it goes whole.
TEST(Placement, ARegionSplitOnlyForAnInputInPartsPaysForReadingItWhole) {
    Runtime rt = cpu_runtime();
    TwoAlikeDevices two;
    auto& [cpu, first, second, p] = two;
    const Region large = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 100'000'000)))));
    PlacementQuery q = query(large, false, false);
    q.inputs[0].parts = 3u;  // in parts on both, and on the host
    q.parallel_slack_s = 7 * p.compute_s(large, 0);
    auto d = p.place(q, 1.0, std::vector<double>{0, 0});
    ASSERT_EQ(d.split, 3u) << d.reason;
    EXPECT_EQ(d.regret_device, kWholeRegret) << d.reason;
    EXPECT_NEAR(d.regret_s, p.compute_s(large, 0) / 2, 1e-9) << "the other device's half";
    double regret = 0;
    int readers = 0;
    for (; readers < 100; ++readers) {
        q.inputs[0].regret_s = regret;
        d = p.place(q, 1.0, std::vector<double>{0, 0});
        if (!d.split) break;
        regret += d.regret_s;
    }
    EXPECT_GE(readers, 1) << "not at once";
    EXPECT_LT(readers, 100) << "but once its upload is paid for";
    EXPECT_GE(regret, p.upload_s(0, q.inputs[0].bytes));
    EXPECT_NE(d.backend, &cpu) << d.reason;
    // Nothing independent to fill the other device (a chain): split, no regret.
    q.inputs[0].regret_s = 0;
    q.parallel_slack_s = 0;
    d = p.place(q, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 3u) << d.reason;
    EXPECT_EQ(d.regret_s, 0.0) << d.reason;
    // In parts with no host copy: assembling it is not what whole regret pays for.
    q.inputs[0].on_host = false;
    q.parallel_slack_s = 7 * p.compute_s(large, 0);
    d = p.place(q, 1.0, std::vector<double>{0, 0});
    EXPECT_EQ(d.split, 3u) << d.reason;
    EXPECT_NE(d.regret_device, kWholeRegret) << d.reason;
}

// Two devices of one kind (the same identity): what runs taught about one prices the other
// until it has runs of its own; a device of another kind learns nothing from them.
TEST(Placement, AlikeDevicesShareWhatRunsTaught) {
    Runtime rt = cpu_runtime();
    FakeBackend cpu{true}, a{false}, b{false}, other{false};
    a.id = b.id = "H200 driver 580";
    other.id = "another GPU";
    MachineProfile m = fixed_profile();
    m.devices.push_back(m.devices[0]);
    m.devices.push_back(m.devices[0]);
    Placement p(cpu, {&a, &b, &other}, PlacementMode::automatic, 0, m);
    const Region heavy = region_of(tandem::sum(tandem::exp(tandem::sin(data(rt, 1'000'000)))));
    for (int i = 0; i < 3; ++i) p.learn(heavy, 0, 3 * p.model_s(heavy, 0));
    EXPECT_DOUBLE_EQ(p.compute_s(heavy, 0), 3 * p.model_s(heavy, 0));
    EXPECT_DOUBLE_EQ(p.compute_s(heavy, 1), 3 * p.model_s(heavy, 1)) << "alike: taught by the first";
    EXPECT_DOUBLE_EQ(p.compute_s(heavy, 2), p.model_s(heavy, 2)) << "another kind: its own model";
    // Fewer runs of its own than correct the model: still the first's.
    for (int i = 0; i < 2; ++i) {
        p.learn(heavy, 1, 2 * p.model_s(heavy, 1));
        EXPECT_DOUBLE_EQ(p.compute_s(heavy, 1), 3 * p.model_s(heavy, 1)) << i + 1 << " run(s) of its own";
    }
    p.learn(heavy, 1, 2 * p.model_s(heavy, 1));
    EXPECT_DOUBLE_EQ(p.compute_s(heavy, 1), 2 * p.model_s(heavy, 1)) << "its own runs, once it has enough";
}
