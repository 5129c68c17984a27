// A user kernel a reader can follow: the 2-D heat equation stepped 1000 times by a 5-point
// stencil written once in GLSL and once in C++ (examples/heat_kernel.hpp), mixed with array ops
// (the starting field and its boundary) and a sum for the energy every 100 steps. The scheduler
// runs each step where its cost model says (the GPU when there is one, for large grids); the two
// buffers ping-pong, and nothing comes back to the host but the energies.
//
//   heat_stencil [n] [steps]        n x n grid (default 512), steps (default 1000)
//   heat_stencil --check [n]        the same run on the CPU executor and on the device: equal?
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <tandem/tandem.hpp>

#include "heat_kernel.hpp"

namespace {

struct Run {
    std::vector<double> energy;  // every 100 steps
    std::vector<double> field;   // at the end
    double seconds = 0;
};

Run simulate(tandem::Runtime& rt, std::int64_t n, int steps) {
    const double r = 0.2;  // alpha dt / dx^2: stable below 0.25
    tandem::Buffer a(heat::initial_field(rt, n), "a"), b(rt, tandem::Shape{n, n}, tandem::DType::f64, "b");
    tandem::Queue q(rt);
    std::vector<tandem::Future<tandem::HostArray>> energies;
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 1; s <= steps; ++s) {
        heat::step(q, s % 2 ? a : b, s % 2 ? b : a, r);
        // The energy as array ops on the buffer's current version: fused, computed where it is.
        if (s % 100 == 0) energies.push_back(tandem::sum((s % 2 ? b : a).array(), tandem::all_dims).gather());
    }
    Run run;
    for (auto& e : energies) run.energy.push_back(e.get().at(0));
    run.field = (steps % 2 ? b : a).array().gather().get().to_doubles();
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return run;
}

void print(const char* where, const Run& run, int steps) {
    std::printf("%s: %d steps in %.3f s (%.1f us a step)\n", where, steps, run.seconds, 1e6 * run.seconds / steps);
    for (std::size_t k = 0; k < run.energy.size(); ++k) std::printf("  step %4zu: energy %.12f\n", 100 * (k + 1), run.energy[k]);
}

}  // namespace

int main(int argc, char** argv) {
    const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
    const int first = check ? 2 : 1;
    const std::int64_t n = argc > first ? std::stoll(argv[first]) : 512;
    const int steps = !check && argc > first + 1 ? std::stoi(argv[first + 1]) : 1000;
    if (!check) {
        tandem::Runtime& rt = tandem::default_runtime();  // TANDEM_DEVICE / TANDEM_PLACEMENT choose
        print("heat", simulate(rt, n, steps), steps);
        const tandem::Metrics m = rt.metrics();
        std::printf("regions run: %llu, of which on a device: %llu\n", static_cast<unsigned long long>(m.regions_executed),
                    static_cast<unsigned long long>(m.device_regions));
        return 0;
    }
    // The same program on both executors: the same values (the GPU may round a*b+c once).
    tandem::Config cpu;
    cpu.device = "cpu";
    tandem::Config gpu;
    gpu.device = "vulkan";
    gpu.placement = "gpu";
    tandem::Runtime on_cpu(cpu), on_gpu(gpu);
    const Run c = simulate(on_cpu, n, steps), g = simulate(on_gpu, n, steps);
    print("cpu", c, steps);
    print("gpu", g, steps);
    double worst = 0;
    for (std::size_t i = 0; i < c.field.size(); ++i) worst = std::max(worst, std::fabs(c.field[i] - g.field[i]));
    std::printf("largest difference between the two fields: %.3g\n", worst);
    return worst <= 1e-12 ? 0 : 1;
}
