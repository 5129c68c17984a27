// Builtins beyond the C++ API's ops that MATLAB code uses everywhere: sort, unique, median and
// diag compute on the host (the values are gathered; MATLAB's orders and NaN rules), diff and
// meshgrid are graph ops (slices, tiling).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "matlab/builtins.hpp"
#include "matlab/operators.hpp"

namespace tandem::matlab {

using tandem::Array;
using tandem::DType;

namespace {



/// A numeric or logical argument gathered: its values, dims and type.
struct HostNum {
    std::vector<double> v;
    std::vector<std::int64_t> d;
    DType t;
};
HostNum host(Interpreter& I, const Value& x, const char* what) {
    if (!x.is_num()) fail(std::string(what) + ": the input must be numeric or logical (got " + class_name(x) + ").", "MATLAB:invalidType");
    return {to_doubles(I.runtime(), x, what), dims(x), x.num().dtype};
}

Value make(Interpreter& I, std::vector<double> v, const std::vector<std::int64_t>& d, DType t) {
    if (v.size() == 1 && d.size() == 2) return scalar(v[0], t);
    Array a = I.runtime().adopt(std::move(v), tandem::Shape(d));
    return from_array(t == DType::f64 ? a : tandem::astype(a, t));
}

int first_nonsingleton(const std::vector<std::int64_t>& d) {
    for (std::size_t k = 0; k < d.size(); ++k)
        if (d[k] != 1) return static_cast<int>(k);
    return 0;
}

int dim_arg(Interpreter& I, const Value& v) {
    const double x = to_scalar(I.runtime(), v, "dim");
    if (!(x >= 1) || x != std::floor(x)) fail("Dimension argument must be a positive integer scalar.", "MATLAB:getdimarg:dimensionMustBePositiveInteger");
    return static_cast<int>(x) - 1;
}

/// Calls f(positions) for each line of `d` along dim k: the element positions of the line.
template <class F>
void for_each_line(const std::vector<std::int64_t>& d, int k, F&& f) {
    std::int64_t before = 1, after = 1;
    for (int j = 0; j < static_cast<int>(d.size()); ++j) {
        if (j < k) before *= d[static_cast<std::size_t>(j)];
        if (j > k) after *= d[static_cast<std::size_t>(j)];
    }
    const std::int64_t n = k < static_cast<int>(d.size()) ? d[static_cast<std::size_t>(k)] : 1;
    std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
    for (std::int64_t o = 0; o < after; ++o)
        for (std::int64_t i = 0; i < before; ++i) {
            for (std::int64_t p = 0; p < n; ++p) pos[static_cast<std::size_t>(p)] = i + before * (p + n * o);
            f(pos);
        }
}

/// MATLAB's order: ascending with NaN last, descending with NaN first; ties keep their order.
void sort_line(std::vector<std::int64_t>& idx, const std::vector<double>& v, bool descend) {
    std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) {
        const double x = v[static_cast<std::size_t>(a)], y = v[static_cast<std::size_t>(b)];
        if (std::isnan(x) || std::isnan(y)) return descend ? (std::isnan(x) && !std::isnan(y)) : (!std::isnan(x) && std::isnan(y));
        return descend ? x > y : x < y;
    });
}

Out sort(Interpreter& I, Args& a, int nargout) {
    need(a, 1, 3);
    bool descend = false;
    int k = -1;
    for (std::size_t j = 1; j < a.size(); ++j) {
        if (is_text(a[j], "descend")) descend = true;
        else if (is_text(a[j], "ascend")) descend = false;
        else k = dim_arg(I, a[j]);
    }
    const HostNum x = host(I, a[0], "sort");
    if (k < 0) k = first_nonsingleton(x.d);
    std::vector<double> s(x.v.size()), pos(x.v.size());
    for_each_line(x.d, k, [&](const std::vector<std::int64_t>& line) {
        std::vector<std::int64_t> order(line.size());
        std::iota(order.begin(), order.end(), 0);
        std::vector<double> vals(line.size());
        for (std::size_t p = 0; p < line.size(); ++p) vals[p] = x.v[static_cast<std::size_t>(line[p])];
        sort_line(order, vals, descend);
        for (std::size_t p = 0; p < line.size(); ++p) {
            s[static_cast<std::size_t>(line[p])] = vals[static_cast<std::size_t>(order[p])];
            pos[static_cast<std::size_t>(line[p])] = static_cast<double>(order[p] + 1);
        }
    });
    Out out{make(I, std::move(s), x.d, x.t)};
    if (nargout > 1) out.push_back(make(I, std::move(pos), x.d, DType::f64));
    return out;
}

