#include "scheduler/cost_model.hpp"

#include <algorithm>
#include <tuple>
#include <cmath>

namespace tandem::detail {

namespace {

constexpr std::size_t kSimple = static_cast<std::size_t>(CostClass::simple);
constexpr std::size_t kDivide = static_cast<std::size_t>(CostClass::divide);
constexpr std::size_t kTranscendental = static_cast<std::size_t>(CostClass::transcendental);
constexpr std::size_t kRandom = static_cast<std::size_t>(CostClass::random);

/// Every rate of `p` times `f` (a slower or faster relative of a profile).
ExecutorProfile scaled(ExecutorProfile p, double f) {
    p.bytes_per_s *= f;
    for (auto& c : p.ops_per_s)
        for (auto& r : c) r *= f;
    for (auto& r : p.flops_per_s) r *= f;
    return p;
}

}  // namespace

// The CPU's rates per thread, from the block interpreter's measured passes (docs/benchmarks.md,
// issue 9's CPU runs on AVX2 and AVX-512 machines): simple ops at a few per nanosecond, the
// vectorised elementary functions at about one (as SLEEF's were; the library's are 1.5-5x slower,
// the double-double ones far more: the online model corrects this per region), Philox normals at half of that, the GEMM near its peak.
ExecutorProfile default_cpu_profile(int threads) {
    const double t = std::max(1, threads);
    ExecutorProfile p;
    p.name = "cpu (" + std::to_string(static_cast<int>(t)) + " threads)";
    p.launch_s = 3e-6;
    p.bytes_per_s = std::min(8e9 * t, 80e9);
    p.ops_per_s[kSimple] = {4e9 * t, 8e9 * t};
    p.ops_per_s[kDivide] = {1e9 * t, 2e9 * t};
    p.ops_per_s[kTranscendental] = {0.8e9 * t, 1.2e9 * t};
    p.ops_per_s[kRandom] = {0.5e9 * t, 0.5e9 * t};
    p.flops_per_s = {25e9 * t, 50e9 * t};
    return p;
}

// Devices: a discrete GPU's rates are set between a workstation card and a data-centre one (an
// H100 streams 3 TB/s and does f64 at 34 TFLOP/s; a consumer card does f64 at 1/64 of its f32
// rate), so the defaults send it what any GPU wins and calibration settles the rest.
ExecutorProfile default_device_profile(DeviceClass kind, int cpu_threads) {
    ExecutorProfile p;
    switch (kind) {
        case DeviceClass::cpu_device:
            // A Vulkan driver on the CPU (lavapipe): the same cores through a slower compiler and
            // a heavier submission. Measured here against the CPU executor (issue 10's runs on a
            // 2-core VM): 4x (Philox normals) to 50x (f64 sin/exp) slower, ~5 ms a dispatch.
            p = scaled(default_cpu_profile(cpu_threads), 0.1);
            p.name = "Vulkan on the CPU";
            p.launch_s = 1e-3;
            return p;
        case DeviceClass::host:
        case DeviceClass::discrete_gpu:
            p.name = "discrete GPU";
            p.launch_s = 5e-6;
            p.bytes_per_s = 1.5e12;
            p.ops_per_s[kSimple] = {1e12, 4e12};
            p.ops_per_s[kDivide] = {2e11, 1e12};
            p.ops_per_s[kTranscendental] = {1e11, 1e12};
            p.ops_per_s[kRandom] = {5e11, 5e11};
            p.flops_per_s = {5e12, 2e13};
            return p;
        case DeviceClass::integrated_gpu:
        case DeviceClass::virtual_gpu:
            p = scaled(default_device_profile(DeviceClass::discrete_gpu, cpu_threads), 0.1);
            p.name = kind == DeviceClass::integrated_gpu ? "integrated GPU" : "virtual GPU";
            p.launch_s = 10e-6;
            return p;
    }
    return p;
}

LinkProfile default_link_profile(DeviceClass kind) {
    LinkProfile l;
    switch (kind) {
        case DeviceClass::host:
        case DeviceClass::discrete_gpu:
            l.upload_bytes_per_s = l.download_bytes_per_s = 20e9;  // PCIe 4 x16, pinned staging
            l.latency_s = 10e-6;
            l.sync_s = 50e-6;
            return l;
        case DeviceClass::integrated_gpu:
        case DeviceClass::virtual_gpu:
        case DeviceClass::cpu_device:
            l.upload_bytes_per_s = l.download_bytes_per_s = 10e9;  // a memcpy
            l.latency_s = 5e-6;
            l.sync_s = kind == DeviceClass::cpu_device ? 1e-3 : 50e-6;
            return l;
    }
    return l;
}

DeviceProfile default_device(DeviceClass kind, int cpu_threads) {
    DeviceProfile d;
    d.rates = default_device_profile(kind, cpu_threads);
    d.link = default_link_profile(kind);
    return d;
}

MachineProfile default_machine_profile(int cpu_threads, const std::vector<DeviceClass>& devices) {
    MachineProfile m;
    m.cpu = default_cpu_profile(cpu_threads);
    for (DeviceClass kind : devices) m.devices.push_back(default_device(kind, cpu_threads));
    return m;
}

std::size_t MachineProfile::history_size() const noexcept {
    std::size_t n = cpu_history.size();
    for (const DeviceProfile& d : devices) n += d.history.size();
    return n;
}

double compute_seconds(const RegionCost& c, const ExecutorProfile& p) {
    const double memory = static_cast<double>(c.bytes_read() + c.bytes_written()) / p.bytes_per_s;
    double arithmetic = 0;
    for (std::size_t k = 1; k < kCostClasses; ++k)
        for (std::size_t t = 0; t < 2; ++t)
            if (c.ops[k][t]) arithmetic += static_cast<double>(c.ops[k][t]) / p.ops_per_s[k][t];
    double product = 0;
    if (c.k) product = static_cast<double>(c.flops()) / p.flops_per_s[c.product_dtype == DType::f32 ? 1 : 0];
    return p.launch_s + std::max(memory, arithmetic) + product;
}

double upload_seconds(std::int64_t bytes, const LinkProfile& l) {
    return l.latency_s + static_cast<double>(bytes) / l.upload_bytes_per_s;
}

double download_seconds(std::int64_t bytes, const LinkProfile& l) {
    return l.latency_s + static_cast<double>(bytes) / l.download_bytes_per_s;
}

std::uint64_t link_signature(bool up, std::int64_t bytes) {
    const auto size_class = static_cast<std::uint64_t>(std::max(0, std::ilogb(static_cast<double>(std::max<std::int64_t>(bytes, 1))) / 2));
    return std::uint64_t{0xA1} << 56 | static_cast<std::uint64_t>(up) << 48 | size_class << 32;
}

std::uint64_t region_signature(const RegionCost& c, RegionKind kind) {
    // Fields side by side: kind (8 bits), the op classes present per type (2 x 8), the size class.
    std::uint64_t classes = 0;
    for (std::size_t k = 1; k < kCostClasses; ++k)
        for (std::size_t t = 0; t < 2; ++t)
            if (c.ops[k][t]) classes |= std::uint64_t{1} << (8 * t + k);
    const double size = c.k ? static_cast<double>(c.flops()) : static_cast<double>(std::max<std::int64_t>(c.elements, 1));
    const auto size_class = static_cast<std::uint64_t>(std::max(0, std::ilogb(size) / 2));
    std::uint64_t product = c.k ? 1 + static_cast<std::uint64_t>(c.product_dtype == DType::f32) + 2 * c.product_precision : 0;
    return static_cast<std::uint64_t>(kind) | classes << 8 | product << 24 | size_class << 32;
}

void PerformanceHistory::observe(std::uint64_t signature, double predicted_s, double observed_s) {
    if (!(predicted_s > 0) || !(observed_s > 0) || !std::isfinite(observed_s)) return;
    Samples& s = ratios_[signature];
    s.ring[s.next] = std::clamp(observed_s / predicted_s, 1 / kMaxCorrection, kMaxCorrection);
    s.next = static_cast<std::uint8_t>((s.next + 1) % kSamples);
    s.count = static_cast<std::uint8_t>(std::min<std::size_t>(s.count + 1, kSamples));
    if (s.count < kMinSamples) return;
    std::array<double, kSamples> v = s.ring;  // (the ring holds them in its first `count` slots until full)
    const auto end = v.begin() + s.count;
    const auto mid = v.begin() + s.count / 2;
    std::nth_element(v.begin(), mid, end);
    s.median = s.count % 2 ? *mid : 0.5 * (*mid + *std::max_element(v.begin(), mid));
}

bool PerformanceHistory::wants_sample(std::uint64_t signature) {
    auto it = ratios_.find(signature);
    if (it == ratios_.end() || it->second.count < kSamples) return true;
    return ++it->second.asked % kSampleEvery == 0;
}

double PerformanceHistory::correction(std::uint64_t signature) const {
    auto it = ratios_.find(signature);
    return it == ratios_.end() || it->second.count < kMinSamples ? 1.0 : it->second.median;
}

std::vector<PerformanceHistory::Entry> PerformanceHistory::entries() const {
    std::vector<Entry> out;
    for (const auto& [sig, s] : ratios_) {
        Entry e{sig, {}};
        // Oldest first: from the next slot once the ring is full.
        const std::size_t first = s.count == kSamples ? s.next : 0;
        for (std::size_t k = 0; k < s.count; ++k) e.ratios.push_back(s.ring[(first + k) % kSamples]);
        out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.signature < b.signature; });
    return out;
}

void PerformanceHistory::add(const Entry& e) {
    for (double r : e.ratios) observe(e.signature, 1.0, r);
}

}  // namespace tandem::detail
