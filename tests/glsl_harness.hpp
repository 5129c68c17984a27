// The compute harness of the GLSL library tests (test_vulkan_math.cpp, test_vulkan_philox.cpp): a Vulkan
// context of their own (no Runtime), a GLSL compute shader compiled with the project's compiler
// (vk::compile_compute_shader) into a pipeline whose inputs and outputs are passed by device address in
// push constants, one-shot command buffers submitted and waited for, and results read back from
// host-visible memory.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"

namespace tglsl {

namespace vk = tandem::detail::vk;

/// A compute pipeline: its module, layout (one push-constant range, no descriptor sets) and pipeline.
struct Kernel {
    vk::ShaderModule module;
    vk::PipelineLayout layout;
    vk::Pipeline pipeline;
};

/// A test suite's device: the context and two heaps, opened in SetUpTestSuite and closed in
/// TearDownTestSuite. Inputs go in the upload heap; outputs in the readback heap (host-cached), or,
/// where that is not coherent, in the coherent upload heap (no VkDeviceMemory here to invalidate).
struct Device {
    std::unique_ptr<vk::Context> ctx;
    std::shared_ptr<vk::DeviceHeap> upload, readback;

    void open(bool validation) {
        vk::ContextOptions o;
        o.device = "vulkan";
        o.validation = validation;
        ctx = vk::Context::create(o);
        using Kind = vk::DeviceHeap::Kind;
        upload = std::make_shared<vk::DeviceHeap>(*ctx, Kind::upload, VkDeviceSize{64} << 20);
        readback = ctx->readback_coherent() ? std::make_shared<vk::DeviceHeap>(*ctx, Kind::readback, VkDeviceSize{64} << 20)
                                            : upload;
    }
    void close() {
        readback.reset();
        upload.reset();
        ctx.reset();
    }

    /// The validation layer's messages, one a line (for a failed EXPECT on validation_messages()).
    std::string texts() const {
        std::string s;
        for (const auto& t : ctx->validation_texts()) s += t + "\n";
        return s;
    }

    /// A compute pipeline of the GLSL `source` (entry point main) with push constants of push_bytes.
    Kernel kernel(const std::string& source, std::uint32_t push_bytes) const {
        const VkDevice dev = ctx->device();
        const std::vector<std::uint32_t> spirv = vk::compile_compute_shader(source);
        VkShaderModuleCreateInfo mi{};
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = spirv.size() * 4;
        mi.pCode = spirv.data();
        VkShaderModule raw_module = VK_NULL_HANDLE;
        vk::check(vkCreateShaderModule(dev, &mi, nullptr, &raw_module), "vkCreateShaderModule");
        vk::ShaderModule module(dev, raw_module);
        const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
        VkPipelineLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        li.pushConstantRangeCount = 1;
        li.pPushConstantRanges = &range;
        VkPipelineLayout raw_layout = VK_NULL_HANDLE;
        vk::check(vkCreatePipelineLayout(dev, &li, nullptr, &raw_layout), "vkCreatePipelineLayout");
        vk::PipelineLayout layout(dev, raw_layout);
        VkComputePipelineCreateInfo ci{};
        ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module.get();
        ci.stage.pName = "main";
        ci.layout = layout.get();
        VkPipeline raw_pipeline = VK_NULL_HANDLE;
        vk::check(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &raw_pipeline), "vkCreateComputePipelines");
        return Kernel{std::move(module), std::move(layout), vk::Pipeline(dev, raw_pipeline)};
    }

    /// Records `record(cb)` into one command buffer, followed by a barrier that makes shader writes
    /// visible to the host, submits it to the compute queue and waits; returns the wall time of
    /// the submit and wait, in seconds.
    template <class Record> double submit(Record record) const {
        const VkDevice dev = ctx->device();
        VkCommandPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.queueFamilyIndex = ctx->compute_family();
        VkCommandPool raw_pool = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(dev, &pi, nullptr, &raw_pool), "vkCreateCommandPool");
        vk::CommandPool pool(dev, raw_pool);
        VkCommandBufferAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = pool.get();
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        vk::check(vkAllocateCommandBuffers(dev, &ai, &cb), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vk::check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        record(cb);
        VkMemoryBarrier mb{};
        mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
        vk::check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
        VkFenceCreateInfo fi{};
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        VkFence raw_fence = VK_NULL_HANDLE;
        vk::check(vkCreateFence(dev, &fi, nullptr, &raw_fence), "vkCreateFence");
        vk::Fence fence(dev, raw_fence);
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        const auto t0 = std::chrono::steady_clock::now();
        vk::check(vkQueueSubmit(ctx->compute_queue(), 1, &si, fence.get()), "vkQueueSubmit");
        vk::check(vkWaitForFences(dev, 1, &raw_fence, VK_TRUE, 600'000'000'000ull), "vkWaitForFences");
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
};

/// Records k over invocations [0, count) of a 1-D kernel of local size 64, in dispatches of at most
/// 2^20 invocations (16384 workgroups, well under maxComputeWorkGroupCount); push(first) gives the
/// push constants of the dispatch that starts at invocation `first` (the shader adds it to
/// gl_GlobalInvocationID.x and returns at count).
template <class MakePush> void dispatch_1d(VkCommandBuffer cb, const Kernel& k, std::size_t count, MakePush push) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline.get());
    constexpr std::uint32_t chunk = 1u << 20;
    for (std::size_t first = 0; first < count; first += chunk) {
        const auto p = push(static_cast<std::uint32_t>(first));
        vkCmdPushConstants(cb, k.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
        const std::size_t m = std::min<std::size_t>(chunk, count - first);
        vkCmdDispatch(cb, static_cast<std::uint32_t>((m + 63) / 64), 1, 1);
    }
}

}  // namespace tglsl
