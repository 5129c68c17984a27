// A Monte Carlo loop run again and again (the kind of W3): each run draws new random numbers, so
// its plans differ only in their draws' seeds and streams, which the fusion cache takes as
// parameters (graph/fusion_cache.cpp). The tests run it with the cache on, in verify mode and
// off, on the CPU and on the Vulkan device, and compare.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/tandem.hpp"

namespace draw_loop {

struct Runs {
    std::vector<std::vector<double>> values;  ///< per run: the paths' last values, then a mean of uniforms
    std::uint64_t plans = 0, hits = 0;         ///< plans made over the runs, of which fused from the cache
};

/// `runs` runs of a loop of `steps` steps over `m` paths (uploaded; draws in single precision),
/// with a uniform draw in double beside it; one gather (one plan) a run.
inline Runs run(tandem::Runtime& rt, int runs, int steps = 6, std::int64_t m = 96) {
    using tandem::Array;
    using tandem::DType;
    tandem::seed(rt, 11);
    Runs out;
    const tandem::Metrics before = rt.metrics();
    std::vector<double> start(static_cast<std::size_t>(m));
    for (std::size_t k = 0; k < start.size(); ++k) start[k] = 90.0 + 0.25 * static_cast<double>(k);
    for (int r = 0; r < runs; ++r) {
        Array S = rt.array(std::span<const double>(start), tandem::Shape{m, 1});
        for (int i = 0; i < steps; ++i)
            S = S * tandem::exp(0.01 + 0.05 * tandem::randn(rt, {m, 1}, DType::f32));
        const Array u = tandem::mean(tandem::rand(rt, {m, 2}) * 2.0 - 1.0, 1);
        const std::vector<tandem::HostArray> got = rt.gather({S, u}).get();
        std::vector<double> v = got[0].to_doubles();
        for (double x : got[1].to_doubles()) v.push_back(x);
        out.values.push_back(std::move(v));
    }
    const tandem::Metrics after = rt.metrics();
    out.plans = after.plans - before.plans;
    out.hits = after.plans_fused_from_cache - before.plans_fused_from_cache;
    return out;
}

/// Whether two runs' values are the same, bit for bit.
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint64_t>(a[i]) != std::bit_cast<std::uint64_t>(b[i])) return false;
    return true;
}

/// Whether two runs' values agree within `rel` of each other (executors with other math
/// kernels: the CPU picks its vector paths by processor).
inline bool close(const std::vector<double>& a, const std::vector<double>& b, double rel) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::fabs(a[i] - b[i]) <= rel * std::fmax(1.0, std::fabs(b[i])))) return false;
    return true;
}

}  // namespace draw_loop
