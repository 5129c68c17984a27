#include "backends/vulkan/user_kernel.hpp"

#include <algorithm>
#include <cstring>
#include <regex>
#include <sstream>

#include "backends/vulkan/batch.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::vk {

namespace {

const char* glsl_type(DType t) { return t == DType::f64 ? "double" : t == DType::f32 ? "float" : "uint8_t"; }

/// The subscripts an accessor takes in GLSL: the buffer's dimensions, as MATLAB counts them (at
/// least two: a column vector takes (i, 0)), at most three (later ones fold into the third).
int accessor_dims(const Shape& s) { return std::clamp(s.ndims(), 2, 3); }

/// The body's lines, for quoting them in messages.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

}  // namespace

UserKernelGrid user_kernel_grid(const KernelCall& call) {
    UserKernelGrid g;
    const auto items = static_cast<std::uint64_t>(call.items());
    if (items == 0) return g;
    const int dims = std::max({call.range_dims, call.range[1] > 1 ? 2 : 1, call.range[2] > 1 ? 3 : 1});
    g.local = dims == 1 ? std::array<std::uint32_t, 3>{kUserKernelWorkgroup, 1, 1}
              : dims == 2 ? std::array<std::uint32_t, 3>{32, 8, 1}
                          : std::array<std::uint32_t, 3>{8, 8, 4};
    if (dims > 1) {
        g.last = static_cast<std::uint32_t>(dims - 1);
        for (std::uint32_t c : {4u, 2u})
            if (items / c >= kUserKernelMinInvocations &&
                static_cast<std::uint64_t>(call.range[g.last]) >= std::uint64_t{c} * g.local[g.last]) {
                g.per_invocation = c;
                break;
            }
    }
    bool fits = true;
    for (std::size_t d = 0; d < 3; ++d) {
        const std::uint64_t step = std::uint64_t{g.local[d]} * (d == g.last ? g.per_invocation : 1);
        const std::uint64_t n = (static_cast<std::uint64_t>(call.range[d]) + step - 1) / step;
        fits = fits && n <= 65535;
        g.groups[d] = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, 65535));
    }
    if (fits) return g;
    g.linear = true;
    g.local = {kUserKernelWorkgroup, 1, 1};
    g.per_invocation = 1;
    const auto [gx, gy] = grid_of((items + kUserKernelWorkgroup - 1) / kUserKernelWorkgroup);
    g.groups = {gx, gy, 1};
    return g;
}

