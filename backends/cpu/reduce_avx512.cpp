// The reduction loops for AVX-512 (F, DQ, VL, BW): 8 doubles a vector.
#define TANDEM_REDUCE_NS reduce_avx512
#define TANDEM_REDUCE_ISA_NAME "avx512"
#define TR_VB 64
#include "backends/cpu/reduce_impl.inc"

namespace tandem::detail::cpu {
const ReduceKernels* reduce_kernels_avx512() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw"))
               ? reduce_avx512::table()
               : nullptr;
}
}  // namespace tandem::detail::cpu
