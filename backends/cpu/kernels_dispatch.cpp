#include <string>

#include "backends/cpu/kernels.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {

const KernelTable& select_kernels(std::string_view limit) {
    int cap = limit == "baseline" ? 0 : limit == "avx2" ? 1 : limit == "avx512" || limit == "auto" ? 2 : -1;
    if (cap < 0)
        throw ConfigError("cpu_isa: '" + std::string(limit) + "' is not one of auto, avx512, avx2, baseline");
#if TANDEM_HAVE_KERNELS_AVX512
    if (cap >= 2)
        if (const KernelTable* t = kernels_avx512()) return *t;
#endif
#if TANDEM_HAVE_KERNELS_AVX2
    if (cap >= 1)
        if (const KernelTable* t = kernels_avx2()) return *t;
#endif
    return *kernels_baseline();
}

}  // namespace tandem::detail::cpu
