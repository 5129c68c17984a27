#include "backends/cpu/cpu_backend.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/cpu/gemm.hpp"
#include "backends/cpu/epilogue.hpp"
#include "backends/cpu/indexing.hpp"
#include "backends/cpu/parallel.hpp"
#include "backends/cpu/permute.hpp"
#include "backends/cpu/program.hpp"
#include "backends/cpu/reduce.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {

namespace {

/// Per-thread scratch for block registers, grown on demand and reused, so a region's
/// temporaries live in this core's cache instead of in fresh arrays.
std::byte* thread_scratch(std::size_t bytes) {
    struct Buffer {
        std::byte* p = nullptr;
        std::size_t size = 0;
        ~Buffer() { std::free(p); }
    };
    thread_local Buffer buf;
    if (buf.size < bytes) {
        std::size_t size = (bytes + 4095) / 4096 * 4096;
        void* p = std::aligned_alloc(64, size);
        if (!p) throw OutOfMemoryError("out of memory: CPU executor scratch of " + std::to_string(size) + " bytes");
        std::free(buf.p);
        buf.p = static_cast<std::byte*>(p);
        buf.size = size;
    }
    return buf.p;
}

}  // namespace

void CpuBackend::submit(Submission s) {
    std::exception_ptr error;
    try {
        const Region& r = *s.region;
        std::vector<std::shared_ptr<Storage>> keep;
        std::vector<const Storage*> in;
        for (auto& v : s.inputs) {
            keep.push_back(v->host());
            if (!keep.back()) throw Error("cpu executor: an input has no host copy (scheduler bug)");
            in.push_back(keep.back().get());
        }
        std::vector<std::shared_ptr<Storage>> made;
        std::vector<Storage*> out;
        for (std::size_t j = 0; j < r.outputs.size(); ++j) {
            const Node& n = *r.outputs[j].node;
            made.push_back(pool_.allocate(n.bytes(), n.label()));
            out.push_back(made.back().get());
        }
        execute(r, in, out);
        for (std::size_t j = 0; j < made.size(); ++j) s.outputs[j]->set_host(std::move(made[j]));
    } catch (...) {
        error = std::current_exception();
    }
    s.done(error);
}

void CpuBackend::run_matmul(const Region& region, std::span<const Storage* const> inputs,
                            std::span<Storage* const> outputs) {
    const Shape& sa = region.inputs[0]->shape;
    const Shape& sb = region.inputs[1]->shape;
    const std::int64_t m = region.trans_a ? sa[1] : sa[0], k = region.trans_a ? sa[0] : sa[1];
    const std::int64_t n = region.trans_b ? sb[0] : sb[1];
    if (m == 0 || n == 0) return;
    const Trans ta = region.trans_a ? Trans::transpose : Trans::none;
    const Trans tb = region.trans_b ? Trans::transpose : Trans::none;
    const std::int64_t lda = std::max<std::int64_t>(1, sa[0]), ldb = std::max<std::int64_t>(1, sb[0]);
    GemmOptions options;  // MatmulPrecision f16 / bf16: the operands rounded first (gemm.hpp)
    options.rounding = input_rounding(matmul_precision_attr(region.matmul_precision));
    options.isa = kernels_.isa;  // TANDEM_CPU_ISA caps the GEMM's kernels too (the same bits under any)
    if (region.outputs[0].node->dtype == DType::f32)
        gemm(ta, tb, m, n, k, 1.0f, static_cast<const float*>(inputs[0]->data()), lda,
             static_cast<const float*>(inputs[1]->data()), ldb, 0.0f, static_cast<float*>(outputs[0]->data()), m, options);
    else
        gemm(ta, tb, m, n, k, 1.0, static_cast<const double*>(inputs[0]->data()), lda,
             static_cast<const double*>(inputs[1]->data()), ldb, 0.0, static_cast<double*>(outputs[0]->data()), m);
    if (region.epilogue.any()) apply_epilogue(region, inputs, *outputs[0]);
}

namespace {
template <class T>
void transpose_tiles(const T* src, T* dst, std::int64_t rows, std::int64_t cols, std::int64_t j0, std::int64_t j1) {
    // 64 x 64 tiles: a tile of the source's columns and of the result's columns both stay in cache.
    constexpr std::int64_t kTile = 64;
    for (std::int64_t jb = j0; jb < j1; jb += kTile)
        for (std::int64_t ib = 0; ib < rows; ib += kTile) {
            const std::int64_t je = std::min(j1, jb + kTile), ie = std::min(rows, ib + kTile);
            for (std::int64_t i = ib; i < ie; ++i)
                for (std::int64_t j = jb; j < je; ++j) dst[j + cols * i] = src[i + rows * j];
        }
}
}  // namespace

void CpuBackend::run_transpose(const Region& region, std::span<const Storage* const> inputs,
                               std::span<Storage* const> outputs) {
    const Shape& in = region.inputs[0]->shape;
    const std::int64_t rows = in[0], cols = in[1];
    if (rows == 0 || cols == 0) return;
    const std::size_t elem = dtype_size(region.outputs[0].node->dtype);
    const void* src = inputs[0]->data();
    void* dst = outputs[0]->data();
    auto run = [&](std::int64_t j0, std::int64_t j1) {
        if (elem == 8) transpose_tiles(static_cast<const double*>(src), static_cast<double*>(dst), rows, cols, j0, j1);
        else if (elem == 4) transpose_tiles(static_cast<const float*>(src), static_cast<float*>(dst), rows, cols, j0, j1);
        else transpose_tiles(static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst), rows, cols, j0, j1);
    };
    // Column bands of the source, 64 columns each: independent, contiguous reads.
    for_chunks((cols + 63) / 64, 1, [&](std::int64_t b0, std::int64_t b1) {
        run(b0 * 64, std::min(cols, b1 * 64));
    });
}

