// Counter-based random numbers for rand / randn / randi: Philox4x32-10 (Salmon, Moraes, Dror, Shaw,
// "Parallel random numbers: as easy as 1, 2, 3", SC'11; the constants of Random123) and the functions
// that turn its output into doubles, floats and integers.
//
// Every value is a pure function of (seed, stream, element index): element i of a generator op can be
// computed alone, in any order, on any backend. shaders/philox.glsl is the same code in GLSL, and the
// two give the same bits (tests/test_philox.cpp, tests/test_vulkan_philox.cpp: lavapipe and the H100).
// To keep it so, edit the two files together, operation for operation. The GLSL also has whole-block
// functions (tdm_randn_f32x4 ...: one thread writes the 2 or 4 elements of a block, sharing the Philox
// call and a normal pair's log and sqrt) for generator kernels; the fill_* functions here are their twins.
//
// Philox block of an element. The key is the seed, the counter is (block, stream):
//   key     = (seed mod 2^32, seed >> 32)
//   counter = (block mod 2^32, block >> 32, stream mod 2^32, stream >> 32)
//   (x0, x1, x2, x3) = philox4x32_10(counter, key)
// `stream` separates the calls that share a seed (the runtime numbers its generator ops). A block
// serves 2 or 4 consecutive elements, as each distribution needs 64 or 32 bits per element:
//
// | function     | elements per block | element i reads (b = block, j = i mod 2 or i mod 4)                    |
// | rand_f64     | 2 | b = i/2; 64 bits r = x[2j+1]*2^32 + x[2j]; m = r >> 11 (53 bits); u = m 2^-53       |
// |              |   | (m = 0 gives 2^-54 instead, so u is in (0, 1): 2^-54 or [2^-53, 1 - 2^-53])         |
// | rand_f32     | 4 | b = i/4; m = x[j] >> 8 (24 bits); u = m 2^-24 (m = 0 gives 2^-25)                   |
// | randi        | 2 | b = i/2; r as rand_f64; value = lo + floor(r n / 2^64), n = hi - lo + 1            |
// | randn_f64    | 2 | b = i/2; Box-Muller on all 128 bits: the pair (z0, z1) of the block, z0 for even i    |
// | randn_f32    | 4 | b = i/4; pair p = j/2 from x[2p] (radius), x[2p+1] (angle): z0 for even i, z1 odd |
//
// randi: the multiply-shift map of 64 random bits to [0, n) (Lemire's, without the rejection step, so
// that every element costs the same): value v has probability floor(2^64/n)/2^64 or ceil(2^64/n)/2^64,
// a relative bias below n / 2^64 (< 2.4e-10 for n <= 2^32, < 5e-4 for n = 2^53, the largest a double
// holds exactly). n = 0 (the full 64-bit range, hi - lo + 1 wrapped) gives lo + r.
//
// randn (Box-Muller): a pair of independent standard normals (z0, z1) from a radius R = sqrt(-2 ln u1)
// and an angle: (R cos x, R sin x) for x uniform in (0, pi/4), then a uniform element of the symmetry
// group of the square (D4: swap the two, negate each) picked by three more bits -- the angle of the
// result is uniform on the circle, as in the textbook R (cos 2 pi u2, sin 2 pi u2), but no octant
// arithmetic is needed: (a, b) = (sin x, cos x) if bit s else (cos x, sin x); z0 = +-R a, z1 = +-R b
// with the signs of bits n0, n1 (sign-bit flips).
//  * f64: u1 = n 2^-53 with n = 2^53 - (ra >> 11) in [1, 2^53] (ra = x1 2^32 + x0), so u1 in
//    [2^-53, 1] and |z| <= 8.58; u1 = 1 gives R = 0. The angle's 64 bits rb = x3 2^32 + x2:
//    x = k pi/4 2^-53 with k = (rb | 1) mod 2^53 (odd: bits 1..52), s, n0, n1 = bits 63, 62, 61.
//  * f32: u1 = v 2^-32 with v = n rounded to a float (RN), n = 2^32 - x[2p] in [1, 2^32] (u1 in
//    [2^-32, 1], |z| <= 6.67; v = 2^32 gives R = 0); the angle word a = x[2p+1]: x = k pi/4 2^-24 with
//    k = (a | 1) mod 2^24 (odd: bits 1..23), s, n0, n1 = bits 31, 30, 29. The f32 path is float
//    arithmetic throughout, no division and no Newton step in the log (GPU throughput: about 80
//    operations per pair, every Philox block giving two pairs).
//  Every operation is an IEEE basic operation (+ - *, each correctly rounded, never fused) on values
//  built exactly from the bits, so that C++ and GLSL agree bit for bit; nothing calls a libm:
//  * f64 ln u1: u1 = M 2^E exactly (M in [sqrt(1/2), sqrt(2))), ln M = f - f^2/2 + s (f^2/2 + R(s^2))
//    with f = M - 1, s = f / (2 + f) (FreeBSD's e_log.c, coefficients Lg1..Lg7), the division replaced
//    by a linear first guess of 1/(2 + f) and 3 Newton steps r (2 - d r) (relative error 2.5e-15 in s,
//    which only feeds the small correction term).
//  * f32 -2 ln u1: v = M 2^(32 - kneg), M in [sqrt(1/2), sqrt(2)) (exponent and mantissa split on the
//    bits, as musl's logf), -2 ln M = -2 f + f (f Q(f)), f = M - 1 (exact), Q a minimax polynomial of
//    degree 7 (relative error 3e-8), plus kneg 2 ln 2 as Hi + Lo (kneg Hi exact).
//  * sqrt x: y = 1/sqrt(x) from the bit-pattern first guess (0x5FE6EB50C7B537A9 / 0x5F375A86 minus half
//    the bits, within 3.5%) and Newton steps y (1.5 - (x/2) y^2) (3 for f64, 2 for f32: 4e-11 / 5e-6),
//    then s = x y and one Newton step on the square root itself, s + (x - s s) (y/2) (x - s s is exact).
//  * sin x, cos x for x in (0, pi/4): fdlibm's kernel polynomials (S1..S6, C1..C6) for f64; for f32
//    minimax polynomials x + x z S(z), 1 - z (1/2 + z C(z)), z = x^2, S and C of degree 2.
//  Accuracy (tests/test_philox.cpp measures it): f64 ln within 2 ulp, sqrt, sin, cos within 1 ulp, z within
//  1e-15 of the exact Box-Muller transform of the same u1 and angle; f32 -2 ln u1 within 1.3 ulp, R within
//  0.9 ulp (sqrt of the computed value: 1.2 ulp of the exact), sin/cos within 1.2 ulp, z within 6e-7 of the
//  exact transform (4 ulp at most).
//  No intermediate of the f32 path is subnormal (NVIDIA flushes them): |f| >= 2^-24, x >= 2^-24 pi/4,
//  -2 ln u1 = 0 or >= 2^-23.
//
// No contraction: a*b + c must not become fma(a, b, c), which the GPU side forbids with `precise`. GCC
// contracts by default when FMA instructions are enabled (the AVX2/AVX-512 kernels), even in ISO C++
// mode, so this header turns it off with `#pragma GCC optimize` (GCC then does not inline these
// functions into code compiled with other options, which keeps the setting; the fill_* functions
// produce whole blocks in one call). Clang honours `#pragma clang fp contract(off)` in each function.
// MSVC does not contract under /fp:precise. Never compile this with -ffast-math.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#define TANDEM_RNG_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define TANDEM_RNG_NO_CONTRACT
#endif

