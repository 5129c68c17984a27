// The Vulkan infrastructure: device enumeration and selection (TANDEM_DEVICE forms), the
// context with the validation layer (synchronization validation on), and the sub-allocating
// heaps, ending in a real upload -> device -> readback round trip. CI installs lavapipe
// (llvmpipe): without a Vulkan device these tests fail, never skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"

namespace vk = tandem::detail::vk;

namespace {

constexpr VkDeviceSize MiB = 1 << 20;

std::unique_ptr<vk::Context> open(const std::string& device = "auto") {
    vk::ContextOptions options;
    options.device = device;
    options.validation = true;
    return vk::Context::create(options);
}

std::string texts(const vk::Context& context) {
    std::string out;
    for (const auto& t : context.validation_texts()) out += t + "\n";
    return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

template <class Error, class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an exception";
    return {};
}

}  // namespace

TEST(VulkanContext, EnumerateFindsLavapipe) {
    std::string why;
    const auto devices = vk::Context::enumerate(&why);
    ASSERT_FALSE(devices.empty()) << "no Vulkan device (CI installs mesa-vulkan-drivers): " << why;
    auto it = std::find_if(devices.begin(), devices.end(), [](const auto& d) { return contains(d.name, "llvmpipe"); });
    ASSERT_NE(it, devices.end()) << "lavapipe (llvmpipe) not among the Vulkan devices";
    const vk::DeviceDescription& d = *it;
    EXPECT_EQ(d.type, "cpu");
    EXPECT_EQ(d.preference(), 1);
    EXPECT_EQ(d.vendor, "Mesa (0x10005)");
    EXPECT_TRUE(d.unusable_reason.empty()) << d.unusable_reason;
    EXPECT_TRUE(contains(d.driver, "llvmpipe")) << d.driver;
    EXPECT_EQ(d.api_version.rfind("1.", 0), 0u) << d.api_version;
    EXPECT_GT(d.subgroup_size, 0u);
    EXPECT_GT(d.shared_memory_bytes, 0u);
    EXPECT_GT(d.max_storage_buffer_range, 0u);
    EXPECT_GE(d.max_push_constants, 128u);
    EXPECT_FALSE(d.heaps.empty());
    EXPECT_FALSE(d.queue_families.empty());
    EXPECT_TRUE(d.float64 && d.int64 && d.buffer_device_address && d.timeline_semaphore && d.storage_8bit);
    EXPECT_GT(d.timestamp_period_ns, 0.0);
    EXPECT_GT(d.timestamp_valid_bits, 0u);
    for (std::size_t i = 0; i < devices.size(); ++i) EXPECT_EQ(devices[i].index, i);
}

TEST(VulkanContext, CreatesWithValidationForEachForm) {
    for (const char* spec : {"auto", "vulkan", "vulkan:0", "vulkan:llvmpipe", "vulkan:LLVMPIPE"}) {
        SCOPED_TRACE(spec);
        auto context = open(spec);
        ASSERT_NE(context, nullptr);
        EXPECT_NE(context->device(), VK_NULL_HANDLE);
        EXPECT_NE(context->compute_queue(), VK_NULL_HANDLE);
        EXPECT_NE(context->transfer_queue(), VK_NULL_HANDLE);
        EXPECT_EQ(context->has_transfer_queue(), context->transfer_family() != context->compute_family());
        EXPECT_TRUE(context->description().unusable_reason.empty());
        if (contains(spec, "LLVM") || contains(spec, "llvm")) {
            EXPECT_TRUE(contains(context->description().name, "llvmpipe")) << context->description().name;
        }
        if (std::string(spec) == "vulkan:0") {
            EXPECT_EQ(context->description().index, 0u);
        }
        EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
    }
}

TEST(VulkanContext, UnknownNameListsDevices) {
    const std::string message = error_of<tandem::DeviceError>([] { open("vulkan:nosuchgpu"); });
    EXPECT_TRUE(contains(message, "nosuchgpu")) << message;
    EXPECT_TRUE(contains(message, "llvmpipe")) << message;
    const std::string index = error_of<tandem::DeviceError>([] { open("vulkan:4000"); });
    EXPECT_TRUE(contains(index, "vulkan:4000") && contains(index, "llvmpipe")) << index;
}

