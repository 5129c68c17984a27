// The block kernels for AVX2 with FMA: 4 doubles or 8 floats a vector.
#include <immintrin.h>

#define TANDEM_KERNEL_NS avx2
#define TANDEM_KERNEL_ISA_NAME "avx2"
#define TD_VEC __m256d
#define TF_VEC __m256
#define TD_W 4
#define TF_W 8
#define TD_LOAD _mm256_loadu_pd
#define TF_LOAD _mm256_loadu_ps
#define TD_STORE _mm256_storeu_pd
#define TF_STORE _mm256_storeu_ps
#define TD_SET1 _mm256_set1_pd
#define TD_STREAM _mm256_stream_pd
#define TF_STREAM _mm256_stream_ps
#define TF_SET1 _mm256_set1_ps
#include "backends/cpu/kernels_impl.inc"

namespace tandem::detail::cpu {
const KernelTable* kernels_avx2() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? avx2::table() : nullptr;
}
}  // namespace tandem::detail::cpu
