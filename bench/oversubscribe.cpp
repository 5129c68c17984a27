// A program whose arrays add up to more than the device holds: K arrays arrive from the host, and
// a running state is stepped with each, every step kept (a user keeping a history). Forced to the
// GPU with a memory budget of B bytes, the least recently used results are written back and
// dropped as the program goes; on the CPU, nothing moves. The same program on a device without
// the budget shows what the eviction costs.
//
//   tandem-oversubscribe --mode cpu|gpu|auto [--arrays K] [--elements N] [--reps R]
//   (TANDEM_DEVICE_MEMORY_LIMIT sets the budget)
//
// A timed run makes the K inputs (adopted from host vectors made before the timer starts), steps
// the state through them, evaluating each step where it ran, then gathers every step. Prints one
// JSON line: the median and all samples (ms), the runtime's transfers and evictions per run, and
// the results' checksum (the same in every mode: exact arithmetic).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <vector>

#include "tandem/tandem.hpp"

int main(int argc, char** argv) {
    CLI::App app{"A program larger than the device's memory budget", "tandem-oversubscribe"};
    std::string mode = "gpu";
    std::int64_t elements = std::int64_t{1} << 25;
    int arrays = 24, reps = 3, warmup = 1;
    app.add_option("--mode", mode, "cpu, gpu (forced) or auto")->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_option("--arrays", arrays, "input arrays (and kept steps) per run")->check(CLI::Range(1, 4096));
    app.add_option("--elements", elements, "elements of each array (f64)")->check(CLI::Range(16LL, 1LL << 32));
    app.add_option("--reps", reps, "timed runs")->check(CLI::Range(1, 1000));
    app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 100));
    CLI11_PARSE(app, argc, argv);

    try {
        tandem::Config c = tandem::Config::from_environment();
        if (mode == "cpu") {
            c.device = "cpu";
        } else {
            if (c.device.rfind("vulkan", 0) != 0) c.device = "vulkan";
            c.placement = mode == "gpu" ? "gpu" : "auto";
        }
        tandem::Runtime rt(c);
        const auto n = static_cast<std::size_t>(elements);
        std::vector<double> samples;
        double checksum = 0;
        tandem::Metrics before = rt.metrics(), after;
        for (int run = 0; run < warmup + reps; ++run) {
            std::vector<std::vector<double>> data(static_cast<std::size_t>(arrays));
            for (int k = 0; k < arrays; ++k) {
                data[static_cast<std::size_t>(k)].resize(n);
                for (std::size_t i = 0; i < n; ++i)
                    data[static_cast<std::size_t>(k)][i] = static_cast<double>((i * 7 + static_cast<std::size_t>(k) * 13) % 1000) - 500.0;
            }
            if (run == warmup) before = rt.metrics();
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<tandem::Array> steps;
            tandem::Array y = rt.zeros({elements, 1});
            for (int k = 0; k < arrays; ++k) {
                tandem::Array x = rt.adopt(std::move(data[static_cast<std::size_t>(k)]), {elements, 1});
                y = tandem::max(x, y) - tandem::floor(x * 0.5) + y * 0.5;
                (void)rt.evaluate({y}).get();
                steps.push_back(y);
            }
            std::vector<tandem::Array> sums;
            for (auto& s : steps) sums.push_back(tandem::sum(s));
            auto host = rt.gather(sums).get();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (run >= warmup) samples.push_back(ms);
            checksum = 0;
            for (auto& h : host) checksum += h.at(0);
        }
        rt.wait_idle();
        after = rt.metrics();
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        const double runs = std::max(1, reps);
        auto per_run_mb = [&](std::uint64_t a, std::uint64_t b) { return static_cast<double>(a - b) / runs / 1e6; };
        nlohmann::json out = {
            {"mode", mode},
            {"arrays", arrays},
            {"elements", elements},
            {"working_set_GB", 2.0 * arrays * static_cast<double>(elements) * 8 / 1e9},
            {"budget_GB", static_cast<double>(after.device_memory_budget) / 1e9},
            {"median_ms", sorted[sorted.size() / 2]},
            {"samples_ms", samples},
            {"upload_MB_per_run", per_run_mb(after.upload_bytes, before.upload_bytes)},
            {"download_MB_per_run", per_run_mb(after.download_bytes, before.download_bytes)},
            {"evictions_per_run", static_cast<double>(after.evictions - before.evictions) / runs},
            {"write_back_MB_per_run", per_run_mb(after.written_back_bytes, before.written_back_bytes)},
            {"device_regions_per_run", static_cast<double>(after.device_regions - before.device_regions) / runs},
            {"fallbacks", after.device_fallbacks},
            {"peak_resident_GB", static_cast<double>(after.device_peak_resident_bytes) / 1e9},
            {"checksum", checksum},
        };
        std::cout << out.dump() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "tandem-oversubscribe: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