Kernel user_kernel(const KernelCall& call) {
    const UserKernelGrid grid = user_kernel_grid(call);
    const auto n = call.accesses.size();
    bool bytes8 = false;
    for (const KernelAccess& a : call.accesses) bytes8 = bytes8 || a.dtype == DType::logical;
    std::ostringstream g;
    g << "#version 450\n"
         "#extension GL_EXT_buffer_reference : require\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (bytes8)
        g << "#extension GL_EXT_shader_8bit_storage : require\n";  // (loads, stores, conversions: no Int8 arithmetic)
    g << "layout(local_size_x = " << grid.local[0] << ", local_size_y = " << grid.local[1] << ", local_size_z = "
      << grid.local[2] << ") in;\n";
    for (std::size_t a = 0; a < n; ++a) {
        const KernelAccess& acc = call.accesses[a];
        g << "layout(buffer_reference, std430, buffer_reference_align = " << dtype_size(acc.dtype) << ") "
          << (acc.writes() ? "" : "readonly ") << "buffer tdu_ref" << a << " { " << glsl_type(acc.dtype) << " v[]; };\n";
    }
    // 8-byte members first, then 4-byte ones: std430 puts each at its own alignment, no padding.
    g << "layout(push_constant) uniform tdu_push_block {\n";
    for (std::size_t a = 0; a < n; ++a) g << "    uint64_t a" << a << ";\n";
    if (!call.scalars_f32)
        for (std::size_t k = 0; k < call.scalar_names.size(); ++k) g << "    double s" << k << ";\n";
    g << "    uint count; uint r0; uint r1; uint r2;\n";
    for (std::size_t a = 0; a < n; ++a) g << "    uint e" << a << "_0; uint e" << a << "_1;\n";
    if (call.scalars_f32)
        for (std::size_t k = 0; k < call.scalar_names.size(); ++k) g << "    float s" << k << ";\n";
    g << "} tdu_pc;\n";
    // A written accessor is an l-value (its element in the buffer); a read one is a function's
    // result, so that assigning to it does not compile.
    for (std::size_t a = 0; a < n; ++a) {
        const KernelAccess& acc = call.accesses[a];
        const std::string& name = call.accessor_names[a];
        const std::string id = std::to_string(a);
        const std::string e0 = "tdu_pc.e" + id + "_0", e1 = "tdu_pc.e" + id + "_1";
        std::string element;  // of a linear index k
        if (acc.writes()) {
            element = "tdu_a" + id + ".v[";
        } else {
            g << glsl_type(acc.dtype) << " tdu_get" << id << "(uint k) { return tdu_ref" << id << "(tdu_pc.a" << id << ").v[k]; }\n";
            element = "tdu_get" + id + "(";
        }
        const char* close = acc.writes() ? "]" : ")";
        if (accessor_dims(acc.shape) == 2)
            g << "#define " << name << "(i, j) " << element << "uint(i) + " << e0 << " * uint(j)" << close << "\n";
        else
            g << "#define " << name << "(i, j, k) " << element << "uint(i) + " << e0 << " * (uint(j) + " << e1 << " * uint(k))" << close << "\n";
        g << "#define " << name << "_at(k) " << element << "uint(k)" << close << "\n";
    }
    g << "void tdu_body(uvec3 item, uvec3 range) {\n";
    for (std::size_t a = 0; a < n; ++a)
        if (call.accesses[a].writes()) g << "    tdu_ref" << a << " tdu_a" << a << " = tdu_ref" << a << "(tdu_pc.a" << a << ");\n";
    for (std::size_t k = 0; k < call.scalar_names.size(); ++k)
        g << "    const " << (call.scalars_f32 ? "float " : "double ") << call.scalar_names[k] << " = tdu_pc.s" << k << ";\n";
    // The body's own line numbers in glslang's messages.
    g << "#line 1\n" << call.glsl << "\n}\n";
    g << "void main() {\n"
         "    uvec3 range = uvec3(tdu_pc.r0, tdu_pc.r1, tdu_pc.r2);\n";
    if (grid.linear)
        g << "    uint lin = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * "
          << kUserKernelWorkgroup << "u);\n"
             "    if (lin >= tdu_pc.count) return;\n"
             "    tdu_body(uvec3(lin % range.x, (lin / range.x) % range.y, lin / (range.x * range.y)), range);\n";
    else if (grid.per_invocation > 1)
        // (the body's own `return` leaves tdu_body: the next item still runs)
        g << "    uvec3 item = gl_GlobalInvocationID;\n"
             "    item[" << grid.last << "] *= " << grid.per_invocation << "u;\n"
             "    if (any(greaterThanEqual(item, range))) return;\n"
             "    for (uint t = 0u; t < " << grid.per_invocation << "u && item[" << grid.last << "] < range[" << grid.last
          << "]; ++t, ++item[" << grid.last << "])\n"
             "        tdu_body(item, range);\n";
    else
        g << "    if (any(greaterThanEqual(gl_GlobalInvocationID, range))) return;\n"
             "    tdu_body(gl_GlobalInvocationID, range);\n";
    g << "}\n";
    Kernel k;
    k.glsl = g.str();
    k.key = "tandem-user-kernel 1;" + call.name;
    k.workgroup_size = grid.local[0] * grid.local[1] * grid.local[2];
    k.push_bytes = static_cast<std::uint32_t>(8 * n + (call.scalars_f32 ? 4 : 8) * call.scalar_names.size() + 16 + 8 * n);
    return k;
}

