// The GEMM block kernel for x86-64's baseline (and any other CPU): scalars, std::fma for each
// multiply-add (glibc's picks the CPU's FMA instruction where there is one, else computes it
// exactly in software): the same bits as the vector kernels, slower.
#include <cmath>

#define GEMM_NS gemm_baseline
#define GEMM_ISA_NAME "baseline"
#define GEMM_NR 4
#define GEMM_D_VEC double
#define GEMM_D_W 1
#define GEMM_D_ZERO 0.0
#define GEMM_D_LOAD(p) (*(p))
#define GEMM_D_STORE(p, v) (*(p) = (v))
#define GEMM_D_SET1(x) (x)
#define GEMM_D_FMA(a, b, c) std::fma(a, b, c)
#define GEMM_D_ADD(a, b) ((a) + (b))
#define GEMM_F_VEC float
#define GEMM_F_W 1
#define GEMM_F_ZERO 0.0f
#define GEMM_F_LOAD(p) (*(p))
#define GEMM_F_STORE(p, v) (*(p) = (v))
#define GEMM_F_SET1(x) (x)
#define GEMM_F_FMA(a, b, c) std::fma(a, b, c)
#define GEMM_F_ADD(a, b) ((a) + (b))
#include "backends/cpu/gemm_block.inc"

namespace tandem::detail::cpu {
const GemmBlockKernels* gemm_blocks_baseline() { return gemm_baseline::table(); }

}  // namespace tandem::detail::cpu
