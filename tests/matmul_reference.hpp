// A plain reference for matmul (a long double triple loop) and the check both matmul suites use:
// |C - ref| <= 3 (k + 2) eps (|A||B|)_ij elementwise (eps of the result's type), and the same
// bits as graph/matmul_order.hpp's canonical order computed by a plain loop in the result's type
// (NaN equal to NaN, -0 unequal to +0): what every executor must give. (Products with a vector
// side, m == 1 or n == 1, are elementwise products and a sum in api/linalg.cpp: the reduction's
// canonical order, graph/reduce_order.hpp, tested with the reductions.)
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/matmul_order.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace tmm {

using tref::Dims;
using tref::Host;
using tandem::DType;

inline Host random_matrix(std::int64_t r, std::int64_t c, DType t, std::mt19937_64& rng, bool specials = false) {
    Host h;
    h.dims = {r, c};
    h.dtype = t;
    h.v.resize(static_cast<std::size_t>(r * c));
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (auto& v : h.v) {
        v = t == DType::logical ? static_cast<double>(rng() & 1u) : tref::to_type(u(rng), t);
        if (specials && t != DType::logical && rng() % 97 == 0) v = (rng() & 1u) ? NAN : INFINITY;
    }
    return h;
}

/// op(a) * op(b) in the canonical order, in the result's type (single when either operand is).
inline Host canonical_product(const Host& a, const Host& b, bool ta, bool tb) {
    const std::int64_t ra = a.dims[0], ca = a.dims[1], rb = b.dims[0], cb = b.dims[1];
    const std::int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
    const bool single = a.dtype == DType::f32 || b.dtype == DType::f32;
    auto A = [&](std::int64_t i, std::int64_t p) { return ta ? a.v[static_cast<std::size_t>(p + ra * i)] : a.v[static_cast<std::size_t>(i + ra * p)]; };
    auto B = [&](std::int64_t p, std::int64_t j) { return tb ? b.v[static_cast<std::size_t>(j + rb * p)] : b.v[static_cast<std::size_t>(p + rb * j)]; };
    Host out;
    out.dims = {m, n};
    out.dtype = single ? DType::f32 : DType::f64;
    out.v.resize(static_cast<std::size_t>(m * n));
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
            auto x = [&](std::int64_t p) { return A(i, p); };
            auto y = [&](std::int64_t p) { return B(p, j); };
            out.v[static_cast<std::size_t>(i + m * j)] =
                single ? static_cast<double>(tandem::detail::canonical_dot<float>(
                             k, [&](std::int64_t p) { return static_cast<float>(x(p)); },
                             [&](std::int64_t p) { return static_cast<float>(y(p)); }))
                       : tandem::detail::canonical_dot<double>(k, x, y);
        }
    return out;
}

/// ::testing::AssertionSuccess when got = op(a) * op(b) within the bound and (unless `canonical_bits`
/// is false: products on tensor cores, in their own order) with the canonical order's bits.
inline ::testing::AssertionResult product_ok(const Host& got, const Host& a, const Host& b, bool ta, bool tb,
                                             bool canonical_bits = true) {
    const std::int64_t ra = a.dims[0], ca = a.dims[1], rb = b.dims[0], cb = b.dims[1];
    const std::int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
    if (got.dims != Dims{m, n})
        return ::testing::AssertionFailure() << "shape " << tref::dims_str(got.dims) << ", expected " << m << "x" << n;
    const bool single = a.dtype == DType::f32 || b.dtype == DType::f32;
    if (got.dtype != (single ? DType::f32 : DType::f64)) return ::testing::AssertionFailure() << "wrong dtype";
    const double eps = single ? 0x1p-23 : 0x1p-52;
    auto A = [&](std::int64_t i, std::int64_t p) { return ta ? a.v[static_cast<std::size_t>(p + ra * i)] : a.v[static_cast<std::size_t>(i + ra * p)]; };
    auto B = [&](std::int64_t p, std::int64_t j) { return tb ? b.v[static_cast<std::size_t>(j + rb * p)] : b.v[static_cast<std::size_t>(p + rb * j)]; };
    int bad = 0;
    std::string first;
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
            long double s = 0, sa = 0;
            bool nan = false;
            for (std::int64_t p = 0; p < k; ++p) {
                const long double x = A(i, p), y = B(p, j);
                if (std::isnan(static_cast<double>(x * y)) || std::isnan(static_cast<double>(x)) || std::isnan(static_cast<double>(y))) nan = true;
                s += x * y;
                sa += std::fabs(static_cast<double>(x * y));
            }
            const double g = got.v[static_cast<std::size_t>(i + m * j)];
            const double want = static_cast<double>(s);
            bool ok;
            if (nan || std::isnan(want)) ok = std::isnan(g);
            else if (std::isinf(want)) ok = g == want || std::isnan(g);  // Inf - Inf inside the sum may be NaN
            else ok = std::fabs(g - want) <= 3.0 * (static_cast<double>(k) + 2.0) * eps * static_cast<double>(sa) + 1e-300;
            if (!ok && bad++ == 0) first = "(" + std::to_string(i) + "," + std::to_string(j) + ") got " + tref::fmt(g) + ", expected " + tref::fmt(want);
        }
    if (bad != 0) return ::testing::AssertionFailure() << bad << " elements off, first " << first;
    if (m == 1 || n == 1 || !canonical_bits) return ::testing::AssertionSuccess();
    const Host canonical = canonical_product(a, b, ta, tb);
    for (std::size_t e = 0; e < got.v.size(); ++e) {
        const double g = got.v[e], w = canonical.v[e];
        if (!((std::isnan(g) && std::isnan(w)) || (g == w && std::signbit(g) == std::signbit(w))))
            ++bad;
        if (bad == 1 && first.empty())
            first = "(" + std::to_string(static_cast<std::int64_t>(e) % m) + "," + std::to_string(static_cast<std::int64_t>(e) / m) +
                    ") got " + tref::fmt(g) + ", the canonical order gives " + tref::fmt(w);
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " elements not the canonical order's bits, first " << first;
}

}  // namespace tmm
