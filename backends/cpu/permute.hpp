// permute on the CPU: runs copied where the output's first dimension is contiguous in the input,
// else 32 x 32 tiles of the plane (output dimension 0, the input's contiguous one), batched over
// the other dimensions, so both reads and writes stay in cache lines.
#pragma once

#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail::cpu {

void run_permute(const Region& r, const Storage& in, Storage& out);

}  // namespace tandem::detail::cpu
