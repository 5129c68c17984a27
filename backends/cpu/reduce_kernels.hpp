// The inner loops of the CPU reductions, compiled once per instruction set (reduce_<isa>.cpp from
// reduce_impl.inc, with -ffp-contract=off) and picked at run time with the block kernels' table
// (so TANDEM_CPU_ISA caps both). Every variant performs the same additions, in the same order, as
// the scalar definitions documented below: the bits do not depend on the instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::detail::cpu {

/// The reductions' element ops: Sum and Prod accumulate; Any (x nonzero and not NaN) and All
/// (x nonzero: NaN counts) set a 0/1 flag; Max and Min keep the extremum (NaN omitted, ties keep
/// the first) and its position.
enum class RedKind : std::uint8_t { Sum = 0, Prod = 1, Any = 2, All = 3, Max = 4, Min = 5 };
inline constexpr int kRedKinds = 6;

struct ReduceKernels {
    const char* isa;
    /// Sums and products in the canonical order (graph/reduce_order.hpp): element i of x[0..n)
    /// ([0] = double, [1] = float elements, converted to double) folded into lanes[(lane0 + i)
    /// % 32], in order. pf > 0: prefetch that many elements ahead (for data read from memory).
    void (*lanes_sum[2])(double* lanes, const void* x, std::size_t n, std::size_t lane0, std::size_t pf);
    void (*lanes_prod[2])(double* lanes, const void* x, std::size_t n, std::size_t lane0, std::size_t pf);
    /// Strided: row r of x (at x + r * stride, n elements; position pos0 + r of a chunk) folded
    /// elementwise into the slice of its blocked lane, (pos0 + r) / 32 (slice l: n accumulators at
    /// acc + l * ss), in order.
    void (*rows_lanes_sum[2])(double* acc, std::size_t ss, const void* x, std::size_t stride, std::size_t rows,
                              std::size_t n, std::size_t pos0);
    void (*rows_lanes_prod[2])(double* acc, std::size_t ss, const void* x, std::size_t stride, std::size_t rows,
                               std::size_t n, std::size_t pos0);
    /// Contiguous any / all of x[0..n).
    bool (*any_run)(const double* x, std::size_t n);
    bool (*all_run)(const double* x, std::size_t n);
    /// Contiguous max (mx) or min of x[0..n): the first position of the extremum of the numbers,
    /// in *k (0-based, relative to x) with the value in *v; *v = NaN, *k = 0 when all are NaN.
    void (*ext_run)(bool mx, const double* x, std::size_t n, double* v, std::int64_t* k);
    /// Strided folds of the order-free kinds: rows r = 0 .. rows - 1 of x (row r at x + r *
    /// stride, n doubles) folded into v[0..n) in order of r. Max/Min also set pos[i] = k0 + r
    /// where they take row r.
    void (*rows_any)(double* v, const double* x, std::size_t stride, std::size_t rows, std::size_t n);
    void (*rows_all)(double* v, const double* x, std::size_t stride, std::size_t rows, std::size_t n);
    void (*rows_ext)(bool mx, double* v, std::int64_t* pos, const double* x, std::size_t stride, std::size_t rows,
                     std::size_t n, std::int64_t k0);
    /// Partials combined in order, elementwise: a[i] = a[i] then b[i] (b covers later positions).
    void (*combine[kRedKinds])(double* a, std::int64_t* ak, const double* b, const std::int64_t* bk, std::size_t n);
};

const ReduceKernels* reduce_kernels_baseline();
const ReduceKernels* reduce_kernels_avx2();    ///< null when the CPU lacks AVX2+FMA
const ReduceKernels* reduce_kernels_avx512();  ///< null when the CPU lacks AVX-512 F/DQ/VL/BW

/// The variant for the block kernels' instruction set `isa` (KernelTable::isa), so that the
/// TANDEM_CPU_ISA cap applies to the reductions too; the baseline when that one is missing.
const ReduceKernels& reduce_kernels_for(const char* isa);

}  // namespace tandem::detail::cpu
