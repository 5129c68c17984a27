// Matrix multiply on the CPU: C = alpha * op(A) * op(B) + beta * C, f32 and f64, column-major,
// op = none or transpose (transposed operands are read in place by the packing: nothing else is
// copied). The sum of each element is graph/matmul_order.hpp's canonical order -- chains of fused
// multiply-adds over fixed chunks of k, the chunks added in order -- so a product gives the same
// bits on the CPU, under any instruction set or thread count, as on a Vulkan device; the kernels
// are Tandem's own (gemm_block.hpp: packed panels, register-tiled micro-kernels per ISA), since
// OpenBLAS's order depends on the CPU it runs on. Measured against OpenBLAS: bench/bench_gemm.cpp.
//
// Threads: gemm splits C into a 2-D grid of blocks, one oneTBB task per block, each packing its
// own panels; a product runs on the caller's TBB arena (TANDEM_CPU_THREADS workers), shares the
// workers with other regions through work stealing, and nested calls are safe. The grid does not
// change the bits (every element's sum is computed whole by one task).
// A row-vector result (m == 1) is computed as the column op(B)' op(A)' (the same products in the
// same order); A'A and AA' (one operand, one side transposed) compute the tiles on and above the
// diagonal and mirror them (the same bits: products commute exactly).
//
// Semantics are BLAS's: with beta == 0, C is not read (NaN or Inf in C does not propagate); with
// k == 0 or alpha == 0, C = beta * C without reading A and B. Otherwise NaN and Inf in A and B
// propagate as IEEE arithmetic says (0 * Inf = NaN), and C = alpha * sum, then + beta * C, each
// step rounded on its own (the Vulkan kernel's epilogue order).
//
// Reduced precision (MatmulPrecision::f16 / bf16, tandem/linalg.hpp): GemmOptions::rounding rounds
// every element of A and B (single only) to half or bfloat16 first -- exactly as the Vulkan
// kernels do, round_to_f16 / round_to_bf16 -- into temporaries, and runs the single-precision
// product on them; the products of rounded values are exact in single, so results differ from a
// GPU's only by the order of the single-precision sums.
//
// Exported from libtandem for the tests and the benchmark; not part of the public API.
#pragma once

#include <cstdint>
#include <string_view>

#include "tandem/linalg.hpp"

namespace tandem::detail::cpu {

enum class Trans : std::uint8_t {
    none,       ///< op(X) = X
    transpose,  ///< op(X) = X^T (X is stored transposed; read in place)
};

/// Rounding applied to A and B before a single-precision product.
enum class InputRounding : std::uint8_t {
    none,
    f16,   ///< to IEEE binary16 (round_to_f16)
    bf16,  ///< to bfloat16 (round_to_bf16)
};

/// The rounding of a MatmulPrecision (full: none).
constexpr InputRounding input_rounding(MatmulPrecision p) noexcept {
    return p == MatmulPrecision::f16 ? InputRounding::f16 : p == MatmulPrecision::bf16 ? InputRounding::bf16 : InputRounding::none;
}
/// The MatmulPrecision of its code (Region::matmul_precision, a MatMul node's attr[2]).
constexpr MatmulPrecision matmul_precision_attr(double code) noexcept {
    return static_cast<MatmulPrecision>(static_cast<int>(code));
}

/// x rounded to the nearest IEEE half (binary16) value, ties to even, as an IEEE conversion does:
/// |x| >= 65520 gives Inf, |x| < 2^-14 goes to half's subnormals (multiples of 2^-24; |x| <=
/// 2^-25 gives zero with x's sign), NaN stays NaN. Returned as the float of that value.
float round_to_f16(float x) noexcept;
/// x rounded to the nearest bfloat16 value (the top 16 bits of a float), ties to even; beyond
/// bfloat16's largest finite value (0x1.fep127) rounding up gives Inf; NaN stays NaN.
float round_to_bf16(float x) noexcept;

struct GemmOptions {
    /// The most capable instruction set to use (Config::cpu_isa's names: "auto", "avx512",
    /// "avx2", "baseline"); every one gives the same bits.
    std::string_view isa = "auto";
    /// Workers to plan the block grid for; 0: the caller's TBB arena's concurrency. (More blocks
    /// than the arena has threads still run correctly, as queued tasks: tests use this.)
    int workers = 0;
    /// Round A and B first (the float overload only; the double one throws ValueError unless none).
    InputRounding rounding = InputRounding::none;
};

/// C (m x n, leading dimension ldc) = alpha * op(A) * op(B) + beta * C, where op(A) is m x k and
/// op(B) is k x n. A is stored m x k (lda >= max(1, m)) or, transposed, k x m (lda >= max(1, k));
/// B is stored k x n (ldb >= max(1, k)) or, transposed, n x k (ldb >= max(1, n)).
/// Throws tandem::ValueError for a negative size or a leading dimension too small, ConfigError
/// for an unknown isa (nothing written).
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                     std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                     const GemmOptions& options = {});
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
                     std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc,
                     const GemmOptions& options = {});

/// The 2-D block grid gemm uses for an m x n result with `workers` threads (exposed for tests):
/// row blocks x column blocks, at most `workers` blocks in all. `upper_only` (A'A, AA'):
/// column blocks alone, their edges placed so that each holds an equal share of the upper
/// triangle (column j has j + 1 elements to compute).
struct GemmGrid {
    std::int64_t row_blocks = 1, col_blocks = 1;
    bool triangle = false;  ///< column edges balance the upper triangle (gemm_column_edge)
};
GemmGrid gemm_grid(std::int64_t m, std::int64_t n, std::int64_t k, int workers, bool upper_only = false) noexcept;
/// True when gemm runs grid `g` chunk by chunk of k, op(A)'s rows packed once per chunk for all
/// the blocks (A'A of a tall A; exposed for tests).
bool gemm_shares_rows(const GemmGrid& g, std::int64_t n, std::int64_t k, bool upper_only) noexcept;
/// Start of column block `r` of grid `g` over n columns (n at r == g.col_blocks).
std::int64_t gemm_column_edge(const GemmGrid& g, std::int64_t n, std::int64_t r) noexcept;

}  // namespace tandem::detail::cpu
