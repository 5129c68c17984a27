// math_f64.glsl -- double-precision elementary functions for Tandem's generated compute shaders.
//
// GLSL has no double exp/log/sin/...; these are Tandem's own, written as a libm would be: exact argument
// reduction, a polynomial on a small interval, and double-double (hi + lo) arithmetic where the last bits
// matter. Target: within 2 ulp of glibc over the whole double range (tests: /work/f64math/mathtest).
//
// Include after the #version line. Needs:
//   #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
//   SPIR-V capabilities Float64 and Int64 -- Vulkan features shaderFloat64 and shaderInt64.
// convert_f32.glsl pasted before it (tdm_trunc). Nothing else (no Float16, no float-controls, no 64-bit
// atomics).
//
// Rules the code relies on (the Vulkan backend must not break them):
//  * + - * are IEEE round-to-nearest. Division and sqrt are only used as a first guess that an exact
//    residual corrects, so a driver whose f64 division/sqrt is off by an ulp or two is still fine -- with
//    one exception: atan2 with |y/x| < 2^-30 returns y/x (or pi -/+ it) from one division, so there it
//    inherits the device's f64 division rounding (IEEE on lavapipe, NVIDIA, AMD; Vulkan promises less).
//  * Error-free transforms (two_sum, two_prod, Cody-Waite reduction) are declared `precise`, which glslang
//    turns into SPIR-V NoContraction: the driver may not fuse or reassociate them. Everything else tolerates
//    contraction into fma. Do not strip NoContraction decorations, and do not compile with fast-math.
//    (The H100 driver was seen to do more than contraction on non-precise code: an f32 Cody-Waite step
//    x - k*C1 - k*C2 came out as if folded into x - k*(C1 + C2). So argument reductions are `precise` too.)
//  * Denormals: results may be subnormal (exp, pow, ...); a device that flushes f64 denormals returns 0 there,
//    which is that device's property. Intermediate steps never depend on subnormals (inputs are scaled first).
//  * No fma(): Vulkan lets fma() round twice ("inherited from OpFMul followed by OpFAdd"), and lavapipe's
//    f64 fma does. Exact products use Dekker's algorithm. A backend that has verified a single-rounding f64
//    fma on its device may #define TDM_F64_FMA_IS_FUSED before the include (faster two_prod).
//
// Fast paths (plain double, no double-double) cover the common range of exp (|x| < 707), log (normal x > 0),
// sin/cos (|x| < 1647099, not within 2^-40 of a multiple of pi/2), expm1, sinh and cosh (|x| < 707), and
// every input of log1p (x > -1), atan, atan2 (finite), asin, acos and tanh; everything else keeps the
// double-double code, which the CPU runs in vector form for tan and hypot (end of this file). Measured
// (lavapipe and the H100, 1-10 million inputs each): < 0.9 ulp from exact, <= 1 ulp from glibc (cos, tan:
// glibc's own 8- and 14-ulp misses aside).
//
// Names: tdm_exp tdm_expm1 tdm_log tdm_log2 tdm_log10 tdm_log1p tdm_sin tdm_cos tdm_tan tdm_asin tdm_acos
// tdm_atan tdm_atan2(y,x) tdm_sinh tdm_cosh tdm_tanh tdm_pow(x,y) tdm_hypot(x,y) tdm_fmod(x,y).
// Internal helpers are prefixed tdm_f64_ / tdm_dd_.

#ifndef TDM_MATH_F64_GLSL
#define TDM_MATH_F64_GLSL

#ifndef TDM_CONVERT_F32_GLSL
#error "math_f64.glsl: paste convert_f32.glsl before this file (tdm_trunc)"
#endif

// Helpers that the CPU's vector forms (the tdm_f64_*_fast functions) call: the C++ translation inlines them
// whole (cmake/glsl_to_cpp.cmake), or GCC could not vectorise their loops. Nothing in GLSL.
#ifndef TDM_INLINE
#define TDM_INLINE
#endif

// ---------------------------------------------------------------------------------------------------------
// Bits and special values
// ---------------------------------------------------------------------------------------------------------
#define TDM_F64_ABSMASK 0x7FFFFFFFFFFFFFFFL
#define TDM_F64_EXPMASK 0x7FF0000000000000L

