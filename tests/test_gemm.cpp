// CPU matrix multiply (backends/cpu/gemm.hpp, Tandem's kernels under oneTBB tasks) against two
// references: bit for bit against graph/matmul_order.hpp's canonical order computed by a plain
// loop in the element type (NaN equal to NaN), and, for the accuracy of that order, against a
// double-precision triple loop: each element must satisfy the standard forward error bound of a
// dot product of length k, with the reference's own rounding counted in:
//   |C - ref|_ij <= 3 * (k + 2) * eps(T) * (|alpha| * (|op(A)| |op(B)|)_ij + |beta| * |C0_ij|) + tiny
// (eps of the tested type; for f64 the reference's own error is of the same order, hence the 3).
// All four transpose combinations, alpha/beta (including beta = 0 ignoring NaN in C, BLAS's rule),
// shapes 1xN, Nx1, 1x1, empty (m, n or k = 0), non-multiples of every block and micro-kernel size,
// leading dimensions larger than the rows, NaN/Inf/-0/subnormal operands, k across the
// canonical chunks, A'A and AA' (the mirrored upper triangle), every instruction set and block
// grid giving the same bits, and the block grid itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "graph/matmul_order.hpp"
#include "tandem/error.hpp"

namespace cpu = tandem::detail::cpu;
using cpu::Trans;