Out unique(Interpreter& I, Args& a, int nargout) {
    need(a, 1, 2);
    if (a.size() == 2 && !is_text(a[1], "sorted")) fail("unique: only the default 'sorted' order is supported.", "TANDEM:unsupported");
    const HostNum x = host(I, a[0], "unique");
    std::vector<std::int64_t> order(x.v.size());
    std::iota(order.begin(), order.end(), 0);
    sort_line(order, x.v, false);
    std::vector<double> u, first;
    std::vector<double> j(x.v.size());
    for (std::size_t p = 0; p < order.size(); ++p) {
        const double v = x.v[static_cast<std::size_t>(order[p])];
        // NaN is never equal to anything: each is its own value, as in MATLAB.
        if (u.empty() || std::isnan(v) || v != u.back()) {
            u.push_back(v);
            first.push_back(static_cast<double>(order[p] + 1));
        }
        j[static_cast<std::size_t>(order[p])] = static_cast<double>(u.size());
    }
    const bool row = x.d.size() == 2 && x.d[0] == 1 && x.d[1] >= 1;
    const auto n = static_cast<std::int64_t>(u.size());
    auto shape = [&](std::int64_t m, bool as_row) { return as_row ? std::vector<std::int64_t>{1, m} : std::vector<std::int64_t>{m, 1}; };
    if (x.v.empty()) return {make(I, {}, x.d.size() == 2 && x.d[0] == 0 && x.d[1] == 0 ? std::vector<std::int64_t>{0, 0} : shape(0, row), x.t)};
    Out out{make(I, std::move(u), shape(n, row), x.t)};
    if (nargout > 1) out.push_back(make(I, std::move(first), shape(n, false), DType::f64));
    if (nargout > 2) out.push_back(make(I, std::move(j), shape(static_cast<std::int64_t>(x.v.size()), false), DType::f64));
    return out;
}

Out median(Interpreter& I, Args& a, int) {
    need(a, 1, 2);
    const HostNum x = host(I, a[0], "median");
    if (x.v.empty() && a.size() == 1) return {scalar(std::numeric_limits<double>::quiet_NaN(), x.t == DType::f32 ? DType::f32 : DType::f64)};
    const int k = a.size() == 2 ? dim_arg(I, a[1]) : first_nonsingleton(x.d);
    std::vector<std::int64_t> rd = x.d;
    if (k < static_cast<int>(rd.size())) rd[static_cast<std::size_t>(k)] = 1;
    std::vector<double> out;
    for_each_line(x.d, k, [&](const std::vector<std::int64_t>& line) {
        std::vector<double> vals;
        for (auto p : line) vals.push_back(x.v[static_cast<std::size_t>(p)]);
        if (vals.empty() || std::any_of(vals.begin(), vals.end(), [](double v) { return std::isnan(v); })) {
            out.push_back(std::numeric_limits<double>::quiet_NaN());
            return;
        }
        std::sort(vals.begin(), vals.end());
        const std::size_t m = vals.size() / 2;
        // The mean of the two middle values the way MATLAB computes it (no overflow for large ones).
        out.push_back(vals.size() % 2 ? vals[m] : vals[m - 1] + (vals[m] - vals[m - 1]) / 2);
    });
    return {make(I, std::move(out), rd, x.t == DType::f32 ? DType::f32 : DType::f64)};
}

