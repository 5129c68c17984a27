// The reductions of the public API (tandem/reductions.hpp): each checks its arguments and builds
// nodes. The graph has eight reduce ops (sum prod max min argmax argmin any all); mean, var, std,
// nnz, dot, norm and the omitnan forms are built from them and elementwise ops, so fusion sees
// through them (mean(x.^2) is one pass: a sum with its producer folded in, then a division).
#include <cmath>
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/ops.hpp"
#include "tandem/reductions.hpp"
#include "tandem/shape_ops.hpp"

namespace tandem {

namespace {

using detail::Node;
using detail::OpKind;

/// 0-based dimension for the default: the first whose size is not 1.
int default_dim(const Shape& s) {
    for (int d = 0; d < s.ndims(); ++d)
        if (s[d] != 1) return d;
    return 0;
}

int checked_dim(int dim, const char* what) {
    if (dim < 1)
        throw ValueError(std::string(what) + ": dimension argument must be a positive integer, got " +
                         std::to_string(dim));
    return dim - 1;
}

/// The result shape of reducing `s` along `dim` (0-based; -1: all).
Shape reduced_shape(const Shape& s, int dim, bool keep_empty) {
    if (dim < 0) return (keep_empty && s.empty()) ? Shape{0, 0} : Shape::scalar();
    std::vector<std::int64_t> d = s.dims();
    if (static_cast<std::size_t>(dim) >= d.size()) return s;  // a singleton dimension
    if (!(keep_empty && d[static_cast<std::size_t>(dim)] == 0)) d[static_cast<std::size_t>(dim)] = 1;
    return Shape(std::move(d));
}

/// One reduce node. dim: 0-based, or -1 for all elements.
Array reduce(OpKind op, const Array& a0, int dim) {
    detail::RuntimeImpl& rt = detail::runtime_of(a0);
    // MATLAB's sum(x(:)): the column x(:) reduced along its length is x reduced whole, in the
    // same order (the canonical order follows the elements' linear order either way), without
    // the reshape between them, which would cut x's region from the reduction's.
    Array a = a0;
    if (dim == 0 && a0.node()->op == OpKind::Reshape && a0.shape().ndims() == 2 && a0.shape()[1] == 1 &&
        a0.shape().numel() > 0 && op != OpKind::ArgMax && op != OpKind::ArgMin)
        if (auto whole = rt.scheduler().pending_operand(*a0.node(), 0)) {
            a = Array(std::move(whole));
            dim = -1;
        }
    const Node& n = *a.node();
    const bool keep_empty = op == OpKind::MaxOf || op == OpKind::MinOf || op == OpKind::ArgMax || op == OpKind::ArgMin;
    DType in = n.dtype;
    DType out = detail::result_dtype(op, &in);
    return Array(rt.nodes().make(op, out, reduced_shape(n.shape, dim, keep_empty), {a.node()},
                                 {static_cast<double>(dim), 0, 0}));
}

/// sum([]) and friends: MATLAB reduces a 0 x 0 array without a dimension to a scalar.
int implicit_dim(const Array& a) {
    const Shape& s = a.shape();
    if (s.ndims() == 2 && s[0] == 0 && s[1] == 0) return -1;
    return default_dim(s);
}

/// x with NaN replaced by `fill` (for the omitnan forms).
Array without_nan(const Array& a, double fill) {
    return where(isnan(a), fill, a);
}

/// The number of elements reduced along dim (0-based, -1: all), as an array-typed constant.
double count_along(const Shape& s, int dim) {
    return dim < 0 ? static_cast<double>(s.numel()) : static_cast<double>(s[dim]);
}

/// Keeps single results single: a double scalar divisor would not change the type anyway
/// (single wins), but a logical sum is double already.
Array sum_dim(const Array& a, int dim, NanFlag nan) {
    if (nan == NanFlag::omitnan && a.dtype() != DType::logical) return reduce(OpKind::Sum, without_nan(a, 0.0), dim);
    return reduce(OpKind::Sum, a, dim);
}

Array prod_dim(const Array& a, int dim, NanFlag nan) {
    if (nan == NanFlag::omitnan && a.dtype() != DType::logical) return reduce(OpKind::Prod, without_nan(a, 1.0), dim);
    return reduce(OpKind::Prod, a, dim);
}

Array mean_dim(const Array& a, int dim, NanFlag nan) {
    if (nan == NanFlag::omitnan && a.dtype() != DType::logical) {
        // Both sums in one pass over a (one region, two outputs).
        Array count = reduce(OpKind::Sum, !isnan(a), dim);
        Array total = reduce(OpKind::Sum, without_nan(a, 0.0), dim);
        return total / (a.dtype() == DType::f32 ? single(count) : count);
    }
    Array total = reduce(OpKind::Sum, a, dim);
    return total / count_along(a.shape(), dim);
}

Array var_dim(const Array& a, int w, int dim) {
    if (w != 0 && w != 1) throw ValueError("var: the weight must be 0 or 1, got " + std::to_string(w));
    const double n = count_along(a.shape(), dim);
    Array x = a.dtype() == DType::logical ? as_double(a) : a;
    Array mu = reduce(OpKind::Sum, x, dim) / n;
    Array d = x - mu;  // mu expands back along dim: a region boundary, then one more pass
    Array ss = reduce(OpKind::Sum, d * d, dim);
    // MATLAB: n = 1 gives 0 with w = 0 (normalised by 1 instead of 0); n = 0 gives NaN (0 / 0).
    const double div = w == 1 ? n : (n > 1 ? n - 1 : n);
    return ss / div;
}

Array extremum(OpKind op, const Array& a, int dim) {
    if (a.dtype() != DType::logical) return reduce(op, a, dim);
    // MATLAB's max and min of a logical array are logical (code uses them as masks); indices are double.
    const Array r = reduce(op, as_double(a), dim);
    return op == OpKind::MaxOf || op == OpKind::MinOf ? logical(r) : r;
}

}  // namespace

Array sum(const Array& a, NanFlag nan) { return sum_dim(a, implicit_dim(a), nan); }
Array sum(const Array& a, int dim, NanFlag nan) { return sum_dim(a, checked_dim(dim, "sum"), nan); }
Array sum(const Array& a, AllDims, NanFlag nan) { return sum_dim(a, -1, nan); }
Array prod(const Array& a, NanFlag nan) { return prod_dim(a, implicit_dim(a), nan); }
Array prod(const Array& a, int dim, NanFlag nan) { return prod_dim(a, checked_dim(dim, "prod"), nan); }
Array prod(const Array& a, AllDims, NanFlag nan) { return prod_dim(a, -1, nan); }
Array mean(const Array& a, NanFlag nan) { return mean_dim(a, implicit_dim(a), nan); }
Array mean(const Array& a, int dim, NanFlag nan) { return mean_dim(a, checked_dim(dim, "mean"), nan); }
Array mean(const Array& a, AllDims, NanFlag nan) { return mean_dim(a, -1, nan); }

Array var(const Array& a, int w) { return var_dim(a, w, implicit_dim(a)); }
Array var(const Array& a, int w, int dim) { return var_dim(a, w, checked_dim(dim, "var")); }
Array var(const Array& a, int w, AllDims) { return var_dim(a, w, -1); }
Array stdev(const Array& a, int w) { return sqrt(var(a, w)); }
Array stdev(const Array& a, int w, int dim) { return sqrt(var(a, w, dim)); }
Array stdev(const Array& a, int w, AllDims) { return sqrt(var(a, w, all_dims)); }

Array max(const Array& a) { return extremum(OpKind::MaxOf, a, default_dim(a.shape())); }
Array max(const Array& a, Empty, int dim) { return extremum(OpKind::MaxOf, a, checked_dim(dim, "max")); }
Array max(const Array& a, AllDims) { return extremum(OpKind::MaxOf, a, -1); }
Array min(const Array& a) { return extremum(OpKind::MinOf, a, default_dim(a.shape())); }
Array min(const Array& a, Empty, int dim) { return extremum(OpKind::MinOf, a, checked_dim(dim, "min")); }
Array min(const Array& a, AllDims) { return extremum(OpKind::MinOf, a, -1); }

ValueIndex max_index(const Array& a) { return max_index(a, default_dim(a.shape()) + 1); }
ValueIndex max_index(const Array& a, int dim) {
    const int d = checked_dim(dim, "max");
    return {extremum(OpKind::MaxOf, a, d), extremum(OpKind::ArgMax, a, d)};
}
ValueIndex min_index(const Array& a) { return min_index(a, default_dim(a.shape()) + 1); }
ValueIndex min_index(const Array& a, int dim) {
    const int d = checked_dim(dim, "min");
    return {extremum(OpKind::MinOf, a, d), extremum(OpKind::ArgMin, a, d)};
}

Array any(const Array& a) { return reduce(OpKind::Any, a, implicit_dim(a)); }
Array any(const Array& a, int dim) { return reduce(OpKind::Any, a, checked_dim(dim, "any")); }
Array any(const Array& a, AllDims) { return reduce(OpKind::Any, a, -1); }
Array all(const Array& a) { return reduce(OpKind::All, a, implicit_dim(a)); }
Array all(const Array& a, int dim) { return reduce(OpKind::All, a, checked_dim(dim, "all")); }
Array all(const Array& a, AllDims) { return reduce(OpKind::All, a, -1); }

namespace {
Array scan(OpKind op, const Array& a, int dim) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    Array x = a.dtype() == DType::logical ? as_double(a) : a;
    return Array(rt.nodes().make(op, x.dtype(), x.shape(), {x.node()}, {static_cast<double>(dim), 0, 0}));
}
}  // namespace

