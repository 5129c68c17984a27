// Device memory: large blocks (one VkBuffer each, with a device address), sub-allocated for
// arrays, so no array costs a vkAllocateMemory; host-visible staging for uploads and
// host-cached buffers for readbacks. Freed ranges return to their block when the last owner
// (a DeviceArray shared by values and in-flight work) dies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/vulkan/context.hpp"

namespace tandem::detail::vk {

class DeviceHeap;

/// A range of one block: where an array lives on the device (or a staging area on the host).
class DeviceArray {
public:
    ~DeviceArray();
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    VkBuffer buffer() const noexcept { return buffer_; }
    VkDeviceSize offset() const noexcept { return offset_; }
    VkDeviceSize bytes() const noexcept { return bytes_; }
    /// vkGetBufferDeviceAddress(block) + offset: what shaders receive (no descriptor sets, no
    /// maxStorageBufferRange limit).
    VkDeviceAddress address() const noexcept { return address_; }
    /// Host pointer for host-visible memory (staging, readback); null for device-local.
    void* mapped() const noexcept { return mapped_; }
    /// Makes device writes to readback memory visible to mapped() (vkInvalidateMappedMemoryRanges
    /// where the memory is not host-coherent; nothing where it is). Call after the copy finished.
    void invalidate() const;
    /// Bytes [offset, offset + bytes) of `parent`, which the window keeps alive (frees nothing).
    static std::shared_ptr<DeviceArray> window(std::shared_ptr<const DeviceArray> parent, VkDeviceSize offset,
                                               VkDeviceSize bytes);

private:
    friend class DeviceHeap;
    DeviceArray() = default;
    std::shared_ptr<const DeviceArray> parent_;  // a window's
    std::shared_ptr<DeviceHeap> heap_;
    std::uint32_t block_ = 0;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceSize offset_ = 0, bytes_ = 0, reserved_ = 0;
    VkDeviceAddress address_ = 0;
    void* mapped_ = nullptr;
};

struct HeapStats {
    std::uint64_t block_bytes = 0;    ///< memory taken from Vulkan
    std::uint64_t used_bytes = 0;     ///< handed out to arrays
    std::uint64_t allocations = 0;    ///< sub-allocations made
    std::uint64_t blocks = 0;         ///< vkAllocateMemory calls
};

/// memcpy for an array's elements between host memory and mapped staging or readback memory: a
/// large one is split over the host's cores (one core moves 5-10 GB/s into write-combined or
/// pinned memory; the link behind it moves more).
void copy_bytes(void* dst, const void* src, std::size_t bytes);

/// Bytes of wholly free blocks a heap keeps for reuse.
inline constexpr VkDeviceSize kCachedFreeBytes = VkDeviceSize{8} << 30;
/// The default of DeviceHeap's cached_free_bytes: kCachedFreeBytes, or half the memory heap's
/// size where that is more (device-local heaps only).
inline constexpr VkDeviceSize kCacheHalfTheHeap = ~VkDeviceSize{0};

/// One memory type's sub-allocator. Thread-safe.
class DeviceHeap : public std::enable_shared_from_this<DeviceHeap> {
public:
    enum class Kind { device_local, upload, readback };
    /// `block_bytes`: size of each block (requests above half of it get a block of their own).
    /// `cached_free_bytes`: wholly free blocks kept for reuse, in bytes (kCacheHalfTheHeap: see there).
    DeviceHeap(const Context& context, Kind kind, VkDeviceSize block_bytes,
               VkDeviceSize cached_free_bytes = kCacheHalfTheHeap);
    ~DeviceHeap();

    /// Throws DeviceOutOfMemory when Vulkan refuses more memory.
    std::shared_ptr<DeviceArray> allocate(VkDeviceSize bytes);
    HeapStats stats() const;
    Kind kind() const noexcept { return kind_; }

private:
    friend class DeviceArray;
    struct Block;
    void release(std::uint32_t block, VkDeviceSize offset, VkDeviceSize reserved) noexcept;
    void invalidate(std::uint32_t block, VkDeviceSize offset, VkDeviceSize reserved) const;
    std::unique_ptr<Block> make_block(VkDeviceSize size, VkDeviceSize requested) const;
    bool carve(DeviceArray& array, std::uint32_t first, std::uint32_t last);  // first fit in blocks [first, last); mutex_ held
    bool drop_free_blocks();              // gives wholly free blocks back to Vulkan
    const char* usage() const noexcept;   // "device-local", "upload", "readback"

    const Context& context_;
    Kind kind_;
    VkDeviceSize block_bytes_;
    VkDeviceSize cached_free_bytes_;
    VkDeviceSize max_block_ = 0;          // the heap's size, and maxBufferSize on Vulkan 1.3
    std::uint32_t memory_type_ = 0;
    VkDeviceSize noncoherent_atom_ = 0;   // 0: host-coherent memory, nothing to invalidate
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Block>> blocks_;
    HeapStats stats_;
};

}  // namespace tandem::detail::vk