Out diag(Interpreter& I, Args& a, int) {
    need(a, 1, 2);
    const HostNum x = host(I, a[0], "diag");
    const auto k = a.size() == 2 ? static_cast<std::int64_t>(to_scalar(I.runtime(), a[1], "k")) : 0;
    if (x.d.size() != 2) fail("First input must be 2-D.", "MATLAB:diag:firstInputMustBe2D");
    const bool vector = x.d[0] == 1 || x.d[1] == 1;
    if (vector) {
        const auto n = static_cast<std::int64_t>(x.v.size());
        const std::int64_t m = n + std::abs(k);
        std::vector<double> out(static_cast<std::size_t>(m * m), 0.0);
        for (std::int64_t i = 0; i < n; ++i) {
            const std::int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
            out[static_cast<std::size_t>(r + m * c)] = x.v[static_cast<std::size_t>(i)];
        }
        return {make(I, std::move(out), {m, m}, x.t)};
    }
    std::vector<double> out;
    for (std::int64_t i = 0;; ++i) {
        const std::int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
        if (r >= x.d[0] || c >= x.d[1]) break;
        out.push_back(x.v[static_cast<std::size_t>(r + x.d[0] * c)]);
    }
    const auto n = static_cast<std::int64_t>(out.size());
    return {make(I, std::move(out), {n, 1}, x.t)};
}

Out diff(Interpreter& I, Args& a, int) {
    need(a, 1, 3);
    const Num n0 = to_num(I.runtime(), a[0], "diff");
    const double order = a.size() >= 2 && !is_empty(a[1]) ? to_scalar(I.runtime(), a[1], "n") : 1;
    if (!(order >= 0) || order != std::floor(order)) fail("Difference order N must be a positive integer scalar.", "MATLAB:diff:differenceOrderMustBePositiveInteger");
    Array x = to_array(I.runtime(), n0);
    if (x.dtype() == DType::logical) x = tandem::as_double(x);
    auto d = dims(a[0]);
    const bool given = a.size() == 3;
    int k = given ? dim_arg(I, a[2]) : first_nonsingleton(d);
    for (int r = 0; r < static_cast<int>(order); ++r) {
        // Without a dimension each difference takes the first that is not 1 (diff(diff(x)));
        // a scalar's difference is [], as MATLAB's.
        if (!given) {
            if (d.size() == 2 && d[0] == 1 && d[1] == 1) return {from_array(I.runtime().zeros({0, 0}, x.dtype()))};
            k = first_nonsingleton(d);
        }
        const std::int64_t ext = k < static_cast<int>(d.size()) ? d[static_cast<std::size_t>(k)] : 1;
        if (ext <= 1) {
            std::vector<std::int64_t> z = d;
            while (static_cast<int>(z.size()) <= k) z.push_back(1);
            z[static_cast<std::size_t>(k)] = 0;
            return {from_array(I.runtime().zeros(tandem::Shape(z), x.dtype()))};
        }
        x = tandem::slice(x, k + 1, 2, 1, tandem::kEnd) - tandem::slice(x, k + 1, 1, 1, ext - 1);
        d[static_cast<std::size_t>(k)] = ext - 1;
    }
    return {from_array(x)};
}

Out meshgrid(Interpreter& I, Args& a, int nargout) {
    need(a, 1, 2);
    const Value& xv = a[0];
    const Value& yv = a.size() == 2 ? a[1] : a[0];
    const std::int64_t nx = numel(xv), ny = numel(yv);
    Array x = tandem::reshape(to_array(I.runtime(), to_num(I.runtime(), xv, "meshgrid")), tandem::Shape{1, nx});
    Array y = tandem::reshape(to_array(I.runtime(), to_num(I.runtime(), yv, "meshgrid")), tandem::Shape{ny, 1});
    Out out{from_array(tandem::repmat(x, ny, 1))};
    if (nargout > 1) out.push_back(from_array(tandem::repmat(y, 1, nx)));
    return out;
}

}  // namespace

void add_more_builtins(std::unordered_map<std::string, Builtin>& t) {
    t["sort"] = sort;
    t["unique"] = unique;
    t["median"] = median;
    t["diag"] = diag;
    t["diff"] = diff;
    t["meshgrid"] = meshgrid;
}

}  // namespace tandem::matlab
