// The GEMM block kernel for AVX-512 (F, DQ, VL, BW): 16 x 8 tiles of doubles, 32 x 8 of floats
// (16 accumulator registers of the 32).
#include <immintrin.h>

#define GEMM_NS gemm_avx512
#define GEMM_ISA_NAME "avx512"
#define GEMM_NR 8
#define GEMM_D_VEC __m512d
#define GEMM_D_W 8
#define GEMM_D_ZERO _mm512_setzero_pd()
#define GEMM_D_LOAD _mm512_loadu_pd
#define GEMM_D_STORE _mm512_storeu_pd
#define GEMM_D_SET1 _mm512_set1_pd
#define GEMM_D_FMA _mm512_fmadd_pd
#define GEMM_D_ADD _mm512_add_pd
#define GEMM_F_VEC __m512
#define GEMM_F_W 16
#define GEMM_F_ZERO _mm512_setzero_ps()
#define GEMM_F_LOAD _mm512_loadu_ps
#define GEMM_F_STORE _mm512_storeu_ps
#define GEMM_F_SET1 _mm512_set1_ps
#define GEMM_F_FMA _mm512_fmadd_ps
#define GEMM_F_ADD _mm512_add_ps
#include "backends/cpu/gemm_block.inc"

namespace tandem::detail::cpu {
const GemmBlockKernels* gemm_blocks_avx512() {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
               ? gemm_avx512::table()
               : nullptr;
}
}  // namespace tandem::detail::cpu