namespace tandem::detail {
// Internal linkage: the CPU kernels compile this header once per instruction set
// (kernels_impl.inc), and an inline function of external linkage could be merged by the linker
// with another ISA's copy and run on a CPU without its instructions.
namespace {

/// std::bit_cast without the standard header's external template (see above).
template <class To, class From>
constexpr To rng_bit_cast(const From& from) noexcept {
    return __builtin_bit_cast(To, from);
}

struct PhiloxBlock {
    std::uint32_t x[4];
};

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;

/// Philox4x32 with 10 rounds, as Random123's philox4x32_R(10, ctr, key): each round multiplies
/// counter words 0 and 2 by M0 and M1 (32x32 -> 64 bits) and mixes; the key is bumped by
/// (W0, W1) before every round but the first.
/// One round on the counter words (x0, x1, x2, x3) with the round's key (k0, k1).
constexpr void philox_round(std::uint32_t& x0, std::uint32_t& x1, std::uint32_t& x2, std::uint32_t& x3,
                            std::uint32_t k0, std::uint32_t k1) noexcept {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * x0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * x2;
    x0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1 ^ k0;
    x1 = static_cast<std::uint32_t>(p1);
    x2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3 ^ k1;
    x3 = static_cast<std::uint32_t>(p0);
}

constexpr PhiloxBlock philox4x32_10(PhiloxBlock c, std::uint32_t k0, std::uint32_t k1) noexcept {
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += kPhiloxW0;
            k1 += kPhiloxW1;
        }
        philox_round(c.x[0], c.x[1], c.x[2], c.x[3], k0, k1);
    }
    return c;
}

