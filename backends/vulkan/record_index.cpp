// Recording the indexing regions (Region::indexing) into the open batch: gather (one kernel),
// scatter (a copy of a, then claim and write passes: the last of repeated subscripts wins, the
// same bits every run) and find (count, prefix and write passes). Subscripts are checked on the
// device; the fault words come back with the batch and fail the region with its IndexError.
#include <cstring>
#include <optional>

#include "backends/vulkan/batch.hpp"
#include "backends/vulkan/index_kernels.hpp"
#include "graph/subscripts.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::vk {

namespace {

std::pair<std::uint32_t, std::uint32_t> grid_for(std::uint64_t elements, std::uint32_t per_group) {
    return grid_of((elements + per_group - 1) / per_group);
}

void dispatch(VkCommandBuffer cmd, const ComputePipeline& p, const void* push, std::uint32_t bytes, std::uint32_t gx, std::uint32_t gy) {
    if (gx == 0 || gy == 0) return;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, push);
    vkCmdDispatch(cmd, gx, gy, 1);
}

void compute_to_compute(VkCommandBuffer cmd) {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

}  // namespace

std::function<void()> VulkanBackend::subscript_check(const Region& r, std::shared_ptr<DeviceArray> fault,
                                                     std::shared_ptr<Value> subscripts) {
    std::memset(fault->mapped(), 0xFF, 8);
    return [&r, fault = std::move(fault), subscripts = std::move(subscripts)] {
        std::uint32_t first[2];
        std::memcpy(first, fault->mapped(), sizeof first);
        if (first[0] == kNoFault && first[1] == kNoFault) return;
        // The lower position is the first bad subscript; its kind is the word that holds it.
        const BadSubscript why = first[0] <= first[1] ? BadSubscript::not_positive_integer : BadSubscript::past_extent;
        const std::int64_t k = std::min(first[0], first[1]);
        std::optional<double> value;
        if (auto host = subscripts->host(); host && k < r.inputs[1]->shape.numel()) {
            value = r.inputs[1]->dtype == DType::f32 ? static_cast<const float*>(host->data())[k]
                                                     : static_cast<const double*>(host->data())[k];
        }
        throw_bad_subscript(r, k, why, value);
    };
}

void VulkanBackend::submit_gather(Submission s) {
    const Region& r = *s.region;
    const auto& e = r.index_extents;
    const std::uint64_t total = static_cast<std::uint64_t>(e.inner * e.count * e.outer);
    const ComputePipeline& pipeline = pipelines_->get(gather_kernel(r.outputs[0].node->dtype, r.inputs[1]->dtype));
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));
    auto fault = upload_heap_->allocate(8);
    auto check = subscript_check(r, fault, s.inputs[1]);

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    auto a = device_copy(*s.inputs[0], b), sub = device_copy(*s.inputs[1], b);
    b.keep.push_back(a);
    b.keep.push_back(sub);
    b.keep.push_back(fault);
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    const IndexPush push{a->address(), sub->address(), out->address(), fault->address(), 0, e.inner, e.count, e.outer, e.extent,
                         0, total == 0 ? 1u : 0u};
    const auto [gx, gy] = grid_for(total == 0 ? static_cast<std::uint64_t>(e.count) : total, kIndexWorkgroup);
    const int q = b.begin_span(Span::kernel, &r);
    dispatch(b.cmd, pipeline, &push, sizeof push, gx, gy);
    b.end_span(q);
    ++b.dispatches;
    finish_item(b, std::move(s), out, std::move(check));
}

