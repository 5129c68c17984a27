// Ops that rearrange elements rather than compute them. Lazy like every op; shapes are checked
// at once (ShapeError).
#pragma once

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

}  // namespace tandem
