// Indexing by data: MATLAB's a(I), a(:, I, :), a(M), find, and indexed assignment. Subscripts
// are arrays (double or single holding 1-based positive integers; logical for masks), computed
// anywhere like any other value. Ranges with a fixed step are cheaper through slice()
// (tandem/shape_ops.hpp), which needs no subscript array.
//
// A bad subscript (not a positive integer, or past the extent) is found when the op runs: the
// result's future fails with an IndexError naming the subscript's position, its value where
// known, and the extent; nothing else is affected. Masks are the exception to laziness: the
// result's size is the number of true elements, so index(a, M), find(M) and assign with a mask
// and a non-scalar right-hand side wait for M to be computed (an error of M surfaces there).
#pragma once

#include "tandem/array.hpp"
#include "tandem/export.hpp"

namespace tandem {

/// MATLAB a(I). With numeric I: a's elements at the linear positions I, in I's shape (if a and I
/// are both vectors: in a's orientation). With logical I (a mask, at most numel(a) elements):
/// the elements where I is true, in column-major order, as a column (a row if a is a row).
TANDEM_API Array index(const Array& a, const Array& I);
/// MATLAB a(:, ..., I, ..., :) with I in position `dim` (1-based): numeric subscripts (any shape;
/// its elements in order) or a logical vector choosing positions along dim.
TANDEM_API Array index(const Array& a, int dim, const Array& I);

/// MATLAB find(x): the 1-based linear positions of x's nonzero elements (NaN counts as nonzero)
/// as a double column (a row if x is a row vector; 0 x 0 for a 0 x 0 x, as find([]) is).
TANDEM_API Array find(const Array& x);

/// MATLAB a(I) = b, as a new value (a is unchanged): b is a scalar or has one element per
/// subscript; where I repeats a position the last assignment wins. A mask I with a scalar b is
/// an elementwise select (where(M, b, a): it fuses like any elementwise op). Tandem arrays do
/// not grow: a subscript past a's extent is an IndexError (MATLAB would enlarge a).
/// The result has a's type (a logical a takes b's type if b is not logical, as in MATLAB).
TANDEM_API Array assign(const Array& a, const Array& I, const Operand& b);
/// MATLAB a(:, ..., I, ..., :) = b with I in position `dim` (1-based): b is a scalar or has the
/// selection's shape (a's with numel(I) along dim; for vectors, any vector of that length).
TANDEM_API Array assign(const Array& a, int dim, const Array& I, const Operand& b);

}  // namespace tandem
