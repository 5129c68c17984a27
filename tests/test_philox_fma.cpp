// backends/cpu/philox.hpp compiled with FMA instructions enabled (-mavx2 -mfma on x86-64, set in
// tests/CMakeLists.txt), where GCC would contract a*b + c into fma unless the header turns that off:
// test_philox.cpp checks that these functions give the bits of the baseline build.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/philox.hpp"

struct FmaBuild {
    bool (*available)();
    void (*randn_f64)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, double* out);
    void (*randn_f32)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, float* out);
    double (*randn_f64_elem)(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);
    float (*randn_f32_elem)(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);
};

#if defined(__FMA__) && (defined(__x86_64__) || defined(_M_X64))
namespace {
bool fma_available() { return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"); }
void randn_f64_fill(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, double* out) {
    // an inlined element loop as a fused-region interpreter would write it
    for (std::size_t k = 0; k < n; k++) out[k] = tandem::detail::randn_f64(seed, stream, first + k) * 1.0;
}
void randn_f32_fill(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, float* out) {
    tandem::detail::fill_randn_f32(seed, stream, first, n, out);
}
double randn_f64_elem(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
    return tandem::detail::randn_f64(seed, stream, i);
}
float randn_f32_elem(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
    return tandem::detail::randn_f32(seed, stream, i);
}
const FmaBuild kBuild{fma_available, randn_f64_fill, randn_f32_fill, randn_f64_elem, randn_f32_elem};
}  // namespace
const FmaBuild* philox_fma_build() { return &kBuild; }
#else
const FmaBuild* philox_fma_build() { return nullptr; }
#endif
