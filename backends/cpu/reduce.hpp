// Reduce regions on the CPU: the region's program runs block by block (the elementwise producers
// folded in, values in cache-sized registers, no temporary array) and each block is reduced into
// per-output accumulators. Sums and products follow the canonical order of
// graph/reduce_order.hpp (chunks of the reduced dimension in 32 lanes, the lanes by a halving
// tree, the chunks' partials by the same rule) -- the Vulkan kernels' order, so placement never
// changes the bits -- and never depend on the threads, the block size or the instruction set (the
// inner loops, reduce_kernels.hpp, are compiled per instruction set and follow the block
// kernels' choice, Config::cpu_isa, with the same operations in the same order). Any, all, max
// and min do not depend on the order. A NaN result is written as the one quiet NaN.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/kernels.hpp"
#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail::cpu {

/// Runs reduce region `region` (region.is_reduce()) from `inputs` into `outputs` (one per
/// reduction, sized for its node). `parallel`: use the oneTBB arena of the calling thread.
void run_reduce(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs,
                const KernelTable& kernels, std::int64_t block_elements, bool parallel);

/// Runs scan region `region` (RegionKind::scan): each line along the dimension in order, accumulating
/// in double (the result rounded to single for single arrays), lines in parallel.
void run_scan(const Region& region, const Storage& input, Storage& output, bool parallel);

}  // namespace tandem::detail::cpu
