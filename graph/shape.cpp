#include <limits>
#include <string>

#include "tandem/dtype.hpp"
#include "tandem/error.hpp"
#include "tandem/shape.hpp"

namespace tandem {

std::string_view dtype_name(DType t) noexcept {
    switch (t) {
        case DType::f64: return "double";
        case DType::f32: return "single";
        case DType::logical: return "logical";
    }
    return "unknown";
}

Shape::Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { normalize(); }
Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { normalize(); }

void Shape::normalize() {
    while (dims_.size() < 2) dims_.push_back(dims_.empty() ? 0 : 1);
    while (dims_.size() > 2 && dims_.back() == 1) dims_.pop_back();
    numel_ = 1;
    bool zero = false;
    for (std::int64_t d : dims_) {
        if (d < 0) throw ShapeError("shape " + to_string() + ": extents must be nonnegative");
        if (d == 0) zero = true;
    }
    if (zero) {
        numel_ = 0;
        return;
    }
    for (std::int64_t d : dims_) {
        if (numel_ > std::numeric_limits<std::int64_t>::max() / d)
            throw ShapeError("shape " + to_string() + ": element count overflows a 64-bit integer");
        numel_ *= d;
    }
}

std::string Shape::to_string() const {
    std::string s;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
        if (i) s += 'x';
        s += std::to_string(dims_[i]);
    }
    return s;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
    if (a == b) return a;
    int n = std::max(a.ndims(), b.ndims());
    std::vector<std::int64_t> out(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) {
        std::int64_t x = a[d], y = b[d];
        if (x == y || y == 1) out[static_cast<std::size_t>(d)] = x;
        else if (x == 1) out[static_cast<std::size_t>(d)] = y;
        else
            throw ShapeError(std::string(op) + ": operand sizes " + a.to_string() + " and " + b.to_string() +
                             " are incompatible (dimension " + std::to_string(d + 1) + ": " + std::to_string(x) +
                             " vs " + std::to_string(y) + "; each must be equal or 1)");
    }
    return Shape(std::move(out));
}

}  // namespace tandem
