// A plain reference for the reductions (scalar loops, long double sums) and the checks the CPU
// and Vulkan reduction tests share.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graph/reduce_order.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace tred {

using tref::Dims;
using tref::Host;
using tandem::DType;

enum class Op { sum, prod, mean, max, min, argmax, argmin, any, all };

inline const char* name(Op op) {
    switch (op) {
        case Op::sum: return "sum";
        case Op::prod: return "prod";
        case Op::mean: return "mean";
        case Op::max: return "max";
        case Op::min: return "min";
        case Op::argmax: return "argmax";
        case Op::argmin: return "argmin";
        case Op::any: return "any";
        case Op::all: return "all";
    }
    return "?";
}

/// The Tandem call under test. dim: 1-based, 0 = the default, -1 = all_dims.
inline tandem::Array call(Op op, const tandem::Array& x, int dim, tandem::NanFlag nan = tandem::NanFlag::includenan) {
    using namespace tandem;
    const bool all = dim < 0, def = dim == 0;
    switch (op) {
        case Op::sum: return all ? sum(x, all_dims, nan) : def ? sum(x, nan) : sum(x, dim, nan);
        case Op::prod: return all ? prod(x, all_dims, nan) : def ? prod(x, nan) : prod(x, dim, nan);
        case Op::mean: return all ? mean(x, all_dims, nan) : def ? mean(x, nan) : mean(x, dim, nan);
        case Op::max: return all ? max(x, all_dims) : def ? max(x) : max(x, {}, dim);
        case Op::min: return all ? min(x, all_dims) : def ? min(x) : min(x, {}, dim);
        case Op::argmax: return def ? max_index(x).index : max_index(x, dim).index;
        case Op::argmin: return def ? min_index(x).index : min_index(x, dim).index;
        case Op::any: return all ? any(x, all_dims) : def ? any(x) : any(x, dim);
        case Op::all: return all ? tandem::all(x, all_dims) : def ? tandem::all(x) : tandem::all(x, dim);
    }
    return x;
}

/// MATLAB's default dimension (0-based): the first that is not 1; -1 (all) for 0 x 0 with
/// sum/prod/mean/any/all.
inline int default_dim(const Dims& d, Op op) {
    if (d.size() == 2 && d[0] == 0 && d[1] == 0 && op != Op::max && op != Op::min && op != Op::argmax &&
        op != Op::argmin)
        return -1;
    for (std::size_t k = 0; k < d.size(); ++k)
        if (d[k] != 1) return static_cast<int>(k);
    return 0;
}

struct Expected {
    Host value;       // the reference result (sums: long double, rounded)
    Host tolerance;   // per element: allowed absolute error (0: exact)
};

