// `tandem calibrate`: micro-benchmarks through the public API, one per rate of the cost model
// (scheduler/cost_model.hpp), on the CPU executor and on each device the configuration opens (each
// alone, every region forced there), with the link between it and the host. Each is timed after a
// warm-up (compiles, first allocations) as the median of several runs, synchronised (evaluate()
// waits for the device). Rates come from differences where a fixed cost would hide them: the
// launch cost from a chain of unfused one-op regions, the round trip from one region less that.
#include "tandem/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include "calibrate/calibration_file.hpp"
#include "runtime/runtime_impl.hpp"
#include "scheduler/placement.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

using detail::CostClass;
using detail::ExecutorProfile;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kSimple = static_cast<std::size_t>(CostClass::simple);
constexpr std::size_t kDivide = static_cast<std::size_t>(CostClass::divide);
constexpr std::size_t kTranscendental = static_cast<std::size_t>(CostClass::transcendental);
constexpr std::size_t kRandom = static_cast<std::size_t>(CostClass::random);

/// The median seconds of `reps` runs of f after one unmeasured run; `setup` (untimed) before each.
template <class Setup, class F>
double median_seconds(int reps, Setup&& setup, F&& f) {
    std::vector<double> t;
    for (int i = 0; i <= reps; ++i) {
        setup();
        const auto t0 = Clock::now();
        f();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (i > 0) t.push_back(s);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
template <class F>
double median_seconds(int reps, F&& f) {
    return median_seconds(reps, [] {}, std::forward<F>(f));
}

void evaluate(Runtime& rt, const Array& a) { (void)rt.evaluate({a}).get(); }

/// A rate from `work` units done in `seconds`, of which `fixed` is overhead: never below a tenth
/// of the total's rate (timer noise on a fixed cost larger than the work must not give infinity).
double rate(double work, double seconds, double fixed) { return work / std::max(seconds - fixed, 0.1 * seconds); }

struct Sizes {
    std::int64_t stream, chain, matmul;
    int reps;
};

class Measure {
public:
    Measure(Runtime& rt, Runtime& unfused, const Sizes& s, std::function<void(const std::string&)> step)
        : rt_(rt), unfused_(unfused), s_(s), step_(std::move(step)) {}

    /// A fresh input of n elements where the runtime computes (the device when forced there).
    Array input(std::int64_t n, DType t) {
        Array x = tandem::rand(rt_, {n, 1}, t) * 0.5 + 0.25;
        evaluate(rt_, x);
        return x;
    }

    /// launch: a chain of one-op regions (fusion off) against one; round trip: one region.
    void overheads(double& launch, double& round_trip) {
        Array x = tandem::rand(unfused_, {16, 1});
        evaluate(unfused_, x);
        constexpr int kChain = 32;
        const double one = median_seconds(s_.reps * 4, [&] { evaluate(unfused_, x + 1.0); });
        const double chain = median_seconds(s_.reps * 4, [&] {
            Array y = x;
            for (int i = 0; i < kChain; ++i) y = y + 1.0;
            evaluate(unfused_, y);
        });
        launch = std::max((chain - one) / (kChain - 1), 1e-7);
        round_trip = std::max(one - launch, 0.0);
        step_("overheads");
    }

    /// The executor's rates; `round_trip` receives what one region gathered costs beyond its launch.
    ExecutorProfile profile(const std::string& name, double& round_trip) {
        ExecutorProfile p;
        p.name = name;
        double launch = 0;
        overheads(launch, round_trip);
        p.launch_s = launch;
        const double fixed = round_trip + launch;
        const std::int64_t n = s_.stream;
        Array x = input(n, DType::f64);
        const double copy = median_seconds(s_.reps, [&] { evaluate(rt_, x + 1.0); });
        p.bytes_per_s = rate(16.0 * static_cast<double>(n), copy, fixed);
        step_("bandwidth");
        for (DType t : {DType::f64, DType::f32}) {
            const std::size_t k = t == DType::f32 ? 1 : 0;
            const std::int64_t m = s_.chain;
            Array y0 = input(m, t);
            auto chain = [&](auto op, int length) {
                return median_seconds(s_.reps, [&] {
                    Array y = y0;
                    for (int i = 0; i < length; ++i) y = op(y);
                    evaluate(rt_, y);
                });
            };
            const double work = static_cast<double>(m);
            p.ops_per_s[kSimple][k] = rate(64 * work, chain([](const Array& y) { return y * 1.0000001 + 1e-9; }, 32), fixed);
            p.ops_per_s[kDivide][k] = rate(32 * work, chain([](const Array& y) { return y / 1.0000001; }, 32), fixed);
            p.ops_per_s[kTranscendental][k] = rate(8 * work, chain([](const Array& y) { return tandem::sin(y); }, 8), fixed);
            const double randn = median_seconds(s_.reps, [&] { evaluate(rt_, tandem::randn(rt_, {m, 1}, t)); });
            p.ops_per_s[kRandom][k] = rate(work, randn, fixed);
            const std::int64_t q = s_.matmul;
            Array a = tandem::reshape(input(q * q, t), {q, q});
            const double mm = median_seconds(s_.reps, [&] { evaluate(rt_, tandem::matmul(a, a)); });
            p.flops_per_s[k] = rate(2.0 * static_cast<double>(q) * static_cast<double>(q) * static_cast<double>(q), mm, fixed);
            step_(t == DType::f32 ? "single precision" : "double precision");
        }
        return p;
    }

    /// The link: uploads of fresh host arrays, downloads of fresh device values.
    detail::LinkProfile link(double round_trip, double device_copy_bytes_per_s) {
        detail::LinkProfile l;
        l.sync_s = round_trip;
        const std::int64_t n = s_.stream;
        std::vector<double> host(static_cast<std::size_t>(n), 0.5);
        Array a;
        const double up = median_seconds(
            s_.reps, [&] { a = rt_.array(std::span<const double>(host), {n, 1}); }, [&] { evaluate(rt_, a + 1.0); });
        const double copy = 16.0 * static_cast<double>(n) / device_copy_bytes_per_s;
        l.upload_bytes_per_s = rate(8.0 * static_cast<double>(n), up, round_trip + copy);
        Array x = input(n, DType::f64);
        Array y;
        double k = 0;
        const double down = median_seconds(
            s_.reps, [&] { y = x + (k += 1.0); evaluate(rt_, y); }, [&] { (void)y.gather().get(); });
        l.download_bytes_per_s = rate(8.0 * static_cast<double>(n), down, round_trip);
        Array small = input(16, DType::f64);
        const double tiny = median_seconds(
            s_.reps * 4, [&] { y = small + (k += 1.0); evaluate(rt_, y); }, [&] { (void)y.gather().get(); });
        l.latency_s = std::max(tiny - round_trip, 1e-6);
        step_("transfers");
        return l;
    }

private:
    Runtime& rt_;
    Runtime& unfused_;
    Sizes s_;
    std::function<void(const std::string&)> step_;
};

std::string rates_text(const ExecutorProfile& p) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: launch %.1f us, %.1f GB/s; Gop/s f64 / f32: simple %.1f / %.1f, divide %.1f / %.1f, "
                  "transcendental %.2f / %.2f, random %.2f / %.2f; GEMM %.0f / %.0f GFLOP/s\n",
                  p.name.c_str(), 1e6 * p.launch_s, p.bytes_per_s / 1e9, p.ops_per_s[kSimple][0] / 1e9,
                  p.ops_per_s[kSimple][1] / 1e9, p.ops_per_s[kDivide][0] / 1e9, p.ops_per_s[kDivide][1] / 1e9,
                  p.ops_per_s[kTranscendental][0] / 1e9, p.ops_per_s[kTranscendental][1] / 1e9,
                  p.ops_per_s[kRandom][0] / 1e9, p.ops_per_s[kRandom][1] / 1e9, p.flops_per_s[0] / 1e9,
                  p.flops_per_s[1] / 1e9);
    return buf;
}

