// The GEMM block kernel for AVX2 with FMA: 8 x 6 tiles of doubles, 16 x 6 of floats (12
// accumulator registers of the 16).
#include <immintrin.h>

#define GEMM_NS gemm_avx2
#define GEMM_ISA_NAME "avx2"
#define GEMM_NR 6
#define GEMM_D_VEC __m256d
#define GEMM_D_W 4
#define GEMM_D_ZERO _mm256_setzero_pd()
#define GEMM_D_LOAD _mm256_loadu_pd
#define GEMM_D_STORE _mm256_storeu_pd
#define GEMM_D_SET1 _mm256_set1_pd
#define GEMM_D_FMA _mm256_fmadd_pd
#define GEMM_D_ADD _mm256_add_pd
#define GEMM_F_VEC __m256
#define GEMM_F_W 8
#define GEMM_F_ZERO _mm256_setzero_ps()
#define GEMM_F_LOAD _mm256_loadu_ps
#define GEMM_F_STORE _mm256_storeu_ps
#define GEMM_F_SET1 _mm256_set1_ps
#define GEMM_F_FMA _mm256_fmadd_ps
#define GEMM_F_ADD _mm256_add_ps
#include "backends/cpu/gemm_block.inc"

namespace tandem::detail::cpu {
const GemmBlockKernels* gemm_blocks_avx2() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? gemm_avx2::table() : nullptr;
}
}  // namespace tandem::detail::cpu
