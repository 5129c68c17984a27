// A region larger than the device's memory budget (scheduler/streaming.hpp): three arrays of N
// doubles, made where the runtime computes (rand: on the device when forced there, which cannot
// hold all three, so the budget writes the oldest back), then sum(a .* b + c), and the same
// expression gathered whole (--whole). Forced to the GPU it streams in pieces, reading what is
// on the device in place; on the CPU the arrays never move.
//
//   tandem-stream --mode cpu|gpu|auto --elements N [--whole] [--reps R]
//   (TANDEM_DEVICE_MEMORY_LIMIT sets the budget)
//
// Prints one JSON line: the median and all samples (ms) of the reduction (or the whole gather),
// its transfers, the pieces, and the value (the same bits in every mode).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include "tandem/tandem.hpp"

int main(int argc, char** argv) {
    CLI::App app{"A region larger than the device's memory budget", "tandem-stream"};
    std::string mode = "gpu";
    std::int64_t elements = std::int64_t{1} << 27;
    int reps = 3;
    bool whole = false;
    app.add_option("--mode", mode, "cpu, gpu (forced) or auto")->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_option("--elements", elements, "elements of each array (f64)")->check(CLI::Range(1024LL, 1LL << 34));
    app.add_option("--reps", reps, "timed runs")->check(CLI::Range(1, 1000));
    app.add_flag("--whole", whole, "gather a .* b + c itself, not its sum");
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
        std::vector<tandem::Array> abc;
        for (int k = 0; k < 3; ++k) {
            abc.push_back(tandem::rand(rt, {elements, 1}) - 0.5);
            rt.evaluate({abc.back()}).get();
        }
        rt.wait_idle();
        std::vector<double> samples;
        double value = 0;
        const tandem::Metrics before = rt.metrics();
        for (int run = 0; run < reps; ++run) {
            const auto t0 = std::chrono::steady_clock::now();
            const tandem::Array e = abc[0] * abc[1] + abc[2];
            const auto h = (whole ? e : tandem::sum(e)).gather().get();
            samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            value = whole ? h.at(h.numel() - 1) : h.at(0);
        }
        rt.wait_idle();
        const tandem::Metrics after = rt.metrics();
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        const double runs = reps;
        nlohmann::json out = {
            {"mode", mode},
            {"elements", elements},
            {"whole", whole},
            {"arrays_GB", 3.0 * static_cast<double>(elements) * 8 / 1e9},
            {"budget_GB", static_cast<double>(after.device_memory_budget) / 1e9},
            {"median_ms", sorted[sorted.size() / 2]},
            {"samples_ms", samples},
            {"upload_MB_per_run", static_cast<double>(after.upload_bytes - before.upload_bytes) / runs / 1e6},
            {"download_MB_per_run", static_cast<double>(after.download_bytes - before.download_bytes) / runs / 1e6},
            {"write_back_MB_before", static_cast<double>(before.written_back_bytes) / 1e6},
            {"streamed_regions", after.streamed_regions - before.streamed_regions},
            {"pieces_per_run", static_cast<double>(after.streamed_pieces - before.streamed_pieces) / runs},
            {"fallbacks", after.device_fallbacks},
            {"peak_resident_GB", static_cast<double>(after.device_peak_resident_bytes) / 1e9},
            {"value", value},
        };
        std::cout << out.dump() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "tandem-stream: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
