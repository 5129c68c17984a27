#include "backends/vulkan/memory.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>

namespace tandem::detail::vk {

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
    // From 1 MiB (an upload of 2 MiB took 0.4 ms of one core on the H100 host, 7x its copy engine time).
    constexpr std::size_t kChunk = std::size_t{256} << 10, kParallelFrom = std::size_t{1} << 20;
    if (bytes < kParallelFrom) {
        if (bytes) std::memcpy(dst, src, bytes);
        return;
    }
    const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
        const std::size_t at = c * kChunk;
        std::memcpy(static_cast<std::byte*>(dst) + at, static_cast<const std::byte*>(src) + at, std::min(kChunk, bytes - at));
    });
}

namespace {

// Every range starts on a 256-byte boundary: at least any device's
// minStorageBufferOffsetAlignment, and whole cache lines / vector loads for kernels.
constexpr VkDeviceSize kAlign = 256;

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                      VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;

bool is_out_of_memory(VkResult r) {
    return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
}

}  // namespace

struct DeviceHeap::Block {
    Memory memory;  // declared before the buffer: destroyed after it
    Buffer buffer;
    VkDeviceSize size = 0;
    VkDeviceAddress address = 0;
    void* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> bytes, neighbours always merged
    VkDeviceSize used = 0;
};

DeviceArray::~DeviceArray() {
    if (heap_) heap_->release(block_, offset_, reserved_);
}

std::shared_ptr<DeviceArray> DeviceArray::window(std::shared_ptr<const DeviceArray> parent, VkDeviceSize offset,
                                                 VkDeviceSize bytes) {
    if (offset + bytes > parent->bytes_) throw Error("vulkan: a window past the end of its array (bug)");
    std::shared_ptr<DeviceArray> w(new DeviceArray);
    w->buffer_ = parent->buffer_;
    w->offset_ = parent->offset_ + offset;
    w->bytes_ = bytes;
    w->address_ = parent->address_ + offset;
    w->mapped_ = parent->mapped_ ? static_cast<std::byte*>(parent->mapped_) + offset : nullptr;
    w->parent_ = std::move(parent);
    return w;
}

void DeviceArray::invalidate() const {
    if (heap_) heap_->invalidate(block_, offset_, reserved_);
}

DeviceHeap::DeviceHeap(const Context& context, Kind kind, VkDeviceSize block_bytes, VkDeviceSize cached_free_bytes)
    : context_(context),
      kind_(kind),
      block_bytes_((std::max(block_bytes, kAlign) + kAlign - 1) / kAlign * kAlign),
      cached_free_bytes_(cached_free_bytes) {
    switch (kind_) {
        case Kind::device_local: memory_type_ = context_.device_local_type(); break;
        case Kind::upload: memory_type_ = context_.upload_type(); break;
        case Kind::readback: memory_type_ = context_.readback_type(); break;
    }
    // The hard limits on one block: its heap, and maxBufferSize (Vulkan 1.3). The advisory
    // maxMemoryAllocationSize (4 GiB - 2 MiB on NVIDIA) is left to vkAllocateMemory to enforce.
    VkPhysicalDeviceMemoryProperties memory{};
    vkGetPhysicalDeviceMemoryProperties(context_.physical(), &memory);
    max_block_ = memory.memoryHeaps[memory.memoryTypes[memory_type_].heapIndex].size;
    // Device memory freed by one run of a program is what its next run allocates again: by default
    // keep up to half the device's memory for reuse (a loop of 100 steps on 4096 x 4096 doubles frees 13 GB a
    // run; above the 8 GiB default its vkAllocateMemory calls took 6-35 ms each, 110-285 ms of host
    // time a 15 ms run on the H100). allocate() gives them all back before failing for lack of memory.
    if (cached_free_bytes_ == kCacheHalfTheHeap)
        cached_free_bytes_ = kind_ == Kind::device_local ? std::max(kCachedFreeBytes, max_block_ / 2) : kCachedFreeBytes;
    VkPhysicalDeviceProperties base{};
    vkGetPhysicalDeviceProperties(context_.physical(), &base);
    if (base.apiVersion >= VK_API_VERSION_1_3 && volkGetInstanceVersion() >= VK_API_VERSION_1_3) {
        VkPhysicalDeviceMaintenance4Properties m4{};
        m4.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES;
        VkPhysicalDeviceProperties2 props{};
        props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        props.pNext = &m4;
        vkGetPhysicalDeviceProperties2(context_.physical(), &props);
        max_block_ = std::min(max_block_, m4.maxBufferSize);
    }
    max_block_ = max_block_ / kAlign * kAlign;
    block_bytes_ = std::min(block_bytes_, max_block_);
    if (kind_ == Kind::readback && !context_.readback_coherent())
        noncoherent_atom_ = std::max<VkDeviceSize>(base.limits.nonCoherentAtomSize, 1);
}

