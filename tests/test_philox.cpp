// The random-number core on the CPU (backends/cpu/philox.hpp): Philox4x32-10 against Random123's
// known-answer vectors, the documented bit layout, the bulk fills against the element functions, the
// accuracy of the libm-free ln / sqrt / sin / cos used by randn, and statistics of 1e6 draws of each
// distribution (mean, variance, Kolmogorov-Smirnov, chi-square), plus the same bits from code compiled
// with FMA enabled (test_philox_fma.cpp). The GPU side is tests/test_vulkan_philox.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <vector>

#include "backends/cpu/philox.hpp"

namespace td = tandem::detail;

// test_philox_fma.cpp: the same functions compiled with -mavx2 -mfma (x86-64), or null.
struct FmaBuild {
    bool (*available)();
    void (*randn_f64)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, double* out);
    void (*randn_f32)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, float* out);
    double (*randn_f64_elem)(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);
    float (*randn_f32_elem)(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);
};
const FmaBuild* philox_fma_build();

namespace {

constexpr std::size_t kDraws = 1000000;
__extension__ typedef unsigned __int128 U128;

// Kolmogorov-Smirnov: sqrt(n) D_n > 1.949 rejects at alpha = 0.001 (asymptotic critical value
// sqrt(-ln(0.0005)/2); 1e6 draws make the asymptotic form exact to ~1e-3).
constexpr double kKsCritical = 1.949;

template <class T, class Cdf> double ks_statistic(std::vector<T> v, Cdf cdf) {
    std::sort(v.begin(), v.end());
    const double n = static_cast<double>(v.size());
    double d = 0;
    for (std::size_t k = 0; k < v.size(); k++) {
        const double F = cdf(static_cast<double>(v[k]));
        d = std::max({d, F - static_cast<double>(k) / n, static_cast<double>(k + 1) / n - F});
    }
    return d * std::sqrt(n);
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

template <class T> void moments(const std::vector<T>& v, double& mean, double& var) {
    long double s = 0, s2 = 0;
    for (T x : v) s += static_cast<long double>(x);
    mean = static_cast<double>(s / v.size());
    for (T x : v) s2 += (static_cast<long double>(x) - mean) * (static_cast<long double>(x) - mean);
    var = static_cast<double>(s2 / (v.size() - 1));
}

template <class T> std::uint64_t bits(T x) {
    if constexpr (sizeof(T) == 8) return std::bit_cast<std::uint64_t>(x);
    else return std::bit_cast<std::uint32_t>(x);
}

// ulp distance of two finite values of one sign
template <class T> std::uint64_t ulps(T a, T b) {
    const auto x = static_cast<std::int64_t>(bits(a)), y = static_cast<std::int64_t>(bits(b));
    return static_cast<std::uint64_t>(x > y ? x - y : y - x);
}

// |got - exact| in ulps of float at the exact value
double ulp_err(float got, long double exact) {
    const long double ulp = std::ldexp(1.0L, std::ilogb(static_cast<float>(exact)) - 23);
    return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

// The pair of normals (z0, z1) the documentation in philox.hpp defines: radius R, (cos x, sin x), then the D4
// step (swap if bit s, negate each by bits n0, n1), in long double with libm.
void box_muller_d4(long double R, long double x, bool swap, bool n0, bool n1, long double& z0, long double& z1) {
    long double a = std::cos(x), b = std::sin(x);
    if (swap) std::swap(a, b);
    z0 = n0 ? -R * a : R * a;
    z1 = n1 ? -R * b : R * b;
}

// ---------------------------------------------------------------------------------------------
// Philox4x32-10
// ---------------------------------------------------------------------------------------------
// Random123's kat_vectors (columns: counter[4], key[2], result[4]):
//   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
//   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
//   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
};
constexpr Kat kKat[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, KnownAnswerVectors) {
    for (const Kat& k : kKat) {
        const td::PhiloxBlock r =
            td::philox4x32_10(td::PhiloxBlock{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1]);
        for (int j = 0; j < 4; j++) EXPECT_EQ(r.x[j], k.out[j]) << "word " << j << " of KAT " << std::hex << k.ctr[0];
    }
    // usable at compile time
    static_assert(td::philox4x32_10(td::PhiloxBlock{{0, 0, 0, 0}}, 0, 0).x[0] == 0x6627e8d5u);
}

TEST(Philox, BlockLayout) {
    // seed -> key (low word first), (block, stream) -> counter (low words first)
    const td::PhiloxBlock b = td::philox_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
    EXPECT_EQ(b.x[0], 0xd16cfe09u);
    EXPECT_EQ(b.x[1], 0x94fdccebu);
    EXPECT_EQ(b.x[2], 0x5001e420u);
    EXPECT_EQ(b.x[3], 0x24126ea1u);
    const td::PhiloxBlock w = td::philox_block(~0ull, ~0ull, ~0ull);
    EXPECT_EQ(w.x[0], 0x408f276du);
    EXPECT_EQ(w.x[3], 0x6d5451fdu);

    // each distribution reads the words the table in philox.hpp names
    const std::uint64_t seed = 0x0123456789abcdefull, stream = 77;
    for (std::uint64_t i : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 1000001ull, (1ull << 33) + 3, ~0ull, ~0ull - 2}) {
        const td::PhiloxBlock b2 = td::philox_block(seed, stream, i / 2), b4 = td::philox_block(seed, stream, i / 4);
        const unsigned j2 = static_cast<unsigned>(i % 2), j4 = static_cast<unsigned>(i % 4);
        const std::uint64_t r = (static_cast<std::uint64_t>(b2.x[2 * j2 + 1]) << 32) | b2.x[2 * j2];
        const std::uint64_t m = r >> 11;
        EXPECT_EQ(td::rand_f64(seed, stream, i), m ? std::ldexp(static_cast<double>(m), -53) : std::ldexp(1.0, -54));
        const std::uint32_t m24 = b4.x[j4] >> 8;
        EXPECT_EQ(td::rand_f32(seed, stream, i), m24 ? std::ldexp(static_cast<float>(m24), -24) : std::ldexp(1.0f, -25));
        EXPECT_EQ(td::randi(seed, stream, i, -5, 1000),
                  -5 + static_cast<std::int64_t>((static_cast<U128>(r) * 1000) >> 64));
        EXPECT_EQ(td::randi(seed, stream, i, 7, 0), static_cast<std::int64_t>(r + 7));
        EXPECT_EQ(bits(td::randn_f64(seed, stream, i)), bits(td::normal_f64_from(b2, j2 == 1)));
        EXPECT_EQ(bits(td::randn_f32(seed, stream, i)),
                  bits(td::normal_f32_from(b4.x[2 * (j4 / 2)], b4.x[2 * (j4 / 2) + 1], j4 % 2 == 1)));
    }
}

// The first values of a fixed stream, as a hash: any change of the layout or of the arithmetic
// changes the numbers users get for a seed, and must be deliberate.
template <class F> std::uint64_t stream_hash(F f) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint64_t i = 0; i < 4096; i++) {
        h ^= f(i);
        h *= 0x100000001b3ull;
    }
    return h;
}

