#include "backends/cpu/reduce.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/program.hpp"
#include "backends/cpu/reduce_kernels.hpp"
#include "graph/reduce_order.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {

namespace {

/// A partial result: the value, and for argmax/argmin the position k of the extremum.
struct Acc {
    double v;
    std::int64_t k;
};

Acc initial(OpKind op) {
    switch (op) {
        case OpKind::Sum:
        case OpKind::Any: return {0.0, 0};
        case OpKind::Prod:
        case OpKind::All: return {1.0, 0};
        default: return {std::numeric_limits<double>::quiet_NaN(), 0};  // max/min: NaN until a number
    }
}

bool is_max(OpKind op) { return op == OpKind::MaxOf || op == OpKind::ArgMax; }

/// a then b (b covers later positions): ties keep a, the first occurrence; NaN is omitted.
void combine(OpKind op, Acc& a, const Acc& b) {
    switch (op) {
        case OpKind::Sum: a.v += b.v; break;
        case OpKind::Prod: a.v *= b.v; break;
        case OpKind::Any: a.v = (a.v != 0.0 || b.v != 0.0) ? 1.0 : 0.0; break;
        case OpKind::All: a.v = (a.v != 0.0 && b.v != 0.0) ? 1.0 : 0.0; break;
        default:
            if (!std::isnan(b.v) && (std::isnan(a.v) || (is_max(op) ? b.v > a.v : b.v < a.v))) a = b;
            break;
    }
}

RedKind kind_of(OpKind op) {
    switch (op) {
        case OpKind::Sum: return RedKind::Sum;
        case OpKind::Prod: return RedKind::Prod;
        case OpKind::Any: return RedKind::Any;
        case OpKind::All: return RedKind::All;
        default: return is_max(op) ? RedKind::Max : RedKind::Min;
    }
}

/// The block of a reduced value as doubles: the data itself for f64, else converted into `buf`.
const double* as_doubles(const Program::SinkView& s, std::size_t n, double* buf) {
    if (s.scalar) {
        double v = s.type == ElemType::f64   ? *static_cast<const double*>(s.data)
                   : s.type == ElemType::f32 ? static_cast<double>(*static_cast<const float*>(s.data))
                                             : static_cast<double>(*static_cast<const std::uint8_t*>(s.data));
        std::fill_n(buf, n, v);
        return buf;
    }
    switch (s.type) {
        case ElemType::f64: return static_cast<const double*>(s.data);
        case ElemType::f32: {
            auto* f = static_cast<const float*>(s.data);
            for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<double>(f[i]);
            return buf;
        }
        case ElemType::u8: {
            auto* u = static_cast<const std::uint8_t*>(s.data);
            for (std::size_t i = 0; i < n; ++i) buf[i] = u[i];
            return buf;
        }
    }
    return buf;
}

bool in_lanes(OpKind op) { return op == OpKind::Sum || op == OpKind::Prod; }

/// Folds the n elements of a block (positions k0, k0 + 1, ...) of an order-free reduction (any,
/// all, max, min) into one partial: as if in order (the first extremum).
Acc fold_run(const ReduceKernels& rk, OpKind op, const Program::SinkView& s, std::size_t n, std::int64_t k0, double* buf) {
    const RedKind kind = kind_of(op);
    const double* x = as_doubles(s, n, buf);
    switch (kind) {
        case RedKind::Any: return {rk.any_run(x, n) ? 1.0 : 0.0, 0};
        case RedKind::All: return {rk.all_run(x, n) ? 1.0 : 0.0, 0};
        default: {
            Acc a{0.0, 0};
            rk.ext_run(kind == RedKind::Max, x, n, &a.v, &a.k);
            if (std::isnan(a.v)) return initial(op);  // no number: NaN at position 0
            a.k += k0;
            return a;
        }
    }
}

/// Folds the n elements of a block (lane of the first: lane0) into a sum's or product's 32
/// lanes: double and float values as they are (prefetching pf bytes ahead), others converted
/// into `buf` first.
void fold_lanes(const ReduceKernels& rk, OpKind op, const Program::SinkView& s, std::size_t n, std::size_t lane0,
                double* lanes, double* buf, std::size_t pf) {
    auto* fn = op == OpKind::Prod ? rk.lanes_prod : rk.lanes_sum;
    if (!s.scalar && s.type == ElemType::f64) return fn[0](lanes, s.data, n, lane0, pf / sizeof(double));
    if (!s.scalar && s.type == ElemType::f32) return fn[1](lanes, s.data, n, lane0, pf / sizeof(float));
    fn[0](lanes, as_doubles(s, n, buf), n, lane0, 0);
}

/// The halving tree (graph/reduce_order.hpp) over the nl lanes' slices of a chunk (slice l at
/// a + l * ls, n values; the lanes from nl on hold the identity, which changes nothing): slice 0
/// ends with the results.
void lane_slices_tree(double* a, std::size_t ls, std::size_t nl, std::size_t n, bool prod) {
    for (std::size_t w = kReduceLanes / 2; w > 0; w /= 2)
        for (std::size_t l = 0; l < w && l + w < nl; ++l) {
            double* x = a + l * ls;
            const double* y = a + (l + w) * ls;
            if (prod)
                for (std::size_t i = 0; i < n; ++i) x[i] = x[i] * y[i];
            else
                for (std::size_t i = 0; i < n; ++i) x[i] = x[i] + y[i];
        }
}

/// The same over one chunk's 32 lanes: its partial.
double lane_tree(double* lane, bool prod) {
    lane_slices_tree(lane, 1, kReduceLanes, 1, prod);
    return lane[0];
}

/// The strided fold of rows into a sum's or product's slices: rows of `type` (double or float
/// as they are, else converted row by row into `buf`), row r (position pos0 + r of its chunk)
/// into the slice of its blocked lane.
void fold_slices(const ReduceKernels& rk, OpKind op, const Program::SinkView& s, double* acc, std::size_t ss,
                 std::size_t stride, std::size_t rows, std::size_t n, std::size_t pos0, double* buf) {
    auto* fn = op == OpKind::Prod ? rk.rows_lanes_prod : rk.rows_lanes_sum;
    if (!s.scalar && s.type == ElemType::f64) return fn[0](acc, ss, s.data, stride, rows, n, pos0);
    if (!s.scalar && s.type == ElemType::f32) return fn[1](acc, ss, s.data, stride, rows, n, pos0);
    for (std::size_t r = 0; r < rows; ++r) {
        Program::SinkView row = s;
        if (!s.scalar) row.data = static_cast<const std::uint8_t*>(s.data) + r * stride;  // u8: a byte an element
        fn[0](acc, ss, as_doubles(row, n, buf), 0, 1, n, pos0 + r);
    }
}

/// Folds each of n outputs' P partials (partial c of output i at v[c * stride + i]) by the
/// canonical order's later levels (interleaved lanes), in place: v[i] ends with the results.
/// `acc`: 32 * n doubles. Plain loops: the partials are few.
void fold_levels(bool prod, double* v, std::size_t stride, std::size_t P, std::size_t n, double* acc) {
    const auto C = static_cast<std::size_t>(kReduceChunk);
    while (P > 1) {
        const std::size_t next = (P + C - 1) / C;
        for (std::size_t c = 0; c < next; ++c) {
            std::fill_n(acc, 32 * n, prod ? 1.0 : 0.0);
            for (std::size_t r = c * C; r < std::min(P, (c + 1) * C); ++r) {
                double* a = acc + (r % 32) * n;
                const double* x = v + r * stride;
                if (prod)
                    for (std::size_t i = 0; i < n; ++i) a[i] = a[i] * x[i];
                else
                    for (std::size_t i = 0; i < n; ++i) a[i] = a[i] + x[i];
            }
            lane_slices_tree(acc, n, kReduceLanes, n, prod);
            std::copy_n(acc, n, v + c * stride);  // row c: every row it covers is read already
        }
        P = next;
    }
}

/// Folds rows r < rows (row r: `n` elements at x + r * stride, position k0 + r) of an
/// order-free reduction into (v, pos) in order of r; x holds doubles.
void fold_rows(const ReduceKernels& rk, RedKind kind, double* v, std::int64_t* pos, const double* x, std::size_t stride,
               std::size_t rows, std::size_t n, std::int64_t k0) {
    switch (kind) {
        case RedKind::Any: rk.rows_any(v, x, stride, rows, n); break;
        case RedKind::All: rk.rows_all(v, x, stride, rows, n); break;
        default: rk.rows_ext(kind == RedKind::Max, v, pos, x, stride, rows, n, k0); break;
    }
}

/// The same from a view (doubles as they are, other types converted row by row into `buf`).
void fold_view_rows(const ReduceKernels& rk, RedKind kind, const Program::SinkView& s, double* v, std::int64_t* pos,
                    std::size_t stride, std::size_t rows, std::size_t n, std::int64_t k0, double* buf) {
    if (!s.scalar && s.type == ElemType::f64)
        return fold_rows(rk, kind, v, pos, static_cast<const double*>(s.data), stride, rows, n, k0);
    const std::size_t esize = s.type == ElemType::f32 ? 4 : 1;
    for (std::size_t r = 0; r < rows; ++r) {
        Program::SinkView row = s;
        if (!s.scalar) row.data = static_cast<const std::uint8_t*>(s.data) + r * stride * esize;
        fold_rows(rk, kind, v, pos, as_doubles(row, n, buf), 0, 1, n, k0 + static_cast<std::int64_t>(r));
    }
}

/// Thread-local scratch: the program's registers and one block of doubles per reduction.
struct Scratch {
    std::vector<std::byte, std::allocator<std::byte>> regs;
    std::vector<double> conv;
    std::vector<double> lanes;  ///< sums' and products' lanes (32 a reduction, or 32 slices)
};
Scratch& scratch_for(std::size_t reg_bytes, std::size_t conv_doubles, std::size_t lane_doubles = 0) {
    thread_local Scratch s;
    if (s.regs.size() < reg_bytes + 64) s.regs.resize(reg_bytes + 64);
    if (s.conv.size() < conv_doubles) s.conv.resize(conv_doubles);
    if (s.lanes.size() < lane_doubles) s.lanes.resize(lane_doubles);
    return s;
}
std::byte* aligned(std::vector<std::byte>& v) {
    auto p = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + ((64 - p % 64) % 64);
}

/// A NaN result is written as the one quiet NaN: which NaN an operation with two NaN operands
/// returns depends on the order of its operands, which the compiler may swap (and does,
/// differently for each instruction set); the results are then the same bits on every ISA.
inline double canonical(double v) { return v != v ? std::numeric_limits<double>::quiet_NaN() : v; }

void write_output(const Node& node, OpKind op, Storage& out, std::int64_t index, const Acc& a) {
    double v = canonical(a.v);
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) v = static_cast<double>(a.k + 1);
    switch (node.dtype) {
        case DType::f64: static_cast<double*>(out.data())[index] = v; break;
        case DType::f32: static_cast<float*>(out.data())[index] = static_cast<float>(v); break;
        case DType::logical: static_cast<std::uint8_t*>(out.data())[index] = v != 0.0 ? 1 : 0; break;
    }
}

