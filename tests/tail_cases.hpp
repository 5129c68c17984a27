// Reductions followed by elementwise work on their results alone (mean's division, a norm's
// square root, sigma + 1e-6, argmax + 1, any & all): fusion runs that work as the reduce region's
// tail (Region::tail) instead of as a region of its own. CPU: test_reductions.cpp; Vulkan:
// test_vulkan_reduce.cpp. Each case is checked against the same program with fusion off on the
// same backend (the same bits: the tail reads the results as they were stored) and by its region
// count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace ttail {

using tandem::Array;

struct Case {
    std::string name;
    std::function<Array(const Array& x)> f;
    std::uint64_t regions;  ///< fused, for x already computed and not empty
};

inline std::vector<Case> cases() {
    using tandem::all_dims;
    return {
        {"mean dim 1", [](const Array& x) { return tandem::mean(x, 1); }, 1},
        {"mean dim 2", [](const Array& x) { return tandem::mean(x, 2); }, 1},
        {"mean of all", [](const Array& x) { return tandem::mean(x, all_dims); }, 1},
        {"sqrt(mean(x.^2)) + 1e-6",
         [](const Array& x) { return tandem::sqrt(tandem::mean(x * x, 1)) + 1e-6; }, 1},
        {"2*max - 1 dim 2", [](const Array& x) { return tandem::max(x, {}, 2) * 2.0 - 1.0; }, 1},
        {"argmin + 1", [](const Array& x) { return tandem::min_index(x, 1).index + 1.0; }, 1},
        {"any(y) & ~all(y), y = x > 0",
         [](const Array& x) {
             const Array y = x > 0.0;
             return tandem::any(y, 2) & !tandem::all(y, 2);
         },
         1},
        // Two reductions of one producer in one region; the tail reads both.
        {"sum(y) ./ max(y), y = x.^2",
         [](const Array& x) {
             const Array y = x * x;
             return tandem::sum(y, 1) / tandem::max(y, {}, 1);
         },
         1},
        // var: the mean (its division a tail), then the squares' sum and its scaling.
        {"var dim 1", [](const Array& x) { return tandem::var(x, 0, 1); }, 2},
        // Two reductions of x along one dimension share a region (one pass over x), and the chain
        // reading their results alone is its tail: mean's division, the addition.
        {"mean + max dim 1", [](const Array& x) { return tandem::mean(x, 1) + tandem::max(x, {}, 1); }, 1},
        // Along two dimensions: two passes, the chain a region after them.
        {"mean dim 1 + max dim 2", [](const Array& x) { return tandem::sum(tandem::mean(x, 1)) + tandem::max(tandem::max(x, {}, 2)); }, 5},
    };
}

/// Shapes: empty, a single element, small, 3-D, long contiguous runs (a workgroup's), few long
/// runs (two passes), few strided outputs (parts along dim 2).
inline const std::vector<tref::Dims>& shapes() {
    static const std::vector<tref::Dims> s = {{0, 3}, {1, 1}, {5, 6}, {3, 4, 2}, {700, 3}, {20000, 2}, {3, 900}};
    return s;
}

}  // namespace ttail
