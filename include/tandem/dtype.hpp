// Element types. Double is the default, as in MATLAB.
#pragma once

#include "tandem/export.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tandem {

enum class DType : std::uint8_t {
    f64,      ///< MATLAB double (the default)
    f32,      ///< MATLAB single
    logical,  ///< MATLAB logical, one byte per element holding 0 or 1
};

/// MATLAB's class name: "double", "single" or "logical".
TANDEM_API std::string_view dtype_name(DType t) noexcept;

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) noexcept {
    return t == DType::f64 ? 8 : t == DType::f32 ? 4 : 1;
}

/// The element type of an arithmetic result, following MATLAB: single wins over double,
/// and logical operands count as double.
constexpr DType arithmetic_result(DType a, DType b) noexcept {
    return (a == DType::f32 || b == DType::f32) ? DType::f32 : DType::f64;
}

}  // namespace tandem