void DeviceHeap::invalidate(std::uint32_t block, VkDeviceSize offset, VkDeviceSize reserved) const {
    if (noncoherent_atom_ == 0) return;
    VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, VK_NULL_HANDLE, 0, 0};
    {
        std::lock_guard lock(mutex_);
        const Block& b = *blocks_[block];
        range.memory = b.memory.get();
        range.offset = offset / noncoherent_atom_ * noncoherent_atom_;
        const VkDeviceSize end = (offset + reserved + noncoherent_atom_ - 1) / noncoherent_atom_ * noncoherent_atom_;
        range.size = end >= b.size ? VK_WHOLE_SIZE : end - range.offset;
    }
    check(vkInvalidateMappedMemoryRanges(context_.device(), 1, &range), "vkInvalidateMappedMemoryRanges");
}

DeviceHeap::~DeviceHeap() = default;

const char* DeviceHeap::usage() const noexcept {
    switch (kind_) {
        case Kind::device_local: return "device-local";
        case Kind::upload: return "upload (staging)";
        case Kind::readback: return "readback";
    }
    return "?";
}

std::unique_ptr<DeviceHeap::Block> DeviceHeap::make_block(VkDeviceSize size, VkDeviceSize requested) const {
    const VkDevice device = context_.device();
    auto block = std::make_unique<Block>();
    block->size = size;

    // Shared by both queues when the device has a transfer queue: no ownership transfers.
    const std::uint32_t families[] = {context_.compute_family(), context_.transfer_family()};
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = size;
    info.usage = kUsage;
    if (context_.has_transfer_queue()) {
        info.sharingMode = VK_SHARING_MODE_CONCURRENT;
        info.queueFamilyIndexCount = 2;
        info.pQueueFamilyIndices = families;
    } else {
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    }
    const auto out_of_memory = [&](VkResult r) {
        return DeviceOutOfMemory("out of Vulkan memory: " + std::to_string(requested) + " bytes requested from the " +
                                 usage() + " heap (a block of " + std::to_string(size) + " bytes): " +
                                 result_name(r));
    };
    VkBuffer raw_buffer = VK_NULL_HANDLE;
    VkResult r = vkCreateBuffer(device, &info, nullptr, &raw_buffer);
    if (is_out_of_memory(r)) throw out_of_memory(r);
    check(r, "vkCreateBuffer");
    block->buffer = Buffer(device, raw_buffer);

    VkMemoryRequirements requirements{};
    vkGetBufferMemoryRequirements(device, raw_buffer, &requirements);
    if (!(requirements.memoryTypeBits & (1u << memory_type_)))
        throw DeviceError(std::string("Vulkan memory type ") + std::to_string(memory_type_) + " (" + usage() +
                          ") cannot hold a storage buffer");
    VkMemoryAllocateFlagsInfo flags{};
    flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.pNext = &flags;
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = memory_type_;
    VkDeviceMemory raw_memory = VK_NULL_HANDLE;
    r = vkAllocateMemory(device, &allocate, nullptr, &raw_memory);
    if (is_out_of_memory(r)) throw out_of_memory(r);
    check(r, "vkAllocateMemory");
    block->memory = Memory(device, raw_memory);
    check(vkBindBufferMemory(device, raw_buffer, raw_memory, 0), "vkBindBufferMemory");

    VkBufferDeviceAddressInfo address{};
    address.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
    address.buffer = raw_buffer;
    block->address = vkGetBufferDeviceAddress(device, &address);
    if (kind_ != Kind::device_local) {
        r = vkMapMemory(device, raw_memory, 0, VK_WHOLE_SIZE, 0, &block->mapped);
        if (is_out_of_memory(r)) throw out_of_memory(r);
        check(r, "vkMapMemory");
    }
    block->free.emplace(0, size);
    return block;
}

