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
// | randn_f64    | 2 | b = i/2; Box-Muller on all 128 bits: even i R cos(theta), odd i R sin(theta)       |
// | randn_f32    | 4 | b = i/4; pair p = j/2 uses x[2p] (radius), x[2p+1] (angle); even i cos, odd i sin |
//
// randi: the multiply-shift map of 64 random bits to [0, n) (Lemire's, without the rejection step, so
// that every element costs the same): value v has probability floor(2^64/n)/2^64 or ceil(2^64/n)/2^64,
// a relative bias below n / 2^64 (< 2.4e-10 for n <= 2^32, < 5e-4 for n = 2^53, the largest a double
// holds exactly). n = 0 (the full 64-bit range, hi - lo + 1 wrapped) gives lo + r.
//
// randn (Box-Muller): radius R = sqrt(-2 ln u1), angle theta = 2 pi u2.
//  * f64: u1 = n 2^-53 with n = 2^53 - (ra >> 11) in [1, 2^53] (ra = x1 2^32 + x0), so u1 in
//    [2^-53, 1] and |z| <= 8.58; u1 = 1 gives R = 0. The angle's 64 bits rb = x3 2^32 + x2: octant
//    o = rb >> 61, k = (rb >> 8) mod 2^53, theta = (o + k 2^-53) pi/4.
//  * f32: u1 = n 2^-32 with n = 2^32 - x[2p] in [1, 2^32], n truncated to its 24 leading bits (u1 in
//    [2^-32, 1], |z| <= 6.66); the angle word a = x[2p+1]: o = a >> 29, k = (a >> 5) mod 2^24,
//    theta = (o + k 2^-24) pi/4. The f32 path is float arithmetic throughout (GPU throughput).
//  Every operation is an IEEE basic operation (+ - *, each correctly rounded, never fused) on values
//  built exactly from the bits, so that C++ and GLSL agree bit for bit; nothing calls a libm:
//  * ln u1: u1 = M 2^E exactly (M in [sqrt(1/2), sqrt(2))), ln M = f - f^2/2 + s (f^2/2 + R(s^2)) with
//    f = M - 1, s = f / (2 + f) (FreeBSD's e_log.c / e_logf.c, coefficients Lg1..Lg7 / Lg1..Lg4), the
//    division replaced by a linear first guess of 1/(2 + f) and Newton steps r (2 - d r) (3 for f64,
//    2 for f32: relative error 2.5e-15 / 5e-8 in s, which only feeds the small correction term).
//  * sqrt x: y = 1/sqrt(x) from the bit-pattern first guess (0x5FE6EB50C7B537A9 / 0x5F375A86 minus half
//    the bits, within 3.5%) and Newton steps y (1.5 - (x/2) y^2) (3 for f64, 2 for f32: 4e-11 / 5e-6),
//    then s = x y and one Newton step on the square root itself, s + (x - s s) (y/2) (x - s s is exact).
//  * cos and sin of theta: the octant is exact (integer bits); in octant o the angle is
//    x = k 2^-53 pi/4 (o even) or x = (2^53 - k) 2^-53 pi/4 (o odd, the reflection done on the integer),
//    x in [0, pi/4], and sin x, cos x are fdlibm's kernel polynomials (S1..S6, C1..C6; f32: Taylor to
//    x^9 / x^10), with the signs and the sin/cos swap of the octant.
//  Accuracy (tests/test_philox.cpp measures it against libm): ln within 2 ulp, sqrt, sin, cos within 1 ulp;
//  z within 1e-15 (f64) / 7e-7 (f32) of the exact Box-Muller transform of the same u1, u2.
//  No intermediate of the f32 path is subnormal (NVIDIA flushes them): |s| >= 2^-25, s^4 >= 2^-100,
//  x >= 2^-24 pi/4.
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
constexpr PhiloxBlock philox4x32_10(PhiloxBlock c, std::uint32_t k0, std::uint32_t k1) noexcept {
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += kPhiloxW0;
            k1 += kPhiloxW1;
        }
        const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * c.x[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * c.x[2];
        c = PhiloxBlock{{static_cast<std::uint32_t>(p1 >> 32) ^ c.x[1] ^ k0, static_cast<std::uint32_t>(p1),
                         static_cast<std::uint32_t>(p0 >> 32) ^ c.x[3] ^ k1, static_cast<std::uint32_t>(p0)}};
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
constexpr double d(std::uint64_t b) noexcept { return std::bit_cast<double>(b); }
constexpr float f(std::uint32_t b) noexcept { return std::bit_cast<float>(b); }

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
// f32
inline constexpr float kLg1f = f(0x3F2AAAAA), kLg2f = f(0x3ECCCE13), kLg3f = f(0x3E91E9EE), kLg4f = f(0x3E789E26);
inline constexpr float kLn2Hif = f(0x3F317180), kLn2Lof = f(0x3717F7D1);
inline constexpr float kSqrt2f = f(0x3FB504F3);
inline constexpr float kRecAf = f(0x3F7C2CFE), kRecBf = f(0x3E74C09C);
inline constexpr float kS1f = f(0xBE2AAAAB), kS2f = f(0x3C088889), kS3f = f(0xB9500D01), kS4f = f(0x3638EF1D);
inline constexpr float kC1f = f(0x3D2AAAAB), kC2f = f(0xBAB60B61), kC3f = f(0x37D00D01), kC4f = f(0xB493F27E);
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

inline float log_parts(float M, int E) noexcept {
    TANDEM_RNG_NO_CONTRACT
    if (M > kSqrt2f) {
        M = M * 0.5f;
        E = E + 1;
    }
    const float f = M - 1.0f;
    const float dd = 2.0f + f;
    float r = kRecAf - kRecBf * dd;
    r = r * (2.0f - dd * r);
    r = r * (2.0f - dd * r);
    const float s = f * r;
    const float hfsq = 0.5f * f * f;
    const float z = s * s;
    const float w = z * z;
    const float t1 = w * (kLg2f + w * kLg4f);
    const float t2 = z * (kLg1f + w * kLg3f);
    const float R = t2 + t1;
    const float dk = static_cast<float>(E);
    return dk * kLn2Hif - ((hfsq - (s * (hfsq + R) + dk * kLn2Lof)) - f);
}

/// sqrt(x) for normal x > 0 (within 1 ulp): 1/sqrt(x) from the bits and Newton steps, then one step on sqrt.
inline double sqrt_pos(double x) noexcept {
    TANDEM_RNG_NO_CONTRACT
    double y = std::bit_cast<double>(0x5FE6EB50C7B537A9ull - (std::bit_cast<std::uint64_t>(x) >> 1));
    const double h = 0.5 * x;
    y = y * (1.5 - h * (y * y));
    y = y * (1.5 - h * (y * y));
    y = y * (1.5 - h * (y * y));
    const double s = x * y;
    return s + (x - s * s) * (0.5 * y);  // x - s*s is exact (Sterbenz): one Newton step on sqrt
}

inline float sqrt_pos(float x) noexcept {
    TANDEM_RNG_NO_CONTRACT
    float y = std::bit_cast<float>(0x5F375A86u - (std::bit_cast<std::uint32_t>(x) >> 1));
    const float h = 0.5f * x;
    y = y * (1.5f - h * (y * y));
    y = y * (1.5f - h * (y * y));
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

inline float sincos_kernel(float x, bool use_sin) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const float z = x * x;
    float p = use_sin ? kS4f : kC4f;
    p = p * z + (use_sin ? kS3f : kC3f);
    p = p * z + (use_sin ? kS2f : kC2f);
    p = p * z + (use_sin ? kS1f : kC1f);
    const float a = use_sin ? x : 1.0f - 0.5f * z;
    const float m = use_sin ? x * z : z * z;
    return a + m * p;
}

/// Octant bookkeeping of Box-Muller's angle theta = (o + t) pi/4: which kernel (sin or cos of the
/// reduced x) gives cos theta (sine = false) or sin theta (sine = true), and its sign.
///   o even: phi = theta - q pi/2 = x;        sin phi = sin x, cos phi = cos x
///   o odd:  phi = pi/2 - x;                  sin phi = cos x, cos phi = sin x
///   quadrant q = o/2: (cos, sin) theta = (c, s), (-s, c), (-c, -s), (s, -c) of phi
struct Octant {
    bool use_sin;
    bool negate;
};
constexpr Octant octant(unsigned o, bool sine) noexcept {
    const unsigned q = o >> 1;
    const bool sin_phi = sine ? (q & 1u) == 0 : (q & 1u) != 0;
    const bool use_sin = sin_phi != ((o & 1u) != 0);
    const bool negate = sine ? q >= 2 : (q == 1 || q == 2);
    return Octant{use_sin, negate};
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

/// Standard normal (f64) from a whole block: Box-Muller, cos (sine = false) or sin (sine = true).
inline double normal_f64_from(const PhiloxBlock& b, bool sine) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const std::uint64_t ra = (static_cast<std::uint64_t>(b.x[1]) << 32) | b.x[0];
    const std::uint64_t rb = (static_cast<std::uint64_t>(b.x[3]) << 32) | b.x[2];
    constexpr std::uint64_t two53 = std::uint64_t{1} << 53;
    const std::uint64_t n = two53 - (ra >> 11);  // u1 = n 2^-53 in [2^-53, 1]
    double radius = 0.0;
    if (n != two53) {
        const std::uint64_t nb = std::bit_cast<std::uint64_t>(static_cast<double>(n));  // exact
        const int E = static_cast<int>(nb >> 52) - 1023 - 53;
        const double M = std::bit_cast<double>((nb & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
        const double x = -2.0 * rng::log_parts(M, E);  // > 0, >= 2^-52
        radius = rng::sqrt_pos(x);
    }
    const unsigned o = static_cast<unsigned>(rb >> 61);
    std::uint64_t k = (rb >> 8) & (two53 - 1);
    if ((o & 1u) != 0) k = two53 - k;
    const double x = static_cast<double>(k) * rng::kPio4Ulp53;  // [0, pi/4]
    const rng::Octant oc = rng::octant(o, sine);
    const double v = radius * rng::sincos_kernel(x, oc.use_sin);
    return oc.negate ? -v : v;
}

/// Standard normal (f32) from two words: radius word wr, angle word wa.
inline float normal_f32_from(std::uint32_t wr, std::uint32_t wa, bool sine) noexcept {
    TANDEM_RNG_NO_CONTRACT
    const std::uint32_t n = 0u - wr;  // u1 = n 2^-32 in [2^-32, 1]; n = 0 stands for 2^32 (u1 = 1)
    float radius = 0.0f;
    if (n != 0) {
        const int msb = std::bit_width(n) - 1;
        const int sh = msb > 23 ? msb - 23 : 0;
        const std::uint32_t nb = std::bit_cast<std::uint32_t>(static_cast<float>(n >> sh));  // exact: < 2^24
        const int E = static_cast<int>(nb >> 23) - 127 + sh - 32;
        const float M = std::bit_cast<float>((nb & 0x007FFFFFu) | 0x3F800000u);
        const float x = -2.0f * rng::log_parts(M, E);  // > 0, >= 2^-24
        radius = rng::sqrt_pos(x);
    }
    const unsigned o = wa >> 29;
    std::uint32_t k = (wa >> 5) & 0x00FFFFFFu;
    if ((o & 1u) != 0) k = 0x01000000u - k;
    const float x = static_cast<float>(k) * rng::kPio4Ulp24f;  // [0, pi/4]; k <= 2^24 exact
    const rng::Octant oc = rng::octant(o, sine);
    const float v = radius * rng::sincos_kernel(x, oc.use_sin);
    return oc.negate ? -v : v;
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
        for (unsigned j = static_cast<unsigned>(i & 1); j < 2 && o < count; j++, o++) out[o] = normal_f64_from(b, j != 0);
    }
}

inline void fill_randn_f32(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
                           float* out) noexcept {
    for (std::size_t o = 0; o < count;) {
        const std::uint64_t i = first + o;
        const PhiloxBlock b = philox_block(seed, stream, i >> 2);
        for (unsigned j = static_cast<unsigned>(i & 3); j < 4 && o < count; j++, o++)
            out[o] = normal_f32_from(b.x[2 * (j >> 1)], b.x[2 * (j >> 1) + 1], (j & 1) != 0);
    }
}

}  // namespace tandem::detail

#undef TANDEM_RNG_NO_CONTRACT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
