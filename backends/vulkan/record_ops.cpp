// The region kinds the Vulkan backend records with fixed kernels or copies rather than generated
// code: matmul (backends/vulkan/gemm), transpose, scan, cat, remap; and the common end of recording a
// region with one output.
#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "backends/vulkan/batch.hpp"
#include "backends/vulkan/gemm.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "backends/vulkan/remap.hpp"
#include "backends/vulkan/scan.hpp"
#include "backends/vulkan/transpose.hpp"

namespace tandem::detail::vk {

GemmArgs VulkanBackend::matmul_args(const Region& r) {
    const Shape& sa = r.inputs[0]->shape;
    const Shape& sb = r.inputs[1]->shape;
    GemmArgs g;
    g.dtype = r.outputs[0].node->dtype;
    g.trans_a = r.trans_a;
    g.trans_b = r.trans_b;
    g.m = static_cast<std::uint32_t>(r.trans_a ? sa[1] : sa[0]);
    g.k = static_cast<std::uint32_t>(r.trans_a ? sa[0] : sa[1]);
    g.n = static_cast<std::uint32_t>(r.trans_b ? sb[0] : sb[1]);
    g.lda = static_cast<std::uint32_t>(std::max<std::int64_t>(1, sa[0]));
    g.ldb = static_cast<std::uint32_t>(std::max<std::int64_t>(1, sb[0]));
    g.ldc = g.ldd = std::max<std::uint32_t>(1, g.m);
    // The fused epilogue (graph/fusion.cpp): C and the bias follow A and B among the inputs.
    const Region::Epilogue& ep = r.epilogue;
    g.alpha = ep.alpha;
    g.beta = ep.has_c ? ep.beta : 0.0;
    g.bias_mode = ep.bias == Region::Epilogue::Bias::per_row      ? GemmBias::per_row
                  : ep.bias == Region::Epilogue::Bias::per_column ? GemmBias::per_column
                                                                  : GemmBias::none;
    g.activation = !ep.relu ? GemmActivation::none : ep.zero_first ? GemmActivation::relu_zero_first : GemmActivation::relu;
    // X'X and XX' (one operand, one side transposed): only the tiles on and above the diagonal.
    g.symmetric = matmul_precision_of(r) == MatmulPrecision::full && r.inputs[0] == r.inputs[1] && g.trans_a != g.trans_b;
    return g;
}

void VulkanBackend::submit_matmul(Submission s) {
    const Region& r = *s.region;
    const Region::Epilogue& ep = r.epilogue;
    GemmArgs g = matmul_args(r);
    // MatmulPrecision f16 on a device with tensor cores: the cooperative-matrix kernel (its
    // operands packed to halves first, or rounded while it stages its tiles; the same epilogue).
    // Other reduced precisions: the operands rounded into temporaries (round_kernel, the CPU's
    // bits), then the f32 kernel.
    const MatmulPrecision precision = matmul_precision_of(r);
    // X'X and XX' (one value, one side transposed): only the tiles on and above the diagonal.
    g.symmetric = precision == MatmulPrecision::full && s.inputs[0] == s.inputs[1] && g.trans_a != g.trans_b;
    std::optional<GemmCoopmat> tensor;
    const ComputePipeline *round = nullptr, *pack = nullptr;
    // Compiled (or loaded) before anything is recorded: a failure leaves nothing half-recorded.
    if (precision == MatmulPrecision::f16 && GemmCoopmat::available(context_->description())) {
        tensor.emplace(*context_, *pipelines_);
        tensor->pipeline(g);
        if (tensor->input() == CoopmatInput::f16) pack = &pipelines_->get(pack_f16_kernel());
    } else if (precision != MatmulPrecision::full) {
        round = &pipelines_->get(round_kernel(precision));
    }
    // A long inner dimension and few output tiles: split k (Gemm::split_parts). Only the GEMM
    // variant that runs is compiled (the split one is a kernel of its own), with the sum's
    // pipeline and the scratch, before anything is recorded.
    const std::uint32_t parts = tensor || round ? 1 : gemm_->split_parts(g);
    if (!tensor) gemm_->pipeline(g, parts > 1);
    const ComputePipeline* split_sum = parts > 1 ? &pipelines_->get(Gemm::split_sum_kernel(g.dtype)) : nullptr;
    auto scratch = parts > 1 ? device_heap_->allocate(Gemm::split_scratch_bytes(g, parts)) : nullptr;
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    auto a = device_copy(*s.inputs[0], b), bm = device_copy(*s.inputs[1], b);
    b.keep.push_back(a);
    b.keep.push_back(bm);
    g.a = a->address();
    g.b = bm->address();
    if (ep.has_c) {
        auto c = device_copy(*s.inputs[2], b);
        b.keep.push_back(c);
        g.c = c->address();
    }
    if (ep.bias != Region::Epilogue::Bias::none) {
        auto bias = device_copy(*s.inputs.back(), b);
        b.keep.push_back(bias);
        g.bias = bias->address();
    }
    g.d = out->address();
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    if (g.m > 0 && g.n > 0) {
        const int q = b.begin_span(Span::kernel, &r);
        if (round != nullptr && g.k > 0) {
            auto ra = device_heap_->allocate(a->bytes()), rb = device_heap_->allocate(bm->bytes());
            b.keep.push_back(ra);
            b.keep.push_back(rb);
            record_round(b.cmd, *round, a->address(), ra->address(), a->bytes() / sizeof(float));
            record_round(b.cmd, *round, bm->address(), rb->address(), bm->bytes() / sizeof(float));
            for (const auto* t : {ra.get(), rb.get()})
                buffer_barrier(b.cmd, *t, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
            g.a = ra->address();
            g.b = rb->address();
            b.dispatches += 2;
        }
        if (pack != nullptr && g.k > 0) {  // the tensor-core kernel reads packed halves
            const std::uint64_t na = a->bytes() / sizeof(float), nb = bm->bytes() / sizeof(float);
            auto pa = device_heap_->allocate(packed_f16_bytes(na)), pb = device_heap_->allocate(packed_f16_bytes(nb));
            b.keep.push_back(pa);
            b.keep.push_back(pb);
            record_pack_f16(b.cmd, *pack, a->address(), pa->address(), na);
            record_pack_f16(b.cmd, *pack, bm->address(), pb->address(), nb);
            for (const auto* t : {pa.get(), pb.get()})
                buffer_barrier(b.cmd, *t, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
            g.a = pa->address();
            g.b = pb->address();
            b.dispatches += 2;
        }
        if (tensor) {
            tensor->record(b.cmd, g);
        } else if (split_sum) {
            b.keep.push_back(scratch);
            const std::uint32_t recorded = gemm_->record_split(b.cmd, g, parts, scratch->address(), *split_sum);
            b.dispatches += recorded - 1;  // and one below
            std::lock_guard slock(stats_mutex_);
            stats_.dispatches += recorded - 1;  // finish_item counts one
        } else {
            gemm_->record(b.cmd, g);
        }
        b.end_span(q);
        ++b.dispatches;
    }
    finish_item(b, std::move(s), out);
}

void VulkanBackend::record_one_kernel(Submission s, const ComputePipeline& pipeline, std::uint32_t gx, std::uint32_t gy,
                                      const std::function<std::vector<std::byte>(std::uint64_t, std::uint64_t, std::uint32_t)>& push,
                                      std::uint32_t gz, std::uint32_t passes, std::shared_ptr<DeviceArray> scratch) {
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));
    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    auto src = device_copy(*s.inputs[0], b);
    b.keep.push_back(src);
    if (scratch) b.keep.push_back(std::move(scratch));
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    if (gx > 0 && gy > 0 && gz > 0 && passes > 0) {
        const int q = b.begin_span(Span::kernel, s.region);
        vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
        for (std::uint32_t pass = 0; pass < passes; ++pass) {
            if (pass > 0)  // what the last pass wrote, before this one reads it
                barrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
            const std::vector<std::byte> p = push(src->address(), out->address(), pass);
            vkCmdPushConstants(b.cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               static_cast<std::uint32_t>(p.size()), p.data());
            vkCmdDispatch(b.cmd, gx, gy, gz);
            ++b.dispatches;
        }
        b.end_span(q);
    }
    finish_item(b, std::move(s), out);
}

void VulkanBackend::submit_transpose(Submission s) {
    const Region& r = *s.region;
    const Shape& in = r.inputs[0]->shape;
    const auto rows = static_cast<std::uint64_t>(in[0]), cols = static_cast<std::uint64_t>(in[1]);
    const std::uint64_t gx = (rows + kTransposeTile - 1) / kTransposeTile, gy = (cols + kTransposeTile - 1) / kTransposeTile;
    if (gx > 65535 || gy > 65535 || rows > 0xFFFFFFFFull || cols > 0xFFFFFFFFull)
        throw DeviceError("vulkan: a transpose of " + in.to_string() + " needs more workgroups than one dispatch has");
    const ComputePipeline& pipeline = pipelines_->get(transpose_kernel(r.outputs[0].node->dtype));  // before recording
    record_one_kernel(std::move(s), pipeline, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy),
                      [&](std::uint64_t src, std::uint64_t dst, std::uint32_t) {
                          struct {
                              std::uint64_t src, dst;
                              std::uint32_t rows, cols;
                          } push{src, dst, static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(cols)};
                          return bytes_of(push);
                      });
}