/// The reference reduction of x along dim (0-based; -1: all).
inline Expected reduce(const Host& x, Op op, int dim, bool omitnan = false) {
    const bool extremum = op == Op::max || op == Op::min || op == Op::argmax || op == Op::argmin;
    Dims od;
    std::int64_t inner = 1, len = 1, outer = 1;
    if (dim < 0) {
        len = x.numel();
        od = (extremum && x.numel() == 0) ? Dims{0, 0} : Dims{1, 1};
    } else {
        od = x.dims;
        while (od.size() <= static_cast<std::size_t>(dim)) od.push_back(1);
        for (int d = 0; d < dim; ++d) inner *= od[static_cast<std::size_t>(d)];
        len = od[static_cast<std::size_t>(dim)];
        for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < od.size(); ++d) outer *= od[d];
        if (!(extremum && len == 0)) od[static_cast<std::size_t>(dim)] = 1;
        od = tref::normalize(od);
    }
    Expected e;
    DType t = x.dtype == DType::logical ? DType::f64 : x.dtype;
    if (op == Op::any || op == Op::all) t = DType::logical;
    if ((op == Op::max || op == Op::min) && x.dtype == DType::logical) t = DType::logical;  // MATLAB keeps a mask a mask
    if (op == Op::argmax || op == Op::argmin) t = DType::f64;
    e.value.dims = od;
    e.value.dtype = t;
    e.tolerance = e.value;
    const std::int64_t n_out = tref::numel(od);
    e.value.v.assign(static_cast<std::size_t>(n_out), 0.0);
    e.tolerance.v.assign(static_cast<std::size_t>(n_out), 0.0);
    const double eps = t == DType::f32 ? 0x1p-23 : 0x1p-52;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
            const std::int64_t out = i + inner * o;
            if (out >= n_out) continue;
            long double s = 0, abs_s = 0, p = 1;
            double best = NAN;
            std::int64_t best_k = 0, count = 0;
            bool nan = false, pinf = false, minf = false, any = false, all = true, zero = false, inf = false;
            for (std::int64_t k = 0; k < len; ++k) {
                double v = x.v[static_cast<std::size_t>(i + inner * (k + len * o))];
                if (std::isnan(v)) {
                    if (!omitnan) nan = true;
                } else {
                    ++count;
                    s += v;
                    abs_s += std::fabs(v);
                    p *= v;
                    if (v == INFINITY) pinf = true;
                    if (v == -INFINITY) minf = true;
                    if (std::isinf(v)) inf = true;
                    if (v == 0) zero = true;
                }
                if (v != 0 && !std::isnan(v)) any = true;
                if (v == 0) all = false;
                const bool mx = op == Op::max || op == Op::argmax;
                if (!std::isnan(v) && (std::isnan(best) || (mx ? v > best : v < best))) {
                    best = v;
                    best_k = k;
                }
            }
            double r = 0, tol = 0;
            const long double n = op == Op::mean && omitnan ? static_cast<long double>(count) : static_cast<long double>(len);
            switch (op) {
                case Op::sum:
                case Op::mean: {
                    if (nan || (pinf && minf)) r = NAN;
                    else if (pinf) r = INFINITY;
                    else if (minf) r = -INFINITY;
                    else {
                        long double m = op == Op::mean ? s / n : s;
                        r = static_cast<double>(m);
                        tol = static_cast<double>((static_cast<long double>(len) + 2) * eps * abs_s / (op == Op::mean ? n : 1));
                    }
                    if (op == Op::mean && n == 0) r = NAN;
                    break;
                }
                case Op::prod:
                    if (nan || (zero && inf)) r = NAN;
                    else {
                        r = static_cast<double>(p);
                        tol = std::fabs(r) * (static_cast<double>(len) + 2) * eps;
                        // A product that passed through the subnormal range kept only a few bits there.
                        const double tiny = t == DType::f32 ? 1.1754943508222875e-38 : 2.2250738585072014e-308;
                        if (std::fabs(r) < tiny * 1e6) tol = std::max(tol, 0.5 * std::fabs(r) + 1e3 * tiny * eps);
                    }
                    break;
                case Op::max:
                case Op::min: r = best; break;
                case Op::argmax:
                case Op::argmin: r = static_cast<double>(best_k + 1); break;
                case Op::any: r = any ? 1 : 0; break;
                case Op::all: r = all ? 1 : 0; break;
            }
            if (t == DType::f32 && std::isfinite(r)) {
                // the result rounded to single, plus that rounding
                tol += std::fabs(r) * 0x1p-24;
                r = static_cast<double>(static_cast<float>(r));
            }
            e.value.v[static_cast<std::size_t>(out)] = r;
            e.tolerance.v[static_cast<std::size_t>(out)] = tol;
        }
    return e;
}

/// Sums (prod: products) along the middle of (inner, len, outer) in the canonical order of
/// graph/reduce_order.hpp (blocked lanes when inner > 1): the exact bits every executor gives.
inline std::vector<double> canonical(const std::vector<double>& x, std::int64_t inner, std::int64_t len,
                                     std::int64_t outer, bool prod) {
    std::vector<double> out(static_cast<std::size_t>(inner * outer)), line(static_cast<std::size_t>(len));
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
            for (std::int64_t k = 0; k < len; ++k) line[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>(i + inner * (k + len * o))];
            out[static_cast<std::size_t>(i + inner * o)] =
                prod ? tandem::detail::canonical_fold(line.data(), len, 1.0, [](double a, double b) { return a * b; }, inner > 1)
                     : tandem::detail::canonical_fold(line.data(), len, 0.0, [](double a, double b) { return a + b; }, inner > 1);
        }
    return out;
}

/// r's values are `want`'s bits (any NaN for a NaN: a NaN's payload is no part of the answer).
inline void expect_bits(const tandem::Array& r, const std::vector<double>& want) {
    const Host got = tref::gather(r);
    ASSERT_EQ(got.v.size(), want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const bool same = (std::isnan(got.v[i]) && std::isnan(want[i])) ||
                          std::bit_cast<std::uint64_t>(got.v[i]) == std::bit_cast<std::uint64_t>(want[i]);
        if (!same && ++bad <= 3) ADD_FAILURE() << "[" << i << "] " << got.v[i] << " vs " << want[i];
    }
    EXPECT_EQ(bad, 0u);
}