/// write_output for n consecutive outputs from index0: values v, positions k (arg ops).
void write_outputs(const Node& node, OpKind op, Storage& out, std::int64_t index0, const double* v,
                   const std::int64_t* k, std::size_t n) {
    const auto at = static_cast<std::size_t>(index0);
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) {
        for (std::size_t i = 0; i < n; ++i) write_output(node, op, out, index0 + static_cast<std::int64_t>(i), Acc{0.0, k[i]});
        return;
    }
    switch (node.dtype) {
        case DType::f64: {
            double* o = static_cast<double*>(out.data()) + at;
            for (std::size_t i = 0; i < n; ++i) o[i] = canonical(v[i]);
            break;
        }
        case DType::f32: {
            float* o = static_cast<float*>(out.data()) + at;
            for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<float>(canonical(v[i]));
            break;
        }
        case DType::logical: {
            std::uint8_t* o = static_cast<std::uint8_t*>(out.data()) + at;
            for (std::size_t i = 0; i < n; ++i) o[i] = v[i] != 0.0 ? 1 : 0;
            break;
        }
    }
}

template <class F>
void for_range(std::size_t count, bool parallel, F&& f) {
    if (count == 0) return;
#if defined(TANDEM_TSAN)
    parallel = false;  // see CpuBackend::execute: Debian's oneTBB is not instrumented
#endif
    if (!parallel || count == 1) return f(std::size_t{0}, count);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) { f(r.begin(), r.end()); });
}

