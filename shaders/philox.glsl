// philox.glsl -- counter-based random numbers (Philox4x32-10) for rand / randn / randi in generated kernels.
//
// The GLSL twin of backends/cpu/philox.hpp, operation for operation: the same seed, stream and element index
// give the same bits here and on the CPU (tests/test_vulkan_philox.cpp checks every function). The bit layout
// and the algorithms are described at the top of philox.hpp; edit the two files together.
//
// Include after the #version line. Needs:
//   #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
//   SPIR-V capabilities Float64 and Int64 -- Vulkan features shaderFloat64 and shaderInt64.
// Rules the code relies on:
//  * Every floating-point temporary is `precise` (SPIR-V NoContraction): drivers may otherwise fuse a*b + c
//    into an fma or reassociate, and the CPU side does neither.
//  * Only + - * on floats and doubles (IEEE round-to-nearest on every Vulkan device of interest): no
//    division, no sqrt, no builtin exp/log/sin (their precision is the driver's), no fma().
//  * Conversions only of integers a float (< 2^24) or double (<= 2^53) holds exactly; constants by their bits.
//  * No f32 subnormal is ever produced (NVIDIA flushes them): see philox.hpp.
//
// Names: tdm_philox4x32_10(ctr, key) tdm_philox_block(seed, stream, block)
//        tdm_rand_f64 tdm_rand_f32 tdm_randn_f64 tdm_randn_f32 (seed, stream, i)  tdm_randi(seed, stream, i, lo, n)
//        whole blocks tdm_rand_f64x2 tdm_rand_f32x4 tdm_randn_f64x2 tdm_randn_f32x4 (seed, stream, block),
//        and the word-level tdm_rng_uniform_f64 / _f32, tdm_rng_randi, tdm_rng_normal_f64 / _f32 (and _pair).
// Internal helpers are prefixed tdm_rng_.

#ifndef TDM_PHILOX_GLSL
#define TDM_PHILOX_GLSL