TEST(Philox, GoldenStreams) {
    const std::uint64_t s = 42, st = 3;
    const std::uint64_t h[5] = {
        stream_hash([&](std::uint64_t i) { return bits(td::rand_f64(s, st, i)); }),
        stream_hash([&](std::uint64_t i) { return bits(td::rand_f32(s, st, i)); }),
        stream_hash([&](std::uint64_t i) { return static_cast<std::uint64_t>(td::randi(s, st, i, 1, 6)); }),
        stream_hash([&](std::uint64_t i) { return bits(td::randn_f64(s, st, i)); }),
        stream_hash([&](std::uint64_t i) { return bits(td::randn_f32(s, st, i)); }),
    };
    std::printf("[philox] stream hashes %016llx %016llx %016llx %016llx %016llx\n", (unsigned long long)h[0],
                (unsigned long long)h[1], (unsigned long long)h[2], (unsigned long long)h[3], (unsigned long long)h[4]);
    const std::uint64_t want[5] = {0xee1d93bac950b32cull, 0x9c696ee71ca622efull, 0x52807c96908bfc07ull,
                                   0x004aeee43db8637aull, 0xba1e4946ca9b7680ull};  // randn: D4 angle step, f32 log polynomial (issue 4)
    for (int k = 0; k < 5; k++) EXPECT_EQ(h[k], want[k]) << "stream " << k;
    std::printf("[philox] randn_f64(42, 3, 0..3) = %.17g %.17g %.17g %.17g\n", td::randn_f64(s, st, 0),
                td::randn_f64(s, st, 1), td::randn_f64(s, st, 2), td::randn_f64(s, st, 3));
}