/// Contiguous data read from memory is prefetched this many bytes ahead: the hardware prefetchers
/// alone leave one core's stream well short of its share of the copy bandwidth (measured: 4096
/// doubles ahead best of 0 / 2048 / 4096 / 8192; it reaches into the next chunk, which the same
/// thread usually takes next).
constexpr std::size_t kPrefetchBytes = 32768;
/// Rows of a strided reduction computed by the program (long rows) folded in one pass, each
/// computed into a scratch of its own.
constexpr std::size_t kFusedRows = 4;
/// Outputs of a strided task read straight from memory: at most kDirectPiece (the rows' long
/// contiguous runs keep the prefetchers going), at least kMinPiece where more tasks are wanted.
/// Tasks: about kTasks, where the shape allows.
constexpr std::size_t kDirectPiece = 8192, kMinPiece = 256, kTasks = 64;

std::size_t elem_bytes(ElemType t) { return t == ElemType::f64 ? 8 : t == ElemType::f32 ? 4 : 1; }

/// The view `off` elements further.
Program::SinkView at_offset(Program::SinkView v, std::size_t off) {
    if (!v.scalar) v.data = static_cast<const std::uint8_t*>(v.data) + off * elem_bytes(v.type);
    return v;
}

}  // namespace

const ReduceKernels& reduce_kernels_for(const char* isa) {
#if TANDEM_HAVE_KERNELS_AVX512
    if (std::strcmp(isa, "avx512") == 0)
        if (const ReduceKernels* t = reduce_kernels_avx512()) return *t;
#endif
#if TANDEM_HAVE_KERNELS_AVX2
    if (std::strcmp(isa, "avx2") == 0)
        if (const ReduceKernels* t = reduce_kernels_avx2()) return *t;
#endif
    (void)isa;
    return *reduce_kernels_baseline();
}

