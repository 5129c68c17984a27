// Scalar double-precision reference for the Tandem tests: column-major N-D shapes and MATLAB
// implicit expansion done with plain index math, one reference function per op, ulp distance,
// and a random data generator that mixes ordinary numbers with the special values (NaN, +-Inf,
// +-0, subnormals, huge and tiny magnitudes, halves for round).
//
// Everything here is deliberately simple and independent of the library: values are held as
// doubles whatever their element type (f32 and logical values are exactly representable).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tref {

using Dims = std::vector<std::int64_t>;
using tandem::DType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- shapes --------------------------------------------------------------------------------

/// MATLAB's normal form: at least two dimensions, trailing singletons beyond the second dropped.
inline Dims normalize(Dims d) {
    while (d.size() < 2) d.push_back(1);
    while (d.size() > 2 && d.back() == 1) d.pop_back();
    return d;
}

inline std::int64_t numel(const Dims& d) {
    std::int64_t n = 1;
    for (auto x : d) n *= x;
    return n;
}

/// "3x4x2", as Shape::to_string prints it.
inline std::string dims_str(const Dims& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (i) s += 'x';
        s += std::to_string(d[i]);
    }
    return s;
}

inline std::int64_t dim(const Dims& d, std::size_t k) { return k < d.size() ? d[k] : 1; }

/// Implicit expansion of two shapes; nullopt when they do not agree.
inline std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
    const std::size_t n = std::max(a.size(), b.size());
    Dims out(n);
    for (std::size_t k = 0; k < n; ++k) {
        const auto x = dim(a, k), y = dim(b, k);
        if (x == y) out[k] = x;
        else if (x == 1) out[k] = y;
        else if (y == 1) out[k] = x;
        else return std::nullopt;
    }
    return normalize(out);
}

/// Maps linear (column-major) indices of an output shape to linear indices of an input that
/// is expanded to it (input dimensions of extent 1 repeat).
class Indexer {
public:
    Indexer(const Dims& out, const Dims& in) : out_(out) {
        std::int64_t stride = 1;
        for (std::size_t k = 0; k < out.size(); ++k) {
            const auto e = dim(in, k);
            strides_.push_back(e == 1 ? 0 : stride);
            stride *= e;
        }
    }
    std::int64_t operator()(std::int64_t linear) const {
        std::int64_t r = 0;
        for (std::size_t k = 0; k < out_.size(); ++k) {
            const auto e = out_[k];
            const auto sub = linear % e;
            linear /= e;
            r += sub * strides_[k];
        }
        return r;
    }

private:
    Dims out_;
    std::vector<std::int64_t> strides_;
};

// ---- host values -----------------------------------------------------------------------------

/// An array on the reference side: shape, element type, values as doubles (column-major).
struct Host {
    Dims dims{0, 0};
    DType dtype = DType::f64;
    std::vector<double> v;

    std::int64_t numel() const { return tref::numel(dims); }
};

inline const char* dtype_str(DType t) { return t == DType::f64 ? "f64" : t == DType::f32 ? "f32" : "logical"; }

inline tandem::Shape to_shape(const Dims& d) { return tandem::Shape(std::vector<std::int64_t>(d)); }

/// Rounds a double to the element type (f32: to nearest float; logical: nonzero -> 1).
inline double to_type(double x, DType t) {
    if (t == DType::f32) return static_cast<double>(static_cast<float>(x));
    if (t == DType::logical) return x != 0.0 ? 1.0 : 0.0;
    return x;
}