/// The block `block` of stream `stream` under `seed` (see the table at the top).
constexpr PhiloxBlock philox_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) noexcept {
    return philox4x32_10(PhiloxBlock{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                                      static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}},
                         static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

/// Elements per Philox block of each distribution (element i lives in block i / kPerBlock).
inline constexpr unsigned kRandF64PerBlock = 2;
inline constexpr unsigned kRandF32PerBlock = 4;
inline constexpr unsigned kRandiPerBlock = 2;
inline constexpr unsigned kRandnF64PerBlock = 2;
inline constexpr unsigned kRandnF32PerBlock = 4;

namespace rng {

// Constants by their bits, so that the GLSL (uint64BitsToDouble / uintBitsToFloat of the same hex)
// cannot differ by a decimal parse.
constexpr double d(std::uint64_t b) noexcept { return rng_bit_cast<double>(b); }
constexpr float f(std::uint32_t b) noexcept { return rng_bit_cast<float>(b); }

// f64
inline constexpr double kLg1 = d(0x3FE5555555555593), kLg2 = d(0x3FD999999997FA04), kLg3 = d(0x3FD2492494229359),
                        kLg4 = d(0x3FCC71C51D8E78AF), kLg5 = d(0x3FC7466496CB03DE), kLg6 = d(0x3FC39A09D078C69F),
                        kLg7 = d(0x3FC2F112DF3E5244);
inline constexpr double kLn2Hi = d(0x3FE62E42FEE00000), kLn2Lo = d(0x3DEA39EF35793C76);
inline constexpr double kSqrt2 = d(0x3FF6A09E667F3BCD);
inline constexpr double kRecA = d(0x3FEF859FB1E833F6), kRecB = d(0x3FCE981385F30265);  // 1/d ~ A - B d on [1.707, 2.415]
inline constexpr double kS1 = d(0xBFC5555555555549), kS2 = d(0x3F8111111110F8A6), kS3 = d(0xBF2A01A019C161D5),
                        kS4 = d(0x3EC71DE357B1FE7D), kS5 = d(0xBE5AE5E68A2B9CEB), kS6 = d(0x3DE5D93A5ACFD57C);
inline constexpr double kC1 = d(0x3FA555555555554C), kC2 = d(0xBF56C16C16C15177), kC3 = d(0x3EFA01A019CB1590),
                        kC4 = d(0xBE927E4F809C52AD), kC5 = d(0x3E21EE9EBDB4B1C4), kC6 = d(0xBDA8FAE9BE8838D4);
inline constexpr double kPio4Ulp53 = d(0x3C9921FB54442D18);  // pi/4 * 2^-53
inline constexpr double kTwoM53 = d(0x3CA0000000000000), kTwoM54 = d(0x3C90000000000000);
// f32 (randn_f32: see normal_f32_pair)
//   -2 ln(1 + f) = -2 f + f (f Q(f)), Q the minimax fit of degree 7 on [sqrt(1/2) - 1, sqrt(2) - 1] (3e-8)
inline constexpr float kLnQ0f = f(0x3F7FFFFD), kLnQ1f = f(0xBF2AAB7A), kLnQ2f = f(0x3F00024D), kLnQ3f = f(0xBECC6960),
                       kLnQ4f = f(0x3EA9AE98), kLnQ5f = f(0xBE98C293), kLnQ6f = f(0x3E92824F), kLnQ7f = f(0xBE32E3BC);
inline constexpr float kLn2x2Hif = f(0x3FB17000), kLn2x2Lof = f(0x3885FDF4);  // 2 ln 2 = Hi + Lo, Hi of 12 bits
//   sin x = x + (x z) (S1 + z (S2 + z S3)), cos x = 1 - z (1/2 + z (C1 + z (C2 + z C3))), z = x^2, x in [0, pi/4]
//   (minimax: relative 3.8e-9 / 1.2e-10)
inline constexpr float kS1f = f(0xBE2AAAA3), kS2f = f(0x3C08839D), kS3f = f(0xB94CA1F0);
inline constexpr float kC1f = f(0xBD2AAAA5), kC2f = f(0x3AB6061A), kC3f = f(0xB7CCF5CE);
inline constexpr float kPio4Ulp24f = f(0x33490FDB);  // pi/4 * 2^-24
inline constexpr float kTwoM24f = f(0x33800000), kTwoM25f = f(0x33000000);

/// ln(M 2^E) for M in [1, 2) (exact), |E| < 1000. In the FP-strict section: see the top.
inline double log_parts(double M, int E) noexcept {
    TANDEM_RNG_NO_CONTRACT
    if (M > kSqrt2) {
        M = M * 0.5;
        E = E + 1;
    }
    const double f = M - 1.0;  // exact
    const double dd = 2.0 + f;
    double r = kRecA - kRecB * dd;
    r = r * (2.0 - dd * r);
    r = r * (2.0 - dd * r);
    r = r * (2.0 - dd * r);
    const double s = f * r;
    const double hfsq = 0.5 * f * f;
    const double z = s * s;
    const double w = z * z;
    const double t1 = w * (kLg2 + w * (kLg4 + w * kLg6));
    const double t2 = z * (kLg1 + w * (kLg3 + w * (kLg5 + w * kLg7)));
    const double R = t2 + t1;
    const double dk = static_cast<double>(E);
    return dk * kLn2Hi - ((hfsq - (s * (hfsq + R) + dk * kLn2Lo)) - f);
}

/// sqrt(x) for normal x > 0 (within 1 ulp): 1/sqrt(x) from the bits and Newton steps, then one step on sqrt.
inline double sqrt_pos(double x) noexcept {
    TANDEM_RNG_NO_CONTRACT
    double y = rng_bit_cast<double>(0x5FE6EB50C7B537A9ull - (rng_bit_cast<std::uint64_t>(x) >> 1));
    const double h = 0.5 * x;
    y = y * (1.5 - h * (y * y));
    y = y * (1.5 - h * (y * y));
    y = y * (1.5 - h * (y * y));
    const double s = x * y;
    return s + (x - s * s) * (0.5 * y);  // x - s*s is exact (Sterbenz): one Newton step on sqrt
}

/// sqrt(x) for x = 0 or normal x > 0 (f32: (h y) y, not h (y y), so that x = 0 gives 0 rather
/// than 0 * inf from the guess's square).
inline float sqrt_pos(float x) noexcept {
    TANDEM_RNG_NO_CONTRACT
    float y = rng_bit_cast<float>(0x5F375A86u - (rng_bit_cast<std::uint32_t>(x) >> 1));
    const float h = 0.5f * x;
    y = y * (1.5f - (h * y) * y);
    y = y * (1.5f - (h * y) * y);
    const float s = x * y;
    return s + (x - s * s) * (0.5f * y);
}

/// sin x (use_sin) or cos x for x in [0, pi/4]: one Horner polynomial with selected coefficients
/// (no divergence on a GPU), sin = x + (x z) P_S(z), cos = (1 - z/2) + (z z) P_C(z), z = x^2.
inline double sincos_kernel(double x, bool use_sin) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const double z = x * x;
    double p = use_sin ? kS6 : kC6;
    p = p * z + (use_sin ? kS5 : kC5);
    p = p * z + (use_sin ? kS4 : kC4);
    p = p * z + (use_sin ? kS3 : kC3);
    p = p * z + (use_sin ? kS2 : kC2);
    p = p * z + (use_sin ? kS1 : kC1);
    const double a = use_sin ? x : 1.0 - 0.5 * z;
    const double m = use_sin ? x * z : z * z;
    return a + m * p;
}

/// -2 ln(u1) for u1 = v 2^-32, v a float in [1, 2^32]: v = M 2^(32 - kneg) with M in [sqrt(1/2),
/// sqrt(2)) (the exponent adjusted on the bits, as musl's logf does), -2 ln M by the polynomial
/// above, plus kneg 2 ln 2 (kneg Hi is exact). Within 1.3 ulp; 0 for v = 2^32.
inline float neg2ln_f32(float v) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const std::uint32_t ix = rng_bit_cast<std::uint32_t>(v) + 0x004AFB0Du;  // 0x3F800000 - bits of sqrt(1/2)
    const int kneg = 159 - static_cast<int>(ix >> 23);
    const float M = rng_bit_cast<float>((ix & 0x007FFFFFu) + 0x3F3504F3u);
    const float fm = M - 1.0f;  // exact
    float q = kLnQ7f;
    q = q * fm + kLnQ6f;
    q = q * fm + kLnQ5f;
    q = q * fm + kLnQ4f;
    q = q * fm + kLnQ3f;
    q = q * fm + kLnQ2f;
    q = q * fm + kLnQ1f;
    q = q * fm + kLnQ0f;
    const float t = -2.0f * fm + fm * (fm * q);  // -2 ln M
    const float kf = static_cast<float>(kneg);    // exact
    return kf * kLn2x2Hif + (t + kf * kLn2x2Lof);
}

