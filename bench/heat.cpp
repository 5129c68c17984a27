// The heat-equation stencil of examples/heat_stencil.cpp as a benchmark: a user kernel (GLSL on
// the device, C++ on the CPU executor) stepped over an n x n grid of doubles, the buffers
// ping-ponging on whichever executor runs the steps.
//
//   tandem-heat --mode cpu|gpu|auto [--n N] [--steps S] [--reps R]
//
// A timed run submits S steps and waits for the last one (nothing comes back to the host); the
// energy (the sum of the field) is gathered after the timed runs, for comparing with the peers
// (bench/heat_torch.py runs the same field and step). One JSON line: ms per step (median and all
// runs), the energy, and what the runtime did.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include "../examples/heat_kernel.hpp"

int main(int argc, char** argv) {
    CLI::App app{"The heat-equation stencil as a user kernel", "tandem-heat"};
    std::string mode = "gpu";
    std::int64_t n = 4096;
    int steps = 1000, reps = 5;
    app.add_option("--mode", mode, "cpu, gpu (forced) or auto")->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_option("--n", n, "grid side")->check(CLI::Range(3LL, 1LL << 16));
    app.add_option("--steps", steps, "steps per timed run")->check(CLI::Range(2, 1000000));
    app.add_option("--reps", reps, "timed runs")->check(CLI::Range(1, 1000));
    CLI11_PARSE(app, argc, argv);
    try {
        tandem::Config c = tandem::Config::from_environment();
        if (mode == "cpu") c.device = "cpu";
        else c.placement = mode == "gpu" ? "gpu" : "auto";
        if (mode != "cpu" && c.device.rfind("vulkan", 0) != 0) c.device = "vulkan";
        tandem::Runtime rt(c);
        const double r = 0.2;
        tandem::Buffer a(heat::initial_field(rt, n), "a"), b(rt, tandem::Shape{n, n}, tandem::DType::f64, "b");
        tandem::Queue q(rt);
        bool odd = false;  // which buffer holds the field now
        auto run = [&](int count) {
            tandem::Event last;
            for (int s = 0; s < count; ++s, odd = !odd) last = heat::step(q, odd ? b : a, odd ? a : b, r);
            last.wait();
        };
        run(steps / 10 + 2);  // pipelines built, plans cached, memory pooled
        const tandem::Metrics m0 = rt.metrics();
        std::vector<double> ms;
        for (int k = 0; k < reps; ++k) {
            const auto t0 = std::chrono::steady_clock::now();
            run(steps);
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
        }
        const tandem::Metrics m1 = rt.metrics();
        const double energy = tandem::sum((odd ? b : a).array(), tandem::all_dims).gather().get().at(0);
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        const double runs = static_cast<double>(reps) * steps;
        nlohmann::json j = {{"bench", "heat"}, {"system", "tandem"}, {"mode", mode}, {"n", n}, {"steps", steps},
                            {"total_steps", steps / 10 + 2 + reps * steps},
                            {"ms_per_step", sorted[sorted.size() / 2]}, {"samples", ms}, {"energy", energy},
                            {"regions_per_step", static_cast<double>(m1.regions_executed - m0.regions_executed) / runs},
                            {"plans_per_step", static_cast<double>(m1.plans - m0.plans) / runs},
                            {"device_regions_per_step", static_cast<double>(m1.device_regions - m0.device_regions) / runs},
                            {"batches_per_step", static_cast<double>(m1.device_batches - m0.device_batches) / runs},
                            // The mean of the steps the cost model sampled (a step is one kernel).
                            {"kernel_ms_per_step", m1.kernel_timed_regions > m0.kernel_timed_regions
                                                       ? (m1.kernel_ms - m0.kernel_ms) /
                                                             static_cast<double>(m1.kernel_timed_regions - m0.kernel_timed_regions)
                                                       : 0.0},
                            {"kernel_timed_steps", m1.kernel_timed_regions - m0.kernel_timed_regions},
                            {"fallbacks", m1.device_fallbacks}, {"upload_bytes", m1.upload_bytes},
                            {"download_bytes", m1.download_bytes}, {"peak_resident_bytes", m1.device_peak_resident_bytes},
                            {"evictions", m1.evictions}, {"recomputed", m1.values_recomputed},
                            {"checkpoints", m1.lineage_checkpoints}, {"handed_off", m1.recordings_handed_off},
                            {"run_ahead_waits", m1.run_ahead_waits}};
        std::cout << j.dump() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "tandem-heat: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
