// The one order of every sum and product, on every executor (DESIGN.md: placement may change
// between runs, the bits may not). Floating-point addition is not associative, so the order is
// part of the result; it is fixed here by the reduced length alone, chosen so that a GPU (32
// consecutive invocations read 32 consecutive elements) and a CPU (32 lanes in vector
// registers) both run it at full speed:
//
//   fold(x[0..n)):   n <= kReduceChunk: chunk(x); else fold(chunk(x[0..C)), chunk(x[C..2C)), ...)
//   chunk(y[0..m)):  lane l = identity op y[l] op y[l + 32] op y[l + 64] ...  (l = 0 .. 31, in order)
//                    then lane l = lane l op lane l + w for w = 16, 8, 4, 2, 1; the result is lane 0
//
// (the identity: 0 for sums, 1 for products; both accumulate in double). A chunk of at most 2^k
// elements (k <= 5) gives the same bits with 2^k lanes and the tree from w = 2^(k-1): the other
// lanes hold the identity, which changes nothing it meets (no lane is -0: it starts at +0). Max,
// min, any and all do not depend on the order (ties keep the first position).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::detail {

inline constexpr std::int64_t kReduceLanes = 32;
inline constexpr std::int64_t kReduceChunk = 1024;

/// How many partials a level of fold() leaves from n elements (at least 1).
inline constexpr std::int64_t reduce_chunks(std::int64_t n) { return n <= 0 ? 1 : (n + kReduceChunk - 1) / kReduceChunk; }

/// The lanes a chunk of at most n elements needs: n rounded up to a power of two, at most 32.
inline constexpr std::int64_t reduce_lanes(std::int64_t n) {
    std::int64_t l = 1;
    while (l < n && l < kReduceLanes) l *= 2;
    return l;
}

/// The definition, plainly (the reference of the tests; the executors' loops are faster
/// versions of it). `op(a, b)` is a + b or a * b.
template <class Op>
double canonical_fold(const double* x, std::int64_t n, double identity, Op op) {
    std::vector<double> level(x, x + (n > 0 ? n : 0));
    do {
        const std::int64_t m = static_cast<std::int64_t>(level.size());
        std::vector<double> next;
        for (std::int64_t c = 0; c < reduce_chunks(m); ++c) {
            double lane[kReduceLanes];
            for (double& v : lane) v = identity;
            for (std::int64_t p = c * kReduceChunk; p < m && p < (c + 1) * kReduceChunk; ++p)
                lane[p % kReduceLanes] = op(lane[p % kReduceLanes], level[static_cast<std::size_t>(p)]);
            for (std::int64_t w = kReduceLanes / 2; w > 0; w /= 2)
                for (std::int64_t l = 0; l < w; ++l) lane[l] = op(lane[l], lane[l + w]);
            next.push_back(lane[0]);
        }
        level = std::move(next);
    } while (level.size() > 1);
    return level[0];
}

}  // namespace tandem::detail
