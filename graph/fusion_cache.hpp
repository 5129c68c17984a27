// Fusion's results, remembered by the structure of what they were made from: a program built
// again and again (a loop's body, a solver's step, a benchmark's run) is fused once. On the H100
// machine's host W5 fuses its 370 nodes in 0.5-1 ms a run, a quarter of the run.
//
// The key is everything fusion reads: the pending nodes in order (op, type, extents, attributes,
// whether wanted, and each operand as a position among them or as a boundary slot) and the
// boundary nodes (those outside the plan that pending nodes read: op, type, extents,
// attributes). A hit is the cached regions with this plan's nodes put in. Attributes are part of
// the key but for random draws' seeds and streams, which a hit takes from the plan's own nodes (a
// Monte Carlo loop drawing new numbers each run, W3, is fused once). A program whose constants
// change from run to run fuses each time (a constant's value can choose its kernel: x.^2 is x*x);
// once a structure has missed a few times and never hit, it is no longer stored.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "graph/fusion.hpp"

namespace tandem::detail {

class FusionCache {
public:
    /// off: fuse every plan. on: remember. verify (tests): on a hit, fuse anyway and throw an
    /// Error if the results differ.
    enum class Mode : std::uint8_t { off, on, verify };
    explicit FusionCache(Mode mode = Mode::on, std::size_t capacity = 64) : mode_(mode), capacity_(capacity) {}

    /// fuse()'s result for these arguments (graph/fusion.hpp), from the cache when a plan of the
    /// same structure was fused before. Not thread-safe (the scheduler's planners take turns).
    std::vector<Region> fuse(const std::vector<Node*>& pending, const std::vector<Node*>& targets, std::uint64_t mark,
                             const FusionOptions& options);

    /// Plans fused from the cache so far (any thread may ask).
    std::uint64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }

private:
    /// A node of the plan as the cache names it: >= 0 a position in `pending`, < 0 boundary slot
    /// -(code + 1).
    using Code = std::int64_t;
    struct Entry {
        std::vector<std::uint64_t> key;
        std::vector<Region> regions;  ///< with null nodes: the codes below say which
        std::vector<std::vector<Code>> inputs, outputs;
        std::uint64_t last_use = 0;
    };
    Mode mode_;
    std::size_t capacity_;
    std::unordered_map<std::uint64_t, Entry> entries_;  // by the key's hash
    /// Per structure without the attributes: plans of it fused, and found in the cache.
    struct Skeleton {
        std::uint32_t misses = 0, hits = 0;
    };
    static constexpr std::uint32_t kVolatileMisses = 3;
    std::unordered_map<std::uint64_t, Skeleton> skeletons_;
    std::uint64_t clock_ = 0;
    std::atomic<std::uint64_t> hits_{0};
};

/// Whether two regions are the same work: every field, doubles bit for bit, nodes by identity.
bool same_region(const Region& a, const Region& b);

}  // namespace tandem::detail
