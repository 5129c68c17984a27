// Fusion: partitions the not-yet-computed part of the graph into regions. Elementwise nodes of
// one shape fuse into one region (fan-out is computed once, several outputs come out of one
// pass); a boundary is placed only where shapes change, since computing a smaller value inside
// a larger loop would repeat its work for every element of the expansion.
#pragma once

#include <memory>
#include <vector>

#include "graph/region.hpp"

namespace tandem::detail {

struct FusionOptions {
    bool fuse = true;  ///< false: one region per op
};

/// `pending`: the nodes to compute, in topological order (inputs before users), each with
/// pass_mark == `mark` and pass_index its position (no other node carries `mark`). `targets`:
/// nodes whose values are wanted (each becomes a region output). Nodes outside `pending` that
/// pending nodes read must be computed or in flight already.
std::vector<Region> fuse(const std::vector<Node*>& pending, const std::vector<Node*>& targets, std::uint64_t mark,
                         const FusionOptions& options);

}  // namespace tandem::detail