Array cumsum(const Array& a) { return scan(OpKind::CumSum, a, default_dim(a.shape())); }
Array cumsum(const Array& a, int dim) { return scan(OpKind::CumSum, a, checked_dim(dim, "cumsum")); }
Array cumprod(const Array& a) { return scan(OpKind::CumProd, a, default_dim(a.shape())); }
Array cumprod(const Array& a, int dim) { return scan(OpKind::CumProd, a, checked_dim(dim, "cumprod")); }
Array cummax(const Array& a) { return scan(OpKind::CumMax, a, default_dim(a.shape())); }
Array cummax(const Array& a, int dim) { return scan(OpKind::CumMax, a, checked_dim(dim, "cummax")); }
Array cummin(const Array& a) { return scan(OpKind::CumMin, a, default_dim(a.shape())); }
Array cummin(const Array& a, int dim) { return scan(OpKind::CumMin, a, checked_dim(dim, "cummin")); }

Array nnz(const Array& a) { return reduce(OpKind::Sum, a != 0.0, -1); }

Array dot(const Array& a, const Array& b) {
    auto is_vector = [](const Shape& s) { return s.ndims() == 2 && (s[0] == 1 || s[1] == 1); };
    if (!is_vector(a.shape()) || !is_vector(b.shape()) || a.shape().numel() != b.shape().numel())
        throw ShapeError("dot: A and B must be vectors of the same length, got " + a.shape().to_string() + " and " +
                         b.shape().to_string());
    Array x = a.dtype() == DType::logical ? as_double(a) : a;
    Array y = b.dtype() == DType::logical ? as_double(b) : b;
    if (a.shape() != b.shape()) y = reshape(y, a.shape());  // orientation does not matter
    return reduce(OpKind::Sum, x * y, -1);
}

