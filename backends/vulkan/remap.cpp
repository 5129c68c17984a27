#include "backends/vulkan/remap.hpp"

#include <string>

namespace tandem::detail::vk {

Kernel remap_kernel(DType dtype) {
    const char* t = dtype == DType::f64 ? "double" : dtype == DType::f32 ? "float" : "uint8_t";
    const std::string size = dtype == DType::f64 ? "8" : dtype == DType::f32 ? "4" : "1";
    std::string glsl = "#version 450\n"
                       "#extension GL_EXT_buffer_reference : require\n"
                       "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (dtype == DType::logical) glsl += "#extension GL_EXT_shader_8bit_storage : require\n";
    glsl += "layout(local_size_x = " + std::to_string(kRemapWorkgroup) + ") in;\n"
            "layout(buffer_reference, std430, buffer_reference_align = " + size + ") buffer Ref { " + t + " v; };\n"
            "layout(push_constant) uniform Push { uint64_t src; uint64_t dst; int64_t inner; int64_t out_len; "
            "int64_t outer; int64_t in_len; int64_t a; int64_t b; } pc;\n"
            "void main() {\n"
            "    int64_t e = (int64_t(gl_WorkGroupID.y) * int64_t(gl_NumWorkGroups.x) + int64_t(gl_WorkGroupID.x)) * " +
            std::to_string(kRemapWorkgroup) + "L + int64_t(gl_LocalInvocationID.x);\n"
            "    if (e >= pc.inner * pc.out_len * pc.outer) return;\n"
            "    int64_t i = e % pc.inner, r = e / pc.inner;\n"
            "    int64_t k = r % pc.out_len, o = r / pc.out_len;\n"
            "    int64_t s = (pc.a * k + pc.b) % pc.in_len;\n"
            "    if (s < 0L) s += pc.in_len;\n"
            "    int64_t from = i + pc.inner * (s + pc.in_len * o);\n"
            "    Ref(pc.dst + uint64_t(e) * " + size + "ul).v = Ref(pc.src + uint64_t(from) * " + size + "ul).v;\n"
            "}\n";
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = std::string("tandem-remap 1;") + t;
    k.workgroup_size = kRemapWorkgroup;
    k.push_bytes = kRemapPushBytes;
    return k;
}

}  // namespace tandem::detail::vk
