// CPU matrix multiply in the canonical order, parallel over oneTBB tasks (see gemm.hpp for the design).
#include "backends/cpu/gemm.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/gemm_block.hpp"
#include "backends/cpu/kernels.hpp"
#include "graph/matmul_order.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {
namespace {

// Below this many multiply-adds per block a product is not split further: waking a worker and
// packing another panel cost more than the block's arithmetic (~1 M multiply-adds is ~50 us on
// one AVX-512 core).
constexpr std::int64_t kMinBlockWork = std::int64_t{1} << 20;
// Block edges are multiples of these (the micro-tiles are 16 or 32 rows by 8 columns on AVX-512;
// a block edge inside a micro-tile only costs an edge tile, but there is no reason to).
constexpr std::int64_t kRowAlign = 32, kColAlign = 8;

int workers() {
#if defined(TANDEM_TSAN)
    return 1;  // Debian's oneTBB is not instrumented (see cpu_backend.cpp).
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

template <class T>
GemmBlockFn<T> block_kernel(const GemmBlockKernels& k) {
    if constexpr (sizeof(T) == 8) return k.f64;
    else return k.f32;
}

template <class T>
std::pair<GemmPackFn<T>, std::int64_t> row_packer(const GemmBlockKernels& k) {
    if constexpr (sizeof(T) == 8) return {k.pack_f64, k.pack_rows_f64};
    else return {k.pack_f32, k.pack_rows_f32};
}

template <class T>
void gemm_impl(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc,
               const GemmOptions& options, const char* type) {
    check_args(ta, tb, m, n, k, lda, ldb, ldc, type);
    const GemmBlockKernels& kernels = select_gemm_blocks(options.isa);
    const GemmBlockFn<T> kernel = block_kernel<T>(kernels);
    if (m == 0 || n == 0) return;
    if (k == 0 || alpha == T(0)) return scale(m, n, beta, c, ldc);  // BLAS: A and B not read

    // The sum goes straight to C, or to a temporary (ld m) when alpha or beta apply after it or
    // the result is a row (computed as a column).
    const bool row = m == 1 && n > 1;
    const bool direct = alpha == T(1) && beta == T(0) && !row;
    std::unique_ptr<T[]> temporary;
    if (!direct) temporary = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(m * n));
    T* sum = direct ? c : temporary.get();
    const std::int64_t lds = direct ? ldc : m;

    GemmOperands<T> o;
    if (row) {  // C(0, :)' = op(B)' op(A)': the same products, each element's chain unchanged
        o = {tb == Trans::none, ta == Trans::none, n, 1, k, b, ldb, a, lda, sum, n, false};
    } else {
        o = {ta == Trans::transpose, tb == Trans::transpose, m, n, k, a, lda, b, ldb, sum, lds, false};
        // A'A or AA': the upper triangle, mirrored below.
        o.upper_only = a == b && lda == ldb && ta != tb && m > 1;
    }

    const int p = options.workers > 0 ? options.workers : workers();
    const GemmGrid g = gemm_grid(o.m, o.n, k, p, o.upper_only);
    auto run_blocks = [&](const GemmOperands<T>& slab) {
        for_blocks(g.row_blocks * g.col_blocks, [&](std::int64_t r) {
            const std::int64_t bi = r % g.row_blocks, bj = r / g.row_blocks;
            const std::int64_t i0 = edge(o.m, g.row_blocks, bi, kRowAlign), i1 = edge(o.m, g.row_blocks, bi + 1, kRowAlign);
            const std::int64_t j0 = gemm_column_edge(g, o.n, bj), j1 = gemm_column_edge(g, o.n, bj + 1);
            if (i1 > i0 && j1 > j0 && !(o.upper_only && i0 >= j1)) kernel(slab, i0, i1, j0, j1);
        });
    };
    if (!gemm_shares_rows(g, o.n, k, o.upper_only)) {
        run_blocks(o);
    } else {
        // A'A of a tall A (X'X, 65536 x 128): every block packed all the rows it needs itself,
        // for every chunk of k (packing took twice the multiply-adds' time on this kernel's
        // profile), so each added block packed X again. Chunk by chunk instead: the rows packed
        // once, by the workers together, then the blocks side by side from that panel (their own
        // columns of op(B) come from the cache). Each element's chain is the same: each chunk's
        // sum added to C in order.
        const auto [pack, sliver] = row_packer<T>(kernels);
        const std::int64_t rows = (o.m + sliver - 1) / sliver * sliver, slivers = rows / sliver;
        // One chunk at a time: its packed rows (1 MiB for 128 of f64) stay near the cores that
        // read them next.
        const auto panel = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(rows * kMatmulChunk));
        const std::int64_t packers = std::min<std::int64_t>(slivers, p);
        for (std::int64_t p0 = 0; p0 < k; p0 += kMatmulChunk) {
            GemmOperands<T> slab = o;
            slab.k = std::min(kMatmulChunk, k - p0);
            slab.a = o.a + (o.trans_a ? p0 : p0 * o.lda);  // op(A)(i, p): a[i + p lda], or a[p + i lda]
            slab.b = o.b + (o.trans_b ? p0 * o.ldb : p0);  // op(B)(p, j): b[p + j ldb], or b[j + p ldb]
            slab.accumulate = p0 > 0;
            for_blocks(packers, [&](std::int64_t r) {
                const std::int64_t s0 = slivers * r / packers, s1 = slivers * (r + 1) / packers;
                const std::int64_t i0 = s0 * sliver, i1 = std::min(o.m, s1 * sliver);
                if (i1 > i0) pack(slab, i0, i1 - i0, 0, slab.k, panel.get() + i0 * slab.k);
            });
            slab.a_packed = panel.get();
            run_blocks(slab);
        }
    }
    const std::int64_t col_blocks = std::min<std::int64_t>(n, workers());
    if (o.upper_only)
        for_blocks(col_blocks, [&](std::int64_t r) {
            for (std::int64_t j = n * r / col_blocks; j < n * (r + 1) / col_blocks; ++j)
                for (std::int64_t i = j + 1; i < n; ++i) sum[i + j * lds] = sum[j + i * lds];
        });
    if (direct) return;
    // The epilogue, each step rounded on its own: alpha * sum, then + beta * C.
    for_blocks(col_blocks, [&](std::int64_t r) {
        for (std::int64_t j = n * r / col_blocks; j < n * (r + 1) / col_blocks; ++j)
            for (std::int64_t i = 0; i < m; ++i) {
                T v = alpha * sum[i + j * m];
                if (beta != T(0)) v = v + beta * c[i + j * ldc];
                c[i + j * ldc] = v;
            }
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

const GemmBlockKernels& select_gemm_blocks(std::string_view limit) {
    // The instruction set the block kernels take under this cap (one reading of the cap and the
    // CPU's features for every kernel family: select_kernels).
    const std::string_view isa = select_kernels(limit).isa;
#if TANDEM_HAVE_KERNELS_AVX512
    if (isa == "avx512")
        if (const GemmBlockKernels* t = gemm_blocks_avx512()) return *t;
#endif
#if TANDEM_HAVE_KERNELS_AVX2
    if (isa == "avx2")
        if (const GemmBlockKernels* t = gemm_blocks_avx2()) return *t;
#endif
    return *gemm_blocks_baseline();
}

GemmGrid gemm_grid(std::int64_t m, std::int64_t n, std::int64_t k, int workers, bool upper_only) noexcept {
    GemmGrid best;
    if (workers <= 1 || m <= 0 || n <= 0 || k <= 0) return best;
    // Enough work per block to pay for a task and for packing its own panels.
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (upper_only ? 2 : 1);
    const auto max_blocks =
        static_cast<std::int64_t>(std::clamp(work / static_cast<double>(kMinBlockWork), 1.0, static_cast<double>(workers)));
    if (upper_only) {
        // A'A: a grid of equal blocks leaves the blocks left of the diagonal a quarter of the
        // work of those right of it (2 workers took 3/4 of the triangle's time, not 1/2), and
        // the blocks below it none. Columns alone, each block an equal share of the triangle.
        // The last block is the narrowest (~ n / (2 blocks) columns): at least one aligned edge wide.
        best.col_blocks = std::clamp<std::int64_t>(n / (2 * kColAlign), 1, max_blocks);
        best.triangle = best.col_blocks > 1;
        return best;
    }
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

bool gemm_shares_rows(const GemmGrid& g, std::int64_t n, std::int64_t k, bool upper_only) noexcept {
    // A'A split over several blocks, with k long against the result (X'X of a tall X).
    return upper_only && g.row_blocks == 1 && g.col_blocks > 1 && k > kMatmulChunk && k >= 8 * n;
}

std::int64_t gemm_column_edge(const GemmGrid& g, std::int64_t n, std::int64_t r) noexcept {
    if (!g.triangle) return edge(n, g.col_blocks, r, kColAlign);
    if (r >= g.col_blocks) return n;
    // Columns [0, e) hold e (e + 1) / 2 elements of the upper triangle: e ~ n sqrt(r / blocks).
    const double e = static_cast<double>(n) * std::sqrt(static_cast<double>(r) / static_cast<double>(g.col_blocks));
    return std::min(n, (static_cast<std::int64_t>(e) + kColAlign / 2) / kColAlign * kColAlign);
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
