// The one order of every sum and product, on every executor (DESIGN.md: placement may change
// between runs, the bits may not). Floating-point addition is not associative, so the order is
// part of the result; it is fixed here by the shape alone, chosen so that a GPU (32 consecutive
// invocations read 32 consecutive elements, or consecutive invocations consecutive outputs) and
// a CPU (32 lanes in vector registers, or a tile of outputs in registers over consecutive rows)
// both run it at full speed:
//
//   fold(x[0..n)):   n <= kReduceChunk: chunk(x); else level(chunk(x[0..C)), chunk(x[C..2C)), ...)
//   level(y[0..m)):  the same with interleaved chunks, down to one value
//   chunk(y[0..m)):  lane l = identity op y[p] op ... for the positions p of lane l, in order,
//                    then lane l = lane l op lane l + w for w = 16, 8, 4, 2, 1; the result is lane 0
//
// Lanes are interleaved (p % 32) where the reduced dimension is the region's first (contiguous
// runs: consecutive elements go to consecutive lanes) and blocked (p / 32: 32 consecutive
// positions a lane) where it is not (strided: each position is a row of outputs, and a lane's
// rows are consecutive); the later levels always interleave. The identity is 0 for sums, 1 for
// products; both accumulate in double. Lanes holding only the identity change nothing they meet
// (no lane is -0: it starts at +0), so a chunk whose lanes with elements are fewer than 2^k
// (k <= 5) gives the same bits with 2^k lanes and the tree from w = 2^(k-1). Max, min, any and
// all do not depend on the order (ties keep the first position).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::detail {

inline constexpr std::int64_t kReduceLanes = 32;
inline constexpr std::int64_t kReduceChunk = 1024;

/// How many partials a level of fold() leaves from n elements (at least 1).
inline constexpr std::int64_t reduce_chunks(std::int64_t n) { return n <= 0 ? 1 : (n + kReduceChunk - 1) / kReduceChunk; }

/// The lanes a chunk of at most n elements needs (rounded up to a power of two, at most 32):
/// interleaved, one a position; blocked, one per 32 positions.
inline constexpr std::int64_t reduce_lanes(std::int64_t n, bool blocked = false) {
    if (blocked) n = ((n < kReduceChunk ? n : kReduceChunk) + kReduceLanes - 1) / kReduceLanes;
    std::int64_t l = 1;
    while (l < n && l < kReduceLanes) l *= 2;
    return l;
}

/// The definition, plainly (the reference of the tests; the executors' loops are faster
/// versions of it). `op(a, b)` is a + b or a * b; `blocked`: the first level's lanes are blocked.
template <class Op>
double canonical_fold(const double* x, std::int64_t n, double identity, Op op, bool blocked = false) {
    std::vector<double> level(x, x + (n > 0 ? n : 0));
    do {
        const std::int64_t m = static_cast<std::int64_t>(level.size());
        std::vector<double> next;
        for (std::int64_t c = 0; c < reduce_chunks(m); ++c) {
            double lane[kReduceLanes];
            for (double& v : lane) v = identity;
            for (std::int64_t p = c * kReduceChunk; p < m && p < (c + 1) * kReduceChunk; ++p) {
                const std::int64_t l = blocked ? (p % kReduceChunk) / kReduceLanes : p % kReduceLanes;
                lane[l] = op(lane[l], level[static_cast<std::size_t>(p)]);
            }
            for (std::int64_t w = kReduceLanes / 2; w > 0; w /= 2)
                for (std::int64_t l = 0; l < w; ++l) lane[l] = op(lane[l], lane[l + w]);
            next.push_back(lane[0]);
        }
        level = std::move(next);
        blocked = false;
    } while (level.size() > 1);
    return level[0];
}

}  // namespace tandem::detail
