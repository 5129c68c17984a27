// N-D shapes in MATLAB's convention: at least two dimensions, column-major, trailing
// singleton dimensions beyond the second dropped (so {3, 4, 1} is the same shape as {3, 4}).
#pragma once

#include "tandem/export.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tandem {

class TANDEM_API Shape {
public:
    /// 0x0, MATLAB's `[]`.
    Shape() : dims_{0, 0} {}
    /// Throws ShapeError for a negative extent or an element count that overflows.
    Shape(std::initializer_list<std::int64_t> dims);
    explicit Shape(std::vector<std::int64_t> dims);

    /// A 1x1 shape.
    static Shape scalar() { return Shape{1, 1}; }

    int ndims() const noexcept { return static_cast<int>(dims_.size()); }
    /// Extent of dimension d (0-based); 1 beyond ndims(), as in MATLAB's size(A, d).
    std::int64_t operator[](int d) const noexcept { return d < ndims() ? dims_[static_cast<std::size_t>(d)] : 1; }
    const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
    std::int64_t numel() const noexcept { return numel_; }
    bool empty() const noexcept { return numel_ == 0; }
    bool is_scalar() const noexcept { return numel_ == 1; }

    /// "3x4x2", as MATLAB prints sizes.
    std::string to_string() const;

    friend bool operator==(const Shape& a, const Shape& b) noexcept { return a.dims_ == b.dims_; }
    friend bool operator!=(const Shape& a, const Shape& b) noexcept { return !(a == b); }

private:
    void normalize();
    std::vector<std::int64_t> dims_;
    std::int64_t numel_ = 0;
};

/// The shape of an elementwise result under MATLAB implicit expansion: each dimension pair
/// must be equal or contain a 1. Throws ShapeError naming `op` and both shapes otherwise.
TANDEM_API Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

}  // namespace tandem
