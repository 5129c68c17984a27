// index, find and assign (tandem/indexing.hpp): Gather, Scatter and Find nodes. Shapes follow
// MATLAB and are fixed here; subscripts are checked by the backends when they run (the values
// may not exist yet), which fail the region with an IndexError.
#include <cstdio>
#include <string>

#include "graph/subscripts.hpp"
#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/host_array.hpp"
#include "tandem/indexing.hpp"
#include "tandem/ops.hpp"
#include "tandem/reductions.hpp"
#include "tandem/shape_ops.hpp"

namespace tandem {

namespace {

using detail::OpKind;

/// A non-scalar 1 x n or n x 1 array (MATLAB's orientation rules apply to these).
bool is_vector(const Shape& s) { return s.ndims() == 2 && (s[0] == 1 || s[1] == 1) && s.numel() != 1; }
bool is_row(const Shape& s) { return s.ndims() == 2 && s[0] == 1; }

detail::RuntimeImpl& runtime_of_pair(const Array& a, const Array& I, const char* what) {
    if (!a.valid() || !I.valid()) throw ValueError(std::string(what) + ": a null tandem::Array as an argument");
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (&detail::runtime_of(I) != &rt) throw ValueError(std::string(what) + ": the array and the subscripts belong to different runtimes");
    return rt;
}

void check_subscripts(const Array& I, const char* what) {
    if (I.dtype() == DType::logical) return;
    if (I.dtype() != DType::f64 && I.dtype() != DType::f32)
        throw DTypeError(std::string(what) + ": subscripts must be double, single or logical, got " + std::string(dtype_name(I.dtype())));
}

int dim_of(int dim, const char* what) {
    if (dim < 1) throw ValueError(std::string(what) + ": dimension argument must be a positive integer, got " + std::to_string(dim));
    return dim - 1;
}

/// The number of true elements of a logical array: waits for it (a mask decides a shape). The
/// mask is computed once, here, for the count and for the find that follows (folded into the
/// count alone, it would be computed again for the positions).
std::int64_t count_true(const Array& mask) {
    const Array count = nnz(mask);
    mask.runtime().evaluate({mask, count}).get();
    return static_cast<std::int64_t>(count.gather().get().at(0));
}

/// find() of a logical array laid out as `shape` (a row: 1 x count, else count x 1).
Array find_positions(const Array& mask, bool row) {
    detail::RuntimeImpl& rt = detail::runtime_of(mask);
    const std::int64_t count = count_true(mask);
    const Shape shape = row ? Shape{1, count} : Shape{count, 1};
    return Array(rt.nodes().make(OpKind::Find, DType::f64, shape, {mask.node()}));
}

/// A logical subscript along a dimension: a vector no longer than the extent; its positions.
Array positions_along(const Array& I, std::int64_t extent, int dim, const char* what) {
    if (I.numel() > 0 && !is_vector(I.shape()) && I.numel() != 1)
        throw ShapeError(std::string(what) + ": a logical subscript in position " + std::to_string(dim) +
                         " must be a vector, got " + I.shape().to_string());
    if (I.numel() > extent)
        throw IndexError(std::string(what) + ": the logical subscript in position " + std::to_string(dim) + " has " +
                         std::to_string(I.numel()) + " elements; the extent there is " + std::to_string(extent));
    return find_positions(I, false);
}

/// The type of a(I) = b: a's, except that a logical a takes a numeric b's.
DType assigned_type(const Array& a, DType b) { return a.dtype() == DType::logical && b != DType::logical ? b : a.dtype(); }

/// b as a node of type t with `count` elements (or one), for a Scatter.
std::shared_ptr<detail::Node> right_side(detail::RuntimeImpl& rt, const Operand& b, DType t, std::int64_t count,
                                          const Shape& selection, const char* what) {
    if (!b.is_array()) return rt.nodes().make(OpKind::Constant, t, Shape::scalar(), {}, {b.scalar(), 0, 0});
    const Array& v = b.array();
    if (&detail::runtime_of(v) != &rt) throw ValueError(std::string(what) + ": the right-hand side belongs to another runtime");
    const Shape& s = v.shape();
    const bool fits = s.numel() == 1 || s == selection || (s.numel() == count && (is_vector(s) || s.numel() <= 1) &&
                                                            (is_vector(selection) || selection.numel() <= 1));
    if (!fits)
        throw ShapeError(std::string(what) + ": unable to perform assignment because the size of the left side is " +
                         selection.to_string() + " and the size of the right side is " + s.to_string());
    return (v.dtype() == t ? v : astype(v, t)).node();
}

}  // namespace

Array index(const Array& a, const Array& I) {
    detail::RuntimeImpl& rt = runtime_of_pair(a, I, "index");
    check_subscripts(I, "index");
    const Shape& sa = a.shape();
    Array positions = I;
    Shape out;
    if (I.dtype() == DType::logical) {
        // MATLAB: the selected elements as a column, or a row when a is a row vector.
        const bool row = is_vector(sa) ? is_row(sa) : sa.numel() == 1 && is_vector(I.shape()) && is_row(I.shape());
        positions = find_positions(I, row);
        out = positions.shape();
    } else if (is_vector(sa) && is_vector(I.shape())) {
        out = is_row(sa) ? Shape{1, I.numel()} : Shape{I.numel(), 1};
    } else {
        out = I.shape();
    }
    return Array(rt.nodes().make(OpKind::Gather, a.dtype(), out, {a.node(), positions.node()}, {-1, 0, 0}));
}

Array index(const Array& a, int dim, const Array& I) {
    detail::RuntimeImpl& rt = runtime_of_pair(a, I, "index");
    check_subscripts(I, "index");
    const int d = dim_of(dim, "index");
    Array positions = I.dtype() == DType::logical ? positions_along(I, a.shape()[d], dim, "index") : I;
    std::vector<std::int64_t> dims = a.shape().dims();
    while (dims.size() <= static_cast<std::size_t>(d)) dims.push_back(1);
    dims[static_cast<std::size_t>(d)] = positions.numel();
    return Array(rt.nodes().make(OpKind::Gather, a.dtype(), Shape(std::move(dims)), {a.node(), positions.node()},
                                 {static_cast<double>(d), 0, 0}));
}

Array find(const Array& x) {
    if (!x.valid()) throw ValueError("find: a null tandem::Array as the argument");
    // MATLAB: find([]) is [] (0 x 0); a row gives a row, anything else a column.
    if (x.shape() == Shape{0, 0}) return x.runtime().zeros(Shape{0, 0});
    const Array mask = x.dtype() == DType::logical ? x : x != 0.0;  // NaN ~= 0: NaN counts
    return find_positions(mask, is_row(x.shape()) && x.numel() != 1);
}

Array assign(const Array& a, const Array& I, const Operand& b) {
    detail::RuntimeImpl& rt = runtime_of_pair(a, I, "assign");
    check_subscripts(I, "assign");
    const DType t = assigned_type(a, b.is_array() ? b.array().dtype() : DType::f64);
    const bool scalar_b = !b.is_array() || b.array().numel() == 1;
    if (I.dtype() == DType::logical && scalar_b && I.numel() == a.numel()) {
        // a(M) = s is a select: elementwise, so it fuses with what surrounds it.
        Array r = where(reshape(I, a.shape()), b.is_array() ? Operand(reshape(b.array(), Shape::scalar())) : b, a);
        return r.dtype() == t ? r : astype(r, t);
    }
    const Array positions = I.dtype() == DType::logical ? find_positions(I, false) : I;
    const std::int64_t count = positions.numel();
    auto rhs = right_side(rt, b, t, count, positions.shape(), "assign");
    const Array base = a.dtype() == t ? a : astype(a, t);
    return Array(rt.nodes().make(OpKind::Scatter, t, a.shape(), {base.node(), positions.node(), rhs}, {-1, 0, 0}));
}

Array assign(const Array& a, int dim, const Array& I, const Operand& b) {
    detail::RuntimeImpl& rt = runtime_of_pair(a, I, "assign");
    check_subscripts(I, "assign");
    const int d = dim_of(dim, "assign");
    const DType t = assigned_type(a, b.is_array() ? b.array().dtype() : DType::f64);
    const Array positions = I.dtype() == DType::logical ? positions_along(I, a.shape()[d], dim, "assign") : I;
    std::vector<std::int64_t> dims = a.shape().dims();
    while (dims.size() <= static_cast<std::size_t>(d)) dims.push_back(1);
    dims[static_cast<std::size_t>(d)] = positions.numel();
    const Shape selection(std::move(dims));
    auto rhs = right_side(rt, b, t, selection.numel(), selection, "assign");
    const Array base = a.dtype() == t ? a : astype(a, t);
    return Array(rt.nodes().make(OpKind::Scatter, t, a.shape(), {base.node(), positions.node(), rhs},
                                 {static_cast<double>(d), 0, 0}));
}

}  // namespace tandem

namespace tandem::detail {

void throw_bad_subscript(const Region& r, std::int64_t k, BadSubscript why, std::optional<double> value) {
    const char* what = r.kind == RegionKind::scatter ? "assign" : "index";
    std::string s = std::string(what) + ": subscript I(" + std::to_string(k + 1) + ")";
    if (value) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", *value);
        s += std::string(" = ") + buf;
    }
    s += ": ";
    const std::string extent = std::to_string(r.index_extents.extent);
    if (why == BadSubscript::not_positive_integer)
        s += "array indices must be positive integers or logical values";
    else if (r.index_position == 0)
        s += "index exceeds the number of array elements; index must not exceed " + extent;
    else
        s += "index in position " + std::to_string(r.index_position) + " exceeds array bounds; index must not exceed " + extent;
    throw IndexError(s);
}

}  // namespace tandem::detail