/// sin x and cos x for x in (0, pi/4] (the minimax polynomials above).
inline void sincos_f32(float x, float& s, float& c) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const float z = x * x;
    const float ps = (kS3f * z + kS2f) * z + kS1f;
    s = x + (x * z) * ps;
    const float pc = ((kC3f * z + kC2f) * z + kC1f) * z + 0.5f;
    c = 1.0f - z * pc;
}

}  // namespace rng

// ---------------------------------------------------------------------------------------------
// From Philox words to values (pure; the element functions below pick the words)
// ---------------------------------------------------------------------------------------------

/// Uniform on (0, 1) from 64 bits (lo, hi): the top 53 bits m, m 2^-53, and 2^-54 for m = 0.
inline double uniform_f64_from(std::uint32_t lo, std::uint32_t hi) noexcept {
    const std::uint64_t m = ((static_cast<std::uint64_t>(hi) << 32) | lo) >> 11;
    return m != 0 ? static_cast<double>(m) * rng::kTwoM53 : rng::kTwoM54;  // exact
}

/// Uniform on (0, 1) from 32 bits: the top 24 bits m, m 2^-24, and 2^-25 for m = 0.
inline float uniform_f32_from(std::uint32_t w) noexcept {
    const std::uint32_t m = w >> 8;
    return m != 0 ? static_cast<float>(m) * rng::kTwoM24f : rng::kTwoM25f;  // exact
}