void VulkanBackend::submit_scan(Submission s) {
    const Region& r = *s.region;
    const auto e = r.reduce_extents();
    const std::uint64_t lines = static_cast<std::uint64_t>(e.inner) * static_cast<std::uint64_t>(e.outer);
    const auto [gx, gy] = grid_of(e.len > 0 ? (lines + kScanWorkgroup - 1) / kScanWorkgroup : 0);
    const ComputePipeline& pipeline = pipelines_->get(scan_kernel(r.scan_op, r.outputs[0].node->dtype));  // before recording
    const auto len = static_cast<std::uint64_t>(e.len);
    // A long line is walked by several passes in turn (scan.hpp), the running values passing
    // through a carry buffer.
    const auto passes = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (len + kScanStepsPerDispatch - 1) / kScanStepsPerDispatch));
    auto carry = passes > 1 ? device_heap_->allocate(std::max<VkDeviceSize>(lines * 8, 8)) : nullptr;
    const std::uint64_t carry_at = carry ? carry->address() : 0;
    record_one_kernel(std::move(s), pipeline, gx, gy, [&](std::uint64_t src, std::uint64_t dst, std::uint32_t pass) {
        const std::uint64_t first = pass * kScanStepsPerDispatch;
        struct {
            std::uint64_t src, dst, carry, inner, len, outer, first, last;
        } push{src, dst, carry_at, static_cast<std::uint64_t>(e.inner), len, static_cast<std::uint64_t>(e.outer),
               first, std::min(len, first + kScanStepsPerDispatch)};
        static_assert(sizeof(push) == kScanPushBytes);
        return bytes_of(push);
    }, 1, passes, std::move(carry));
}

