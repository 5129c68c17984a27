#include "backends/vulkan/reduce_kernels.hpp"

#include "backends/vulkan/arguments.hpp"

#include <algorithm>

namespace tandem::detail::vk {

namespace {

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

/// The halving tree over the `lanes` lanes of each slot (graph/reduce_order.hpp): lane l takes
/// lane l + w for w = lanes / 2, ..., 1, leaving the slot's value in lane 0's racc#/rpos#. In
/// shared memory, lane L of the slot at sh[t + (L - lane) * sstride]; with subgroup shuffles
/// (`shuffles`: the slot's lanes consecutive) where a subgroup holds a slot: a butterfly, whose
/// pairs are the tree's (each lane ends with the same bits: the combines are commutative).
/// Positions travel as doubles (exact below 2^53): 64-bit integer shuffles need a feature double
/// shuffles do not. Every invocation reaches every barrier (the branch is uniform).
void write_lane_tree(std::ostream& s, const ReduceKernelParts& p, bool shuffles) {
    const std::size_t nr = p.region->reductions.size();
    const std::string WG = std::to_string(p.workgroup_size);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    if (shuffles) {
        s << "    if (gl_SubgroupSize >= lanes) {\n"
             "    for (uint off = lanes / 2u; off > 0u; off >>= 1u) {\n";
        each("        { double b = subgroupShuffleXor(racc#, off); double kb = subgroupShuffleXor(double(rpos#), off);\n"
             "          tdmr_combine#(racc#, rpos#, b, int64_t(kb)); }\n");
        s << "    }\n"
             "    } else {\n";
    }
    each("    sh_v[# * " + WG + " + t] = racc#;\n    sh_k[# * " + WG + " + t] = rpos#;\n");
    s << "    barrier();\n"
         "    for (uint w = lanes / 2u; w > 0u; w >>= 1u) {\n"
         "        if (lane < w) {\n";
    each("            { double x = sh_v[# * " + WG + " + t]; int64_t kx = sh_k[# * " + WG + " + t];\n"
         "              tdmr_combine#(x, kx, sh_v[# * " + WG + " + t + w * sstride], sh_k[# * " + WG + " + t + w * sstride]);\n"
         "              sh_v[# * " + WG + " + t] = x; sh_k[# * " + WG + " + t] = kx; }\n");
    s << "        }\n"
         "        barrier();\n"
         "    }\n";
    each("    racc# = sh_v[# * " + WG + " + t]; rpos# = sh_k[# * " + WG + " + t];\n");
    if (shuffles) s << "    }\n";
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

/// The strided first pass up to the lanes' tree (blocked lanes: lane L = positions 32L ..
/// 32L + 31 of the chunk): consecutive slots are consecutive outputs (a subgroup's loads one
/// coalesced run); a slot is G = lanes / M invocations, `slots` apart, of M = per_invocation
/// (at most kStridedLanes) lanes each: invocation g holds lanes g, g + G, ..., g + (M - 1)G in
/// registers, folds them, and takes the tree's steps w = (M / 2)G, ..., G in registers; the
/// rest runs in shared memory over the G invocations (lanes, lane := G, g: write_reduce_main).
/// Chunk c of output q (ii, o), live.
void write_strided_fold(std::ostream& s, const ReduceKernelParts& p) {
    const std::size_t nr = p.region->reductions.size();
    const std::string C = std::to_string(kReduceChunk);
    const std::string L = std::to_string(kReduceLanes);
    const int M = static_cast<int>(p.per_invocation);
    // Elements of one step of the fast loop: M lanes x U positions (their loads overlap).
    const int U = std::max(1, static_cast<int>(kStridedLanes) / M);
    auto name = [](const char* base, std::size_t j, int u) {
        return std::string(base) + std::to_string(j) + (u == 0 ? "" : "_" + std::to_string(u));
    };
    s << "    int64_t kbeg = int64_t(c) * " << C << "L;\n"
         "    int64_t kend = live ? min(kbeg + " << C << "L, int64_t(r_len)) : kbeg;\n"
         "    int64_t lb = kbeg + " << L << "L * int64_t(g), ls = " << L << "L * int64_t(G);  // lane g's first position; lanes apart\n";
    for (std::size_t j = 0; j < nr; ++j)
        for (int u = 1; u < M; ++u)
            s << "    precise double " << name("racc", j, u) << " = racc" << j << ";\n    int64_t " << name("rpos", j, u)
              << " = 0L;\n";
    auto fold = [&](std::size_t j, int u, const std::string& x, const std::string& k) {
        s << "        tdmr_fold" << j << "(" << name("racc", j, u) << ", " << name("rpos", j, u) << ", " << x << ", " << k
          << ");\n";
    };
    auto at = [](int u, int v) {
        return "lb + " + std::to_string(u) + "L * ls + sp + " + std::to_string(v) + "L";
    };
    // Whole steps (positions sp .. sp + U - 1 of all M lanes in range): the elements first, so
    // their loads overlap, then folded, each lane in order.
    s << "    int64_t sp = 0L;\n"
         "    for (; sp + " << U - 1 << "L < " << L << "L && " << at(M - 1, U - 1) << " < kend; sp += " << U << "L) {\n";
    for (std::size_t j = 0; j < nr; ++j) s << "        double rx" << j << "[" << M * U << "];\n";
    for (int u = 0; u < M; ++u)
        for (int v = 0; v < U; ++v) {
            s << "        {\n        uint64_t i = ii + r_inner * (uint64_t(" << at(u, v) << ") + r_len * o);\n" << p.element;
            for (std::size_t j = 0; j < nr; ++j)
                s << "        rx" << j << "[" << u * U + v << "] = double(" << p.value[j] << ");\n";
            s << "        }\n";
        }
    for (int u = 0; u < M; ++u)
        for (int v = 0; v < U; ++v)
            for (std::size_t j = 0; j < nr; ++j)
                fold(j, u, "rx" + std::to_string(j) + "[" + std::to_string(u * U + v) + "]", at(u, v));
    s << "    }\n";
    // The rest: one position at a time (the element code once), into its lane's accumulator; a
    // lane past the end means the later ones are too.
    s << "    for (; sp < " << L << "L; ++sp) {\n"
         "    for (uint u = 0u; u < M; ++u) {\n"
         "        int64_t k = lb + int64_t(u) * ls + sp;\n"
         "        if (k >= kend) break;\n"
         "        uint64_t i = ii + r_inner * (uint64_t(k) + r_len * o);\n"
      << p.element;
    for (std::size_t j = 0; j < nr; ++j) s << "        double x" << j << " = double(" << p.value[j] << ");\n";
    for (int u = 0; u < M; ++u) {
        if (M > 1) s << "        " << (u ? "else " : "") << "if (u == " << u << "u) {\n";
        for (std::size_t j = 0; j < nr; ++j) fold(j, u, "x" + std::to_string(j), "k");
        if (M > 1) s << "        }\n";
    }
    s << "    }\n"
         "    }\n";
    // The tree's steps within an invocation: w = h * G, lanes u and u + h.
    for (int h = M / 2; h >= 1; h /= 2)
        for (int u = 0; u < h; ++u)
            for (std::size_t j = 0; j < nr; ++j)
                s << "    tdmr_combine" << j << "(" << name("racc", j, u) << ", " << name("rpos", j, u) << ", "
                  << name("racc", j, u + h) << ", " << name("rpos", j, u + h) << ");\n";
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

std::uint32_t reduce_shared_bytes(const Region& region, std::uint32_t workgroup_size) {
    // The lanes' tree, and (whole outputs) a partial per slot.
    return static_cast<std::uint32_t>(16 * region.reductions.size() * (workgroup_size + workgroup_size / kReduceLanes));
}

std::uint32_t reduce_workgroup(const Region& region, std::uint32_t configured, std::uint32_t max_shared_bytes) {
    std::uint32_t wg = configured;
    while (wg > kReduceLanes && reduce_shared_bytes(region, wg) > max_shared_bytes) wg /= 2;
    return wg;
}

namespace {

/// Declarations common to both passes: the shared arrays, the workgroup index, the region's
/// setup and the accumulators at their identities.
void write_main_head(std::ostream& s, const ReduceKernelParts& p) {
    const std::size_t nr = p.region->reductions.size();
    s << "shared double sh_v[" << nr * p.workgroup_size << "];\n"
      << "shared int64_t sh_k[" << nr * p.workgroup_size << "];\n";
    if (p.whole_outputs)
        s << "shared double sh_pv[" << nr * p.workgroup_size / kReduceLanes << "];\n"
          << "shared int64_t sh_pk[" << nr * p.workgroup_size / kReduceLanes << "];\n";
    s << "void main() {\n"
         "    uint64_t group = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);\n"
         "    uint t = gl_LocalInvocationID.x;\n"
      << p.pre << "    uint64_t outs = r_inner * r_outer;\n";
    for (std::size_t j = 0; j < nr; ++j)
        s << "    precise double racc" << j << " = " << init_of(p.region->reductions[j].op) << ";\n    int64_t rpos" << j
          << " = 0L;\n";
}

/// Lane 0 of a live slot: the outputs (the last level: `last`, a GLSL condition) with the
/// region's tail, else the partial of chunk c of output q at `next_at` (a GLSL address of
/// reduction 0's first record; `next` partials an output).
void write_store(std::ostream& s, const ReduceKernelParts& p, const std::string& last, const std::string& next_at,
                 const std::string& next) {
    const std::size_t nr = p.region->reductions.size();
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    s << "    if (lane == 0u && live) {\n"
         "        if (" << last << ") {\n";
    each("            tdmr_store#(out#, q, racc#, rpos#);\n");
    s << p.tail_call;
    s << "        } else {\n";
    each("            { uint64_t at = " + next_at + " + ((#ul * outs + q) * " + next + " + c) * 16ul;\n"
         "              RefF64(at).v = racc#; RefI64(at + 8ul).v = rpos#; }\n");
    s << "        }\n"
         "    }\n";
}

}  // namespace

namespace {

/// Chunk c of output q (live) along the first dimension: the slot's lanes fold it, then the tree.
void write_contiguous_chunk(std::ostream& s, const ReduceKernelParts& p) {
    const std::string C = std::to_string(kReduceChunk);
    s << "    int64_t kbeg = int64_t(c) * " << C << "L;\n"
         "    int64_t kend = live ? min(kbeg + " << C << "L, int64_t(r_len)) : kbeg;\n";
    write_fold_loop(s, p, "kbeg + int64_t(lane)", "int64_t(lanes)", "uint64_t(k) + r_len * q", kContiguousUnroll);
    write_lane_tree(s, p, p.subgroups);
}

/// The contiguous first pass when a workgroup holds whole outputs (ReducePlan::whole_outputs):
/// S = bit_ceil(chunks) consecutive slots an output, its chunks folded as usual, then the
/// chunks' partials through shared memory into the output's first slot, lane l taking partial l
/// (the second level of the canonical order: one chunk of partials, interleaved), and the
/// lanes' tree again. Every invocation reaches every barrier.
void write_whole_outputs(std::ostream& s, const ReduceKernelParts& p) {
    const std::size_t nr = p.region->reductions.size();
    const std::string P = std::to_string(p.workgroup_size / kReduceLanes);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    s << "    uint lane = t % lanes, slot = t / lanes, sstride = 1u;\n"
         "    uint S = 1u;\n"
         "    while (uint64_t(S) < r_chunks) S <<= 1u;\n"
         "    uint64_t q = group * uint64_t(slots / S) + uint64_t(slot / S), c = uint64_t(slot % S);\n"
         "    bool live = q < outs && c < r_chunks;\n";
    write_contiguous_chunk(s, p);
    s << "    if (lane == 0u) {\n";
    each("        sh_pv[# * " + P + " + slot] = racc#; sh_pk[# * " + P + " + slot] = rpos#;\n");
    s << "    }\n"
         "    barrier();\n";
    for (std::size_t j = 0; j < nr; ++j)
        s << "    racc" << j << " = " << init_of(p.region->reductions[j].op) << "; rpos" << j << " = 0L;\n";
    s << "    if (uint64_t(lane) < r_chunks) {\n"
         "        uint at = slot - slot % S + lane;\n";
    each("        tdmr_combine#(racc#, rpos#, sh_pv[# * " + P + " + at], sh_pk[# * " + P + " + at]);\n");
    s << "    }\n";
    write_lane_tree(s, p, p.subgroups);
    s << "    if (lane == 0u && c == 0ul && q < outs) {\n";
    each("        tdmr_store#(out#, q, racc#, rpos#);\n");
    s << p.tail_call
      << "    }\n"
         "    if (err != 0xFFFFFFFFu) {\n"
         "        atomicOr(RefErr(pc.args).flag, 1u);\n"
         "        atomicMin(RefErr(pc.args).instr, err);\n"
         "    }\n"
         "}\n";
}

}  // namespace

void write_reduce_main(std::ostream& s, const ReduceKernelParts& p) {
    const std::string WG = std::to_string(p.workgroup_size);
    write_main_head(s, p);
    s << "    uint err = 0xFFFFFFFFu;\n"
         "    uint lanes = uint(r_lanes), slots = " << WG << "u / lanes;\n";
    if (p.contiguous && p.whole_outputs) {
        write_whole_outputs(s, p);
        return;
    }
    if (p.contiguous) {
        // A slot's lanes consecutive invocations reading consecutive elements; a workgroup's
        // slots consecutive chunks.
        s << "    uint lane = t % lanes, slot = t / lanes, sstride = 1u;\n"
             "    uint64_t item = group * uint64_t(slots) + uint64_t(slot);\n"
             "    bool live = item < outs * r_chunks;  // not: a slot of the grid's rounding\n"
             "    uint64_t q = item / r_chunks, c = item % r_chunks;\n";
        write_contiguous_chunk(s, p);
    } else {
        // Consecutive slots are consecutive outputs (coalesced); a slot's G invocations `slots`
        // apart.
        s << "    const uint M = " << p.per_invocation << "u;\n"
             "    uint G = lanes / M;\n"
             "    slots = " << WG << "u / G;\n"
             "    uint g = t / slots, slot = t % slots, sstride = slots;\n"
             "    uint64_t item = group * uint64_t(slots) + uint64_t(slot);\n"
             "    bool live = item < outs * r_chunks;\n"
             "    uint64_t q = item % outs, c = item / outs;\n"
             "    uint64_t ii = q % r_inner, o = q / r_inner;\n";
        write_strided_fold(s, p);
        s << "    lanes = G;\n"
             "    uint lane = g;\n";
        write_lane_tree(s, p, false);
    }
    write_store(s, p, "r_chunks == 1ul", "r_partials", "r_chunks");
    s << "    if (err != 0xFFFFFFFFu) {\n"
         "        atomicOr(RefErr(pc.args).flag, 1u);\n"
         "        atomicMin(RefErr(pc.args).instr, err);\n"
         "    }\n"
         "}\n";
}

void write_reduce_combine_main(std::ostream& s, const ReduceKernelParts& p) {
    const std::size_t nr = p.region->reductions.size();
    const std::string WG = std::to_string(p.workgroup_size), C = std::to_string(kReduceChunk);
    auto each = [&](const std::string& text) { each_reduction(s, nr, text); };
    write_main_head(s, p);
    // Level `pc.count` (from 1): n partials an output at `base`, folded into `next` an output
    // (placed after this level), or into the outputs when one is left.
    s << "    uint64_t n = r_chunks, base = r_partials;\n"
         "    for (uint64_t l = 1ul; l < pc.count; ++l) {\n"
         "        base += " << 16 * nr << "ul * outs * n;\n"
         "        n = (n + " << C << "ul - 1ul) / " << C << "ul;\n"
         "    }\n"
         "    uint64_t next = (n + " << C << "ul - 1ul) / " << C << "ul;\n"
         "    uint lanes = 1u;\n"
         "    while (uint64_t(lanes) < n && lanes < " << kReduceLanes << "u) lanes <<= 1u;\n"
         "    uint slots = " << WG << "u / lanes, lane = t % lanes, slot = t / lanes, sstride = 1u;\n"
         "    uint64_t item = group * uint64_t(slots) + uint64_t(slot);\n"
         "    bool live = item < outs * next;\n"
         "    uint64_t q = item / next, c = item % next;\n"
         "    int64_t kbeg = int64_t(c) * " << C << "L, kend = live ? min(kbeg + " << C << "L, int64_t(n)) : kbeg;\n"
         "    for (int64_t k = kbeg + int64_t(lane); k < kend; k += int64_t(lanes)) {\n";
    each("        { uint64_t at = base + ((#ul * outs + q) * n + uint64_t(k)) * 16ul;\n"
         "          tdmr_combine#(racc#, rpos#, RefF64(at).v, RefI64(at + 8ul).v); }\n");
    s << "    }\n";
    write_lane_tree(s, p, p.subgroups);
    write_store(s, p, "next == 1ul", "(base + " + std::to_string(16 * nr) + "ul * outs * n)", "next");
    s << "}\n";
}

}  // namespace tandem::detail::vk