/// lo + floor(r n / 2^64), r = hi 2^32 + lo_bits; n = 0 means 2^64 (lo + r, wrapping).
inline std::int64_t randi_from(std::uint32_t lo_bits, std::uint32_t hi_bits, std::int64_t lo, std::uint64_t n) noexcept {
    const std::uint64_t r = (static_cast<std::uint64_t>(hi_bits) << 32) | lo_bits;
    std::uint64_t v;
    if (n == 0) {
        v = r;
    } else {
        // high 64 bits of the 128-bit product r * n, from 32-bit halves (as the GLSL does)
        const std::uint64_t r0 = r & 0xFFFFFFFFu, r1 = r >> 32, n0 = n & 0xFFFFFFFFu, n1 = n >> 32;
        const std::uint64_t p00 = r0 * n0, p01 = r0 * n1, p10 = r1 * n0, p11 = r1 * n1;
        const std::uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
        v = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    }
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + v);
}

/// The D4 step of Box-Muller (see the top): (a, b) = (cos x, sin x) swapped when bit `swap` of
/// the angle word is set, then each negated by its own bit (sign flips on the bits).
inline void box_muller_d4_f64(double radius, double s, double c, std::uint64_t rb, double& z0, double& z1) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const bool swap = (rb >> 63) != 0;
    const double a = radius * (swap ? s : c);
    const double b = radius * (swap ? c : s);
    z0 = rng_bit_cast<double>(rng_bit_cast<std::uint64_t>(a) ^ ((rb << 1) & 0x8000000000000000ull));
    z1 = rng_bit_cast<double>(rng_bit_cast<std::uint64_t>(b) ^ ((rb << 2) & 0x8000000000000000ull));
}