void VulkanBackend::submit_scatter(Submission s) {
    const Region& r = *s.region;
    const auto& e = r.index_extents;
    const DType t = r.outputs[0].node->dtype;
    const std::uint64_t total = static_cast<std::uint64_t>(e.inner * e.count * e.outer);
    const std::uint64_t numel = static_cast<std::uint64_t>(r.outputs[0].node->shape.numel());
    // Claims are 32-bit (element + 1): larger selections run on the CPU.
    if (total >= 0xFFFFFFFFull) throw DeviceError("vulkan: an indexed assignment of 2^32 elements or more");
    // A scalar right side needs no claims: every write of a destination writes the same value.
    const bool broadcast = r.inputs[2]->shape.numel() == 1;
    const ComputePipeline& claim = pipelines_->get(scatter_kernel(t, r.inputs[1]->dtype, true));
    const ComputePipeline& write = pipelines_->get(scatter_kernel(t, r.inputs[1]->dtype, false));
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));
    auto claims = broadcast ? nullptr : device_heap_->allocate(std::max<std::uint64_t>(numel, 1) * 4);
    auto fault = upload_heap_->allocate(8);
    auto check = subscript_check(r, fault, s.inputs[1]);

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    auto a = device_copy(*s.inputs[0], b), sub = device_copy(*s.inputs[1], b), rhs = device_copy(*s.inputs[2], b);
    for (auto* keep : {&a, &sub, &rhs, &fault}) b.keep.push_back(*keep);
    if (claims) b.keep.push_back(claims);
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    const int q = b.begin_span(Span::kernel, &r);
    // out = a and no claims, then the two passes.
    barrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    if (s.outputs[0]->bytes() > 0) {
        const VkBufferCopy copy{a->offset(), out->offset(), s.outputs[0]->bytes()};
        vkCmdCopyBuffer(b.cmd, a->buffer(), out->buffer(), 1, &copy);
    }
    if (claims) vkCmdFillBuffer(b.cmd, claims->buffer(), claims->offset(), std::max<std::uint64_t>(numel, 1) * 4, 0);
    barrier(b.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    const IndexPush push{rhs->address(), sub->address(), out->address(), fault->address(), claims ? claims->address() : 0,
                         e.inner, e.count, e.outer, e.extent, broadcast ? 1u : 0u, total == 0 ? 1u : 0u};
    const auto [gx, gy] = grid_for(total == 0 ? static_cast<std::uint64_t>(e.count) : total, kIndexWorkgroup);
    if (claims || total == 0) {
        dispatch(b.cmd, claim, &push, sizeof push, gx, gy);  // (with nothing selected: checks only)
        compute_to_compute(b.cmd);
        ++b.dispatches;
    }
    if (total > 0) {
        dispatch(b.cmd, write, &push, sizeof push, gx, gy);
        ++b.dispatches;
    }
    b.end_span(q);
    finish_item(b, std::move(s), out, std::move(check));
}

void VulkanBackend::submit_find(Submission s) {
    const Region& r = *s.region;
    const auto& e = r.index_extents;
    if (e.extent >= 0xFFFFFFFFll) throw DeviceError("vulkan: find over 2^32 elements or more");
    const auto n = static_cast<std::uint32_t>(e.extent);
    const std::uint32_t blocks = (n + kFindBlock - 1) / kFindBlock;
    const ComputePipeline& count = pipelines_->get(find_kernel(1));
    const ComputePipeline& prefix = pipelines_->get(find_kernel(2));
    const ComputePipeline& write = pipelines_->get(find_kernel(3));
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));
    auto counts = device_heap_->allocate(std::max<std::uint32_t>(blocks, 1) * 4);
    auto offsets = device_heap_->allocate(std::max<std::uint32_t>(blocks, 1) * 4);

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    auto mask = device_copy(*s.inputs[0], b);
    for (auto* keep : {&mask, &counts, &offsets}) b.keep.push_back(*keep);
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    const FindPush push{mask->address(), counts->address(), offsets->address(), out->address(), n, blocks,
                        static_cast<std::uint32_t>(e.count), 0};
    if (blocks > 0 && e.count > 0) {
        const auto [gx, gy] = grid_for(blocks, 1);
        const int q = b.begin_span(Span::kernel, &r);
        dispatch(b.cmd, count, &push, sizeof push, gx, gy);
        compute_to_compute(b.cmd);
        dispatch(b.cmd, prefix, &push, sizeof push, 1, 1);
        compute_to_compute(b.cmd);
        dispatch(b.cmd, write, &push, sizeof push, gx, gy);
        b.end_span(q);
        b.dispatches += 3;
    }
    finish_item(b, std::move(s), out);
}

}  // namespace tandem::detail::vk
