// The block kernels for x86-64's baseline, SSE2: 2 doubles or 4 floats a vector (every x86-64 CPU has it).
#include <immintrin.h>

#define TANDEM_KERNEL_NS baseline
#define TANDEM_KERNEL_ISA_NAME "baseline"
#define TD_VEC __m128d
#define TF_VEC __m128
#define TD_W 2
#define TF_W 4
#define TD_LOAD _mm_loadu_pd
#define TF_LOAD _mm_loadu_ps
#define TD_STORE _mm_storeu_pd
#define TF_STORE _mm_storeu_ps
#define TD_SET1 _mm_set1_pd
#define TD_STREAM _mm_stream_pd
#define TF_STREAM _mm_stream_ps
#define TF_SET1 _mm_set1_ps
#include "backends/cpu/kernels_impl.inc"

namespace tandem::detail::cpu {
const KernelTable* kernels_baseline() {
    __builtin_cpu_init();
    return (true) ? baseline::table() : nullptr;
}
}  // namespace tandem::detail::cpu