TEST(Philox, FillsMatchElements) {
    const std::uint64_t seed = 9, stream = 1ull << 40;
    for (std::uint64_t first : {0ull, 1ull, 2ull, 3ull, 4097ull, (1ull << 32) - 3, ~0ull - 40}) {
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{37}}) {
            std::vector<double> d(n), dn(n);
            std::vector<float> f(n), fn(n);
            std::vector<std::int64_t> ri(n);
            td::fill_rand_f64(seed, stream, first, n, d.data());
            td::fill_rand_f32(seed, stream, first, n, f.data());
            td::fill_randn_f64(seed, stream, first, n, dn.data());
            td::fill_randn_f32(seed, stream, first, n, fn.data());
            td::fill_randi(seed, stream, first, n, -100, 201, ri.data());
            for (std::size_t k = 0; k < n; k++) {
                const std::uint64_t i = first + k;
                EXPECT_EQ(bits(d[k]), bits(td::rand_f64(seed, stream, i)));
                EXPECT_EQ(bits(f[k]), bits(td::rand_f32(seed, stream, i)));
                EXPECT_EQ(bits(dn[k]), bits(td::randn_f64(seed, stream, i)));
                EXPECT_EQ(bits(fn[k]), bits(td::randn_f32(seed, stream, i)));
                EXPECT_EQ(ri[k], td::randi(seed, stream, i, -100, 201));
            }
        }
    }
}

TEST(Philox, DeterministicAndSeedSensitive) {
    std::vector<double> a(1000), b(1000), c(1000), e(1000);
    td::fill_randn_f64(5, 0, 0, a.size(), a.data());
    td::fill_randn_f64(5, 0, 0, b.size(), b.data());
    td::fill_randn_f64(6, 0, 0, c.size(), c.data());
    td::fill_randn_f64(5, 1, 0, e.size(), e.data());
    std::size_t same_c = 0, same_e = 0;
    for (std::size_t k = 0; k < a.size(); k++) {
        EXPECT_EQ(bits(a[k]), bits(b[k]));
        same_c += a[k] == c[k];
        same_e += a[k] == e[k];
    }
    EXPECT_EQ(same_c, 0u);
    EXPECT_EQ(same_e, 0u);
}

