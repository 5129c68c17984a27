// The helpers of ops.def's reference column: plain scalar definitions of what an op stands for,
// computed in the operands' type T. Tests and benchmarks compare every executor with these; the
// runtime library itself never calls them (the MATLAB front end does, for the scalars it keeps
// on the host: they must compute what the executors compute).
#pragma once

#include <cmath>

namespace tandem::detail::reference {

/// MATLAB's (and Octave's) round-off compensation in mod and rem: a / b within round-off of a
/// nonzero integer, b not an integer, makes the remainder 0 (mod(0.3, 0.1) is 0, not
/// 0.09999999999999998). Octave's test, with the quotient rounded to T and the rest in double.
template <class T> bool remainder_snaps(T a, T b) {
    const double bd = b;
    if (std::floor(bd + 0.5) == bd) return false;  // an integer b (or 0, Inf)
    const double q = static_cast<T>(static_cast<double>(a) / bd);
    const double n = std::floor(q + 0.5);
    if (n == 0) return false;
    return std::fabs((q - n) / n) < (sizeof(T) == 8 ? 2.220446049250313e-16 : 1.1920928955078125e-07);
}
/// MATLAB's mod: the sign of b, mod(a, 0) = a. fmod is exact, so in single precision only the
/// fix-up addition rounds.
template <class T> T mod(T a, T b) {
    if (b == T(0)) return a;
    if (remainder_snaps(a, b)) return std::copysign(T(0), b);
    const T r = std::fmod(a, b);
    return r != T(0) && ((r < T(0)) != (b < T(0))) ? r + b : r;
}
/// MATLAB's rem: the sign of a (fmod, exact).
template <class T> T rem(T a, T b) { return remainder_snaps(a, b) ? std::copysign(T(0), a) : std::fmod(a, b); }
/// MATLAB's min and max: a NaN operand is ignored (both NaN: NaN).
template <class T> T min(T a, T b) { return std::isnan(a) ? b : std::isnan(b) ? a : a < b ? a : b; }
template <class T> T max(T a, T b) { return std::isnan(a) ? b : std::isnan(b) ? a : a > b ? a : b; }
/// sign(NaN) is NaN; sign(-0) is 0.
template <class T> T sign(T x) { return std::isnan(x) ? x : x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0); }

}  // namespace tandem::detail::reference
