// Indexing (tandem/indexing.hpp) and permute against plain loops: the same cases run on the CPU executor
// (test_indexing.cpp) and on the Vulkan device (test_vulkan_indexing.cpp). Random arrays with
// NaN/Inf/-0, every element type, empty, vector, matrix and N-D shapes, every dimension (and one
// past the last), repeated subscripts, double and single subscripts, masks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace tix {

using tref::Dims;
using tref::Host;
using tandem::DType;

/// (inner, extent, outer) of `dims` around dimension d (0-based; -1: linear).
struct Around {
    std::int64_t inner = 1, extent = 0, outer = 1;
};
inline Around around(const Dims& dims, int d) {
    Around r;
    if (d < 0) return {1, tref::numel(dims), 1};
    for (int q = 0; q < d; ++q) r.inner *= tref::dim(dims, static_cast<std::size_t>(q));
    r.extent = tref::dim(dims, static_cast<std::size_t>(d));
    for (std::size_t q = static_cast<std::size_t>(d) + 1; q < dims.size(); ++q) r.outer *= dims[q];
    return r;
}

/// `count` random subscripts into 1..extent (repeats likely), as a Host of type t in `dims`.
inline Host random_subscripts(std::int64_t count, std::int64_t extent, DType t, std::mt19937_64& rng, Dims dims = {}) {
    Host h;
    h.dims = dims.empty() ? Dims{1, count} : dims;
    h.dtype = t;
    std::uniform_int_distribution<std::int64_t> pick(1, std::max<std::int64_t>(extent, 1));
    for (std::int64_t k = 0; k < count; ++k) h.v.push_back(static_cast<double>(pick(rng)));
    return h;
}

inline Host random_mask(const Dims& dims, std::mt19937_64& rng, double p = 0.4) {
    Host h;
    h.dims = tref::normalize(dims);
    h.dtype = DType::logical;
    std::bernoulli_distribution b(p);
    for (std::int64_t i = 0; i < tref::numel(h.dims); ++i) h.v.push_back(b(rng) ? 1.0 : 0.0);
    return h;
}

/// a(:, I, :) along d (0-based; -1: linear) into `out_dims`.
inline Host ref_gather(const Host& a, const std::vector<double>& I, int d, Dims out_dims) {
    const Around r = around(a.dims, d);
    Host o;
    o.dims = tref::normalize(std::move(out_dims));
    o.dtype = a.dtype;
    const auto count = static_cast<std::int64_t>(I.size());
    for (std::int64_t ob = 0; ob < r.outer; ++ob)
        for (std::int64_t k = 0; k < count; ++k)
            for (std::int64_t i = 0; i < r.inner; ++i)
                o.v.push_back(a.v[static_cast<std::size_t>(i + r.inner * (static_cast<std::int64_t>(I[static_cast<std::size_t>(k)]) - 1 + r.extent * ob))]);
    return o;
}

/// a with a(:, I, :) = b (b one element or one per selected), in order: the last wins.
inline Host ref_scatter(const Host& a, const std::vector<double>& I, int d, const Host& b, DType t) {
    const Around r = around(a.dims, d);
    Host o = a;
    o.dtype = t;
    const auto count = static_cast<std::int64_t>(I.size());
    std::int64_t e = 0;
    for (std::int64_t ob = 0; ob < r.outer; ++ob)
        for (std::int64_t k = 0; k < count; ++k)
            for (std::int64_t i = 0; i < r.inner; ++i, ++e) {
                const double v = b.v[b.v.size() == 1 ? 0 : static_cast<std::size_t>(e)];
                o.v[static_cast<std::size_t>(i + r.inner * (static_cast<std::int64_t>(I[static_cast<std::size_t>(k)]) - 1 + r.extent * ob))] =
                    tref::to_type(v, t);
            }
    return o;
}

inline std::vector<double> ref_find(const Host& m) {
    std::vector<double> p;
    for (std::size_t i = 0; i < m.v.size(); ++i)
        if (m.v[i] != 0.0) p.push_back(static_cast<double>(i + 1));
    return p;
}

