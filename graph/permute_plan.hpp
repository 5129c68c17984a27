// The canonical form of a permute (MATLAB permute(a, order)) that both backends execute: the
// output's dimensions with singletons dropped and neighbours merged where they are neighbours in
// the input too, each with its stride in the input and in the output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tandem/shape.hpp"

namespace tandem::detail {

struct PermutePlan {
    std::vector<std::int64_t> extent;      ///< output dimensions (merged; no singletons)
    std::vector<std::int64_t> in_stride;   ///< each one's stride in the input (elements)
    std::vector<std::int64_t> out_stride;  ///< and in the output
    /// The output dimension that is contiguous in the input (in_stride 1), or -1 (nothing to move).
    int contiguous = -1;
    /// True when output dimension 0 is contiguous in the input too: the permute copies runs.
    bool runs() const noexcept { return contiguous <= 0; }
};

/// `order` is 0-based: output dimension d is input dimension order[d].
inline PermutePlan plan_permute(const Shape& in, const std::vector<int>& order) {
    std::size_t dims = order.size();
    for (int src : order) dims = std::max(dims, static_cast<std::size_t>(src) + 1);
    std::vector<std::int64_t> stride(dims, 1);
    for (std::size_t d = 1; d < dims; ++d) stride[d] = stride[d - 1] * in[static_cast<int>(d - 1)];
    PermutePlan p;
    for (int src : order) {
        const std::int64_t n = in[src], s = stride[static_cast<std::size_t>(src)];
        if (n == 1) continue;
        if (!p.extent.empty() && p.in_stride.back() * p.extent.back() == s) {
            p.extent.back() *= n;  // the next dimension in the input too: one dimension
            continue;
        }
        p.extent.push_back(n);
        p.in_stride.push_back(s);
    }
    std::int64_t o = 1;
    for (std::size_t d = 0; d < p.extent.size(); ++d) {
        p.out_stride.push_back(o);
        o *= p.extent[d];
        if (p.in_stride[d] == 1) p.contiguous = static_cast<int>(d);
    }
    return p;
}

}  // namespace tandem::detail
