// What the two Vulkan GEMM suites (test_vulkan_gemm.cpp, test_vulkan_coopmat.cpp) share: a device
// rig (context, heaps, a pipeline cache in memory, one command buffer and a fence; uploads, barriers,
// read-back), the layout of a case's host operands, the GemmArgs of a case, and the double reference
// of one element of act(alpha op(A) op(B) + beta C + bias) with the sum of magnitudes that bounds
// its error, 3 (k + 2) eps mag.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/gemm.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/pipeline_cache.hpp"

namespace gemm_test {

namespace vk = tandem::detail::vk;

constexpr VkDeviceSize MiB = 1 << 20;

/// The validation layer's messages, one a line.
inline std::string texts(const vk::Context& context) {
    std::string out;
    for (const auto& t : context.validation_texts()) out += t + "\n";
    return out;
}

/// One device (validation on when asked), heaps of up to `max_heap` bytes each, a pipeline cache in
/// memory, one command buffer and its fence; the suite makes its kernel (gemm or coop).
class DeviceRig {
public:
    DeviceRig(bool validation, VkDeviceSize max_heap) {
        vk::ContextOptions o;
        o.validation = validation;
        ctx = vk::Context::create(o);
        device = std::make_shared<vk::DeviceHeap>(*ctx, vk::DeviceHeap::Kind::device_local, 64 * MiB, max_heap);
        upload = std::make_shared<vk::DeviceHeap>(*ctx, vk::DeviceHeap::Kind::upload, 64 * MiB, max_heap);
        readback = std::make_shared<vk::DeviceHeap>(*ctx, vk::DeviceHeap::Kind::readback, 64 * MiB, max_heap);
        pipelines = std::make_unique<vk::PipelineCache>(*ctx, "", nullptr);
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, ctx->compute_family()};
        VkCommandPool p = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(ctx->device(), &pci, nullptr, &p), "vkCreateCommandPool");
        pool = vk::CommandPool(ctx->device(), p);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool.get(),
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        vk::check(vkAllocateCommandBuffers(ctx->device(), &ai, &cmd), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
        VkFence f = VK_NULL_HANDLE;
        vk::check(vkCreateFence(ctx->device(), &fi, nullptr, &f), "vkCreateFence");
        fence = vk::Fence(ctx->device(), f);
    }
    ~DeviceRig() {
        if (ctx) vkDeviceWaitIdle(ctx->device());
    }
    DeviceRig(const DeviceRig&) = delete;
    DeviceRig& operator=(const DeviceRig&) = delete;