inline Host column_of(std::vector<double> v, DType t, bool row = false) {
    Host h;
    const auto n = static_cast<std::int64_t>(v.size());
    h.dims = row ? Dims{1, n} : Dims{n, 1};
    h.dtype = t;
    h.v = std::move(v);
    return h;
}

/// Every shape the cases use: empty, vectors, matrices, N-D.
inline std::vector<Dims> shapes() { return {{0, 3}, {1, 1}, {1, 7}, {9, 1}, {6, 5}, {3, 4, 5}, {2, 3, 2, 2}}; }

inline void gathers(tandem::Runtime& rt, std::mt19937_64& rng) {
    for (DType t : {DType::f64, DType::f32, DType::logical})
        for (const Dims& dims : shapes())
            for (DType st : {DType::f64, DType::f32}) {
                SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims) + " subscripts " + tref::dtype_str(st));
                const Host a = tref::random_host(dims, t, rng);
                const tandem::Array A = tref::make_array(rt, a);
                const std::int64_t n = tref::numel(dims);
                // linear, with a vector of subscripts (the orientation of a vector a) ...
                const Host I = random_subscripts(n == 0 ? 0 : 11, n, st, rng);
                const bool a_vector = dims.size() == 2 && (dims[0] == 1 || dims[1] == 1) && n != 1;
                Dims want = a_vector ? (dims[0] == 1 ? Dims{1, 11} : Dims{11, 1}) : I.dims;
                if (n == 0) want = I.dims;
                EXPECT_TRUE(tref::same_values(tref::gather(tandem::index(A, tref::make_array(rt, I))), ref_gather(a, I.v, -1, want)));
                // ... and with a matrix of subscripts (its shape)
                if (n > 0) {
                    const Host M = random_subscripts(12, n, st, rng, {3, 4});
                    EXPECT_TRUE(tref::same_values(tref::gather(tandem::index(A, tref::make_array(rt, M))), ref_gather(a, M.v, -1, {3, 4})));
                }
                // along every dimension, and one past the last
                for (int d = 0; d <= static_cast<int>(dims.size()); ++d) {
                    SCOPED_TRACE("dim " + std::to_string(d + 1));
                    const std::int64_t ext = tref::dim(dims, static_cast<std::size_t>(d));
                    const Host J = random_subscripts(ext == 0 ? 0 : 5, ext, st, rng);
                    Dims od = dims;
                    while (od.size() <= static_cast<std::size_t>(d)) od.push_back(1);
                    od[static_cast<std::size_t>(d)] = J.numel();
                    EXPECT_TRUE(tref::same_values(tref::gather(tandem::index(A, d + 1, tref::make_array(rt, J))), ref_gather(a, J.v, d, od)));
                }
            }
}

inline void masks_and_find(tandem::Runtime& rt, std::mt19937_64& rng) {
    for (DType t : {DType::f64, DType::f32, DType::logical})
        for (const Dims& dims : shapes()) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims));
            const Host a = tref::random_host(dims, t, rng);
            const tandem::Array A = tref::make_array(rt, a);
            const Host m = random_mask(dims, rng);
            const std::vector<double> p = ref_find(m);
            const bool row = dims.size() == 2 && dims[0] == 1 && tref::numel(dims) != 1;
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::find(tref::make_array(rt, m))), column_of(p, DType::f64, row)));
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::index(A, tref::make_array(rt, m))),
                                          ref_gather(a, p, -1, row ? Dims{1, static_cast<std::int64_t>(p.size())} : Dims{static_cast<std::int64_t>(p.size()), 1})));
            // a numeric argument: nonzeros, NaN included, -0 not
            std::vector<double> nz;
            for (std::size_t i = 0; i < a.v.size(); ++i)
                if (a.v[i] != 0.0) nz.push_back(static_cast<double>(i + 1));
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::find(A)), column_of(nz, DType::f64, row)));
            // a logical subscript along a dimension
            for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
                const Host md = random_mask({1, tref::dim(dims, static_cast<std::size_t>(d))}, rng, 0.5);
                const std::vector<double> pd = ref_find(md);
                Dims od = dims;
                od[static_cast<std::size_t>(d)] = static_cast<std::int64_t>(pd.size());
                EXPECT_TRUE(tref::same_values(tref::gather(tandem::index(A, d + 1, tref::make_array(rt, md))), ref_gather(a, pd, d, od)));
            }
        }
}