/// From which size the model sends each kind of work to the device, with its data on the host
/// (and the result wanted there), and with its data already on the device.
std::string crossovers(const detail::ExecutorProfile& cpu_rates, const detail::DeviceProfile& device_profile,
                       detail::DeviceClass device_class) {
    struct CpuSide : detail::Backend {
        std::string_view name() const noexcept override { return "cpu"; }
        bool on_host() const noexcept override { return true; }
        void submit(detail::Submission) override {}
    } cpu;
    struct DeviceSide : detail::Backend {
        detail::DeviceClass cls;
        std::string_view name() const noexcept override { return "device"; }
        bool on_host() const noexcept override { return false; }
        detail::DeviceClass device_class() const noexcept override { return cls; }
        void submit(detail::Submission) override {}
    } device;
    device.cls = device_class;
    detail::MachineProfile m;
    m.cpu = cpu_rates;
    m.devices = {device_profile};
    const detail::Placement placement(cpu, {&device}, detail::PlacementMode::automatic, 0, m);
    struct Kind {
        const char* name;
        std::size_t cls;
        DType type;
        int ops;
        bool reduce, product;
    };
    const Kind kinds[] = {
        {"elementwise f64 (x .* 2 + 1)", kSimple, DType::f64, 2, false, false},
        {"elementwise f64 (exp)", kTranscendental, DType::f64, 1, false, false},
        {"elementwise f32 (exp)", kTranscendental, DType::f32, 1, false, false},
        {"sum f64", kSimple, DType::f64, 1, true, false},
        {"matrix product f64 (n x n, elements of the result)", 0, DType::f64, 0, false, true},
    };
    std::ostringstream out;
    for (const Kind& k : kinds) {
        std::string from[2];
        for (int on_device = 0; on_device < 2; ++on_device) {
            for (int e = 4; e <= 32; ++e) {
                const std::int64_t n = std::int64_t{1} << e;
                const std::int64_t size = static_cast<std::int64_t>(dtype_size(k.type));
                detail::Region r;
                r.kind = k.product ? detail::RegionKind::matmul : k.reduce ? detail::RegionKind::reduce : detail::RegionKind::elementwise;
                r.shape = Shape{n, 1};
                detail::RegionCost& c = r.cost;
                c.elements = n;
                if (k.product) {
                    const auto side = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
                    c.m = c.n = c.k = side;
                    c.input_bytes = {side * side * size, side * side * size};
                    c.output_bytes = {side * side * size};
                } else {
                    c.input_bytes = {n * size};
                    c.output_bytes = {k.reduce ? size : n * size};
                    c.ops[k.cls][k.type == DType::f32 ? 1 : 0] = k.ops * n;
                }
                detail::PlacementQuery q;
                q.region = &r;
                for (auto b : c.input_bytes) q.inputs.push_back({b, on_device == 0, on_device == 1, 0});
                if (on_device == 0) q.bytes_to_host = c.bytes_written();
                if (placement.place(q, 0, 0).backend == &device) {
                    from[on_device] = "from " + std::to_string(n) + " elements";
                    break;
                }
            }
            if (from[on_device].empty()) from[on_device] = "never (up to 2^32 elements)";
        }
        out << "  " << k.name << ": the device " << from[0] << " with host data, " << from[1] << " with device data\n";
    }
    return out.str();
}

}  // namespace

