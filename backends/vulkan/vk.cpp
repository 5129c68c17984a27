#include "backends/vulkan/vk.hpp"

#include <algorithm>
#include <string>
#include <string_view>

namespace tandem::detail::vk {

const char* result_name(VkResult r) noexcept {
    switch (r) {
#define TANDEM_VK_RESULT(name) \
    case name:                 \
        return #name;
        TANDEM_VK_RESULT(VK_SUCCESS)
        TANDEM_VK_RESULT(VK_NOT_READY)
        TANDEM_VK_RESULT(VK_TIMEOUT)
        TANDEM_VK_RESULT(VK_EVENT_SET)
        TANDEM_VK_RESULT(VK_EVENT_RESET)
        TANDEM_VK_RESULT(VK_INCOMPLETE)
        TANDEM_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        TANDEM_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        TANDEM_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        TANDEM_VK_RESULT(VK_ERROR_DEVICE_LOST)
        TANDEM_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        TANDEM_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        TANDEM_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        TANDEM_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        TANDEM_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        TANDEM_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        TANDEM_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        TANDEM_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
        TANDEM_VK_RESULT(VK_ERROR_UNKNOWN)
        TANDEM_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
        TANDEM_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        TANDEM_VK_RESULT(VK_ERROR_FRAGMENTATION)
        TANDEM_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        TANDEM_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
        TANDEM_VK_RESULT(VK_ERROR_SURFACE_LOST_KHR)
        TANDEM_VK_RESULT(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
        TANDEM_VK_RESULT(VK_SUBOPTIMAL_KHR)
        TANDEM_VK_RESULT(VK_ERROR_OUT_OF_DATE_KHR)
        TANDEM_VK_RESULT(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
        TANDEM_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
        TANDEM_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
        TANDEM_VK_RESULT(VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT)
        TANDEM_VK_RESULT(VK_ERROR_NOT_PERMITTED_KHR)
        TANDEM_VK_RESULT(VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT)
        TANDEM_VK_RESULT(VK_THREAD_IDLE_KHR)
        TANDEM_VK_RESULT(VK_THREAD_DONE_KHR)
        TANDEM_VK_RESULT(VK_OPERATION_DEFERRED_KHR)
        TANDEM_VK_RESULT(VK_OPERATION_NOT_DEFERRED_KHR)
        TANDEM_VK_RESULT(VK_ERROR_COMPRESSION_EXHAUSTED_EXT)
#undef TANDEM_VK_RESULT
        default:
            return "VK_RESULT_UNKNOWN_CODE";
    }
}

void check(VkResult r, const char* what, std::initializer_list<VkResult> ok) {
    if (r == VK_SUCCESS || (r > 0 && std::find(ok.begin(), ok.end(), r) != ok.end())) return;
    std::string message = std::string(what) + " failed: " + result_name(r);
    if (std::string_view(result_name(r)) == "VK_RESULT_UNKNOWN_CODE")
        message += " (" + std::to_string(static_cast<int>(r)) + ")";
    switch (r) {
        case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        case VK_ERROR_OUT_OF_HOST_MEMORY:
            throw DeviceOutOfMemory(message);
        case VK_ERROR_DEVICE_LOST:
            throw DeviceLost(message);
        default:
            throw DeviceError(message);
    }
}

}  // namespace tandem::detail::vk