namespace {

struct Case {
    Trans ta, tb;
    std::int64_t m, n, k;
    double alpha, beta;
    std::int64_t pad = 0;  // extra rows of every leading dimension
    bool self = false;     // B is A (m == n; A'A or AA' when the transposes differ)
};

std::string describe(const Case& c) {
    return std::string(c.ta == Trans::none ? "N" : "T") + (c.tb == Trans::none ? "N" : "T") + " m=" +
           std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
           " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad);
}

// Operands as stored, with their leading dimensions, filled with values in [-1, 1).
template <class T>
struct Operands {
    std::int64_t lda, ldb, ldc;
    std::vector<T> a, b, c;
};

template <class T>
Operands<T> make(const Case& c, std::uint32_t seed) {
    Operands<T> o;
    const std::int64_t a_rows = c.ta == Trans::none ? c.m : c.k, a_cols = c.ta == Trans::none ? c.k : c.m;
    const std::int64_t b_rows = c.tb == Trans::none ? c.k : c.n, b_cols = c.tb == Trans::none ? c.n : c.k;
    o.lda = std::max<std::int64_t>(1, a_rows) + c.pad;
    o.ldb = std::max<std::int64_t>(1, b_rows) + c.pad;
    o.ldc = std::max<std::int64_t>(1, c.m) + c.pad;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    o.a.resize(static_cast<std::size_t>(o.lda * std::max<std::int64_t>(a_cols, 1)));
    o.b.resize(static_cast<std::size_t>(o.ldb * std::max<std::int64_t>(b_cols, 1)));
    o.c.resize(static_cast<std::size_t>(o.ldc * std::max<std::int64_t>(c.n, 1)));
    for (auto& v : o.a) v = static_cast<T>(u(rng));
    for (auto& v : o.b) v = static_cast<T>(u(rng));
    for (auto& v : o.c) v = static_cast<T>(u(rng));
    if (c.self) {
        o.b = o.a;
        o.ldb = o.lda;
    }
    return o;
}

template <class T>
double op_a(const Case& c, const Operands<T>& o, std::int64_t i, std::int64_t p) {
    return static_cast<double>(c.ta == Trans::none ? o.a[static_cast<std::size_t>(i + p * o.lda)]
                                                   : o.a[static_cast<std::size_t>(p + i * o.lda)]);
}
template <class T>
double op_b(const Case& c, const Operands<T>& o, std::int64_t p, std::int64_t j) {
    return static_cast<double>(c.tb == Trans::none ? o.b[static_cast<std::size_t>(p + j * o.ldb)]
                                                   : o.b[static_cast<std::size_t>(j + p * o.ldb)]);
}

// Runs the case and checks every element of C (and that the padding rows are untouched).
// Exact equality, NaN equal to NaN (any payload), -0 unequal to +0.
template <class T>
bool same_bits(T x, T y) {
    return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
}

// C(i, j) in the canonical order, then the epilogue (alpha * sum, + beta * C0), in T.
template <class T>
T canonical_element(const Case& c, const Operands<T>& o, T c0, std::int64_t i, std::int64_t j) {
    if (c.k == 0 || c.alpha == 0) return c.beta == 0 ? T(0) : static_cast<T>(c.beta) * c0;  // BLAS's rule
    const T sum = tandem::detail::canonical_dot<T>(
        c.k, [&](std::int64_t p) { return static_cast<T>(op_a(c, o, i, p)); },
        [&](std::int64_t p) { return static_cast<T>(op_b(c, o, p, j)); });
    T v = static_cast<T>(c.alpha) * sum;
    if (c.beta != 0) v = v + static_cast<T>(c.beta) * c0;
    return v;
}

template <class T>
void check(const Case& c, cpu::GemmOptions options = {}, std::uint32_t seed = 1) {
    SCOPED_TRACE(describe(c) + (sizeof(T) == 4 ? " single" : " double") + " isa " + std::string(options.isa));
    Operands<T> o = make<T>(c, seed);
    const std::vector<T> c0 = o.c;
    cpu::gemm(c.ta, c.tb, c.m, c.n, c.k, static_cast<T>(c.alpha), o.a.data(), o.lda, o.b.data(), o.ldb,
              static_cast<T>(c.beta), o.c.data(), o.ldc, options);
    int mismatches = 0;
    for (std::int64_t j = 0; j < c.n; ++j)
        for (std::int64_t i = 0; i < c.m; ++i) {
            const auto at = static_cast<std::size_t>(i + j * o.ldc);
            const T want = canonical_element(c, o, c0[at], i, j);
            if (!same_bits(o.c[at], want) && ++mismatches <= 5)
                ADD_FAILURE() << "C(" << i << "," << j << ") = " << o.c[at] << ", the canonical order gives " << want;
        }
    EXPECT_EQ(mismatches, 0) << "elements not bit-identical to the canonical order";
    const double eps = std::numeric_limits<T>::epsilon();
    int failures = 0;
    for (std::int64_t j = 0; j < c.n; ++j)
        for (std::int64_t i = 0; i < o.ldc; ++i) {
            const auto at = static_cast<std::size_t>(i + j * o.ldc);
            if (i >= c.m) {  // padding: never written
                ASSERT_EQ(o.c[at], c0[at]) << "padding row " << i << " of column " << j << " written";
                continue;
            }
            double ref = 0, mag = 0;
            for (std::int64_t p = 0; p < c.k; ++p) {
                const double x = op_a(c, o, i, p), y = op_b(c, o, p, j);
                ref += x * y;
                mag += std::fabs(x * y);
            }
            ref *= c.alpha;
            mag *= std::fabs(c.alpha);
            if (c.beta != 0) {
                ref += c.beta * static_cast<double>(c0[at]);
                mag += std::fabs(c.beta * static_cast<double>(c0[at]));
            }
            const double bound = 3.0 * static_cast<double>(c.k + 2) * eps * mag + std::numeric_limits<T>::min();
            const double got = static_cast<double>(o.c[at]);
            if (!(std::fabs(got - ref) <= bound) && ++failures <= 5)
                ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", reference " << ref << ", error "
                              << std::fabs(got - ref) << " > bound " << bound;
        }
    EXPECT_EQ(failures, 0);
}

const Trans kBoth[] = {Trans::none, Trans::transpose};

template <class T>
void all_transposes(std::int64_t m, std::int64_t n, std::int64_t k, double alpha = 1, double beta = 0,
                    std::int64_t pad = 0) {
    for (Trans ta : kBoth)
        for (Trans tb : kBoth) check<T>({ta, tb, m, n, k, alpha, beta, pad});
}

}  // namespace

