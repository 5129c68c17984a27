#include "backends/vulkan/scan.hpp"

#include <string>

#include "tandem_shaders.hpp"

namespace tandem::detail::vk {

Kernel scan_kernel(OpKind op, DType dtype) {
    const bool f32 = dtype == DType::f32;
    const char* t = f32 ? "float" : "double";
    std::string step;
    switch (op) {
        case OpKind::CumSum: step = "precise double s = a + v; a = s;"; break;
        case OpKind::CumProd: step = "precise double s = a * v; a = s;"; break;
        case OpKind::CumMax: step = "if (!tdms_isnan(v) && (tdms_isnan(a) || v > a)) a = v;"; break;
        default: step = "if (!tdms_isnan(v) && (tdms_isnan(a) || v < a)) a = v;"; break;
    }
    const char* init = op == OpKind::CumSum ? "0.0LF" : op == OpKind::CumProd ? "1.0LF" : "int64BitsToDouble(0x7FF8000000000000L)";
    std::string glsl = "#version 450\n"
                       "#extension GL_EXT_buffer_reference : require\n"
                       "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
                       "#extension GL_EXT_control_flow_attributes : require\n"
                       "layout(local_size_x = " + std::to_string(kScanWorkgroup) + ") in;\n";
    glsl += tandem_shader_convert_f32;
    glsl += "\nlayout(buffer_reference, std430, buffer_reference_align = " + std::string(f32 ? "4" : "8") +
            ") buffer Ref { " + t + " v; };\n"
            "layout(buffer_reference, std430, buffer_reference_align = 8) buffer Carry { double v; };\n"
            "layout(push_constant) uniform Push { uint64_t src; uint64_t dst; uint64_t carry; uint64_t inner; uint64_t len;\n"
            "                                     uint64_t outer; uint64_t first; uint64_t last; } pc;\n"
            "bool tdms_isnan(double x) { return (doubleBitsToInt64(x) & 0x7FFFFFFFFFFFFFFFL) > 0x7FF0000000000000L; }\n"
            "void main() {\n"
            "    uint64_t line = (uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x)) * " +
            std::to_string(kScanWorkgroup) + "ul + uint64_t(gl_LocalInvocationID.x);\n"
            "    if (line >= pc.inner * pc.outer) return;\n"
            "    uint64_t i = line % pc.inner, o = line / pc.inner;\n"
            "    precise double a = pc.first == 0ul ? " + init + " : Carry(pc.carry + line * 8ul).v;\n"
            "    for (uint64_t k = pc.first; k < pc.last; ++k) {\n"
            "        uint64_t at = (i + pc.inner * (k + pc.len * o)) * " + std::string(f32 ? "4ul" : "8ul") + ";\n" +
            (f32 ? "        double v = tdm_f32_to_f64(Ref(pc.src + at).v);\n" : "        double v = Ref(pc.src + at).v;\n") +
            "        " + step + "\n" +
            (f32 ? "        Ref(pc.dst + at).v = tdm_f64_to_f32(a);\n" : "        Ref(pc.dst + at).v = a;\n") +
            "    }\n"
            "    if (pc.last < pc.len) Carry(pc.carry + line * 8ul).v = a;\n"
            "}\n";
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = std::string("tandem-scan 2;") + std::string(op_info(op).name) + ";" + t;
    k.workgroup_size = kScanWorkgroup;
    k.push_bytes = kScanPushBytes;
    return k;
}

}  // namespace tandem::detail::vk