/// Uploads a reference array into a runtime with its element type.
inline tandem::Array make_array(tandem::Runtime& rt, const Host& h) {
    const auto shape = to_shape(h.dims);
    if (h.dtype == DType::f64) return rt.array(std::span<const double>(h.v), shape);
    if (h.dtype == DType::f32) {
        std::vector<float> f(h.v.size());
        for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(h.v[i]);
        return rt.array(std::span<const float>(f), shape);
    }
    std::vector<std::uint8_t> b(h.v.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = h.v[i] != 0.0 ? 1 : 0;
    return rt.logical_array(std::span<const std::uint8_t>(b), shape);
}

/// Reads a gathered array back through the typed accessors.
inline Host from_host_array(const tandem::HostArray& a) {
    Host h;
    h.dims = a.shape().dims();
    h.dtype = a.dtype();
    const auto n = static_cast<std::size_t>(a.numel());
    h.v.resize(n);
    if (n == 0) return h;
    if (a.dtype() == DType::f64) {
        const double* p = a.data<double>();
        for (std::size_t i = 0; i < n; ++i) h.v[i] = p[i];
    } else if (a.dtype() == DType::f32) {
        const float* p = a.data<float>();
        for (std::size_t i = 0; i < n; ++i) h.v[i] = static_cast<double>(p[i]);
    } else {
        const std::uint8_t* p = a.data<std::uint8_t>();
        for (std::size_t i = 0; i < n; ++i) h.v[i] = static_cast<double>(p[i]);
    }
    return h;
}

inline Host gather(const tandem::Array& a) { return from_host_array(a.gather().get()); }

// ---- elementwise reference evaluation ----------------------------------------------------------

/// Applies f to the inputs expanded to one shape. Each input value is first converted to
/// `compute` (mixed single/double ops compute in single), and each result to `out`.
inline Host apply(const std::vector<const Host*>& in, DType compute, DType out,
                  const std::function<double(const std::vector<double>&)>& f) {
    Dims shape = in.at(0)->dims;
    for (std::size_t k = 1; k < in.size(); ++k) {
        auto b = broadcast(shape, in[k]->dims);
        if (!b) throw std::runtime_error("reference: shapes do not agree");
        shape = *b;
    }
    Host r;
    r.dims = normalize(shape);
    r.dtype = out;
    const auto n = numel(r.dims);
    r.v.resize(static_cast<std::size_t>(n));
    std::vector<Indexer> idx;
    for (auto* h : in) idx.emplace_back(r.dims, h->dims);
    std::vector<double> args(in.size());
    for (std::int64_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < in.size(); ++k) {
            double x = in[k]->v[static_cast<std::size_t>(idx[k](i))];
            if (compute == DType::f32) x = to_type(x, DType::f32);
            args[k] = x;
        }
        r.v[static_cast<std::size_t>(i)] = to_type(f(args), out);
    }
    return r;
}

// ---- op references (double, or float computed in double then rounded by apply) ---------------

