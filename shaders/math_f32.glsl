// math_f32.glsl -- single-precision elementary functions for Tandem's generated compute shaders.
//
// Policy (from the f64-math issue): a GLSL builtin may be used only where its error, measured on the device,
// is within 4 ulp of libm; otherwise Tandem's own implementation is used. The measurement is a per-device
// property (driver and GPU dependent), so this file does not decide it: for each function NAME the generator
// may #define TDM_F32_BUILTIN_<NAME> (e.g. TDM_F32_BUILTIN_EXP) before the include, and only when Tandem's
// device test has rechecked that builtin on this device (over the inputs of /work/f64math/mathtest --f32
// --builtin: random bits, [-10,10], [-1e3,1e3], near k*pi/2, near 0, subnormal, huge, edge values).
//
// Measured on lavapipe (Mesa llvmpipe, LLVM 15, 2026): NO builtin qualifies -- exp 64 ulp, log/log2 millions
// of ulp near 1, sin/cos/tan wrong for |x| > ~1e5 (results of +-1), asin/acos ~4000 ulp, atan 347 ulp and
// atan(NaN) = 0, sinh/cosh overflow early, pow/tanh/atan2 likewise beyond 4 ulp. So on lavapipe nothing
// is defined and every function below takes its own path.
//
// Own path: the value is computed by the f64 library (math_f64.glsl, included here) and rounded once to
// float. The f64 result is within ~0.8 ulp of double, so the float result is correctly rounded except in
// rare double-rounding cases (measured max 0.5 + 2^-28 ulp). This needs the f64 requirements (shaderFloat64,
// shaderInt64, GL_EXT_shader_explicit_arithmetic_types_int64). Devices without shaderFloat64 need
// float-native versions (not written yet); devices with slow f64 pay the f64 rate for these functions only.
//
// Include after math_f64.glsl (same #version/#extension requirements).

#ifndef TDM_MATH_F32_GLSL
#define TDM_MATH_F32_GLSL

#ifndef TDM_MATH_F64_GLSL
#error "math_f32.glsl: paste math_f64.glsl before this file (its own paths call the f64 functions)"
#endif

float tdm_expf(float x) {
#ifdef TDM_F32_BUILTIN_EXP
    return exp(x);
#else
    return float(tdm_exp(double(x)));
#endif
}
float tdm_expm1f(float x) {
    return float(tdm_expm1(double(x)));        // no GLSL builtin
}
float tdm_logf(float x) {
#ifdef TDM_F32_BUILTIN_LOG
    return log(x);
#else
    return float(tdm_log(double(x)));
#endif
}
float tdm_log2f(float x) {
#ifdef TDM_F32_BUILTIN_LOG2
    return log2(x);
#else
    return float(tdm_log2(double(x)));
#endif
}
float tdm_log10f(float x) {
    return float(tdm_log10(double(x)));        // no GLSL builtin
}
float tdm_log1pf(float x) {
    return float(tdm_log1p(double(x)));        // no GLSL builtin
}
float tdm_sinf(float x) {
#ifdef TDM_F32_BUILTIN_SIN
    return sin(x);
#else
    return float(tdm_sin(double(x)));
#endif
}
float tdm_cosf(float x) {
#ifdef TDM_F32_BUILTIN_COS
    return cos(x);
#else
    return float(tdm_cos(double(x)));
#endif
}
float tdm_tanf(float x) {
#ifdef TDM_F32_BUILTIN_TAN
    return tan(x);
#else
    return float(tdm_tan(double(x)));
#endif
}
float tdm_asinf(float x) {
#ifdef TDM_F32_BUILTIN_ASIN
    return asin(x);
#else
    return float(tdm_asin(double(x)));
#endif
}
float tdm_acosf(float x) {
#ifdef TDM_F32_BUILTIN_ACOS
    return acos(x);
#else
    return float(tdm_acos(double(x)));
#endif
}
float tdm_atanf(float x) {
#ifdef TDM_F32_BUILTIN_ATAN
    return atan(x);
#else
    return float(tdm_atan(double(x)));
#endif
}
float tdm_atan2f(float y, float x) {
#ifdef TDM_F32_BUILTIN_ATAN2
    return atan(y, x);
#else
    return float(tdm_atan2(double(y), double(x)));
#endif
}
float tdm_sinhf(float x) {
#ifdef TDM_F32_BUILTIN_SINH
    return sinh(x);
#else
    return float(tdm_sinh(double(x)));
#endif
}
float tdm_coshf(float x) {
#ifdef TDM_F32_BUILTIN_COSH
    return cosh(x);
#else
    return float(tdm_cosh(double(x)));
#endif
}
float tdm_tanhf(float x) {
#ifdef TDM_F32_BUILTIN_TANH
    return tanh(x);
#else
    return float(tdm_tanh(double(x)));
#endif
}
float tdm_powf(float x, float y) {
#ifdef TDM_F32_BUILTIN_POW
    return pow(x, y);
#else
    return float(tdm_pow(double(x), double(y)));
#endif
}
float tdm_hypotf(float x, float y) {
    return float(tdm_hypot(double(x), double(y)));   // no GLSL builtin
}
float tdm_fmodf(float x, float y) {
    return float(tdm_fmod(double(x), double(y)));     // exact in double, so exact in float
}

#endif // TDM_MATH_F32_GLSL