inline void assignments(tandem::Runtime& rt, std::mt19937_64& rng) {
    for (DType t : {DType::f64, DType::f32, DType::logical})
        for (const Dims& dims : shapes()) {
            SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims));
            const Host a = tref::random_host(dims, t, rng);
            const tandem::Array A = tref::make_array(rt, a);
            const std::int64_t n = tref::numel(dims);
            const DType bt = t == DType::logical ? DType::logical : DType::f64;  // keeps a's type
            // linear subscripts with repeats; b one per subscript, or a scalar
            const Host I = random_subscripts(n == 0 ? 0 : 2 * n, n, DType::f64, rng);
            const Host b = tref::random_host({1, I.numel()}, bt, rng);
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::assign(A, tref::make_array(rt, I), tref::make_array(rt, b))),
                                          ref_scatter(a, I.v, -1, b, t)));
            Host s = tref::random_host({1, 1}, bt, rng);
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::assign(A, tref::make_array(rt, I), tref::make_array(rt, s))),
                                          ref_scatter(a, I.v, -1, s, t)));
            // a mask with a scalar (a select) and with one value per true element
            const Host m = random_mask(dims, rng);
            const std::vector<double> p = ref_find(m);
            if (t != DType::logical) {
                Host five;
                five.dims = {1, 1};
                five.v = {5.0};
                EXPECT_TRUE(tref::same_values(tref::gather(tandem::assign(A, tref::make_array(rt, m), 5.0)), ref_scatter(a, p, -1, five, t)));
            }
            const Host bm = tref::random_host({static_cast<std::int64_t>(p.size()), 1}, t, rng);
            EXPECT_TRUE(tref::same_values(tref::gather(tandem::assign(A, tref::make_array(rt, m), tref::make_array(rt, bm))),
                                          ref_scatter(a, p, -1, bm, t)));
            // along every dimension: b in the selection's shape
            for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
                SCOPED_TRACE("dim " + std::to_string(d + 1));
                const std::int64_t ext = dims[static_cast<std::size_t>(d)];
                const Host J = random_subscripts(ext == 0 ? 0 : 3, ext, DType::f32, rng);
                Dims sel = dims;
                sel[static_cast<std::size_t>(d)] = J.numel();
                const Host bs = tref::random_host(sel, t, rng);
                EXPECT_TRUE(tref::same_values(tref::gather(tandem::assign(A, d + 1, tref::make_array(rt, J), tref::make_array(rt, bs))),
                                              ref_scatter(a, J.v, d, bs, t)));
            }
        }
}

