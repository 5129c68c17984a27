// The values of the generators linspace and colon, one definition for every executor (the CPU
// executor evaluates these; the GPU's kernels compute the same expressions from the parameters
// below, and tests compare with them).
//
//   linspace(a, b, n): element 0 is a, element n - 1 is b (MATLAB's promise), element k between
//     a + k * step - k * back, where step = (b - a) / (n - 1) and back = 0, or, where b - a
//     overflows (linspace(-1e308, 1e308, 3)), step = b / (n - 1) and back = a / (n - 1) (MATLAB's
//     formula for that case; Octave gives Inf there). back = 0 leaves a + k * step's bits.
//   colon(a, step, b): element k is a + k * step, but never past b: the last one of 0:0.1:0.3 is
//     0.3, not 0.30000000000000004 (MATLAB and Octave end on b; only the last can pass it, the
//     count being floor((b - a) / step) + 1 within 4 eps).
#pragma once

#include <cmath>
#include <cstdint>

namespace tandem::detail {

struct LinspaceSteps {
    double step = 0, back = 0;
};

inline LinspaceSteps linspace_steps(double a, double b, std::int64_t n) {
    if (n <= 1) return {};
    const double n1 = static_cast<double>(n - 1);
    if (std::isfinite(b - a)) return {(b - a) / n1, 0.0};
    return {b / n1, a / n1};
}

inline double linspace_value(double a, double b, std::int64_t n, LinspaceSteps s, std::int64_t k) {
    if (k == 0) return a;
    if (k == n - 1) return b;
    const double x = static_cast<double>(k);
    return a + x * s.step - x * s.back;
}

/// The most elements a:step:b may have (past it, or not finite: the range is refused).
inline constexpr double kColonMaxCount = 9.0e15;

/// How many elements a:step:b has (0 when empty), as a double: the caller refuses a count not
/// finite or past kColonMaxCount. floor((b - a) / step) + 1 within 4 eps, so 0:0.1:0.3 has 4.
inline double colon_count(double a, double step, double b) {
    if (step == 0 || (step > 0 && a > b) || (step < 0 && a < b)) return 0;
    return std::floor((b - a) / step * (1 + 4 * 2.220446049250313e-16)) + 1;
}

inline double colon_value(double a, double step, double b, std::int64_t k) {
    const double v = a + static_cast<double>(k) * step;
    return step > 0 ? (b < v ? b : v) : (v < b ? b : v);
}

}  // namespace tandem::detail
