// rand, randn, randi (tandem/random.hpp): generator nodes carrying (seed, stream); the backends
// compute element i as backends/cpu/philox.hpp and shaders/philox.glsl do, bit for bit.
#include <cmath>
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/ops.hpp"
#include "tandem/random.hpp"

namespace tandem {

namespace {

Array generator(Runtime& rt, detail::OpKind op, const Shape& shape, DType dtype, const char* name) {
    if (dtype != DType::f64 && dtype != DType::f32)
        throw DTypeError(std::string(name) + ": random numbers are double or single, not " + std::string(dtype_name(dtype)));
    auto [seed, stream] = rt.impl().next_stream();
    if (stream >= (std::uint64_t{1} << 53)) throw ValueError(std::string(name) + ": the generator's streams are used up; call seed()");
    const double attr[3] = {static_cast<double>(seed & 0xFFFFFFFFu), static_cast<double>(seed >> 32),
                            static_cast<double>(stream)};
    return Array(rt.impl().nodes().make(op, dtype, shape, {}, {attr[0], attr[1], attr[2]}));
}

}  // namespace

void seed(Runtime& rt, std::uint64_t s) { rt.impl().seed(s); }
void seed(std::uint64_t s) { seed(default_runtime(), s); }

Array rand(Runtime& rt, const Shape& shape, DType dtype) { return generator(rt, detail::OpKind::RandU, shape, dtype, "rand"); }
Array rand(const Shape& shape, DType dtype) { return rand(default_runtime(), shape, dtype); }
Array randn(Runtime& rt, const Shape& shape, DType dtype) { return generator(rt, detail::OpKind::RandN, shape, dtype, "randn"); }
Array randn(const Shape& shape, DType dtype) { return randn(default_runtime(), shape, dtype); }

Array randi(Runtime& rt, std::int64_t lo, std::int64_t hi, const Shape& shape) {
    if (hi < lo)
        throw ValueError("randi: the range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
    const double n = static_cast<double>(hi) - static_cast<double>(lo) + 1.0;
    if (!(n <= 0x1p48) || std::fabs(static_cast<double>(lo)) > 0x1p52)
        throw ValueError("randi: the range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "] has more than 2^48 values or ends beyond 2^52");
    // floor(u n) <= n - 1: u <= 1 - 2^-53, and n u then rounds at least an ulp below n.
    return tandem::floor(rand(rt, shape, DType::f64) * n) + static_cast<double>(lo);
}
Array randi(std::int64_t lo, std::int64_t hi, const Shape& shape) { return randi(default_runtime(), lo, hi, shape); }
Array randi(Runtime& rt, std::int64_t imax, const Shape& shape) { return randi(rt, 1, imax, shape); }
Array randi(std::int64_t imax, const Shape& shape) { return randi(1, imax, shape); }

}  // namespace tandem
