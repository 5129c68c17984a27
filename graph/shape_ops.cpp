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

}  // namespace tandem