TEST(CpuGemm, SquareAndRectangularAllTransposes) {
    for (auto [m, n, k] : {std::tuple{64, 64, 64}, {37, 53, 29}, {128, 17, 200}, {5, 300, 7}, {257, 129, 65}}) {
        all_transposes<float>(m, n, k);
        all_transposes<double>(m, n, k);
    }
}

TEST(CpuGemm, AlphaBetaAndLeadingDimensions) {
    for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {-2.5, 0.5}, {0.75, -1.0}, {3.0, 0.0}}) {
        all_transposes<float>(45, 38, 33, alpha, beta, /*pad=*/3);
        all_transposes<double>(45, 38, 33, alpha, beta, /*pad=*/5);
    }
}

TEST(CpuGemm, VectorShapes) {
    // 1xN, Nx1, 1x1 results and inner products (k large, m = n = 1), with padding so that the
    // strides of the vector operands (incx = lda or ldb) are exercised.
    for (auto [m, n, k] : {std::tuple{1, 300, 77}, {300, 1, 77}, {1, 1, 1000}, {1, 1, 1}, {1, 5000, 3}, {5000, 1, 3}}) {
        for (std::int64_t pad : {0, 2}) {
            all_transposes<float>(m, n, k, 1.5, 0.5, pad);
            all_transposes<double>(m, n, k, 1.5, 0.5, pad);
        }
    }
}

TEST(CpuGemm, EmptyShapes) {
    // m or n = 0: nothing to do; k = 0: C = beta * C (beta = 0 gives zeros, as in BLAS).
    for (auto [m, n, k] : {std::tuple{0, 5, 3}, {5, 0, 3}, {0, 0, 0}, {6, 4, 0}}) {
        all_transposes<float>(m, n, k, 2.0, 0.5);
        all_transposes<double>(m, n, k, 2.0, 0.0);
    }
    std::vector<double> c = {std::nan(""), 1, 2, 3};
    cpu::gemm(Trans::none, Trans::none, 2, 2, 0, 1.0, nullptr, 2, nullptr, 1, 0.0, c.data(), 2);
    EXPECT_EQ(c, (std::vector<double>{0, 0, 0, 0})) << "k = 0, beta = 0: zeros, NaN in C ignored";
}

TEST(CpuGemm, LargeSizesAcrossBlocks) {
    // Large enough to be split over the TBB workers (several blocks), sizes that are no multiple
    // of the block alignment (32 x 8) or the micro-tiles, every transpose.
    for (Trans ta : kBoth)
        for (Trans tb : kBoth) {
            check<float>({ta, tb, 333, 271, 190, 1, 0});
            check<double>({ta, tb, 271, 333, 150, -1, 2, 1});
        }
    // Grids with more than one block along each dimension (planned for more workers than this
    // machine may have: the blocks then queue as tasks).
    for (int workers : {4, 6, 9})
        for (Trans ta : kBoth)
            for (Trans tb : kBoth) {
                check<double>({ta, tb, 301, 299, 120, 1, 1}, {"auto", workers});
                check<float>({ta, tb, 299, 301, 120, -1, 0}, {"auto", workers});
            }
}

TEST(CpuGemm, CanonicalOrderAcrossChunksIsasAndGrids) {
    // k across the chunks of the canonical order (kMatmulChunk = 1024: one chunk, one and a bit,
    // exactly two, several with a short last one); every instruction set this CPU has (the lesser ones run
    // too: a cap above the CPU falls back) and grids of 1..9 blocks give the same bits.
    for (const char* isa : {"auto", "avx2", "baseline"})
        for (int workers : {1, 4, 9})
            for (Trans ta : kBoth)
                for (Trans tb : kBoth) {
                    const cpu::GemmOptions options{isa, workers};
                    check<double>({ta, tb, 67, 45, 1100, 1, 0}, options);
                    check<float>({ta, tb, 45, 67, 1025, 1, 0, 2}, options);
                    if (std::string(isa) != "baseline") {  // glibc's scalar fma: slow
                        check<double>({ta, tb, 150, 130, 3100, -0.5, 1}, options);
                        check<float>({ta, tb, 3, 200, 1030, 1, 0}, options);
                        check<double>({ta, tb, 200, 1, 2048, 1, 0}, options);
                        check<float>({ta, tb, 1, 200, 600, 2, 0.5}, options);
                    }
                }
}

