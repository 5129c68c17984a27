#include "backends/cpu/permute.hpp"

#include <algorithm>
#include <cstring>

#include "backends/cpu/parallel.hpp"
#include "graph/permute_plan.hpp"

namespace tandem::detail::cpu {

namespace {

/// Input and output offsets of index `b` over the dimensions `dims` of the plan (mixed radix).
void offsets_of(const PermutePlan& p, const std::vector<int>& dims, std::int64_t b, std::int64_t& in, std::int64_t& out) {
    in = out = 0;
    for (int d : dims) {
        const std::int64_t n = p.extent[static_cast<std::size_t>(d)];
        const std::int64_t i = b % n;
        b /= n;
        in += i * p.in_stride[static_cast<std::size_t>(d)];
        out += i * p.out_stride[static_cast<std::size_t>(d)];
    }
}

template <class T>
void tiles(const PermutePlan& p, const T* src, T* dst) {
    constexpr std::int64_t kTile = 32;
    const int c = p.contiguous;
    const std::int64_t na = p.extent[0], nb = p.extent[static_cast<std::size_t>(c)];
    const std::int64_t sa = p.in_stride[0], ob = p.out_stride[static_cast<std::size_t>(c)];
    std::vector<int> batch_dims;
    std::int64_t batch = 1;
    for (int d = 1; d < static_cast<int>(p.extent.size()); ++d)
        if (d != c) {
            batch_dims.push_back(d);
            batch *= p.extent[static_cast<std::size_t>(d)];
        }
    const std::int64_t btiles = (nb + kTile - 1) / kTile;
    for_chunks(batch * btiles, 4, [&](std::int64_t q0, std::int64_t q1) {
        for (std::int64_t q = q0; q < q1; ++q) {
            std::int64_t in0, out0;
            offsets_of(p, batch_dims, q / btiles, in0, out0);
            const std::int64_t b0 = (q % btiles) * kTile, b1 = std::min(nb, b0 + kTile);
            for (std::int64_t a0 = 0; a0 < na; a0 += kTile) {
                const std::int64_t a1 = std::min(na, a0 + kTile);
                for (std::int64_t b = b0; b < b1; ++b)
                    for (std::int64_t a = a0; a < a1; ++a) dst[out0 + a + b * ob] = src[in0 + a * sa + b];
            }
        }
    });
}

}  // namespace

void run_permute(const Region& r, const Storage& in, Storage& out) {
    const PermutePlan p = plan_permute(r.inputs[0]->shape, r.permutation);
    const std::int64_t numel = r.shape.numel();
    if (numel == 0) return;
    const std::size_t es = dtype_size(r.outputs[0].node->dtype);
    if (p.runs()) {
        // Output dimension 0 is contiguous in the input as well: copies of whole runs.
        const std::int64_t run = p.extent.empty() ? 1 : p.extent[0];
        std::vector<int> rest;
        for (int d = 1; d < static_cast<int>(p.extent.size()); ++d) rest.push_back(d);
        const auto* s = static_cast<const std::byte*>(in.data());
        auto* o = static_cast<std::byte*>(out.data());
        for_chunks(numel / run, std::max<std::int64_t>(1, 16384 / run), [&](std::int64_t q0, std::int64_t q1) {
            for (std::int64_t q = q0; q < q1; ++q) {
                std::int64_t i0, o0;
                offsets_of(p, rest, q, i0, o0);
                std::memcpy(o + static_cast<std::size_t>(o0) * es, s + static_cast<std::size_t>(i0) * es, static_cast<std::size_t>(run) * es);
            }
        });
        return;
    }
    if (es == 8) tiles(p, static_cast<const std::uint64_t*>(in.data()), static_cast<std::uint64_t*>(out.data()));
    else if (es == 4) tiles(p, static_cast<const std::uint32_t*>(in.data()), static_cast<std::uint32_t*>(out.data()));
    else tiles(p, static_cast<const std::uint8_t*>(in.data()), static_cast<std::uint8_t*>(out.data()));
}

}  // namespace tandem::detail::cpu