    /// Uploads `data` to a new device-local array (the copy is recorded into the open command buffer);
    /// a braced list, put({0.0f}), is floats.
    template <class T = float>
    std::shared_ptr<vk::DeviceArray> put(const std::vector<T>& data) {
        const VkDeviceSize bytes = std::max<VkDeviceSize>(data.size() * sizeof(T), sizeof(T));
        auto staging = upload->allocate(bytes);
        if (!data.empty()) std::memcpy(staging->mapped(), data.data(), data.size() * sizeof(T));
        auto arr = device->allocate(bytes);
        VkBufferCopy region{staging->offset(), arr->offset(), bytes};
        vkCmdCopyBuffer(cmd, staging->buffer(), arr->buffer(), 1, &region);
        keep.push_back(staging);
        keep.push_back(arr);
        return arr;
    }
    void begin() {
        keep.clear();
        vk::check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
        vk::check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    }
    void barrier(VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src, dst};
        vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
    }
    void submit_and_wait() {
        vk::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkFence f = fence.get();
        vk::check(vkResetFences(ctx->device(), 1, &f), "vkResetFences");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd, 0, nullptr};
        vk::check(vkQueueSubmit(ctx->compute_queue(), 1, &si, f), "vkQueueSubmit");
        vk::check(vkWaitForFences(ctx->device(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    }
    /// Records the copy of `arr` (`count` elements, last written in `src_stage` with `src`) back,
    /// submits, waits, returns it.
    template <class T>
    std::vector<T> read_back(const std::shared_ptr<vk::DeviceArray>& arr, std::size_t count, VkPipelineStageFlags src_stage,
                             VkAccessFlags src) {
        barrier(src_stage, src, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
        const VkDeviceSize bytes = std::max<VkDeviceSize>(count * sizeof(T), sizeof(T));
        auto back = readback->allocate(bytes);
        VkBufferCopy region{arr->offset(), back->offset(), bytes};
        vkCmdCopyBuffer(cmd, arr->buffer(), back->buffer(), 1, &region);
        barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
        submit_and_wait();
        back->invalidate();
        std::vector<T> out(count);
        if (count > 0) std::memcpy(out.data(), back->mapped(), count * sizeof(T));
        keep.clear();
        return out;
    }
    void expect_clean() const { EXPECT_EQ(ctx->validation_messages(), 0u) << texts(*ctx); }

    std::unique_ptr<vk::Context> ctx;
    std::shared_ptr<vk::DeviceHeap> device, upload, readback;
    std::unique_ptr<vk::PipelineCache> pipelines;
    std::unique_ptr<vk::Gemm> gemm;
    std::unique_ptr<vk::GemmCoopmat> coop;
    vk::CommandPool pool;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk::Fence fence;
    std::vector<std::shared_ptr<void>> keep;
};

/// The leading dimensions of a case's operands (each padded by `pad` rows) and their columns.
struct Layout {
    std::uint32_t lda, ldb, ldc;
    std::uint32_t a_cols, b_cols;
};
template <class Case>
Layout layout(const Case& c) {
    const std::uint32_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
    const std::uint32_t b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
    return {std::max(1u, a_rows) + c.pad, std::max(1u, b_rows) + c.pad, std::max(1u, c.m) + c.pad, a_cols, b_cols};
}
/// The length of the bias vector a case reads.
template <class Case>
std::size_t bias_count(const Case& c) {
    return c.bias == vk::GemmBias::per_row ? c.m : c.bias == vk::GemmBias::per_column ? c.n : 0;
}

/// The GemmArgs of a case: shape, transposes, scalars, epilogue (addresses and leading dimensions
/// are the caller's).
template <class Case>
vk::GemmArgs gemm_args(const Case& c, tandem::DType dt) {
    vk::GemmArgs g;
    g.dtype = dt;
    g.trans_a = c.ta;
    g.trans_b = c.tb;
    g.m = c.m;
    g.n = c.n;
    g.k = c.k;
    g.alpha = c.alpha;
    g.beta = c.beta;
    g.bias_mode = c.bias;
    g.activation = c.act;
    return g;
}

/// The arguments of an empty m x n product (k = 3, no operands).
inline vk::GemmArgs empty_args(std::uint32_t m, std::uint32_t n) {
    vk::GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = 3;
    g.lda = g.ldd = g.ldc = std::max(1u, m);
    g.ldb = 3;
    return g;
}

/// alpha sum_p A(i, p) B(p, j) + beta C_ij + bias_ij in double, before the activation, and the sum
/// of the magnitudes of its terms; nan: a product was NaN.
struct Reference {
    double ref = 0, mag = 0;
    bool nan = false;
};
template <class Case, class A, class B, class C, class Bias>
Reference reference(const Case& c, std::uint32_t i, std::uint32_t j, A a, B b, C cij, Bias bias) {
    Reference r;
    for (std::uint32_t p = 0; p < c.k; ++p) {
        const double x = a(i, p), y = b(p, j), xy = x * y;
        if (std::isnan(xy)) r.nan = true;
        r.ref += xy;
        r.mag += std::fabs(xy);
    }
    r.ref *= c.alpha;
    r.mag *= std::fabs(c.alpha);
    if (c.beta != 0) {
        const double cv = c.beta * static_cast<double>(cij());
        r.ref += cv;
        r.mag += std::fabs(cv);
    }
    if (c.bias != vk::GemmBias::none) {
        const double bv = bias(c.bias == vk::GemmBias::per_row ? i : j);
        r.ref += bv;
        r.mag += std::fabs(bv);
    }
    return r;
}

/// The forward error bound of a length-k dot product whose terms' magnitudes sum to mag.
inline double dot_bound(std::uint32_t k, double eps, double mag) { return 3.0 * (k + 2.0) * eps * mag; }

}  // namespace gemm_test