TEST(CpuGemm, SymmetricProductIsTheFullProductMirrored) {
    // A'A and AA' (B is A): the upper triangle computed, the lower mirrored -- the same bits as
    // the canonical order of every element (products commute exactly), for grids of several blocks.
    for (int workers : {1, 2, 4, 9})
        for (Trans ta : kBoth) {
            const Trans tb = ta == Trans::none ? Trans::transpose : Trans::none;
            const cpu::GemmOptions options{"auto", workers};
            check<double>({ta, tb, 77, 77, 1300, 1, 0, 0, true}, options);
            check<double>({ta, tb, 131, 131, 700, 1, 0, 0, true}, options);  // triangle blocks of 8-column edges
            // k of several chunks, long against the result: the rows packed once a chunk, shared
            // (every instruction set: each packs its own slivers).
            for (const char* isa : {"auto", "avx2", "baseline"}) {
                const cpu::GemmOptions each{isa, workers};
                check<double>({ta, tb, 45, 45, 3000, 1, 0, 0, true}, each);
                check<float>({ta, tb, 64, 64, 2500, -1, 0, 2, true}, each);
            }
            check<float>({ta, tb, 130, 130, 40, 1, 0, 3, true}, options);
            check<double>({ta, tb, 5, 5, 3, 1, 0, 0, true}, options);
        }
}

template <class T>
void special_values_case() {
    // Operands full of NaN, +-Inf, -0, subnormals and values whose products underflow or cancel:
    // every element still the canonical order's bits, for every instruction set.
    SCOPED_TRACE(sizeof(T) == 4 ? "single" : "double");
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), T(-0.0), T(0),
                          std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min() * T(3),
                          std::numeric_limits<T>::min(), -std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                          T(1e-30), T(-1e-30), T(1), T(-1)};
    const std::int64_t m = 37, n = 23, k = 700;
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> pick(0, static_cast<int>(std::size(specials)) - 1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (const char* isa : {"auto", "avx2", "baseline"})
        for (Trans ta : kBoth)
            for (Trans tb : kBoth) {
                Case c{ta, tb, m, n, k, 1, 0};
                Operands<T> o = make<T>(c, 5);
                // Mostly finite values (so that most elements stay finite), a few specials.
                for (auto& v : o.a) v = rng() % 16 == 0 ? specials[pick(rng)] : static_cast<T>(u(rng));
                for (auto& v : o.b) v = rng() % 16 == 0 ? specials[pick(rng)] : static_cast<T>(u(rng));
                std::vector<T> out(static_cast<std::size_t>(m * n), T(7));
                cpu::gemm(ta, tb, m, n, k, T(1), o.a.data(), o.lda, o.b.data(), o.ldb, T(0), out.data(), m,
                          {isa, 3});
                int mismatches = 0;
                for (std::int64_t j = 0; j < n; ++j)
                    for (std::int64_t i = 0; i < m; ++i) {
                        const T want = canonical_element(c, o, T(0), i, j);
                        if (!same_bits(out[static_cast<std::size_t>(i + j * m)], want)) ++mismatches;
                    }
                EXPECT_EQ(mismatches, 0) << isa << " " << describe(c);
            }
    // Sums of products that underflow to -0 or cancel to +0 keep their sign as the canonical
    // order says: (-tiny)(tiny) rounds to -0 in the chain of a one-element k; +0 from +0 start.
    const T tiny = std::numeric_limits<T>::denorm_min();
    T a[1] = {-tiny}, b[1] = {tiny}, out[1] = {T(5)};
    cpu::gemm(Trans::none, Trans::none, 1, 1, 1, T(1), a, 1, b, 1, T(0), out, 1);
    EXPECT_TRUE(same_bits(out[0], std::fma(-tiny, tiny, T(0)))) << out[0];
}

