// Random numbers from a counter-based Philox4x32-10 generator: each element is a pure function of
// (seed, stream, element index), so the same seed and the same calls give the same bits on the
// CPU and on every Vulkan device, wherever each region runs, and generation fuses into the
// expressions that use it (sum(randn(...) .^ 2) writes no random array). Every call draws a
// stream of its own from the runtime's generator; seed() restarts it.
//
//   tandem::seed(42);
//   tandem::Array u = tandem::rand({1000, 1000});          // uniform on (0, 1), double
//   tandem::Array z = tandem::randn({1 << 20, 1}, tandem::DType::f32);
//   tandem::Array k = tandem::randi(6, {10, 1});            // integers 1..6, as doubles
#pragma once

#include <cstdint>

#include "tandem/array.hpp"
#include "tandem/export.hpp"
#include "tandem/runtime.hpp"

namespace tandem {

/// Seeds the generator of `rt` (of the default runtime) and restarts its streams. A runtime
/// starts with seed 0.
TANDEM_API void seed(Runtime& rt, std::uint64_t s);
TANDEM_API void seed(std::uint64_t s);

/// Uniform on the open interval (0, 1): 53 random bits for double, 24 for single.
TANDEM_API Array rand(Runtime& rt, const Shape& shape, DType dtype = DType::f64);
TANDEM_API Array rand(const Shape& shape, DType dtype = DType::f64);
/// Standard normal (Box-Muller; |x| <= 8.57 in double, 6.67 in single).
TANDEM_API Array randn(Runtime& rt, const Shape& shape, DType dtype = DType::f64);
TANDEM_API Array randn(const Shape& shape, DType dtype = DType::f64);
/// Integers uniform on [lo, hi] (randi(imax, ...) is [1, imax]), as doubles: floor(lo + n u)
/// with u = rand, n = hi - lo + 1 (at most 2^48 values; ValueError otherwise or if hi < lo).
TANDEM_API Array randi(Runtime& rt, std::int64_t lo, std::int64_t hi, const Shape& shape);
TANDEM_API Array randi(std::int64_t lo, std::int64_t hi, const Shape& shape);
TANDEM_API Array randi(Runtime& rt, std::int64_t imax, const Shape& shape);
TANDEM_API Array randi(std::int64_t imax, const Shape& shape);

}  // namespace tandem