// ---------------------------------------------------------------------------------------------
// The libm-free pieces of randn, against libm
// ---------------------------------------------------------------------------------------------
TEST(Philox, KernelAccuracy) {
    std::uint64_t max_log = 0, max_sqrt = 0, max_sc = 0;
    double max_logf = 0, max_sqrtf = 0, max_scf = 0;  // f32: fractional ulps against long double
    double worst_log_x = 0;
    // ln u for u = n 2^-53 (every exponent), and for the u1 of the f32 path
    for (std::uint64_t t = 0; t < 2000000; t++) {
        const td::PhiloxBlock b = td::philox_block(1, 2, t);
        const std::uint64_t r = (static_cast<std::uint64_t>(b.x[1]) << 32) | b.x[0];
        const int shift = 11 + static_cast<int>(t % 53);
        std::uint64_t n = (r >> shift) | 1;  // [1, 2^53)
        const double u = std::ldexp(static_cast<double>(n), -53);
        int e = 0;
        const double M = 2 * std::frexp(u, &e);
        const double l = td::rng::log_parts(M, e - 1);
        const std::uint64_t d = ulps(l, std::log(u));
        if (d > max_log) { max_log = d; worst_log_x = u; }
        const double x = -2 * l;
        max_sqrt = std::max(max_sqrt, ulps(td::rng::sqrt_pos(x), std::sqrt(x)));
        const double ang = std::ldexp(static_cast<double>(r >> 11), -53) * (std::numbers::pi / 4);
        max_sc = std::max({max_sc, ulps(td::rng::sincos_kernel(ang, true), std::sin(ang)),
                           ulps(td::rng::sincos_kernel(ang, false), std::cos(ang))});

        // f32: -2 ln(v 2^-32) for v = RN(n) of n in [1, 2^32] (every exponent), its sqrt, sin/cos of x = k pi/4 2^-24
        const std::uint32_t n32 = (b.x[2] >> (t % 32)) | 1u;
        const float v = static_cast<float>(t % 1000 == 0 ? 4294967296.0 : static_cast<double>(n32));
        const float Lf = td::rng::neg2ln_f32(v);
        const long double Le = -2 * std::log(std::ldexp(static_cast<long double>(v), -32));
        if (Le == 0) {
            EXPECT_EQ(Lf, 0.0f);
            EXPECT_EQ(td::rng::sqrt_pos(Lf), 0.0f);
        } else {
            max_logf = std::max(max_logf, ulp_err(Lf, Le));
            max_sqrtf = std::max(max_sqrtf, ulp_err(td::rng::sqrt_pos(Lf), std::sqrt(static_cast<long double>(Lf))));
        }
        const float angf = static_cast<float>((b.x[3] | 1u) & 0x00FFFFFFu) * td::rng::kPio4Ulp24f;
        float sf = 0, cf = 0;
        td::rng::sincos_f32(angf, sf, cf);
        max_scf = std::max({max_scf, ulp_err(sf, std::sin(static_cast<long double>(angf))),
                            ulp_err(cf, std::cos(static_cast<long double>(angf)))});
    }
    std::printf("[philox] max ulp vs libm: log %llu (at %.17g) sqrt %llu sin/cos %llu | f32 vs exact: -2 ln %.3f sqrt %.3f "
                "sin/cos %.3f\n",
                (unsigned long long)max_log, worst_log_x, (unsigned long long)max_sqrt, (unsigned long long)max_sc,
                max_logf, max_sqrtf, max_scf);
    EXPECT_LE(max_log, 2u);
    EXPECT_LE(max_sqrt, 2u);
    EXPECT_LE(max_sc, 2u);
    EXPECT_LE(max_logf, 1.5);
    EXPECT_LE(max_sqrtf, 1.0);
    EXPECT_LE(max_scf, 1.5);
}

// randn against the Box-Muller transform of the same u1 and angle in long double with libm.
TEST(Philox, NormalMatchesBoxMuller) {
    double max_err = 0, max_errf = 0, max_ulpf = 0;
    for (std::uint64_t i = 0; i < 400000; i++) {
        const td::PhiloxBlock b = td::philox_block(11, 0, i / 2);
        const std::uint64_t ra = (static_cast<std::uint64_t>(b.x[1]) << 32) | b.x[0];
        const std::uint64_t rb = (static_cast<std::uint64_t>(b.x[3]) << 32) | b.x[2];
        const long double u1 = std::ldexp(static_cast<long double>((1ull << 53) - (ra >> 11)), -53);
        const long double x = std::ldexp(static_cast<long double>((rb | 1) & ((1ull << 53) - 1)), -53) *
                              (std::numbers::pi_v<long double> / 4);
        long double z0 = 0, z1 = 0;
        box_muller_d4(std::sqrt(-2 * std::log(u1)), x, rb >> 63, (rb >> 62) & 1, (rb >> 61) & 1, z0, z1);
        max_err = std::max(max_err, static_cast<double>(std::fabs(td::randn_f64(11, 0, i) - ((i & 1) ? z1 : z0))));

        const td::PhiloxBlock b4 = td::philox_block(11, 0, i / 4);
        const unsigned p = (i / 2) % 2;
        const std::uint32_t wr = b4.x[2 * p], wa = b4.x[2 * p + 1];
        const float v = static_cast<float>(static_cast<double>(~wr) + 1.0);  // RN(2^32 - wr)
        const long double u1f = std::ldexp(static_cast<long double>(v), -32);
        const long double xf = std::ldexp(static_cast<long double>((wa | 1u) & 0xFFFFFFu), -24) * (std::numbers::pi_v<long double> / 4);
        box_muller_d4(std::sqrt(-2 * std::log(u1f)), xf, wa >> 31, (wa >> 30) & 1, (wa >> 29) & 1, z0, z1);
        const long double zf = (i & 1) ? z1 : z0;
        const float got = td::randn_f32(11, 0, i);
        max_errf = std::max(max_errf, static_cast<double>(std::fabs(got - zf)));
        if (std::fabs(zf) > 1e-3L) max_ulpf = std::max(max_ulpf, ulp_err(got, zf));
    }
    std::printf("[philox] randn max |z - exact Box-Muller|: f64 %.3g, f32 %.3g (%.2f ulp where |z| > 1e-3)\n", max_err,
                max_errf, max_ulpf);
    EXPECT_LT(max_err, 1e-14);
    EXPECT_LT(max_errf, 1e-6);
    EXPECT_LE(max_ulpf, 4.0);
}