void VulkanBackend::submit_cat(Submission s) {
    const Region& r = *s.region;
    const auto e = r.reduce_extents();
    const std::size_t es = dtype_size(r.outputs[0].node->dtype);
    auto out = device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[0]->bytes(), 1));

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch(s);
    s.outputs[0]->set_device(ordinal(), std::make_shared<Copy>(context_, out, b.signal, 0));
    std::int64_t off = 0;
    std::vector<VkBufferCopy> regions;
    for (std::size_t q = 0; q < s.inputs.size(); ++q) {
        auto src = device_copy(*s.inputs[q], b);
        b.keep.push_back(src);
        const std::int64_t lq = r.inputs[q]->shape[r.reduce_dim];
        const auto bytes = static_cast<VkDeviceSize>(e.inner * lq) * es;
        regions.clear();
        for (std::int64_t o = 0; o < e.outer && bytes > 0; ++o)
            regions.push_back({src->offset() + static_cast<VkDeviceSize>(o) * bytes,
                               out->offset() + static_cast<VkDeviceSize>((o * e.len + off) * e.inner) * es, bytes});
        if (!regions.empty()) {
            // The inputs were last written by shaders or copies: the batch's opening barrier (and the
            // uploads' own) make them visible to this transfer.
            barrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_ACCESS_TRANSFER_READ_BIT);
            const int qs = b.begin_span(Span::kernel, &r);
            vkCmdCopyBuffer(b.cmd, src->buffer(), out->buffer(), static_cast<std::uint32_t>(regions.size()), regions.data());
            b.end_span(qs);
        }
        off += lq;
    }
    // The copies' writes, for the shaders and copies after.
    buffer_barrier(b.cmd, *out, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    ++b.dispatches;
    finish_item(b, std::move(s), out);
}

void VulkanBackend::submit_remap(Submission s) {
    const Region& r = *s.region;
    const auto e = r.reduce_extents();  // of the output
    const std::int64_t in_len = r.inputs[0]->shape[r.reduce_dim];
    const std::uint64_t total = static_cast<std::uint64_t>(e.inner * e.len * e.outer);
    const auto [gx, gy] = grid_of(in_len > 0 ? (total + kRemapWorkgroup - 1) / kRemapWorkgroup : 0);
    const ComputePipeline& pipeline = pipelines_->get(remap_kernel(r.outputs[0].node->dtype));  // before recording
    const std::int64_t a = r.remap_a, b = r.remap_b;
    record_one_kernel(std::move(s), pipeline, gx, gy, [&](std::uint64_t src, std::uint64_t dst, std::uint32_t) {
        struct {
            std::uint64_t src, dst;
            std::int64_t inner, out_len, outer, in_len, a, b;
        } push{src, dst, e.inner, e.len, e.outer, in_len, a, b};
        return bytes_of(push);
    });
}

/// The end of recording one region with one output `out`: its barrier, its readback if a host
/// sink wants it, its completion item.
void VulkanBackend::finish_item(Batch& b, Submission s, const std::shared_ptr<DeviceArray>& out,
                                std::function<void()> check) {
    const Region& r = *s.region;
    buffer_barrier(b.cmd, *out, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    Batch::Item item{std::move(s.done), &r, nullptr, {}, std::move(check), std::move(s.measured)};
    if (!s.wanted_on_host.empty() && s.wanted_on_host[0]) {
        auto rb = readback_heap_->allocate(out->bytes());
        VkBufferCopy region{out->offset(), rb->offset(), out->bytes()};
        if (out->bytes() >= kQueueCopyBytes) {
            if (!b.readback) b.readback = open_copy(Span::download);
            vkCmdCopyBuffer(b.readback->cmd, out->buffer(), rb->buffer(), 1, &region);
            b.readback->bytes += out->bytes();
        } else {
            const int q = b.begin_span(Span::download, &r);
            vkCmdCopyBuffer(b.cmd, out->buffer(), rb->buffer(), 1, &region);
            b.end_span(q);
        }
        item.readbacks.emplace_back(rb, s.outputs[0]);
    }
    b.items.push_back(std::move(item));
    {
        std::lock_guard slock(stats_mutex_);
        ++stats_.dispatches;
    }
    submit_if_due_locked();
}

}  // namespace tandem::detail::vk
