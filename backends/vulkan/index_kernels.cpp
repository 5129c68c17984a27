#include "backends/vulkan/index_kernels.hpp"

#include <string>

namespace tandem::detail::vk {

namespace {

const char* glsl_type(DType t) { return t == DType::f64 ? "double" : t == DType::f32 ? "float" : "uint8_t"; }
std::string size_of(DType t) { return std::to_string(dtype_size(t)); }

std::string header(DType value, DType subscript) {
    std::string g = "#version 450\n"
                    "#extension GL_EXT_buffer_reference : require\n"
                    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (value == DType::logical) g += "#extension GL_EXT_shader_8bit_storage : require\n";
    g += "layout(local_size_x = " + std::to_string(kIndexWorkgroup) + ") in;\n"
         "layout(buffer_reference, std430, buffer_reference_align = " + size_of(value) + ") buffer Val { " +
         glsl_type(value) + " v; };\n"
         "layout(buffer_reference, std430, buffer_reference_align = " + size_of(subscript) + ") buffer Sub { " +
         glsl_type(subscript) + " v; };\n"
         "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };\n"
         "layout(push_constant) uniform Push { uint64_t values; uint64_t subscripts; uint64_t dst; uint64_t fault; "
         "uint64_t claims; int64_t inner; int64_t count; int64_t outer; int64_t extent; uint64_t broadcast; uint64_t check_only; } pc;\n"
         // The 0-based position of subscript k, or -1 (recording the fault when `record`).
         "int64_t position(int64_t k, bool record) {\n"
         "    double v = double(Sub(pc.subscripts + uint64_t(k) * " + size_of(subscript) + "ul).v);\n"
         "    uint why = 2u;\n"
         "    if (!(v >= 1.0) || v != floor(v)) why = 0u;\n"
         "    else if (v > double(pc.extent)) why = 1u;\n"
         "    if (why == 2u) return int64_t(v) - 1L;\n"
         "    if (record) atomicMin(Word(pc.fault + uint64_t(why) * 4ul).v, uint(min(k, 4294967294L)));\n"
         "    return -1L;\n"
         "}\n"
         // (i, k, o) of selection element e: the linear case needs no division, and selections
         // below 2^32 elements divide in 32 bits (64-bit division is emulated, ~10x slower).
         "void split(int64_t e, out int64_t i, out int64_t k, out int64_t o) {\n"
         "    if (pc.inner == 1L && pc.outer == 1L) { i = 0L; k = e; o = 0L; return; }\n"
         "    if (pc.inner * pc.count * pc.outer <= 4294967295L) {\n"
         "        uint ue = uint(e), ui = uint(pc.inner), uc = uint(pc.count), q = ue / ui;\n"
         "        i = int64_t(ue - q * ui); k = int64_t(q % uc); o = int64_t(q / uc);\n"
         "        return;\n"
         "    }\n"
         "    int64_t q = e / pc.inner;\n"
         "    i = e - q * pc.inner; k = q % pc.count; o = q / pc.count;\n"
         "}\n"
         "int64_t element() {\n"
         "    return (int64_t(gl_WorkGroupID.y) * int64_t(gl_NumWorkGroups.x) + int64_t(gl_WorkGroupID.x)) * " +
         std::to_string(kIndexWorkgroup) + "L + int64_t(gl_LocalInvocationID.x);\n"
         "}\n";
    return g;
}

// The start of gather's and scatter's main(): the selection element (i, k, o) of this
// invocation, or only the subscript check when nothing is selected.
constexpr const char* kMainBegin =
    "void main() {\n"
    "    int64_t e = element();\n"
    "    if (pc.check_only != 0ul) {\n"
    "        if (e < pc.count) position(e, true);\n"
    "        return;\n"
    "    }\n"
    "    if (e >= pc.inner * pc.count * pc.outer) return;\n"
    "    int64_t i, k, o;\n"
    "    split(e, i, k, o);\n";

Kernel make(std::string glsl, std::string key, std::uint32_t push_bytes) {
    Kernel k;
    k.glsl = std::move(glsl);
    k.key = std::move(key);
    k.workgroup_size = kIndexWorkgroup;
    k.push_bytes = push_bytes;
    return k;
}

}  // namespace

Kernel gather_kernel(DType value, DType subscript) {
    const std::string s = size_of(value);
    std::string g = header(value, subscript);
    g += std::string(kMainBegin) +
         "    int64_t p = position(k, i == 0L && o == 0L);\n"
         "    if (p < 0L) return;\n"
         "    Val(pc.dst + uint64_t(e) * " + s + "ul).v = Val(pc.values + uint64_t(i + pc.inner * (p + pc.extent * o)) * " +
         s + "ul).v;\n"
         "}\n";
    return make(std::move(g), std::string("tandem-gather 2;") + glsl_type(value) + ";" + glsl_type(subscript),
                sizeof(IndexPush));
}

Kernel scatter_kernel(DType value, DType subscript, bool claim_pass) {
    const std::string s = size_of(value);
    std::string g = header(value, subscript);
    g += kMainBegin;
    if (claim_pass)
        g += "    int64_t p = position(k, i == 0L && o == 0L);\n"
             "    if (p < 0L) return;\n"
             "    int64_t dest = i + pc.inner * (p + pc.extent * o);\n"
             "    atomicMax(Word(pc.claims + uint64_t(dest) * 4ul).v, uint(e + 1L));\n"
             "}\n";
    else
        // Without claims (a scalar right side: every write of a destination writes the same
        // value, so their order cannot matter) this pass checks the subscripts itself.
        g += "    int64_t p = position(k, pc.claims == 0ul && i == 0L && o == 0L);\n"
             "    if (p < 0L) return;\n"
             "    int64_t dest = i + pc.inner * (p + pc.extent * o);\n"
             "    if (pc.claims != 0ul && Word(pc.claims + uint64_t(dest) * 4ul).v != uint(e + 1L)) return;\n"
             "    Val(pc.dst + uint64_t(dest) * " + s + "ul).v = Val(pc.values + uint64_t(pc.broadcast != 0ul ? 0L : e) * " + s +
             "ul).v;\n"
             "}\n";
    return make(std::move(g),
                std::string("tandem-scatter 3;") + (claim_pass ? "claim;" : "write;") + glsl_type(value) + ";" + glsl_type(subscript),
                sizeof(IndexPush));
}

Kernel find_kernel(int pass) {
    const std::string wg = std::to_string(kIndexWorkgroup);
    std::string g = "#version 450\n"
                    "#extension GL_EXT_buffer_reference : require\n"
                    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
                    "#extension GL_EXT_shader_8bit_storage : require\n"
                    "layout(local_size_x = " + wg + ") in;\n"
                    "layout(buffer_reference, std430, buffer_reference_align = 1) buffer Mask { uint8_t v; };\n"
                    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };\n"
                    "layout(buffer_reference, std430, buffer_reference_align = 8) buffer Pos { double v; };\n"
                    "layout(push_constant) uniform Push { uint64_t mask; uint64_t counts; uint64_t offsets; uint64_t dst; "
                    "uint n; uint blocks; uint count; uint pad; } pc;\n"
                    "shared uint part[" + wg + "];\n"
                    // Exclusive prefix sum of x over the workgroup (Hillis-Steele, in order); the
                    // total is left in part[last].
                    "uint exclusive_scan(uint x) {\n"
                    "    uint t = gl_LocalInvocationID.x;\n"
                    "    part[t] = x;\n"
                    "    barrier();\n"
                    "    for (uint d = 1u; d < " + wg + "u; d <<= 1u) {\n"
                    "        uint y = t >= d ? part[t - d] : 0u;\n"
                    "        barrier();\n"
                    "        part[t] += y;\n"
                    "        barrier();\n"
                    "    }\n"
                    "    return part[t] - x;\n"
                    "}\n"
                    "uint block_id() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }\n"
                    // The mask bits of this invocation's 16 elements (block-contiguous).
                    "uint bits_of(uint b) {\n"
                    "    uint first = b * " + std::to_string(kFindBlock) + "u + gl_LocalInvocationID.x * 16u, bits = 0u;\n"
                    "    for (uint j = 0u; j < 16u; ++j) {\n"
                    "        uint e = first + j;\n"
                    "        if (e < pc.n && uint(Mask(pc.mask + uint64_t(e)).v) != 0u) bits |= 1u << j;\n"
                    "    }\n"
                    "    return bits;\n"
                    "}\n";
    if (pass == 1)
        g += "void main() {\n"
             "    uint b = block_id();\n"
             "    if (b >= pc.blocks) return;\n"  // uniform per workgroup: barriers stay uniform
             "    exclusive_scan(bitCount(bits_of(b)));\n"
             "    if (gl_LocalInvocationID.x == " + std::to_string(kIndexWorkgroup - 1) + "u)\n"
             "        Word(pc.counts + uint64_t(b) * 4ul).v = part[" + std::to_string(kIndexWorkgroup - 1) + "];\n"
             "}\n";
    else if (pass == 2)
        g += "void main() {\n"
             "    uint t = gl_LocalInvocationID.x;\n"
             "    uint per = (pc.blocks + " + wg + "u - 1u) / " + wg + "u, first = t * per, sum = 0u;\n"
             "    for (uint j = 0u; j < per; ++j)\n"
             "        if (first + j < pc.blocks) sum += Word(pc.counts + uint64_t(first + j) * 4ul).v;\n"
             "    uint run = exclusive_scan(sum);\n"
             "    for (uint j = 0u; j < per; ++j)\n"
             "        if (first + j < pc.blocks) {\n"
             "            Word(pc.offsets + uint64_t(first + j) * 4ul).v = run;\n"
             "            run += Word(pc.counts + uint64_t(first + j) * 4ul).v;\n"
             "        }\n"
             "}\n";
    else
        g += "void main() {\n"
             "    uint b = block_id();\n"
             "    if (b >= pc.blocks) return;\n"
             "    uint bits = bits_of(b);\n"
             "    uint at = Word(pc.offsets + uint64_t(b) * 4ul).v + exclusive_scan(bitCount(bits));\n"
             "    uint first = b * " + std::to_string(kFindBlock) + "u + gl_LocalInvocationID.x * 16u;\n"
             "    for (uint j = 0u; j < 16u; ++j)\n"
             "        if ((bits & (1u << j)) != 0u && at < pc.count) {\n"
             "            Pos(pc.dst + uint64_t(at) * 8ul).v = double(first + j + 1u);\n"
             "            ++at;\n"
             "        }\n"
             "}\n";
    return make(std::move(g), "tandem-find 1;pass " + std::to_string(pass), sizeof(FindPush));
}

}  // namespace tandem::detail::vk