// Extreme words: u1 = 1 (radius 0), the smallest u1 (the largest radius), every octant boundary.
TEST(Philox, NormalEdgeWords) {
    const std::uint32_t radius_words[][2] = {{0, 0}, {0x7FF, 0}, {0x800, 0}, {0xFFFFFFFF, 0xFFFFFFFF}, {0, 0x80000000}, {0xFFFFF800, 0xFFFFFFFF}};
    for (const auto& rw : radius_words)
        for (std::uint32_t a3 = 0; a3 < 8; a3++)
            for (std::uint32_t lowa : {0u, 1u, 0xFFu, 0x100u, 0xFFFFFFu, 0x1000000u, 0x1FFFFFFFu, 0xFFFFFFFFu}) {
                const std::uint32_t a2 = lowa, a3w = (a3 << 29) | (lowa & 0x1FFFFFFF);
                for (bool sine : {false, true}) {
                    const double z = td::normal_f64_from(td::PhiloxBlock{{rw[0], rw[1], a2, a3w}}, sine);
                    EXPECT_TRUE(std::isfinite(z));
                    EXPECT_LE(std::fabs(z), 8.58);
                    const float zf = td::normal_f32_from(rw[1], a3w, sine);
                    EXPECT_TRUE(std::isfinite(zf));
                    EXPECT_LE(std::fabs(zf), 6.67f);
                    EXPECT_TRUE(zf == 0 || std::fabs(zf) >= std::numeric_limits<float>::min());
                }
            }
    // f32 radius words around the ends: v = RN(2^32 - wr) reaches 2^32 (R = 0) for wr <= 128, and 1 for wr = 2^32 - 1
    for (std::uint32_t wr : {0u, 1u, 0x7Fu, 0x80u, 0x81u, 0xFFu, 0x100u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFF00u, 0xFFFFFFFEu, 0xFFFFFFFFu})
        for (std::uint32_t wa : {0u, 1u, 0x1FFFFFFFu, 0x20000000u, 0xDFFFFFFEu, 0xFFFFFFFFu}) {
            float z0 = 0, z1 = 0;
            td::normal_f32_pair(wr, wa, z0, z1);
            for (float z : {z0, z1}) {
                EXPECT_TRUE(std::isfinite(z));
                EXPECT_LE(std::fabs(z), 6.67f);
                EXPECT_TRUE(z == 0 || std::fabs(z) >= std::numeric_limits<float>::min());
            }
            if (wr <= 0x80u) {
                EXPECT_EQ(z0, 0.0f);
                EXPECT_EQ(z1, 0.0f);
            }
        }
    EXPECT_EQ(td::normal_f64_from(td::PhiloxBlock{{0, 0, 0, 0}}, false), 0.0);
    EXPECT_EQ(td::normal_f32_from(0, 0, false), 0.0f);
    // the largest radius: sqrt(-2 ln 2^-53) = 8.5728...
    EXPECT_NEAR(td::normal_f64_from(td::PhiloxBlock{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}, false), std::sqrt(106 * std::log(2.0)), 1e-14);
    EXPECT_NEAR(td::normal_f32_from(0xFFFFFFFF, 0, false), std::sqrt(64 * std::log(2.0)), 1e-5);
}