void CpuBackend::run_cat(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs) {
    // The output as (inner, L, outer) along the dimension: each outer index is the inputs' runs
    // of inner * len_q elements end to end, so the whole is a list of contiguous copies.
    const auto e = region.reduce_extents();
    const std::size_t es = dtype_size(region.outputs[0].node->dtype);
    auto* out = static_cast<std::byte*>(outputs[0]->data());
    auto run = [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) {
            std::int64_t off = 0;
            for (std::size_t q = 0; q < inputs.size(); ++q) {
                const std::int64_t lq = region.inputs[q]->shape[region.reduce_dim];
                const auto bytes = static_cast<std::size_t>(e.inner * lq) * es;
                std::memcpy(out + static_cast<std::size_t>((o * e.len + off) * e.inner) * es,
                            static_cast<const std::byte*>(inputs[q]->data()) + static_cast<std::size_t>(o) * bytes, bytes);
                off += lq;
            }
        }
    };
    for_chunks(e.outer, 64, run);
}

void CpuBackend::run_remap(const Region& region, std::span<const Storage* const> inputs,
                           std::span<Storage* const> outputs) {
    // Along the remapped dimension, output position k is input position (a k + b) mod n: a run of
    // `inner` contiguous elements each.
    const auto e = region.reduce_extents();
    const std::int64_t n = region.inputs[0]->shape[region.reduce_dim];
    if (n == 0 || e.inner == 0 || e.len == 0 || e.outer == 0) return;
    const std::size_t es = dtype_size(region.outputs[0].node->dtype);
    const auto* in = static_cast<const std::byte*>(inputs[0]->data());
    auto* out = static_cast<std::byte*>(outputs[0]->data());
    const auto run = static_cast<std::size_t>(e.inner) * es;
    auto rows = [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
            const std::int64_t k = r % e.len, o = r / e.len;
            std::int64_t s = (region.remap_a * k + region.remap_b) % n;
            if (s < 0) s += n;
            std::memcpy(out + static_cast<std::size_t>(r) * run, in + static_cast<std::size_t>(s + n * o) * run, run);
        }
    };
    for_chunks(e.len * e.outer, 256, rows);
}

void CpuBackend::execute(const Region& region, std::span<const Storage* const> inputs,
                         std::span<Storage* const> outputs) {
    switch (region.kind) {
        case RegionKind::elementwise: return run_elementwise(region, inputs, outputs);
        case RegionKind::reduce: {
            const std::size_t nred = region.reductions.size();
            run_reduce(region, inputs, outputs.first(nred), kernels_, block_, true);
            if (region.tail.empty()) return;
            // The tail: an elementwise pass over the reductions' results, as they were written.
            const Region tail = region.tail_region();
            std::vector<const Storage*> results(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(nred));
            return run_elementwise(tail, results, outputs.subspan(nred));
        }
        case RegionKind::matmul: return run_matmul(region, inputs, outputs);
        case RegionKind::view: throw Error("internal: a view region reached the CPU executor (the scheduler shares its value)");
        case RegionKind::transpose: return run_transpose(region, inputs, outputs);
        case RegionKind::permute: return run_permute(region, *inputs[0], *outputs[0]);
        case RegionKind::scan: return run_scan(region, *inputs[0], *outputs[0], true);
        case RegionKind::concat: return run_cat(region, inputs, outputs);
        case RegionKind::remap: return run_remap(region, inputs, outputs);
        case RegionKind::gather: return run_gather(region, *inputs[0], *inputs[1], *outputs[0]);
        case RegionKind::scatter: return run_scatter(region, *inputs[0], *inputs[1], *inputs[2], *outputs[0]);
        case RegionKind::find: return run_find(region, *inputs[0], *outputs[0]);
        case RegionKind::kernel: return run_kernel(region, inputs, outputs);
    }
}

void CpuBackend::run_elementwise(const Region& region, std::span<const Storage* const> inputs,
                                 std::span<Storage* const> outputs) {
    Program program(region, inputs, outputs, kernels_, block_);
    const std::int64_t numel = program.numel();
    if (numel == 0) return;
    const auto block = static_cast<std::size_t>(block_);
    const std::size_t blocks = (static_cast<std::size_t>(numel) + block - 1) / block;
    auto run = [&](std::size_t first, std::size_t last) {
        std::byte* scratch = thread_scratch(program.scratch_bytes());
        for (std::size_t b = first; b < last; ++b) {
            std::int64_t start = static_cast<std::int64_t>(b * block);
            std::size_t n = std::min<std::size_t>(block, static_cast<std::size_t>(numel - start));
            program.run_block(start, n, scratch);
        }
    };
    // Small regions run on this thread: waking workers costs more than the work.
    if (blocks <= 2) return run(0, blocks);
#if defined(TANDEM_TSAN)
    // Debian's oneTBB is not instrumented: the splitting state of parallel_for (in its headers,
    // so instrumented) is synchronised inside libtbb, where TSan cannot see it, and every split
    // reads as a race. The TSan build therefore runs a region's blocks on one worker; regions
    // still run concurrently through the arena, which is what the concurrency tests exercise.
    run(0, blocks);
#else
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
        run(r.begin(), r.end());
    });
#endif
}

}  // namespace tandem::detail::cpu