/// permute against the definition out(i_1, ..., i_n) = a(i at order's positions), every
/// permutation of 3-D shapes (with singletons, sizes off the 32-wide tiles) and some of 4-D.
inline void permutes(tandem::Runtime& rt, std::mt19937_64& rng) {
    auto check = [&](const Dims& dims, const std::vector<int>& order, DType t) {
        std::string o;
        for (int d : order) o += std::to_string(d) + " ";
        SCOPED_TRACE(std::string(tref::dtype_str(t)) + " " + tref::dims_str(dims) + " order " + o);
        const Host a = tref::random_host(dims, t, rng);
        Dims od;
        for (int d : order) od.push_back(tref::dim(dims, static_cast<std::size_t>(d - 1)));
        Host want;
        want.dims = tref::normalize(od);
        want.dtype = t;
        const std::int64_t n = tref::numel(dims);
        want.v.resize(static_cast<std::size_t>(n));
        std::vector<std::int64_t> in_stride(order.size(), 1);
        for (std::size_t d = 1; d < order.size(); ++d) in_stride[d] = in_stride[d - 1] * tref::dim(dims, d - 1);
        for (std::int64_t e = 0; e < n; ++e) {
            std::int64_t rest = e, from = 0;
            for (std::size_t d = 0; d < order.size(); ++d) {
                const std::int64_t i = rest % od[d];
                rest /= od[d];
                from += i * in_stride[static_cast<std::size_t>(order[d] - 1)];
            }
            want.v[static_cast<std::size_t>(e)] = a.v[static_cast<std::size_t>(from)];
        }
        EXPECT_TRUE(tref::same_values(tref::gather(tandem::permute(tref::make_array(rt, a), order)), want));
    };
    for (const Dims& dims : {Dims{33, 5, 40}, Dims{1, 7, 9}, Dims{8, 1, 3}, Dims{0, 4, 2}, Dims{64, 32, 2}}) {
        std::vector<int> order{1, 2, 3};
        do {
            check(dims, order, DType::f64);
        } while (std::next_permutation(order.begin(), order.end()));
    }
    for (DType t : {DType::f32, DType::logical}) {
        check({5, 6, 7, 3}, {3, 1, 4, 2}, t);
        check({40, 3, 2, 35}, {4, 2, 3, 1}, t);
        check({3, 4}, {2, 1, 3}, t);
        check({6, 5}, {3, 2, 1}, t);
    }
    // past the GPU kernels' grid limits: runs longer than a workgroup's 1024-element piece, more
    // than 65535 runs, a tiled batch of more than 65535 planes
    check({3000, 2, 3}, {1, 3, 2}, DType::f32);
    check({2, 40000, 2}, {1, 3, 2}, DType::f32);
    check({3, 2, 70000}, {2, 1, 3}, DType::f32);
}

/// Bad subscripts fail only the indexing's own result, with MATLAB's message and the position.
inline void bad_subscripts(tandem::Runtime& rt) {
    std::vector<double> d{1, 2, 3, 4, 5, 6};
    const tandem::Array A = rt.array(std::span<const double>(d), tandem::Shape{2, 3});
    struct Case {
        std::vector<double> I;
        int dim;
        const char* expect;
    };
    for (const Case& c : {Case{{1, 7}, 0, "I(2) = 7: index exceeds the number of array elements; index must not exceed 6"},
                          Case{{2, 0, 9}, 0, "I(2) = 0: array indices must be positive integers"},
                          Case{{1, 1.5}, 0, "I(2) = 1.5: array indices must be positive integers"},
                          Case{{NAN}, 0, "I(1) = nan: array indices must be positive integers"},
                          Case{{1, 2, 4}, 2, "I(3) = 4: index in position 2 exceeds array bounds; index must not exceed 3"},
                          Case{{-1}, 1, "I(1) = -1: array indices must be positive integers"}}) {
        const tandem::Array I = rt.array(std::span<const double>(c.I), tandem::Shape{1, static_cast<std::int64_t>(c.I.size())});
        for (int assign = 0; assign < 2; ++assign) {
            const tandem::Array r = assign ? (c.dim ? tandem::assign(A, c.dim, I, 0.0) : tandem::assign(A, I, 0.0))
                                           : (c.dim ? tandem::index(A, c.dim, I) : tandem::index(A, I));
            const tandem::Array ok = A + 1.0;
            try {
                (r + 0.0).gather().get();
                ADD_FAILURE() << "no error for " << c.expect;
            } catch (const tandem::IndexError& e) {
                EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
                EXPECT_NE(std::string(e.what()).find(assign ? "assign" : "index"), std::string::npos) << e.what();
            }
            EXPECT_EQ(tref::gather(ok).v[5], 7.0) << "other values are unaffected";
        }
    }
}

}  // namespace tix