// ---------------------------------------------------------------------------------------------
// Statistics of 1e6 draws
// ---------------------------------------------------------------------------------------------
TEST(Philox, UniformStatistics) {
    std::vector<double> d(kDraws);
    std::vector<float> f(kDraws);
    td::fill_rand_f64(2024, 0, 0, kDraws, d.data());
    td::fill_rand_f32(2024, 1, 0, kDraws, f.data());
    const double sd_mean = std::sqrt(1.0 / 12 / kDraws), sd_var = std::sqrt(1.0 / 180 / kDraws);  // Var(U^2-ish): 1/180
    for (int k = 0; k < 2; k++) {
        double mean = 0, var = 0, ks = 0, lo = 1, hi = 0;
        if (k == 0) {
            moments(d, mean, var);
            ks = ks_statistic(d, [](double x) { return x; });
            lo = *std::min_element(d.begin(), d.end());
            hi = *std::max_element(d.begin(), d.end());
        } else {
            moments(f, mean, var);
            ks = ks_statistic(f, [](double x) { return x; });
            lo = *std::min_element(f.begin(), f.end());
            hi = *std::max_element(f.begin(), f.end());
        }
        std::printf("[philox] rand %s: mean %.6f var %.6f (1/12 = %.6f) KS sqrt(n)D = %.3f (critical %.3f) range [%.3g, %.9f]\n",
                    k ? "f32" : "f64", mean, var, 1.0 / 12, ks, kKsCritical, lo, hi);
        EXPECT_NEAR(mean, 0.5, 5 * sd_mean);
        EXPECT_NEAR(var, 1.0 / 12, 5 * sd_var);
        EXPECT_LT(ks, kKsCritical);
        EXPECT_GT(lo, 0.0);
        EXPECT_LT(hi, 1.0);
    }
}

TEST(Philox, NormalStatistics) {
    std::vector<double> d(kDraws);
    std::vector<float> f(kDraws);
    td::fill_randn_f64(7, 0, 0, kDraws, d.data());
    td::fill_randn_f32(7, 0, 0, kDraws, f.data());
    const double sd_mean = std::sqrt(1.0 / kDraws), sd_var = std::sqrt(2.0 / kDraws);
    const double p3 = std::erfc(3 / std::numbers::sqrt2);  // P(|z| > 3)
    for (int k = 0; k < 2; k++) {
        double mean = 0, var = 0, ks = 0;
        std::size_t beyond3 = 0;
        double m3 = 0, m4 = 0, corr = 0;
        auto each = [&](auto& v) {
            moments(v, mean, var);
            ks = ks_statistic(v, normal_cdf);
            for (std::size_t i = 0; i < v.size(); i++) {
                const double x = static_cast<double>(v[i]);
                beyond3 += std::fabs(x) > 3;
                m3 += x * x * x;
                m4 += x * x * x * x;
                if (i % 2 == 0) corr += x * static_cast<double>(v[i + 1]);  // the (cos, sin) pair of one u1, u2
            }
        };
        if (k == 0) each(d);
        else each(f);
        m3 /= kDraws;
        m4 /= kDraws;
        corr /= kDraws / 2;
        const double e3 = kDraws * p3, sd3 = std::sqrt(kDraws * p3 * (1 - p3));
        std::printf("[philox] randn %s: mean %.5f var %.5f skew %.4f kurt %.4f KS sqrt(n)D = %.3f (critical %.3f) "
                    "|z|>3: %zu (expect %.0f +- %.0f) pair corr %.5f\n",
                    k ? "f32" : "f64", mean, var, m3, m4, ks, kKsCritical, beyond3, e3, sd3, corr);
        EXPECT_NEAR(mean, 0, 5 * sd_mean);
        EXPECT_NEAR(var, 1, 5 * sd_var);
        EXPECT_NEAR(m3, 0, 5 * std::sqrt(15.0 / kDraws));
        EXPECT_NEAR(m4, 3, 5 * std::sqrt(96.0 / kDraws));
        EXPECT_LT(ks, kKsCritical);
        EXPECT_NEAR(static_cast<double>(beyond3), e3, 5 * sd3);
        EXPECT_NEAR(corr, 0, 5 * std::sqrt(2.0 / kDraws));
    }
}

