// convert_f32.glsl -- exact float <-> double conversions and the correctly rounded f32 division, square
// root built on them, for every generated kernel that touches single precision (the Vulkan backend pastes
// this file into each kernel; math_f32.glsl needs it too). Same #version/#extension requirements as
// math_f64.glsl (shaderFloat64, shaderInt64), and GL_EXT_control_flow_attributes.

#ifndef TDM_CONVERT_F32_GLSL
#define TDM_CONVERT_F32_GLSL

// Exact conversions between float and double that do not depend on the device's fp32 denormal handling.
// NVIDIA's Vulkan driver flushes fp32 subnormals to 0 in float->double conversion (and in fp32 arithmetic),
// so tdm_f32_to_f64 rebuilds a subnormal input from its bits: double(mantissa) * 2^-149 is exact in double.
// tdm_f64_to_f32 rounds a double to float once (to nearest even, as float(d) does in IEEE arithmetic) and
// builds a subnormal result from its bits: round(|d| * 2^149) is the subnormal's mantissa (2^23 gives the
// smallest normal float's bits, as it should). Every f32 function that goes through f64 uses this pair.
// trunc from the bits: exact on every device. Mesa 22.3's lavapipe on CPUs without AVX-512 gets the
// built-in wrong for doubles (-0.5 gives +0; 6.6e11 + 0.25 comes back unchanged), and the CPU's
// trunc is IEEE's.
double tdm_trunc(double x) {
    int64_t b = doubleBitsToInt64(x);
    int e = int((b >> 52) & 0x7FFL) - 1023;
    if (e >= 52) return x;                                                  // integral, Inf, NaN
    if (e < 0) return int64BitsToDouble(b & int64_t(0x8000000000000000UL)); // |x| < 1: a signed zero
    return int64BitsToDouble(b & ~((1L << (52 - e)) - 1L));
}
float tdm_trunc(float x) {
    uint b = floatBitsToUint(x);
    int e = int((b >> 23) & 0xFFu) - 127;
    if (e >= 23) return x;
    if (e < 0) return uintBitsToFloat(b & 0x80000000u);
    return uintBitsToFloat(b & ~((1u << uint(23 - e)) - 1u));
}

double tdm_f32_to_f64(float x) {
    uint b = floatBitsToUint(x);
    if ((b & 0x7F800000u) != 0u) return double(x);                        // normal, Inf, NaN: exact
    precise double m = double(b & 0x007FFFFFu) * 1.4012984643248171e-45LF;  // 2^-149, exact
    return (b & 0x80000000u) != 0u ? -m : m;                               // keeps -0
}
float tdm_f64_to_f32(double d) {
    precise double a = abs(d);
    if (!(a < 1.1754943508222875e-38LF)) return float(d);                 // >= 2^-126, Inf, NaN
    // The mantissa: a * 2^149 (exact, below 2^23) rounded to nearest even, from its exact integer
    // and fraction parts (roundEven has the trunc's trouble on lavapipe).
    precise double y = a * 7.1362384635297994e+44LF;                       // 2^149: exact scaling
    precise double t = tdm_trunc(y);
    precise double f = y - t;                                               // exact
    uint m = uint(t);
    if (f > 0.5LF || (f == 0.5LF && (m & 1u) == 1u)) m += 1u;
    uint sign = uint(doubleBitsToUint64(d) >> 32) & 0x80000000u;
    return uintBitsToFloat(sign | m);
}

// Correctly rounded a / b for floats (bit-identical to IEEE float division, the CPU's), for the Vulkan backend's
// f32 division: in double, by a reciprocal refined in double where the operands allow (below), else from exact
// conversions (tdm_f32_to_f64 / tdm_f64_to_f32, so subnormal
// operands and results are right on devices that flush fp32 denormals, as NVIDIA's does -- the prelude's
// float(double(a) / double(b)) was not); correctly rounded since 53 >= 2*24 + 2 (a subnormal result's
// double rounding is innocuous too: a quotient of floats is never within 2^-48 relative of a subnormal
// midpoint without being one).
float tdm_divf(float a, float b) {
    // The common case (a normal, b normal below 2^126, a normal result) without an f64 division
    // (H100, 132M elements summed: x ./ sigma broadcast 0.523 -> 0.437 ms; x ./ 3.7 unchanged at
    // 0.42, where the f32/f64 conversions are the cost): 1/b from the f32 reciprocal (Vulkan:
    // within 2.5 ulp) and two Newton steps in double (within 2^-51), q = a * (1/b) within 2^-50.9
    // of a/b. A quotient of floats is never a midpoint of
    // floats (that takes 25 significant bits; a float over a float has at most 24) and lies at
    // least 2^-49 from one (relative), so float(q) rounds a/b correctly. The rest (zeros,
    // subnormals, infinities, NaN, a subnormal result) from the bits through the f64 division.
    // dont_flatten: as a select, the rebuild's double operations would run for every element
    // (measured: the fp32 8-op chain's kernel 12% slower on the H100).
    uint ea = floatBitsToUint(a) & 0x7F800000u, eb = floatBitsToUint(b) & 0x7F800000u;
    [[dont_flatten]] if (ea != 0u && ea != 0x7F800000u && eb != 0u && eb < 0x7E800000u) {
        double bd = double(b);
        double r = double(1.0f / b);
        r = r * (2.0LF - bd * r);
        r = r * (2.0LF - bd * r);
        double q = double(a) * r;
        if (abs(q) >= 1.1754943508222875e-38LF) return float(q);
    }
    return tdm_f64_to_f32(tdm_f32_to_f64(a) / tdm_f32_to_f64(b));
}
// Correctly rounded sqrt of a float: the double sqrt of the exact conversion, rounded once (53 >= 2*24 + 2);
// the result of a normal operand is normal.
float tdm_sqrtf(float a) {
    [[dont_flatten]] if ((floatBitsToUint(a) & 0x7F800000u) == 0u) return tdm_f64_to_f32(sqrt(tdm_f32_to_f64(a)));
    return float(sqrt(double(a)));
}

#endif
