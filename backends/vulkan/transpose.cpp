#include "backends/vulkan/transpose.hpp"

#include <string>

namespace tandem::detail::vk {

Kernel transpose_kernel(DType dtype) {
    const char* t = dtype == DType::f64 ? "double" : dtype == DType::f32 ? "float" : "uint8_t";
    // Logical elements travel through shared memory as uint (8-bit shared storage is not needed).
    const char* st = dtype == DType::f64 ? "double" : dtype == DType::f32 ? "float" : "uint";
    const std::string size = dtype == DType::f64 ? "8" : dtype == DType::f32 ? "4" : "1";
    std::string glsl = "#version 450\n"
                       "#extension GL_EXT_buffer_reference : require\n"
                       "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (dtype == DType::logical) glsl += "#extension GL_EXT_shader_8bit_storage : require\n";
    glsl += "layout(local_size_x = 32, local_size_y = 8) in;\n"
            "layout(buffer_reference, std430, buffer_reference_align = " + size + ") buffer Ref { " + t + " v; };\n"
            "layout(push_constant) uniform Push { uint64_t src; uint64_t dst; uint rows; uint cols; } pc;\n"
            "shared " + st + " tile[32][33];\n"
            "void main() {\n"
            "    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;\n"
            "    uint i0 = gl_WorkGroupID.x * 32u, j0 = gl_WorkGroupID.y * 32u;\n"
            "    for (uint k = ty; k < 32u; k += 8u) {\n"
            "        uint i = i0 + tx, j = j0 + k;\n"
            "        if (i < pc.rows && j < pc.cols)\n"
            "            tile[k][tx] = " + std::string(st) + "(Ref(pc.src + (uint64_t(i) + uint64_t(pc.rows) * uint64_t(j)) * " + size + "ul).v);\n"
            "    }\n"
            "    barrier();\n"
            "    for (uint k = ty; k < 32u; k += 8u) {\n"
            "        uint j = j0 + tx, i = i0 + k;\n"
            "        if (i < pc.rows && j < pc.cols)\n"
            "            Ref(pc.dst + (uint64_t(j) + uint64_t(pc.cols) * uint64_t(i)) * " + size + "ul).v = " + t + "(tile[tx][k]);\n"
            "    }\n"
            "}\n";
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = std::string("tandem-transpose 1;") + t;
    k.workgroup_size = 256;
    k.push_bytes = kTransposePushBytes;
    return k;
}

}  // namespace tandem::detail::vk
