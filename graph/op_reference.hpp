// The helpers of ops.def's reference column: plain scalar definitions of what an op stands for,
// computed in the operands' type T. Tests and benchmarks compare every executor with these; the
// library itself never calls them.
#pragma once

#include <cmath>

namespace tandem::detail::reference {

/// MATLAB's mod: the sign of b, mod(a, 0) = a. fmod is exact, so in single precision only the
/// fix-up addition rounds.
template <class T> T mod(T a, T b) {
    if (b == T(0)) return a;
    const T r = std::fmod(a, b);
    return r != T(0) && ((r < T(0)) != (b < T(0))) ? r + b : r;
}
/// MATLAB's min and max: a NaN operand is ignored (both NaN: NaN).
template <class T> T min(T a, T b) { return std::isnan(a) ? b : std::isnan(b) ? a : a < b ? a : b; }
template <class T> T max(T a, T b) { return std::isnan(a) ? b : std::isnan(b) ? a : a > b ? a : b; }
/// sign(NaN) is NaN; sign(-0) is 0.
template <class T> T sign(T x) { return std::isnan(x) ? x : x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0); }

}  // namespace tandem::detail::reference
