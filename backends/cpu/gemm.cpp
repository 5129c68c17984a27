// CPU matrix multiply through OpenBLAS, parallel over oneTBB tasks (see gemm.hpp for the design).
#include "backends/cpu/gemm.hpp"

#include <cblas.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <memory>
#include <string>

#include "tandem/error.hpp"

namespace tandem::detail::cpu {
namespace {

// Below this many multiply-adds per block a product is not split further: waking a worker and
// packing another panel cost more than the block's arithmetic (~1 M multiply-adds is ~50 us on
// one AVX-512 core).
constexpr std::int64_t kMinBlockWork = std::int64_t{1} << 20;
// Block edges are multiples of these (OpenBLAS's micro-kernels cover 16 rows by 2..8 columns on
// AVX-512; a block edge inside a micro-tile only costs an edge kernel, but there is no reason to).
constexpr std::int64_t kRowAlign = 16, kColAlign = 8;

CBLAS_TRANSPOSE blas(Trans t) { return t == Trans::none ? CblasNoTrans : CblasTrans; }

// OpenBLAS's thread count is process-wide: Tandem keeps it at 1 and parallelises itself. Checked
// on every call (a read of one integer) because another caller in the process -- the benchmark's
// direct baseline, a user's own BLAS call -- may have changed it.
void blas_single_threaded() {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

int workers() {
#if defined(TANDEM_TSAN)
    return 1;  // Debian's oneTBB is not instrumented (see cpu_backend.cpp); OpenBLAS neither.
#else
    return std::max(1, tbb::this_task_arena::max_concurrency());
#endif
}

void check_args(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                std::int64_t ldc, const char* type) {
    auto fail = [&](const std::string& what) { throw ValueError(std::string("gemm (") + type + "): " + what); };
    if (m < 0 || n < 0 || k < 0)
        fail("negative size m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k));
    const std::int64_t a_rows = ta == Trans::none ? m : k, b_rows = tb == Trans::none ? k : n;
    if (lda < std::max<std::int64_t>(1, a_rows))
        fail("lda = " + std::to_string(lda) + " is less than the " + std::to_string(a_rows) + " rows of A as stored");
    if (ldb < std::max<std::int64_t>(1, b_rows))
        fail("ldb = " + std::to_string(ldb) + " is less than the " + std::to_string(b_rows) + " rows of B as stored");
    if (ldc < std::max<std::int64_t>(1, m))
        fail("ldc = " + std::to_string(ldc) + " is less than the " + std::to_string(m) + " rows of C");
    for (std::int64_t v : {m, n, k, lda, ldb, ldc})
        if (v > INT_MAX) fail("size or leading dimension " + std::to_string(v) + " exceeds OpenBLAS's 32-bit integers");
}

// Typed CBLAS entry points.
void blas_gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
               std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
    cblas_sgemm(CblasColMajor, blas(ta), blas(tb), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
}
void blas_gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
               std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
    cblas_dgemm(CblasColMajor, blas(ta), blas(tb), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
}
// y = alpha * op(A) * x + beta * y, A stored rows x cols.
void blas_syrk(Trans t, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, float* c, std::int64_t ldc) {
    cblas_ssyrk(CblasColMajor, CblasUpper, blas(t), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
                static_cast<blasint>(lda), 0.0f, c, static_cast<blasint>(ldc));
}
void blas_syrk(Trans t, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda, double* c, std::int64_t ldc) {
    cblas_dsyrk(CblasColMajor, CblasUpper, blas(t), static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a,
                static_cast<blasint>(lda), 0.0, c, static_cast<blasint>(ldc));
}

void blas_gemv(Trans t, std::int64_t rows, std::int64_t cols, float alpha, const float* a, std::int64_t lda,
               const float* x, std::int64_t incx, float beta, float* y, std::int64_t incy) {
    cblas_sgemv(CblasColMajor, blas(t), static_cast<blasint>(rows), static_cast<blasint>(cols), alpha, a,
                static_cast<blasint>(lda), x, static_cast<blasint>(incx), beta, y, static_cast<blasint>(incy));
}
void blas_gemv(Trans t, std::int64_t rows, std::int64_t cols, double alpha, const double* a, std::int64_t lda,
               const double* x, std::int64_t incx, double beta, double* y, std::int64_t incy) {
    cblas_dgemv(CblasColMajor, blas(t), static_cast<blasint>(rows), static_cast<blasint>(cols), alpha, a,
                static_cast<blasint>(lda), x, static_cast<blasint>(incx), beta, y, static_cast<blasint>(incy));
}

// Start of block `r` of `blocks` over [0, extent), on multiples of `align` (the last ends at extent).
std::int64_t edge(std::int64_t extent, std::int64_t blocks, std::int64_t r, std::int64_t align) {
    if (r >= blocks) return extent;
    const std::int64_t e = (extent * r / blocks + align / 2) / align * align;
    return std::min(e, extent);
}

// Runs body(block) for block in [0, count): on this thread when there is one, else one TBB task each.
template <class F>
void for_blocks(std::int64_t count, const F& body) {
    if (count <= 1) {
        if (count == 1) body(0);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, 1), [&](const tbb::blocked_range<std::int64_t>& r) {
        for (std::int64_t i = r.begin(); i < r.end(); ++i) body(i);
    });
}

// C = beta * C (beta == 0: zeros, C not read).
template <class T>
void scale(std::int64_t m, std::int64_t n, T beta, T* c, std::int64_t ldc) {
    if (beta == T(1)) return;
    for (std::int64_t j = 0; j < n; ++j) {
        T* col = c + j * ldc;
        if (beta == T(0)) std::fill(col, col + m, T(0));
        else
            for (std::int64_t i = 0; i < m; ++i) col[i] *= beta;
    }
}

// Slices of k of a symmetric product (a fixed length, so that the bits do not depend on the
// number of workers): each a syrk of its own, summed in order.
constexpr std::int64_t kSymmetricPartK = 16384;
constexpr double kSymmetricScratchBytes = 512.0 * (1 << 20);

// C = op(A) op(A)' (A'A when ta is transpose, else AA'): n x n, symmetric. Each slice of k is a
// syrk (the upper triangle: half the multiply-adds of a gemm) on a worker; the slices' upper
// triangles are summed in order and mirrored, so C is exactly symmetric.
template <class T>
void gemm_symmetric(Trans ta, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, T* c, std::int64_t ldc) {
    const std::int64_t parts = (k + kSymmetricPartK - 1) / kSymmetricPartK;
    auto buffers = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(parts * n * n));
    for_blocks(parts, [&](std::int64_t p) {
        const std::int64_t k0 = p * kSymmetricPartK, kp = std::min(kSymmetricPartK, k - k0);
        // A'A: rows k0.. of A (k x n); AA': columns k0.. of A (n x k).
        const T* ap = ta == Trans::transpose ? a + k0 : a + k0 * lda;
        blas_syrk(ta == Trans::transpose ? Trans::transpose : Trans::none, n, kp, ap, lda, buffers.get() + p * n * n, n);
    });
    const std::int64_t col_blocks = std::min<std::int64_t>(n, workers());
    for_blocks(col_blocks, [&](std::int64_t r) {
        for (std::int64_t j = n * r / col_blocks; j < n * (r + 1) / col_blocks; ++j)
            for (std::int64_t i = 0; i <= j; ++i) {
                T sum = buffers[static_cast<std::size_t>(i + j * n)];
                for (std::int64_t p = 1; p < parts; ++p) sum += buffers[static_cast<std::size_t>(p * n * n + i + j * n)];
                c[i + j * ldc] = sum;
            }
    });
    for_blocks(col_blocks, [&](std::int64_t r) {
        for (std::int64_t j = n * r / col_blocks; j < n * (r + 1) / col_blocks; ++j)
            for (std::int64_t i = j + 1; i < n; ++i) c[i + j * ldc] = c[j + i * ldc];
    });
}

template <class T>
void gemm_impl(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc,
               const GemmOptions& options, const char* type) {
    check_args(ta, tb, m, n, k, lda, ldb, ldc, type);
    if (m == 0 || n == 0) return;
    if (k == 0 || alpha == T(0)) return scale(m, n, beta, c, ldc);  // BLAS: A and B not read

    const int p = options.workers > 0 ? options.workers : workers();
    if (options.threading == GemmThreading::openblas_threads) {
        if (openblas_get_num_threads() != p) openblas_set_num_threads(p);
        return blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    blas_single_threaded();

    // X'X or XX' of a tall (or wide) X: the symmetric product, half the work (its slices' n x n
    // partial results kept within kSymmetricScratchBytes; beyond, the gemm below).
    if (a == b && lda == ldb && ta != tb && alpha == T(1) && beta == T(0) && k >= 4 * n && n > 1 &&
        static_cast<double>((k + kSymmetricPartK - 1) / kSymmetricPartK) * static_cast<double>(n * n) * sizeof(T) <=
            kSymmetricScratchBytes)
        return gemm_symmetric(ta, n, k, a, lda, c, ldc);

    // Matrix-vector products: gemv, split along the result.
    if (n == 1 || m == 1) {
        const std::int64_t len = n == 1 ? m : n;
        const std::int64_t blocks = std::clamp<std::int64_t>(len * k / kMinBlockWork, 1,
                                                             std::min<std::int64_t>(p, (len + 63) / 64));
        for_blocks(blocks, [&](std::int64_t r) {
            const std::int64_t i0 = edge(len, blocks, r, kRowAlign), i1 = edge(len, blocks, r + 1, kRowAlign);
            if (i1 <= i0) return;
            if (n == 1) {
                // C(i0:i1) = alpha * op(A)(i0:i1, :) * x + beta * C(i0:i1); x = op(B)(:, 0).
                const std::int64_t incx = tb == Trans::none ? 1 : ldb;
                if (ta == Trans::none) blas_gemv(Trans::none, i1 - i0, k, alpha, a + i0, lda, b, incx, beta, c + i0, 1);
                else blas_gemv(Trans::transpose, k, i1 - i0, alpha, a + i0 * lda, lda, b, incx, beta, c + i0, 1);
            } else {
                // C(0, j0:j1)^T = alpha * op(B)(:, j0:j1)^T * op(A)(0, :)^T + beta * C(0, j0:j1)^T.
                const std::int64_t incx = ta == Trans::none ? lda : 1;
                if (tb == Trans::none)
                    blas_gemv(Trans::transpose, k, i1 - i0, alpha, b + i0 * ldb, ldb, a, incx, beta, c + i0 * ldc, ldc);
                else blas_gemv(Trans::none, i1 - i0, k, alpha, b + i0, ldb, a, incx, beta, c + i0 * ldc, ldc);
            }
        });
        return;
    }

    const GemmGrid g = gemm_grid(m, n, k, p);
    const std::int64_t blocks = g.row_blocks * g.col_blocks;
    for_blocks(blocks, [&](std::int64_t r) {
        const std::int64_t bi = r % g.row_blocks, bj = r / g.row_blocks;
        const std::int64_t i0 = edge(m, g.row_blocks, bi, kRowAlign), i1 = edge(m, g.row_blocks, bi + 1, kRowAlign);
        const std::int64_t j0 = edge(n, g.col_blocks, bj, kColAlign), j1 = edge(n, g.col_blocks, bj + 1, kColAlign);
        if (i1 <= i0 || j1 <= j0) return;
        const T* ab = ta == Trans::none ? a + i0 : a + i0 * lda;  // rows i0.. of op(A)
        const T* bb = tb == Trans::none ? b + j0 * ldb : b + j0;  // columns j0.. of op(B)
        blas_gemm(ta, tb, i1 - i0, j1 - j0, k, alpha, ab, lda, bb, ldb, beta, c + i0 + j0 * ldc, ldc);
    });
}

// A stored rows x cols (leading dimension ld) rounded into a contiguous rows x cols copy, by
// columns in parallel.
std::unique_ptr<float[]> rounded_copy(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                      InputRounding rounding) {
    auto out = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(rows * cols));
    float (*round)(float) noexcept = rounding == InputRounding::f16 ? &round_to_f16 : &round_to_bf16;
    const std::int64_t per_task = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(1, rows));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, cols, per_task), [&](const tbb::blocked_range<std::int64_t>& r) {
        for (std::int64_t j = r.begin(); j < r.end(); ++j) {
            const float* src = x + j * ld;
            float* dst = out.get() + j * rows;
            for (std::int64_t i = 0; i < rows; ++i) dst[i] = round(src[i]);
        }
    });
    return out;
}

}  // namespace

