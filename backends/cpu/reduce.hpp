// Reduce regions on the CPU: the region's program runs block by block (the elementwise producers
// folded in, values in cache-sized registers, no temporary array) and each block is reduced into
// per-output accumulators. The order of every reduction is fixed by the shape alone (chunks of
// the reduced dimension, lanes within a chunk, chunks combined in order), never by the threads:
// the same bits every run, on any number of cores. The inner loops (reduce_kernels.hpp) are
// compiled per instruction set and follow the block kernels' choice (Config::cpu_isa); every
// variant adds in the same order, and a NaN result is written as the one quiet NaN, so the bits
// do not depend on the instruction set either.
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
