// reshape and column (tandem/shape_ops.hpp): a Reshape node, which fusion makes a view region
// (the scheduler gives it its input's value).
#include <cmath>
#include <string>

#include "graph/permute_plan.hpp"
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

Array permute(const Array& a, const std::vector<int>& order) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    const Shape& s = a.shape();
    const int n = static_cast<int>(order.size());
    std::vector<bool> seen(order.size(), false);
    auto order_text = [&] {
        std::string t = "[";
        for (int d : order) t += (t.size() > 1 ? " " : "") + std::to_string(d);
        return t + "]";
    };
    for (int d : order) {
        if (d < 1 || d > n || seen[static_cast<std::size_t>(d - 1)])
            throw ValueError("permute: the order " + order_text() + " is not a permutation of 1.." + std::to_string(n));
        seen[static_cast<std::size_t>(d - 1)] = true;
    }
    if (n < s.ndims())
        throw ValueError("permute: the order " + order_text() + " names " + std::to_string(n) + " dimensions; the array " +
                         s.to_string() + " has " + std::to_string(s.ndims()));
    if (n > 13) throw ValueError("permute: at most 13 dimensions are supported, the order names " + std::to_string(n));
    std::vector<int> zero_based;
    std::vector<std::int64_t> dims;
    for (int d : order) {
        zero_based.push_back(d - 1);
        dims.push_back(s[d - 1]);
    }
    const Shape out(std::move(dims));
    // Only singletons move: the element order is the same, so it is a reshape.
    if (detail::plan_permute(s, zero_based).extent.size() <= 1) return reshape(a, out);
    if (s.ndims() == 2 && out.ndims() == 2 && zero_based[0] == 1) return transpose(a);
    std::uint64_t packed = 0;
    for (int d = 0; d < n; ++d) packed |= static_cast<std::uint64_t>(zero_based[static_cast<std::size_t>(d)]) << (4 * d);
    return Array(rt.nodes().make(detail::OpKind::Permute, a.dtype(), out, {a.node()}, {static_cast<double>(packed), static_cast<double>(n), 0}));
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

namespace {

int first_non_singleton(const Shape& s) {
    for (int d = 0; d < s.ndims(); ++d)
        if (s[d] != 1) return d;
    return 0;
}

/// One dimension remapped: out extent n_out along d, position k reading (a k + b) mod (input extent).
Array remap(const Array& x, int d, std::int64_t n_out, std::int64_t a, std::int64_t b) {
    detail::RuntimeImpl& rt = detail::runtime_of(x);
    std::vector<std::int64_t> dims = x.shape().dims();
    while (dims.size() <= static_cast<std::size_t>(d)) dims.push_back(1);
    dims[static_cast<std::size_t>(d)] = n_out;
    if (std::fabs(static_cast<double>(a)) > 0x1p52 || std::fabs(static_cast<double>(b)) > 0x1p52)
        throw ValueError("remap: an index beyond 2^52");
    return Array(rt.nodes().make(detail::OpKind::Remap, x.dtype(), Shape(std::move(dims)), {x.node()},
                                 {static_cast<double>(d), static_cast<double>(a), static_cast<double>(b)}));
}

int dim_arg(int dim, const char* what) {
    if (dim < 1) throw ValueError(std::string(what) + ": dimension argument must be a positive integer, got " + std::to_string(dim));
    return dim - 1;
}

}  // namespace

Array flip(const Array& a) { return flip(a, first_non_singleton(a.shape()) + 1); }
Array flip(const Array& a, int dim) {
    const int d = dim_arg(dim, "flip");
    const std::int64_t n = a.shape()[d];
    if (n <= 1) return a;
    return remap(a, d, n, -1, n - 1);
}

Array circshift(const Array& a, std::int64_t k) { return circshift(a, k, first_non_singleton(a.shape()) + 1); }
Array circshift(const Array& a, std::int64_t k, int dim) {
    const int d = dim_arg(dim, "circshift");
    const std::int64_t n = a.shape()[d];
    if (n == 0 || k % n == 0) return a;
    const std::int64_t s = ((k % n) + n) % n;
    return remap(a, d, n, 1, n - s);  // out(k) = in(k - s) = in((k + n - s) mod n)
}

Array repmat(const Array& a, std::int64_t r, std::int64_t c) { return repmat(a, std::vector<std::int64_t>{r, c}); }
Array repmat(const Array& a, const std::vector<std::int64_t>& copies) {
    Array x = a;
    for (std::size_t d = 0; d < copies.size(); ++d) {
        const std::int64_t c = copies[d];
        if (c < 0) throw ValueError("repmat: copies must be nonnegative, got " + std::to_string(c) + " along dimension " + std::to_string(d + 1));
        if (c == 1) continue;
        const std::int64_t n = x.shape()[static_cast<int>(d)];
        x = remap(x, static_cast<int>(d), n * c, 1, 0);  // out(k) = in(k mod n)
    }
    return x;
}

Array slice(const Array& a, int dim, std::int64_t first, std::int64_t step, std::int64_t last) {
    const int d = dim_arg(dim, "slice");
    const std::int64_t n = a.shape()[d];
    if (last == kEnd) last = n;
    if (step == 0) throw ValueError("slice: the step of first:step:last must not be 0");
    const std::int64_t count = (step > 0 ? (last >= first ? (last - first) / step + 1 : 0)
                                         : (first >= last ? (first - last) / (-step) + 1 : 0));
    if (count > 0) {
        const std::int64_t lo = step > 0 ? first : first + (count - 1) * step;
        const std::int64_t hi = step > 0 ? first + (count - 1) * step : first;
        if (lo < 1)
            throw IndexError("Index in position " + std::to_string(dim) + " is " + std::to_string(lo) +
                             ": array indices must be positive integers");
        if (hi > n)
            throw IndexError("Index in position " + std::to_string(dim) + " exceeds array bounds: index " +
                             std::to_string(hi) + ", extent " + std::to_string(n) + " (array " + a.shape().to_string() + ")");
    }
    if (count == n && step == 1) return a;
    return remap(a, d, count, step, first - 1);
}

Array horzcat(const std::vector<Array>& arrays) { return cat(2, arrays); }
Array vertcat(const std::vector<Array>& arrays) { return cat(1, arrays); }

}  // namespace tandem