float round_to_f16(float x) noexcept {
    const auto u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = u & 0x80000000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return x;                                           // NaN
    if (a >= 0x477ff000u) return std::bit_cast<float>(sign | 0x7f800000u);  // 65520 and up (and Inf): Inf
    if (a >= 0x38800000u)                                                    // 2^-14 and up: half's normals
        return std::bit_cast<float>(sign | ((a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu));
    // Half's subnormals: the nearest multiple of 2^-24, ties to even, in integers. The float is
    // mant * 2^(e - 150) (mant with its implicit bit), i.e. mant / 2^shift units of 2^-24.
    const std::uint32_t e = a >> 23;
    if (e < 101) return std::bit_cast<float>(sign);  // below 2^-26 (f32 subnormals included): zero
    const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;  // shift in [14, 25]
    std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(q) * 0x1p-24f));
}

float round_to_bf16(float x) noexcept {
    const auto u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return x;  // NaN
    return std::bit_cast<float>((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

namespace {

/// The single-precision product with A and B rounded first (options.rounding != none).
void gemm_rounded(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                  std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                  const GemmOptions& options) {
    check_args(ta, tb, m, n, k, lda, ldb, ldc, "single");
    GemmOptions plain = options;
    plain.rounding = InputRounding::none;
    if (m == 0 || n == 0 || k == 0 || alpha == 0.0f)  // A and B are not read
        return gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, plain, "single");
    const std::int64_t a_rows = ta == Trans::none ? m : k, a_cols = ta == Trans::none ? k : m;
    const std::int64_t b_rows = tb == Trans::none ? k : n, b_cols = tb == Trans::none ? n : k;
    const auto ra = rounded_copy(a, a_rows, a_cols, lda, options.rounding);
    const auto rb = rounded_copy(b, b_rows, b_cols, ldb, options.rounding);
    gemm_impl(ta, tb, m, n, k, alpha, ra.get(), a_rows, rb.get(), b_rows, beta, c, ldc, plain, "single");
}

}  // namespace

GemmGrid gemm_grid(std::int64_t m, std::int64_t n, std::int64_t k, int workers) noexcept {
    GemmGrid best;
    if (workers <= 1 || m <= 0 || n <= 0 || k <= 0) return best;
    // Enough work per block to pay for a task and for packing its own panels.
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const auto max_blocks =
        static_cast<std::int64_t>(std::clamp(work / static_cast<double>(kMinBlockWork), 1.0, static_cast<double>(workers)));
    // Most blocks first, then the least packing: a block packs (rows + cols) * k elements, so
    // among grids of the same count the one with the smallest rows + cols per block wins.
    double best_cost = 0;
    for (std::int64_t rb = 1; rb <= max_blocks; ++rb) {
        const std::int64_t cb = max_blocks / rb;
        if (rb > 1 && m / rb < kRowAlign) continue;
        if (cb > 1 && n / cb < kColAlign) continue;
        const double cost = static_cast<double>((m + rb - 1) / rb + (n + cb - 1) / cb);
        const std::int64_t count = rb * cb, best_count = best.row_blocks * best.col_blocks;
        if (count > best_count || (count == best_count && cost < best_cost)) {
            best = {rb, cb};
            best_cost = cost;
        }
    }
    return best;
}

void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          const GemmOptions& options) {
    if (options.rounding != InputRounding::none)
        return gemm_rounded(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options, "single");
}

void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc,
          const GemmOptions& options) {
    if (options.rounding != InputRounding::none)
        throw ValueError("gemm (double): rounding the operands to half or bfloat16 is for single operands only");
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options, "double");
}

}  // namespace tandem::detail::cpu
