#include "backends/cpu/indexing.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backends/cpu/parallel.hpp"
#include "graph/subscripts.hpp"

namespace tandem::detail::cpu {

namespace {

double subscript_at(const Storage& s, DType t, std::int64_t k) {
    if (t == DType::f32) return static_cast<const float*>(s.data())[k];
    return static_cast<const double*>(s.data())[k];
}

/// The subscripts as 0-based positions; throws the region's IndexError for the first bad one.
std::vector<std::int64_t> checked_positions(const Region& r, const Storage& subscripts) {
    const auto& e = r.index_extents;
    const DType t = r.inputs[1]->dtype;
    std::vector<std::int64_t> pos(static_cast<std::size_t>(e.count));
    std::atomic<std::int64_t> first_bad{e.count};
    for_chunks(e.count, 16384, [&](std::int64_t k0, std::int64_t k1) {
        BadSubscript why{};
        for (std::int64_t k = k0; k < k1; ++k) {
            const double v = subscript_at(subscripts, t, k);
            if (!check_subscript(v, e.extent, why)) {
                std::int64_t seen = first_bad.load();
                while (k < seen && !first_bad.compare_exchange_weak(seen, k)) {
                }
                return;
            }
            pos[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(v) - 1;
        }
    });
    if (const std::int64_t k = first_bad.load(); k < e.count) {
        const double v = subscript_at(subscripts, t, k);
        BadSubscript why{};
        check_subscript(v, e.extent, why);
        throw_bad_subscript(r, k, why, v);
    }
    return pos;
}

}  // namespace

void run_gather(const Region& r, const Storage& a, const Storage& subscripts, Storage& out) {
    const auto& e = r.index_extents;
    const std::vector<std::int64_t> pos = checked_positions(r, subscripts);
    if (e.inner == 0 || e.outer == 0 || e.count == 0) return;  // nothing selected (subscripts still checked)
    const std::size_t es = dtype_size(r.outputs[0].node->dtype);
    const auto* src = static_cast<const std::byte*>(a.data());
    auto* dst = static_cast<std::byte*>(out.data());
    if (e.inner == 1) {
        // One element per subscript (linear indexing, or along the first dimension of a row).
        for_chunks(e.count * e.outer, 16384, [&](std::int64_t q0, std::int64_t q1) {
            for (std::int64_t q = q0; q < q1; ++q) {
                const std::int64_t k = q % e.count, o = q / e.count;
                const std::int64_t from = pos[static_cast<std::size_t>(k)] + e.extent * o;
                std::memcpy(dst + static_cast<std::size_t>(q) * es, src + static_cast<std::size_t>(from) * es, es);
            }
        });
        return;
    }
    // A run of `inner` contiguous elements per (subscript, outer position).
    const std::size_t run = static_cast<std::size_t>(e.inner) * es;
    for_chunks(e.count * e.outer, std::max<std::int64_t>(1, 16384 / e.inner), [&](std::int64_t q0, std::int64_t q1) {
        for (std::int64_t q = q0; q < q1; ++q) {
            const std::int64_t k = q % e.count, o = q / e.count;
            const std::int64_t from = pos[static_cast<std::size_t>(k)] + e.extent * o;
            std::memcpy(dst + static_cast<std::size_t>(q) * run, src + static_cast<std::size_t>(from) * run, run);
        }
    });
}

void run_scatter(const Region& r, const Storage& a, const Storage& subscripts, const Storage& b, Storage& out) {
    const auto& e = r.index_extents;
    const std::vector<std::int64_t> pos = checked_positions(r, subscripts);
    const std::size_t es = dtype_size(r.outputs[0].node->dtype);
    if (out.bytes()) std::memcpy(out.data(), a.data(), out.bytes());
    if (e.inner == 0 || e.outer == 0 || e.count == 0) return;
    const bool broadcast = r.inputs[2]->shape.numel() == 1;
    const auto* from = static_cast<const std::byte*>(b.data());
    auto* dst = static_cast<std::byte*>(out.data());
    const std::size_t run = static_cast<std::size_t>(e.inner) * es;
    // Different outer positions write disjoint ranges: they run in parallel. Within one, the
    // subscripts go in order, so a repeated one ends with its last assignment (MATLAB's rule).
    for_chunks(e.outer, 1, [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o)
            for (std::int64_t k = 0; k < e.count; ++k) {
                std::byte* to = dst + static_cast<std::size_t>(pos[static_cast<std::size_t>(k)] + e.extent * o) * run;
                if (broadcast) {
                    for (std::int64_t i = 0; i < e.inner; ++i) std::memcpy(to + static_cast<std::size_t>(i) * es, from, es);
                } else {
                    std::memcpy(to, from + static_cast<std::size_t>(k + e.count * o) * run, run);
                }
            }
    });
}

void run_find(const Region& r, const Storage& mask, Storage& out) {
    const std::int64_t n = r.index_extents.extent, count = r.index_extents.count;
    const auto* m = static_cast<const std::uint8_t*>(mask.data());
    auto* dst = static_cast<double*>(out.data());
    // Two passes over fixed chunks: count each, then write each at its prefix offset.
    constexpr std::int64_t kChunk = 1 << 16;
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<std::int64_t> offset(static_cast<std::size_t>(chunks) + 1, 0);
    for_chunks(chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) {
            std::int64_t t = 0;
            for (std::int64_t i = c * kChunk, end = std::min(n, (c + 1) * kChunk); i < end; ++i) t += m[i] != 0;
            offset[static_cast<std::size_t>(c) + 1] = t;
        }
    });
    for (std::size_t c = 1; c < offset.size(); ++c) offset[c] += offset[c - 1];
    for_chunks(chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) {
            std::int64_t at = offset[static_cast<std::size_t>(c)];
            for (std::int64_t i = c * kChunk, end = std::min(n, (c + 1) * kChunk); i < end; ++i)
                if (m[i] != 0 && at < count) dst[at++] = static_cast<double>(i + 1);
        }
    });
}

}  // namespace tandem::detail::cpu
