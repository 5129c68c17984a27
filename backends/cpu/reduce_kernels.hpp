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
    /// Contiguous sum / product of x[0..n) ([0] = double, [1] = float elements, converted to
    /// double): element i into lane i % 32 (lanes start at 0 or 1), the lanes then combined
    /// pairwise (lane l += lane l + w for w = 16, 8, 4, 2, 1). pf > 0: prefetch that many
    /// elements ahead (for data read from memory).
    double (*sum_run[2])(const void* x, std::size_t n, std::size_t pf);
    double (*prod_run[2])(const void* x, std::size_t n, std::size_t pf);
    /// Contiguous any / all of x[0..n).
    bool (*any_run)(const double* x, std::size_t n);
    bool (*all_run)(const double* x, std::size_t n);
    /// Contiguous max (mx) or min of x[0..n): the first position of the extremum of the numbers,
    /// in *k (0-based, relative to x) with the value in *v; *v = NaN, *k = 0 when all are NaN.
    void (*ext_run)(bool mx, const double* x, std::size_t n, double* v, std::int64_t* k);
    /// Strided folds: rows r = 0 .. rows - 1 of x (row r at x + r * stride, n elements) folded
    /// into v[0..n) in order of r (v[i] = (((v[i] op x0[i]) op x1[i]) ...)). Sum and Prod take
    /// [0] = double, [1] = float rows; the others double rows. Max/Min also set pos[i] = k0 + r
    /// where they take row r.
    void (*rows_sum[2])(double* v, const void* x, std::size_t stride, std::size_t rows, std::size_t n);
    void (*rows_prod[2])(double* v, const void* x, std::size_t stride, std::size_t rows, std::size_t n);
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
