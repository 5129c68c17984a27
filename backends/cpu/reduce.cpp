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

/// Folds the n elements of a block (positions k0, k0 + 1, ...) into one partial, in a fixed order
/// (reduce_kernels.hpp): sums and products in 32 lanes combined pairwise, any/all and max/min
/// as if in order (the first extremum). pf: bytes to prefetch ahead (0: the data is in cache).
Acc fold_run(const ReduceKernels& rk, OpKind op, const Program::SinkView& s, std::size_t n, std::int64_t k0, double* buf,
             std::size_t pf) {
    const RedKind kind = kind_of(op);
    if ((kind == RedKind::Sum || kind == RedKind::Prod) && !s.scalar && s.type == ElemType::f32)
        return {(kind == RedKind::Sum ? rk.sum_run[1] : rk.prod_run[1])(s.data, n, pf / sizeof(float)), 0};
    const double* x = as_doubles(s, n, buf);
    pf = x == buf ? 0 : pf / sizeof(double);
    switch (kind) {
        case RedKind::Sum: return {rk.sum_run[0](x, n, pf), 0};
        case RedKind::Prod: return {rk.prod_run[0](x, n, pf), 0};
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

/// Folds rows r < rows (row r: `n` elements at x + r * stride, position k0 + r) into (v, pos) in
/// order of r; x has the type `type` (double rows for any type but Sum/Prod of float).
void fold_rows(const ReduceKernels& rk, RedKind kind, ElemType type, double* v, std::int64_t* pos, const void* x,
               std::size_t stride, std::size_t rows, std::size_t n, std::int64_t k0) {
    const int t = type == ElemType::f32 ? 1 : 0;
    switch (kind) {
        case RedKind::Sum: rk.rows_sum[t](v, x, stride, rows, n); break;
        case RedKind::Prod: rk.rows_prod[t](v, x, stride, rows, n); break;
        case RedKind::Any: rk.rows_any(v, static_cast<const double*>(x), stride, rows, n); break;
        case RedKind::All: rk.rows_all(v, static_cast<const double*>(x), stride, rows, n); break;
        default: rk.rows_ext(kind == RedKind::Max, v, pos, static_cast<const double*>(x), stride, rows, n, k0); break;
    }
}

/// The same for a block of the program's value (`rows` rows of `n` elements, `stride` apart in
/// the block): float rows of a sum or product as they are, other types converted into `buf`.
void fold_block_rows(const ReduceKernels& rk, RedKind kind, const Program::SinkView& s, double* v, std::int64_t* pos,
                     std::size_t stride, std::size_t rows, std::size_t n, std::int64_t k0, double* buf) {
    const std::size_t count = (rows - 1) * stride + n;
    if (!s.scalar && (s.type == ElemType::f64 || (s.type == ElemType::f32 && (kind == RedKind::Sum || kind == RedKind::Prod))))
        return fold_rows(rk, kind, s.type, v, pos, s.data, stride, rows, n, k0);
    fold_rows(rk, kind, ElemType::f64, v, pos, as_doubles(s, count, buf), stride, rows, n, k0);
}

/// Thread-local scratch: the program's registers and one block of doubles per reduction.
struct Scratch {
    std::vector<std::byte, std::allocator<std::byte>> regs;
    std::vector<double> conv;
};
Scratch& scratch_for(std::size_t reg_bytes, std::size_t conv_doubles) {
    thread_local Scratch s;
    if (s.regs.size() < reg_bytes + 64) s.regs.resize(reg_bytes + 64);
    if (s.conv.size() < conv_doubles) s.conv.resize(conv_doubles);
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

/// Rows of a strided reduction read straight from the input per pass over the accumulators: at
/// least 8 (measured on the 2-core VM: 4096-double rows at 35, 49, 63, 72 GB/s for 1, 2, 4, 8
/// rows a pass, less again from 16), more when rows are short, to span about a block.
std::size_t direct_rows(std::size_t inner, std::size_t block) { return std::max<std::size_t>(8, block / inner); }
/// Contiguous data read from memory is prefetched this many bytes ahead: the hardware prefetchers
/// alone leave one core's stream well short of its share of the copy bandwidth (measured: 4096
/// doubles ahead best of 0 / 2048 / 4096 / 8192; it reaches into the next chunk, which the same
/// thread usually takes next).
constexpr std::size_t kPrefetchBytes = 32768;
/// Rows of a strided reduction computed by the program (long rows) folded in one pass, each
/// computed into a scratch of its own.
constexpr std::size_t kFusedRows = 4;

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

    // Rows folded at a time from blocks of long rows (one scratch each, S bytes apart: the
    // scratch rounded up to lines, plus a few lines so that the rows do not alias in the caches).
    const std::size_t S = (reg_bytes + 63) / 64 * 64 + 256;

    if (inner == 1) {
        // Contiguous along the reduced dimension: chunks of one block, partials combined in order.
        const auto chunks = static_cast<std::size_t>((len + static_cast<std::int64_t>(B) - 1) / static_cast<std::int64_t>(B));
        const std::size_t tasks = static_cast<std::size_t>(outer) * chunks;
        std::vector<Acc> partial(tasks * nred);
        for_range(tasks, parallel, [&](std::size_t first, std::size_t last) {
            Scratch& s = scratch_for(reg_bytes, B);
            std::byte* regs = aligned(s.regs);
            for (std::size_t t = first; t < last; ++t) {
                const auto o = static_cast<std::int64_t>(t / chunks);
                const auto c = static_cast<std::int64_t>(t % chunks);
                const std::int64_t k0 = c * static_cast<std::int64_t>(B);
                const auto n = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(B), len - k0));
                const std::int64_t start = k0 + len * o;
                program.run_block(start, n, regs);
                for (std::size_t j = 0; j < nred; ++j)
                    partial[t * nred + j] = fold_run(rk, region.reductions[j].op, program.sink(j, start, regs), n, k0, s.conv.data(),
                                                     in_memory[j] ? kPrefetchBytes : 0);
            }
        });
        for_range(static_cast<std::size_t>(outer), parallel, [&](std::size_t first, std::size_t last) {
            for (std::size_t o = first; o < last; ++o)
                for (std::size_t j = 0; j < nred; ++j) {
                    const OpKind op = region.reductions[j].op;
                    const Acc* p = &partial[(o * chunks) * nred + j];
                    Acc a = p[0];
                    if (op == OpKind::Sum)
                        for (std::size_t c = 1; c < chunks; ++c) a.v += p[c * nred].v;
                    else
                        for (std::size_t c = 1; c < chunks; ++c) combine(op, a, p[c * nred]);
                    write_output(*region.outputs[j].node, op, *outputs[j], static_cast<std::int64_t>(o), a);
                }
        });
        return;
    }

    // Strided: each position k of the reduced dimension is a run of `inner` outputs, contiguous in
    // memory; consecutive k are consecutive runs. A task takes one outer index and a chunk of k:
    // one contiguous stretch of memory, read in order, row after row (a few rows per pass over the
    // accumulators when rows are short). The reduced dimension is split into chunks only when there
    // are too few outer indices to share out (the split depends on the shape, not on the threads);
    // each chunk folds its rows in order from the identity, and the chunks are combined in order.
    const auto units = static_cast<std::size_t>(outer);
    const std::int64_t kchunks = units >= 64 ? 1 : std::min<std::int64_t>(len, static_cast<std::int64_t>((64 + units - 1) / units));
    const std::int64_t kc_len = (len + kchunks - 1) / kchunks;
    const std::size_t tasks = units * static_cast<std::size_t>(kchunks);
    const auto I = static_cast<std::size_t>(inner);
    bool need_pos = false;
    for (const auto& red : region.reductions) need_pos |= kind_of(red.op) == RedKind::Max || kind_of(red.op) == RedKind::Min;
    // Partials: per task, per reduction, a value (and a position, for max/min) per inner element.
    const std::size_t slice = nred * I;
    auto pv = std::make_unique_for_overwrite<double[]>(tasks * slice);
    std::unique_ptr<std::int64_t[]> pk;
    if (need_pos) pk = std::make_unique_for_overwrite<std::int64_t[]>(tasks * slice);

    // The reduced values are read straight from the inputs when the program computes nothing
    // and each is a double array (or a float one, summed or multiplied).
    bool direct = program.steps() == 0;
    if (direct) {
        Scratch& s = scratch_for(reg_bytes, B);
        const std::byte* regs = aligned(s.regs);
        for (std::size_t j = 0; j < nred; ++j) {
            const ElemType type = program.sink(j, 0, regs).type;
            const RedKind kind = kind_of(region.reductions[j].op);
            direct &= in_memory[j] && (type == ElemType::f64 || (type == ElemType::f32 && (kind == RedKind::Sum || kind == RedKind::Prod)));
        }
    }

    for_range(tasks, parallel, [&](std::size_t first, std::size_t last) {
        Scratch& s = scratch_for(kFusedRows * S, B);  // one scratch, or kFusedRows of them (long rows)
        std::byte* regs = aligned(s.regs);
        for (std::size_t t = first; t < last; ++t) {
            const auto o = static_cast<std::int64_t>(t / static_cast<std::size_t>(kchunks));
            const auto c = static_cast<std::int64_t>(t % static_cast<std::size_t>(kchunks));
            double* v = &pv[t * slice];
            std::int64_t* pos = need_pos ? &pk[t * slice] : nullptr;
            for (std::size_t j = 0; j < nred; ++j) {
                std::fill_n(v + j * I, I, initial(region.reductions[j].op).v);
                if (pos != nullptr) std::fill_n(pos + j * I, I, std::int64_t{0});
            }
            const std::int64_t k_begin = c * kc_len, k_end = std::min(len, (c + 1) * kc_len);
            if (direct) {
                const std::size_t R = direct_rows(I, B);
                for (std::int64_t k = k_begin; k < k_end; k += static_cast<std::int64_t>(R)) {
                    const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(R), k_end - k));
                    const std::int64_t start = inner * (k + len * o);
                    for (std::size_t j = 0; j < nred; ++j) {
                        const Program::SinkView x = program.sink(j, start, regs);
                        fold_rows(rk, kind_of(region.reductions[j].op), x.type, v + j * I, pos ? pos + j * I : nullptr, x.data, I,
                                  rows, I, k);
                    }
                }
            } else if (I * kFusedRows <= B) {
                // Blocks of whole rows: B / I rows per block, each folded from the block.
                const std::size_t R = B / I;
                for (std::int64_t k = k_begin; k < k_end; k += static_cast<std::int64_t>(R)) {
                    const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(R), k_end - k));
                    const std::int64_t start = inner * (k + len * o);
                    program.run_block(start, rows * I, regs);
                    for (std::size_t j = 0; j < nred; ++j)
                        fold_block_rows(rk, kind_of(region.reductions[j].op), program.sink(j, start, regs), v + j * I,
                                        pos ? pos + j * I : nullptr, I, rows, I, k, s.conv.data());
                }
            } else {
                // Long rows: kFusedRows rows at a time, in pieces of up to a block: the program
                // computes each row's piece into a scratch of its own (S bytes apart), then the
                // rows are folded into the accumulators in one pass (in order, as always).
                const std::size_t W = std::min(I, B);
                for (std::int64_t k = k_begin; k < k_end; k += static_cast<std::int64_t>(kFusedRows)) {
                    const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(kFusedRows), k_end - k));
                    for (std::size_t i0 = 0; i0 < I; i0 += W) {
                        const std::size_t n = std::min(W, I - i0);
                        const std::int64_t start = static_cast<std::int64_t>(i0) + inner * (k + len * o);
                        for (std::size_t r = 0; r < rows; ++r) {
                            const std::int64_t start_r = start + inner * static_cast<std::int64_t>(r);
                            program.run_block(start_r, n, regs + r * S);
                        }
                        for (std::size_t j = 0; j < nred; ++j) {
                            const RedKind kind = kind_of(region.reductions[j].op);
                            const Program::SinkView x = program.sink(j, start, regs);
                            double* vj = v + j * I + i0;
                            std::int64_t* pj = pos ? pos + j * I + i0 : nullptr;
                            const std::size_t esize = x.type == ElemType::f64 ? 8 : x.type == ElemType::f32 ? 4 : 1;
                            if (!x.scalar && (x.type == ElemType::f64 || (x.type == ElemType::f32 && (kind == RedKind::Sum || kind == RedKind::Prod)))) {
                                // Row r of the value: in its scratch, or in the input (a row further).
                                const std::size_t stride = in_memory[j] ? I : S / esize;
                                fold_rows(rk, kind, x.type, vj, pj, x.data, stride, rows, n, k);
                            } else {
                                for (std::size_t r = 0; r < rows; ++r) {
                                    const std::int64_t start_r = start + inner * static_cast<std::int64_t>(r);
                                    fold_block_rows(rk, kind, program.sink(j, start_r, regs + r * S), vj, pj, n, 1, n,
                                                    k + static_cast<std::int64_t>(r), s.conv.data());
                                }
                            }
                        }
                    }
                }
            }
        }
    });
    // The chunks of each unit combined in order, in pieces of the inner run, then written out.
    constexpr std::size_t kPiece = 1024;
    const std::size_t pieces = (I + kPiece - 1) / kPiece;
    for_range(units * pieces, parallel, [&](std::size_t first, std::size_t last) {
        for (std::size_t w = first; w < last; ++w) {
            const std::size_t u = w / pieces, i0 = (w % pieces) * kPiece, n = std::min(kPiece, I - i0);
            for (std::size_t j = 0; j < nred; ++j) {
                const OpKind op = region.reductions[j].op;
                const std::size_t at0 = (u * static_cast<std::size_t>(kchunks)) * slice + j * I + i0;
                double* a = &pv[at0];
                std::int64_t* ak = need_pos ? &pk[at0] : nullptr;
                for (std::int64_t c = 1; c < kchunks; ++c) {
                    const std::size_t at = at0 + static_cast<std::size_t>(c) * slice;
                    rk.combine[static_cast<int>(kind_of(op))](a, ak, &pv[at], need_pos ? &pk[at] : nullptr, n);
                }
                write_outputs(*region.outputs[j].node, op, *outputs[j], static_cast<std::int64_t>(i0 + I * u), a, ak, n);
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