CalibrationResult calibrate(const Config& config, const CalibrateOptions& options) {
    const auto t0 = Clock::now();
    CalibrationResult result;
    const std::string path = options.output.empty()
                                 ? (config.calibration_file.empty() || config.calibration_file == "none"
                                        ? detail::default_calibration_path()
                                        : config.calibration_file)
                                 : options.output;
    if (path.empty()) throw ConfigError("calibration: no place to write it (set TANDEM_CALIBRATION or HOME, or pass an output)");
    detail::check_writable(path);  // before a minute of measuring, not after
    Config cpu_config = config;
    cpu_config.device = "cpu";
    Runtime cpu(cpu_config);
    Config cpu_unfused = cpu_config;
    cpu_unfused.fusion = false;
    Runtime cpu_chain(cpu_unfused);
    Config device_config = config;
    device_config.placement = "gpu";
    device_config.device_min_elements = 0;
    device_config.calibration_file = "none";
    // Each device the configuration opens, measured alone (a device opened twice, once).
    std::vector<Config> per_device;
    std::vector<std::pair<std::string, std::string>> opened;  // every device opened: its name, its identity
    {
        Runtime devices(device_config);
        std::set<std::string> seen;
        for (const detail::Backend* d : devices.impl().devices()) {
            opened.emplace_back("device " + std::to_string(d->ordinal()) + " (" + std::string(d->name()) + ":" +
                                    std::to_string(d->system_index()) + ")",
                                d->identity());
            if (!seen.insert(d->identity()).second) continue;
            Config one = device_config;
            one.device = std::string(d->name()) + ":" + std::to_string(d->system_index());
            per_device.push_back(one);
        }
    }

    const int steps = 4 + 5 * static_cast<int>(per_device.size());
    int done = 0;
    auto step = [&](const std::string& what) {
        if (options.progress) options.progress(std::min(1.0, static_cast<double>(++done) / steps), what);
    };
    const Sizes cpu_sizes = options.quick ? Sizes{std::int64_t{1} << 21, std::int64_t{1} << 17, 256, 3}
                                          : Sizes{std::int64_t{1} << 24, std::int64_t{1} << 20, 768, 7};
    detail::Calibration c;
    c.machine = detail::machine_key(cpu.impl().topology(), cpu.impl().threads());
    c.created_unix_s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    {
        Measure m(cpu, cpu_chain, cpu_sizes, step);
        double round_trip = 0;
        c.profile.cpu = m.profile("cpu (" + std::to_string(cpu.impl().threads()) + " threads)", round_trip);
    }
    std::vector<detail::DeviceClass> classes;
    for (const Config& one : per_device) {
        Runtime device(one);
        Config unfused = one;
        unfused.fusion = false;
        Runtime device_chain(unfused);
        const detail::Backend& backend = *device.impl().device();
        const detail::DeviceClass cls = backend.device_class();
        const bool on_cpu = cls == detail::DeviceClass::cpu_device;
        // A driver on the CPU gets the CPU's sizes; a GPU needs more work to rise above its fixed
        // costs, even when quick (with the CPU's sizes an H100 measured 80 GFLOP/s of f64 GEMM and
        // 28 Gop/s of multiply-adds: launches, not rates), only fewer runs.
        const Sizes sizes = on_cpu          ? cpu_sizes
                            : options.quick ? Sizes{std::int64_t{1} << 25, std::int64_t{1} << 23, 2048, 3}
                                            : Sizes{std::int64_t{1} << 26, std::int64_t{1} << 24, 4096, 7};
        Measure m(device, device_chain, sizes, [&](const std::string& what) { step(one.device + ": " + what); });
        detail::DeviceProfile d;
        d.identity = backend.identity();
        d.source = "calibrated";
        double round_trip = 0;
        d.rates = m.profile(one.device + " " + backend.identity(), round_trip);
        d.link = m.link(round_trip, d.rates.bytes_per_s);
        c.profile.devices.push_back(std::move(d));
        classes.push_back(cls);
    }
    detail::write_calibration(c, path);
    result.path = path;
    result.machine = c.machine.to_string();
    result.rates = rates_text(c.profile.cpu);
    for (std::size_t d = 0; d < c.profile.devices.size(); ++d) {
        const detail::DeviceProfile& dp = c.profile.devices[d];
        result.rates += rates_text(dp.rates);
        char buf[256];
        std::snprintf(buf, sizeof buf, "  its link: upload %.1f GB/s, download %.1f GB/s, a copy's latency %.1f us, round trip %.1f us\n",
                      dp.link.upload_bytes_per_s / 1e9, dp.link.download_bytes_per_s / 1e9, 1e6 * dp.link.latency_s,
                      1e6 * dp.link.sync_s);
        result.rates += buf;
        if (c.profile.devices.size() > 1) result.crossovers += per_device[d].device + ":\n";
        result.crossovers += crossovers(c.profile.cpu, dp, classes[d]);
    }
    if (opened.size() > 1) {
        // Between devices, data goes through the host: down one link, up the other (each link
        // measured above; alike devices share one measurement). Vulkan shares memory between
        // devices only within a device group (tandem info lists each device's), and Tandem does
        // not use peer memory: the host path is the one every pair takes.
        auto profile_of = [&](const std::string& identity) -> const detail::DeviceProfile* {
            for (const auto& dp : c.profile.devices)
                if (dp.identity == identity) return &dp;
            return nullptr;
        };
        constexpr std::int64_t kBytes = std::int64_t{64} << 20;
        result.rates += "  between devices, 64 MiB through the host:";
        for (const auto& [from, from_id] : opened)
            for (const auto& [to, to_id] : opened) {
                const detail::DeviceProfile *a = profile_of(from_id), *b = profile_of(to_id);
                if (&from == &to || !a || !b) continue;
                const double s = detail::download_seconds(kBytes, a->link) + a->link.sync_s + detail::upload_seconds(kBytes, b->link);
                char buf[128];
                std::snprintf(buf, sizeof buf, " %s -> %s %.2f ms (%.1f GB/s);", from.c_str(), to.c_str(), 1e3 * s,
                              static_cast<double>(kBytes) / s / 1e9);
                result.rates += buf;
            }
        result.rates += "\n";
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return result;
}

}  // namespace tandem
