// A matmul region's fused epilogue on the CPU (Region::Epilogue): applied to the product in
// place, op by op in the order and types of the graph chain it replaces, so the result has the
// unfused chain's bits (the GPU folds it into the GEMM kernel instead).
#pragma once

#include <span>

#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail::cpu {

void apply_epilogue(const Region& r, std::span<const Storage* const> inputs, Storage& out);

}  // namespace tandem::detail::cpu
