// The one summation order of a matrix product, on every executor (DESIGN.md: placement may move
// a product from run to run; its bits may not change). Each element of C = op(A) op(B) is
//
//   part(c)  = fma(a[q], b[q], ... fma(a[p], b[p], +0) ...)  over q in chunk c, in order of q
//              (chunk c: positions [c * kMatmulChunk, (c + 1) * kMatmulChunk) of k)
//   C(i, j)  = ((part(0) + part(1)) + part(2)) + ...          (k == 0: +0)
//
// then the epilogue, each step rounded on its own: alpha * C, + beta * C0, + bias, relu.
//
// Why this order: a chain of fused multiply-adds is what a GPU invocation's register tile and a
// CPU micro-kernel's vector registers both compute at full speed, and cutting it into fixed
// chunks lets a GPU split a long k over workgroups (one chunk each, summed in order afterwards:
// backends/vulkan/gemm.cpp) and lets a CPU pack one chunk's panels at a time (backends/cpu/
// gemm_block.inc) without changing a bit. Products commute bit for bit (fma(x, y, s) ==
// fma(y, x, s)), so A'A computed as its upper triangle and mirrored is the same.
// The products in f16 / bf16 on tensor cores (MatmulPrecision::f16 on NVIDIA) are outside it.
#pragma once

#include <cmath>
#include <cstdint>

namespace tandem::detail {

inline constexpr std::int64_t kMatmulChunk = 1024;

/// The canonical dot product of length k, x(p) and y(p) the p-th elements (the tests' reference).
template <class T, class X, class Y>
T canonical_dot(std::int64_t k, const X& x, const Y& y) {
    T sum = T(0);
    for (std::int64_t c0 = 0; c0 < k; c0 += kMatmulChunk) {
        T part = T(0);
        const std::int64_t c1 = c0 + kMatmulChunk < k ? c0 + kMatmulChunk : k;
        for (std::int64_t p = c0; p < c1; ++p) part = std::fma(x(p), y(p), part);
        sum = c0 == 0 ? part : sum + part;
    }
    return sum;
}

}  // namespace tandem::detail
