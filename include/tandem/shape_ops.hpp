// Ops that rearrange elements rather than compute them. Lazy like every op; shapes are checked
// at once (ShapeError).
#pragma once

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

/// MATLAB cat(dim, ...) (dim 1-based), horzcat [a, b, ...] and vertcat [a; b; ...]: the arrays
/// end to end along dim; every other dimension must agree (ShapeError naming the shapes); empty
/// 0 x 0 arrays are skipped, as in MATLAB. The type is the inputs' combined one (single wins,
/// logical only if all are logical).
TANDEM_API Array cat(int dim, const std::vector<Array>& arrays);
TANDEM_API Array horzcat(const std::vector<Array>& arrays);
TANDEM_API Array vertcat(const std::vector<Array>& arrays);

}  // namespace tandem
