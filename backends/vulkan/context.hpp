// The Vulkan instance, the devices it sees, and the one device Tandem opens (selection by
// TANDEM_DEVICE), with its queues. Everything else in backends/vulkan/ hangs off a Context.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/vk.hpp"

namespace tandem::detail::vk {

/// What `tandem info` shows of one physical device.
struct DeviceDescription {
    std::uint32_t index = 0;           ///< position in vkEnumeratePhysicalDevices
    /// The other devices of its device group (vkEnumeratePhysicalDeviceGroups: devices one logical
    /// device may span, with peer memory between them), by index; empty: a group of its own, so
    /// data between it and another device goes through host memory.
    std::vector<std::uint32_t> group_peers;
    std::string name;
    std::string vendor;                ///< "NVIDIA (0x10de)", "Mesa (0x10005)", ...
    std::string type;                  ///< "discrete", "integrated", "virtual", "cpu", "other"
    std::string driver;                ///< driver name and info ("NVIDIA 580.159.04", "llvmpipe Mesa 22.3.6 ...")
    std::string api_version;           ///< "1.3.230"
    std::uint32_t driver_version = 0;  ///< raw, part of the pipeline cache key
    std::uint8_t pipeline_cache_uuid[16] = {};
    struct Heap {
        std::uint64_t bytes;
        bool device_local;
    };
    std::vector<Heap> heaps;
    std::uint32_t subgroup_size = 0;
    bool subgroup_shuffle = false;              ///< subgroup basic + shuffle operations in compute shaders
    std::uint32_t shared_memory_bytes = 0;       ///< maxComputeSharedMemorySize
    std::uint64_t max_storage_buffer_range = 0;
    std::uint32_t max_push_constants = 0;
    std::uint32_t max_workgroup_invocations = 0;
    double timestamp_period_ns = 0;              ///< 0: no timestamps on the compute queue
    std::uint32_t timestamp_valid_bits = 0;      ///< of the compute family's timestamps (mask with it)
    std::uint32_t transfer_timestamp_bits = 0;   ///< of the transfer family's (= compute's without one)
    bool host_query_reset = false;               ///< vkResetQueryPool from the host (transfer queues cannot reset)
    bool float64 = false, int64 = false;
    /// A shader may ask for fp32 subnormals to be kept (SPIR-V DenormPreserve 32): NVIDIA flushes
    /// them otherwise, and the CPU does not.
    bool denorm_preserve_f32 = false;
    /// A shader may ask for signed zeros, infinities and NaN to be kept in 32- and 64-bit float
    /// operations (SignedZeroInfNanPreserve): without it a driver may treat -0 as +0.
    bool signed_zero_preserve = false;
    /// GLSL's fma() rounds once on this device. Vulkan lets it round twice (a multiply, then an
    /// add) and a CPU implementation does (lavapipe, f32 and f64); every GPU has the fused
    /// instruction and uses it. Taken from the device type: false for "cpu" devices, where the
    /// GEMM kernel emulates the fused operation exactly (gemm.glsl) to keep the canonical order.
    bool fma_fused = true;
    bool buffer_device_address = false, timeline_semaphore = false, storage_8bit = false;
    bool shader_float16 = false, vulkan_memory_model = false;
    bool vulkan_memory_model_device_scope = false;  ///< needed with vulkanMemoryModel: other kernels use Device-scope atomics
    /// VK_NV_cooperative_matrix (NVIDIA's tensor cores): every subgroup-scope shape the driver
    /// lists ("16x16x16 f16*f16+f32=f32"), and the f16 x f16 + f32 -> f32 fragment shape the
    /// tensor-core GEMM (gemm_coopmat.hpp) uses: 16x16x16 if listed, else 16x8x16, else 16x8x8;
    /// m == 0: none (no extension, a feature missing, or no such shape).
    std::vector<std::string> cooperative_matrix_shapes;
    struct CoopmatShape {
        std::uint32_t m = 0, n = 0, k = 0;
    };
    CoopmatShape coopmat_f16;
    /// Why the tensor-core GEMM is off on this device when the extension is there ("" otherwise).
    std::string coopmat_note;
    struct QueueFamily {
        std::uint32_t index, count;
        bool graphics, compute, transfer;
    };
    std::vector<QueueFamily> queue_families;
    /// Empty if Tandem can use the device; else why not ("no shaderFloat64", ...).
    std::string unusable_reason;
    /// Rank for automatic choice: discrete > integrated > virtual > cpu > other.
    int preference() const noexcept;
};

/// For `tandem info`: ", tensor cores: f16 16x16x16 (VK_NV_cooperative_matrix: <shapes>)", the
/// same with "off (<why>)", or "" when the device has no VK_NV_cooperative_matrix.
std::string coopmat_text(const DeviceDescription& d);

struct ContextOptions {
    /// "auto" (best usable device), "vulkan" (same, but failing is an error), "vulkan:<index>",
    /// "vulkan:<name substring>" (case-insensitive). "cpu" never reaches a Context.
    std::string device = "auto";
    /// Enable VK_LAYER_KHRONOS_validation with synchronization validation; every message is
    /// counted (and kept) so tests can fail on it.
    bool validation = false;
};

class Context {
public:
    /// Loads Vulkan, makes an instance, picks and opens a device. Throws DeviceError saying why
    /// (no loader, no device, none usable, none matching the request).
    static std::unique_ptr<Context> create(const ContextOptions& options);
    /// Every physical device (opened through a throwaway instance), for `tandem info`; on
    /// failure returns none and sets *why.
    static std::vector<DeviceDescription> enumerate(std::string* why);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    VkInstance instance() const noexcept { return instance_; }
    VkPhysicalDevice physical() const noexcept { return physical_; }
    VkDevice device() const noexcept { return device_; }
    const DeviceDescription& description() const noexcept { return description_; }

