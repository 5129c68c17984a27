// The Vulkan API as Tandem uses it: loaded at run time through volk (a machine without a Vulkan
// loader still runs Tandem, on the CPU), one error channel (check), and move-only RAII handles.
#pragma once

#include <volk.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "tandem/error.hpp"

namespace tandem::detail::vk {

/// VK_ERROR_OUT_OF_DEVICE_MEMORY / VK_ERROR_OUT_OF_HOST_MEMORY from a Vulkan call.
class DeviceOutOfMemory : public OutOfMemoryError {
public:
    using OutOfMemoryError::OutOfMemoryError;
};

/// VK_ERROR_DEVICE_LOST.
class DeviceLost : public DeviceError {
public:
    using DeviceError::DeviceError;
};

/// "VK_ERROR_DEVICE_LOST" for VK_ERROR_DEVICE_LOST, and so on.
const char* result_name(VkResult r) noexcept;

/// Throws for any result other than VK_SUCCESS (and the non-error codes listed in `ok`, such as
/// VK_TIMEOUT or VK_INCOMPLETE): DeviceOutOfMemory, DeviceLost or DeviceError, with `what` (the
/// call) and the result's name.
void check(VkResult r, const char* what, std::initializer_list<VkResult> ok = {});

/// A move-only owner of one Vulkan handle, destroyed with `destroy(owner, handle, nullptr)`.
template <class Handle, class Owner, void (*&Destroy)(Owner, Handle, const VkAllocationCallbacks*)>
class Unique {
public:
    Unique() = default;
    Unique(Owner owner, Handle h) : owner_(owner), h_(h) {}
    Unique(Unique&& o) noexcept : owner_(o.owner_), h_(std::exchange(o.h_, VK_NULL_HANDLE)) {}
    Unique& operator=(Unique&& o) noexcept {
        if (this != &o) {
            reset();
            owner_ = o.owner_;
            h_ = std::exchange(o.h_, VK_NULL_HANDLE);
        }
        return *this;
    }
    Unique(const Unique&) = delete;
    Unique& operator=(const Unique&) = delete;
    ~Unique() { reset(); }
    void reset() {
        if (h_ != VK_NULL_HANDLE) Destroy(owner_, h_, nullptr);
        h_ = VK_NULL_HANDLE;
    }
    Handle get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != VK_NULL_HANDLE; }

private:
    Owner owner_{};
    Handle h_ = VK_NULL_HANDLE;
};

using Buffer = Unique<VkBuffer, VkDevice, vkDestroyBuffer>;
using Memory = Unique<VkDeviceMemory, VkDevice, vkFreeMemory>;
using ShaderModule = Unique<VkShaderModule, VkDevice, vkDestroyShaderModule>;
using Pipeline = Unique<VkPipeline, VkDevice, vkDestroyPipeline>;
using PipelineLayout = Unique<VkPipelineLayout, VkDevice, vkDestroyPipelineLayout>;
// Not "PipelineCache": that name is pipeline_cache.hpp's on-disk cache class.
using PipelineCacheHandle = Unique<VkPipelineCache, VkDevice, vkDestroyPipelineCache>;
using CommandPool = Unique<VkCommandPool, VkDevice, vkDestroyCommandPool>;
using Semaphore = Unique<VkSemaphore, VkDevice, vkDestroySemaphore>;
using QueryPool = Unique<VkQueryPool, VkDevice, vkDestroyQueryPool>;
using Fence = Unique<VkFence, VkDevice, vkDestroyFence>;

}  // namespace tandem::detail::vk