/// Both standard normals (f64) of a whole block: elements 2 block and 2 block + 1.
inline void normal_f64_pair(const PhiloxBlock& b, double& z0, double& z1) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const std::uint64_t ra = (static_cast<std::uint64_t>(b.x[1]) << 32) | b.x[0];
    const std::uint64_t rb = (static_cast<std::uint64_t>(b.x[3]) << 32) | b.x[2];
    constexpr std::uint64_t two53 = std::uint64_t{1} << 53;
    const std::uint64_t n = two53 - (ra >> 11);  // u1 = n 2^-53 in [2^-53, 1]
    double radius = 0.0;
    if (n != two53) {
        const std::uint64_t nb = rng_bit_cast<std::uint64_t>(static_cast<double>(n));  // exact
        const int E = static_cast<int>(nb >> 52) - 1023 - 53;
        const double M = rng_bit_cast<double>((nb & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
        const double x = -2.0 * rng::log_parts(M, E);  // > 0, >= 2^-52
        radius = rng::sqrt_pos(x);
    }
    const std::uint64_t k = (rb | 1u) & (two53 - 1);            // odd, < 2^53: exact
    const double x = static_cast<double>(k) * rng::kPio4Ulp53;  // (0, pi/4)
    const double s = rng::sincos_kernel(x, true), c = rng::sincos_kernel(x, false);
    box_muller_d4_f64(radius, s, c, rb, z0, z1);
}

/// Standard normal (f64) from a whole block: the first (sine = false) or second of the pair.
inline double normal_f64_from(const PhiloxBlock& b, bool sine) noexcept {
    double z0, z1;
    normal_f64_pair(b, z0, z1);
    return sine ? z1 : z0;
}

/// Both standard normals (f32) of two words: radius word wr, angle word wa.
inline void normal_f32_pair(std::uint32_t wr, std::uint32_t wa, float& z0, float& z1) noexcept {
    TANDEM_RNG_NO_CONTRACT
    // u1 2^32 = RN(n), n = 2^32 - wr in [1, 2^32], from two exact conversions and one rounded sum
    const std::uint32_t nn = ~wr;  // n - 1
    const float v = static_cast<float>(nn >> 8) * 256.0f + static_cast<float>((nn & 0xFFu) + 1u);
    const float radius = rng::sqrt_pos(rng::neg2ln_f32(v));
    const float x = static_cast<float>((wa | 1u) & 0x00FFFFFFu) * rng::kPio4Ulp24f;  // odd k < 2^24: (0, pi/4)
    float s, c;
    rng::sincos_f32(x, s, c);
    const bool swap = (wa >> 31) != 0;
    const float a = radius * (swap ? s : c);
    const float b = radius * (swap ? c : s);
    z0 = rng_bit_cast<float>(rng_bit_cast<std::uint32_t>(a) ^ ((wa << 1) & 0x80000000u));
    z1 = rng_bit_cast<float>(rng_bit_cast<std::uint32_t>(b) ^ ((wa << 2) & 0x80000000u));
}

/// Standard normal (f32) from two words: the first (sine = false) or second of the pair.
inline float normal_f32_from(std::uint32_t wr, std::uint32_t wa, bool sine) noexcept {
    float z0, z1;
    normal_f32_pair(wr, wa, z0, z1);
    return sine ? z1 : z0;
}

// ---------------------------------------------------------------------------------------------
// Element functions: element i of the stream (seed, stream)
// ---------------------------------------------------------------------------------------------

inline double rand_f64(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) noexcept {
    const PhiloxBlock b = philox_block(seed, stream, i >> 1);
    const unsigned j = static_cast<unsigned>(i & 1) * 2;
    return uniform_f64_from(b.x[j], b.x[j + 1]);
}

inline float rand_f32(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) noexcept {
    const PhiloxBlock b = philox_block(seed, stream, i >> 2);
    return uniform_f32_from(b.x[i & 3]);
}

/// Uniform integer in [lo, lo + n - 1] (n = hi - lo + 1; n = 0: the whole 64-bit range).
inline std::int64_t randi(std::uint64_t seed, std::uint64_t stream, std::uint64_t i, std::int64_t lo,
                          std::uint64_t n) noexcept {
    const PhiloxBlock b = philox_block(seed, stream, i >> 1);
    const unsigned j = static_cast<unsigned>(i & 1) * 2;
    return randi_from(b.x[j], b.x[j + 1], lo, n);
}

inline double randn_f64(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) noexcept {
    return normal_f64_from(philox_block(seed, stream, i >> 1), (i & 1) != 0);
}

inline float randn_f32(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) noexcept {
    const PhiloxBlock b = philox_block(seed, stream, i >> 2);
    const unsigned p = static_cast<unsigned>(i >> 1) & 1u;
    return normal_f32_from(b.x[2 * p], b.x[2 * p + 1], (i & 1) != 0);
}

// ---------------------------------------------------------------------------------------------
// Bulk: elements [first, first + count) into out, one Philox block per kPerBlock elements. The
// same values as the element functions.
// ---------------------------------------------------------------------------------------------

inline void fill_rand_f64(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                          double* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 1);
        for (unsigned j = static_cast<unsigned>(i & 1); j < 2 && o < count; j++, o++)
            out[o] = uniform_f64_from(b.x[2 * j], b.x[2 * j + 1]);
    }
}