inline double ref_mod(double a, double b) {
    if (b == 0.0) return a;
    double r = std::fmod(a, b);
    if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/// The same in single precision: fmod is exact, the fix-up addition rounds to float.
inline double ref_mod_f32(double a, double b) {
    if (b == 0.0) return a;
    double r = std::fmod(a, b);
    if (r != 0.0 && ((r < 0) != (b < 0))) r = static_cast<double>(static_cast<float>(r) + static_cast<float>(b));
    return r;
}
inline double ref_max(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : (a > b ? a : b); }
inline double ref_min(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : (a < b ? a : b); }
inline double ref_sign(double x) { return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
inline double ref_bool(bool b) { return b ? 1.0 : 0.0; }

// ---- comparison helpers --------------------------------------------------------------------------

/// Distance in units in the last place between two finite numbers of the same type
/// (bit patterns mapped to a monotonic integer line; -0 and +0 coincide).
inline std::uint64_t ulp_distance(double a, double b, DType t) {
    if (t == DType::f32) {
        auto ord = [](float x) -> std::int64_t {
            const auto u = std::bit_cast<std::uint32_t>(x);
            const auto mag = static_cast<std::int64_t>(u & 0x7fffffffu);
            return (u & 0x80000000u) ? -mag : mag;
        };
        const auto d = ord(static_cast<float>(a)) - ord(static_cast<float>(b));
        return static_cast<std::uint64_t>(d < 0 ? -d : d);
    }
    const auto ua = std::bit_cast<std::uint64_t>(a), ub = std::bit_cast<std::uint64_t>(b);
    const std::uint64_t sign = 0x8000000000000000ull;
    const std::uint64_t ma = ua & ~sign, mb = ub & ~sign;
    if ((ua & sign) == (ub & sign)) return ma > mb ? ma - mb : mb - ma;
    return ma + mb;  // opposite signs: the distance through zero (< 2^64)
}

enum class Acc {
    exact,         ///< bit-exact, NaN matches NaN, the sign of zero ignored
    exact_signed,  ///< bit-exact including the sign of zero
    ulp,           ///< within max_ulp; NaN matches NaN; infinities exactly
};

/// True if `got` agrees with `want` under `acc`.
inline bool close(double got, double want, Acc acc, double max_ulp, DType t) {
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
    if (std::isinf(want) || std::isinf(got)) return got == want;
    switch (acc) {
        case Acc::exact:
            return got == want;
        case Acc::exact_signed:
            return got == want && std::signbit(got) == std::signbit(want);
        case Acc::ulp:
            return static_cast<double>(ulp_distance(got, want, t)) <= max_ulp;
    }
    return false;
}

inline std::string fmt(double x) {
    std::ostringstream os;
    os.precision(17);
    os << x;
    if (x == 0.0 && std::signbit(x)) return "-0";
    return os.str();
}

/// Compares shape, element type and values; explains the first few differences. `describe`
/// (optional) names the inputs of an element.
inline ::testing::AssertionResult same_values(const Host& got, const Host& want, Acc acc = Acc::exact,
                                              double max_ulp = 0,
                                              const std::function<std::string(std::int64_t)>& describe = {}) {
    if (got.dims != want.dims)
        return ::testing::AssertionFailure() << "shape " << dims_str(got.dims) << ", expected " << dims_str(want.dims);
    if (got.dtype != want.dtype)
        return ::testing::AssertionFailure() << "dtype " << dtype_str(got.dtype) << ", expected " << dtype_str(want.dtype);
    if (got.v.size() != want.v.size())
        return ::testing::AssertionFailure() << got.v.size() << " values, expected " << want.v.size();
    std::ostringstream os;
    int bad = 0;
    for (std::size_t i = 0; i < got.v.size(); ++i) {
        if (close(got.v[i], want.v[i], acc, max_ulp, want.dtype)) continue;
        if (bad < 6) {
            os << "\n  [" << i << "] got " << fmt(got.v[i]) << ", expected " << fmt(want.v[i]);
            if (acc == Acc::ulp && std::isfinite(got.v[i]) && std::isfinite(want.v[i]))
                os << " (" << ulp_distance(got.v[i], want.v[i], want.dtype) << " ulp)";
            if (describe) os << "  inputs: " << describe(static_cast<std::int64_t>(i));
        }
        ++bad;
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << got.v.size() << " elements differ:" << os.str();
}

// ---- random data -------------------------------------------------------------------------------

/// The special values every op is tried on (as doubles; f32 versions are rounded on upload).
inline std::vector<double> special_values(DType t) {
    if (t == DType::logical) return {0.0, 1.0};
    if (t == DType::f32) {
        const float fs[] = {
            std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f,
            std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(), 1e-40f, -3e-39f,
            FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 3e38f, -1e30f, 1e-30f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f,
            -2.5f, 0.49999997f, -0.49999997f, 3.0f, -3.0f, 0.1f, 7.0f, -7.0f, 8388609.0f, 16777216.0f, 88.7f,
            -103.9f, 1e10f, 3.14159265f, 2.0f, 89.2f, -89.0f};
        std::vector<double> v;
        for (float f : fs) v.push_back(static_cast<double>(f));
        return v;
    }
    return {kNaN, kInf, -kInf, 0.0, -0.0,
            std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(), 1e-310,
            -2.2e-309, DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX, 1e300, -1e300, 1e-300, 1.0, -1.0, 0.5, -0.5, 1.5,
            2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 3.0, -3.0, 0.1, 7.0, -7.0,
            4503599627370497.0, 9007199254740992.0, 709.7, -745.0, 1e22, 3.141592653589793, 2.0, 710.0,
            -710.4};
}

/// n random values of type t: ordinary numbers of several scales mixed with special values.
inline std::vector<double> random_values(std::int64_t n, DType t, std::mt19937_64& rng, bool specials = true) {
    std::vector<double> v(static_cast<std::size_t>(n));
    if (t == DType::logical) {
        for (auto& x : v) x = static_cast<double>(rng() & 1u);
        return v;
    }
    const auto sp = special_values(t);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    const double max_exp = t == DType::f32 ? 38.0 : 300.0;
    for (auto& x : v) {
        const double c = u01(rng);
        if (specials && c < 0.15) {
            x = sp[rng() % sp.size()];
        } else if (c < 0.40) {
            x = 2.0 * u01(rng) - 1.0;
        } else if (c < 0.65) {
            x = 20.0 * u01(rng) - 10.0;
        } else if (c < 0.75) {
            x = 0.5 * static_cast<double>(static_cast<std::int64_t>(rng() % 81) - 40);
        } else if (c < 0.88) {
            x = std::pow(10.0, (2.0 * u01(rng) - 1.0) * max_exp) * ((rng() & 1u) ? 1.0 : -1.0);
        } else {
            x = 2000.0 * u01(rng) - 1000.0;
        }
        x = to_type(x, t);
    }
    return v;
}

inline Host random_host(const Dims& dims, DType t, std::mt19937_64& rng, bool specials = true) {
    Host h;
    h.dims = normalize(dims);
    h.dtype = t;
    h.v = random_values(numel(h.dims), t, rng, specials);
    return h;
}

// ---- small helpers -------------------------------------------------------------------------

/// A seed derived from a case's name (FNV-1a): each case has its own reproducible data.
inline std::uint64_t seed_of(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

/// Whether `part` occurs in `s` (error messages, captured stderr).
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace tref
