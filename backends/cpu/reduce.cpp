#include "backends/cpu/reduce.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/program.hpp"
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

/// Folds x[0..n) at positions k0, k0 + 1, ... into one partial, in a fixed order: sums and
/// products in 32 lanes (element i into lane i % 32, lanes combined pairwise), the rest in order.
Acc fold_run(OpKind op, const double* x, std::size_t n, std::int64_t k0) {
    Acc a = initial(op);
    switch (op) {
        case OpKind::Sum:
        case OpKind::Prod: {
            // 32 lanes (four vectors of eight: independent chains), combined pairwise.
            constexpr std::size_t L = 32;
            const bool sum = op == OpKind::Sum;
            double lane[L];
            for (double& l : lane) l = sum ? 0.0 : 1.0;
            std::size_t i = 0;
            if (sum)
                for (; i + L <= n; i += L)
                    for (std::size_t l = 0; l < L; ++l) lane[l] += x[i + l];
            else
                for (; i + L <= n; i += L)
                    for (std::size_t l = 0; l < L; ++l) lane[l] *= x[i + l];
            for (; i < n; ++i) lane[i % L] = sum ? lane[i % L] + x[i] : lane[i % L] * x[i];
            for (std::size_t w = L / 2; w > 0; w /= 2)
                for (std::size_t l = 0; l < w; ++l) lane[l] = sum ? lane[l] + lane[l + w] : lane[l] * lane[l + w];
            a.v = lane[0];
            return a;
        }
        case OpKind::Any:
            for (std::size_t i = 0; i < n; ++i)
                if (x[i] != 0.0 && !std::isnan(x[i])) return {1.0, 0};
            return a;
        case OpKind::All:
            for (std::size_t i = 0; i < n; ++i)
                if (x[i] == 0.0) return {0.0, 0};
            return a;
        default: {
            const bool mx = is_max(op);
            for (std::size_t i = 0; i < n; ++i) {
                const double v = x[i];
                if (!std::isnan(v) && (std::isnan(a.v) || (mx ? v > a.v : v < a.v))) a = {v, k0 + static_cast<std::int64_t>(i)};
            }
            return a;
        }
    }
}

/// Folds x[i] at position k into (v[i], pos[i]) for i < n (the strided case: one position, many
/// outputs; values and positions apart so the loops vectorise).
void fold_lanes(OpKind op, double* v, std::int64_t* pos, const double* x, std::size_t n, std::int64_t k) {
    switch (op) {
        case OpKind::Sum:
            for (std::size_t i = 0; i < n; ++i) v[i] += x[i];
            break;
        case OpKind::Prod:
            for (std::size_t i = 0; i < n; ++i) v[i] *= x[i];
            break;
        case OpKind::Any:
            for (std::size_t i = 0; i < n; ++i) v[i] = (x[i] != 0.0 && !std::isnan(x[i])) ? 1.0 : v[i];
            break;
        case OpKind::All:
            for (std::size_t i = 0; i < n; ++i) v[i] = x[i] == 0.0 ? 0.0 : v[i];
            break;
        default: {
            const bool mx = is_max(op);
            for (std::size_t i = 0; i < n; ++i) {
                const double y = x[i];
                if (!std::isnan(y) && (std::isnan(v[i]) || (mx ? y > v[i] : y < v[i]))) {
                    v[i] = y;
                    pos[i] = k;
                }
            }
        }
    }
}

