// Accuracy of the GLSL math libraries (shaders/math_f64.glsl, math_f32.glsl) on the Vulkan device
// (lavapipe in CI), against glibc: every tdm_* function (f64) and tdm_*f function (f32) runs in a
// compute shader over inputs drawn as the standalone harness /work/f64math/mathtest does (random bit
// patterns, ranges, near multiples of pi/2, near 0, subnormals, huge values, the function's own
// domain, and a fixed set of edge and special values -- for two-argument functions every pair of
// them). Each result is compared with glibc as ordered integers (ulp distance):
//   * f64: at most 2 ulp from glibc; f32: at most 4 ulp from glibc's float function.
//   * f32 division (tdm_divf, the Vulkan backend's f32 ./): bit-identical to IEEE float division.
//   * Where glibc itself is more than 1 ulp from the exact value (libquadmath's __float128 for f64,
//     glibc's double function for f32) a larger distance from glibc is excused if the result is
//     within the same limit (2 / 4 ulp) of the exact value -- the harness's rule.
//   * Special results (NaN, +-Inf, +-0, on either side) must match exactly, sign of zero included.
//   * The CPU executor's kernel of the same op (the library translated to C++, every instruction set
//     this CPU has) gives the device's bits for every input: placement never changes an answer. The
//     shader carries the generated kernels' exact-arithmetic marker (no contraction), as they do.
// Each test prints (and records as test properties) the function's max ulp from glibc, the max
// error against the exact value and the worst input; the validation layer must stay silent.
//
// Inputs per function: TANDEM_MATH_INPUTS (default 200000, which keeps the whole suite under about a
// minute on lavapipe), spread over the categories in the harness's proportions, plus the fixed edge
// set (~340 values; ~115000 pairs for two-argument functions). TANDEM_MATH_INPUTS=4000000 runs the
// millions of inputs per function that the issue asks for (like the harness at --scale 1..2).
// The Vulkan side (context, pipelines, submission, read-back) is glsl_harness.hpp, shared with
// test_vulkan_philox.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels.hpp"
#include "backends/vulkan/compiler.hpp"
#include "graph/op_reference.hpp"
#include "glsl_harness.hpp"
#include "tandem_shaders.hpp"

#if __has_include(<quadmath.h>)
#include <quadmath.h>
#define TDM_TEST_QUADMATH 1
using Q = __float128;  // the exact reference for f64
#define QF(f) f##q
#else
using Q = long double;  // 64-bit mantissa: 11 bits beyond double, enough to judge 2 ulp
#define QF(f) f##l
#endif

