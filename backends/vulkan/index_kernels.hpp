// Indexing kernels (Region::indexing): gather, the two passes of a scatter, and the three of a
// find (stream compaction). Fixed kernels per element type; extents and addresses in push
// constants. A bad subscript is recorded in a fault word pair (the lowest position of each kind
// of fault, by atomicMin) that the host reads when the batch completes.
#pragma once

#include <cstdint>

#include "backends/vulkan/codegen.hpp"

namespace tandem::detail::vk {

inline constexpr std::uint32_t kIndexWorkgroup = 256;
/// Elements of the mask one find workgroup handles: kIndexWorkgroup invocations x 16.
inline constexpr std::uint32_t kFindBlock = kIndexWorkgroup * 16;
/// The fault words: uint32 first position of a subscript that is not a positive integer, then of
/// one past the extent; 0xFFFFFFFF: none (positions beyond 2^32 - 2 are recorded as 2^32 - 2).
inline constexpr std::uint32_t kNoFault = 0xFFFFFFFFu;

/// Push constants of gather and scatter: uint64 values (a for gather, b for scatter),
/// subscripts, destination, fault words, claims (scatter); int64 inner, count, outer, extent;
/// uint64 broadcast (scatter: b has one element), check_only (nothing is selected -- an empty
/// inner or outer extent --, yet the count subscripts are still checked: one invocation each).
struct IndexPush {
    std::uint64_t values, subscripts, dst, fault, claims;
    std::int64_t inner, count, outer, extent;
    std::uint64_t broadcast, check_only;
};

/// out(e) = a(i + inner (I(k) - 1 + extent o)) for e = (i, k, o).
Kernel gather_kernel(DType value, DType subscript);
/// Pass 1 of a scatter: claims(dest) = max over the selection's elements e writing dest of e + 1.
/// Pass 2: the element e with claims(dest) == e + 1 writes b(e) (or b(0)) to dest: the last wins.
/// With a scalar b there are no claims (push claims = 0): pass 2 alone writes every selected
/// destination and checks the subscripts.
Kernel scatter_kernel(DType value, DType subscript, bool claim_pass);

/// Push constants of the find passes: uint64 mask, counts (uint32 per block), offsets (uint32
/// per block), dst (double); uint32 n (elements), blocks, count (positions to write), pad.
struct FindPush {
    std::uint64_t mask, counts, offsets, dst;
    std::uint32_t n, blocks, count, pad;
};
/// Pass 1: counts(b) = true elements of block b. Pass 2 (one workgroup): offsets = exclusive
/// prefix sums of counts. Pass 3: each block writes its positions (1-based, as doubles) in order.
Kernel find_kernel(int pass);

}  // namespace tandem::detail::vk
