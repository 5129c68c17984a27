// Ops that rearrange elements rather than compute them. Lazy like every op; shapes are checked
// at once (ShapeError).
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

#include "tandem/array.hpp"
#include "tandem/export.hpp"

namespace tandem {

/// MATLAB reshape: the same elements, in column-major order, in `shape` (numel must agree). Free:
/// the result shares the array's value (no copy, on the host or a device).
TANDEM_API Array reshape(const Array& a, const Shape& shape);
/// MATLAB a(:): the elements as a column vector.
TANDEM_API Array column(const Array& a);
/// MATLAB a.' (and a' for real arrays) of a 2-D array (ShapeError for N-D). A vector's transpose
/// is free (a reshape); a matrix's is a tiled copy, and matmul reads it in place instead.
TANDEM_API Array transpose(const Array& a);

/// MATLAB permute(a, order): the dimensions rearranged, output dimension d being input dimension
/// order[d] (1-based; order is a permutation of 1..n, n >= ndims(a), at most 13). Free when only
/// singleton dimensions move (a reshape); a 2-D [2 1] is transpose; otherwise a tiled copy.
TANDEM_API Array permute(const Array& a, const std::vector<int>& order);

/// MATLAB cat(dim, ...) (dim 1-based), horzcat [a, b, ...] and vertcat [a; b; ...]: the arrays
/// end to end along dim; every other dimension must agree (ShapeError naming the shapes); empty
/// 0 x 0 arrays are skipped, as in MATLAB. The type is the inputs' combined one (single wins,
/// logical only if all are logical).
TANDEM_API Array cat(int dim, const std::vector<Array>& arrays);
TANDEM_API Array horzcat(const std::vector<Array>& arrays);
TANDEM_API Array vertcat(const std::vector<Array>& arrays);

/// MATLAB flip: the order along a dimension reversed (default: the first that is not 1).
TANDEM_API Array flip(const Array& a);
TANDEM_API Array flip(const Array& a, int dim);
/// MATLAB circshift(a, k, dim): elements moved k positions along dim, wrapping around (k may be
/// negative; default dim: the first that is not 1).
TANDEM_API Array circshift(const Array& a, std::int64_t k);
TANDEM_API Array circshift(const Array& a, std::int64_t k, int dim);
/// MATLAB repmat(a, r, c) and repmat(a, [r1 r2 ...]): copies of a tiled along each dimension.
TANDEM_API Array repmat(const Array& a, std::int64_t r, std::int64_t c);
TANDEM_API Array repmat(const Array& a, const std::vector<std::int64_t>& copies);

/// The last position along a dimension, for slice's `last` (MATLAB's `end`).
inline constexpr std::int64_t kEnd = INT64_MIN;
/// MATLAB a(..., first:step:last, ...) along one dimension (1-based, inclusive, step != 0;
/// `kEnd` for the extent). An empty range gives an empty dimension; a subscript outside the
/// array is an IndexError naming the index and the extent. Chain calls for several dimensions:
/// slice(slice(a, 1, 1, 1, 3), 2, 2, 2, kEnd) is a(1:3, 2:2:end).
TANDEM_API Array slice(const Array& a, int dim, std::int64_t first, std::int64_t step, std::int64_t last);

}  // namespace tandem
