// reshape and column (tandem/shape_ops.hpp): a Reshape node, which fusion makes a view region
// (the scheduler gives it its input's value).
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/shape_ops.hpp"

namespace tandem {

Array reshape(const Array& a, const Shape& shape) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (shape.numel() != a.shape().numel())
        throw ShapeError("reshape: " + a.shape().to_string() + " has " + std::to_string(a.shape().numel()) +
                         " elements, " + shape.to_string() + " has " + std::to_string(shape.numel()));
    if (shape == a.shape()) return a;
    return Array(rt.nodes().make(detail::OpKind::Reshape, a.dtype(), shape, {a.node()}));
}

Array column(const Array& a) { return reshape(a, Shape{a.shape().numel(), 1}); }

Array transpose(const Array& a) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    const Shape& s = a.shape();
    if (s.ndims() > 2) throw ShapeError("transpose: an N-D array (" + s.to_string() + ") has no transpose; use a 2-D one");
    const Shape t{s[1], s[0]};
    // A vector's transpose is its reshape (the same element order): free.
    if (s[0] == 1 || s[1] == 1) return reshape(a, t);
    return Array(rt.nodes().make(detail::OpKind::Transpose, a.dtype(), t, {a.node()}));
}

}  // namespace tandem
