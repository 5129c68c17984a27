// The reduction loops for AVX2: 4 doubles a vector.
#define TANDEM_REDUCE_NS reduce_avx2
#define TANDEM_REDUCE_ISA_NAME "avx2"
#define TR_VB 32
#include "backends/cpu/reduce_impl.inc"

namespace tandem::detail::cpu {
const ReduceKernels* reduce_kernels_avx2() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? reduce_avx2::table() : nullptr;
}
}  // namespace tandem::detail::cpu