TEST(VulkanContext, BadDeviceSettingIsConfigError) {
    for (const char* spec : {"gpu", "vulkan:", "Vulkan", "", "cuda:0"}) {
        SCOPED_TRACE(spec);
        const std::string message = error_of<tandem::ConfigError>([&] { open(spec); });
        EXPECT_TRUE(contains(message, "TANDEM_DEVICE")) << message;
        EXPECT_TRUE(contains(message, "vulkan:<index>")) << message;
    }
}

// The other tests' "no messages" means something only if the layer really reports: a copy
// that reads what the previous copy wrote, with no barrier between, is a hazard it must see.
TEST(VulkanContext, ValidationReportsSyncHazards) {
    auto context = open();
    const VkDevice device = context->device();
    auto heap = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, MiB, /*cached_free_bytes=*/MiB);
    auto a = heap->allocate(4096), b = heap->allocate(4096), c = heap->allocate(4096);
    VkCommandPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool_info.queueFamilyIndex = context->compute_family();
    VkCommandPool raw_pool = VK_NULL_HANDLE;
    vk::check(vkCreateCommandPool(device, &pool_info, nullptr, &raw_pool), "vkCreateCommandPool");
    vk::CommandPool pool(device, raw_pool);
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = pool.get();
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk::check(vkAllocateCommandBuffers(device, &alloc, &cmd), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    vk::check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const VkBufferCopy first{a->offset(), b->offset(), 4096}, second{b->offset(), c->offset(), 4096};
    vkCmdCopyBuffer(cmd, a->buffer(), b->buffer(), 1, &first);
    vkCmdCopyBuffer(cmd, b->buffer(), c->buffer(), 1, &second);
    vk::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    EXPECT_GE(context->validation_messages(), 1u);
    EXPECT_TRUE(contains(texts(*context), "SYNC-HAZARD-READ-AFTER-WRITE")) << texts(*context);
}

TEST(VulkanHeap, AllocatesManySizesWithoutOverlap) {
    auto context = open();
    constexpr VkDeviceSize block = 4 * MiB;
    auto heap = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, block, /*cached_free_bytes=*/block);
    // Larger than lavapipe's maxStorageBufferRange (128 MiB): shaders use addresses, so fine.
    const VkDeviceSize big =
        std::clamp<VkDeviceSize>(context->description().max_storage_buffer_range + MiB, 160 * MiB, 1024 * MiB);
    const std::vector<VkDeviceSize> sizes = {0, 1, 255, 256, 257, MiB, block, block + 1, 9 * MiB, big};
    std::vector<std::shared_ptr<vk::DeviceArray>> arrays;
    VkDeviceSize reserved = 0;
    for (int round = 0; round < 3; ++round)
        for (VkDeviceSize bytes : sizes) {
            arrays.push_back(heap->allocate(bytes));
            reserved += (std::max<VkDeviceSize>(bytes, 1) + 255) / 256 * 256;
        }
    std::vector<std::pair<VkDeviceAddress, VkDeviceSize>> ranges;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
        const auto& a = *arrays[i];
        EXPECT_EQ(a.bytes(), sizes[i % sizes.size()]);
        EXPECT_NE(a.buffer(), VK_NULL_HANDLE);
        EXPECT_NE(a.address(), 0u);
        EXPECT_EQ(a.address() % 256, 0u);
        EXPECT_EQ(a.offset() % 256, 0u);
        EXPECT_EQ(a.mapped(), nullptr);
        ranges.emplace_back(a.address(), std::max<VkDeviceSize>(a.bytes(), 1));
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i)
        EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first) << "ranges " << i - 1 << " and " << i;

    vk::HeapStats s = heap->stats();
    EXPECT_EQ(s.used_bytes, reserved);
    EXPECT_EQ(s.allocations, arrays.size());
    EXPECT_LT(s.blocks, arrays.size()) << "sub-allocation should need fewer blocks than arrays";
    EXPECT_GE(s.block_bytes, s.used_bytes);
    arrays.clear();
    s = heap->stats();
    EXPECT_EQ(s.used_bytes, 0u);
    EXPECT_LE(s.block_bytes, block) << "only one spare block stays";
    EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
}

