// The CPU backend's one way to split a loop over [0, n) across the oneTBB arena it runs in.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

namespace tandem::detail::cpu {

/// f(first, last) over [0, n) in chunks of at least `grain` (one call when n <= grain). Under
/// ThreadSanitizer one call: Debian's oneTBB is not instrumented, so its splitting (inlined from
/// its headers) reads as races to TSan; regions still run concurrently, which is what the
/// concurrency tests exercise (see CpuBackend::execute).
template <class F>
void for_chunks(std::int64_t n, std::int64_t grain, F&& f) {
    if (n <= 0) return;
#if defined(TANDEM_TSAN)
    (void)grain;
    f(std::int64_t{0}, n);
#else
    if (n <= grain) return f(std::int64_t{0}, n);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); });
#endif
}

}  // namespace tandem::detail::cpu
