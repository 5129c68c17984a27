// math_f32.glsl -- single-precision elementary functions for Tandem's generated compute shaders.
//
// No GLSL builtin is used: their results are the driver's (measured on lavapipe, Mesa llvmpipe, LLVM 15: exp
// 64 ulp, log/log2 millions of ulp near 1, sin/cos/tan wrong for |x| > ~1e5, asin/acos ~4000 ulp, atan 347
// ulp and atan(NaN) = 0, sinh/cosh overflow early, pow/tanh/atan2 beyond 4 ulp), and the CPU runs this same
// file (translated to C++) to give the same bits, which a builtin would break wherever it is used.
//
// Own path: exp is float-native (Cody-Waite in float, degree-7 polynomial, < 1.1 ulp); log, sin, cos, tanh are
// computed in plain double with short polynomials and rounded once to float (<= 0.5 ulp + 1e-4 from exact);
// the inputs outside their fast ranges (NaN, Inf, huge sin/cos arguments, overflow edges) and every other
// function go through the f64 library (math_f64.glsl, included here) and are rounded once to float (the f64
// result is within ~0.8 ulp of double, so the float result is correctly rounded except in rare
// double-rounding cases). Exhaustive check on the H100 (all 2^32 floats vs glibc 2.39): exp/log/sin/cos max
// 1 ulp, tanh max 2 ulp (glibc's tanhf is itself 2 ulp off), no special-value mismatch. tdm_divf is the
// correctly rounded f32 division (bit-identical to IEEE float division). Float-only sin/cos (Cody-Waite
// with a 4-part pi/2, TwoSum-compensated) and division (Dekker residuals) were written and measured accurate
// (max 1 ulp / bit-exact on lavapipe and the H100) but made the fp32 8-op chain slower on the H100 (1.03 ->
// 1.14 -> 1.49 ms GPU time at 2^28): the double-precision code is cheaper there than their many `precise`
// fp32 operations, so they are not kept; a device without shaderFloat64 would need them. This needs the f64 requirements
// (shaderFloat64, shaderInt64, GL_EXT_shader_explicit_arithmetic_types_int64).
// fp32 denormals: NVIDIA's Vulkan driver flushes them in fp32 arithmetic (and in the f32->f64 conversion of
// an input); every f32 function that goes through f64 converts with tdm_f32_to_f64 / tdm_f64_to_f32 (exact
// for subnormal inputs and correctly rounded subnormal results, built from the bits), log decodes subnormal
// inputs from the bits, sin and tanh return tiny x as is: all give glibc's subnormal results there (H100:
// mathtest --f32, all 19 functions, 0 special mismatches).

// Include after math_f64.glsl (same #version/#extension requirements).

#ifndef TDM_MATH_F32_GLSL
#define TDM_MATH_F32_GLSL

#ifndef TDM_MATH_F64_GLSL
#error "math_f32.glsl: paste math_f64.glsl before this file (its own paths call the f64 functions)"
#endif
#ifndef TDM_CONVERT_F32_GLSL
#error "math_f32.glsl: paste convert_f32.glsl before this file (exact float<->double conversions)"
#endif