void run_reduce(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs,
                const KernelTable& kernels, std::int64_t block_elements, bool parallel) {
    const auto [inner, len, outer] = region.reduce_extents();
    const std::size_t nred = region.reductions.size();
    if (len == 0 || region.shape.numel() == 0) {
        // Nothing to reduce: the identities (sum 0, prod 1, any false, all true); max and min
        // of an empty dimension are empty.
        for (std::size_t j = 0; j < nred; ++j)
            for (std::int64_t o = 0; o < region.outputs[j].node->shape.numel(); ++o)
                write_output(*region.outputs[j].node, region.reductions[j].op, *outputs[j], o,
                             initial(region.reductions[j].op));
        return;
    }
    // Small reductions run on this thread, as small elementwise regions do: waking the arena's
    // workers costs more than the work (0.2 ms on a 32-core host, measured finishing a split
    // region's few partials).
    if (region.shape.numel() <= 2 * block_elements) parallel = false;
    const ReduceKernels& rk = reduce_kernels_for(kernels.isa);
    Program program(region, inputs, kernels, block_elements, Program::Sinks{});
    const auto B = static_cast<std::size_t>(block_elements);
    const std::size_t reg_bytes = program.scratch_bytes();
    // Which reduced values are windows straight into an input (read from memory by the folds):
    // neither a register of the program nor a scalar.
    std::vector<bool> in_memory(nred);
    {
        Scratch& s = scratch_for(reg_bytes, B);
        const std::byte* regs = aligned(s.regs);
        for (std::size_t j = 0; j < nred; ++j) {
            const Program::SinkView v = program.sink(j, 0, regs);
            const auto* p = static_cast<const std::byte*>(v.data);
            in_memory[j] = !v.scalar && !(p >= regs && p < regs + reg_bytes);
        }
    }
    bool need_pos = false;
    for (const auto& red : region.reductions) need_pos |= kind_of(red.op) == RedKind::Max || kind_of(red.op) == RedKind::Min;

    // The canonical order (graph/reduce_order.hpp): each output's positions in chunks of C.
    // Contiguous: a task folds whole chunks (interleaved lanes, the tree) into partials.
    // Strided: a task folds whole lanes (blocked: 32 consecutive rows) into partials, the last
    // phase takes each chunk's tree. Then each output's chunk partials are folded by the later
    // levels (sums, products) or combined in order (the order-free kinds). Partial of lane l
    // (strided; contiguous: L = 1, l = 0) of chunk c of output (i, o), reduction j:
    // (((o * P + c) * L + l) * nred + j) * I + i.
    const auto C = static_cast<std::size_t>(kReduceChunk);
    const auto P = static_cast<std::size_t>(reduce_chunks(len));
    const auto I = static_cast<std::size_t>(inner);
    const auto O = static_cast<std::size_t>(outer);
    const std::size_t L = inner == 1 ? 1 : static_cast<std::size_t>(kReduceLanes);
    const std::size_t slice = nred * I;
    auto pv = std::make_unique_for_overwrite<double[]>(O * P * L * slice);
    std::unique_ptr<std::int64_t[]> pk;
    if (need_pos) pk = std::make_unique_for_overwrite<std::int64_t[]>(O * P * L * slice);
    // Lanes with positions in chunk c.
    auto lanes_in = [&](std::size_t c) {
        return (std::min<std::size_t>(C, static_cast<std::size_t>(len) - c * C) + 31) / 32;
    };

    if (inner == 1) {
        // Contiguous along the reduced dimension: a task takes a run of whole chunks of one
        // output (about a block or more), the program's blocks folded in pieces that end where
        // chunks do.
        const std::size_t cpt = std::max<std::size_t>(1, B / C);
        const std::size_t tpo = (P + cpt - 1) / cpt;
        for_range(O * tpo, parallel, [&](std::size_t first, std::size_t last) {
            Scratch& s = scratch_for(reg_bytes, B, 32 * nred);
            std::byte* regs = aligned(s.regs);
            double* lanes = s.lanes.data();
            std::vector<Acc> acc(nred);
            auto reset = [&] {
                for (std::size_t j = 0; j < nred; ++j) {
                    const OpKind op = region.reductions[j].op;
                    if (in_lanes(op)) std::fill_n(lanes + 32 * j, 32, initial(op).v);
                    else acc[j] = initial(op);
                }
            };
            for (std::size_t t = first; t < last; ++t) {
                const std::size_t o = t / tpo, c0 = (t % tpo) * cpt, c1 = std::min(P, c0 + cpt);
                const auto kend = std::min<std::int64_t>(len, static_cast<std::int64_t>(c1 * C));
                reset();
                for (auto k = static_cast<std::int64_t>(c0 * C); k < kend;) {
                    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(B), kend - k));
                    const std::int64_t start = k + len * static_cast<std::int64_t>(o);
                    program.run_block(start, n, regs);
                    for (std::size_t off = 0; off < n;) {
                        const auto pos = static_cast<std::size_t>(k) + off;
                        const std::size_t chunk_end = (pos / C + 1) * C;
                        const std::size_t m = std::min(n - off, chunk_end - pos);
                        for (std::size_t j = 0; j < nred; ++j) {
                            const OpKind op = region.reductions[j].op;
                            const Program::SinkView v = at_offset(program.sink(j, start, regs), off);
                            if (in_lanes(op))
                                fold_lanes(rk, op, v, m, pos % 32, lanes + 32 * j, s.conv.data(), in_memory[j] ? kPrefetchBytes : 0);
                            else
                                combine(op, acc[j], fold_run(rk, op, v, m, static_cast<std::int64_t>(pos), s.conv.data()));
                        }
                        if (pos + m == chunk_end || pos + m == static_cast<std::size_t>(len)) {
                            const std::size_t base = (o * P + pos / C) * nred;
                            for (std::size_t j = 0; j < nred; ++j) {
                                const OpKind op = region.reductions[j].op;
                                pv[base + j] = in_lanes(op) ? lane_tree(lanes + 32 * j, op == OpKind::Prod) : acc[j].v;
                                if (need_pos) pk[base + j] = in_lanes(op) ? 0 : acc[j].k;
                            }
                            reset();
                        }
                        off += m;
                    }
                    k += static_cast<std::int64_t>(n);
                }
            }
        });
    } else {
        // Strided: each position k of the reduced dimension is a run of `inner` outputs,
        // contiguous in memory; consecutive k are consecutive runs, and a lane is 32 of them. A
        // task takes a group of lanes of one chunk for a piece of the run, read row after row:
        // straight from the inputs when the program computes nothing, from blocks of whole rows
        // when rows are short, else kFusedRows rows at a time, each computed into a scratch of
        // its own (S bytes apart: the scratch rounded up to lines, plus a few lines so that the
        // rows do not alias in the caches). The split (pieces, lanes a task) only shares out the
        // work: the bits do not depend on it.
        const std::size_t S = (reg_bytes + 63) / 64 * 64 + 256;
        bool direct = program.steps() == 0;
        for (std::size_t j = 0; j < nred; ++j) direct &= static_cast<bool>(in_memory[j]);
        const bool short_rows = !direct && I * kFusedRows <= B;
        std::size_t IP = short_rows ? I : std::min(I, direct ? kDirectPiece : B);
        // Lanes a task: groups of LB of the first chunk's lanes (the most any chunk has), so that
        // no task but the last chunk's is empty (empty tasks unbalance the threads' shares);
        // then shorter pieces of outputs, down to kMinPiece, until there are kTasks tasks.
        const std::size_t L0 = lanes_in(0);
        std::size_t LB = 32;
        while (LB > 1 && O * P * ((L0 + LB - 1) / LB) * ((I + IP - 1) / IP) < kTasks) LB /= 2;
        const std::size_t groups = (L0 + LB - 1) / LB;
        while (!short_rows && IP > kMinPiece && O * P * groups * ((I + IP - 1) / IP) < kTasks)
            IP = std::max(kMinPiece, (IP / 2 + 7) / 8 * 8);
        const std::size_t pieces = (I + IP - 1) / IP;
        for_range(O * P * groups * pieces, parallel, [&](std::size_t first, std::size_t last) {
            Scratch& s = scratch_for(kFusedRows * S, std::max(B, IP));  // conv: a row of a piece
            std::byte* regs = aligned(s.regs);
            for (std::size_t t = first; t < last; ++t) {
                const std::size_t piece = t % pieces, grp = (t / pieces) % groups, c = (t / (pieces * groups)) % P,
                                  o = t / (pieces * groups * P);
                const std::size_t l0 = grp * LB, l1 = std::min(l0 + LB, lanes_in(c));
                if (l0 >= l1) continue;  // past the last chunk's lanes
                const std::size_t i0 = piece * IP, n = std::min(IP, I - i0);
                // Lane l's partials of reduction j.
                auto at = [&](std::size_t l, std::size_t j) { return (((o * P + c) * L + l) * nred + j) * I + i0; };
                for (std::size_t l = l0; l < l1; ++l)
                    for (std::size_t j = 0; j < nred; ++j) {
                        std::fill_n(&pv[at(l, j)], n, initial(region.reductions[j].op).v);
                        if (need_pos) std::fill_n(&pk[at(l, j)], n, std::int64_t{0});
                    }
                // Folds `rows` rows from position k (k0: the chunk's first): row r of reduction
                // j at its view's data + r * stride elements, into the lanes' partials.
                auto fold = [&](std::size_t j, const Program::SinkView& x, std::size_t stride, std::size_t rows, std::int64_t k) {
                    const OpKind op = region.reductions[j].op;
                    const auto pos = static_cast<std::size_t>(k) - c * C;
                    if (in_lanes(op)) {
                        // lane l's partials slice * L ... apart: the blocked lanes' slices
                        fold_slices(rk, op, x, &pv[at(0, j)], nred * I, stride, rows, n, pos, s.conv.data());
                        return;
                    }
                    for (std::size_t r = 0; r < rows;) {
                        const std::size_t p = pos + r, run = std::min(rows - r, 32 - p % 32);
                        Program::SinkView xr = at_offset(x, x.scalar ? 0 : r * stride);
                        fold_view_rows(rk, kind_of(op), xr, &pv[at(p / 32, j)], need_pos ? &pk[at(p / 32, j)] : nullptr, stride,
                                       run, n, k + static_cast<std::int64_t>(r), s.conv.data());
                        r += run;
                    }
                };
                const auto kbeg = static_cast<std::int64_t>(c * C + l0 * 32);
                const std::int64_t kend = std::min<std::int64_t>(len, static_cast<std::int64_t>(c * C + l1 * 32));
                const auto lo = static_cast<std::int64_t>(o);
                if (direct || short_rows) {
                    const std::size_t R = direct ? C : B / I;
                    for (std::int64_t k = kbeg; k < kend; k += static_cast<std::int64_t>(R)) {
                        const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(R), kend - k));
                        const std::int64_t start = static_cast<std::int64_t>(i0) + inner * (k + len * lo);
                        if (!direct) program.run_block(start, rows * I, regs);
                        for (std::size_t j = 0; j < nred; ++j) fold(j, program.sink(j, start, regs), I, rows, k);
                    }
                } else {
                    for (std::int64_t k = kbeg; k < kend; k += static_cast<std::int64_t>(kFusedRows)) {
                        const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(kFusedRows), kend - k));
                        const std::int64_t start = static_cast<std::int64_t>(i0) + inner * (k + len * lo);
                        for (std::size_t r = 0; r < rows; ++r)
                            program.run_block(start + inner * static_cast<std::int64_t>(r), n, regs + r * S);
                        for (std::size_t j = 0; j < nred; ++j) {
                            // Row r of the value: in its scratch, or in the input (a row further).
                            const Program::SinkView x = program.sink(j, start, regs);
                            fold(j, x, in_memory[j] ? I : S / elem_bytes(x.type), rows, k);
                        }
                    }
                }
            }
        });
    }

    // Each output: each chunk's lanes by the tree (strided) or combined in order, then the
    // chunks folded by the later levels or combined in order, in pieces of the inner run, then
    // written out.
    constexpr std::size_t kPiece = 1024;
    const std::size_t fp = (I + kPiece - 1) / kPiece;
    const std::size_t lane_stride = slice, chunk_stride = L * slice;
    for_range(O * fp, parallel, [&](std::size_t first, std::size_t last) {
        Scratch& s = scratch_for(0, 0, 32 * kPiece);
        for (std::size_t w = first; w < last; ++w) {
            const std::size_t o = w / fp, i0 = (w % fp) * kPiece, n = std::min(kPiece, I - i0);
            for (std::size_t j = 0; j < nred; ++j) {
                const OpKind op = region.reductions[j].op;
                const bool prod = op == OpKind::Prod;
                const std::size_t at0 = o * P * chunk_stride + j * I + i0;
                auto combine_into = [&](std::size_t a, std::size_t b) {
                    rk.combine[static_cast<int>(kind_of(op))](&pv[a], need_pos ? &pk[a] : nullptr, &pv[b],
                                                              need_pos ? &pk[b] : nullptr, n);
                };
                if (L > 1)
                    for (std::size_t c = 0; c < P; ++c) {
                        const std::size_t a0 = at0 + c * chunk_stride, nl = lanes_in(c);
                        if (in_lanes(op))
                            lane_slices_tree(&pv[a0], lane_stride, nl, n, prod);
                        else
                            for (std::size_t l = 1; l < nl; ++l) combine_into(a0, a0 + l * lane_stride);
                    }
                if (in_lanes(op))
                    fold_levels(prod, &pv[at0], chunk_stride, P, n, s.lanes.data());
                else
                    for (std::size_t c = 1; c < P; ++c) combine_into(at0, at0 + c * chunk_stride);
                write_outputs(*region.outputs[j].node, op, *outputs[j], static_cast<std::int64_t>(i0 + I * o), &pv[at0],
                              need_pos ? &pk[at0] : nullptr, n);
            }
        }
    });
}