inline void fill_rand_f32(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                          float* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 2);
        for (unsigned j = static_cast<unsigned>(i & 3); j < 4 && o < count; j++, o++) out[o] = uniform_f32_from(b.x[j]);
    }
}

inline void fill_randi(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                       std::int64_t lo, std::uint64_t n, std::int64_t* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 1);
        for (unsigned j = static_cast<unsigned>(i & 1); j < 2 && o < count; j++, o++)
            out[o] = randi_from(b.x[2 * j], b.x[2 * j + 1], lo, n);
    }
}

inline void fill_randn_f64(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                           double* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 1);
        double z[2];
        normal_f64_pair(b, z[0], z[1]);
        for (unsigned j = static_cast<unsigned>(i & 1); j < 2 && o < count; j++, o++) out[o] = z[j];
    }
}

/// Elements first .. first + count - 1 of randn_f32, block by block (any alignment).
inline void fill_randn_f32_ends(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                                float* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 2);
        const unsigned j0 = static_cast<unsigned>(i & 3);
        float z[4] = {};
        if (j0 < 2) normal_f32_pair(b.x[0], b.x[1], z[0], z[1]);
        if (j0 < 2 ? count - o > 2 - j0 : true) normal_f32_pair(b.x[2], b.x[3], z[2], z[3]);
        for (unsigned j = j0; j < 4 && o < count; j++, o++) out[o] = z[j];
    }
}

