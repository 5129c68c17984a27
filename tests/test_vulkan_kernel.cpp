// User kernels on the Vulkan device (lavapipe in CI, the validation layer on): the GLSL bodies
// (tests/kernel_cases.hpp), what moves and what does not, and the device's own faults.
#include <gtest/gtest.h>

#include "kernel_cases.hpp"
#include "vulkan_runtime.hpp"

namespace {

/// The groups ran on the device, none fell back, the validation layer said nothing (for cases
/// whose data is made on the device: nothing to upload).
void expect_kernels_on_device(tandem::Runtime& rt) {
    rt.wait_idle();
    const auto m = rt.metrics();
    EXPECT_GT(m.device_regions, 0u);
    EXPECT_EQ(m.device_fallbacks, 0u);
    EXPECT_EQ(m.validation_messages, 0u) << "the Vulkan validation layer reported problems (see stderr)";
}

}  // namespace

TEST(VulkanKernel, ElementwiseWithSpecialValues) {
    auto rt = tvk::open_gpu();
    kernel_cases::elementwise_with_specials(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, DependencyKinds) {
    auto rt = tvk::open_gpu();
    kernel_cases::dependency_kinds(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, ReadWriteInPlace) {
    auto rt = tvk::open_gpu();
    kernel_cases::read_write_in_place(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, InteropWithArrays) {
    auto rt = tvk::open_gpu();
    kernel_cases::interop_with_arrays(*rt);
    expect_kernels_on_device(*rt);
}

TEST(VulkanKernel, HostTaskAndHostAccessor) {
    auto rt = tvk::open_gpu();
    kernel_cases::host_task_and_host_accessor(*rt);
    tvk::expect_device_clean(*rt);
}

TEST(VulkanKernel, ExplicitAndInOrderDependencies) {
    auto rt = tvk::open_gpu();
    kernel_cases::explicit_and_in_order_dependencies(*rt);
}

TEST(VulkanKernel, ThrowingBodyPoisonsDependantsOnly) {
    auto rt = tvk::open_gpu();
    kernel_cases::throwing_body_poisons_dependants_only(*rt);
}

TEST(VulkanKernel, BadInputIsRefusedAtSubmit) {
    auto rt = tvk::open_gpu();
    kernel_cases::bad_input_is_refused_at_submit(*rt);
}

TEST(VulkanKernel, BufferOutlivingItsRuntime) { kernel_cases::buffer_outliving_its_runtime(tvk::gpu_config()); }
