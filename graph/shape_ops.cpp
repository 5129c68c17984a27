// reshape and column (tandem/shape_ops.hpp): a Reshape node, which fusion makes a view region
// (the scheduler gives it its input's value).
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/ops.hpp"
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

Array cat(int dim, const std::vector<Array>& arrays) {
    if (dim < 1) throw ValueError("cat: dimension argument must be a positive integer, got " + std::to_string(dim));
    const int d = dim - 1;
    std::vector<Array> parts;
    for (const Array& a : arrays) {
        if (!a.valid()) throw ValueError("cat: a null tandem::Array among the arrays");
        const Shape& s = a.shape();
        if (s.ndims() == 2 && s[0] == 0 && s[1] == 0) continue;  // MATLAB skips []
        parts.push_back(a);
    }
    if (parts.empty()) return arrays.empty() ? Array() : arrays.front();
    detail::RuntimeImpl& rt = detail::runtime_of(parts.front());
    std::vector<std::int64_t> out = parts.front().shape().dims();
    while (out.size() <= static_cast<std::size_t>(d)) out.push_back(1);
    out[static_cast<std::size_t>(d)] = 0;
    bool any_single = false, all_logical = true;
    for (const Array& a : parts) {
        if (&detail::runtime_of(a) != &rt) throw ValueError("cat: arrays belong to different runtimes");
        const Shape& s = a.shape();
        for (int q = 0; q < std::max<int>(s.ndims(), static_cast<int>(out.size())); ++q) {
            if (q == d) continue;
            const std::int64_t want = q < static_cast<int>(out.size()) ? out[static_cast<std::size_t>(q)] : 1;
            if (s[q] != want)
                throw ShapeError("cat: dimensions other than " + std::to_string(dim) + " must agree: " +
                                 parts.front().shape().to_string() + " and " + s.to_string());
        }
        out[static_cast<std::size_t>(d)] += s[d];
        any_single = any_single || a.dtype() == DType::f32;
        all_logical = all_logical && a.dtype() == DType::logical;
    }
    if (parts.size() == 1) return parts.front();
    const DType t = all_logical ? DType::logical : any_single ? DType::f32 : DType::f64;
    std::vector<std::shared_ptr<detail::Node>> inputs;
    for (const Array& a : parts) inputs.push_back((a.dtype() == t ? a : astype(a, t)).node());
    return Array(rt.nodes().make(detail::OpKind::Cat, t, Shape(std::move(out)), std::move(inputs),
                                 {static_cast<double>(d), 0, 0}));
}

Array horzcat(const std::vector<Array>& arrays) { return cat(2, arrays); }
Array vertcat(const std::vector<Array>& arrays) { return cat(1, arrays); }

}  // namespace tandem