namespace {
template <class T>
void scan_lines(OpKind op, const T* x, T* y, std::int64_t inner, std::int64_t len, std::int64_t outer,
                std::int64_t i0, std::int64_t i1, std::int64_t o) {
    // Lines i0..i1 of outer index o: k in order, the lines side by side (contiguous in memory
    // when inner > 1), the running values in double.
    const std::size_t w = static_cast<std::size_t>(i1 - i0);
    thread_local std::vector<double> acc;
    acc.assign(w, op == OpKind::CumSum ? 0.0 : op == OpKind::CumProd ? 1.0 : std::numeric_limits<double>::quiet_NaN());
    for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t base = inner * (k + len * o) + i0;
        const T* xr = x + base;
        T* yr = y + base;
        for (std::size_t i = 0; i < w; ++i) {
            const double v = static_cast<double>(xr[i]);
            double& a = acc[i];
            switch (op) {
                case OpKind::CumSum: a = a + v; break;
                case OpKind::CumProd: a = a * v; break;
                case OpKind::CumMax: if (!std::isnan(v) && (std::isnan(a) || v > a)) a = v; break;
                default: if (!std::isnan(v) && (std::isnan(a) || v < a)) a = v; break;
            }
            yr[i] = static_cast<T>(a);
        }
    }
    (void)outer;
}
}  // namespace