bool DeviceHeap::carve(DeviceArray& array, std::uint32_t first, std::uint32_t last) {
    // Best fit over the blocks: small arrays fill the gaps of partly used blocks, so the large
    // free blocks kept for reuse stay whole for the large arrays that need them.
    Block* best = nullptr;
    std::uint32_t best_index = 0;
    std::map<VkDeviceSize, VkDeviceSize>::iterator best_range;
    for (std::uint32_t i = first; i < last && i < blocks_.size(); ++i) {
        if (!blocks_[i]) continue;
        Block& b = *blocks_[i];
        for (auto it = b.free.begin(); it != b.free.end(); ++it) {
            if (it->second < array.reserved_) continue;
            if (!best || it->second < best_range->second) {
                best = &b;
                best_index = i;
                best_range = it;
            }
        }
    }
    if (!best) return false;
    Block& b = *best;
    const auto [offset, bytes] = *best_range;
    b.free.erase(best_range);
    if (bytes > array.reserved_) b.free.emplace(offset + array.reserved_, bytes - array.reserved_);
    b.used += array.reserved_;
    stats_.used_bytes += array.reserved_;
    ++stats_.allocations;
    array.block_ = best_index;
    array.buffer_ = b.buffer.get();
    array.offset_ = offset;
    array.address_ = b.address + offset;
    array.mapped_ = b.mapped != nullptr ? static_cast<char*>(b.mapped) + offset : nullptr;
    return true;
}

std::shared_ptr<DeviceArray> DeviceHeap::allocate(VkDeviceSize bytes) {
    if (bytes > max_block_)
        throw DeviceOutOfMemory("out of Vulkan memory: " + std::to_string(bytes) + " bytes requested from the " +
                                usage() + " heap, more than one allocation there can hold (" +
                                std::to_string(max_block_) + " bytes)");
    auto self = shared_from_this();
    std::shared_ptr<DeviceArray> array(new DeviceArray);
    array->bytes_ = bytes;
    array->reserved_ = (std::max<VkDeviceSize>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    {
        std::lock_guard lock(mutex_);
        if (carve(*array, 0, static_cast<std::uint32_t>(blocks_.size()))) {
            array->heap_ = std::move(self);
            return array;
        }
    }
    // Vulkan allocates outside the lock: other threads keep sub-allocating meanwhile.
    // An array above half a block gets a block of its own size: in a shared one the rest would
    // mostly stay empty (a 134 MB array took a 256 MB block), and a freed block of its size is
    // reused whole by the next such array (carve is best fit: small arrays go to the gaps).
    const VkDeviceSize size = array->reserved_ > block_bytes_ / 2 ? array->reserved_ : block_bytes_;
    std::unique_ptr<Block> block;
    try {
        block = make_block(size, bytes);
    } catch (const DeviceOutOfMemory&) {
        if (!drop_free_blocks()) throw;
        block = make_block(size, bytes);
    }
    std::lock_guard lock(mutex_);
    auto slot = std::find(blocks_.begin(), blocks_.end(), nullptr);
    if (slot == blocks_.end()) slot = blocks_.insert(blocks_.end(), nullptr);
    *slot = std::move(block);
    stats_.block_bytes += size;
    ++stats_.blocks;
    // From the new block, even if others freed room meanwhile: a block nobody ever used would
    // never be released.
    const auto index = static_cast<std::uint32_t>(slot - blocks_.begin());
    carve(*array, index, index + 1);
    array->heap_ = std::move(self);
    return array;
}

void DeviceHeap::release(std::uint32_t block, VkDeviceSize offset, VkDeviceSize reserved) noexcept {
    std::unique_ptr<Block> doomed;  // freed after the lock is dropped
    {
        std::lock_guard lock(mutex_);
        Block& b = *blocks_[block];
        auto it = b.free.emplace(offset, reserved).first;
        if (auto next = std::next(it); next != b.free.end() && it->first + it->second == next->first) {
            it->second += next->second;
            b.free.erase(next);
        }
        if (it != b.free.begin()) {
            if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
                prev->second += it->second;
                b.free.erase(it);
            }
        }
        b.used -= reserved;
        stats_.used_bytes -= reserved;
        if (b.used != 0) return;
        // Wholly free blocks stay for reuse (a fresh 1 GiB vkAllocateMemory costs ~25 ms on the
        // H100, as much as freeing it): only beyond cached_free_bytes_ of them is one given back.
        // allocate() gives all of them back before failing for lack of memory.
        VkDeviceSize cached = 0;
        for (const auto& other : blocks_)
            if (other && other->used == 0) cached += other->size;
        if (cached <= cached_free_bytes_) return;
        stats_.block_bytes -= b.size;
        doomed = std::move(blocks_[block]);
    }
}

bool DeviceHeap::drop_free_blocks() {
    std::vector<std::unique_ptr<Block>> doomed;
    std::lock_guard lock(mutex_);
    for (auto& b : blocks_) {
        if (!b || b->used != 0) continue;
        stats_.block_bytes -= b->size;
        doomed.push_back(std::move(b));
    }
    return !doomed.empty();
}

HeapStats DeviceHeap::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

}  // namespace tandem::detail::vk
