// Elementwise ops on Arrays, with MATLAB semantics and MATLAB implicit expansion. A plain
// number may stand for either operand (see Operand). All are lazy: they check shapes and
// element types at once (ShapeError, DTypeError) and compute nothing.
//
// Result types follow MATLAB: single wins over double, logical counts as double in
// arithmetic, comparisons and logical ops give logical. Tandem is real-valued: where MATLAB
// would return a complex number (sqrt(-1), log(-1), (-8)^(1/3)) the result is NaN, as in NumPy.
#pragma once

#include "tandem/export.hpp"

#include "tandem/array.hpp"

namespace tandem {

// ---- arithmetic: + - .* ./ .\ .^ and unary minus -------------------------------------
TANDEM_API Array operator+(const Operand& a, const Operand& b);
TANDEM_API Array operator-(const Operand& a, const Operand& b);
TANDEM_API Array operator*(const Operand& a, const Operand& b);  ///< elementwise (MATLAB .*); matmul is a named function
TANDEM_API Array operator/(const Operand& a, const Operand& b);  ///< elementwise (MATLAB ./)
TANDEM_API Array operator-(const Array& a);
TANDEM_API Array plus(const Operand& a, const Operand& b);
TANDEM_API Array minus(const Operand& a, const Operand& b);
TANDEM_API Array times(const Operand& a, const Operand& b);
TANDEM_API Array rdivide(const Operand& a, const Operand& b);    ///< a ./ b
TANDEM_API Array ldivide(const Operand& a, const Operand& b);    ///< a .\ b, that is b ./ a
TANDEM_API Array power(const Operand& a, const Operand& b);      ///< a .^ b
TANDEM_API Array uminus(const Array& a);

// ---- comparisons (logical result; NaN compares unequal to everything) ------------------
TANDEM_API Array operator==(const Operand& a, const Operand& b);
TANDEM_API Array operator!=(const Operand& a, const Operand& b);  ///< MATLAB ~=
TANDEM_API Array operator<(const Operand& a, const Operand& b);
TANDEM_API Array operator<=(const Operand& a, const Operand& b);
TANDEM_API Array operator>(const Operand& a, const Operand& b);
TANDEM_API Array operator>=(const Operand& a, const Operand& b);
TANDEM_API Array eq(const Operand& a, const Operand& b);
TANDEM_API Array ne(const Operand& a, const Operand& b);
TANDEM_API Array lt(const Operand& a, const Operand& b);
TANDEM_API Array le(const Operand& a, const Operand& b);
TANDEM_API Array gt(const Operand& a, const Operand& b);
TANDEM_API Array ge(const Operand& a, const Operand& b);

// ---- logical ops (logical result; a NaN operand is an error, as in MATLAB) ------------
TANDEM_API Array operator&(const Operand& a, const Operand& b);
TANDEM_API Array operator|(const Operand& a, const Operand& b);
TANDEM_API Array operator!(const Array& a);
TANDEM_API Array operator~(const Array& a);  ///< MATLAB ~a (logical not, not bitwise)
TANDEM_API Array logical_and(const Operand& a, const Operand& b);
TANDEM_API Array logical_or(const Operand& a, const Operand& b);
TANDEM_API Array logical_xor(const Operand& a, const Operand& b);  ///< MATLAB xor (a C++ keyword)
TANDEM_API Array logical_not(const Array& a);

// ---- unary math ------------------------------------------------------------------------
TANDEM_API Array abs(const Array& a);
TANDEM_API Array sqrt(const Array& a);
TANDEM_API Array exp(const Array& a);
TANDEM_API Array log(const Array& a);
TANDEM_API Array log2(const Array& a);
TANDEM_API Array log10(const Array& a);
TANDEM_API Array log1p(const Array& a);
TANDEM_API Array expm1(const Array& a);
TANDEM_API Array sin(const Array& a);
TANDEM_API Array cos(const Array& a);
TANDEM_API Array tan(const Array& a);
TANDEM_API Array asin(const Array& a);
TANDEM_API Array acos(const Array& a);
TANDEM_API Array atan(const Array& a);
TANDEM_API Array sinh(const Array& a);
TANDEM_API Array cosh(const Array& a);
TANDEM_API Array tanh(const Array& a);
TANDEM_API Array floor(const Array& a);
TANDEM_API Array ceil(const Array& a);
TANDEM_API Array round(const Array& a);  ///< halves away from zero
TANDEM_API Array fix(const Array& a);    ///< towards zero
TANDEM_API Array sign(const Array& a);   ///< -1, 0 or 1 (NaN stays NaN)
TANDEM_API Array isnan(const Array& a);
TANDEM_API Array isinf(const Array& a);
TANDEM_API Array isfinite(const Array& a);

// ---- binary math -----------------------------------------------------------------------
TANDEM_API Array atan2(const Operand& y, const Operand& x);
TANDEM_API Array hypot(const Operand& a, const Operand& b);
/// MATLAB mod: result has the sign of b; mod(a, 0) = a; computed exactly (as fmod).
TANDEM_API Array mod(const Operand& a, const Operand& b);
/// MATLAB rem: result has the sign of a; rem(a, 0) = NaN.
TANDEM_API Array rem(const Operand& a, const Operand& b);
/// Elementwise min and max, omitting NaN: NaN only where both are NaN.
TANDEM_API Array min(const Operand& a, const Operand& b);
TANDEM_API Array max(const Operand& a, const Operand& b);

// ---- select and casts ------------------------------------------------------------------
/// Elementwise cond ? a : b, all three expanded to one shape. cond is converted to logical
/// (a NaN in cond is an error). The result type is that of a and b combined.
TANDEM_API Array where(const Operand& cond, const Operand& a, const Operand& b);
TANDEM_API Array astype(const Array& a, DType t);
TANDEM_API Array single(const Array& a);     ///< MATLAB single(a)
TANDEM_API Array as_double(const Array& a);  ///< MATLAB double(a) (`double` is a C++ keyword)
TANDEM_API Array logical(const Array& a);    ///< MATLAB logical(a): nonzero -> 1; NaN is an error

// ---- kept on a device ------------------------------------------------------------------
/// MATLAB's gpuArray(a): a's values (the same bits; a itself is unchanged), asked to run and stay
/// on a device. The region that computes it, and every region computing from it (a's readers
/// are not), go to a device whatever their size, unless placement is forced to the CPU
/// (Config::placement = "cpu") or no device is open: then it is placed as any value. Its
/// results stay on the device until a host reader wants them (and a device short of memory may
/// still write them back). Array::device_requested() says whether a value is one.
TANDEM_API Array to_device(const Array& a);

}  // namespace tandem
