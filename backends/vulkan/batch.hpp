// What the Vulkan backend records into and how (internal to backends/vulkan): the batch of one
// command buffer, the copy-queue jobs, a value's device copy, the barriers. Shared by
// vulkan_backend.cpp (submission, completion, copies) and record_ops.cpp (the region kinds with
// fixed kernels or copies: matmul, transpose, scan, cat).
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "backends/vulkan/arguments.hpp"
#include "backends/vulkan/vulkan_backend.hpp"

namespace tandem::detail::vk {

inline constexpr std::uint32_t kMaxDispatchesPerBatch = 64;
/// Timed spans (dispatches and in-batch copies) one batch's query pool holds, two queries each.
inline constexpr std::uint32_t kMaxSpansPerBatch = 2 * kMaxDispatchesPerBatch;
inline constexpr VkDeviceSize kBlockBytes = VkDeviceSize{256} << 20;
/// Copies of at least this many bytes go to the copy queue in submissions of their own, where
/// they overlap compute; smaller ones ride in the compute batch, where they cost no submission
/// (a submission costs ~10 us of host time; 1 MiB takes ~40 us over PCIe 4).
inline constexpr VkDeviceSize kQueueCopyBytes = VkDeviceSize{1} << 20;

inline void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src, dst};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

inline void buffer_barrier(VkCommandBuffer cmd, const DeviceArray& a, VkPipelineStageFlags src_stage, VkAccessFlags src,
                           VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
    VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER, nullptr, src, dst, VK_QUEUE_FAMILY_IGNORED,
                            VK_QUEUE_FAMILY_IGNORED, a.buffer(), a.offset(), a.bytes()};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, nullptr, 1, &b, 0, nullptr);
}

/// A byte image of a push-constant struct.
template <class T>
std::vector<std::byte> bytes_of(const T& v) {
    std::vector<std::byte> out(sizeof v);
    std::memcpy(out.data(), &v, sizeof v);
    return out;
}

/// `groups` workgroups of a fixed kernel as a grid within Vulkan's minimum 65535 per dimension.
inline std::pair<std::uint32_t, std::uint32_t> grid_of(std::uint64_t groups) {
    std::uint32_t x = 0, y = 0;
    split_groups(groups, 65535, x, y);
    return {x, y};
}

/// A value's device copy made by this backend. It keeps the device alive: a value may outlive
/// the runtime that computed it (members are destroyed last to first: the array, then the
/// context). `ready_at` is the compute timeline value of the batch that writes it (0: none) and
/// `uploaded_at` the upload timeline value of the copy-queue upload that fills it (0: none):
/// what later readers wait for.
struct VulkanBackend::Copy final : DeviceCopy {
    Copy(std::shared_ptr<Context> c, std::shared_ptr<DeviceArray> a, std::uint64_t ready, std::uint64_t uploaded)
        : context(std::move(c)), array(std::move(a)), ready_at(ready), uploaded_at(uploaded) {}
    std::shared_ptr<Context> context;
    std::shared_ptr<DeviceArray> array;
    std::uint64_t ready_at, uploaded_at;
};

/// One command buffer of copies on the copy queue, timed by two timestamps.
struct VulkanBackend::CopyJob {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    QueryPool queries;
    Span kind = Span::upload;
    std::uint64_t signal = 0;                  // on upload_timeline_ or download_timeline_
    std::vector<std::shared_ptr<void>> keep;   // staging the copies read
    std::uint64_t bytes = 0;                   // copied, for the activity sink
    std::chrono::steady_clock::time_point submitted{};  // by the host (submit_copy)
    double host_ms = -1;                       // an upload's staging copy and submit, for the activity sink
};

struct VulkanBackend::Batch {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    QueryPool queries;
    std::vector<Span> spans;                   // what each pair of queries timed
    std::vector<const Region*> span_regions;   // and for which region (null: none), for TANDEM_LOG=gpu
    std::uint32_t dispatches = 0;
    std::uint64_t signal = 0;                  // on timeline_, fixed when the batch opens
    std::uint64_t upload_wait = 0;             // upload_timeline_ value the batch waits for
    std::vector<std::unique_ptr<CopyJob>> uploads;  // copy-queue uploads it reads (retired with it)
    std::unique_ptr<CopyJob> readback;         // copy-queue readbacks of its outputs, after it
    std::exception_ptr error;                  // set when a submission failed
    bool submitted = false;                    // the compute command buffer reached the queue
    bool time_kernels = true;                  // the region being recorded: its kernels get timestamps
    bool queries_reset = false;                // `queries` are reset (by the host, or in cmd)
    struct Item {
        std::function<void(std::exception_ptr)> done;
        const Region* region;
        std::shared_ptr<DeviceArray> args;
        std::vector<std::pair<std::shared_ptr<DeviceArray>, std::shared_ptr<Value>>> readbacks;
        std::function<void()> check;  // data-dependent faults (bad subscripts): throws to fail the region
        std::function<void(double)> measured;  // Submission::measured
    };
    std::vector<Item> items;
    std::vector<std::shared_ptr<void>> keep;  // staging and arrays the recorded work reads

    /// Opens a timed span: the query index of its start, or -1 when untimed.
    int begin_span(Span kind, const Region* region = nullptr) {
        if (!queries || spans.size() >= kMaxSpansPerBatch || (kind == Span::kernel && !time_kernels)) return -1;
        if (!queries_reset) {
            vkCmdResetQueryPool(cmd, queries.get(), 0, 2 * kMaxSpansPerBatch);
            queries_reset = true;
        }
        const auto q = static_cast<std::uint32_t>(2 * spans.size());
        spans.push_back(kind);
        span_regions.push_back(region);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries.get(), q);
        return static_cast<int>(q);
    }
    void end_span(int q) {
        if (q >= 0)
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries.get(), static_cast<std::uint32_t>(q + 1));
    }
};

}  // namespace tandem::detail::vk