namespace {

// ---------------------------------------------------------------------------------------------
// Bits, ulps
// ---------------------------------------------------------------------------------------------
template <class T> struct Bits;
template <> struct Bits<double> { using I = std::int64_t; using U = std::uint64_t; };
template <> struct Bits<float> { using I = std::int32_t; using U = std::uint32_t; };

template <class T> typename Bits<T>::U tobits(T x) {
    typename Bits<T>::U u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
template <class T> T frombits(typename Bits<T>::U u) {
    T x;
    std::memcpy(&x, &u, sizeof u);
    return x;
}

// Bit patterns as ordered integers (-0 == +0); NaN == NaN is 0, NaN vs a number is "infinite".
template <class T> std::uint64_t ulpdist(T a, T b) {
    if (std::isnan(a) && std::isnan(b)) return 0;
    if (std::isnan(a) || std::isnan(b)) return UINT64_MAX;
    using I = typename Bits<T>::I;
    auto ord = [](T x) -> std::int64_t {
        const I i = static_cast<I>(tobits(x));
        return i < 0 ? -static_cast<std::int64_t>(i & std::numeric_limits<I>::max()) : static_cast<std::int64_t>(i);
    };
    const std::int64_t d = ord(a) - ord(b);
    return d < 0 ? static_cast<std::uint64_t>(-d) : static_cast<std::uint64_t>(d);
}

// Either side NaN/Inf/zero and the two differ (sign of zero included; any NaN matches any NaN).
template <class T> bool special_mismatch(T got, T ref) {
    const bool sp = std::isnan(ref) || std::isinf(ref) || ref == 0 || std::isnan(got) || std::isinf(got) || got == 0;
    if (!sp) return false;
    if (std::isnan(ref) && std::isnan(got)) return false;
    return tobits(got) != tobits(ref);
}

// |got - truth| in ulps of T at truth (subnormal spacing below the normal range).
template <class T> double frac_ulp(T got, Q truth) {
    const T tr = static_cast<T>(truth);
    if (!std::isfinite(got) || !std::isfinite(tr))
        return (got == tr || (std::isnan(got) && std::isnan(tr))) ? 0 : INFINITY;
    int e = 0;
    const Q at = truth < 0 ? -truth : truth;
    QF(frexp)(at, &e);
    constexpr int mant = std::numeric_limits<T>::digits;
    constexpr int emin = std::numeric_limits<T>::min_exponent;
    if (at == 0) e = emin;
    const int ulpexp = std::max(e, emin) - mant;
    Q d = static_cast<Q>(got) - truth;
    if (d < 0) d = -d;
    return static_cast<double>(QF(ldexp)(d, -ulpexp));
}

// ---------------------------------------------------------------------------------------------
// Inputs (as the harness draws them)
// ---------------------------------------------------------------------------------------------
template <class T> struct Func {
    std::string name;    // "exp"
    std::string expr;    // GLSL expression in x, y
    int arity;
    std::function<T(T, T)> ref;    // glibc
    std::string domain;            // which input generators
    std::function<Q(T, T)> truth;  // exact (quadmath for f64, glibc's double for f32)
};

/// The CPU executor's op for a library function of this file (fmod is MATLAB's rem, which is fmod
/// but where the quotient is within round-off of an integer: expect_cpu_bits allows for that).
tandem::detail::OpKind cpu_op(const std::string& name) {
    using tandem::detail::OpKind;
    static const std::vector<std::pair<std::string, OpKind>> ops = {
        {"exp", OpKind::Exp},     {"expm1", OpKind::Expm1}, {"log", OpKind::Log},   {"log2", OpKind::Log2},
        {"log10", OpKind::Log10}, {"log1p", OpKind::Log1p}, {"sin", OpKind::Sin},   {"cos", OpKind::Cos},
        {"tan", OpKind::Tan},     {"asin", OpKind::Asin},   {"acos", OpKind::Acos}, {"atan", OpKind::Atan},
        {"sinh", OpKind::Sinh},   {"cosh", OpKind::Cosh},   {"tanh", OpKind::Tanh}, {"atan2", OpKind::Atan2},
        {"hypot", OpKind::Hypot}, {"fmod", OpKind::Rem},    {"pow", OpKind::Pow},   {"div", OpKind::Div}};
    for (const auto& [n, op] : ops)
        if (n == name) return op;
    throw std::runtime_error("no CPU op for " + name);
}

template <class T> struct Gen {
    std::mt19937_64 rng{12345};
    using U = typename Bits<T>::U;
    static constexpr bool D = sizeof(T) == 8;
    static constexpr int MB = D ? 52 : 23;
    static constexpr int EB = D ? 1023 : 127;
    U r() { return static_cast<U>(rng()); }
    T uni(double lo, double hi) { return static_cast<T>(lo + (hi - lo) * std::uniform_real_distribution<double>(0, 1)(rng)); }
    T bits() { return frombits<T>(r()); }
    // sign * random mantissa * 2^e, e uniform in [elo, ehi]
    T expo(int elo, int ehi, bool sign = true) {
        const int e = elo + static_cast<int>(rng() % static_cast<std::uint64_t>(ehi - elo + 1));
        const U m = r() & ((U{1} << MB) - 1);
        U b = (static_cast<U>(e + EB) << MB) | m;
        if (sign && (rng() & 1)) b |= U{1} << (D ? 63 : 31);
        return frombits<T>(b);
    }
    T subn() {
        U b = r() & ((U{1} << MB) - 1);
        if (rng() & 1) b |= U{1} << (D ? 63 : 31);
        return frombits<T>(b);
    }
    T nudge(T x, int k) {
        for (; k > 0; k--) x = std::nextafter(x, static_cast<T>(INFINITY));
        for (; k < 0; k++) x = std::nextafter(x, static_cast<T>(-INFINITY));
        return x;
    }
    T nearpio2() {
        long double k;
        if (rng() % 2) k = static_cast<long double>(static_cast<std::int64_t>(rng() % 2000001) - 1000000);
        else k = std::ldexp(static_cast<long double>(rng() % (1u << 20)), static_cast<int>(rng() % (D ? 900 : 100)));
        const T x = static_cast<T>(k * 1.57079632679489661923132169163975144L);
        return nudge(x, static_cast<int>(rng() % 9) - 4);
    }
};

template <class T> std::vector<T> edges() {
    std::vector<T> v = {0, 1, 2, 0.5, 3, 10, (T)1e-300, (T)1e300, (T)0.1, (T)0.7, 1.5, 100, 1000,
                        std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::max(), std::numeric_limits<T>::min(), std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::epsilon(), (T)M_PI, (T)M_PI_2, (T)M_PI_4, (T)M_LN2, (T)M_E,
                        (T)709.782712893383973096, (T)709.79, (T)-745.13321910194110842, (T)-745.2, (T)-708.4,
                        (T)710.475860073943863, (T)88.72283905206835, (T)-103.97, (T)89.4159862922329,
                        (T)0.99999999999999989, (T)1.0000000000000002, (T)-1, (T)18.7, (T)22, (T)37.5, (T)0.55,
                        (T)1e-8, (T)1e-16, (T)1e-20, (T)1e-200, (T)4.9e-324, (T)2.2250738585072009e-308,
                        (T)1.7976931348623157e308, (T)6.2831853071795864, (T)1.5707963267948966e10,
                        (T)1e22, (T)5.319372648326541e255, (T)9.214e-13, (T)1e15, (T)0.25, (T)7, (T)3.5, (T)0.125};
    std::size_t n = v.size();
    for (std::size_t i = 0; i < n; i++) v.push_back(-v[i]);
    n = v.size();
    for (std::size_t i = 0; i < n; i++)
        if (std::isfinite(v[i]) && v[i] != 0) {
            v.push_back(std::nextafter(v[i], static_cast<T>(0)));
            v.push_back(std::nextafter(v[i], static_cast<T>(INFINITY)));
        }
    return v;
}

template <class T> struct Inputs {
    std::vector<T> x, y;
};

// The harness's categories and proportions. `count(n)` turns the harness's count into this run's
// (a dry pass with count = [&](n) { total += n; return 0; } measures the harness's total).
template <class T, class Count> Inputs<T> make_inputs(const Func<T>& f, Count count) {
    Gen<T> g;
    g.rng.seed(std::hash<std::string>{}(f.name));
    Inputs<T> in;
    constexpr bool D = sizeof(T) == 8;
    auto N = [&](double n) { return count(n); };
    auto add = [&](T a, T b) { in.x.push_back(a); in.y.push_back(b); };
    const std::string& d = f.domain;
    const int hugeE = D ? 1023 : 127, subE = D ? -1022 : -126;
    if (f.arity == 1) {
        for (std::size_t i = 0; i < N(400000); i++) add(g.bits(), 0);
        for (std::size_t i = 0; i < N(300000); i++) add(g.uni(-10, 10), 0);
        for (std::size_t i = 0; i < N(300000); i++) add(g.uni(-1e3, 1e3), 0);
        for (std::size_t i = 0; i < N(200000); i++) add(g.nearpio2(), 0);
        for (std::size_t i = 0; i < N(200000); i++) add(g.expo(D ? -80 : -40, 0), 0);
        for (std::size_t i = 0; i < N(100000); i++) add(g.subn(), 0);
        for (std::size_t i = 0; i < N(100000); i++) add(g.expo(D ? 600 : 60, hugeE), 0);
        if (d == "exp") {
            const double lo = D ? -746 : -104, hi = D ? 710 : 89;
            for (std::size_t i = 0; i < N(600000); i++) add(g.uni(lo, hi), 0);
            for (std::size_t i = 0; i < N(100000); i++) add(g.uni(D ? 700 : 85, hi), 0);
            for (std::size_t i = 0; i < N(100000); i++) add(g.uni(lo, D ? -700 : -85), 0);
        } else if (d == "sinh") {
            const double h = D ? 711 : 90;
            for (std::size_t i = 0; i < N(600000); i++) add(g.uni(-h, h), 0);
            for (std::size_t i = 0; i < N(200000); i++) add(g.uni(-1, 1), 0);
            for (std::size_t i = 0; i < N(100000); i++) add(g.uni(D ? 705 : 85, h) * ((g.rng() & 1) ? 1 : -1), 0);
        } else if (d == "tanh") {
            for (std::size_t i = 0; i < N(600000); i++) add(g.uni(-25, 25), 0);
            for (std::size_t i = 0; i < N(300000); i++) add(g.uni(-1, 1), 0);
        } else if (d == "log") {
            for (std::size_t i = 0; i < N(500000); i++) add(std::fabs(g.bits()), 0);
            for (std::size_t i = 0; i < N(300000); i++) add(1 + g.expo(D ? -60 : -30, -1), 0);
            for (std::size_t i = 0; i < N(200000); i++) add(g.uni(0, 4), 0);
        } else if (d == "log1p") {
            for (std::size_t i = 0; i < N(400000); i++) add(g.uni(-1, 1), 0);
            for (std::size_t i = 0; i < N(200000); i++) add(-1 + std::fabs(g.expo(D ? -60 : -30, -1)), 0);
            for (std::size_t i = 0; i < N(200000); i++) add(std::fabs(g.bits()), 0);
        } else if (d == "asin") {
            for (std::size_t i = 0; i < N(600000); i++) add(g.uni(-1, 1), 0);
            for (std::size_t i = 0; i < N(300000); i++) {
                const T v = 1 - std::fabs(g.expo(D ? -60 : -30, -1));
                add((g.rng() & 1) ? v : -v, 0);
            }
        } else if (d == "trig") {
            for (std::size_t i = 0; i < N(300000); i++) add(g.expo(0, D ? 1023 : 127), 0);
            for (std::size_t i = 0; i < N(300000); i++) add(g.nearpio2(), 0);
        } else if (d == "atan") {
            for (std::size_t i = 0; i < N(600000); i++) add(g.expo(D ? -30 : -20, D ? 30 : 20), 0);
        }
        for (T e : edges<T>()) add(e, 0);
    } else {
        auto pairs = [&](double n, auto gx, auto gy) {
            for (std::size_t i = 0; i < N(n); i++) {
                const T a = gx();
                const T b = gy();
                add(a, b);
            }
        };
        auto rb = [&] { return g.bits(); };
        auto u10 = [&] { return g.uni(-10, 10); };
        auto small = [&] { return g.expo(D ? -80 : -40, 0); };
        auto hugev = [&] { return g.expo(D ? 600 : 60, hugeE); };
        auto sub = [&] { return g.subn(); };
        auto anyexp = [&] { return g.expo(subE, hugeE); };
        pairs(500000, rb, rb);
        if (d == "pow") {
            pairs(300000, [&] { return std::fabs(g.bits()); }, u10);
            pairs(400000, [&] { return g.uni(0, 3); }, [&] { return g.uni(-800, 800); });
            pairs(300000, [&] { return 1 + g.expo(D ? -50 : -20, -1); }, [&] { return g.expo(0, D ? 60 : 30); });
            pairs(200000, [&] { return -std::fabs(g.uni(0, 10)); },
                  [&] { return static_cast<T>(static_cast<int>(g.rng() % 200) - 100); });
            pairs(200000, [&] { return g.uni(0, 10); }, [&] { return static_cast<T>(static_cast<int>(g.rng() % 64)); });
            // results near the overflow/underflow thresholds: y = t / log(x)
            const std::size_t s = in.x.size();
            pairs(300000, [&] { return std::fabs(g.uni(0.01, 100)); }, [] { return static_cast<T>(0); });
            for (std::size_t i = s; i < in.x.size(); i++) {
                double t = (g.rng() & 1) ? (D ? 709.78 : 88.72) : (D ? -745.13 : -103.97);
                t += g.uni(-2, 2);
                in.y[i] = static_cast<T>(t / std::log(static_cast<double>(in.x[i])));
            }
            pairs(200000, anyexp, [&] { return g.uni(-2, 2); });
        } else if (d == "atan2") {
            pairs(300000, u10, u10);
            pairs(200000, small, anyexp);
            pairs(200000, anyexp, anyexp);
            pairs(100000, sub, u10);
            pairs(100000, u10, sub);
        } else if (d == "hypot") {
            pairs(300000, u10, u10);
            pairs(200000, anyexp, anyexp);
            pairs(200000, hugev, hugev);
            pairs(200000, sub, sub);
            pairs(100000, [&] { return g.expo(-600, 600); }, [&] { return g.expo(-600, 600); });
            pairs(100000, u10, [&] { return g.uni(-1e-7, 1e-7); });
        } else if (d == "div") {
            // f32 division (tdm_divf): must equal IEEE division bit for bit
            pairs(300000, u10, u10);
            pairs(400000, anyexp, anyexp);
            pairs(300000, [&] { return g.expo(0, 0); }, [&] { return g.expo(0, 0); });   // mantissas alone
            pairs(100000, sub, anyexp);
            pairs(100000, anyexp, sub);
            pairs(100000, sub, sub);
            pairs(200000, [&] { return g.expo(subE, subE + 30); }, [&] { return g.expo(0, 40); });   // subnormal results
            pairs(200000, [&] { return g.expo(hugeE - 30, hugeE); }, [&] { return g.expo(subE, 0); });  // overflow
            // quotients next to a midpoint of two floats: x = y * (q + ulp(q)/2), rounded, moved by 0..2 ulps
            const std::size_t s = in.x.size();
            pairs(300000, [] { return static_cast<T>(0); }, [&] { return g.expo(-20, 20); });
            for (std::size_t i = s; i < in.x.size(); i++) {
                const T q = g.expo(-20, 20);
                const double m = static_cast<double>(q) * (1.0 + std::ldexp(1.0, -(D ? 53 : 24)));
                in.x[i] = g.nudge(static_cast<T>(m * static_cast<double>(in.y[i])), static_cast<int>(g.rng() % 5) - 2);
            }
        } else if (d == "fmod") {
            pairs(300000, [&] { return g.uni(-1e3, 1e3); }, u10);
            pairs(300000, anyexp, anyexp);
            pairs(200000, hugev, [&] { return g.expo(subE, 10); });
            pairs(100000, sub, sub);
            pairs(100000, hugev, sub);
        }
        const std::vector<T> e = edges<T>();
        for (T a : e)
            for (T b : e) add(a, b);
    }
    return in;
}

// TANDEM_MATH_INPUTS random inputs, in the harness's proportions (plus the fixed edge set).
template <class T> Inputs<T> inputs_for(const Func<T>& f) {
    double wanted = 200000;
    if (const char* s = std::getenv("TANDEM_MATH_INPUTS"); s && *s) wanted = std::strtod(s, nullptr);
    double total = 0;
    make_inputs(f, [&](double n) { total += n; return std::size_t{0}; });
    const double scale = total > 0 ? wanted / total : 0;
    return make_inputs(f, [&](double n) { return static_cast<std::size_t>(n * scale + 0.5); });
}

// ---------------------------------------------------------------------------------------------
// The device side: one compute pipeline per function, inputs and outputs by device address
// (context, pipeline and submission: glsl_harness.hpp)
// ---------------------------------------------------------------------------------------------
struct Push {
    std::uint64_t x, y, out;
    std::uint32_t first, count;
};

template <class T> std::string shader_source(const Func<T>& f) {
    const char* t = sizeof(T) == 8 ? "double" : "float";
    std::ostringstream s;
    s << "#version 450\n"
         "#extension GL_EXT_buffer_reference : require\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
         "#extension GL_EXT_control_flow_attributes : require\n"
      << tandem::detail::vk::kExactArithmeticMarker << "layout(local_size_x = 64) in;\n"
      << tandem_shader_convert_f32 << '\n'
      << tandem_shader_math_f64 << '\n';
    if (sizeof(T) == 4) s << tandem_shader_math_f32 << '\n';
    s << "layout(buffer_reference, std430, buffer_reference_align = " << sizeof(T) << ") buffer Ref { " << t
      << " v[]; };\n"
         "layout(push_constant) uniform Push { uint64_t x; uint64_t y; uint64_t out_; uint first; uint count; } pc;\n"
         "void main() {\n"
         "    uint i = pc.first + gl_GlobalInvocationID.x;\n"
         "    if (i >= pc.count) return;\n"
         "    " << t << " x = Ref(pc.x).v[i], y = Ref(pc.y).v[i];\n"
         "    Ref(pc.out_).v[i] = " << f.expr << ";\n"
         "}\n";
    return s.str();
}

class VulkanMath : public ::testing::Test {
protected:
    static void SetUpTestSuite() { dev_.open(/*validation=*/true); }
    static void TearDownTestSuite() { dev_.close(); }

    /// f(x, y) on the device for every input.
    template <class T> std::vector<T> run_device(const Func<T>& f, const Inputs<T>& in) {
        const tglsl::Kernel k = dev_.kernel(shader_source(f), sizeof(Push));
        const std::size_t n = in.x.size();
        const VkDeviceSize bytes = std::max<VkDeviceSize>(n * sizeof(T), 16);
        auto xa = dev_.upload->allocate(bytes), ya = dev_.upload->allocate(bytes), oa = dev_.readback->allocate(bytes);
        std::memcpy(xa->mapped(), in.x.data(), n * sizeof(T));
        std::memcpy(ya->mapped(), in.y.data(), n * sizeof(T));
        std::memset(oa->mapped(), 0xFF, n * sizeof(T));
        dev_.submit([&](VkCommandBuffer cb) {
            tglsl::dispatch_1d(cb, k, n, [&](std::uint32_t first) {
                return Push{xa->address(), ya->address(), oa->address(), first, static_cast<std::uint32_t>(n)};
            });
        });
        std::vector<T> out(n);
        std::memcpy(out.data(), oa->mapped(), n * sizeof(T));
        return out;
    }

    /// Runs f over its inputs and checks every result against glibc.
    template <class T> void check_function(const Func<T>& f) {
        // f32 division: correctly rounded, so bit-identical to the CPU's IEEE division
        const std::uint64_t tol = f.domain == "div" ? 0 : sizeof(T) == 8 ? 2 : 4;
        const char* kind = sizeof(T) == 8 ? "f64" : "f32";
        const Inputs<T> in = inputs_for(f);
        const std::size_t n = in.x.size();
        const std::vector<T> out = run_device(f, in);

        // glibc and the exact value, on every core
        std::vector<T> ref(n);
        std::vector<double> err(n), gerr(n);
        auto work = [&](std::size_t lo, std::size_t hi) {
            for (std::size_t i = lo; i < hi; i++) {
                ref[i] = f.ref(in.x[i], in.y[i]);
                const Q t = f.truth(in.x[i], in.y[i]);
                err[i] = frac_ulp<T>(out[i], t);
                gerr[i] = frac_ulp<T>(ref[i], t);
            }
        };
        const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
        std::vector<std::thread> pool;
        for (std::size_t k = 0; k < threads; k++) pool.emplace_back(work, n * k / threads, n * (k + 1) / threads);
        for (auto& th : pool) th.join();

        std::uint64_t maxu = 0, maxu_counted = 0;
        std::size_t argmax = 0, nspec = 0, nfail = 0, nexcused = 0, n1 = 0;
        double maxerr = 0, maxgerr = 0;
        std::size_t argerr = 0;
        std::vector<std::size_t> fails, specs;
        for (std::size_t i = 0; i < n; i++) {
            if (special_mismatch(out[i], ref[i])) {
                nspec++;
                if (specs.size() < 5) specs.push_back(i);
                continue;
            }
            const std::uint64_t u = ulpdist(out[i], ref[i]);
            if (u > maxu) { maxu = u; argmax = i; }
            if (u >= 1) n1++;
            if (u > tol) {
                // glibc itself more than 1 ulp off, and the result within the limit of the exact value
                if (gerr[i] > 1.0 && err[i] <= static_cast<double>(tol)) nexcused++;
                else {
                    nfail++;
                    if (fails.size() < 5) fails.push_back(i);
                    maxu_counted = std::max(maxu_counted, u);
                }
            } else maxu_counted = std::max(maxu_counted, u);
            if (std::isfinite(err[i]) && err[i] > maxerr) { maxerr = err[i]; argerr = i; }
            if (std::isfinite(gerr[i])) maxgerr = std::max(maxgerr, gerr[i]);
        }

        auto describe = [&](std::size_t i) {
            char b[400];
            if (f.arity == 1)
                std::snprintf(b, sizeof b, "x=%.17g (%a): got %.17g (%a) glibc %.17g (%a)", (double)in.x[i], (double)in.x[i],
                              (double)out[i], (double)out[i], (double)ref[i], (double)ref[i]);
            else
                std::snprintf(b, sizeof b, "x=%.17g y=%.17g (%a, %a): got %.17g (%a) glibc %.17g (%a)", (double)in.x[i],
                              (double)in.y[i], (double)in.x[i], (double)in.y[i], (double)out[i], (double)out[i],
                              (double)ref[i], (double)ref[i]);
            return std::string(b);
        };
        const std::string worst = maxu > 0 ? describe(argmax) : "-";
        char line[300];
        std::snprintf(line, sizeof line,
                      "[math] %s %-6s n=%-8zu max %" PRIu64 " ulp vs glibc (%zu >= 1 ulp, %zu excused: glibc off) | "
                      "max %.3f ulp vs exact (glibc %.3f) | special mismatches %zu | fails %zu",
                      kind, f.name.c_str(), n, maxu, n1, nexcused, maxerr, maxgerr, nspec, nfail);
        std::cout << line << "\n       worst vs glibc: " << worst << "\n";
        if (maxerr > 0.501) std::cout << "       worst vs exact: " << describe(argerr) << "\n";
        std::cout.flush();
        RecordProperty("inputs", std::to_string(n));
        RecordProperty("max_ulp", std::to_string(maxu));
        RecordProperty("max_ulp_exact", std::to_string(maxerr));
        RecordProperty("worst_input", worst);

        EXPECT_LE(maxu_counted, tol) << kind << " " << f.name << ": " << nfail << " results more than " << tol
                                     << " ulp from glibc";
        for (std::size_t i : fails) ADD_FAILURE() << kind << " " << f.name << " beyond " << tol << " ulp: " << describe(i);
        EXPECT_EQ(nspec, 0u) << kind << " " << f.name << ": special values (NaN, Inf, signed zero) differ from glibc";
        for (std::size_t i : specs) ADD_FAILURE() << kind << " " << f.name << " special value mismatch: " << describe(i);
        EXPECT_EQ(dev_.ctx->validation_messages(), 0u) << dev_.texts();
        expect_cpu_bits(f, in, out, describe);
    }

    /// Every CPU instruction set's kernel of f's op gives the device's results, bit for bit (any
    /// NaN matches any NaN: a payload is not a value).
    template <class T, class Describe>
    void expect_cpu_bits(const Func<T>& f, const Inputs<T>& in, const std::vector<T>& device, Describe describe) {
        namespace cpu = tandem::detail::cpu;
        const std::size_t n = in.x.size(), t = sizeof(T) == 8 ? 0 : 1;
        const auto op = static_cast<std::size_t>(cpu_op(f.name));
        int tables = 0;
        for (const cpu::KernelTable* k : {cpu::kernels_baseline(), cpu::kernels_avx2(), cpu::kernels_avx512()}) {
            if (k == nullptr) continue;
            ++tables;
            std::vector<T> got(n);
            if (f.arity == 1) {
                ASSERT_NE(k->unary[op][t], nullptr) << f.name;
                k->unary[op][t](n, in.x.data(), got.data());
            } else {
                ASSERT_NE(k->binary[op][t], nullptr) << f.name;
                k->binary[op][t](n, in.x.data(), in.y.data(), 0u, got.data());
            }
            std::size_t differ = 0, first = n;
            for (std::size_t i = 0; i < n; ++i) {
                // MATLAB's rem is fmod but 0 (a's sign) where x / y is within round-off of an integer.
                const T want = f.name == "fmod" && tandem::detail::reference::remainder_snaps(in.x[i], in.y[i])
                                   ? std::copysign(T(0), in.x[i])
                                   : device[i];
                const bool same = tobits(got[i]) == tobits(want) || (got[i] != got[i] && want != want);
                if (!same && differ++ == 0) first = i;
            }
            EXPECT_EQ(differ, 0u) << f.name << ": the " << k->isa << " CPU kernel differs from the device on " << differ
                                  << " of " << n << " inputs; first: " << (first < n ? describe(first) : "")
                                  << " cpu " << (first < n ? static_cast<double>(got[first]) : 0.0);
            // The kernel's other call forms give the same bits: the output over its input (unary), one
            // operand a scalar (binary: against the same value repeated).
            auto same = [](const std::vector<T>& u, const std::vector<T>& v) {
                for (std::size_t i = 0; i < u.size(); ++i)
                    if (tobits(u[i]) != tobits(v[i]) && !(u[i] != u[i] && v[i] != v[i])) return false;
                return true;
            };
            if (f.arity == 1) {
                std::vector<T> inplace = in.x;
                k->unary[op][t](n, inplace.data(), inplace.data());
                EXPECT_TRUE(same(inplace, got)) << f.name << " (" << k->isa << "): in place";
            } else {
                const std::size_t m = std::min<std::size_t>(n, 5000);
                for (std::size_t pick : {std::size_t{0}, m / 3, m / 2}) {
                    std::vector<T> xs(m, in.x[pick]), ys(m, in.y[pick]), want(m), one(m);
                    k->binary[op][t](m, in.x.data(), ys.data(), 0u, want.data());
                    k->binary[op][t](m, in.x.data(), ys.data(), 2u, one.data());
                    EXPECT_TRUE(same(one, want)) << f.name << " (" << k->isa << "): scalar second operand";
                    k->binary[op][t](m, xs.data(), in.y.data(), 0u, want.data());
                    k->binary[op][t](m, xs.data(), in.y.data(), 1u, one.data());
                    EXPECT_TRUE(same(one, want)) << f.name << " (" << k->isa << "): scalar first operand";
                }
            }
        }
        EXPECT_GE(tables, 1);
    }

    static inline tglsl::Device dev_;
};

// ---------------------------------------------------------------------------------------------
// The functions
// ---------------------------------------------------------------------------------------------
using D = double;
using F = float;

#define TDM_F64(name, arity, domain, ref, truth)                                                            \
    Func<D> {                                                                                               \
        #name, arity == 1 ? "tdm_" #name "(x)" : "tdm_" #name "(x, y)", arity,                               \
            [](D x, [[maybe_unused]] D y) { return ref; }, domain,                                          \
            [](D x, [[maybe_unused]] D y) -> Q { return truth; }                                            \
    }
#define TDM_F32(name, arity, domain, ref, truth)                                                            \
    Func<F> {                                                                                               \
        #name, arity == 1 ? "tdm_" #name "f(x)" : "tdm_" #name "f(x, y)", arity,                             \
            [](F x, [[maybe_unused]] F y) { return ref; }, domain,                                          \
            [](F x, [[maybe_unused]] F y) -> Q { return static_cast<Q>(truth); }                            \
    }

const Func<D>& f64(const std::string& name) {
    static const std::vector<Func<D>> fs = {
        TDM_F64(exp, 1, "exp", std::exp(x), QF(exp)((Q)x)),
        TDM_F64(expm1, 1, "exp", std::expm1(x), QF(expm1)((Q)x)),
        TDM_F64(log, 1, "log", std::log(x), QF(log)((Q)x)),
        TDM_F64(log2, 1, "log", std::log2(x), QF(log2)((Q)x)),
        TDM_F64(log10, 1, "log", std::log10(x), QF(log10)((Q)x)),
        TDM_F64(log1p, 1, "log1p", std::log1p(x), QF(log1p)((Q)x)),
        TDM_F64(sin, 1, "trig", std::sin(x), QF(sin)((Q)x)),
        TDM_F64(cos, 1, "trig", std::cos(x), QF(cos)((Q)x)),
        TDM_F64(tan, 1, "trig", std::tan(x), QF(tan)((Q)x)),
        TDM_F64(asin, 1, "asin", std::asin(x), QF(asin)((Q)x)),
        TDM_F64(acos, 1, "asin", std::acos(x), QF(acos)((Q)x)),
        TDM_F64(atan, 1, "atan", std::atan(x), QF(atan)((Q)x)),
        TDM_F64(sinh, 1, "sinh", std::sinh(x), QF(sinh)((Q)x)),
        TDM_F64(cosh, 1, "sinh", std::cosh(x), QF(cosh)((Q)x)),
        TDM_F64(tanh, 1, "tanh", std::tanh(x), QF(tanh)((Q)x)),
        // tdm_atan2(y, x) as atan2(y, x): the harness's x is the first argument
        TDM_F64(atan2, 2, "atan2", std::atan2(x, y), QF(atan2)((Q)x, (Q)y)),
        TDM_F64(hypot, 2, "hypot", std::hypot(x, y), QF(hypot)((Q)x, (Q)y)),
        TDM_F64(fmod, 2, "fmod", std::fmod(x, y), QF(fmod)((Q)x, (Q)y)),
        TDM_F64(pow, 2, "pow", std::pow(x, y), QF(pow)((Q)x, (Q)y)),
    };
    for (const auto& f : fs)
        if (f.name == name) return f;
    throw std::runtime_error("no f64 function " + name);
}

const Func<F>& f32(const std::string& name) {
    static const std::vector<Func<F>> fs = {
        TDM_F32(exp, 1, "exp", std::exp(x), std::exp((double)x)),
        TDM_F32(expm1, 1, "exp", std::expm1(x), std::expm1((double)x)),
        TDM_F32(log, 1, "log", std::log(x), std::log((double)x)),
        TDM_F32(log2, 1, "log", std::log2(x), std::log2((double)x)),
        TDM_F32(log10, 1, "log", std::log10(x), std::log10((double)x)),
        TDM_F32(log1p, 1, "log1p", std::log1p(x), std::log1p((double)x)),
        TDM_F32(sin, 1, "trig", std::sin(x), std::sin((double)x)),
        TDM_F32(cos, 1, "trig", std::cos(x), std::cos((double)x)),
        TDM_F32(tan, 1, "trig", std::tan(x), std::tan((double)x)),
        TDM_F32(asin, 1, "asin", std::asin(x), std::asin((double)x)),
        TDM_F32(acos, 1, "asin", std::acos(x), std::acos((double)x)),
        TDM_F32(atan, 1, "atan", std::atan(x), std::atan((double)x)),
        TDM_F32(sinh, 1, "sinh", std::sinh(x), std::sinh((double)x)),
        TDM_F32(cosh, 1, "sinh", std::cosh(x), std::cosh((double)x)),
        TDM_F32(tanh, 1, "tanh", std::tanh(x), std::tanh((double)x)),
        TDM_F32(atan2, 2, "atan2", std::atan2(x, y), std::atan2((double)x, (double)y)),
        TDM_F32(hypot, 2, "hypot", std::hypot(x, y), std::hypot((double)x, (double)y)),
        TDM_F32(fmod, 2, "fmod", std::fmod(x, y), std::fmod((double)x, (double)y)),
        TDM_F32(pow, 2, "pow", std::pow(x, y), std::pow((double)x, (double)y)),
        TDM_F32(div, 2, "div", x / y, (double)x / (double)y),
    };
    for (const auto& f : fs)
        if (f.name == name) return f;
    throw std::runtime_error("no f32 function " + name);
}

#undef TDM_F64
#undef TDM_F32

}  // namespace

#define TDM_MATH_TESTS(Name, name)                                 \
    TEST_F(VulkanMath, F64##Name) { check_function(f64(#name)); } \
    TEST_F(VulkanMath, F32##Name) { check_function(f32(#name)); }

TDM_MATH_TESTS(Exp, exp)
TDM_MATH_TESTS(Expm1, expm1)
TDM_MATH_TESTS(Log, log)
TDM_MATH_TESTS(Log2, log2)
TDM_MATH_TESTS(Log10, log10)
TDM_MATH_TESTS(Log1p, log1p)
TDM_MATH_TESTS(Sin, sin)
TDM_MATH_TESTS(Cos, cos)
TDM_MATH_TESTS(Tan, tan)
TDM_MATH_TESTS(Asin, asin)
TDM_MATH_TESTS(Acos, acos)
TDM_MATH_TESTS(Atan, atan)
TDM_MATH_TESTS(Atan2, atan2)
TDM_MATH_TESTS(Sinh, sinh)
TDM_MATH_TESTS(Cosh, cosh)
TDM_MATH_TESTS(Tanh, tanh)
TDM_MATH_TESTS(Pow, pow)
TDM_MATH_TESTS(Hypot, hypot)
TDM_MATH_TESTS(Fmod, fmod)
TEST_F(VulkanMath, F32Div) { check_function(f32("div")); }
