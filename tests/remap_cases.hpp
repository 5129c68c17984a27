// Random stencil-like programs for the folded-remap tests (CPU: test_shape_ops.cpp, Vulkan:
// test_vulkan_remap.cpp): sums of chains of circshift / flip / ranges / repmat of one array, read
// by elementwise ops (some broadcast) and by reductions. Fusion folds the remaps into the reads
// (graph/fusion.cpp fold_remaps); the same program with fusion off materialises every remap, and
// the two must agree bit for bit.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace tremap {

using tandem::Array;

/// One remap of a chain. circshift(k = a), flip, slice(first = a, step = b, last = c), repmat
/// (a copies) along `dim` (1-based).
struct Step {
    enum class Kind { circshift, flip, slice, repmat } kind;
    int dim;
    std::int64_t a = 0, b = 0, c = 0;
};

struct Term {
    std::vector<Step> chain;
    double coef;
};

/// A program over an array of shape `dims`: out = sum of coef * chain(x) (each term of x's shape,
/// or of extent 1 along a dimension: broadcast), plus x; also sum(out, dim) and the sum along
/// `dim` of one remap read directly by the reduction.
struct Recipe {
    std::vector<Term> terms;
    int reduce_dim = 1;
    Step reduced;
};

inline Array apply(const Array& x, const Step& s) {
    switch (s.kind) {
        case Step::Kind::circshift: return tandem::circshift(x, s.a, s.dim);
        case Step::Kind::flip: return tandem::flip(x, s.dim);
        case Step::Kind::slice: return tandem::slice(x, s.dim, s.a, s.b, s.c);
        case Step::Kind::repmat: {
            std::vector<std::int64_t> copies(static_cast<std::size_t>(std::max(s.dim, x.ndims())), 1);
            copies[static_cast<std::size_t>(s.dim - 1)] = s.a;
            return tandem::repmat(x, copies);
        }
    }
    return x;
}

/// Shape-keeping chains (circshift, flip, a reversed range, repmat then a window of it), and now
/// and then a plane (a range of one position) that the sum broadcasts.
inline Recipe random_recipe(const tref::Dims& dims, std::mt19937_64& rng) {
    auto extent = [&](int dim) { return dim - 1 < static_cast<int>(dims.size()) ? dims[static_cast<std::size_t>(dim - 1)] : 1; };
    auto pick_dim = [&] { return 1 + static_cast<int>(rng() % dims.size()); };
    auto shape_keeping = [&](int dim) {
        const std::int64_t n = extent(dim);
        switch (rng() % 4) {
            case 0: return Step{Step::Kind::circshift, dim, static_cast<std::int64_t>(rng() % 7) - 3};
            case 1: return Step{Step::Kind::flip, dim};
            case 2: return Step{Step::Kind::slice, dim, n, -1, 1};
            default: return Step{Step::Kind::repmat, dim, 2};  // followed by a window below
        }
    };
    Recipe r;
    const int nterms = 2 + static_cast<int>(rng() % 4);
    for (int t = 0; t < nterms; ++t) {
        Term term{{}, static_cast<double>(static_cast<int>(rng() % 9) - 4) * 0.5};
        const int len = 1 + static_cast<int>(rng() % 3);
        for (int l = 0; l < len; ++l) {
            const int dim = pick_dim();
            Step s = shape_keeping(dim);
            term.chain.push_back(s);
            if (s.kind == Step::Kind::repmat) {  // a window of n of the 2n positions
                const std::int64_t n = extent(dim), first = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n + 1));
                term.chain.push_back({Step::Kind::slice, dim, first, 1, first + n - 1});
            }
        }
        if (rng() % 4 == 0) {  // one plane: broadcast along `dim`
            const int dim = pick_dim();
            const std::int64_t p = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(extent(dim)));
            term.chain.push_back({Step::Kind::slice, dim, p, 1, p});
        }
        r.terms.push_back(term);
    }
    r.reduce_dim = pick_dim();
    r.reduced = {Step::Kind::circshift, pick_dim(), 1 + static_cast<std::int64_t>(rng() % 3)};
    return r;
}

struct Outputs {
    Array out, reduced_out, reduced_remap;
};

inline Outputs build(const Array& x, const Recipe& r) {
    Array out = x;
    for (const Term& t : r.terms) {
        Array y = x;
        for (const Step& s : t.chain) y = apply(y, s);
        out = out + t.coef * y;
    }
    return {out, tandem::sum(out, r.reduce_dim), tandem::sum(apply(x, r.reduced), r.reduce_dim)};
}

/// The 5-point stencil of a heat step: u + 0.1 * (the four shifted copies - 4u).
inline Array heat_step(const Array& u) {
    return u + 0.1 * (tandem::circshift(u, 1, 1) + tandem::circshift(u, -1, 1) + tandem::circshift(u, 1, 2) +
                      tandem::circshift(u, -1, 2) - 4.0 * u);
}

/// The same stencil written with ranges, as MATLAB code often is: the interior of u from its
/// four neighbours (an (m-2) x (n-2) result).
inline Array interior_step(const Array& u) {
    auto rows = [](const Array& a, std::int64_t f, std::int64_t l) { return tandem::slice(a, 1, f, 1, l); };
    auto cols = [](const Array& a, std::int64_t f, std::int64_t l) { return tandem::slice(a, 2, f, 1, l); };
    const std::int64_t m = u.size(0), n = u.size(1);
    const Array c = cols(u, 2, n - 1);
    const Array mid = rows(cols(u, 2, n - 1), 2, m - 1);
    return mid + 0.25 * (rows(c, 1, m - 2) + rows(c, 3, m) + rows(cols(u, 1, n - 2), 2, m - 1) + rows(cols(u, 3, n), 2, m - 1) -
                         4.0 * mid);
}

}  // namespace tremap
