// matmul (tandem/linalg.hpp): checks the operands and builds a MatMul node, which fusion makes a
// region of its own (its operands materialised, in one element type).
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/linalg.hpp"
#include "tandem/ops.hpp"

namespace tandem {

Array matmul(const Array& a0, const Array& b0, MatmulOptions o) {
    // A transposed operand is read in place: transpose(x) * y is x' * y without the copy.
    // (Not once the transpose is computed: its operand is released then, and it is an array.)
    auto unwrap = [](const Array& x, bool& trans) {
        if (x.node()->op != detail::OpKind::Transpose) return x;
        auto in = detail::runtime_of(x).scheduler().locked([&]() -> std::shared_ptr<detail::Node> {
            return x.node()->inputs.empty() ? nullptr : x.node()->inputs[0];
        });
        if (!in) return x;
        trans = !trans;
        return Array(std::move(in));
    };
    const Array a = unwrap(a0, o.transpose_a), b = unwrap(b0, o.transpose_b);
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (&detail::runtime_of(b) != &rt) throw ValueError("matmul: operands belong to different runtimes");
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    if (sa.is_scalar() || sb.is_scalar()) return a * b;  // MATLAB: a scalar multiplies elementwise
    if (sa.ndims() > 2 || sb.ndims() > 2)
        throw ShapeError("matmul: operands must be 2-D, got " + sa.to_string() + " and " + sb.to_string());
    const std::int64_t m = o.transpose_a ? sa[1] : sa[0], ka = o.transpose_a ? sa[0] : sa[1];
    const std::int64_t kb = o.transpose_b ? sb[1] : sb[0], n = o.transpose_b ? sb[0] : sb[1];
    if (ka != kb)
        throw ShapeError("matmul: inner dimensions must agree: " + std::string(o.transpose_a ? "A' " : "A ") +
                         "is " + std::to_string(m) + "x" + std::to_string(ka) + ", " +
                         std::string(o.transpose_b ? "B' " : "B ") + "is " + std::to_string(kb) + "x" + std::to_string(n) +
                         " (A " + sa.to_string() + ", B " + sb.to_string() + ")");
    if (static_cast<double>(m) * static_cast<double>(n) > 0x1p31 || ka > (std::int64_t{1} << 31) ||
        m > (std::int64_t{1} << 31) || n > (std::int64_t{1} << 31))
        throw ShapeError("matmul: " + std::to_string(m) + "x" + std::to_string(n) + " results (or inner dimensions) "
                         "beyond 2^31 are not supported");
    // One element type: single wins, logical counts as double.
    const bool single_ = a.dtype() == DType::f32 || b.dtype() == DType::f32;
    const DType t = single_ ? DType::f32 : DType::f64;
    Array x = a.dtype() == t ? a : astype(a, t);
    Array y = b.dtype() == t ? b : astype(b, t);
    return Array(rt.nodes().make(detail::OpKind::MatMul, t, Shape{m, n}, {x.node(), y.node()},
                                 {o.transpose_a ? 1.0 : 0.0, o.transpose_b ? 1.0 : 0.0, 0.0}));
}

}  // namespace tandem
