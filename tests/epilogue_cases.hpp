// matmul epilogues (Region::Epilogue): chains after a product that fusion folds into its GEMM,
// checked against the same chain computed unfused (Config::fusion = false) on the same backend
// -- the same bits, since the epilogue rounds each step as the chain does -- and the region count
// that shows the fold (a 1 x k product is a reduction: a chain of the product alone is its tail,
// another one region more). Chains that must not fold (a wanted product, C of another type, beta 0,
// a product read twice) still give the unfused bits.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace tep {

using tandem::Array;
using tref::Host;

struct Chain {
    std::string name;
    std::function<Array(const Array& p, const Array& c, const Array& row_bias, const Array& col_bias)> f;
    bool folds;
    /// Reads nothing but the product: after a vector product (a reduction) it is the
    /// reduction's tail (Region::tail), not a region of its own.
    bool product_only = false;
};

inline std::vector<Chain> chains() {
    using tandem::max;
    return {
        {"2*P", [](const Array& p, const Array&, const Array&, const Array&) { return p * 2.0; }, true, true},
        {"P+C", [](const Array& p, const Array& c, const Array&, const Array&) { return p + c; }, true},
        {"C+0.5*P", [](const Array& p, const Array& c, const Array&, const Array&) { return c + 0.5 * p; }, true},
        {"-1.5*P+3*C", [](const Array& p, const Array& c, const Array&, const Array&) { return -1.5 * p + 3.0 * c; }, true},
        {"P+b(row)", [](const Array& p, const Array&, const Array& r, const Array&) { return p + r; }, true},
        {"b(col)+P", [](const Array& p, const Array&, const Array&, const Array& b) { return b + p; }, true},
        {"max(2P+C*0.25+b,0)",
         [](const Array& p, const Array& c, const Array& r, const Array&) { return max(p * 2.0 + c * 0.25 + r, 0.0); }, true},
        {"max(0,P+b)", [](const Array& p, const Array&, const Array&, const Array& b) { return max(0.0, p + b); }, true},
        {"P+0*C", [](const Array& p, const Array& c, const Array&, const Array&) { return p + 0.0 * c; }, false},
        {"P.*P+C", [](const Array& p, const Array& c, const Array&, const Array&) { return p * p + c; }, false},
        {"max(P,1)", [](const Array& p, const Array&, const Array&, const Array&) { return max(p, 1.0); }, false, true},
    };
}

/// Runs every chain on `fused` and `plain` (the same backend, fusion off) and compares bits.
inline void check_chains(tandem::Runtime& fused, tandem::Runtime& plain, std::mt19937_64& rng) {
    for (tandem::DType t : {tandem::DType::f64, tandem::DType::f32})
        for (auto [m, k, n] : {std::tuple{7, 5, 9}, std::tuple{33, 17, 65}, std::tuple{1, 4, 6}}) {
            const Host a = tref::random_host({m, k}, t, rng, false), b = tref::random_host({k, n}, t, rng, false);
            Host c = tref::random_host({m, n}, t, rng, true);  // NaN, Inf and -0 pass through the epilogue
            const Host r = tref::random_host({m, 1}, t, rng, true), q = tref::random_host({1, n}, t, rng, true);
            for (const Chain& ch : chains()) {
                SCOPED_TRACE(ch.name + " " + tref::dtype_str(t) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                             std::to_string(n));
                auto run = [&](tandem::Runtime& rt) {
                    const Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), C = tref::make_array(rt, c);
                    const Array R = tref::make_array(rt, r), Q = tref::make_array(rt, q);
                    rt.evaluate({A, B, C, R, Q}).get();
                    const auto before = rt.metrics().regions_executed;
                    const Host out = tref::gather(ch.f(tandem::matmul(A, B), C, R, Q));
                    return std::pair{out, rt.metrics().regions_executed - before};
                };
                const auto [got, regions] = run(fused);
                const auto [want, plain_regions] = run(plain);
                EXPECT_TRUE(tref::same_values(got, want));
                // 1 x k times k x n is a vector product: a reduction (api/linalg.cpp), its chain
                // its tail when the chain reads nothing else, else a region after it.
                if (m == 1) EXPECT_EQ(regions, ch.product_only ? 1u : 2u) << "after a vector product";
                else if (ch.folds) EXPECT_EQ(regions, 1u) << "the chain folds into the product's region";
                else EXPECT_GT(regions, 1u);
                (void)plain_regions;
            }
        }
}

}  // namespace tep