uvec4 tdm_philox4x32_10(uvec4 c, uvec2 k) {
    for (int round = 0; round < 10; round++) {
        if (round > 0) k += uvec2(0x9E3779B9u, 0xBB67AE85u);
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// key = seed, counter = (block, stream), each split low word first
uvec4 tdm_philox_block(uint64_t seed, uint64_t stream, uint64_t block) {
    return tdm_philox4x32_10(uvec4(uint(block), uint(block >> 32), uint(stream), uint(stream >> 32)),
                             uvec2(uint(seed), uint(seed >> 32)));
}

// ---------------------------------------------------------------------------------------------------------
// Constants (bits as in philox.hpp)
// ---------------------------------------------------------------------------------------------------------
#define TDM_RNG_D(b) uint64BitsToDouble(b)
#define TDM_RNG_F(b) uintBitsToFloat(b)
#define TDM_RNG_LG1 TDM_RNG_D(0x3FE5555555555593UL)
#define TDM_RNG_LG2 TDM_RNG_D(0x3FD999999997FA04UL)
#define TDM_RNG_LG3 TDM_RNG_D(0x3FD2492494229359UL)
#define TDM_RNG_LG4 TDM_RNG_D(0x3FCC71C51D8E78AFUL)
#define TDM_RNG_LG5 TDM_RNG_D(0x3FC7466496CB03DEUL)
#define TDM_RNG_LG6 TDM_RNG_D(0x3FC39A09D078C69FUL)
#define TDM_RNG_LG7 TDM_RNG_D(0x3FC2F112DF3E5244UL)
#define TDM_RNG_LN2_HI TDM_RNG_D(0x3FE62E42FEE00000UL)
#define TDM_RNG_LN2_LO TDM_RNG_D(0x3DEA39EF35793C76UL)
#define TDM_RNG_SQRT2 TDM_RNG_D(0x3FF6A09E667F3BCDUL)
#define TDM_RNG_REC_A TDM_RNG_D(0x3FEF859FB1E833F6UL)
#define TDM_RNG_REC_B TDM_RNG_D(0x3FCE981385F30265UL)
#define TDM_RNG_S1 TDM_RNG_D(0xBFC5555555555549UL)
#define TDM_RNG_S2 TDM_RNG_D(0x3F8111111110F8A6UL)
#define TDM_RNG_S3 TDM_RNG_D(0xBF2A01A019C161D5UL)
#define TDM_RNG_S4 TDM_RNG_D(0x3EC71DE357B1FE7DUL)
#define TDM_RNG_S5 TDM_RNG_D(0xBE5AE5E68A2B9CEBUL)
#define TDM_RNG_S6 TDM_RNG_D(0x3DE5D93A5ACFD57CUL)
#define TDM_RNG_C1 TDM_RNG_D(0x3FA555555555554CUL)
#define TDM_RNG_C2 TDM_RNG_D(0xBF56C16C16C15177UL)
#define TDM_RNG_C3 TDM_RNG_D(0x3EFA01A019CB1590UL)
#define TDM_RNG_C4 TDM_RNG_D(0xBE927E4F809C52ADUL)
#define TDM_RNG_C5 TDM_RNG_D(0x3E21EE9EBDB4B1C4UL)
#define TDM_RNG_C6 TDM_RNG_D(0xBDA8FAE9BE8838D4UL)
#define TDM_RNG_PIO4_ULP53 TDM_RNG_D(0x3C9921FB54442D18UL)
#define TDM_RNG_TWO_M53 TDM_RNG_D(0x3CA0000000000000UL)
#define TDM_RNG_TWO_M54 TDM_RNG_D(0x3C90000000000000UL)
#define TDM_RNG_LNQ0F TDM_RNG_F(0x3F7FFFFDu)
#define TDM_RNG_LNQ1F TDM_RNG_F(0xBF2AAB7Au)
#define TDM_RNG_LNQ2F TDM_RNG_F(0x3F00024Du)
#define TDM_RNG_LNQ3F TDM_RNG_F(0xBECC6960u)
#define TDM_RNG_LNQ4F TDM_RNG_F(0x3EA9AE98u)
#define TDM_RNG_LNQ5F TDM_RNG_F(0xBE98C293u)
#define TDM_RNG_LNQ6F TDM_RNG_F(0x3E92824Fu)
#define TDM_RNG_LNQ7F TDM_RNG_F(0xBE32E3BCu)
#define TDM_RNG_LN2X2_HIF TDM_RNG_F(0x3FB17000u)
#define TDM_RNG_LN2X2_LOF TDM_RNG_F(0x3885FDF4u)
#define TDM_RNG_S1F TDM_RNG_F(0xBE2AAAA3u)
#define TDM_RNG_S2F TDM_RNG_F(0x3C08839Du)
#define TDM_RNG_S3F TDM_RNG_F(0xB94CA1F0u)
#define TDM_RNG_C1F TDM_RNG_F(0xBD2AAAA5u)
#define TDM_RNG_C2F TDM_RNG_F(0x3AB6061Au)
#define TDM_RNG_C3F TDM_RNG_F(0xB7CCF5CEu)
#define TDM_RNG_PIO4_ULP24F TDM_RNG_F(0x33490FDBu)
#define TDM_RNG_TWO_M24F TDM_RNG_F(0x33800000u)
#define TDM_RNG_TWO_M25F TDM_RNG_F(0x33000000u)

// ---------------------------------------------------------------------------------------------------------
// ln, sqrt, sin/cos kernels (philox.hpp's rng:: functions)
// ---------------------------------------------------------------------------------------------------------
double tdm_rng_log_parts(double M0, int E0) {
    precise double M = M0;
    int E = E0;
    if (M > TDM_RNG_SQRT2) {
        M = M * 0.5LF;
        E = E + 1;
    }
    precise double f = M - 1.0LF;
    precise double dd = 2.0LF + f;
    precise double r = TDM_RNG_REC_A - TDM_RNG_REC_B * dd;
    r = r * (2.0LF - dd * r);
    r = r * (2.0LF - dd * r);
    r = r * (2.0LF - dd * r);
    precise double s = f * r;
    precise double hfsq = 0.5LF * f * f;
    precise double z = s * s;
    precise double w = z * z;
    precise double t1 = w * (TDM_RNG_LG2 + w * (TDM_RNG_LG4 + w * TDM_RNG_LG6));
    precise double t2 = z * (TDM_RNG_LG1 + w * (TDM_RNG_LG3 + w * (TDM_RNG_LG5 + w * TDM_RNG_LG7)));
    precise double R = t2 + t1;
    precise double dk = double(E);
    precise double res = dk * TDM_RNG_LN2_HI - ((hfsq - (s * (hfsq + R) + dk * TDM_RNG_LN2_LO)) - f);
    return res;
}

double tdm_rng_sqrt_pos(double x) {
    precise double y = uint64BitsToDouble(0x5FE6EB50C7B537A9UL - (doubleBitsToUint64(x) >> 1));
    precise double h = 0.5LF * x;
    y = y * (1.5LF - h * (y * y));
    y = y * (1.5LF - h * (y * y));
    y = y * (1.5LF - h * (y * y));
    precise double s = x * y;
    precise double res = s + (x - s * s) * (0.5LF * y);
    return res;
}

float tdm_rng_sqrt_pos_f(float x) {
    precise float y = uintBitsToFloat(0x5F375A86u - (floatBitsToUint(x) >> 1));
    precise float h = 0.5 * x;
    y = y * (1.5 - (h * y) * y);
    y = y * (1.5 - (h * y) * y);
    precise float s = x * y;
    precise float res = s + (x - s * s) * (0.5 * y);
    return res;
}

double tdm_rng_sincos_kernel(double x, bool use_sin) {
    precise double z = x * x;
    precise double p = use_sin ? TDM_RNG_S6 : TDM_RNG_C6;
    p = p * z + (use_sin ? TDM_RNG_S5 : TDM_RNG_C5);
    p = p * z + (use_sin ? TDM_RNG_S4 : TDM_RNG_C4);
    p = p * z + (use_sin ? TDM_RNG_S3 : TDM_RNG_C3);
    p = p * z + (use_sin ? TDM_RNG_S2 : TDM_RNG_C2);
    p = p * z + (use_sin ? TDM_RNG_S1 : TDM_RNG_C1);
    precise double c = 1.0LF - 0.5LF * z;
    precise double xz = x * z;
    precise double zz = z * z;
    precise double a = use_sin ? x : c;
    precise double m = use_sin ? xz : zz;
    precise double res = a + m * p;
    return res;
}

// -2 ln(v 2^-32) for a float v in [1, 2^32] (philox.hpp's rng::neg2ln_f32)
float tdm_rng_neg2ln_f(float v) {
    uint ix = floatBitsToUint(v) + 0x004AFB0Du;
    int kneg = 159 - int(ix >> 23);
    precise float M = uintBitsToFloat((ix & 0x007FFFFFu) + 0x3F3504F3u);
    precise float fm = M - 1.0;
    precise float q = TDM_RNG_LNQ7F;
    q = q * fm + TDM_RNG_LNQ6F;
    q = q * fm + TDM_RNG_LNQ5F;
    q = q * fm + TDM_RNG_LNQ4F;
    q = q * fm + TDM_RNG_LNQ3F;
    q = q * fm + TDM_RNG_LNQ2F;
    q = q * fm + TDM_RNG_LNQ1F;
    q = q * fm + TDM_RNG_LNQ0F;
    precise float t = -2.0 * fm + fm * (fm * q);
    precise float kf = float(kneg);
    precise float res = kf * TDM_RNG_LN2X2_HIF + (t + kf * TDM_RNG_LN2X2_LOF);
    return res;
}

// sin x and cos x for x in (0, pi/4] (rng::sincos_f32)
vec2 tdm_rng_sincos_f(float x) {
    precise float z = x * x;
    precise float ps = (TDM_RNG_S3F * z + TDM_RNG_S2F) * z + TDM_RNG_S1F;
    precise float s = x + (x * z) * ps;
    precise float pc = ((TDM_RNG_C3F * z + TDM_RNG_C2F) * z + TDM_RNG_C1F) * z + 0.5;
    precise float c = 1.0 - z * pc;
    return vec2(s, c);
}

// ---------------------------------------------------------------------------------------------------------
// From Philox words to values
// ---------------------------------------------------------------------------------------------------------
double tdm_rng_uniform_f64(uint lo, uint hi) {
    uint64_t m = ((uint64_t(hi) << 32) | uint64_t(lo)) >> 11;
    precise double u = double(m) * TDM_RNG_TWO_M53;
    return m != 0UL ? u : TDM_RNG_TWO_M54;
}

float tdm_rng_uniform_f32(uint w) {
    uint m = w >> 8;
    precise float u = float(m) * TDM_RNG_TWO_M24F;
    return m != 0u ? u : TDM_RNG_TWO_M25F;
}

int64_t tdm_rng_randi(uint lo_bits, uint hi_bits, int64_t lo, uint64_t n) {
    uint64_t r = (uint64_t(hi_bits) << 32) | uint64_t(lo_bits);
    uint64_t v;
    if (n == 0UL) {
        v = r;
    } else {
        uint64_t r0 = r & 0xFFFFFFFFUL, r1 = r >> 32, n0 = n & 0xFFFFFFFFUL, n1 = n >> 32;
        uint64_t p00 = r0 * n0, p01 = r0 * n1, p10 = r1 * n0, p11 = r1 * n1;
        uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFUL) + (p10 & 0xFFFFFFFFUL);
        v = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    }
    return int64_t(uint64_t(lo) + v);
}

// Box-Muller's radius sqrt(-2 ln u1) from the radius bits (f64).
double tdm_rng_radius_f64(uint64_t ra) {
    const uint64_t two53 = 1UL << 53;
    uint64_t n = two53 - (ra >> 11);
    precise double radius = 0.0LF;
    if (n != two53) {
        uint64_t nb = doubleBitsToUint64(double(n));
        int E = int(nb >> 52) - 1023 - 53;
        double M = uint64BitsToDouble((nb & 0x000FFFFFFFFFFFFFUL) | 0x3FF0000000000000UL);
        precise double x = -2.0LF * tdm_rng_log_parts(M, E);
        radius = tdm_rng_sqrt_pos(x);
    }
    return radius;
}

// Both normals of a block (elements 2b, 2b + 1): the radius, (cos x, sin x) for x in (0, pi/4), and the D4 step
// (swap by bit 63 of the angle bits, negate each by bits 62 and 61).
dvec2 tdm_rng_normal_f64_pair(uvec4 b) {
    uint64_t ra = (uint64_t(b.y) << 32) | uint64_t(b.x);
    uint64_t rb = (uint64_t(b.w) << 32) | uint64_t(b.z);
    precise double radius = tdm_rng_radius_f64(ra);
    uint64_t k = (rb | 1UL) & ((1UL << 53) - 1UL);
    precise double x = double(k) * TDM_RNG_PIO4_ULP53;
    precise double s = tdm_rng_sincos_kernel(x, true);
    precise double c = tdm_rng_sincos_kernel(x, false);
    bool swap = (b.w >> 31) != 0u;
    precise double va = radius * (swap ? s : c);
    precise double vb = radius * (swap ? c : s);
    uvec2 ua = unpackDouble2x32(va), ub = unpackDouble2x32(vb);
    ua.y ^= (b.w << 1) & 0x80000000u;
    ub.y ^= (b.w << 2) & 0x80000000u;
    return dvec2(packDouble2x32(ua), packDouble2x32(ub));
}

double tdm_rng_normal_f64(uvec4 b, bool sine) {
    dvec2 z = tdm_rng_normal_f64_pair(b);
    return sine ? z.y : z.x;
}

// Both normals of two words (rng::normal_f32_pair): radius word wr, angle word wa.
vec2 tdm_rng_normal_f32_pair(uint wr, uint wa) {
    uint nn = ~wr;
    precise float v = float(nn >> 8) * 256.0 + float((nn & 0xFFu) + 1u);
    precise float radius = tdm_rng_sqrt_pos_f(tdm_rng_neg2ln_f(v));
    precise float x = float((wa | 1u) & 0x00FFFFFFu) * TDM_RNG_PIO4_ULP24F;
    precise vec2 sc = tdm_rng_sincos_f(x);
    bool swap = (wa >> 31) != 0u;
    precise float va = radius * (swap ? sc.x : sc.y);
    precise float vb = radius * (swap ? sc.y : sc.x);
    return vec2(uintBitsToFloat(floatBitsToUint(va) ^ ((wa << 1) & 0x80000000u)),
                uintBitsToFloat(floatBitsToUint(vb) ^ ((wa << 2) & 0x80000000u)));
}

float tdm_rng_normal_f32(uint wr, uint wa, bool sine) {
    vec2 z = tdm_rng_normal_f32_pair(wr, wa);
    return sine ? z.y : z.x;
}

// ---------------------------------------------------------------------------------------------------------
// Element functions: element i of the stream (seed, stream)
// ---------------------------------------------------------------------------------------------------------
double tdm_rand_f64(uint64_t seed, uint64_t stream, uint64_t i) {
    uvec4 b = tdm_philox_block(seed, stream, i >> 1);
    return (i & 1UL) == 0UL ? tdm_rng_uniform_f64(b.x, b.y) : tdm_rng_uniform_f64(b.z, b.w);
}

float tdm_rand_f32(uint64_t seed, uint64_t stream, uint64_t i) {
    uvec4 b = tdm_philox_block(seed, stream, i >> 2);
    return tdm_rng_uniform_f32(b[uint(i & 3UL)]);
}

// Uniform integer in [lo, lo + n - 1] (n = hi - lo + 1; n = 0: the whole 64-bit range).
int64_t tdm_randi(uint64_t seed, uint64_t stream, uint64_t i, int64_t lo, uint64_t n) {
    uvec4 b = tdm_philox_block(seed, stream, i >> 1);
    return (i & 1UL) == 0UL ? tdm_rng_randi(b.x, b.y, lo, n) : tdm_rng_randi(b.z, b.w, lo, n);
}

double tdm_randn_f64(uint64_t seed, uint64_t stream, uint64_t i) {
    return tdm_rng_normal_f64(tdm_philox_block(seed, stream, i >> 1), (i & 1UL) != 0UL);
}

float tdm_randn_f32(uint64_t seed, uint64_t stream, uint64_t i) {
    uvec4 b = tdm_philox_block(seed, stream, i >> 2);
    bool second = (i & 2UL) != 0UL;
    return tdm_rng_normal_f32(second ? b.z : b.x, second ? b.w : b.y, (i & 1UL) != 0UL);
}

// ---------------------------------------------------------------------------------------------------------
// Whole blocks, for generator kernels that write every element of a block from one thread (one Philox
// call per 2 or 4 elements, the log and sqrt shared by a normal pair): elements kPerBlock*block + 0, 1, ...
// The bits of the element functions.
// ---------------------------------------------------------------------------------------------------------
dvec2 tdm_rand_f64x2(uint64_t seed, uint64_t stream, uint64_t block) {
    uvec4 b = tdm_philox_block(seed, stream, block);
    return dvec2(tdm_rng_uniform_f64(b.x, b.y), tdm_rng_uniform_f64(b.z, b.w));
}

vec4 tdm_rand_f32x4(uint64_t seed, uint64_t stream, uint64_t block) {
    uvec4 b = tdm_philox_block(seed, stream, block);
    return vec4(tdm_rng_uniform_f32(b.x), tdm_rng_uniform_f32(b.y), tdm_rng_uniform_f32(b.z), tdm_rng_uniform_f32(b.w));
}

dvec2 tdm_randn_f64x2(uint64_t seed, uint64_t stream, uint64_t block) {
    return tdm_rng_normal_f64_pair(tdm_philox_block(seed, stream, block));
}

vec4 tdm_randn_f32x4(uint64_t seed, uint64_t stream, uint64_t block) {
    uvec4 b = tdm_philox_block(seed, stream, block);
    return vec4(tdm_rng_normal_f32_pair(b.x, b.y), tdm_rng_normal_f32_pair(b.z, b.w));
}

#endif