std::vector<std::byte> user_kernel_push(const KernelCall& call, const std::vector<std::uint64_t>& addresses) {
    std::vector<std::byte> p;
    auto put = [&](const auto& v) {
        const std::size_t at = p.size();
        p.resize(at + sizeof v);
        std::memcpy(p.data() + at, &v, sizeof v);
    };
    for (std::uint64_t a : addresses) put(a);
    if (!call.scalars_f32)
        for (double s : call.scalars) put(s);
    put(static_cast<std::uint32_t>(call.items()));
    for (std::int64_t e : call.range) put(static_cast<std::uint32_t>(e));
    for (const KernelAccess& a : call.accesses) {
        const Shape& s = a.shape;
        put(static_cast<std::uint32_t>(s.ndims() > 0 ? s[0] : 1));
        put(static_cast<std::uint32_t>(s.ndims() > 1 ? s[1] : 1));
    }
    if (call.scalars_f32)
        for (double s : call.scalars) put(static_cast<float>(s));
    return p;
}

std::string user_kernel_compile_error(const KernelCall& call, const std::string& compiler_message) {
    const std::vector<std::string> body = lines_of(call.glsl);
    std::ostringstream m;
    m << call.label() << ": its GLSL body does not compile:\n";
    static const std::regex error(R"(ERROR: [0-9]+:([0-9]+): ([^\n]*))");
    bool any = false;
    for (std::sregex_iterator it(compiler_message.begin(), compiler_message.end(), error), end; it != end; ++it) {
        const auto line = static_cast<std::size_t>(std::strtoul((*it)[1].str().c_str(), nullptr, 10));
        const std::string what = (*it)[2].str();
        if (what.find("compilation terminated") != std::string::npos) continue;
        any = true;
        const char* hint = what.find("l-value") != std::string::npos ? " (an assignment through a read accessor?)" : "";
        if (line >= 1 && line <= body.size())
            m << "  line " << line << ": " << what << hint << "\n    " << line << " | " << body[line - 1] << '\n';
        else
            m << "  " << what << '\n';
    }
    if (!any) m << compiler_message;
    return m.str();
}

