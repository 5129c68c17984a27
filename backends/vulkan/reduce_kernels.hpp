// The main() of reduce-region kernels (codegen.cpp writes the rest: the header, the argument
// reads and the per-element code of the region's program). Every sum and product follows the
// canonical order of graph/reduce_order.hpp, so the bits are the CPU executor's: chunks of
// kReduceChunk positions, a slot of lanes per chunk (lane l folding positions l, l + lanes, ...
// in order, accumulating in double), the lanes combined by the halving tree (subgroup shuffles
// or shared memory: the same pairs), and the chunks' partials folded by the same rule, a level
// per combine pass. Max, min and their indices carry the position, so ties resolve to the first
// occurrence whatever the order. The launch geometry is ReducePlan's (arguments.hpp).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graph/reduce_order.hpp"
#include "graph/region.hpp"

namespace tandem::detail::vk {

struct ReduceKernelParts {
    const Region* region = nullptr;
    std::uint32_t workgroup_size = 256;
    bool contiguous = true;             ///< ReducePlan::contiguous: the key says which
    bool subgroups = false;             ///< the tree by subgroup shuffles where a subgroup holds a slot
    std::uint32_t per_invocation = 1;   ///< strided: ReducePlan::per_invocation (the key says which)
    bool whole_outputs = false;         ///< contiguous: ReducePlan::whole_outputs (the key says which)
    std::string pre;                    ///< per-invocation setup: scalars, input/output addresses, r_* params
    std::string element;                ///< per-element code at uint64_t `i`, defining the program's values
    std::vector<std::string> value;     ///< per reduction: the GLSL expression of the reduced value
    /// Code run for output q once every reduction's result is stored (the region's tail), or "".
    std::string tail_call;
};

/// GLSL helper functions (fold, combine, store) of the region's reductions; both passes use them.
void write_reduce_helpers(std::ostream& s, const Region& region);
/// The first pass: folds the elements of each chunk, writes the outputs (one chunk an output) or
/// the chunks' partials.
void write_reduce_main(std::ostream& s, const ReduceKernelParts& p);
/// A combine pass (the level in the push constants' count): folds each output's partials of
/// that level into the next level, or into the outputs.
void write_reduce_combine_main(std::ostream& s, const ReduceKernelParts& p);
/// Shared memory either pass needs (the lanes' tree), in bytes.
std::uint32_t reduce_shared_bytes(const Region& region, std::uint32_t workgroup_size);
/// The reduce kernel's workgroup for `region`: `configured`, halved while its shared arrays do
/// not fit `max_shared_bytes` (a region of many reductions), down to a chunk's lanes (32). Speed
/// only: the canonical order is the shape's, so the bits are the same.
std::uint32_t reduce_workgroup(const Region& region, std::uint32_t configured, std::uint32_t max_shared_bytes);

}  // namespace tandem::detail::vk
