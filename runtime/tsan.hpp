// Happens-before annotations for ThreadSanitizer. oneTBB from Debian is not instrumented, so
// TSan cannot see the synchronisation inside task handoff and parallel_for joins; these calls
// tell it (no-ops in every other build).
#pragma once

#if defined(TANDEM_TSAN)
#include <sanitizer/tsan_interface.h>
namespace tandem::detail {
inline void tsan_release(const void* addr) { __tsan_release(const_cast<void*>(addr)); }
inline void tsan_acquire(const void* addr) { __tsan_acquire(const_cast<void*>(addr)); }
}  // namespace tandem::detail
#else
namespace tandem::detail {
inline void tsan_release(const void*) {}
inline void tsan_acquire(const void*) {}
}  // namespace tandem::detail
#endif