TDM_INLINE double tdm_f64_inf() { return int64BitsToDouble(TDM_F64_EXPMASK); }
TDM_INLINE double tdm_f64_nan() { return int64BitsToDouble(0x7FF8000000000000L); }
// Bit tests rather than isnan()/isinf(): a driver may not fold those away under "no NaN" assumptions.
TDM_INLINE bool tdm_f64_isnan(double x) { return (doubleBitsToInt64(x) & TDM_F64_ABSMASK) > TDM_F64_EXPMASK; }
TDM_INLINE bool tdm_f64_isinf(double x) { return (doubleBitsToInt64(x) & TDM_F64_ABSMASK) == TDM_F64_EXPMASK; }
TDM_INLINE bool tdm_f64_isfinite(double x) { return (doubleBitsToInt64(x) & TDM_F64_ABSMASK) < TDM_F64_EXPMASK; }
TDM_INLINE bool tdm_f64_signbit(double x) { return doubleBitsToInt64(x) < 0L; }
TDM_INLINE double tdm_f64_copysign(double x, double s) {
    return int64BitsToDouble((doubleBitsToInt64(x) & TDM_F64_ABSMASK) | (doubleBitsToInt64(s) & (~TDM_F64_ABSMASK)));
}
// 2^k for -1022 <= k <= 1023, built from bits.
TDM_INLINE double tdm_f64_pow2i(int k) { return int64BitsToDouble(int64_t(k + 1023) << 52); }
// The biased exponent field of x's bits b (b >= 0) as a double, exactly: 2^52 + field, less 2^52. Integer
// and double arithmetic only (the CPU's vector forms: AVX2 converts no 64-bit integers to double).
TDM_INLINE double tdm_f64_biased_exponent(int64_t b) {
    return int64BitsToDouble((b >> 52) | 0x4330000000000000L) - 4503599627370496.0LF;
}
// floor(log2|x|) for finite nonzero x, subnormals included.
int tdm_f64_ilogb(double x) {
    int64_t b = doubleBitsToInt64(x) & TDM_F64_ABSMASK;
    if (b >= 0x0010000000000000L) return int(b >> 52) - 1023;
    return int(doubleBitsToInt64(x * 18014398509481984.0LF) >> 52 & 0x7FFL) - 1023 - 54;   // x * 2^54 is normal
}
// x * 2^k with a single rounding (only the last multiply can round), for normal x and |k| <= 2100.
double tdm_f64_scale(double x, int k) {
    if (k > 1023) {
        x *= tdm_f64_pow2i(1023); k -= 1023;
        if (k > 1023) { x *= tdm_f64_pow2i(1023); k = min(k - 1023, 1023); }
    } else if (k < -1022) {
        x *= tdm_f64_pow2i(-969); k += 969;   // 2^-969 = 2^-1022 * 2^53: x stays normal here
        if (k < -1022) { x *= tdm_f64_pow2i(-969); k = max(k + 969, -1022); }
    }
    return x * tdm_f64_pow2i(k);
}
// roundEven(x) for |x| < 2^51: adding 1.5 * 2^52 leaves no fraction bits, so the sum rounds x to the
// nearest integer, ties to even, and subtracting it back is exact. Two IEEE additions instead of the
// builtin: lavapipe's f64 roundEven/trunc/floor are wrong on CPUs without AVX-512 (convert_f32.glsl),
// and the C++ translation of these additions vectorises on every x86 (the CPU's fast-path loops).
TDM_INLINE double tdm_f64_round_even(double x) {
    precise double t = x + 6755399441055744.0LF;
    precise double r = t - 6755399441055744.0LF;
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// Double-double arithmetic: a dvec2 (hi, lo) with |lo| <= ulp(hi)/2 holds ~106 bits.
// ---------------------------------------------------------------------------------------------------------
TDM_INLINE dvec2 tdm_dd_two_sum(double a, double b) {          // exact: a + b = s + e
    precise double s = a + b;
    precise double bb = s - a;
    precise double e = (a - (s - bb)) + (b - bb);
    return dvec2(s, e);
}
TDM_INLINE dvec2 tdm_dd_fast_two_sum(double a, double b) {     // exact when |a| >= |b| (or a == 0)
    precise double s = a + b;
    precise double e = b - (s - a);
    return dvec2(s, e);
}
#ifdef TDM_F64_FMA_IS_FUSED
// Only when the backend has checked, on this device, that f64 fma() rounds once (Vulkan does not promise it).
dvec2 tdm_dd_two_prod(double a, double b) {         // exact (barring underflow): a * b = p + e
    precise double p = a * b;
    precise double e = fma(a, b, -p);
    return dvec2(p, e);
}
#else
// Veltkamp split: a = hi + lo with 26-bit halves, so their products are exact.
TDM_INLINE dvec2 tdm_dd_split(double a) {
    precise double c = 134217729.0LF * a;           // 2^27 + 1
    precise double hi = c - (c - a);
    precise double lo = a - hi;
    return dvec2(hi, lo);
}
// Dekker's exact product with plain multiplies and adds: Vulkan's fma() is allowed to round twice
// (its precision is "inherited from OpFMul followed by OpFAdd"), and lavapipe's does.
// Operands above 2^996 (whose split would overflow) are scaled by 2^-28 first and the result back: selects,
// not branches, so that the CPU's vector loops run it too.
TDM_INLINE dvec2 tdm_dd_two_prod(double a, double b) {   // exact (barring underflow): a * b = p + e
    double fa = abs(a) > 6.6969287949141707e299LF ? 268435456.0LF : 1.0LF;
    double fb = abs(b) > 6.6969287949141707e299LF ? 268435456.0LF : 1.0LF;
    a = fa > 1.0LF ? a * 3.725290298461914e-09LF : a;
    b = fb > 1.0LF ? b * 3.725290298461914e-09LF : b;
    double f = fa * fb;
    dvec2 as = tdm_dd_split(a), bs = tdm_dd_split(b);
    precise double p = a * b;
    precise double e = (((as.x * bs.x - p) + as.x * bs.y) + as.y * bs.x) + as.y * bs.y;
    return dvec2(p, e) * f;
}
#endif
TDM_INLINE dvec2 tdm_dd_add(dvec2 a, dvec2 b) {
    dvec2 s = tdm_dd_two_sum(a.x, b.x);
    dvec2 t = tdm_dd_two_sum(a.y, b.y);
    precise double lo = s.y + t.x;
    s = tdm_dd_fast_two_sum(s.x, lo);
    precise double lo2 = s.y + t.y;
    return tdm_dd_fast_two_sum(s.x, lo2);
}
TDM_INLINE dvec2 tdm_dd_add_d(dvec2 a, double b) {
    dvec2 s = tdm_dd_two_sum(a.x, b);
    precise double lo = s.y + a.y;
    return tdm_dd_fast_two_sum(s.x, lo);
}
TDM_INLINE dvec2 tdm_dd_mul(dvec2 a, dvec2 b) {
    dvec2 p = tdm_dd_two_prod(a.x, b.x);
    precise double lo = p.y + (a.x * b.y + a.y * b.x);
    return tdm_dd_fast_two_sum(p.x, lo);
}
TDM_INLINE dvec2 tdm_dd_mul_d(dvec2 a, double b) {
    dvec2 p = tdm_dd_two_prod(a.x, b);
    precise double lo = p.y + a.y * b;
    return tdm_dd_fast_two_sum(p.x, lo);
}
// a / b: the quotient's residual is computed exactly, so the division only has to be a good first guess.
TDM_INLINE dvec2 tdm_dd_div(dvec2 a, dvec2 b) {
    double q1 = a.x / b.x;
    dvec2 qb = tdm_dd_two_prod(q1, b.x);
    precise double r = (a.x - qb.x) - qb.y;         // exact residual a.x - q1*b.x
    precise double r2 = (r + a.y) - q1 * b.y;
    double q2 = r2 / b.x;
    return tdm_dd_fast_two_sum(q1, q2);
}
// sqrt of a double-double (a.x >= 0; 0 for a.x <= 0), one Newton correction in double-double. Branch-free.
TDM_INLINE dvec2 tdm_dd_sqrt(dvec2 a) {
    bool pos = !(a.x <= 0.0LF);
    double ax = pos ? a.x : 1.0LF;
    double s = sqrt(ax);
    dvec2 ss = tdm_dd_two_prod(s, s);
    precise double e = ((ax - ss.x) - ss.y) + a.y;
    dvec2 r = tdm_dd_fast_two_sum(s, e / (2.0LF * s));
    return pos ? r : dvec2(0.0LF);
}

// ---------------------------------------------------------------------------------------------------------
// Constants (hi + lo splits from a 3000-bit computation)
// ---------------------------------------------------------------------------------------------------------
const double TDM_LN2_HI = 6.93147180369123816e-01LF;   // 0x3FE62E42FEE00000: 32 bits, so k*LN2_HI is exact
const double TDM_LN2_LO = 1.90821492927058770e-10LF;   // ln2 - LN2_HI
const double TDM_INV_LN2 = 1.44269504088896339e+00LF;
const dvec2 TDM_INV_LN2_DD = dvec2(1.44269504088896339e+00LF, 2.03552737409310331e-17LF);
const dvec2 TDM_INV_LN10_DD = dvec2(4.34294481903251817e-01LF, 1.09831965021676507e-17LF);
const dvec2 TDM_LOG10_2_DD = dvec2(3.01029995663981198e-01LF, -2.80372812778517039e-18LF);
const dvec2 TDM_PI_DD = dvec2(3.14159265358979312e+00LF, 1.22464679914735321e-16LF);
const dvec2 TDM_PIO2_DD = dvec2(1.57079632679489656e+00LF, 6.12323399573676604e-17LF);
const double TDM_PIO4 = 7.85398163397448279e-01LF;
const double TDM_2OPI = 6.36619772367581382e-01LF;

// ---------------------------------------------------------------------------------------------------------
// exp family
// ---------------------------------------------------------------------------------------------------------
// exp(z.x + z.y) = 2^k * (hi + lo), hi + lo in [0.7, 1.42] with relative error ~2^-57.
// Cody-Waite: r = z - k*ln2 with ln2 = LN2_HI + LN2_LO (k*LN2_HI exact), then Taylor to r^17 on |r| <= ln2/2.
// Valid for |z.x| < 1100.
TDM_INLINE dvec2 tdm_f64_exp_core(dvec2 z, out int k) {
    double kd = tdm_f64_round_even(z.x * TDM_INV_LN2);
    k = int(kd);
    precise double hi = z.x - kd * TDM_LN2_HI;      // exact
    precise double lo = z.y - kd * TDM_LN2_LO;
    dvec2 r = tdm_dd_two_sum(hi, lo);
    double x = r.x;
    double p = 2.81145725434552060e-15LF;
    p = p * x + 4.77947733238738525e-14LF;
    p = p * x + 7.64716373181981641e-13LF;
    p = p * x + 1.14707455977297245e-11LF;
    p = p * x + 1.60590438368216133e-10LF;
    p = p * x + 2.08767569878681002e-09LF;
    p = p * x + 2.50521083854417202e-08LF;
    p = p * x + 2.75573192239858883e-07LF;
    p = p * x + 2.75573192239858925e-06LF;
    p = p * x + 2.48015873015873016e-05LF;
    p = p * x + 1.98412698412698413e-04LF;
    p = p * x + 1.38888888888888894e-03LF;
    p = p * x + 8.33333333333333322e-03LF;
    p = p * x + 4.16666666666666644e-02LF;
    p = p * x + 1.66666666666666657e-01LF;
    p = p * x + 0.5LF;
    // exp(x + lo) - 1 - x = x^2 p + lo (1 + x)
    double t = (x * x) * p + r.y * (1.0LF + x);
    dvec2 s = tdm_dd_two_sum(1.0LF, x);
    return tdm_dd_fast_two_sum(s.x, s.y + t);
}

// Fast path of exp, plain double (no double-double), < 0.76 ulp, for |x| < 707: k = round(x/ln2) is in
// [-1020, 1020] and the result is normal (the scaling by 2^k is exact). r = x - k ln2 as r + rlo (k LN2_HI
// exact; rlo good to ~2^-74 absolute); exp(r) = 1 + r + r^2 P(r), Taylor to r^14 (truncation < 2^-62 on
// |r| <= ln2/2); 1 + r is kept exact by two_sum so the only large rounding is the final one.
// Branch-free, and NaN where it does not apply (|x| >= 707, NaN): the CPU runs it over whole blocks in
// vector registers and sends the NaN lanes to tdm_exp, which gives them the slow path.
// The fast reduction x = k ln2 + r + rlo (k LN2_HI exact; |r| <= ln2/2) and P(r), exp(r) = 1 + r + r^2 P(r)
// with Taylor to r^14 (truncation < 2^-62), for |x| < 1020: shared by exp's and expm1's fast paths.
TDM_INLINE double tdm_f64_exp_reduce(double x, out double kd, out double r, out double rlo) {
    kd = tdm_f64_round_even(x * TDM_INV_LN2);
    precise double hi = x - kd * TDM_LN2_HI;         // exact
    precise double lo = kd * TDM_LN2_LO;
    precise double rr = hi - lo;
    precise double rl = (hi - rr) - lo;
    r = rr;
    rlo = rl;
    double p = 1.14707455977297245e-11LF;
    p = p * r + 1.60590438368216133e-10LF;
    p = p * r + 2.08767569878681002e-09LF;
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
    return p;
}

double tdm_f64_exp_fast(double x) {
    bool ok = abs(x) < 707.0LF;                      // false for NaN
    double kd, r, rlo;
    double p = tdm_f64_exp_reduce(ok ? x : 0.0LF, kd, r, rlo);   // 0: keeps int(kd) in range on every lane
    dvec2 s = tdm_dd_two_sum(1.0LF, r);
    double t = s.y + ((r * r) * p + (rlo + r * rlo));
    double v = (s.x + t) * tdm_f64_pow2i(int(kd));
    return ok ? v : tdm_f64_nan();
}

double tdm_exp(double x) {
    double v = tdm_f64_exp_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    // Slow path (near overflow, subnormal results, NaN, +-Inf): double-double.
    if (tdm_f64_isnan(x)) return x + x;
    if (x > 709.8LF) return tdm_f64_inf();       // exp(709.79) > DBL_MAX
    if (x < -745.2LF) return 0.0LF;              // below half the smallest subnormal
    int k;
    dvec2 e = tdm_f64_exp_core(dvec2(x, 0.0LF), k);
    return tdm_f64_scale(e.x, k);
}

// expm1 for |x| <= 44 as a double-double u.x + u.y (relative error < 2^-54): exp_fast's reduction x = k ln2 + r
// (+ rlo) and polynomial, exp(r) - 1 = r + t kept unrounded, then 2^k (1 + u) - 1 = (2^k - 1) + 2^k u in
// exact sums. Branch-free: the fast paths of expm1, sinh, cosh and tanh share it.
TDM_INLINE dvec2 tdm_f64_expm1_parts(double x) {
    double kd, r, rlo;
    double p = tdm_f64_exp_reduce(x, kd, r, rlo);
    dvec2 u = tdm_dd_fast_two_sum(r, (r * r) * p + (rlo + r * rlo));   // exp(r + rlo) - 1
    double sc = tdm_f64_pow2i(int(kd));
    dvec2 a = tdm_dd_two_sum(sc, -1.0LF);
    dvec2 b = tdm_dd_two_sum(a.x, sc * u.x);
    return tdm_dd_fast_two_sum(b.x, (a.y + b.y) + sc * u.y);
}

// Fast path of expm1 for |x| < 707 (< 0.9 ulp), NaN elsewhere, as tdm_f64_exp_fast.
double tdm_f64_expm1_fast(double x) {
    double ax = abs(x);
    double v = tdm_f64_expm1_parts(ax <= 40.0LF ? x : 0.0LF).x;
    v = x > 40.0LF ? tdm_f64_exp_fast(x) : v;       // exp(x) - 1 rounds to exp(x)
    v = x < -40.0LF ? -1.0LF : v;                    // -1 + e^x rounds to -1
    v = ax < 5.551115123125783e-17LF ? x : v;        // 2^-54: x itself (keeps -0)
    return ax < 707.0LF ? v : tdm_f64_nan();
}

double tdm_expm1(double x) {
    double v = tdm_f64_expm1_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    if (tdm_f64_isnan(x)) return x + x;
    return x > 0.0LF ? tdm_exp(x) : -1.0LF;
}

// ---------------------------------------------------------------------------------------------------------
// log family
// ---------------------------------------------------------------------------------------------------------
// log(1 + f) for f = f.x + f.y in [sqrt(1/2)-1, sqrt(2)-1]: s = f/(2+f), log(1+f) = 2 atanh(s)
// = s (2 + 2/3 s^2 + 2/5 s^4 + ...). |s| <= 0.1716, so the series to s^29 is below 2^-76; the three
// leading steps run in double-double. Relative error ~2^-100.
TDM_INLINE dvec2 tdm_f64_log1p_core(dvec2 f) {
    dvec2 s = tdm_dd_div(f, tdm_dd_add_d(f, 2.0LF));
    dvec2 s2 = tdm_dd_mul(s, s);
    double t = s2.x;
    double p = 6.89655172413793094e-02LF;
    p = p * t + 7.40740740740740700e-02LF;
    p = p * t + 8.00000000000000017e-02LF;
    p = p * t + 8.69565217391304324e-02LF;
    p = p * t + 9.52380952380952328e-02LF;
    p = p * t + 1.05263157894736836e-01LF;
    p = p * t + 1.17647058823529410e-01LF;
    p = p * t + 1.33333333333333331e-01LF;
    p = p * t + 1.53846153846153855e-01LF;
    p = p * t + 1.81818181818181823e-01LF;
    p = p * t + 2.22222222222222210e-01LF;
    p = p * t + 2.85714285714285698e-01LF;          // 2/7
    dvec2 q = tdm_dd_add(dvec2(4.00000000000000022e-01LF, -2.22044604925031320e-17LF), s2 * p);  // 2/5 + s2 p (s2*p: tiny error ok)
    q = tdm_dd_add(dvec2(6.66666666666666630e-01LF, 3.70074341541718826e-17LF), tdm_dd_mul(s2, q));  // 2/3
    q = tdm_dd_add_d(tdm_dd_mul(s2, q), 2.0LF);
    return tdm_dd_mul(s, q);
}

// Splits finite x > 0 as 2^e * m with m in [sqrt(1/2), sqrt(2)) and returns log(m) as a double-double.
// Selects, not branches (the CPU's vector form of pow runs it).
TDM_INLINE dvec2 tdm_f64_log_parts(double x, out double e) {
    bool sub = doubleBitsToInt64(x) < 0x0010000000000000L;   // subnormal: scale up exactly
    x = sub ? x * 18014398509481984.0LF : x;                  // 2^54
    int64_t b = doubleBitsToInt64(x);
    e = tdm_f64_biased_exponent(b) - (sub ? 1077.0LF : 1023.0LF);
    double m = int64BitsToDouble((b & 0x000FFFFFFFFFFFFFL) | 0x3FF0000000000000L);
    bool high = m > 1.4142135623730951LF;
    m = high ? m * 0.5LF : m;
    e = high ? e + 1.0LF : e;
    return tdm_f64_log1p_core(dvec2(m - 1.0LF, 0.0LF));   // m - 1 is exact
}

// log(x) as a double-double for finite x > 0.
TDM_INLINE dvec2 tdm_f64_log_dd(double x) {
    double e;
    dvec2 l = tdm_f64_log_parts(x, e);
    return tdm_dd_add(dvec2(e * TDM_LN2_HI, e * TDM_LN2_LO), l);  // e*LN2_HI exact
}

// Shared special cases of the logs: returns true and sets r when x is not finite positive.
bool tdm_f64_log_special(double x, out double r) {
    if (tdm_f64_isnan(x)) { r = x + x; return true; }
    if (x == 0.0LF) { r = -tdm_f64_inf(); return true; }
    if (x < 0.0LF) { r = tdm_f64_nan(); return true; }
    if (tdm_f64_isinf(x)) { r = x; return true; }
    return false;
}

// Fast path of log for normal positive x, plain double (FreeBSD e_log.c, < 1 ulp): x = 2^k (1 + f) with
// 1 + f in [sqrt(1/2), sqrt(2)), s = f/(2+f), log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)) with fdlibm's Lg1..Lg7.
// The division only feeds the small correction term, so an f64 division off by an ulp or two is harmless.
// Branch-free, NaN elsewhere (subnormals, zeros, negatives, Inf, NaN), as tdm_f64_exp_fast.
// The fast paths' common part (log, log2, log10): for normal positive x (ok), x = 2^k (1 + f) with
// 1 + f in [sqrt(1/2), sqrt(2)) and r = s (f^2/2 + R(s^2)), s = f/(2+f), so log(1+f) = f - f^2/2 + r.
// Branch-free (the name's _fast: always inlined into the CPU's vector loops).
bool tdm_f64_log_split_fast(double x, out double dk, out double f, out double hfsq, out double r) {
    int64_t bx = doubleBitsToInt64(x);
    bool ok = bx >= 0x0010000000000000L && bx < 0x7FF0000000000000L;   // normal, > 0, finite (not NaN)
    int k = int(bx >> 52) - 1023;
    double m = int64BitsToDouble((bx & 0x000FFFFFFFFFFFFFL) | 0x3FF0000000000000L);
    bool high = m > 1.4142135623730951LF;
    m = high ? m * 0.5LF : m;
    k = high ? k + 1 : k;
    f = m - 1.0LF;                                   // exact
    hfsq = 0.5LF * f * f;
    double s = f / (2.0LF + f);
    double z = s * s, w = z * z;
    double t1 = w * (3.999999999940941908e-01LF + w * (2.222219843214978396e-01LF + w * 1.531383769920937332e-01LF));
    double t2 = z * (6.666666666666735130e-01LF + w * (2.857142874366239149e-01LF
              + w * (1.818357216161805012e-01LF + w * 1.479819860511658591e-01LF)));
    r = s * (hfsq + (t2 + t1));
    dk = double(k);
    return ok;
}
double tdm_f64_log_fast(double x) {
    double dk, f, hfsq, r;
    bool ok = tdm_f64_log_split_fast(x, dk, f, hfsq, r);
    double v = dk * TDM_LN2_HI - ((hfsq - (r + dk * TDM_LN2_LO)) - f);
    return ok ? v : tdm_f64_nan();
}

double tdm_log(double x) {
    double v = tdm_f64_log_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    // Slow path: subnormals and special values (double-double).
    double r;
    if (tdm_f64_log_special(x, r)) return r;
    return tdm_f64_log_dd(x).x;
}

// Fast paths of log2 (ten false) and log10 for normal positive x (FreeBSD e_log2.c / e_log10.c, < 1 ulp):
// log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)) as in tdm_f64_log_fast, its leading part f - f^2/2 split into
// hi (the top 21 bits of the significand: its products with the 33-bit constants are exact) and lo, each
// part scaled by 1/ln2 (1/ln10) in two pieces, and k (k log10(2)) added with its rounding error kept.
// NaN elsewhere, as tdm_f64_exp_fast.
double tdm_f64_logb_fast(double x, bool ten) {
    double dk, f, hfsq, r;
    bool ok = tdm_f64_log_split_fast(x, dk, f, hfsq, r);
    double hi = int64BitsToDouble(doubleBitsToInt64(f - hfsq) & int64_t(0xFFFFFFFF00000000UL));
    double lo = ((f - hi) - hfsq) + r;
    // 1/ln2 = IVLN2HI + IVLN2LO, 1/ln10 = IVLN10HI + IVLN10LO (33-bit leading parts); log10(2) likewise
    double chi = ten ? 4.34294481878168880939e-01LF : 1.44269504072144627571e+00LF;
    double clo = ten ? 2.50829467116452752298e-11LF : 1.67517131648865118353e-10LF;
    double y = ten ? dk * 3.01029995663611771306e-01LF : dk;        // exact: dk has at most 11 bits
    double vhi = hi * chi;
    double vlo = (ten ? dk * 3.69423907715893078616e-13LF : 0.0LF) + ((lo + hi) * clo + lo * chi);
    double sum = y + vhi;
    vlo += (y - sum) + vhi;
    double v = vlo + sum;
    return ok ? v : tdm_f64_nan();
}

double tdm_f64_log2_fast(double x) { return tdm_f64_logb_fast(x, false); }
double tdm_f64_log10_fast(double x) { return tdm_f64_logb_fast(x, true); }

double tdm_log2(double x) {
    double v = tdm_f64_logb_fast(x, false);
    if (!tdm_f64_isnan(v)) return v;
    double r;
    if (tdm_f64_log_special(x, r)) return r;
    double e;
    dvec2 l = tdm_f64_log_parts(x, e);
    return tdm_dd_add_d(tdm_dd_mul(l, TDM_INV_LN2_DD), e).x;   // exact powers of 2 stay exact
}

double tdm_log10(double x) {
    double v = tdm_f64_logb_fast(x, true);
    if (!tdm_f64_isnan(v)) return v;
    double r;
    if (tdm_f64_log_special(x, r)) return r;
    double e;
    dvec2 l = tdm_f64_log_parts(x, e);
    return tdm_dd_add(tdm_dd_mul_d(TDM_LOG10_2_DD, e), tdm_dd_mul(l, TDM_INV_LN10_DD)).x;
}

// Fast path of log1p, plain double (FreeBSD s_log1p.c, < 1 ulp) for -1 < x < Inf: 1 + x = u.x + u.y exactly,
// log(1 + x) = log(u.x) + u.y/u.x (to 2^-106), log(u.x) as tdm_f64_log_fast computes it with the correction
// added to its small terms. Branch-free; NaN elsewhere (NaN, <= -1, Inf), as tdm_f64_exp_fast.
double tdm_f64_log1p_fast(double x) {
    double xc = x < tdm_f64_inf() ? x : 0.0LF;       // one condition per select: GCC 12 vectorises no
                                                      // select of combined conditions here
    xc = x > -1.0LF ? xc : 0.0LF;                     // 0 for NaN
    dvec2 u = tdm_dd_two_sum(1.0LF, xc);              // u.x >= 2^-53: normal
    double dk, f, hfsq, r;
    tdm_f64_log_split_fast(u.x, dk, f, hfsq, r);
    double c = u.y / u.x;
    double v = dk * TDM_LN2_HI - ((hfsq - (r + (dk * TDM_LN2_LO + c))) - f);
    v = abs(x) < 5.551115123125783e-17LF ? x : v;    // 2^-54: x itself (keeps -0 and subnormals)
    v = x > -1.0LF ? v : tdm_f64_nan();
    return x < tdm_f64_inf() ? v : tdm_f64_nan();
}

double tdm_log1p(double x) {
    double v = tdm_f64_log1p_fast(x);               // every finite x > -1
    if (!tdm_f64_isnan(v)) return v;
    if (tdm_f64_isnan(x)) return x + x;
    if (x == -1.0LF) return -tdm_f64_inf();
    return x < -1.0LF ? tdm_f64_nan() : x;           // +Inf
}

// ---------------------------------------------------------------------------------------------------------
// Trigonometric functions
// ---------------------------------------------------------------------------------------------------------
// 2/pi, 1280 bits, 32 per word, most significant first (word j holds bits 2^-(32j+1) .. 2^-(32j+32)).
const uint TDM_2OPI_BITS[40] = {  // an initializer list: C++ reads it too
    0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u,
    0xB7246E3Au, 0x424DD2E0u, 0x06492EEAu, 0x09D1921Cu, 0xFE1DEB1Cu, 0xB129A73Eu, 0xE88235F5u, 0x2EBB4484u,
    0xE99C7026u, 0xB45F7E41u, 0x3991D639u, 0x835339F4u, 0x9C845F8Bu, 0xBDF9283Bu, 0x1FF897FFu, 0xDE05980Fu,
    0xEF2F118Bu, 0x5A0A6D1Fu, 0x6D367ECFu, 0x27CB09B7u, 0x4F463F66u, 0x9E5FEA2Du, 0x7527BAC7u, 0xEBE5F17Bu,
    0x3D0739F7u, 0x8A5292EAu, 0x6BFB5FB1u, 0x1F8D5D08u, 0x56033046u, 0xFC7B6BABu, 0xF0CFBC20u, 0x9AF4361Du};

// Payne-Hanek for |x| >= 2^20: x = M 2^E (M a 53-bit integer), and x*2/pi mod 4 is the integer product of M
// with the 224 bits of 2/pi that matter for this E (earlier bits give multiples of 4, later ones < 2^-137).
// Returns the quadrant; r = (fraction in [-1/2, 1/2)) * pi/2 as a double-double.
int tdm_f64_rem_pio2_large(double x, out dvec2 r) {
    int64_t b = doubleBitsToInt64(x) & TDM_F64_ABSMASK;
    int E = int(b >> 52) - 1075;
    uint64_t M = uint64_t((b & 0x000FFFFFFFFFFFFFL) | 0x0010000000000000L);
    int j0 = E >= 34 ? (E - 34) / 32 + 1 : 0;
    int sh = 32 * (j0 + 7) - E;                      // fractional bits of the product; 191..256
    uint m0 = uint(M & 0xFFFFFFFFUL), m1 = uint(M >> 32);
    uint64_t A[7], B[7];
    for (int i = 0; i < 7; i++) {                   // limb i (least significant first) = word j0+6-i
        uint w = TDM_2OPI_BITS[j0 + 6 - i];
        A[i] = uint64_t(m0) * uint64_t(w);
        B[i] = uint64_t(m1) * uint64_t(w);
    }
    uint p[10];
    uint64_t acc = 0UL;
    for (int k = 0; k < 10; k++) {
        if (k < 7) acc += A[k] & 0xFFFFFFFFUL;
        if (k >= 1 && k <= 7) acc += (A[k - 1] >> 32) + (B[k - 1] & 0xFFFFFFFFUL);
        if (k >= 2 && k <= 8) acc += B[k - 2] >> 32;
        p[k] = uint(acc & 0xFFFFFFFFUL);
        acc >>= 32;
    }
    // 32 bits of the product starting at bit position pos (pos >= 0)
    uint c[5];
    for (int t = 0; t < 5; t++) {
        int pos = sh - 128 + 32 * t;                 // c[0..3]: fraction, low to high; c[4]: integer bits
        int i = pos >> 5, o = pos & 31;
        uint64_t v = (uint64_t(i + 1 < 10 ? p[i + 1] : 0u) << 32) | uint64_t(p[i]);
        c[t] = uint(v >> o);
    }
    int q = int(c[4] & 3u);
    double sgn = 1.0LF;
    if ((c[3] & 0x80000000u) != 0u) {                // fraction >= 1/2: use fraction - 1, next quadrant
        q += 1;
        sgn = -1.0LF;
        // 128-bit two's complement negation
        uint carry = 1u;
        for (int t = 0; t < 4; t++) {
            uint nv = ~c[t] + carry;
            carry = (carry == 1u && nv == 0u) ? 1u : 0u;
            c[t] = nv;
        }
    }
    dvec2 f = tdm_dd_two_sum(double(c[3]) * 2.3283064365386963e-10LF, double(c[2]) * 5.421010862427522e-20LF);
    f = tdm_dd_add_d(f, double(c[1]) * 1.2621774483536189e-29LF);     // 2^-96
    f = tdm_dd_add_d(f, double(c[0]) * 2.9387358770557188e-39LF);     // 2^-128
    r = tdm_dd_mul(f * sgn, TDM_PIO2_DD);
    if (x < 0.0LF) { r = -r; q = -q; }
    return q & 3;
}

// x = q pi/2 + r for |x| < 1647099 (k < 2^20): 4-part Cody-Waite, pi/2 to 2^-152. Returns q mod 4.
TDM_INLINE int tdm_f64_rem_pio2_medium(double x, out dvec2 r) {
    double kd = tdm_f64_round_even(x * TDM_2OPI);
    precise double t = x - kd * 1.57079632673412561e+00LF;     // 33-bit part: exact product and difference
    r = tdm_dd_two_sum(t, -(kd * 6.07710050630396598e-11LF));  // 33-bit part: exact product
    r = tdm_dd_add_d(r, -(kd * 2.02226624871116646e-21LF));   // 33-bit part: exact product
    r = tdm_dd_add_d(r, -(kd * 8.47842766036889957e-32LF));
    return int(kd) & 3;
}

// x = q pi/2 + r, |r| <= ~pi/4, r as a double-double. Returns q mod 4.
int tdm_f64_rem_pio2(double x, out dvec2 r) {
    double a = abs(x);
    if (a <= TDM_PIO4) { r = dvec2(x, 0.0LF); return 0; }
    if (a < 1647099.0LF) return tdm_f64_rem_pio2_medium(x, r);
    return tdm_f64_rem_pio2_large(x, r);
}

// sin(r.x + r.y), |r| <= ~pi/4, as a double-double: Taylor to r^21 (truncation < 2^-70).
TDM_INLINE dvec2 tdm_f64_sin_kernel(dvec2 r) {
    double x = r.x, x2 = x * x;
    double p = 1.95729410633912626e-20LF;
    p = p * x2 - 8.22063524662432950e-18LF;
    p = p * x2 + 2.81145725434552060e-15LF;
    p = p * x2 - 7.64716373181981641e-13LF;
    p = p * x2 + 1.60590438368216133e-10LF;
    p = p * x2 - 2.50521083854417202e-08LF;
    p = p * x2 + 2.75573192239858925e-06LF;
    p = p * x2 - 1.98412698412698413e-04LF;
    p = p * x2 + 8.33333333333333322e-03LF;
    p = p * x2 - 1.66666666666666657e-01LF;
    double t = (x * x2) * p + r.y * (1.0LF - 0.5LF * x2);   // sin'(x) = cos x carries the low part
    return tdm_dd_fast_two_sum(x, t);
}

// cos(r.x + r.y), |r| <= ~pi/4: 1 - x^2/2 with x^2/2 exact, then Taylor to r^22.
TDM_INLINE dvec2 tdm_f64_cos_kernel(dvec2 r) {
    double x = r.x, x2 = x * x;
    double p = -8.89679139245057408e-22LF;
    p = p * x2 + 4.11031762331216484e-19LF;
    p = p * x2 - 1.56192069685862253e-16LF;
    p = p * x2 + 4.77947733238738525e-14LF;
    p = p * x2 - 1.14707455977297245e-11LF;
    p = p * x2 + 2.08767569878681002e-09LF;
    p = p * x2 - 2.75573192239858883e-07LF;
    p = p * x2 + 2.48015873015873016e-05LF;
    p = p * x2 - 1.38888888888888894e-03LF;
    p = p * x2 + 4.16666666666666644e-02LF;
    dvec2 h = tdm_dd_two_prod(x, x) * 0.5LF;
    dvec2 w = tdm_dd_two_sum(1.0LF, -h.x);
    double t = w.y + (((x2 * x2) * p - h.y) - x * r.y);
    return tdm_dd_fast_two_sum(w.x, t);
}

// --- Fast paths for sin/cos (plain double, < 1 ulp): |x| < 1647099 (k < 2^20) and x not within 2^-40 of
// a multiple of pi/2. Cody-Waite with pi/2 = P1 + P2 + P2T (33 + 33 + 53 bits, ~2^-119 relative):
// k*P1 and k*P2 are exact, x - k*P1 is exact (Sterbenz), two_sum keeps t - k*P2 exact, so r = y0 + y1 has
// absolute error < 2^-100, i.e. relative < 2^-60 when |r| > 2^-40. Then FreeBSD's __kernel_sin/__kernel_cos
// minimax polynomials (< 1 ulp on |r| <= pi/4 with a low part y1), see tdm_f64_ksincos.
// Returns false when the slow (double-double / Payne-Hanek) path is needed.
bool tdm_f64_rem_pio2_fast(double x, out double y0, out double y1, out int q) {
    double kd = tdm_f64_round_even(x * TDM_2OPI);
    precise double t = x - kd * 1.57079632673412561e+00LF;    // exact
    precise double w = kd * 6.07710050630396598e-11LF;        // exact (33-bit constant, k < 2^20)
    dvec2 s = tdm_dd_two_sum(t, -w);                           // exact
    precise double w2 = kd * 2.0222662487959506e-21LF - s.y;  // pi/2 - P1 - P2 rounded
    precise double a = s.x - w2;
    precise double b = (s.x - a) - w2;                         // exact: |s.x| > |w2| when |a| > 2^-40
    y0 = a; y1 = b; q = int(kd) & 3;
    return abs(a) > 9.094947017729282e-13LF;                   // 2^-40
}
// sin(x + y) (cosine false) or cos(x + y) (cosine true) for |x| <= ~pi/4, |y| <= ulp(x)/2: FreeBSD's
// k_sin.c / k_cos.c minimax polynomials (S1..S6, C1..C6; < 1 ulp), rearranged so that both are one Horner
// polynomial P(z), z = x^2, with selected coefficients -- no divergence when a warp holds both quadrant kinds:
//   sin = x + (x^3 P_S(z) + y (1 - z/2))
//   cos = w + (z^2 P_C(z) + (((1 - w) - z/2) - x y)),  w = 1 - z/2, whose rounding error (1 - w) - z/2 is
//         recovered exactly (those three operations are `precise`).
double tdm_f64_ksincos(double x, double y, bool cosine) {
    double z = x * x;
    double p = cosine ? -1.13596475577881948265e-11LF : 1.58969099521155010221e-10LF;
    p = p * z + (cosine ? 2.08757232129817482790e-09LF : -2.50507602534068634195e-08LF);
    p = p * z + (cosine ? -2.75573143513906633035e-07LF : 2.75573137070700676789e-06LF);
    p = p * z + (cosine ? 2.48015872894767294178e-05LF : -1.98412698298579493134e-04LF);
    p = p * z + (cosine ? -1.38888888888741095749e-03LF : 8.33333333332248946124e-03LF);
    p = p * z + (cosine ? 4.16666666666666019037e-02LF : -1.66666666666666324348e-01LF);
    precise double hz = 0.5LF * z;
    precise double ww = 1.0LF - hz;
    precise double c = (1.0LF - ww) - hz;
    double a = cosine ? ww : x;
    double m = cosine ? z * z : z * x;
    double n = cosine ? c - x * y : y - hz * y;
    return a + (m * p + n);
}

// Fast path of sin (cosine false) and cos: |x| < 1647099 and x not within 2^-40 of a multiple of pi/2;
// NaN elsewhere (NaN, +-Inf too), as tdm_f64_exp_fast. Tiny |x| < 2^-27: sin x rounds to x (keeping -0),
// cos x to 1.
double tdm_f64_sincos_fast(double x, bool cosine) {
    double ax = abs(x);
    bool in_range = ax < 1647099.0LF;                // false for NaN, +-Inf
    double xr = in_range ? x : 0.0LF;                // keeps int(kd) in range on every lane
    double y0, y1;
    int q;
    bool reduced = tdm_f64_rem_pio2_fast(xr, y0, y1, q);
    bool small = ax <= TDM_PIO4;                     // no reduction: r = x
    y0 = small ? xr : y0;
    y1 = small ? 0.0LF : y1;
    q = small ? 0 : q;
    // Quadrant arithmetic in int, tested by comparisons (GCC does not vectorise bool conversions of bits).
    int qc = cosine ? q + 1 : q;                     // cos x = sin(x + pi/2)
    double v = tdm_f64_ksincos(y0, y1, (qc & 1) > 0);   // odd: the other polynomial
    v = (qc & 2) > 0 ? -v : v;
    v = ax < 7.450580596923828e-09LF ? (cosine ? 1.0LF : x) : v;   // 2^-27
    return in_range && (small || reduced) ? v : tdm_f64_nan();
}
double tdm_f64_sin_fast(double x) { return tdm_f64_sincos_fast(x, false); }
double tdm_f64_cos_fast(double x) { return tdm_f64_sincos_fast(x, true); }

double tdm_sin(double x) {
    double v = tdm_f64_sin_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    if (!tdm_f64_isfinite(x)) return tdm_f64_isnan(x) ? x : tdm_f64_nan();   // not x - x: may fold to 0
    if (abs(x) < 7.450580596923828e-09LF) return x;  // 2^-27: x - x^3/6 rounds to x (keeps -0)
    dvec2 r;
    int q = tdm_f64_rem_pio2(x, r);
    dvec2 w = (q & 1) == 0 ? tdm_f64_sin_kernel(r) : tdm_f64_cos_kernel(r);
    return (q & 2) == 0 ? w.x : -w.x;
}

double tdm_cos(double x) {
    double v = tdm_f64_cos_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    if (!tdm_f64_isfinite(x)) return tdm_f64_isnan(x) ? x : tdm_f64_nan();
    if (abs(x) < 7.450580596923828e-09LF) return 1.0LF;
    dvec2 r;
    int q = tdm_f64_rem_pio2(x, r);
    dvec2 w = (q & 1) == 0 ? tdm_f64_cos_kernel(r) : tdm_f64_sin_kernel(r);
    return (((q + 1) & 2) == 0) ? w.x : -w.x;
}

double tdm_tan(double x) {
    if (!tdm_f64_isfinite(x)) return tdm_f64_isnan(x) ? x : tdm_f64_nan();
    if (abs(x) < 7.450580596923828e-09LF) return x;  // x + x^3/3 rounds to x
    dvec2 r;
    int q = tdm_f64_rem_pio2(x, r);
    dvec2 s = tdm_f64_sin_kernel(r), c = tdm_f64_cos_kernel(r);
    // sin and cos to ~2^-57 each, then a double-double quotient: one final rounding
    return (q & 1) == 0 ? tdm_dd_div(s, c).x : -tdm_dd_div(c, s).x;
}

// ---------------------------------------------------------------------------------------------------------
// Inverse trigonometric functions
// ---------------------------------------------------------------------------------------------------------
// --- Fast paths of atan, atan2, asin and acos, plain double (FreeBSD s_atan.c, e_asin.c, e_acos.c; < 1 ulp),
// branch-free (intervals chosen by selects, one after another: GCC does not vectorise a select between
// selects), NaN where they do not apply, as tdm_f64_exp_fast. They divide in double: the result then depends
// on the device's f64 division being IEEE's, as it is on lavapipe, NVIDIA and AMD (the tests compare bits).

// atan(a + da) for a >= 0 (Inf too), |da| <= ulp(a): s_atan.c's reduction to [0, 7/16] by atan(a) = atan(c) +
// atan((a - c)/(1 + a c)), c = 0, 1/2, 1, 3/2 or Inf, and its polynomial, with da/(1 + a^2) added to the low
// terms. Returns the result unrounded as hi (atan(c)'s leading part) + lo.
TDM_INLINE dvec2 tdm_f64_atan_parts(double a, double da) {
    double num = -1.0LF, den = a;                                  // [39/16, Inf]: atan(Inf) + atan(-1/a)
    double hi = 1.57079632679489655800e+00LF, lo = 6.12323399573676603587e-17LF;
    bool r3 = a < 2.4375LF, r2 = a < 1.1875LF, r1 = a < 0.6875LF, r0 = a < 0.4375LF;
    num = r3 ? a - 1.5LF : num;                                    // [19/16, 39/16): c = 3/2
    den = r3 ? 1.0LF + 1.5LF * a : den;
    hi = r3 ? 9.82793723247329054082e-01LF : hi;
    lo = r3 ? 1.39033110312309984516e-17LF : lo;
    num = r2 ? a - 1.0LF : num;                                    // [11/16, 19/16): c = 1
    den = r2 ? a + 1.0LF : den;
    hi = r2 ? 7.85398163397448278999e-01LF : hi;
    lo = r2 ? 3.06161699786838301793e-17LF : lo;
    num = r1 ? 2.0LF * a - 1.0LF : num;                            // [7/16, 11/16): c = 1/2
    den = r1 ? 2.0LF + a : den;
    hi = r1 ? 4.63647609000806093515e-01LF : hi;
    lo = r1 ? 2.26987774529616870924e-17LF : lo;
    double t = num / den;
    t = r0 ? a : t;                                                // [0, 7/16): c = 0
    hi = r0 ? 0.0LF : hi;
    lo = r0 ? 0.0LF : lo;
    lo += da / (1.0LF + a * a);
    double z = t * t, w = z * z;
    double s1 = z * (3.33333333333329318027e-01LF + w * (1.42857142725034663711e-01LF + w * (9.09088713343650656196e-02LF
              + w * (6.66107313738753120669e-02LF + w * (4.97687799461593236017e-02LF + w * 1.62858201153657823623e-02LF)))));
    double s2 = w * (-1.99999999998764832476e-01LF + w * (-1.11111104054623557880e-01LF + w * (-7.69187620504482999495e-02LF
              + w * (-5.83357013379057348645e-02LF + w * -3.65315727442169155270e-02LF))));
    return dvec2(hi, -((t * (s1 + s2) - lo) - t));
}

double tdm_f64_atan_fast(double x) {
    dvec2 p = tdm_f64_atan_parts(abs(x), 0.0LF);
    return tdm_f64_copysign(p.x + p.y, x);           // NaN for NaN
}

// Every finite (y, x) whose larger magnitude is below 2^1023: the quotient of the two scaled into [1, 2) and
// its exact residual, so atan's argument is y/x to 2^-106; pi - atan in double-double for x < 0. A ratio
// below 2^-30 (or above 2^30) is one division (also where it is subnormal and residuals would underflow).
double tdm_f64_atan2_fast(double y, double x) {
    double ay = abs(y), ax = abs(x);
    bool xneg = tdm_f64_signbit(x);
    bool finite = ay < 8.98846567431158e307LF && ax < 8.98846567431158e307LF;   // 2^1023; false for NaN
    double m = ax < ay ? ay : ax;
    double pre = m < 2.2250738585072014e-308LF ? 18014398509481984.0LF : 1.0LF;   // subnormals: 2^54 first
    bool g = finite && m > 0.0LF;
    double sc = int64BitsToDouble((2046L - (doubleBitsToInt64(g ? m * pre : 1.0LF) >> 52)) << 52);
    double gy = g ? (ay * pre) * sc : 1.0LF, gx = g ? (ax * pre) * sc : 1.0LF;   // exact: the larger in [1, 2)
    gy = gy < gx * 9.313225746154785e-10LF ? gx : gy;   // the small ratios are not this case's (keeps it in range)
    gx = gx < gy * 9.313225746154785e-10LF ? gy : gx;
    double t = gy / gx;
    dvec2 tx = tdm_dd_two_prod(t, gx);
    precise double res = (gy - tx.x) - tx.y;        // exact: gy - t gx
    dvec2 a = tdm_f64_atan_parts(t, res / gx);
    dvec2 pa = tdm_dd_two_sum(TDM_PI_DD.x, -a.x);
    double r = xneg ? pa.x + (pa.y + (TDM_PI_DD.y - a.y)) : a.x + a.y;
    r = g ? r : tdm_f64_nan();
    // |y/x| < 2^-30 or > 2^30: one division
    double t1 = ay / ax, t2 = ax / ay;
    double r2 = tdm_dd_add_d(TDM_PIO2_DD, xneg ? t2 : -t2).x;
    double r1 = tdm_dd_add_d(TDM_PI_DD, -t1).x;
    r1 = xneg ? r1 : t1;
    double r0 = xneg ? TDM_PI_DD.x : 0.0LF;          // y = 0
    r = ax < ay * 9.313225746154785e-10LF ? r2 : r;
    r = ay < ax * 9.313225746154785e-10LF ? r1 : r;
    r = ax == 0.0LF ? TDM_PIO2_DD.x : r;
    r = ay == 0.0LF ? r0 : r;
    r = finite ? r : tdm_f64_nan();
    return tdm_f64_copysign(r, y);
}

// asin/acos's rational approximation R(t) = (asin(sqrt t) - sqrt t) / (t sqrt t) on [0, 1/4] (e_asin.c).
TDM_INLINE double tdm_f64_asin_r(double t) {
    double p = t * (1.66666666666666657415e-01LF + t * (-3.25565818622400915405e-01LF + t * (2.01212532134862925881e-01LF
             + t * (-4.00555345006794114027e-02LF + t * (7.91534994289814532176e-04LF + t * 3.47933107596021167570e-05LF)))));
    double q = 1.0LF + t * (-2.40339491173441421878e+00LF + t * (2.02094576023350569471e+00LF
             + t * (-6.88283971605453293030e-01LF + t * 7.70381505559019352791e-02LF)));
    return p / q;
}

double tdm_f64_asin_fast(double x) {
    double a = abs(x);
    bool small = a < 0.5LF;
    double t = small ? a * a : (1.0LF - a) * 0.5LF;
    double r = tdm_f64_asin_r(t);
    double s = sqrt(t);                              // NaN for |x| > 1
    // |x| in [0.975, 1]: pi/2 - 2 (s + s r)
    double v = TDM_PIO2_DD.x - (2.0LF * (s + s * r) - TDM_PIO2_DD.y);
    // [0.5, 0.975): s split as w + c with w its leading 21 bits, for the extra bits pi/2 - 2w keeps
    double w = int64BitsToDouble(doubleBitsToInt64(s) & int64_t(0xFFFFFFFF00000000UL));
    double c = (t - w * w) / (s + w);
    double vm = TDM_PIO4 - ((2.0LF * s * r - (TDM_PIO2_DD.y - 2.0LF * c)) - (TDM_PIO4 - 2.0LF * w));
    v = a < 0.97499942779541015625LF ? vm : v;
    v = small ? a + a * r : v;
    v = a <= 1.0LF ? v : tdm_f64_nan();              // NaN too
    return tdm_f64_copysign(v, x);
}

double tdm_f64_acos_fast(double x) {
    double a = abs(x);
    bool small = a < 0.5LF;
    double z = small ? x * x : (1.0LF - a) * 0.5LF;
    double r = tdm_f64_asin_r(z);
    double s = sqrt(z);
    // x > 0.5: 2 (w + (r s + c)), s = w + c as in asin
    double w = int64BitsToDouble(doubleBitsToInt64(s) & int64_t(0xFFFFFFFF00000000UL));
    double c = (z - w * w) / (s + w);
    double v = 2.0LF * (w + (r * s + c));
    double vn = TDM_PI_DD.x - 2.0LF * (s + (r * s - TDM_PIO2_DD.y));   // x < -0.5
    v = x < 0.0LF ? vn : v;
    v = small ? TDM_PIO2_DD.x - (x - (TDM_PIO2_DD.y - x * r)) : v;
    v = a == 1.0LF ? (x > 0.0LF ? 0.0LF : TDM_PI_DD.x + 2.0LF * TDM_PIO2_DD.y) : v;   // c is 0/0 there
    return a <= 1.0LF ? v : tdm_f64_nan();           // NaN too
}

double tdm_atan(double x) {
    return tdm_f64_atan_fast(x);                    // every x (NaN gives NaN)
}

double tdm_atan2(double y, double x) {
    double v = tdm_f64_atan2_fast(y, x);            // every finite pair below 2^1023
    if (!tdm_f64_isnan(v)) return v;
    if (tdm_f64_isnan(x) || tdm_f64_isnan(y)) return x + y;
    double ay = abs(y), ax = abs(x);
    bool xneg = tdm_f64_signbit(x);
    double r;
    if (tdm_f64_isinf(ay)) {
        r = tdm_f64_isinf(ax) ? (xneg ? 2.35619449019234484e+00LF : TDM_PIO4) : TDM_PIO2_DD.x;
    } else if (tdm_f64_isinf(ax)) {
        r = xneg ? TDM_PI_DD.x : 0.0LF;
    } else {
        // a magnitude of 2^1023 or more: halve both (exact, but for a subnormal smaller one, whose ratio to
        // the larger is then 0 either way)
        return tdm_f64_atan2_fast(y * 0.5LF, x * 0.5LF);
    }
    return tdm_f64_copysign(r, y);
}

double tdm_asin(double x) {
    return tdm_f64_asin_fast(x);                    // NaN for NaN and |x| > 1
}

double tdm_acos(double x) {
    return tdm_f64_acos_fast(x);
}

// ---------------------------------------------------------------------------------------------------------
// Hyperbolic functions
// ---------------------------------------------------------------------------------------------------------
// Fast paths (plain double, < 0.9 ulp; NaN where they do not apply, as tdm_f64_exp_fast) on u = expm1(|x|) as
// a double-double: sinh = (u + u/(u+1))/2 and cosh = (e + 1/e)/2 with e = 1 + u for |x| < 22, e^|x|/2 above
// (e^-|x| is then below 2^-63 relative); tanh = u/(u + 2) with u = expm1(2|x|), 1 above 22.
double tdm_f64_sinh_fast(double x) {
    double a = abs(x);
    dvec2 u = tdm_f64_expm1_parts(a < 22.0LF ? a : 0.0LF);
    double r = 0.5LF * tdm_dd_add(u, tdm_dd_div(u, tdm_dd_add_d(u, 1.0LF))).x;
    r = a < 22.0LF ? r : 0.5LF * tdm_f64_exp_fast(a);
    r = a < 7.450580596923828e-09LF ? x : tdm_f64_copysign(r, x);   // 2^-27: x + x^3/6 rounds to x
    return a < 707.0LF ? r : tdm_f64_nan();
}

double tdm_f64_cosh_fast(double x) {
    double a = abs(x);
    dvec2 e = tdm_dd_add_d(tdm_f64_expm1_parts(a < 22.0LF ? a : 0.0LF), 1.0LF);
    double r = 0.5LF * tdm_dd_add(e, tdm_dd_div(dvec2(1.0LF, 0.0LF), e)).x;
    r = a < 22.0LF ? r : 0.5LF * tdm_f64_exp_fast(a);
    return a < 707.0LF ? r : tdm_f64_nan();
}

double tdm_f64_tanh_fast(double x) {
    double a = abs(x);
    dvec2 u = tdm_f64_expm1_parts(a <= 22.0LF ? 2.0LF * a : 0.0LF);
    double r = tdm_dd_div(u, tdm_dd_add_d(u, 2.0LF)).x;
    r = a > 22.0LF ? 1.0LF : r;                      // 1 - 2e^-2a rounds to 1
    r = a < 7.450580596923828e-09LF ? x : tdm_f64_copysign(r, x);   // x - x^3/3 rounds to x
    return tdm_f64_isnan(x) ? tdm_f64_nan() : r;
}

// |x| >= 707: e^|x|/2 with a double-double exp (overflows from 710.5)
double tdm_f64_half_exp_large(double a) {
    if (a >= 711.0LF) return tdm_f64_inf();
    int k;
    dvec2 e = tdm_f64_exp_core(dvec2(a, 0.0LF), k);
    return tdm_f64_scale(e.x, k - 1);
}

double tdm_sinh(double x) {
    double v = tdm_f64_sinh_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    if (!tdm_f64_isfinite(x)) return x + x;          // NaN, +-Inf
    return tdm_f64_copysign(tdm_f64_half_exp_large(abs(x)), x);
}

double tdm_cosh(double x) {
    double v = tdm_f64_cosh_fast(x);
    if (!tdm_f64_isnan(v)) return v;
    if (tdm_f64_isnan(x)) return x + x;
    return tdm_f64_half_exp_large(abs(x));           // +-Inf too
}

double tdm_tanh(double x) {
    return tdm_f64_tanh_fast(x);                     // every x (NaN gives NaN)
}

// ---------------------------------------------------------------------------------------------------------
// pow, hypot, fmod
// ---------------------------------------------------------------------------------------------------------
// Fast path of pow: FreeBSD e_pow.c's method ("nearly rounded", pow(integer, integer) exact when
// representable). x = 2^n m with m in [1, sqrt 3) (m above halved), log2 m from s = (m - b)/(m + b), b = 1 or
// 1.5, so that log2 x = t1 + t2 with t1 of 21 significant bits; y (t1 + t2) = p_h + p_l exactly enough, split
// into an integer n and z in [-1/2, 1/2]; 2^z from a rational, scaled by 2^n. Bit masks keep the leading
// parts' products exact. y = +-1, 2 and 1/2 are x, 1/x, x x and sqrt(x), as there. For x normal (negative only
// with an integer y), 0 < |y| < 2^31 and |y log2 x| < 1020; NaN elsewhere, as tdm_f64_exp_fast. Conditions are
// applied one select at a time (GCC 12 does not vectorise selects of combined conditions here).
TDM_INLINE double tdm_f64_low_zero(double x) {       // x with its low 32 bits cleared
    return int64BitsToDouble(doubleBitsToInt64(x) & int64_t(0xFFFFFFFF00000000UL));
}
double tdm_f64_pow_fast(double x, double y) {
    double ax = abs(x), ay = abs(y);
    double xc = ax >= 2.2250738585072014e-308LF ? ax : 1.5LF;   // harmless operands elsewhere
    xc = ax < tdm_f64_inf() ? xc : 1.5LF;
    double yc = ay < 2147483648.0LF ? y : 1.0LF;                 // 2^31; false for NaN
    int64_t bx = doubleBitsToInt64(xc);
    int64_t j = (bx >> 32) & 0x000FFFFFL;           // the high word's significand bits
    double n = tdm_f64_biased_exponent(bx) - 1023.0LF;
    bool big = j >= 0xBB67AL;                       // m >= sqrt(3): m/2, n + 1
    n = big ? n + 1.0LF : n;
    int64_t mhi = j | (big ? 0x3FE00000L : 0x3FF00000L);
    double m = int64BitsToDouble((mhi << 32) | (bx & 0xFFFFFFFFL));
    bool mid = (mhi & 0x3FF00000L) == 0x3FF00000L && j > 0x3988EL;   // m in (sqrt(3/2), sqrt(3)): b = 1.5
    double b = mid ? 1.5LF : 1.0LF;
    double dp_h = mid ? 5.84962487220764160156e-01LF : 0.0LF;     // log2(1.5) = dp_h + dp_l
    double dp_l = mid ? 1.35003920212974897128e-08LF : 0.0LF;
    int64_t kb = mid ? 0x40000L : 0L;                // k << 18 of e_pow.c
    // s = (m - b)/(m + b) = s_h + s_l, s_h with 21 significant bits
    double u = m - b;
    double v = 1.0LF / (m + b);
    double ss = u * v;
    double s_h = tdm_f64_low_zero(ss);
    double t_h = int64BitsToDouble((((mhi >> 1) | 0x20000000L) + 0x00080000L + kb) << 32);   // m + b, high part
    double t_l = m - (t_h - b);
    double s_l = v * ((u - s_h * t_h) - s_h * t_l);
    // log2 m = (2/(3 ln2)) (3 s + s^3 + R(s^2)) as p_h + p_l, then t1 + t2 = n + dp + that
    double s2 = ss * ss;
    double r = s2 * s2 * (5.99999999999994648725e-01LF + s2 * (4.28571428578550184252e-01LF + s2 * (3.33333329818377432918e-01LF
             + s2 * (2.72728123808534006489e-01LF + s2 * (2.30660745775561754067e-01LF + s2 * 2.06975017800338417784e-01LF)))));
    r += s_l * (s_h + ss);
    s2 = s_h * s_h;
    t_h = tdm_f64_low_zero(3.0LF + s2 + r);
    t_l = r - ((t_h - 3.0LF) - s2);
    u = s_h * t_h;
    v = s_l * t_h + t_l * ss;
    double p_h = tdm_f64_low_zero(u + v);
    double p_l = v - (p_h - u);
    double z_h = 9.61796700954437255859e-01LF * p_h;                                 // cp_h
    double z_l = -7.02846165095275826516e-09LF * p_h + p_l * 9.61796693925975554329e-01LF + dp_l;   // cp_l, cp
    double t1 = tdm_f64_low_zero(((z_h + z_l) + dp_h) + n);
    double t2 = z_l - (((t1 - n) - dp_h) - z_h);
    // y log2 x = p_h + p_l, p_h = y1 t1 exact (21 + 21 bits)
    double y1 = tdm_f64_low_zero(yc);
    p_l = (yc - y1) * t1 + yc * t2;
    p_h = y1 * t1;
    double z = p_l + p_h;
    double zc = abs(z) < 1020.0LF ? z : 0.0LF;
    double nz = tdm_f64_round_even(zc);
    p_h -= nz;                                       // exact
    // 2^(p_h + p_l) for |p_h + p_l| <= 1/2: exp(w) with w = (p_h + p_l) ln2 as zz + ww
    double t = tdm_f64_low_zero(p_l + p_h);
    u = t * 6.93147182464599609375e-01LF;                                            // lg2_h
    v = (p_l - (t - p_h)) * 6.93147180559945286227e-01LF + t * -1.90465429995776804525e-09LF;   // lg2, lg2_l
    double zz = u + v;
    double ww = v - (zz - u);
    t = zz * zz;
    t1 = zz - t * (1.66666666666666019037e-01LF + t * (-2.77777777770155933842e-03LF + t * (6.61375632143793436117e-05LF
            + t * (-1.65339022054652515390e-06LF + t * 4.13813679705723846039e-08LF))));
    r = (zz * t1) / (t1 - 2.0LF) - (ww + zz * ww);
    double res = (1.0LF - (r - zz)) * tdm_f64_pow2i(int(nz));
    double odd = tdm_f64_round_even(yc * 0.5LF) != yc * 0.5LF ? -res : res;   // (yc * 0.5 is exact)
    res = x < 0.0LF ? odd : res;
    res = y == 1.0LF ? x : res;
    res = y == -1.0LF ? 1.0LF / x : res;
    res = y == 2.0LF ? x * x : res;
    res = y == 0.5LF ? sqrt(x) : res;
    double nan = tdm_f64_nan();
    res = abs(z) < 1020.0LF ? res : nan;
    res = ay < 2147483648.0LF ? res : nan;
    res = ay > 0.0LF ? res : nan;
    res = ax >= 2.2250738585072014e-308LF ? res : nan;
    res = ax < tdm_f64_inf() ? res : nan;
    return x > 0.0LF || tdm_f64_round_even(yc) == yc ? res : nan;   // a negative x needs an integer y
}

// 0: y not an integer, 1: odd integer, 2: even integer (y finite)
int tdm_f64_int_kind(double y) {
    if (tdm_trunc(y) != y) return 0;             // (convert_f32.glsl: exact on every device)
    if (abs(y) >= 9007199254740992.0LF) return 2;   // 2^53 and above: all even
    return (int64_t(y) & 1L) != 0L ? 1 : 2;
}

// pow(x, y) = exp(y log|x|) for what the fast path leaves (zeros, infinities, subnormal x, |y| >= 2^31,
// results near overflow or subnormal): log as a double-double (~2^-100), the product exact to ~2^-106, and exp
// of a double-double argument, so the 1/2^53 relative error needed near |y log x| = 709 is met.
double tdm_pow(double x, double y) {
    double v = tdm_f64_pow_fast(x, y);
    if (!tdm_f64_isnan(v)) return v;
    if (y == 0.0LF) return 1.0LF;                    // even for NaN x
    if (x == 1.0LF) return 1.0LF;                    // even for NaN y
    if (tdm_f64_isnan(x) || tdm_f64_isnan(y)) return x + y;
    double ax = abs(x);
    if (tdm_f64_isinf(y)) {
        if (ax == 1.0LF) return 1.0LF;               // pow(-1, +-Inf) = 1
        return ((ax < 1.0LF) == (y < 0.0LF)) ? tdm_f64_inf() : 0.0LF;
    }
    int yk = tdm_f64_int_kind(y);
    bool negres = tdm_f64_signbit(x) && yk == 1;     // odd integer y keeps the sign of x (also of -0, -Inf)
    if (ax == 0.0LF || tdm_f64_isinf(ax)) {
        bool big = (ax == 0.0LF) == (y < 0.0LF);     // 0^neg and Inf^pos are Inf
        double r = big ? tdm_f64_inf() : 0.0LF;
        return negres ? -r : r;
    }
    if (x < 0.0LF && yk == 0) return tdm_f64_nan();  // negative base, non-integer exponent
    dvec2 l = tdm_f64_log_dd(ax);
    double zh = y * l.x;
    double r;
    if (zh > 710.0LF) r = tdm_f64_inf();
    else if (zh < -746.0LF) r = 0.0LF;
    else {
        dvec2 z = tdm_dd_two_prod(y, l.x);
        z = tdm_dd_fast_two_sum(z.x, z.y + y * l.y);
        int k;
        dvec2 e = tdm_f64_exp_core(z, k);
        r = tdm_f64_scale(e.x, k);
    }
    return negres ? -r : r;
}

// hypot: scale so the larger is in [1, 2), sum the exact squares as a double-double, double-double sqrt.
double tdm_hypot(double x, double y) {
    if (tdm_f64_isinf(x) || tdm_f64_isinf(y)) return tdm_f64_inf();   // even if the other is NaN
    if (tdm_f64_isnan(x) || tdm_f64_isnan(y)) return x + y;
    double a = max(abs(x), abs(y)), b = min(abs(x), abs(y));
    if (b == 0.0LF) return a;
    int e = tdm_f64_ilogb(a);
    a = tdm_f64_scale(a, -e);                         // exact, a in [1, 2)
    b = tdm_f64_scale(b, -e);                         // may round only when b/a < 2^-1000 (then irrelevant)
    dvec2 s = tdm_dd_add(tdm_dd_two_prod(a, a), tdm_dd_two_prod(b, b));
    dvec2 r = tdm_dd_sqrt(s);
    return tdm_f64_scale(r.x, e);
}

// fmod: exact, in integers. |x| = mx 2^ex, |y| = my 2^ey (53-bit integer significands, subnormals
// unnormalised); (mx 2^(ex-ey)) mod my is built 10 bits at a time, so the remainder never leaves uint64.
double tdm_fmod(double x, double y) {
    if (tdm_f64_isnan(x) || tdm_f64_isnan(y) || tdm_f64_isinf(x) || y == 0.0LF) return tdm_f64_nan();
    int64_t bx = doubleBitsToInt64(x) & TDM_F64_ABSMASK;
    int64_t by = doubleBitsToInt64(y) & TDM_F64_ABSMASK;
    if (bx < by) return x;                           // |x| < |y| (includes y = Inf, x = +-0)
    int ex = int(bx >> 52), ey = int(by >> 52);
    uint64_t mx = uint64_t(bx & 0x000FFFFFFFFFFFFFL), my = uint64_t(by & 0x000FFFFFFFFFFFFFL);
    if (ex == 0) ex = 1; else mx |= 0x0010000000000000UL;
    if (ey == 0) ey = 1; else my |= 0x0010000000000000UL;
    uint64_t rm = mx % my;
    for (int d = ex - ey; d > 0 && rm != 0UL; ) {
        int s = min(d, 10);
        rm = (rm << s) % my;
        d -= s;
    }
    if (rm == 0UL) return tdm_f64_copysign(0.0LF, x);
    // rm 2^(ey-1075): normalise (exact; may end subnormal)
    int e = ey;
    while (rm < 0x0010000000000000UL && e > 1) { rm <<= 1; e--; }
    int64_t bits = rm >= 0x0010000000000000UL ? ((int64_t(e) << 52) | int64_t(rm & 0x000FFFFFFFFFFFFFUL)) : int64_t(rm);
    return tdm_f64_copysign(int64BitsToDouble(bits), x);
}

// ---------------------------------------------------------------------------------------------------------
// The CPU's vector forms of the double-double functions
// ---------------------------------------------------------------------------------------------------------
// tan and hypot have no plain-double fast path: they run the double-double algorithms above. These are the same operations for the common inputs, with selects instead of branches,
// so that the CPU's kernels run them over a block in vector registers (one element at a time, they cost
// 2-15 times glibc's scalar functions). Each returns bit for bit what its
// function returns, or NaN where the function's other branches are needed (NaN, infinite, huge or subnormal
// operands), and the CPU sends those lanes through the function. The Vulkan tests hold every CPU kernel to
// the device's bits, and the device runs the functions themselves: on a GPU a branch costs less than
// computing both sides. Lanes that a select discards still compute, so their operands are first replaced
// by harmless values (no float-to-int conversion of a NaN).
const double TDM_F64_TINY = 7.450580596923828e-09LF;   // 2^-27: f(x) rounds to x (or to 1)


double tdm_f64_tan_fast(double x) {
    double a = abs(x);
    bool ok = a < 1647099.0LF;                       // false for NaN, +-Inf
    double xc = ok ? x : 0.0LF;
    dvec2 r;
    int q = tdm_f64_rem_pio2_medium(xc, r);
    bool small = a <= TDM_PIO4;
    r = small ? dvec2(xc, 0.0LF) : r;
    q = small ? 0 : q;
    dvec2 s = tdm_f64_sin_kernel(r), c = tdm_f64_cos_kernel(r);
    bool even = (q & 1) == 0;
    double v = tdm_dd_div(even ? s : c, even ? c : s).x;
    v = even ? v : -v;
    v = a < TDM_F64_TINY ? x : v;
    return ok ? v : tdm_f64_nan();
}




// Finite x, y whose larger magnitude is normal and below 2^1023 (the function's scaling is then one exact
// multiply each way).
double tdm_f64_hypot_fast(double x, double y) {
    double ax = abs(x), ay = abs(y);
    double a = ax < ay ? ay : ax, b = ax < ay ? ax : ay;
    bool ok = ax < 8.98846567431158e307LF && ay < 8.98846567431158e307LF;   // false for NaN, Inf
    double ac = ok ? a : 1.0LF, bc = ok ? b : 1.0LF;
    int64_t field = doubleBitsToInt64(ac) >> 52;     // e + 1023, e = ilogb(a)
    double as = ac * int64BitsToDouble((2046L - field) << 52), bs = bc * int64BitsToDouble((2046L - field) << 52);
    dvec2 s = tdm_dd_add(tdm_dd_two_prod(as, as), tdm_dd_two_prod(bs, bs));   // a scaled into [1, 2)
    double r = tdm_dd_sqrt(s).x * int64BitsToDouble(field << 52);
    r = b == 0.0LF ? a : r;
    r = a >= 2.2250738585072014e-308LF || b == 0.0LF ? r : tdm_f64_nan();
    return ok ? r : tdm_f64_nan();
}

#endif // TDM_MATH_F64_GLSL