TEST(VulkanHeap, ReusesAndMergesFreedRanges) {
    auto context = open();
    constexpr VkDeviceSize block = 4 * MiB;
    auto heap = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, block, /*cached_free_bytes=*/block);
    std::vector<std::shared_ptr<vk::DeviceArray>> quarters;
    for (int i = 0; i < 4; ++i) quarters.push_back(heap->allocate(MiB));
    EXPECT_EQ(heap->stats().blocks, 1u);
    const VkDeviceSize second = quarters[1]->offset();
    quarters[1].reset();
    auto again = heap->allocate(MiB);
    EXPECT_EQ(again->offset(), second) << "first fit reuses the freed range";
    EXPECT_EQ(again->buffer(), quarters[0]->buffer());
    EXPECT_EQ(heap->stats().blocks, 1u);
    // Free in an order that needs merging on both sides; the whole block is then one range.
    quarters[0].reset();
    quarters[2].reset();
    again.reset();
    quarters[3].reset();
    EXPECT_EQ(heap->stats().used_bytes, 0u);
    auto whole = heap->allocate(block);
    EXPECT_EQ(whole->offset(), 0u);
    vk::HeapStats s = heap->stats();
    EXPECT_EQ(s.blocks, 1u) << "the spare block serves the next request";
    EXPECT_EQ(s.block_bytes, block);
    EXPECT_EQ(s.allocations, 6u);
    whole.reset();
    // Two wholly free blocks: one stays as the spare, the other goes back to Vulkan.
    auto a = heap->allocate(block), b = heap->allocate(block);
    EXPECT_EQ(heap->stats().blocks, 2u);
    a.reset();
    b.reset();
    EXPECT_EQ(heap->stats().block_bytes, block);
    // A block-sized-plus request gets its own block, freed as soon as it is free.
    auto large = heap->allocate(block + 256);
    EXPECT_EQ(heap->stats().block_bytes, 2 * block + 256);
    large.reset();
    EXPECT_EQ(heap->stats().block_bytes, block);
    // Above half a block: a block of exactly its size (not a shared one mostly left empty).
    auto spare = heap->allocate(block);  // takes the spare block
    auto three = heap->allocate(3 * MiB);
    EXPECT_EQ(heap->stats().block_bytes, block + 3 * MiB);
    three.reset();
    spare.reset();
    // The default cache (half the memory heap, at least 8 GiB) keeps both free blocks for reuse.
    auto cached = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, block);
    auto c1 = cached->allocate(block), c2 = cached->allocate(block);
    c1.reset();
    c2.reset();
    EXPECT_EQ(cached->stats().block_bytes, 2 * block);
    EXPECT_EQ(cached->allocate(block)->offset(), 0u);
    EXPECT_EQ(cached->stats().blocks, 2u) << "a kept block serves the next request";
    EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
}

TEST(VulkanHeap, OutOfMemoryNamesSizeAndUsage) {
    auto context = open();
    auto heap = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, 4 * MiB, /*cached_free_bytes=*/4 * MiB);
    const VkDeviceSize huge = VkDeviceSize{1} << 50;
    const std::string message = error_of<vk::DeviceOutOfMemory>([&] { heap->allocate(huge); });
    EXPECT_TRUE(contains(message, std::to_string(huge))) << message;
    EXPECT_TRUE(contains(message, "device-local")) << message;
    EXPECT_EQ(heap->stats().used_bytes, 0u);
    EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
}