/// Folds rows x[0..rows) (positions k, k + 1, ...) into (v, pos) element by element, each row in
/// order: sums and products keep the accumulator in a register across the rows.
void fold_rows(OpKind op, double* v, std::int64_t* pos, const double* const* x, int rows, std::size_t n, std::int64_t k) {
    if (op == OpKind::Sum && rows == 4) {
        const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
        for (std::size_t i = 0; i < n; ++i) v[i] = (((v[i] + x0[i]) + x1[i]) + x2[i]) + x3[i];
        return;
    }
    if (op == OpKind::Prod && rows == 4) {
        const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
        for (std::size_t i = 0; i < n; ++i) v[i] = (((v[i] * x0[i]) * x1[i]) * x2[i]) * x3[i];
        return;
    }
    for (int r = 0; r < rows; ++r) fold_lanes(op, v, pos, x[r], n, k + r);
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

void write_output(const Node& node, OpKind op, Storage& out, std::int64_t index, const Acc& a) {
    double v = a.v;
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) v = static_cast<double>(a.k + 1);
    switch (node.dtype) {
        case DType::f64: static_cast<double*>(out.data())[index] = v; break;
        case DType::f32: static_cast<float*>(out.data())[index] = static_cast<float>(v); break;
        case DType::logical: static_cast<std::uint8_t*>(out.data())[index] = v != 0.0 ? 1 : 0; break;
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

}  // namespace

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
    Program program(region, inputs, kernels, block_elements, Program::Sinks{});
    const auto B = static_cast<std::size_t>(block_elements);
    const std::size_t reg_bytes = program.scratch_bytes();

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
                for (std::size_t j = 0; j < nred; ++j) {
                    const double* x = as_doubles(program.sink(j, start, regs), n, s.conv.data());
                    partial[t * nred + j] = fold_run(region.reductions[j].op, x, n, k0);
                }
            }
        });
        for_range(static_cast<std::size_t>(outer), parallel, [&](std::size_t first, std::size_t last) {
            for (std::size_t o = first; o < last; ++o)
                for (std::size_t j = 0; j < nred; ++j) {
                    const OpKind op = region.reductions[j].op;
                    Acc a = partial[(o * chunks) * nred + j];
                    for (std::size_t c = 1; c < chunks; ++c) combine(op, a, partial[(o * chunks + c) * nred + j]);
                    write_output(*region.outputs[j].node, op, *outputs[j], static_cast<std::int64_t>(o), a);
                }
        });
        return;
    }

    // Strided: each position k of the reduced dimension is a run of `inner` outputs, contiguous in
    // memory; consecutive k are consecutive runs. A task takes one outer index and a chunk of k,
    // reading its runs whole (block by block) in order: one contiguous stretch of memory. The
    // reduced dimension is split into chunks only when there are too few outer indices to share
    // out (the split depends on the shape, not on the threads).
    const auto units = static_cast<std::size_t>(outer);
    const std::int64_t kchunks = units >= 64 ? 1 : std::min<std::int64_t>(len, static_cast<std::int64_t>((64 + units - 1) / units));
    const std::int64_t kc_len = (len + kchunks - 1) / kchunks;
    const std::size_t tasks = units * static_cast<std::size_t>(kchunks);
    const auto I = static_cast<std::size_t>(inner);
    // Partials: per task, per reduction, a value and a position per inner element.
    std::vector<double> pv(tasks * nred * I);
    std::vector<std::int64_t> pk(tasks * nred * I);
    for_range(tasks, parallel, [&](std::size_t first, std::size_t last) {
        Scratch& s = scratch_for(reg_bytes, 4 * B);
        std::byte* regs = aligned(s.regs);
        for (std::size_t t = first; t < last; ++t) {
            const auto o = static_cast<std::int64_t>(t / static_cast<std::size_t>(kchunks));
            const auto c = static_cast<std::int64_t>(t % static_cast<std::size_t>(kchunks));
            double* v = &pv[t * nred * I];
            std::int64_t* pos = &pk[t * nred * I];
            for (std::size_t j = 0; j < nred; ++j) {
                std::fill_n(v + j * I, I, initial(region.reductions[j].op).v);
                std::fill_n(pos + j * I, I, std::int64_t{0});
            }
            const std::int64_t k_end = std::min(len, (c + 1) * kc_len);
            // Up to kRows positions of k at a time, so that a sum or product loads and stores its
            // accumulators once per kRows rows; each row is folded in order (the same bits).
            constexpr std::int64_t kRows = 4;
            for (std::int64_t k = c * kc_len; k < k_end; k += kRows) {
                const std::int64_t rows = std::min(kRows, k_end - k);
                for (std::int64_t i0 = 0; i0 < inner; i0 += static_cast<std::int64_t>(B)) {
                    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(B), inner - i0));
                    for (std::size_t j = 0; j < nred; ++j) {
                        const double* x[kRows];
                        for (std::int64_t r = 0; r < rows; ++r) {
                            const std::int64_t start = i0 + inner * (k + r + len * o);
                            program.run_block(start, n, regs);  // per reduction: a block holds one row
                            double* buf = s.conv.data() + static_cast<std::size_t>(r) * B;
                            x[r] = as_doubles(program.sink(j, start, regs), n, buf);
                            // A value in the program's registers is overwritten by the next block.
                            const auto* p = reinterpret_cast<const std::byte*>(x[r]);
                            if (p >= regs && p < regs + reg_bytes) {
                                std::copy_n(x[r], n, buf);
                                x[r] = buf;
                            }
                        }
                        fold_rows(region.reductions[j].op, v + j * I + static_cast<std::size_t>(i0),
                                  pos + j * I + static_cast<std::size_t>(i0), x, static_cast<int>(rows), n, k);
                    }
                }
            }
        }
    });
    for_range(units, parallel, [&](std::size_t first, std::size_t last) {
        for (std::size_t u = first; u < last; ++u) {
            const auto o = static_cast<std::int64_t>(u);
            for (std::size_t j = 0; j < nred; ++j) {
                const OpKind op = region.reductions[j].op;
                for (std::size_t i = 0; i < I; ++i) {
                    const std::size_t at0 = (u * static_cast<std::size_t>(kchunks)) * nred * I + j * I + i;
                    Acc a{pv[at0], pk[at0]};
                    for (std::int64_t c = 1; c < kchunks; ++c) {
                        const std::size_t at = (u * static_cast<std::size_t>(kchunks) + static_cast<std::size_t>(c)) * nred * I + j * I + i;
                        combine(op, a, Acc{pv[at], pk[at]});
                    }
                    write_output(*region.outputs[j].node, op, *outputs[j], static_cast<std::int64_t>(i) + inner * o, a);
                }
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