TEST(CpuGemm, SpecialValuesGiveTheCanonicalBits) {
    special_values_case<float>();
    special_values_case<double>();
}

TEST(CpuGemm, BlockGrid) {
    // One block for small products or one worker; never more blocks than workers; the split
    // follows the larger dimension.
    EXPECT_EQ(cpu::gemm_grid(1000, 1000, 1000, 1).row_blocks * cpu::gemm_grid(1000, 1000, 1000, 1).col_blocks, 1);
    EXPECT_EQ(cpu::gemm_grid(8, 8, 8, 16).row_blocks * cpu::gemm_grid(8, 8, 8, 16).col_blocks, 1);
    for (int w : {2, 3, 4, 8, 16}) {
        const auto g = cpu::gemm_grid(2048, 2048, 2048, w);
        EXPECT_LE(g.row_blocks * g.col_blocks, w);
        EXPECT_GE(g.row_blocks * g.col_blocks, w - 1) << w;
    }
    const auto tall = cpu::gemm_grid(8192, 256, 512, 4);
    EXPECT_EQ(tall.row_blocks, 4);
    EXPECT_EQ(tall.col_blocks, 1);
    const auto wide = cpu::gemm_grid(256, 8192, 512, 4);
    EXPECT_EQ(wide.row_blocks, 1);
    EXPECT_EQ(wide.col_blocks, 4);
    const auto square = cpu::gemm_grid(2048, 2048, 2048, 4);
    EXPECT_EQ(square.row_blocks, 2);
    EXPECT_EQ(square.col_blocks, 2);
}

TEST(CpuGemm, SymmetricBlocksShareTheTriangle) {
    // A'A computes the upper triangle: column blocks, each about an equal share of it (equal
    // blocks gave 2 workers a quarter and three quarters: W5's X'X took 18.5 ms instead of 13).
    for (int w : {2, 3, 4, 16}) {
        const std::int64_t n = 128;
        const auto g = cpu::gemm_grid(n, n, 65536, w, /*upper_only=*/true);
        EXPECT_EQ(g.row_blocks, 1);
        EXPECT_EQ(g.col_blocks, std::min<std::int64_t>(w, n / 16)) << w;
        std::int64_t previous = 0;
        for (std::int64_t r = 1; r <= g.col_blocks; ++r) {
            const std::int64_t e0 = cpu::gemm_column_edge(g, n, r - 1), e1 = cpu::gemm_column_edge(g, n, r);
            EXPECT_EQ(e0, previous);
            EXPECT_GT(e1, e0) << "block " << r << " of " << g.col_blocks << " is empty";
            EXPECT_TRUE(e1 % 8 == 0 || e1 == n);
            // Its share of the triangle's n (n + 1) / 2 elements: within 8 columns' worth of 1 / blocks.
            const double share = static_cast<double>(e1 * (e1 + 1) - e0 * (e0 + 1)) / static_cast<double>(n * (n + 1));
            EXPECT_NEAR(share, 1.0 / static_cast<double>(g.col_blocks), 16.0 * n / static_cast<double>(n * (n + 1)))
                << "block " << r << " of " << g.col_blocks;
            previous = e1;
        }
        EXPECT_EQ(previous, n);
    }
    // Too little work for two blocks: one.
    EXPECT_EQ(cpu::gemm_grid(16, 16, 16, 8, true).col_blocks, 1);
    // X'X of a tall X runs chunk by chunk, the rows packed once for all blocks; a square A'A,
    // a product of one block or another product does not.
    EXPECT_TRUE(cpu::gemm_shares_rows(cpu::gemm_grid(128, 128, 65536, 4, true), 128, 65536, true));
    EXPECT_FALSE(cpu::gemm_shares_rows(cpu::gemm_grid(512, 512, 512, 4, true), 512, 512, true));
    EXPECT_FALSE(cpu::gemm_shares_rows(cpu::gemm_grid(128, 128, 65536, 1, true), 128, 65536, true));
    EXPECT_FALSE(cpu::gemm_shares_rows(cpu::gemm_grid(128, 128, 65536, 4), 128, 65536, false));
}

