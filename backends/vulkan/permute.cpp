#include "backends/vulkan/permute.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/vulkan/batch.hpp"
#include "graph/permute_plan.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::vk {

Kernel permute_kernel(DType dtype, bool tiled) {
    const char* t = dtype == DType::f64 ? "double" : dtype == DType::f32 ? "float" : "uint8_t";
    const char* st = dtype == DType::f64 ? "double" : dtype == DType::f32 ? "float" : "uint";
    const std::string size = std::to_string(dtype_size(dtype));
    const std::string nd = std::to_string(kPermuteMaxDims), nb = std::to_string(kPermuteMaxDims - 2);
    std::string g = "#version 450\n"
                    "#extension GL_EXT_buffer_reference : require\n"
                    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (dtype == DType::logical) g += "#extension GL_EXT_shader_8bit_storage : require\n";
    g += "layout(buffer_reference, std430, buffer_reference_align = " + size + ") buffer Ref { " + t + " v; };\n";
    if (!tiled) {
        // Runs: dimension 0 (extent[0] elements) is contiguous in both. A workgroup row (y) is one
        // run, found once per row (the mixed-radix walk is uniform); its invocations copy 4
        // elements each, 256 apart, so loads and stores of a step are consecutive.
        g += "layout(local_size_x = 256) in;\n"
             "layout(push_constant) uniform Push { uint64_t src; uint64_t dst; uint dims; uint numel; uint extent[" + nd +
             "]; uint in_stride[" + nd + "]; } pc;\n"
             "void main() {\n"
             "    uint run = pc.extent[0], rows = pc.numel / run;\n"
             "    for (uint row = gl_WorkGroupID.y; row < rows; row += gl_NumWorkGroups.y) {\n"
             "        uint rest = row, from = 0u;\n"
             "        for (uint d = 1u; d < pc.dims; ++d) {\n"
             "            from += (rest % pc.extent[d]) * pc.in_stride[d];\n"
             "            rest /= pc.extent[d];\n"
             "        }\n"
             "        uint64_t src = pc.src + uint64_t(from) * " + size + "ul, dst = pc.dst + uint64_t(row) * uint64_t(run) * " + size + "ul;\n"
             "        for (uint i = gl_WorkGroupID.x * 1024u + gl_LocalInvocationID.x; i < run; i += gl_NumWorkGroups.x * 1024u)\n"
             "            for (uint q = 0u; q < 4u; ++q) {\n"
             "                uint at = i + q * 256u;\n"
             "                if (at < run) Ref(dst + uint64_t(at) * " + size + "ul).v = Ref(src + uint64_t(at) * " + size + "ul).v;\n"
             "            }\n"
             "    }\n"
             "}\n";
    } else {
        g += "layout(local_size_x = 32, local_size_y = 8) in;\n"
             "layout(push_constant) uniform Push { uint64_t src; uint64_t dst; uint na; uint nb; uint sa; uint ob; "
             "uint batch_dims; uint batch; uint batch_extent[" + nb + "]; uint batch_in[" + nb + "]; uint batch_out[" + nb +
             "]; } pc;\n"
             "shared " + std::string(st) + " tile[32][33];\n"
             "void main() {\n"
             "    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;\n"
             "    uint a0 = gl_WorkGroupID.x * 32u, b0 = gl_WorkGroupID.y * 32u;\n"
             "    for (uint q = gl_WorkGroupID.z; q < pc.batch; q += gl_NumWorkGroups.z) {\n"
             "        uint rest = q, in0 = 0u, out0 = 0u;\n"
             "        for (uint d = 0u; d < pc.batch_dims; ++d) {\n"
             "            uint i = rest % pc.batch_extent[d];\n"
             "            rest /= pc.batch_extent[d];\n"
             "            in0 += i * pc.batch_in[d];\n"
             "            out0 += i * pc.batch_out[d];\n"
             "        }\n"
             // reads along the input's contiguous dimension, writes along the output's
             "        for (uint k = ty; k < 32u; k += 8u) {\n"
             "            uint a = a0 + k, b = b0 + tx;\n"
             "            if (a < pc.na && b < pc.nb)\n"
             "                tile[k][tx] = " + st + "(Ref(pc.src + uint64_t(in0 + a * pc.sa + b) * " + size + "ul).v);\n"
             "        }\n"
             "        barrier();\n"
             "        for (uint k = ty; k < 32u; k += 8u) {\n"
             "            uint a = a0 + tx, b = b0 + k;\n"
             "            if (a < pc.na && b < pc.nb)\n"
             "                Ref(pc.dst + uint64_t(out0 + a + b * pc.ob) * " + size + "ul).v = " + t + "(tile[tx][k]);\n"
             "        }\n"
             "        barrier();\n"
             "    }\n"
             "}\n";
    }
    Kernel k;
    k.glsl = std::move(g);
    k.key = std::string("tandem-permute 2;") + (tiled ? "tiled;" : "runs;") + t;
    k.workgroup_size = 256;
    k.push_bytes = tiled ? sizeof(PermuteTilePush) : sizeof(PermuteRunsPush);
    return k;
}