// chi-square with df = 5 (dice) / 9: critical values at alpha = 0.001 are 20.515 / 27.877.
TEST(Philox, RandiStatistics) {
    struct Case {
        std::int64_t lo, hi;
        double critical;
    };
    for (const Case c : {Case{1, 6, 20.515}, Case{-4, 5, 27.877}}) {
        const std::uint64_t n = static_cast<std::uint64_t>(c.hi - c.lo + 1);
        std::vector<std::int64_t> v(kDraws);
        td::fill_randi(99, 0, 0, kDraws, c.lo, n, v.data());
        std::vector<double> count(n, 0);
        for (std::int64_t x : v) {
            ASSERT_GE(x, c.lo);
            ASSERT_LE(x, c.hi);
            count[static_cast<std::size_t>(x - c.lo)]++;
        }
        const double e = static_cast<double>(kDraws) / static_cast<double>(n);
        double chi2 = 0;
        for (double k : count) chi2 += (k - e) * (k - e) / e;
        std::printf("[philox] randi [%lld, %lld]: chi2 = %.2f (df %llu, critical %.3f), min/max count %.0f/%.0f of %.0f\n",
                    (long long)c.lo, (long long)c.hi, chi2, (unsigned long long)(n - 1), c.critical,
                    *std::min_element(count.begin(), count.end()), *std::max_element(count.begin(), count.end()), e);
        EXPECT_LT(chi2, c.critical);
    }
    // wide ranges stay in range, and cover them: 2^40 values, up to 2^53, the full 64 bits
    for (std::uint64_t n : {1ull, 2ull, 1ull << 40, (1ull << 53), 0ull}) {
        const std::int64_t lo = n == 0 ? 0 : -static_cast<std::int64_t>(n / 2);
        std::int64_t mn = std::numeric_limits<std::int64_t>::max(), mx = std::numeric_limits<std::int64_t>::min();
        for (std::uint64_t i = 0; i < 100000; i++) {
            const std::int64_t x = td::randi(3, 0, i, lo, n);
            if (n != 0) {
                ASSERT_GE(x, lo);
                ASSERT_LE(static_cast<std::uint64_t>(x - lo), n - 1);
            }
            mn = std::min(mn, x);
            mx = std::max(mx, x);
        }
        if (n >= (1ull << 40)) {  // both ends of the range reached within 0.1%
            const double span = n == 0 ? 18446744073709551616.0 : static_cast<double>(n);
            EXPECT_LT(static_cast<double>(mn) - static_cast<double>(lo), span * 1e-3);
            EXPECT_GT(static_cast<double>(mx) - static_cast<double>(lo), span * (1 - 1e-3));
        }
        if (n == 1) {
            EXPECT_EQ(mn, mx);
        }
        if (n == 2) {
            EXPECT_EQ(mx - mn, 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Contraction: the same bits from a translation unit compiled with FMA instructions enabled
// ---------------------------------------------------------------------------------------------
TEST(Philox, SameBitsWithFmaEnabled) {
    const FmaBuild* fb = philox_fma_build();
    if (!fb || !fb->available()) GTEST_SKIP() << "no FMA build or no FMA on this CPU";
    constexpr std::size_t n = 200000;
    std::vector<double> a(n), b(n);
    std::vector<float> af(n), bf(n);
    td::fill_randn_f64(17, 4, 123, n, a.data());
    fb->randn_f64(17, 4, 123, n, b.data());
    td::fill_randn_f32(17, 4, 123, n, af.data());
    fb->randn_f32(17, 4, 123, n, bf.data());
    std::size_t diff = 0, difff = 0;
    for (std::size_t k = 0; k < n; k++) {
        diff += bits(a[k]) != bits(b[k]);
        difff += bits(af[k]) != bits(bf[k]);
    }
    for (std::uint64_t i = 0; i < 1000; i++) {
        diff += bits(td::randn_f64(1, 2, i)) != bits(fb->randn_f64_elem(1, 2, i));
        difff += bits(td::randn_f32(1, 2, i)) != bits(fb->randn_f32_elem(1, 2, i));
    }
    EXPECT_EQ(diff, 0u) << "randn_f64 differs when compiled with -mfma: contraction is not off";
    EXPECT_EQ(difff, 0u) << "randn_f32 differs when compiled with -mfma: contraction is not off";
}

}  // namespace
