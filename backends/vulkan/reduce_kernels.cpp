#include "backends/vulkan/reduce_kernels.hpp"

namespace tandem::detail::vk {

namespace {

// Positions folded per step of the strided fold: 8 loads in flight per invocation (measured on the
// H100, 2^28 fp32, sum(A, 2) / sum(A .* B, 2) GPU ms with about 2^17 invocations: unroll 4 0.402 /
// 0.709, 8 0.362 / 0.706; with 2^20 invocations and the second pass, 4: 0.370 / 0.749).
constexpr int kStridedUnroll = 8;

const char* init_of(OpKind op) {
    switch (op) {
        case OpKind::Sum:
        case OpKind::Any: return "0.0LF";
        case OpKind::Prod:
        case OpKind::All: return "1.0LF";
        default: return "int64BitsToDouble(0x7FF8000000000000L)";  // max/min: NaN until a number
    }
}

const char* out_ref(DType t) { return t == DType::f64 ? "RefF64" : t == DType::f32 ? "RefF32" : "RefU8"; }

/// Writes `text` once per reduction, '#' standing for its number.
void each_reduction(std::ostream& s, std::size_t nr, const std::string& text) {
    for (std::size_t j = 0; j < nr; ++j) {
        std::string line = text;
        for (std::size_t at = line.find('#'); at != std::string::npos; at = line.find('#', at))
            line.replace(at, 1, std::to_string(j));
        s << line;
    }
}

/// A tree in shared memory over groups of `width` consecutive invocations (a power of two; a
/// GLSL expression), `lane` an invocation's place in its group: each group's values combine in
/// fixed pairs; leaves each group's result with its lane 0 in racc#/rpos# and opens
/// `if (<leader>) {` (the caller closes it). Every invocation reaches every barrier.
void write_tree_combine(std::ostream& s, const ReduceKernelParts& p, const std::string& width, const std::string& lane,
                        const std::string& leader) {
    const std::size_t nr = p.region->reductions.size();
    const std::string WG = std::to_string(p.workgroup_size);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    each("    sh_v[# * " + WG + " + t] = racc#;\n    sh_k[# * " + WG + " + t] = rpos#;\n");
    s << "    barrier();\n"
         "    for (uint w = " << width << " / 2u; w > 0u; w >>= 1u) {\n"
         "        if (" << lane << " < w) {\n";
    each("            { double x = sh_v[# * " + WG + " + t]; int64_t kx = sh_k[# * " + WG + " + t];\n"
         "              tdmr_combine#(x, kx, sh_v[# * " + WG + " + t + w], sh_k[# * " + WG + " + t + w]);\n"
         "              sh_v[# * " + WG + " + t] = x; sh_k[# * " + WG + " + t] = kx; }\n");
    s << "        }\n"
         "        barrier();\n"
         "    }\n"
         "    if (" << leader << ") {\n";
    each("        racc# = sh_v[# * " + WG + " + t]; rpos# = sh_k[# * " + WG + " + t];\n");
}

/// The workgroup's invocations combine racc#/rpos# in fixed pairs; leaves the result with the
/// leader and opens `if (leader) {` (the caller closes it).
void write_group_combine(std::ostream& s, const ReduceKernelParts& p) {
    const Region& r = *p.region;
    const std::size_t nr = r.reductions.size();
    const std::string WG = std::to_string(p.workgroup_size);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    if (p.subgroups) {
        // A butterfly of shuffles in each subgroup (every lane ends with the subgroup's value;
        // the pairs are fixed, so the bits are too), the subgroups' values through shared
        // memory, and the first subgroup folds them (in order per lane) and butterflies again.
        // Positions travel as doubles (exact below 2^53): 64-bit integer shuffles need a
        // feature double shuffles do not.
        auto butterfly = [&](const char* indent) {
            s << indent << "for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {\n";
            each(std::string(indent) + "    { double b = subgroupShuffleXor(racc#, off); "
                 "double kb = subgroupShuffleXor(double(rpos#), off);\n" + indent +
                 "      tdmr_combine#(racc#, rpos#, b, int64_t(kb)); }\n");
            s << indent << "}\n";
        };
        butterfly("    ");
        s << "    if (gl_SubgroupInvocationID == 0u) {\n";
        each("        sh_v[# * " + WG + " + gl_SubgroupID] = racc#;\n        sh_k[# * " + WG +
             " + gl_SubgroupID] = rpos#;\n");
        s << "    }\n"
             "    barrier();\n"
             "    if (gl_SubgroupID == 0u) {\n";
        for (std::size_t j = 0; j < nr; ++j)
            s << "        racc" << j << " = " << init_of(r.reductions[j].op) << "; rpos" << j << " = 0L;\n";
        s << "        for (uint g = gl_SubgroupInvocationID; g < gl_NumSubgroups; g += gl_SubgroupSize) {\n";
        each("            tdmr_combine#(racc#, rpos#, sh_v[# * " + WG + " + g], sh_k[# * " + WG + " + g]);\n");
        s << "        }\n";
        butterfly("        ");
        s << "    }\n"
             "    if (gl_SubgroupID == 0u && gl_SubgroupInvocationID == 0u) {\n";
    } else {
        write_tree_combine(s, p, std::to_string(p.workgroup_size) + "u", "t", "t == 0u");
    }
}

/// The fold over positions k = first, first + step, ... < kend: kUnroll at a time (their elements
/// computed first, so their loads overlap, then folded in order: the same bits as one at a
/// time), then the rest one by one. `index`: the element's linear index in terms of k.
void write_fold_loop(std::ostream& s, const ReduceKernelParts& p, const std::string& first, const std::string& step,
                     const std::string& index, int kUnroll) {
    const std::size_t nr = p.region->reductions.size();
    s << "    int64_t k = " << first << ";\n"
      << "    for (; k + " << kUnroll - 1 << "L * " << step << " < kend; k += " << kUnroll << "L * " << step << ") {\n";
    for (std::size_t j = 0; j < nr; ++j) s << "        double rx" << j << "[" << kUnroll << "];\n";
    for (int u = 0; u < kUnroll; ++u) {
        s << "        {\n        int64_t ku = k + " << u << "L * " << step << ";\n"
          << "        uint64_t i = " << std::string(index).replace(index.find("uint64_t(k)"), 11, "uint64_t(ku)") << ";\n"
          << p.element;
        for (std::size_t j = 0; j < nr; ++j) s << "        rx" << j << "[" << u << "] = double(" << p.value[j] << ");\n";
        s << "        }\n";
    }
    for (int u = 0; u < kUnroll; ++u)
        for (std::size_t j = 0; j < nr; ++j)
            s << "        tdmr_fold" << j << "(racc" << j << ", rpos" << j << ", rx" << j << "[" << u << "], k + " << u
              << "L * " << step << ");\n";
    s << "    }\n"
      << "    for (; k < kend; k += " << step << ") {\n"
      << "        uint64_t i = " << index << ";\n"
      << p.element;
    for (std::size_t j = 0; j < nr; ++j)
        s << "        tdmr_fold" << j << "(racc" << j << ", rpos" << j << ", double(" << p.value[j] << "), k);\n";
    s << "    }\n";
}

/// The strided fold over k = kbeg .. kend - 1 for output (ii, o): the element index kept as a running
/// sum (ik += r_inner per position) rather than recomputed with 64-bit products; kUnroll positions at a
/// time (their elements first, then folded in order), then the rest.
void write_strided_fold_loop(std::ostream& s, const ReduceKernelParts& p, int kUnroll) {
    const std::size_t nr = p.region->reductions.size();
    s << "    int64_t k = kbeg;\n"
         "    uint64_t ik = ii + r_inner * (uint64_t(kbeg) + r_len * o);\n"
      << "    for (; k + " << kUnroll - 1 << "L < kend; k += " << kUnroll << "L) {\n";
    for (std::size_t j = 0; j < nr; ++j) s << "        double rx" << j << "[" << kUnroll << "];\n";
    for (int u = 0; u < kUnroll; ++u) {
        s << "        {\n        uint64_t i = ik;\n" << p.element;
        for (std::size_t j = 0; j < nr; ++j) s << "        rx" << j << "[" << u << "] = double(" << p.value[j] << ");\n";
        s << "        }\n        ik += r_inner;\n";
    }
    for (int u = 0; u < kUnroll; ++u)
        for (std::size_t j = 0; j < nr; ++j)
            s << "        tdmr_fold" << j << "(racc" << j << ", rpos" << j << ", rx" << j << "[" << u << "], k + " << u << "L);\n";
    s << "    }\n"
      << "    for (; k < kend; ++k) {\n"
      << "        uint64_t i = ik;\n"
      << p.element;
    for (std::size_t j = 0; j < nr; ++j)
        s << "        tdmr_fold" << j << "(racc" << j << ", rpos" << j << ", double(" << p.value[j] << "), k);\n";
    s << "        ik += r_inner;\n"
         "    }\n";
}

}  // namespace

void write_reduce_helpers(std::ostream& s, const Region& r) {
    s << "layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefI64 { int64_t v; };\n";
    for (std::size_t j = 0; j < r.reductions.size(); ++j) {
        const OpKind op = r.reductions[j].op;
        const std::string J = std::to_string(j);
        // fold: element x at position k (positions rise within an invocation)
        s << "void tdmr_fold" << J << "(inout double a, inout int64_t ka, double x, int64_t k) {\n";
        switch (op) {
            case OpKind::Sum: s << "    precise double t = a + x; a = t;\n"; break;
            case OpKind::Prod: s << "    precise double t = a * x; a = t;\n"; break;
            case OpKind::Any: s << "    if (x != 0.0LF && !tdmk_isnan(x)) a = 1.0LF;\n"; break;
            case OpKind::All: s << "    if (x == 0.0LF) a = 0.0LF;\n"; break;
            default: {
                const char* cmp = (op == OpKind::MaxOf || op == OpKind::ArgMax) ? ">" : "<";
                s << "    if (!tdmk_isnan(x) && (tdmk_isnan(a) || x " << cmp << " a)) { a = x; ka = k; }\n";
            }
        }
        s << "}\n";
        // combine: b from any other positions; ties go to the lower position
        s << "void tdmr_combine" << J << "(inout double a, inout int64_t ka, double b, int64_t kb) {\n";
        switch (op) {
            case OpKind::Sum: s << "    precise double t = a + b; a = t;\n"; break;
            case OpKind::Prod: s << "    precise double t = a * b; a = t;\n"; break;
            case OpKind::Any: s << "    a = max(a, b);\n"; break;
            case OpKind::All: s << "    a = min(a, b);\n"; break;
            default: {
                const char* cmp = (op == OpKind::MaxOf || op == OpKind::ArgMax) ? ">" : "<";
                s << "    if (tdmk_isnan(b)) return;\n"
                     "    if (tdmk_isnan(a) || b "
                  << cmp << " a || (b == a && kb < ka)) { a = b; ka = kb; }\n";
            }
        }
        s << "}\n";
        const DType t = r.outputs[j].node->dtype;
        s << "void tdmr_store" << J << "(uint64_t dst, uint64_t q, double a, int64_t ka) {\n";
        if (op == OpKind::ArgMax || op == OpKind::ArgMin) s << "    a = double(ka + 1L);\n";
        if (t == DType::f64) s << "    RefF64(dst + q * 8ul).v = a;\n";
        else if (t == DType::f32) s << "    RefF32(dst + q * 4ul).v = tdm_f64_to_f32(a);\n";
        else s << "    " << out_ref(t) << "(dst + q).v = uint8_t(a != 0.0LF ? 1 : 0);\n";
        s << "}\n";
    }
}

std::uint32_t reduce_shared_bytes(const Region& region, std::uint32_t workgroup_size, bool /*contiguous*/) {
    return static_cast<std::uint32_t>(16 * region.reductions.size() * workgroup_size);
}

void write_reduce_main(std::ostream& s, const ReduceKernelParts& p) {
    const Region& r = *p.region;
    const std::size_t nr = r.reductions.size();
    const std::string WG = std::to_string(p.workgroup_size);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    s << "shared double sh_v[" << nr * p.workgroup_size << "];\n"
      << "shared int64_t sh_k[" << nr * p.workgroup_size << "];\n";
    s << "void main() {\n"
         "    uint64_t group = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);\n"
         "    uint t = gl_LocalInvocationID.x;\n"
      << p.pre << "    uint64_t outs = r_inner * r_outer;\n"
                  "    uint err = 0xFFFFFFFFu;\n";
    each("    precise double racc# = 0.0LF;\n    int64_t rpos# = 0L;\n");
    for (std::size_t j = 0; j < nr; ++j) s << "    racc" << j << " = " << init_of(r.reductions[j].op) << ";\n";
    // One part: the outputs; several: the partials of this part.
    auto store = [&] {
        s << "        if (r_parts == 1ul) {\n";
        each("            tdmr_store#(out#, q, racc#, rpos#);\n");
        s << p.tail_call;
        s << "        } else {\n";
        each("            { uint64_t at = r_partials + ((#ul * r_parts + part) * outs + q) * 16ul;\n"
             "              RefF64(at).v = racc#; RefI64(at + 8ul).v = rpos#; }\n");
        s << "        }\n";
    };
    if (p.contiguous) {
        // r_lanes invocations an output, workgroup size / r_lanes outputs a workgroup: the whole
        // workgroup (then it combines with subgroup butterflies where it can) or, for many short
        // runs, a shared-memory tree of their own. The fold is the same code either way (one copy
        // of the region's element code); every invocation reaches every barrier.
        s << "    uint lanes = uint(r_lanes), lane = t % lanes, slot = t / lanes;\n"
             "    uint64_t q = (group / r_parts) * uint64_t(" << WG << "u / lanes) + uint64_t(slot), part = group % r_parts;\n"
             "    bool live = q < outs;  // not: a slot of the grid's rounding\n"
             "    int64_t kbeg = int64_t(part * r_seg), kend = live ? min(kbeg + int64_t(r_seg), int64_t(r_len)) : kbeg;\n";
        write_fold_loop(s, p, "kbeg + int64_t(lane)", "int64_t(lanes)", "uint64_t(k) + r_len * q", 4);
        s << "    if (r_lanes == " << WG << "ul) {\n";
        write_group_combine(s, p);
        s << "    if (live) {\n";
        store();
        s << "    }\n"
             "    }\n"
             "    } else {\n";
        write_tree_combine(s, p, "lanes", "lane", "lane == 0u && live");
        store();
        s << "    }\n"
             "    }\n";
    } else {
        // A workgroup per (chunk of r_lanes outputs, part): row `row` of lane `lane` walks sub-part
        // `row` of the part for output q (consecutive invocations, consecutive elements), then row 0
        // folds the rows' values in order.
        s << "    uint lanes = uint(r_lanes), rows = " << WG << "u / lanes;\n"
             "    uint lane = t % lanes, row = t / lanes;\n"
             "    uint64_t chunks = (outs + uint64_t(lanes) - 1ul) / uint64_t(lanes);\n"
             "    uint64_t q = (group % chunks) * uint64_t(lanes) + uint64_t(lane), part = group / chunks;\n"
             "    if (part >= r_parts) return;  // a workgroup of the grid's rounding (the whole workgroup)\n"
             "    if (q < outs) {\n"
             "    uint64_t ii = q % r_inner, o = q / r_inner;\n"
             "    int64_t kbeg = int64_t((part * uint64_t(rows) + uint64_t(row)) * r_seg);\n"
             "    int64_t kend = min(kbeg + int64_t(r_seg), int64_t(r_len));\n";
        write_strided_fold_loop(s, p, kStridedUnroll);
        s << "    }\n";
        each("    sh_v[# * " + WG + " + t] = racc#;\n    sh_k[# * " + WG + " + t] = rpos#;\n");
        s << "    barrier();\n"
             "    if (row == 0u && q < outs) {\n"
             "        for (uint w = 1u; w < rows; ++w) {\n";
        each("            tdmr_combine#(racc#, rpos#, sh_v[# * " + WG + " + w * lanes + lane], sh_k[# * " + WG +
             " + w * lanes + lane]);\n");
        s << "        }\n";
        store();
        s << "    }\n";
    }
    s << "    if (err != 0xFFFFFFFFu) {\n"
         "        atomicOr(RefErr(pc.args).flag, 1u);\n"
         "        atomicMin(RefErr(pc.args).instr, err);\n"
         "    }\n"
         "}\n";
}

void write_reduce_combine_main(std::ostream& s, const ReduceKernelParts& p) {
    const Region& r = *p.region;
    const std::size_t nr = r.reductions.size();
    const std::string WG = std::to_string(p.workgroup_size);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    // Partials of reduction j, part p, output q at ((j * parts + p) * outs + q) * 16.
    s << "shared double sh_v[" << nr * p.workgroup_size << "];\n"
      << "shared int64_t sh_k[" << nr * p.workgroup_size << "];\n"
      << "void main() {\n"
         "    uint64_t group = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);\n"
         "    uint t = gl_LocalInvocationID.x;\n"
      << p.pre << "    uint64_t outs = r_inner * r_outer;\n";
    each("    precise double racc# = 0.0LF;\n    int64_t rpos# = 0L;\n");
    for (std::size_t j = 0; j < nr; ++j) s << "    racc" << j << " = " << init_of(r.reductions[j].op) << ";\n";
    // Few outputs (r_wide): a workgroup per output, its invocations folding parts t, t + WG, ...
    // in order, then the workgroup's fixed pairs. Many: an invocation per output, all its parts
    // in order (consecutive invocations read consecutive partials).
    s << "    if (r_wide != 0ul) {\n"
         "        uint64_t q = group;\n"
         "        for (uint64_t part = uint64_t(t); part < r_parts; part += "
      << WG << "ul) {\n";
    each("            { uint64_t at = r_partials + ((#ul * r_parts + part) * outs + q) * 16ul;\n"
         "              tdmr_combine#(racc#, rpos#, RefF64(at).v, RefI64(at + 8ul).v); }\n");
    s << "        }\n";
    write_group_combine(s, p);
    each("            tdmr_store#(out#, q, racc#, rpos#);\n");
    s << p.tail_call;
    s << "        }\n"
         "        return;\n"
         "    }\n"
         "    uint64_t q = group * "
      << WG << "ul + uint64_t(t);\n"
               "    if (q >= outs) return;\n"
               "    for (uint64_t part = 0ul; part < r_parts; ++part) {\n";
    each("        { uint64_t at = r_partials + ((#ul * r_parts + part) * outs + q) * 16ul;\n"
         "          tdmr_combine#(racc#, rpos#, RefF64(at).v, RefI64(at + 8ul).v); }\n");
    s << "    }\n";
    each("    tdmr_store#(out#, q, racc#, rpos#);\n");
    s << p.tail_call;
    s << "}\n";
}

}  // namespace tandem::detail::vk