void VulkanBackend::submit_kernel(Submission s) {
    const Region& r = *s.region;
    const KernelCall& call = *r.call;
    if (!call.has_glsl()) throw DeviceError(call.label() + " has no GLSL body");
    // The shader's indices are 32-bit (a GLSL-only group this large was refused at submit).
    bool too_large = static_cast<std::uint64_t>(call.items()) >= (1ull << 32);
    for (const KernelAccess& a : call.accesses) too_large = too_large || static_cast<std::uint64_t>(a.shape.numel()) >= (1ull << 32);
    if (too_large) throw DeviceError(call.label() + ": a range or buffer of 2^32 elements or more (GLSL indices are 32-bit)");
    const std::shared_ptr<const UserKernel> kernel = user_kernel_of(r);
    if (kernel->kernel.push_bytes > context_->description().max_push_constants)
        throw KernelError(call.label() + ": its accessors and scalars need " + std::to_string(kernel->kernel.push_bytes) +
                    " bytes of push constants; this device has " +
                    std::to_string(context_->description().max_push_constants));
    const ComputePipeline* pipeline = kernel->pipeline.load(std::memory_order_acquire);
    if (!pipeline) {
        try {
            pipeline = &pipelines_->get(kernel->kernel);  // (hashes the whole text: once per structure)
        } catch (const ShaderCompileError& e) {
            throw KernelCompileError(user_kernel_compile_error(call, e.what()));
        }
        kernel->pipeline.store(pipeline, std::memory_order_release);
    }
    std::vector<std::shared_ptr<DeviceArray>> outs;
    for (std::size_t j = 0; j < r.outputs.size(); ++j)
        outs.push_back(device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[j]->bytes(), 1)));

    std::lock_guard lock(record_mutex_);
    if (open_ && open_->spans.size() + s.inputs.size() + 2 * outs.size() + 2 > kMaxSpansPerBatch) submit_locked();
    Batch& b = open_batch(s);
    std::vector<std::shared_ptr<DeviceArray>> ins;
    for (auto& v : s.inputs) {
        ins.push_back(device_copy(*v, b));
        b.keep.push_back(ins.back());
    }
    for (std::size_t j = 0; j < outs.size(); ++j)
        s.outputs[j]->set_device(ordinal(), std::make_shared<Copy>(context_, outs[j], b.signal, 0));
    // Each accessor's array: a written buffer's new version (read_write: a copy of the old one
    // first), or the version read.
    std::vector<std::uint64_t> addresses;
    std::vector<std::pair<const DeviceArray*, const DeviceArray*>> copies;
    for (const KernelAccess& acc : call.accesses) {
        if (!acc.writes()) {
            addresses.push_back(ins[static_cast<std::size_t>(acc.input)]->address());
            continue;
        }
        std::shared_ptr<DeviceArray> arr;
        if (const int j = r.kernel_output(static_cast<std::size_t>(acc.output)); j >= 0) {
            arr = outs[static_cast<std::size_t>(j)];
        } else {  // a written buffer the plan does not want
            arr = device_heap_->allocate(std::max<VkDeviceSize>(acc.shape.numel() * dtype_size(acc.dtype), 1));
            b.keep.push_back(arr);
        }
        if (acc.reads() && acc.shape.numel() > 0) copies.emplace_back(ins[static_cast<std::size_t>(acc.input)].get(), arr.get());
        addresses.push_back(arr->address());
    }
    if (!copies.empty()) {
        // The old versions may have just been written by a copy (an upload) or a shader.
        barrier(b.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
        for (auto [from, to] : copies) {
            VkBufferCopy region{from->offset(), to->offset(), std::min(from->bytes(), to->bytes())};
            vkCmdCopyBuffer(b.cmd, from->buffer(), to->buffer(), 1, &region);
        }
        barrier(b.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }
    const std::vector<std::byte> push = user_kernel_push(call, addresses);
    const auto count = static_cast<std::uint64_t>(call.items());
    if (count > 0) {
        const UserKernelGrid grid = user_kernel_grid(call);
        const int q = b.begin_span(Span::kernel, &r);
        vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
        vkCmdPushConstants(b.cmd, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<std::uint32_t>(push.size()),
                           push.data());
        vkCmdDispatch(b.cmd, grid.groups[0], grid.groups[1], grid.groups[2]);
        b.end_span(q);
        ++b.dispatches;
    }
    for (auto& o : outs)
        buffer_barrier(b.cmd, *o, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    finish_outputs(b, s, nullptr, outs);
}

std::shared_ptr<const UserKernel> VulkanBackend::user_kernel_of(const Region& r) const {
    // Kept in the region's memo: a loop's groups (fusion's cache shares it) form the text once.
    const bool kept = ordinal() < BackendMemo::kSlots;
    if (kept)
        if (auto known = r.memo.get(ordinal())) return std::static_pointer_cast<const UserKernel>(known);
    // Else by the call's structure: a loop's groups planned in batches of varying sizes miss
    // fusion's cache (and so the memo), and forming the text is most of a small group's cost.
    const KernelCall& call = *r.call;
    std::shared_ptr<const UserKernel> k;
    {
        std::lock_guard lock(user_kernels_mutex_);
        auto it = user_kernels_.find(call.structure);
        if (it != user_kernels_.end() && it->second.first == call.glsl) k = it->second.second;
    }
    if (!k) {
        k = std::make_shared<const UserKernel>(user_kernel(call));
        std::lock_guard lock(user_kernels_mutex_);
        if (user_kernels_.size() >= kKeptUserKernels) user_kernels_.clear();
        user_kernels_[call.structure] = {call.glsl, k};
    }
    if (kept) r.memo.set(ordinal(), k);
    return k;
}

}  // namespace tandem::detail::vk
