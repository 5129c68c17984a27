// Subscript checks shared by the backends: what a valid 1-based subscript is, and the MATLAB-style
// error a bad one raises (the same text wherever the region ran).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "graph/region.hpp"

namespace tandem::detail {

/// Why a subscript is bad: not a positive integer (NaN, 0, negative, fractional), or past the extent.
enum class BadSubscript : std::uint8_t { not_positive_integer, past_extent };

/// Whether v is a valid 1-based subscript into `extent` positions; `why` says otherwise.
inline bool check_subscript(double v, std::int64_t extent, BadSubscript& why) noexcept {
    if (!(v >= 1.0) || v != std::floor(v)) {
        why = BadSubscript::not_positive_integer;
        return false;
    }
    if (v > static_cast<double>(extent)) {
        why = BadSubscript::past_extent;
        return false;
    }
    return true;
}

/// Throws the IndexError of region `r` (a gather or scatter) for the subscript at 0-based
/// position `k` of its subscript array, with its value when known.
[[noreturn]] void throw_bad_subscript(const Region& r, std::int64_t k, BadSubscript why, std::optional<double> value);

}  // namespace tandem::detail