TEST(VulkanHeap, ThreadsAllocateAndFreeConcurrently) {
    auto context = open();
    auto heap = std::make_shared<vk::DeviceHeap>(*context, vk::DeviceHeap::Kind::device_local, MiB, /*cached_free_bytes=*/MiB);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t)
        threads.emplace_back([&heap, t] {
            std::mt19937 rng(t);
            std::vector<std::shared_ptr<vk::DeviceArray>> live;
            for (int i = 0; i < 500; ++i) {
                if (!live.empty() && rng() % 3 == 0) {
                    live.erase(live.begin() + static_cast<std::ptrdiff_t>(rng() % live.size()));
                } else {
                    live.push_back(heap->allocate(rng() % (64 * 1024)));
                }
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(heap->stats().used_bytes, 0u);
    EXPECT_LE(heap->stats().block_bytes, MiB);
    EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
}

// Host -> upload staging -> device-local -> readback -> host, through vkCmdCopyBuffer on the
// compute queue with a fence: the mapped pointers, offsets and buffers are what they claim.
TEST(VulkanHeap, UploadDeviceReadbackRoundTrip) {
    auto context = open();
    const VkDevice device = context->device();
    using Kind = vk::DeviceHeap::Kind;
    auto upload = std::make_shared<vk::DeviceHeap>(*context, Kind::upload, 8 * MiB);
    auto local = std::make_shared<vk::DeviceHeap>(*context, Kind::device_local, 8 * MiB);
    auto readback = std::make_shared<vk::DeviceHeap>(*context, Kind::readback, 8 * MiB);
    // Something first in each heap, so the ranges under test do not start at offset 0.
    auto pad1 = upload->allocate(1000), pad2 = local->allocate(3000), pad3 = readback->allocate(1);
    constexpr VkDeviceSize bytes = 3 * MiB + 12345;
    auto src = upload->allocate(bytes), mid = local->allocate(bytes), dst = readback->allocate(bytes);
    ASSERT_NE(src->mapped(), nullptr);
    ASSERT_NE(dst->mapped(), nullptr);
    EXPECT_EQ(mid->mapped(), nullptr);
    EXPECT_GT(src->offset(), 0u);
    EXPECT_GT(mid->offset(), 0u);
    EXPECT_GT(dst->offset(), 0u);
    std::vector<unsigned char> pattern(bytes);
    std::mt19937 rng(42);
    for (auto& b : pattern) b = static_cast<unsigned char>(rng());
    std::memcpy(src->mapped(), pattern.data(), bytes);
    std::memset(dst->mapped(), 0, bytes);

    VkCommandPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool_info.queueFamilyIndex = context->compute_family();
    VkCommandPool raw_pool = VK_NULL_HANDLE;
    vk::check(vkCreateCommandPool(device, &pool_info, nullptr, &raw_pool), "vkCreateCommandPool");
    vk::CommandPool pool(device, raw_pool);
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = pool.get();
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk::check(vkAllocateCommandBuffers(device, &alloc, &cmd), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk::check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const VkBufferCopy up{src->offset(), mid->offset(), bytes};
    vkCmdCopyBuffer(cmd, src->buffer(), mid->buffer(), 1, &up);
    VkBufferMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.buffer = mid->buffer();
    barrier.offset = mid->offset();
    barrier.size = bytes;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 1,
                         &barrier, 0, nullptr);
    const VkBufferCopy down{mid->offset(), dst->offset(), bytes};
    vkCmdCopyBuffer(cmd, mid->buffer(), dst->buffer(), 1, &down);
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    barrier.buffer = dst->buffer();
    barrier.offset = dst->offset();
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &barrier,
                         0, nullptr);
    vk::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");

    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkFence raw_fence = VK_NULL_HANDLE;
    vk::check(vkCreateFence(device, &fence_info, nullptr, &raw_fence), "vkCreateFence");
    vk::Fence fence(device, raw_fence);
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    vk::check(vkQueueSubmit(context->compute_queue(), 1, &submit, fence.get()), "vkQueueSubmit");
    vk::check(vkWaitForFences(device, 1, &raw_fence, VK_TRUE, 60'000'000'000ull), "vkWaitForFences");
    // lavapipe's one memory type is coherent: no vkInvalidateMappedMemoryRanges needed here.
    ASSERT_TRUE(context->readback_coherent());
    EXPECT_EQ(std::memcmp(dst->mapped(), pattern.data(), bytes), 0) << "the round trip changed the data";
    EXPECT_TRUE(context->readback_cached()) << "lavapipe's memory is host-cached";
    EXPECT_EQ(context->validation_messages(), 0u) << texts(*context);
}