// The fast paths below (tdm_f32_*_fast) are branch-free and return NaN where they do not apply; the
// function proper takes its other path for those. The CPU runs the fast paths over whole blocks in vector
// registers (the C++ translation), so their operations must stay plain: selects, no loops, no early return.
float tdm_f32_nan() { return uintBitsToFloat(0x7FC00000u); }
bool tdm_f32_isnan(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
// roundEven(x) for |x| < 2^22 by two IEEE additions, as tdm_f64_round_even.
float tdm_f32_round_even(float x) {
    precise float t = x + 12582912.0f;               // 1.5 * 2^23
    precise float r = t - 12582912.0f;
    return r;
}


// Float-native exp for -103.9 < x < 88.7: Cody-Waite r = x - k ln2 with ln2 = LN2HI + LN2LO (LN2HI has 15
// bits, so k*LN2HI and x - k*LN2HI are exact), Taylor to r^7 (truncation < 2^-27 on |r| <= ln2/2), then 2^k
// in two exact factors for k in [-125, 128] (one rounding in all); subnormal results (k < -125) are scaled in
// double and rounded twice (< 1.5 ulp). Measured < 1.03 ulp from exact. x < -104 gives 0 (exp x < 2^-150);
// the rest (NaN, +Inf, the overflow edge, the last underflow band) goes through the f64 exp.
// exp(x) = 2^k e for -104 < x < 88.7: the reduction and polynomial of expf (e in [0.7, 1.42]); branch-free
// (the name's _fast: always inlined into the CPU's vector loops).
float tdm_f32_exp_core_fast(float x, out int k) {
    float kf = tdm_f32_round_even(x * 1.44269502162933349609f);
    // precise: without it the H100 driver gave 5-ulp errors (as if kf*LN2HI + kf*LN2LO were folded into
    // kf*float(ln2))
    precise float hi = x - kf * 0.693145751953125f;  // exact
    precise float r = hi - kf * 1.42860682030941723212e-06f;
    float p = 1.98412698412698413e-04f;
    p = p * r + 1.38888888888888894e-03f;
    p = p * r + 8.33333333333333322e-03f;
    p = p * r + 4.16666666666666644e-02f;
    p = p * r + 1.66666666666666657e-01f;
    p = p * r + 0.5f;
    k = int(kf);
    return 1.0f + (r + (r * r) * p);
}
// Fast path of expf: -86.5 < x < 88.7 (k >= -125: normal results, scaled by two exact float factors).
float tdm_f32_exp_fast(float x) {
    bool ok = x > -86.5f && x < 88.7f;               // false for NaN
    int k;
    float e = tdm_f32_exp_core_fast(ok ? x : 0.0f, k);
    int k1 = k >> 1;                                 // k = 128 needs two factors
    float v = (e * intBitsToFloat((k1 + 127) << 23)) * intBitsToFloat((k - k1 + 127) << 23);
    return ok ? v : tdm_f32_nan();
}
float tdm_expf(float x) {
    float v = tdm_f32_exp_fast(x);
    if (!tdm_f32_isnan(v)) return v;
    if (x > -103.9f && x < 88.7f) {
        // Subnormal results, scaled in double: float multiplies would flush them to 0 on devices that
        // flush fp32 denormals (NVIDIA does in Vulkan; the f64->f32 conversion keeps them there).
        int k;
        float e = tdm_f32_exp_core_fast(x, k);
        return tdm_f64_to_f32(double(e) * tdm_f64_pow2i(k));
    }
    if (x < -104.0f) return 0.0f;                   // also -Inf
    return tdm_f64_to_f32(tdm_exp(tdm_f32_to_f64(x)));
}
float tdm_expm1f(float x) {
    return tdm_f64_to_f32(tdm_expm1(tdm_f32_to_f64(x)));        // no GLSL builtin
}
// log of a positive finite float (its bits bi in (0, 0x7F800000)) in plain double: every such float
// (subnormals included) is a normal double, x = 2^k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)),
// s = f/(2+f) (|s| <= 0.1716), log(1+f) = 2s + s z (2/3 + 2/5 z + ... + 2/15 z^6), z = s^2: truncation
// < 2e-12 relative. Subnormal inputs are decoded from their bits, so they work even where the device
// flushes fp32 denormals (it would see a subnormal x as 0 in a comparison or a conversion).
double tdm_f32_log_d(float x, int bi) {
    double xd = bi < 0x00800000 ? double(bi) * 1.4012984643248171e-45LF : double(x);   // 2^-149
    int64_t b = doubleBitsToInt64(xd);
    int k = int(b >> 52) - 1023;
    double m = int64BitsToDouble((b & 0x000FFFFFFFFFFFFFL) | 0x3FF0000000000000L);
    bool high = m > 1.4142135623730951LF;
    m = high ? m * 0.5LF : m;
    k = high ? k + 1 : k;
    double f = m - 1.0LF;                        // exact
    // s = f / (2 + f) without an f64 division (a long sequence on GPUs): 1/d for d in [1.70, 2.42]
    // from its minimax line (relative error 0.0155) and three Newton steps in double (each squares
    // it: < 2^-47). Not the device's f32 reciprocal as a seed: its bits are the driver's (Vulkan
    // allows 2.5 ulp), and the result must be the CPU's, bit for bit.
    double d = 2.0LF + f;
    double rd = 0.98592897482530880LF - 0.23930314922944387LF * d;
    rd = rd * (2.0LF - d * rd);
    rd = rd * (2.0LF - d * rd);
    rd = rd * (2.0LF - d * rd);
    double s = f * rd;
    double z = s * s;
    double p = 1.33333333333333333e-01LF;        // 2/15
    p = p * z + 1.53846153846153846e-01LF;       // 2/13
    p = p * z + 1.81818181818181818e-01LF;       // 2/11
    p = p * z + 2.22222222222222222e-01LF;       // 2/9
    p = p * z + 2.85714285714285714e-01LF;       // 2/7
    p = p * z + 4.00000000000000000e-01LF;       // 2/5
    p = p * z + 6.66666666666666667e-01LF;       // 2/3
    return double(k) * 6.93147180559945286e-01LF + (2.0LF * s + (s * z) * p);
}
// Fast path of logf: +subnormal .. FLT_MAX (by the bits).
float tdm_f32_log_fast(float x) {
    int bi = floatBitsToInt(x);
    bool ok = bi > 0 && bi < 0x7F800000;
    float v = float(tdm_f32_log_d(ok ? x : 1.0f, ok ? bi : 0x3F800000));
    return ok ? v : tdm_f32_nan();
}
// log of a float: tdm_f32_log_d rounded once to float. 0, negatives, +Inf and NaN go through the f64 log.
float tdm_logf(float x) {
    float v = tdm_f32_log_fast(x);
    if (!tdm_f32_isnan(v)) return v;
    int bi = floatBitsToInt(x);
    if (bi < 0 && (bi & 0x7FFFFFFF) != 0) return uintBitsToFloat(0x7FC00000u);   // x < 0 (subnormal too), NaN
    return tdm_f64_to_f32(tdm_log(tdm_f32_to_f64(x)));
}
float tdm_log2f(float x) {
    return tdm_f64_to_f32(tdm_log2(tdm_f32_to_f64(x)));
}
float tdm_log10f(float x) {
    return tdm_f64_to_f32(tdm_log10(tdm_f32_to_f64(x)));        // no GLSL builtin
}
float tdm_log1pf(float x) {
    return tdm_f64_to_f32(tdm_log1p(tdm_f32_to_f64(x)));        // no GLSL builtin
}
// sin/cos of a float: for |x| < 1647099 (k < 2^20) r = x - k pi/2 in double with
// pi/2 = P1 + P1T (P1 33 bits: k*P1 and x - k*P1 exact), absolute error < 2^-65; the float closest to a multiple
// of pi/2 in that range (found by trying all of them) is x = 252.898209 with |r| = 2^-27.8, so r is always good
// to 2^-37 relative; Taylor polynomials in double (relative error < 1e-11) rounded once to float (<= 0.5 ulp +
// 1e-4). Larger |x|, NaN and +-Inf use the f64 library (Payne-Hanek).
// The double path's polynomials: sin r (Taylor to r^13) and cos r (Taylor to r^12) for |r| <= pi/4. Two
// polynomials behind a branch: on the H100 this measured faster than one polynomial with selected coefficients
// (the f64 kernel's choice), the selects of double constants costing more than the divergence.
double tdm_f32_sin_poly(double r) {
    double z = r * r;
    double p = 1.60590438368216133e-10LF;
    p = p * z - 2.50521083854417202e-08LF;
    p = p * z + 2.75573192239858925e-06LF;
    p = p * z - 1.98412698412698413e-04LF;
    p = p * z + 8.33333333333333322e-03LF;
    p = p * z - 1.66666666666666657e-01LF;
    return r + (r * z) * p;
}
double tdm_f32_cos_poly(double r) {
    double z = r * r;
    double p = 2.08767569878681002e-09LF;
    p = p * z - 2.75573192239858883e-07LF;
    p = p * z + 2.48015873015873016e-05LF;
    p = p * z - 1.38888888888888894e-03LF;
    p = p * z + 4.16666666666666644e-02LF;
    p = p * z - 0.5LF;
    return 1.0LF + z * p;
}
// x = q pi/2 + r for |x| < 1647099; |x| <= pi/4 gives r = x exactly (keeps -0).
double tdm_f32_rem_pio2(float x, out int q) {
    double xd = double(x);
    double kd = tdm_f64_round_even(xd * 6.36619772367581382e-01LF);
    // precise: without it the H100 driver gave 4000-ulp errors near k pi/2 (as if kd*P1 + kd*P1T were folded
    // into kd*double(pi/2))
    precise double t = xd - kd * 1.57079632673412561e+00LF;   // exact
    precise double r = t - kd * 6.077100506506192e-11LF;
    bool small = abs(x) <= 0.785398163f;
    q = small ? 0 : int(kd) & 3;
    return small ? xd : r;
}
// Fast path of sinf (cosine false) and cosf: |x| < 1647099 (not NaN, +-Inf).
float tdm_f32_sincos_fast(float x, bool cosine) {
    float a = abs(x);
    bool ok = a < 1647099.0f;
    float xc = ok ? x : 0.0f;
    int q;
    double r = tdm_f32_rem_pio2(xc, q);
    int qc = cosine ? q + 1 : q;                     // cos x = sin(x + pi/2); int tests as in tdm_f64_sincos_fast
    double v = (qc & 1) > 0 ? tdm_f32_cos_poly(r) : tdm_f32_sin_poly(r);
    float f = float((qc & 2) > 0 ? -v : v);
    f = (!cosine && a < 2.44140625e-4f) ? x : f;     // 2^-12: sin x rounds to x (keeps -0)
    return ok ? f : tdm_f32_nan();
}
float tdm_f32_sin_fast(float x) { return tdm_f32_sincos_fast(x, false); }
float tdm_f32_cos_fast(float x) { return tdm_f32_sincos_fast(x, true); }
float tdm_sinf(float x) {
    float v = tdm_f32_sin_fast(x);
    if (!tdm_f32_isnan(v)) return v;
    return tdm_f64_to_f32(tdm_sin(tdm_f32_to_f64(x)));
}
float tdm_cosf(float x) {
    float v = tdm_f32_cos_fast(x);
    if (!tdm_f32_isnan(v)) return v;
    return tdm_f64_to_f32(tdm_cos(tdm_f32_to_f64(x)));
}
float tdm_tanf(float x) {
    return tdm_f64_to_f32(tdm_tan(tdm_f32_to_f64(x)));
}
float tdm_asinf(float x) {
    return tdm_f64_to_f32(tdm_asin(tdm_f32_to_f64(x)));
}
float tdm_acosf(float x) {
    return tdm_f64_to_f32(tdm_acos(tdm_f32_to_f64(x)));
}
float tdm_atanf(float x) {
    return tdm_f64_to_f32(tdm_atan(tdm_f32_to_f64(x)));
}
float tdm_atan2f(float y, float x) {
    return tdm_f64_to_f32(tdm_atan2(tdm_f32_to_f64(y), tdm_f32_to_f64(x)));
}
float tdm_sinhf(float x) {
    return tdm_f64_to_f32(tdm_sinh(tdm_f32_to_f64(x)));
}
float tdm_coshf(float x) {
    return tdm_f64_to_f32(tdm_cosh(tdm_f32_to_f64(x)));
}
// tanh of a float in plain double: tanh a = u / (u + 2) with u = expm1(2a) = 2^k (1 + q) - 1, where
// 2a = k ln2 + r (|r| <= ln2/2; k <= 27, so the ln2 rounding costs < 1e-15 relative) and
// q = expm1(r) = r + r^2 P(r) (Taylor to r^13, < 1e-17). For k = 0, u = q with no cancellation; for k >= 1
// u = 2^k q + (2^k - 1) (exact terms, one rounding). Relative error < 1e-13, far below float's needs.
// |x| < 2^-12 returns x (tanh x rounds to x); |x| >= 9.5 gives +-1 (1 - tanh < 2^-26); NaN via f64.
// Fast path of tanhf: every x but NaN.
float tdm_f32_tanh_fast(float x) {
    float a = abs(x);
    bool mid = a < 9.5f;                             // false for NaN
    double y = 2.0LF * double(mid ? a : 1.0f);
    double kd = tdm_f64_round_even(y * 1.44269504088896339e+00LF);
    double r = y - kd * 6.93147180559945286e-01LF;
    double p = 2.08767569878681002e-09LF;            // 1/13!
    p = p * r + 2.50521083854417202e-08LF;
    p = p * r + 2.75573192239858883e-07LF;
    p = p * r + 2.75573192239858925e-06LF;
    p = p * r + 2.48015873015873016e-05LF;
    p = p * r + 1.98412698412698413e-04LF;
    p = p * r + 1.38888888888888894e-03LF;
    p = p * r + 8.33333333333333322e-03LF;
    p = p * r + 4.16666666666666644e-02LF;
    p = p * r + 1.66666666666666657e-01LF;
    p = p * r + 0.5LF;
    double q = r + (r * r) * p;
    double sc = tdm_f64_pow2i(int(kd));
    double u = sc * q + (sc - 1.0LF);
    float t = float(u / (u + 2.0LF));
    t = mid ? t : 1.0f;                              // |x| >= 9.5 (+-Inf included): +-1
    float v = x < 0.0f ? -t : t;
    v = a < 2.44140625e-4f ? x : v;                  // tanh x rounds to x (keeps -0)
    return tdm_f32_isnan(x) ? tdm_f32_nan() : v;
}
float tdm_tanhf(float x) {
    float v = tdm_f32_tanh_fast(x);
    if (!tdm_f32_isnan(v)) return v;
    return tdm_f64_to_f32(tdm_tanh(tdm_f32_to_f64(x)));   // NaN
}
// pow for x > 0 finite (subnormals too) and y finite: exp(y log x) in plain double, rounded once to
// float. log x by tdm_f32_log_d (truncation < 2e-12 relative); t = y log x is then off by at most
// |t| 2e-12 + |t| 2^-53, and a float result needs |t| < 104 (beyond: Inf or 0), so exp(t) is off by under
// 2.1e-10 (2^-32) relative; exp(t) = 2^k exp(r), |r| <= ln2/2, by Taylor to r^10 (truncation 2.2e-13).
// Well inside the float ulp (2^-24), and cheaper on the H100 than the f64 log/exp (W2's .^0.8 region:
// 1.41 ms). The rest (x <= 0, +-Inf, NaN, infinite y) goes through the f64 pow, exact on its special values.
// exp(t) for |t| <= 110 in plain double (the tail of tdm_f32_pow_fast and tdm_powf), before rounding.
double tdm_f32_pow_exp(double t) {
    double kd = tdm_f64_round_even(t * TDM_INV_LN2);
    precise double hi = t - kd * TDM_LN2_HI;         // exact
    precise double r = hi - kd * TDM_LN2_LO;
    double e = 2.75573192239858925e-07LF;            // 1/10!
    e = e * r + 2.75573192239858925e-06LF;           // 1/9!
    e = e * r + 2.48015873015873016e-05LF;
    e = e * r + 1.98412698412698413e-04LF;
    e = e * r + 1.38888888888888894e-03LF;
    e = e * r + 8.33333333333333322e-03LF;
    e = e * r + 4.16666666666666644e-02LF;
    e = e * r + 1.66666666666666657e-01LF;
    e = e * r + 0.5LF;
    e = e * r + 1.0LF;
    e = e * r + 1.0LF;
    return e * tdm_f64_pow2i(int(kd));
}
// Fast path of powf: x > 0 finite (subnormals too), y finite, and a result that is not subnormal
// (t = y log x >= -87; t > 100 gives Inf); and x = +0 with y finite.
float tdm_f32_pow_fast(float x, float y) {
    // The operands' tests in 32-bit lanes, the result's in 64-bit ones (one mask width per step, or GCC
    // does not vectorise): an invalid operand makes t NaN, which fails t >= -87.
    int bx = floatBitsToInt(x);
    bool ok = bx > 0 && bx < 0x7F800000 && abs(y) < uintBitsToFloat(0x7F800000u);   // NaN y fails too
    double t = double(ok ? y : tdm_f32_nan()) * tdm_f32_log_d(ok ? x : 1.0f, ok ? bx : 0x3F800000);
    bool normal = t >= -87.0LF;                      // below: subnormal results, tdm_powf's other path
    bool over = t > 100.0LF;                         // above FLT_MAX
    double e = tdm_f32_pow_exp(normal && !over ? t : 0.0LF);
    e = over ? tdm_f64_inf() : e;
    // +0 to a finite power (clipped data: max(x, 0) .^ p): 0 for y > 0, Inf for y < 0, 1 for y = +-0.
    // Tested on the bits, converted to double (64-bit lanes here; and a device may flush a subnormal y).
    int by = floatBitsToInt(y);
    double ymag = double(by & 0x7FFFFFFF);           // y's magnitude bits; its sign: by < 0
    // (No mask combines an x test with a y test: with y the same for every element, GCC would not
    // vectorise that; a non-finite y makes zr the NaN that sends x = +0 to the other path.)
    double zr = ymag == 0.0LF ? 1.0LF : (double(by) > 0.0LF ? 0.0LF : tdm_f64_inf());
    zr = ymag < 2139095040.0LF ? zr : tdm_f64_nan();  // 0x7F800000: y finite
    return float(double(bx) == 0.0LF ? zr : (normal ? e : tdm_f64_nan()));
}
float tdm_powf(float x, float y) {
    float v = tdm_f32_pow_fast(x, y);
    if (!tdm_f32_isnan(v)) return v;
    int bx = floatBitsToInt(x);
    if (bx > 0 && bx < 0x7F800000 && (floatBitsToInt(y) & 0x7FFFFFFF) < 0x7F800000) {
        double t = double(y) * tdm_f32_log_d(x, bx);
        if (t < -110.0LF) return 0.0f;                          // below half the least subnormal
        return tdm_f64_to_f32(tdm_f32_pow_exp(t));              // a subnormal result, rounded once
    }
    return tdm_f64_to_f32(tdm_pow(tdm_f32_to_f64(x), tdm_f32_to_f64(y)));
}
float tdm_hypotf(float x, float y) {
    return tdm_f64_to_f32(tdm_hypot(tdm_f32_to_f64(x), tdm_f32_to_f64(y)));   // no GLSL builtin
}
float tdm_fmodf(float x, float y) {
    return tdm_f64_to_f32(tdm_fmod(tdm_f32_to_f64(x), tdm_f32_to_f64(y)));     // exact in double, so exact in float
}

#endif // TDM_MATH_F32_GLSL