void run_scan(const Region& region, const Storage& input, Storage& output, bool parallel) {
    const auto [inner, len, outer] = region.reduce_extents();
    if (inner == 0 || len == 0 || outer == 0) return;
    // Units: an outer index and a piece of at most 1024 lines.
    constexpr std::int64_t kPiece = 1024;
    const std::int64_t pieces = (inner + kPiece - 1) / kPiece;
    const auto units = static_cast<std::size_t>(outer * pieces);
    const bool f32 = region.outputs[0].node->dtype == DType::f32;
    for_range(units, parallel, [&](std::size_t first, std::size_t last) {
        for (std::size_t u = first; u < last; ++u) {
            const auto o = static_cast<std::int64_t>(u) / pieces, i0 = (static_cast<std::int64_t>(u) % pieces) * kPiece;
            const std::int64_t i1 = std::min(inner, i0 + kPiece);
            if (f32)
                scan_lines(region.scan_op, static_cast<const float*>(input.data()), static_cast<float*>(output.data()),
                           inner, len, outer, i0, i1, o);
            else
                scan_lines(region.scan_op, static_cast<const double*>(input.data()), static_cast<double*>(output.data()),
                           inner, len, outer, i0, i1, o);
        }
    });
}

}  // namespace tandem::detail::cpu
