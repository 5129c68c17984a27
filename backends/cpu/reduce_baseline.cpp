// The reduction loops for x86-64's baseline (SSE2 on x86-64; whatever the target has elsewhere):
// 2 doubles a vector.
#define TANDEM_REDUCE_NS reduce_baseline
#define TANDEM_REDUCE_ISA_NAME "baseline"
#define TR_VB 16
#include "backends/cpu/reduce_impl.inc"

namespace tandem::detail::cpu {
const ReduceKernels* reduce_kernels_baseline() { return reduce_baseline::table(); }
}  // namespace tandem::detail::cpu
