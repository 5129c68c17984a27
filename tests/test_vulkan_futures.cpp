// The futures of a runtime with a Vulkan device: continuations run on the runtime's continuation
// threads, never on the device's completion thread (tests/continuation_cases.hpp). Before, a
// continuation that called get() on another device value deadlocked that thread, and a slow
// one held up every completion of the device.
#include <gtest/gtest.h>

#include "continuation_cases.hpp"
#include "vulkan_runtime.hpp"

TEST(VulkanFutures, ContinuationMayBlockOnAnotherDeviceValue) {
    auto rt = tvk::open_gpu();
    continuation_cases::continuation_blocks_on_another_value(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanFutures, BlockedContinuationStallsNoDeviceCompletion) {
    auto rt = tvk::open_gpu();
    continuation_cases::blocked_continuation_stalls_nothing(*rt);
    tvk::expect_device_clean(*rt);
}