enum class ScanOp { cumsum, cumprod, cummax, cummin };

inline tandem::Array call_scan(ScanOp op, const tandem::Array& x, int dim) {
    switch (op) {
        case ScanOp::cumsum: return dim ? tandem::cumsum(x, dim) : tandem::cumsum(x);
        case ScanOp::cumprod: return dim ? tandem::cumprod(x, dim) : tandem::cumprod(x);
        case ScanOp::cummax: return dim ? tandem::cummax(x, dim) : tandem::cummax(x);
        case ScanOp::cummin: return dim ? tandem::cummin(x, dim) : tandem::cummin(x);
    }
    return x;
}

/// The reference scan along dim (0-based): each line in order, the running value in double,
/// each element rounded to the result's type (the documented arithmetic, so exact comparison).
inline Host scan(const Host& x, ScanOp op, int dim) {
    Host y = x;
    if (y.dtype == DType::logical) y.dtype = DType::f64;
    Dims d = x.dims;
    while (d.size() <= static_cast<std::size_t>(dim)) d.push_back(1);
    std::int64_t inner = 1, outer = 1;
    for (int q = 0; q < dim; ++q) inner *= d[static_cast<std::size_t>(q)];
    const std::int64_t len = d[static_cast<std::size_t>(dim)];
    for (std::size_t q = static_cast<std::size_t>(dim) + 1; q < d.size(); ++q) outer *= d[q];
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
            double a = op == ScanOp::cumsum ? 0.0 : op == ScanOp::cumprod ? 1.0 : NAN;
            for (std::int64_t k = 0; k < len; ++k) {
                const auto at = static_cast<std::size_t>(i + inner * (k + len * o));
                const double v = x.v[at];
                if (op == ScanOp::cumsum) a = a + v;
                else if (op == ScanOp::cumprod) a = a * v;
                else if (!std::isnan(v) && (std::isnan(a) || (op == ScanOp::cummax ? v > a : v < a))) a = v;
                y.v[at] = tref::to_type(a, y.dtype);
            }
        }
    return y;
}

/// got against the reference: shape and type exact, values within the tolerance (NaN where NaN,
/// infinities exactly).
inline ::testing::AssertionResult matches(const Host& got, const Expected& want) {
    if (got.dims != want.value.dims)
        return ::testing::AssertionFailure() << "shape " << tref::dims_str(got.dims) << ", expected "
                                             << tref::dims_str(want.value.dims);
    if (got.dtype != want.value.dtype)
        return ::testing::AssertionFailure() << "dtype " << tref::dtype_str(got.dtype) << ", expected "
                                             << tref::dtype_str(want.value.dtype);
    int bad = 0;
    std::string first;
    for (std::size_t i = 0; i < got.v.size(); ++i) {
        const double g = got.v[i], w = want.value.v[i], tol = want.tolerance.v[i];
        bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= tol;
        if (ok) continue;
        if (bad++ == 0)
            first = "[" + std::to_string(i) + "] got " + tref::fmt(g) + ", expected " + tref::fmt(w) + " +- " +
                    tref::fmt(tol);
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << got.v.size() << " elements differ, first " << first;
}

/// Random data for reductions: numbers of moderate size (sums and products stay finite) with
/// NaN, +-Inf, -0 and subnormals sprinkled in (`specials`), or logical.
inline Host random_data(const Dims& dims, DType t, std::mt19937_64& rng, bool specials, bool near_one = false) {
    Host h;
    h.dims = tref::normalize(dims);
    h.dtype = t;
    h.v.resize(static_cast<std::size_t>(h.numel()));
    std::uniform_real_distribution<double> u(-10.0, 10.0), one(0.7, 1.4);
    for (auto& v : h.v) {
        if (t == DType::logical) {
            v = static_cast<double>(rng() & 1u);
            continue;
        }
        const auto c = rng() % 100;
        if (specials && c < 2) v = NAN;
        else if (specials && c < 3) v = (rng() & 1u) ? INFINITY : -INFINITY;
        else if (specials && c < 5) v = (rng() & 1u) ? -0.0 : 0.0;
        else if (specials && c < 6) v = (rng() & 1u) ? 4.9e-324 : -1e-310;
        else if (c < 12) v = std::round(u(rng));  // ties for max/min
        else v = near_one ? one(rng) : u(rng);
        v = tref::to_type(v, t);
    }
    return h;
}

}  // namespace tred
