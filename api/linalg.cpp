// matmul (tandem/linalg.hpp): checks the operands and builds a MatMul node, which fusion makes a
// region of its own (its operands materialised, in one element type); a product with a vector
// side becomes an elementwise product and a sum instead (vector_product).
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/linalg.hpp"
#include "tandem/ops.hpp"
#include "tandem/reductions.hpp"
#include "tandem/shape_ops.hpp"

namespace tandem {

const char* to_string(MatmulPrecision p) noexcept {
    switch (p) {
        case MatmulPrecision::full: return "full";
        case MatmulPrecision::f16: return "f16";
        case MatmulPrecision::bf16: return "bf16";
    }
    return "unknown";
}

namespace {

/// A product with one side a vector (m = 1 or n = 1: matrix-vector, vector-matrix, dot) as the
/// elementwise product and a sum, which fusion folds into one reduce region with its producers
/// and consumers: a GEMM kernel's tiles would be 1/64 used and its k loop serial (0.29 ms for a
/// 512 x 512 matrix-vector product on the H100; the reduction reads it at memory speed). Each
/// output sums its k products in the reduction's fixed order. The result is m x n.
Array vector_product(const Array& a, const Array& b, bool trans_a, bool trans_b, std::int64_t m, std::int64_t k,
                     std::int64_t n) {
    const Shape column{k, 1}, row{1, k};
    if (n == 1) {
        // y(i) = sum_j op(A)(i, j) b(j): A's rows against b as a row (A m x k), or A's columns
        // against b as a column (A k x m, transposed).
        const Array p = trans_a ? a * reshape(b, column) : a * reshape(b, row);
        return trans_a ? reshape(sum(p, 1), Shape{m, 1}) : sum(p, 2);
    }
    // m == 1: y(j) = sum_i a(i) op(B)(i, j).
    const Array p = trans_b ? b * reshape(a, row) : b * reshape(a, column);
    return trans_b ? reshape(sum(p, 2), Shape{1, n}) : sum(p, 1);
}

}  // namespace

Array matmul(const Array& a0, const Array& b0, MatmulOptions o) {
    // A transposed operand is read in place: transpose(x) * y is x' * y without the copy.
    // (Not once the transpose is computed: it is an array then, and its operand is released or
    // is only its recipe.)
    auto unwrap = [](const Array& x, bool& trans) {
        if (x.node()->op != detail::OpKind::Transpose) return x;
        auto in = detail::runtime_of(x).scheduler().pending_operand(*x.node(), 0);
        if (!in) return x;
        trans = !trans;
        return Array(std::move(in));
    };
    const Array a = unwrap(a0, o.transpose_a), b = unwrap(b0, o.transpose_b);
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (&detail::runtime_of(b) != &rt) throw ValueError("matmul: operands belong to different runtimes");
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    const bool reduced = o.precision != MatmulPrecision::full;
    if (o.precision != MatmulPrecision::full && o.precision != MatmulPrecision::f16 &&
        o.precision != MatmulPrecision::bf16)
        throw ValueError("matmul: unknown precision code " + std::to_string(static_cast<int>(o.precision)));
    if (reduced)
        for (const auto& [x, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
            if (x->dtype() != DType::f32)
                throw DTypeError(std::string("matmul: precision ") + to_string(o.precision) + " takes single operands; " +
                                 name + " (" + x->shape().to_string() + ") is " + std::string(dtype_name(x->dtype())) +
                                 " (convert it with single() first)");
    if (sa.is_scalar() || sb.is_scalar()) {
        // MATLAB: a scalar multiplies elementwise (the other operand's transpose still applies).
        const bool scalar_a = sa.is_scalar();
        const Array& other = scalar_a ? b : a;
        const bool trans = scalar_a ? o.transpose_b : o.transpose_a;
        if (!reduced) {
            const Array t = trans ? transpose(other) : other;
            return scalar_a ? a * t : t * b;
        }
        // Rounded elements: a product with k = 1 (s * row, or column * s) rounds both sides the
        // way the general product does, on every backend.
        const std::int64_t count = other.shape().numel();
        if (count > (std::int64_t{1} << 31))
            throw ShapeError("matmul: a scalar times " + other.shape().to_string() + " at precision " +
                             to_string(o.precision) + ": more than 2^31 elements are not supported");
        const Shape line = scalar_a ? Shape{1, count} : Shape{count, 1};
        const Array s = reshape(scalar_a ? a : b, Shape{1, 1}), v = reshape(other, line);
        Array p(rt.nodes().make(detail::OpKind::MatMul, DType::f32, line,
                                {scalar_a ? s.node() : v.node(), scalar_a ? v.node() : s.node()},
                                {0.0, 0.0, static_cast<double>(static_cast<int>(o.precision))}));
        p = reshape(p, other.shape());
        return trans ? transpose(p) : p;
    }
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
    if (!reduced && (m == 1 || n == 1) && m * n > 0)
        return vector_product(x, y, o.transpose_a, o.transpose_b, m, ka, n);
    // attr: transpose A, transpose B, the MatmulPrecision (backends read it from the node).
    return Array(rt.nodes().make(detail::OpKind::MatMul, t, Shape{m, n}, {x.node(), y.node()},
                                 {o.transpose_a ? 1.0 : 0.0, o.transpose_b ? 1.0 : 0.0,
                                  static_cast<double>(static_cast<int>(o.precision))}));
}

}  // namespace tandem
