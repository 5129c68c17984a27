// The block kernels for AVX-512 (F, DQ, VL, BW): 8 doubles or 16 floats a vector.
#include <immintrin.h>

#define TANDEM_KERNEL_NS avx512
#define TANDEM_KERNEL_ISA_NAME "avx512"
#define TD_VEC __m512d
#define TF_VEC __m512
#define TD_W 8
#define TF_W 16
#define TD_LOAD _mm512_loadu_pd
#define TF_LOAD _mm512_loadu_ps
#define TD_STORE _mm512_storeu_pd
#define TF_STORE _mm512_storeu_ps
#define TD_SET1 _mm512_set1_pd
#define TD_STREAM _mm512_stream_pd
#define TF_STREAM _mm512_stream_ps
#define TF_SET1 _mm512_set1_ps
#include "backends/cpu/kernels_impl.inc"

namespace tandem::detail::cpu {
const KernelTable* kernels_avx512() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")) ? avx512::table() : nullptr;
}
}  // namespace tandem::detail::cpu
