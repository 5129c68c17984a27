// The host's cost per node: a graph of many tiny ops (G independent chains of L ops on arrays of
// a few elements: N = G x L nodes), built and gathered in one call. What it measures is Tandem's
// own work per node (interning, planning, fusion, placement, wiring, running), not arithmetic.
//
//   tandem-overhead [--chains G] [--length L] [--elements E] [--reps R]
//   (TANDEM_FUSION=0: one region per node, the scheduler's cost per region; TANDEM_DEVICE and
//   TANDEM_PLACEMENT as usual: placement priced against a device)
//
// Prints one JSON line: the nodes, the median build and gather time per node (us), and the
// regions run per gather.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include "tandem/tandem.hpp"

int main(int argc, char** argv) {
    CLI::App app{"Host time per node of a graph of tiny ops", "tandem-overhead"};
    int chains = 1000, length = 100, reps = 5;
    std::int64_t elements = 4;
    app.add_option("--chains", chains, "independent chains")->check(CLI::Range(1, 1 << 20));
    app.add_option("--length", length, "ops per chain")->check(CLI::Range(1, 1 << 20));
    app.add_option("--elements", elements, "elements of each array")->check(CLI::Range(1LL, 1LL << 20));
    app.add_option("--reps", reps, "timed runs (after one untimed)")->check(CLI::Range(1, 1000));
    CLI11_PARSE(app, argc, argv);
    try {
        tandem::Runtime rt(tandem::Config::from_environment());
        std::vector<tandem::Array> bases;
        for (int g = 0; g < chains; ++g) {
            // Shapes apart, so that fusion cannot merge the chains into multi-output regions: a
            // region per chain.
            std::vector<double> v(static_cast<std::size_t>(elements + g), 0.5 + g);
            bases.push_back(rt.array(std::span<const double>(v), {elements + g, 1}));
        }
        std::vector<double> build_us, gather_us;
        std::uint64_t regions = 0;
        for (int run = 0; run <= reps; ++run) {
            const auto m0 = rt.metrics();
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<tandem::Array> tails;
            for (int g = 0; g < chains; ++g) {
                tandem::Array x = bases[static_cast<std::size_t>(g)];
                const double k = 1.0 + 1e-3 * run;  // a new graph each run (nothing cached)
                for (int i = 0; i < length; ++i) x = (i % 2) ? x * k : x + 1.0;
                tails.push_back(x);
            }
            const auto t1 = std::chrono::steady_clock::now();
            (void)rt.gather(tails).get();
            const auto t2 = std::chrono::steady_clock::now();
            const double nodes = static_cast<double>(chains) * length;
            if (run > 0) {
                build_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / nodes);
                gather_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() / nodes);
                regions = rt.metrics().regions_executed - m0.regions_executed;
            }
        }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        nlohmann::json out = {{"nodes", static_cast<std::int64_t>(chains) * length},
                              {"chains", chains},
                              {"length", length},
                              {"elements", elements},
                              {"fusion", rt.config().fusion},
                              {"placement", rt.info().placement},
                              {"build_us_per_node", median(build_us)},
                              {"gather_us_per_node", median(gather_us)},
                              {"regions_per_gather", regions}};
        std::cout << out.dump() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "tandem-overhead: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
