// The main() of reduce-region kernels (codegen.cpp writes the rest: the header, the argument
// reads and the per-element code of the region's program). Deterministic by construction: every
// invocation folds its elements in order; a contiguous workgroup combines its invocations' partials
// in fixed pairs (a butterfly of subgroup shuffles, else a shared-memory tree), a strided one its
// rows' values in row order through shared memory; a second pass combines the parts of each output
// in order; max, min and their indices carry the position, so ties resolve to the first occurrence
// whatever the order. Sums and products accumulate in double. The split is ReducePlan's
// (arguments.hpp).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graph/region.hpp"

namespace tandem::detail::vk {

struct ReduceKernelParts {
    const Region* region = nullptr;
    std::uint32_t workgroup_size = 256;
    bool contiguous = true;             ///< ReducePlan::contiguous: the key says which
    bool subgroups = false;             ///< combine with subgroup shuffles (GL_KHR_shader_subgroup_shuffle)
    std::string pre;                    ///< per-invocation setup: scalars, input/output addresses, r_* params
    std::string element;                ///< per-element code at uint64_t `i`, defining the program's values
    std::vector<std::string> value;     ///< per reduction: the GLSL expression of the reduced value
    /// Code run for output q once every reduction's result is stored (the region's tail), or "".
    std::string tail_call;
};

/// GLSL helper functions (fold, combine, store) of the region's reductions; both passes use them.
void write_reduce_helpers(std::ostream& s, const Region& region);
/// The first pass: folds the elements, writes the outputs (one part) or the partials.
void write_reduce_main(std::ostream& s, const ReduceKernelParts& p);
/// The second pass: an invocation per output combines its parts in order and writes it.
void write_reduce_combine_main(std::ostream& s, const ReduceKernelParts& p);
/// Shared memory the first pass needs (the contiguous kernel's tree, the strided kernel's rows), in bytes.
std::uint32_t reduce_shared_bytes(const Region& region, std::uint32_t workgroup_size, bool contiguous);

}  // namespace tandem::detail::vk
