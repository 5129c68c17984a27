// The matrix product. Lazy like every op: shapes are checked at once (ShapeError), nothing is
// computed. On the CPU it runs through OpenBLAS (under Tandem's oneTBB threads, never on top of
// them); on a Vulkan device through a tiled, register-blocked kernel.
#pragma once

#include "tandem/array.hpp"
#include "tandem/export.hpp"

namespace tandem {

struct MatmulOptions {
    bool transpose_a = false;  ///< use A' (read in place, no copy)
    bool transpose_b = false;  ///< use B'
};

/// MATLAB's A * B (mtimes) of 2-D arrays: op(A) is m x k, op(B) k x n, the result m x n. A 1 x 1
/// operand multiplies elementwise, as in MATLAB. Single if either operand is single, else double
/// (logical counts as double). Mismatched inner dimensions or N-D operands: ShapeError.
TANDEM_API Array matmul(const Array& a, const Array& b, MatmulOptions options = {});

}  // namespace tandem
