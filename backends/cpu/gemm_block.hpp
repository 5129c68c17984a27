// The CPU's matrix-product kernels: one block of C = op(A) op(B) in the canonical order of
// graph/matmul_order.hpp (the same bits as the Vulkan kernels'), compiled once per instruction
// set (gemm_<isa>.cpp over gemm_block.inc) and picked at run time like the block kernels.
//
// Shape of the work (BLIS's loops): for each panel of columns, for each chunk of k (one chunk is
// one packed depth, kMatmulChunk), pack op(B)'s chunk x columns panel into slivers of NR columns;
// for each block of rows, pack op(A)'s rows x chunk block into slivers of MR rows; then each
// MR x NR tile of C is a micro-kernel: MR x NR fused multiply-add chains from +0 in vector
// registers over the chunk, stored to C (the first chunk) or added to it (the later ones). A
// lane of a vector is one element's chain, so the vector width does not change the bits.
#pragma once

#include <cstdint>
#include <string_view>

namespace tandem::detail::cpu {

/// One product's operands as stored (gemm.hpp's conventions; transposes read in place).
template <class T>
struct GemmOperands {
    bool trans_a = false, trans_b = false;
    std::int64_t m = 0, n = 0, k = 0;
    const T* a = nullptr;
    std::int64_t lda = 0;
    const T* b = nullptr;
    std::int64_t ldb = 0;
    T* c = nullptr;
    std::int64_t ldc = 0;
    /// Skip the tiles wholly below the diagonal (a symmetric C whose lower triangle is mirrored after).
    bool upper_only = false;
    /// Add the first chunk's sum to C too (a slab of k after the first: C already holds the
    /// chunks before it).
    bool accumulate = false;
    /// op(A)'s rows [0, m) of this slab (k <= one chunk), already packed by the table's pack
    /// function (shared by the blocks that run side by side), or null: each block packs its own.
    const T* a_packed = nullptr;
};

/// Writes C(i0:i1, j0:j1) (no alpha, no beta: the sum alone). k must be positive.
template <class T>
using GemmBlockFn = void (*)(const GemmOperands<T>& p, std::int64_t i0, std::int64_t i1, std::int64_t j0,
                             std::int64_t j1);

/// Packs op(A)'s rows [i0, i0 + rows) of k positions [p0, p0 + kc) as the block kernel reads
/// them (slivers of pack_rows rows, padded with zeros), at `out` + (row - i0) * kc.
template <class T>
using GemmPackFn = void (*)(const GemmOperands<T>& p, std::int64_t i0, std::int64_t rows, std::int64_t p0,
                            std::int64_t kc, T* out);

struct GemmBlockKernels {
    const char* isa;
    GemmBlockFn<double> f64;
    GemmBlockFn<float> f32;
    GemmPackFn<double> pack_f64;
    GemmPackFn<float> pack_f32;
    std::int64_t pack_rows_f64, pack_rows_f32;  ///< rows of a packed sliver (GemmOperands::a_packed's unit)
};

const GemmBlockKernels* gemm_blocks_baseline();
const GemmBlockKernels* gemm_blocks_avx2();    ///< null when the CPU lacks AVX2+FMA
const GemmBlockKernels* gemm_blocks_avx512();  ///< null when the CPU lacks AVX-512 F/DQ/VL/BW

/// The best kernels for this CPU, capped at `limit` ("auto", "baseline", "avx2", "avx512", as
/// Config::cpu_isa). Throws ConfigError for another name.
const GemmBlockKernels& select_gemm_blocks(std::string_view limit);

}  // namespace tandem::detail::cpu
