// A mixed program, as a user would write one: a large array that lives on the device, stepped
// and summed, beside batches of data that arrive from the host, each reduced to a few statistics
// (mean, variance, maximum). Forced to the GPU, every batch crosses the link first; forced to the
// CPU, the large step runs at the CPU's speed; automatic placement can keep the batches on the
// CPU and the large step on the GPU, both at once.
//
//   tandem-mixed --mode cpu|gpu|auto [--large N] [--batches K] [--batch-size M] [--reps R]
//
// A timed run builds the program over K fresh batches (adopted from host vectors made before the
// timer starts: no copy) and gathers every result. Prints one JSON line: the median and all
// samples (ms), what the runtime did per run, and the results' checksum (the same in every mode,
// to 1e-9 relative).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <vector>

#include "tandem/tandem.hpp"

namespace {

tandem::Config config_for(const std::string& mode) {
    tandem::Config c = tandem::Config::from_environment();
    if (mode == "cpu") {
        c.device = "cpu";
    } else {
        if (c.device.rfind("vulkan", 0) != 0) c.device = mode == "gpu" ? "vulkan" : c.device;
        c.placement = mode == "gpu" ? "gpu" : "auto";
    }
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"A mixed program: a device-resident step beside host batches", "tandem-mixed"};
    std::string mode = "auto";
    std::int64_t large = std::int64_t{1} << 24, batch = std::int64_t{1} << 18;
    int batches = 16, reps = 7, warmup = 2;
    app.add_option("--mode", mode, "cpu, gpu (forced) or auto")->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_option("--large", large, "elements of the device-resident array")->check(CLI::Range(16LL, 1LL << 31));
    app.add_option("--batches", batches, "host batches per run")->check(CLI::Range(1, 1024));
    app.add_option("--batch-size", batch, "elements of each batch")->check(CLI::Range(16LL, 1LL << 28));
    app.add_option("--reps", reps, "timed runs")->check(CLI::Range(1, 1000));
    app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(1, 100));
    CLI11_PARSE(app, argc, argv);

    try {
        tandem::Runtime rt(config_for(mode));
        // The large array, made where the runtime computes it (and left there).
        tandem::Array u = tandem::sin(rt.linspace(0, 100, large)) * 2.0;
        (void)rt.evaluate({tandem::reshape(u, {large, 1})}).get();
        u = tandem::reshape(u, {large, 1});
        auto batch_data = [&](int k) {
            std::vector<double> v(static_cast<std::size_t>(batch));
            for (std::int64_t i = 0; i < batch; ++i)
                v[static_cast<std::size_t>(i)] = std::sin(0.001 * static_cast<double>(i + k));
            return v;
        };
        std::vector<double> samples;
        double checksum = 0;
        nlohmann::json per_run;
        for (int run = 0; run < warmup + reps; ++run) {
            std::vector<tandem::Array> in;
            for (int k = 0; k < batches; ++k) in.push_back(rt.adopt(batch_data(k), {batch, 1}));
            const tandem::Metrics before = rt.metrics();
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<tandem::Array> out;
            // The large step: transcendental work on device-resident data, one number back.
            out.push_back(tandem::sum(tandem::sin(u) * tandem::exp(-(u * u)) + 0.5 * u));
            for (const tandem::Array& b : in) {
                const tandem::Array m = tandem::mean(b);
                out.push_back(m);
                out.push_back(tandem::mean(tandem::power(b - m, 2.0)));
                out.push_back(tandem::max(b));
            }
            const std::vector<tandem::HostArray> results = rt.gather(out).get();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (run < warmup) continue;
            samples.push_back(ms);
            const tandem::Metrics after = rt.metrics();
            per_run = {{"device_regions", after.device_regions - before.device_regions},
                       {"regions", after.regions_executed - before.regions_executed},
                       {"upload_MB", static_cast<double>(after.upload_bytes - before.upload_bytes) / 1e6},
                       {"download_MB", static_cast<double>(after.download_bytes - before.download_bytes) / 1e6}};
            checksum = 0;
            for (const auto& h : results) checksum += h.at(0);
        }
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        std::cout << nlohmann::json{{"mode", mode},
                                    {"large", large},
                                    {"batches", batches},
                                    {"batch_size", batch},
                                    {"median_ms", sorted[sorted.size() / 2]},
                                    {"samples_ms", samples},
                                    {"last_run", per_run},
                                    {"checksum", checksum},
                                    {"placement", rt.info().placement}}
                         .dump()
                  << '\n';
    } catch (const std::exception& e) {
        std::cerr << "tandem-mixed: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