void VulkanBackend::submit_permute(Submission s) {
    const Region& r = *s.region;
    const PermutePlan p = plan_permute(r.inputs[0]->shape, r.permutation);
    const auto numel = static_cast<std::uint64_t>(r.shape.numel());
    // 32-bit offsets and at most kPermuteMaxDims merged dimensions; beyond that the CPU runs it.
    if (numel >= 0xFFFFFFFFull) throw DeviceError("vulkan: a permute of 2^32 elements or more");
    if (p.extent.size() > static_cast<std::size_t>(kPermuteMaxDims))
        throw DeviceError("vulkan: a permute of more than " + std::to_string(kPermuteMaxDims) + " non-mergeable dimensions");
    const bool tiled = !p.runs();
    const ComputePipeline& pipeline = pipelines_->get(permute_kernel(r.outputs[0].node->dtype, tiled));  // before recording
    auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    if (!tiled) {
        // x: 1024-element pieces of a run; y: the runs, walked in steps past 65535.
        const std::uint64_t run = p.extent.empty() ? 1 : static_cast<std::uint64_t>(p.extent[0]);
        const auto gx = static_cast<std::uint32_t>(numel == 0 ? 0 : std::min<std::uint64_t>((run + 1023) / 1024, 65535));
        const auto gy = static_cast<std::uint32_t>(std::min<std::uint64_t>(numel / std::max<std::uint64_t>(run, 1), 65535));
        return record_one_kernel(std::move(s), pipeline, gx, gy, [&](std::uint64_t src, std::uint64_t dst, std::uint32_t) {
            PermuteRunsPush push{};
            push.src = src;
            push.dst = dst;
            push.dims = u32(static_cast<std::int64_t>(p.extent.size()));
            push.extent[0] = 1;  // a single element (nothing merged): one run of 1
            push.numel = u32(static_cast<std::int64_t>(numel));
            for (std::size_t d = 0; d < p.extent.size(); ++d) {
                push.extent[d] = u32(p.extent[d]);
                push.in_stride[d] = u32(p.in_stride[d]);
            }
            return bytes_of(push);
        });
    }
    const auto c = static_cast<std::size_t>(p.contiguous);
    PermuteTilePush push{};
    push.na = u32(p.extent[0]);
    push.nb = u32(p.extent[c]);
    push.sa = u32(p.in_stride[0]);
    push.ob = u32(p.out_stride[c]);
    push.batch = 1;
    for (std::size_t d = 1; d < p.extent.size(); ++d) {
        if (d == c) continue;
        push.batch_extent[push.batch_dims] = u32(p.extent[d]);
        push.batch_in[push.batch_dims] = u32(p.in_stride[d]);
        push.batch_out[push.batch_dims] = u32(p.out_stride[d]);
        ++push.batch_dims;
        push.batch *= u32(p.extent[d]);
    }
    const std::uint64_t gx = (push.na + 31u) / 32u, gy = (push.nb + 31u) / 32u;
    if (gx > 65535 || gy > 65535) throw DeviceError("vulkan: a permute plane of " + std::to_string(push.na) + " x " +
                                                    std::to_string(push.nb) + " needs more workgroups than one dispatch has");
    // z: the batch, walked in steps of the grid past 65535.
    record_one_kernel(std::move(s), pipeline, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy),
                      [&](std::uint64_t src, std::uint64_t dst, std::uint32_t) {
                          push.src = src;
                          push.dst = dst;
                          return bytes_of(push);
                      },
                      std::min<std::uint32_t>(push.batch, 65535));
}

}  // namespace tandem::detail::vk
