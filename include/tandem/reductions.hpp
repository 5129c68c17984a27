// Reductions with MATLAB's rules, lazy like every op: they check their arguments at once
// (ShapeError, ValueError) and compute nothing. An elementwise expression feeding a reduction is
// computed inside it (sum(a .* b, 2) reads a and b once and writes no temporary).
//
// Dimensions are 1-based, as in MATLAB. Without one, a reduction runs along the first dimension
// whose size is not 1 (MATLAB's default); `all_dims` reduces every element to a 1 x 1 result.
// Reducing along a dimension beyond the array's (sum(x, 3) of a matrix) reduces a singleton.
//
// NaN: sum, prod and mean include NaN unless `NanFlag::omitnan`; max and min omit NaN (NaN only
// where every element is NaN); any ignores NaN, all counts it as nonzero.
// Empty: sum of an empty dimension is 0, prod 1, mean NaN; max and min of an empty dimension
// are empty (that dimension stays 0); sum([]) of a 0 x 0 array is 0 (1 x 1), as in MATLAB.
// Types: sum/prod/mean/max/min of single are single; sum/prod/mean of logical double, max/min
// of logical logical (MATLAB's: a mask stays a mask); indices are double (1-based); any/all are
// logical. var and std of an empty dimension are NaN.
//
// Results are deterministic: the same bits every run, on either backend (a fixed reduction
// order, no atomics); the CPU and the GPU may differ in the last bits of a sum.
#pragma once

#include <cstdint>

#include "tandem/array.hpp"
#include "tandem/export.hpp"

namespace tandem {

enum class NanFlag : std::uint8_t { includenan, omitnan };

/// MATLAB's 'all': reduce every element.
struct AllDims {};
inline constexpr AllDims all_dims{};

/// MATLAB's [] in max(A, [], dim): call as tandem::max(a, {}, 2).
struct Empty {};

TANDEM_API Array sum(const Array& a, NanFlag nan = NanFlag::includenan);
TANDEM_API Array sum(const Array& a, int dim, NanFlag nan = NanFlag::includenan);
TANDEM_API Array sum(const Array& a, AllDims, NanFlag nan = NanFlag::includenan);
TANDEM_API Array prod(const Array& a, NanFlag nan = NanFlag::includenan);
TANDEM_API Array prod(const Array& a, int dim, NanFlag nan = NanFlag::includenan);
TANDEM_API Array prod(const Array& a, AllDims, NanFlag nan = NanFlag::includenan);
/// sum / count; with omitnan, over the elements that are not NaN.
TANDEM_API Array mean(const Array& a, NanFlag nan = NanFlag::includenan);
TANDEM_API Array mean(const Array& a, int dim, NanFlag nan = NanFlag::includenan);
TANDEM_API Array mean(const Array& a, AllDims, NanFlag nan = NanFlag::includenan);

/// Variance and standard deviation (two passes: the mean, then the squared deviations).
/// w = 0 divides by n - 1 (n = 1 gives 0), w = 1 by n; any other w is a ValueError.
TANDEM_API Array var(const Array& a, int w = 0);
TANDEM_API Array var(const Array& a, int w, int dim);
TANDEM_API Array var(const Array& a, int w, AllDims);
TANDEM_API Array stdev(const Array& a, int w = 0);  ///< MATLAB std (a C++ namespace name)
TANDEM_API Array stdev(const Array& a, int w, int dim);
TANDEM_API Array stdev(const Array& a, int w, AllDims);

TANDEM_API Array max(const Array& a);
TANDEM_API Array max(const Array& a, Empty, int dim);
TANDEM_API Array max(const Array& a, AllDims);
TANDEM_API Array min(const Array& a);
TANDEM_API Array min(const Array& a, Empty, int dim);
TANDEM_API Array min(const Array& a, AllDims);

/// [M, I] = max(A, [], dim): the values and the 1-based index of the first maximum along dim
/// (NaN omitted; where all are NaN, NaN and the index of the first).
struct ValueIndex {
    Array value;
    Array index;
};
TANDEM_API ValueIndex max_index(const Array& a);
TANDEM_API ValueIndex max_index(const Array& a, int dim);
TANDEM_API ValueIndex min_index(const Array& a);
TANDEM_API ValueIndex min_index(const Array& a, int dim);

TANDEM_API Array any(const Array& a);
TANDEM_API Array any(const Array& a, int dim);
TANDEM_API Array any(const Array& a, AllDims);
TANDEM_API Array all(const Array& a);
TANDEM_API Array all(const Array& a, int dim);
TANDEM_API Array all(const Array& a, AllDims);

/// Cumulative sum, product, maximum and minimum along a dimension (MATLAB's default one, or
/// `dim`, 1-based): the same shape. cumsum and cumprod include NaN; cummax and cummin omit it
/// (NaN until the first number). Each line runs in order, accumulating in double: the CPU and
/// the GPU give the same bits.
TANDEM_API Array cumsum(const Array& a);
TANDEM_API Array cumsum(const Array& a, int dim);
TANDEM_API Array cumprod(const Array& a);
TANDEM_API Array cumprod(const Array& a, int dim);
TANDEM_API Array cummax(const Array& a);
TANDEM_API Array cummax(const Array& a, int dim);
TANDEM_API Array cummin(const Array& a);
TANDEM_API Array cummin(const Array& a, int dim);

/// Number of nonzero elements (NaN counts), a 1 x 1 double.
TANDEM_API Array nnz(const Array& a);
/// Dot product of two vectors of the same length (any orientation), 1 x 1.
TANDEM_API Array dot(const Array& a, const Array& b);
/// Vector norm: p = 2 (default), 1, inf or -inf (Inf and -Inf as doubles), or any p >= 1. As
/// MATLAB's: no overflow or underflow on the way (norm([1e200 1e200]) is 1.414e200: the vector is
/// scaled by its largest |element| where the plain sum of powers would lose it), NaN in, NaN out
/// (also for Inf and -Inf).
TANDEM_API Array norm(const Array& v, double p = 2.0);

}  // namespace tandem