    std::uint32_t compute_family() const noexcept { return compute_family_; }
    VkQueue compute_queue() const noexcept { return compute_queue_; }
    /// The dedicated transfer-only family's queue, or the compute queue when there is none.
    std::uint32_t transfer_family() const noexcept { return transfer_family_; }
    VkQueue transfer_queue() const noexcept { return transfer_queue_; }
    bool has_transfer_queue() const noexcept { return transfer_family_ != compute_family_; }

    /// Memory type indices for device-local, host-visible coherent (staging uploads) and
    /// host-visible cached (readbacks) memory.
    std::uint32_t device_local_type() const noexcept { return device_local_type_; }
    std::uint32_t upload_type() const noexcept { return upload_type_; }
    std::uint32_t readback_type() const noexcept { return readback_type_; }
    /// False when the device has no HOST_CACHED type and readbacks use uncached memory (slow).
    bool readback_cached() const noexcept { return readback_cached_; }
    /// False when readback memory needs vkInvalidateMappedMemoryRanges before the host reads it.
    bool readback_coherent() const noexcept { return readback_coherent_; }

    /// The size of the heap device arrays live in, and what VK_EXT_memory_budget says this process
    /// may use of it when the device was opened (0 without the extension).
    std::uint64_t device_heap_bytes() const noexcept { return device_heap_bytes_; }
    std::uint64_t device_heap_budget() const noexcept { return device_heap_budget_; }

    /// Validation messages seen so far (warnings and errors), and the texts of the first few.
    std::uint64_t validation_messages() const noexcept { return validation_count_.load(); }
    std::vector<std::string> validation_texts() const;

private:
    Context() = default;
    void open_device();
    static VkBool32 VKAPI_PTR on_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT*, void*);

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    DeviceDescription description_;
    std::uint32_t compute_family_ = 0, transfer_family_ = 0;
    VkQueue compute_queue_ = VK_NULL_HANDLE, transfer_queue_ = VK_NULL_HANDLE;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
    std::uint32_t device_local_type_ = 0, upload_type_ = 0, readback_type_ = 0;
    bool readback_cached_ = true, readback_coherent_ = true;
    std::uint64_t device_heap_bytes_ = 0, device_heap_budget_ = 0;
    std::atomic<std::uint64_t> validation_count_{0};
    mutable std::mutex texts_mutex_;
    std::vector<std::string> validation_texts_;
};

}  // namespace tandem::detail::vk