Array norm(const Array& v, double p) {
    const Shape& s = v.shape();
    if (!(s.ndims() == 2 && (s[0] == 1 || s[1] == 1)) && !s.empty())
        throw ShapeError("norm: only vector norms are supported, got a " + s.to_string() + " array");
    if (!(p >= 1.0) && p != -HUGE_VAL)
        throw ValueError("norm: p must be >= 1, Inf or -Inf, got " + std::to_string(p));
    Array x = v.dtype() == DType::logical ? as_double(v) : v;
    Array m = abs(x);
    auto sum_of_powers = [&](const Array& a) {  // (sum |a|^p)^(1/p)
        return p == 2.0 ? sqrt(reduce(OpKind::Sum, a * a, -1)) : power(reduce(OpKind::Sum, power(a, p), -1), 1.0 / p);
    };
    if (x.shape().numel() == 0) return reduce(OpKind::Sum, m, -1);  // MATLAB: 0 for every p
    // max and min skip NaN; MATLAB's norm(v, Inf) of a v with a NaN is NaN.
    if (p == HUGE_VAL || p == -HUGE_VAL)
        return where(reduce(OpKind::Any, isnan(x), -1), NAN, reduce(p > 0 ? OpKind::MaxOf : OpKind::MinOf, m, -1));
    if (p == 1.0) return reduce(OpKind::Sum, m, -1);  // overflows only where the norm does
    if (p == 2.0) {
        // Three sums of squares in one pass (one region, as the plain sum alone was; the
        // accumulators of LAPACK's dnrm2): of v, and of v scaled down and up by a power of two
        // (exactly). The plain one's root where it neither overflowed nor lost terms to underflow
        // (its bits as before), else a scaled one's. A NaN makes every sum NaN: none is hidden.
        const bool single = x.dtype() == DType::f32;
        const double down = single ? 0x1p-70 : 0x1p-600, up = single ? 0x1p75 : 0x1p600;
        const double small = single ? 0x1p-90 : 0x1p-900;  // below: squares may have underflowed
        const Array sq = reduce(OpKind::Sum, x * x, -1);
        const Array xd = x * down, xu = x * up;
        const Array big = sqrt(reduce(OpKind::Sum, xd * xd, -1)) / down, tiny = sqrt(reduce(OpKind::Sum, xu * xu, -1)) / up;
        const Array plain = sqrt(sq);
        return where(isinf(plain) & isfinite(big), big, where(sq < small, tiny, plain));
    }
    // Any other p: the plain sum of powers, unless it overflowed while the norm does not (norm([1e200 1e200]))
    // or its terms may have underflowed: then scaled by the largest |v|, as MATLAB's norm is. Both
    // are in the graph (a second pass over the vector); the choice is per value, so the bits are
    // the same on every executor.
    const Array plain = sum_of_powers(m);
    const Array largest = reduce(OpKind::MaxOf, m, -1);
    const Array scaled = largest * sum_of_powers(m / largest);
    const double tiny = std::pow(x.dtype() == DType::f32 ? 1e-36 : 1e-300, 1.0 / p);  // tiny^p: a normal number
    return where((isinf(plain) & isfinite(largest)) | ((largest < tiny) & (largest > 0.0)), scaled, plain);
}

}  // namespace tandem