/// Blocks block0 .. block0 + nblocks - 1 of randn_f32, 4 elements each, into out[0 .. 4 nblocks):
/// the bits of normal_f32_pair on philox_block, computed 8 blocks at a time as a structure of
/// arrays (each round on every lane in turn) so that the compiler vectorises it.
inline void randn_f32_blocks(std::uint64_t seed, std::uint64_t stream, std::uint64_t block0, std::size_t nblocks,
                             float* out) noexcept {
    TANDEM_RNG_NO_CONTRACT
    constexpr std::size_t L = 8;
    std::size_t done = 0;
    for (; done + L <= nblocks; done += L) {
        std::uint32_t x0[L], x1[L], x2[L], x3[L];
        for (std::size_t j = 0; j < L; ++j) {
            const std::uint64_t b = block0 + done + j;
            x0[j] = static_cast<std::uint32_t>(b);
            x1[j] = static_cast<std::uint32_t>(b >> 32);
            x2[j] = static_cast<std::uint32_t>(stream);
            x3[j] = static_cast<std::uint32_t>(stream >> 32);
        }
        std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
        for (int round = 0; round < 10; round++) {
            if (round > 0) {
                k0 += kPhiloxW0;
                k1 += kPhiloxW1;
            }
            for (std::size_t j = 0; j < L; ++j) philox_round(x0[j], x1[j], x2[j], x3[j], k0, k1);
        }
        float z0[L], z1[L], z2[L], z3[L];
        for (std::size_t j = 0; j < L; ++j) {
            normal_f32_pair(x0[j], x1[j], z0[j], z1[j]);
            normal_f32_pair(x2[j], x3[j], z2[j], z3[j]);
        }
        for (std::size_t j = 0; j < L; ++j) {
            float* o = out + 4 * (done + j);
            o[0] = z0[j];
            o[1] = z1[j];
            o[2] = z2[j];
            o[3] = z3[j];
        }
    }
    for (; done < nblocks; ++done) {
        const PhiloxBlock b = philox_block(seed, stream, block0 + done);
        float* o = out + 4 * done;
        normal_f32_pair(b.x[0], b.x[1], o[0], o[1]);
        normal_f32_pair(b.x[2], b.x[3], o[2], o[3]);
    }
}

/// Elements first .. first + count - 1 of randn_f32: whole blocks in the middle lane-parallel,
/// the partial blocks at the ends one by one.
inline void fill_randn_f32(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                           float* out) noexcept {
    const std::size_t head = static_cast<std::size_t>((4 - (first & 3)) & 3);
    if (count < head + 4) return fill_randn_f32_ends(seed, stream, first, count, out);
    fill_randn_f32_ends(seed, stream, first, head, out);
    const std::size_t blocks = (count - head) / 4, body = head + 4 * blocks;
    randn_f32_blocks(seed, stream, (first + head) / 4, blocks, out + head);
    fill_randn_f32_ends(seed, stream, first + body, count - body, out + body);
}

}  // namespace
}  // namespace tandem::detail

#undef TANDEM_RNG_NO_CONTRACT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
