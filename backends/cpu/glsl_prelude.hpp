// What the GLSL math libraries (shaders/math_f64.glsl, math_f32.glsl, convert_f32.glsl) need to
// compile as C++: dvec2 and the GLSL builtins they call, with GLSL's semantics. Included inside the
// CPU kernels' per-ISA anonymous namespace (kernels_impl.inc) together with the translated
// libraries (cmake/glsl_to_cpp.cmake), so everything here is builtins and internal linkage: no
// function of a standard header that the linker could merge across ISAs.
//
// Every operation rounds as the GPU's does, provided the translation unit is compiled with
// -ffp-contract=off (no a*b+c fused: the generated kernels mark the library NoContraction) and
// without -ffast-math, and the device's f64 division and sqrt are IEEE (lavapipe, NVIDIA, AMD).

using uint = unsigned int;

struct dvec2 {
    double x, y;
    constexpr dvec2() : x(0.0), y(0.0) {}
    constexpr explicit dvec2(double v) : x(v), y(v) {}
    constexpr dvec2(double a, double b) : x(a), y(b) {}
};
constexpr dvec2 operator-(dvec2 a) { return dvec2(-a.x, -a.y); }
constexpr dvec2 operator*(dvec2 a, double s) { return dvec2(a.x * s, a.y * s); }
constexpr dvec2 operator*(double s, dvec2 a) { return dvec2(s * a.x, s * a.y); }

inline std::int64_t doubleBitsToInt64(double x) { return __builtin_bit_cast(std::int64_t, x); }
inline std::uint64_t doubleBitsToUint64(double x) { return __builtin_bit_cast(std::uint64_t, x); }
inline double int64BitsToDouble(std::int64_t b) { return __builtin_bit_cast(double, b); }
inline double uint64BitsToDouble(std::uint64_t b) { return __builtin_bit_cast(double, b); }
inline uint floatBitsToUint(float x) { return __builtin_bit_cast(uint, x); }
inline int floatBitsToInt(float x) { return __builtin_bit_cast(int, x); }
inline float uintBitsToFloat(uint b) { return __builtin_bit_cast(float, b); }
inline float intBitsToFloat(int b) { return __builtin_bit_cast(float, b); }

inline double abs(double x) { return __builtin_fabs(x); }
inline float abs(float x) { return __builtin_fabsf(x); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline double min(double a, double b) { return b < a ? b : a; }   // GLSL: undefined for NaN; callers avoid it
inline double max(double a, double b) { return a < b ? b : a; }
inline float min(float a, float b) { return b < a ? b : a; }
inline float max(float a, float b) { return a < b ? b : a; }
inline int min(int a, int b) { return b < a ? b : a; }
inline int max(int a, int b) { return a < b ? b : a; }
inline uint min(uint a, uint b) { return b < a ? b : a; }
inline uint max(uint a, uint b) { return a < b ? b : a; }
inline double floor(double x) { return __builtin_floor(x); }
inline float floor(float x) { return __builtin_floorf(x); }
// rint rounds to nearest even in the default rounding mode, which Tandem never changes; unlike
// roundeven, GCC vectorises it (the fast paths' loops must vectorise).
inline double roundEven(double x) { return __builtin_rint(x); }
inline float roundEven(float x) { return __builtin_rintf(x); }
inline double sqrt(double x) { return __builtin_sqrt(x); }
inline float sqrt(float x) { return __builtin_sqrtf(x); }