template <class T>
void nan_inf_case() {
    SCOPED_TRACE(sizeof(T) == 4 ? "single" : "double");
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    // A (m x k) ones except A(2, 3) = NaN and A(5, 1) = +Inf; B (k x n) positive except B(1, 4) = 0.
    const std::int64_t m = 40, n = 30, k = 20;
    for (Trans ta : kBoth)
        for (Trans tb : kBoth) {
            std::vector<T> a(static_cast<std::size_t>(m * k), T(1)), b(static_cast<std::size_t>(k * n), T(0.5)),
                c(static_cast<std::size_t>(m * n), T(7));
            auto A = [&](std::int64_t i, std::int64_t p) -> T& {
                return a[static_cast<std::size_t>(ta == Trans::none ? i + p * m : p + i * k)];
            };
            auto B = [&](std::int64_t p, std::int64_t j) -> T& {
                return b[static_cast<std::size_t>(tb == Trans::none ? p + j * k : j + p * n)];
            };
            A(2, 3) = nan;
            A(5, 1) = inf;
            B(1, 4) = T(0);
            // C(17, 9) is NaN on entry: beta = 1 propagates it.
            c[static_cast<std::size_t>(17 + 9 * m)] = nan;
            cpu::gemm(ta, tb, m, n, k, T(1), a.data(), ta == Trans::none ? m : k, b.data(), tb == Trans::none ? k : n,
                      T(1), c.data(), m);
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t i = 0; i < m; ++i) {
                    const T got = c[static_cast<std::size_t>(i + j * m)];
                    if (i == 2 || (i == 5 && j == 4) || (i == 17 && j == 9))
                        EXPECT_TRUE(std::isnan(got)) << "C(" << i << "," << j << ") = " << got;  // NaN, Inf * 0
                    else if (i == 5) EXPECT_EQ(got, inf) << "C(5," << j << ")";
                    else EXPECT_EQ(got, T(7 + 0.5 * (j == 4 ? k - 1 : k))) << "C(" << i << "," << j << ")";
                }
            // beta = 0: C is not read, so its NaN does not propagate (BLAS).
            std::vector<T> c2(static_cast<std::size_t>(m * n), nan);
            cpu::gemm(ta, tb, m, n, k, T(1), a.data(), ta == Trans::none ? m : k, b.data(), tb == Trans::none ? k : n,
                      T(0), c2.data(), m);
            EXPECT_EQ(c2[static_cast<std::size_t>(0 + 0 * m)], T(0.5 * k));
            EXPECT_TRUE(std::isnan(c2[static_cast<std::size_t>(2 + 7 * m)]));
            EXPECT_EQ(c2[static_cast<std::size_t>(5 + 7 * m)], inf);
        }
}

TEST(CpuGemm, NanAndInfPropagate) {
    nan_inf_case<float>();
    nan_inf_case<double>();
}

TEST(CpuGemm, BadArgumentsThrowValueError) {
    std::vector<double> a(100), b(100), c(100);
    auto call = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
        cpu::gemm(Trans::none, Trans::none, m, n, k, 1.0, a.data(), lda, b.data(), ldb, 0.0, c.data(), ldc);
    };
    EXPECT_THROW(call(-1, 2, 2, 2, 2, 2), tandem::ValueError);
    EXPECT_THROW(call(4, 2, 2, 3, 2, 4), tandem::ValueError);  // lda < m
    EXPECT_THROW(call(4, 2, 3, 4, 2, 4), tandem::ValueError);  // ldb < k
    EXPECT_THROW(call(4, 2, 2, 4, 2, 3), tandem::ValueError);  // ldc < m
    try {
        call(4, 2, 2, 3, 2, 4);
    } catch (const tandem::ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("lda = 3"), std::string::npos) << e.what();
    }
}
