// The matrix product. Lazy like every op: shapes are checked at once (ShapeError), nothing is
// computed. On the CPU it runs through Tandem's packed, register-tiled kernels (on its oneTBB
// threads); on a Vulkan device through a tiled, register-blocked kernel. Both sum each element in
// one canonical order (graph/matmul_order.hpp), so a product gives the same bits wherever it runs
// (MatmulPrecision::f16 on tensor cores excepted).
#pragma once

#include <cstdint>

#include "tandem/array.hpp"
#include "tandem/export.hpp"

namespace tandem {

/// The arithmetic of a product of single operands (like cuBLAS's compute types or PyTorch's
/// matmul precision). The reduced precisions trade accuracy for speed on hardware with matrix
/// units; their results are defined the same way on every backend, so the CPU, a GPU without
/// matrix units and one with them agree up to the order of the single-precision sums.
enum class MatmulPrecision : std::uint8_t {
    /// Products and sums in the operands' type (single or double): the default.
    full,
    /// Each element of op(A) and op(B) is first rounded to IEEE half precision (binary16: 11
    /// significant bits, largest finite 65504), to nearest with ties to even as an IEEE
    /// conversion does: magnitudes from 65520 up become Inf, below 2^-14 half's subnormals
    /// (below 2^-25: zero, sign kept), NaN stays NaN. The products of the rounded values (exact
    /// in single) are summed in single; the result is single. On a Vulkan device with
    /// VK_NV_cooperative_matrix (NVIDIA tensor cores) this runs on the matrix units; elsewhere
    /// the rounded operands go through the single-precision GEMM (the same bits on the CPU and on
    /// a GPU without matrix units; the matrix units' own order and accumulation differ).
    f16,
    /// As f16 with bfloat16 (8 significant bits, single's exponent range: no overflow beyond
    /// single's, subnormals kept) instead of half. Runs through the single-precision GEMM on
    /// every backend (the cooperative-matrix extension Tandem compiles for has no bfloat16).
    bf16,
};

/// "full", "f16", "bf16".
TANDEM_API const char* to_string(MatmulPrecision precision) noexcept;

struct MatmulOptions {
    bool transpose_a = false;  ///< use A' (read in place, no copy)
    bool transpose_b = false;  ///< use B'
    /// f16 and bf16 take single operands only: a double or logical operand is a DTypeError
    /// naming it (convert with single() first: the rounding is then explicit).
    MatmulPrecision precision = MatmulPrecision::full;
};

/// MATLAB's A * B (mtimes) of 2-D arrays: op(A) is m x k, op(B) k x n, the result m x n. A 1 x 1
/// operand multiplies elementwise, as in MATLAB (with a reduced precision its elements are
/// rounded too: the same values as a product with k = 1). Single if either operand is single,
/// else double (logical counts as double). Mismatched inner dimensions or N-D operands:
/// ShapeError. A reduced precision with an operand that is not single: DTypeError.
TANDEM_API Array matmul(const Array& a, const Array& b, MatmulOptions options = {});

}  // namespace tandem
