// How a region's kernel gets its operands: the access of each input (decided per call, part of
// the kernel's key), the per-dispatch argument block and push constants, and the error header
// read back after the dispatch. codegen.hpp's kernels read exactly this layout; the host side
// (vulkan_backend.cpp) fills it with pack_arguments and reads it back with check_error.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/reduce_order.hpp"
#include "graph/region.hpp"

namespace tandem::detail::vk {

struct Kernel;  // codegen.hpp

// The argument block (std430, 8-byte aligned, one per dispatch, in host-visible memory):
//   offset 0   uint32  error flag: 0 = fine; bit 0 set = a logical op met a NaN operand
//   offset 4   uint32  error instruction: the lowest program index that met it (0xFFFFFFFF: none)
//   offset 8   uint64  the index base of generators (Region::index_base; 0 but in a streamed piece)
//   offset 16  uint64  device address of each region input, then of each output
//   then       (extent, stride, divisor, n, step, offset: int64) of each collapsed dimension of
//                      each strided input, in input order (Region::input_dims; divisor:
//                      extent_divisor(extent), for the 32-bit index path)
//   then       double  the scalar slots that did not fit in the push constants
//   then       uint64  (reduce regions) inner, len, outer, chunks, lanes, the address of
//                      the partials (chunks > 1), per_invocation: see ReducePlan
// Push constants: uint64 address of the argument block, uint64 element count, then as many
// scalar slots (double; f32 ops read float(slot)) as fit in max_push_bytes.
// The kernel only ever sets bits of the header (atomicOr / atomicMin), so the host must write the
// header (pack_arguments does) for every dispatch and read it back after (check_error).
inline constexpr std::uint32_t kArgHeaderBytes = 16;
inline constexpr std::uint32_t kErrorFlagOffset = 0;
inline constexpr std::uint32_t kErrorInstrOffset = 4;
inline constexpr std::uint32_t kIndexBaseOffset = 8;
inline constexpr std::uint32_t kErrorNanToLogical = 1;

/// How one region input is read by the kernel (decided per call, part of the kernel's key).
enum class InputAccess : std::uint8_t {
    full,     ///< same number of elements as the region: element i
    scalar,   ///< one element, read once
    strided,  ///< implicit expansion or a folded remap: index through Region::input_dims
};

/// How a kernel walks a strided input: one letter per collapsed dimension (Region::input_dims):
/// 'p' plain, or a mapped one by its wrap: 'n' none, 'o' once, 'a' any; upper case ('N', 'O',
/// 'A') when the input's positions and offsets all fit 32 bits (it has fewer than 2^31 elements
/// and every step * k + offset is below 2^32), so that the kernel maps them in 32-bit integers
/// below 2^32 elements. Part of the kernel's key.
/// A walk may end in "@j": its collapsed extents are those of strided input j (j before it), so
/// the kernel splits the element index into coordinates once for both (access_for decides; a
/// stencil's four shifted reads of one grid share one split).
using InputWalk = std::string;
InputWalk walk_of(const std::vector<InputDim>& dims, std::int64_t input_elements);
/// The dimension letters of a walk, without its "@j".
inline std::string_view walk_letters(const InputWalk& w) { return std::string_view(w).substr(0, w.find('@')); }
/// The input whose coordinates the walk shares, or -1.
inline int walk_shares(const InputWalk& w) {
    const auto at = w.find('@');
    return at == std::string::npos ? -1 : std::stoi(w.substr(at + 1));
}

/// Bytes per collapsed dimension of a strided input in the argument block: extent, stride,
/// extent_divisor(extent), then n, step and offset (mapped dimensions; 0 for plain ones).
inline constexpr std::uint64_t kStridedDimBytes = 48;

/// Division of a 32-bit index by an invariant extent d >= 1 as a multiply (Granlund & Montgomery,
/// "Division by invariant integers using multiplication", 1994, fig. 4.1: N = 32, l = ceil(log2 d),
/// m = floor(2^32 (2^l - d) / d) + 1): n / d = (t + ((n - t) >> sh1)) >> sh2 with t = mulhi(m, n),
/// sh1 = min(l, 1), sh2 = max(l - 1, 0), exact for every n < 2^32. Packed m | sh1 << 32 | sh2 << 40;
/// an extent of 2^32 or more (above every 32-bit index) as m = 0, sh1 = sh2 = 16: the quotient 0.
std::uint64_t extent_divisor(std::int64_t d);

/// The access each input needs for this region.
void access_for(const Region& region, std::vector<InputAccess>& access, std::vector<InputWalk>& walks);

// ---- scalar slots: shared by generate() (which slot an operand reads) and pack_arguments()
// (the values), so the two cannot disagree on the order ------------------------------------------

/// x.^2 with a scalar 2: the CPU lowers it to x.*x (one correctly rounded product); so does the
/// kernel, and the exponent takes no slot.
bool is_square(const Instr& ins);

/// The scalar operands of a region's program, in slot order.
struct ScalarPlan {
    std::vector<std::array<int, 5>> slot;  ///< per instruction: arg k (or generator parameter k), -1: none
    std::vector<double> values;
};
ScalarPlan plan_scalars(const Region& r);

/// How many of `scalars` slots travel in push constants of at most max_push_bytes (the rest in
/// the argument block).
std::uint32_t push_slots(std::size_t scalars, std::uint32_t max_push_bytes);

// ---- reduce regions ----------------------------------------------------------------------------

/// How a reduce region's kernel splits the work: the canonical order of graph/reduce_order.hpp,
/// which depends on the shape alone. The domain is (inner, len, outer) -- Region::reduce_extents.
/// Each output's len positions form `chunks` chunks of kReduceChunk; a chunk is one slot of
/// `lanes` lanes (reduce_lanes(len, blocked)), each folding its positions of the chunk in order,
/// then the lanes combined by the halving tree.
/// contiguous (inner == 1): interleaved lanes, a slot's lanes consecutive invocations
///   (consecutive elements: coalesced), workgroup size / lanes slots a workgroup, consecutive
///   chunks; the tree by subgroup shuffles where a subgroup holds the slot, else in shared memory.
/// strided: blocked lanes; consecutive slots are consecutive outputs (coalesced); a slot is
///   lanes / per_invocation invocations, each holding per_invocation lanes in registers (the
///   most, up to kStridedLanes, that still leaves kStridedThreads invocations in all: few
///   outputs or short runs need the parallelism more than the loads in flight of one
///   invocation); the tree's first steps in registers, the rest in shared memory. The grouping
///   changes the speed, never the bits.
/// chunks > 1: the first pass writes each chunk's partial (value, position: 16 bytes) at
///   ((j * outputs + q) * chunks + c) * 16 of a scratch buffer; combine passes (the push
///   constants' count = the level, from 1) fold each output's partials of a level by the same
///   rule into the next level (placed after it), until one is left, which they store.
inline constexpr std::uint64_t kReduceParamsCount = 7;
/// Measured on the H100 (sum(A, 2) of 2^14 x 2^14 floats: 4, 8, 16 lanes an invocation at 2624,
/// 2786, 2769 GB/s; 2^13 x 2^13: 2317, 2423, 2236).
inline constexpr std::uint64_t kStridedLanes = 8, kStridedThreads = std::uint64_t{1} << 20;
/// Positions of a contiguous lane whose elements are computed before they are folded (their
/// loads in flight together). Measured on the H100: a bare sum(A, 1) / sum(A, 'all') of 2^28
/// floats prefers more (4: 2756 / 2642 GB/s, 8: 2867 / 2746, 16: 2938 / 2809), but programs
/// with work in the element code do not (16 against 4: W1 at n = 100M 0.96 against 0.80 ms of
/// kernels, W2 at B = 16 2.0 against 1.78): registers.
inline constexpr int kContiguousUnroll = 4;
inline constexpr std::uint64_t kWholeOutputsMost = 65536;
struct ReducePlan {
    bool contiguous = true;
    std::uint64_t inner = 1, len = 0, outer = 1;
    std::uint64_t chunks = 1;  ///< of the first pass (reduce_chunks(len))
    std::uint64_t lanes = 1;   ///< of the first pass (reduce_lanes(len, !contiguous))
    std::uint64_t per_invocation = 1;  ///< strided: lanes an invocation holds
    /// Contiguous, 2 to workgroup size / 32 chunks an output, at most kWholeOutputsMost chunks in
    /// all: a workgroup holds whole outputs (bit_ceil(chunks) slots each) and folds their chunks'
    /// partials itself, in shared memory (the second level of the same rule): no partials
    /// buffer, no combine pass. Worth it where that pass's fixed cost counts; beyond, the slots
    /// left idle by the rounding cost more (H100: sum(A, 1) of 4096 x 4096 floats 1973 -> 2120
    /// GB/s; W2 at B = 16, 184k outputs of 3 chunks, 1.77 -> 1.87 ms).
    bool whole_outputs = false;

    std::uint64_t outputs() const noexcept { return inner * outer; }
    /// Slots (chunks) of a first-pass workgroup.
    std::uint64_t slots(std::uint64_t workgroup_size) const noexcept {
        return contiguous ? workgroup_size / lanes : workgroup_size / (lanes / per_invocation);
    }
    /// Outputs a first-pass workgroup finishes (whole_outputs).
    std::uint64_t outputs_per_group(std::uint64_t workgroup_size) const noexcept {
        return workgroup_size / lanes / std::bit_ceil(chunks);
    }
    /// Partials of each level after the first pass (empty: one pass): chunks, then
    /// reduce_chunks(chunks), ... down to (not including) 1.
    std::vector<std::uint64_t> levels() const;
};
/// `threads`: the strided plan's target (0: kStridedThreads); `workgroup_size`: the reduce
/// kernels' (whole_outputs depends on it).
ReducePlan plan_reduce(const Region& region, std::uint64_t threads, std::uint64_t workgroup_size);

// ---- one dispatch ------------------------------------------------------------------------------

/// Fills the push constants and the argument block for one dispatch of `kernel` over `region`.
/// Throws ValueError (as the CPU executor does, before any work) when a scalar immediate
/// operand of a logical op is NaN.
/// `inputs[k]` / `outputs[j]`: device addresses of the arrays; `args_address`: where `args` will
/// be placed on the device. Returns the number of workgroups to dispatch (x; y and z are 1
/// unless x would exceed the device limit, then the kernel folds y into its index).
/// Reduce regions: `partials` is the address of a scratch buffer of reduce_partial_bytes (0 when
/// that is 0); `combines` the grid of each combine pass, level 1 first (none: one pass).
struct Launch {
    std::vector<std::byte> push;
    std::vector<std::byte> args;
    std::uint32_t groups_x = 0, groups_y = 1;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> combines;
};
Launch pack_arguments(const Region& region, const Kernel& kernel, std::span<const std::uint64_t> inputs,
                      std::span<const std::uint64_t> outputs, std::uint64_t args_address,
                      std::uint32_t max_groups_x, std::uint64_t partials = 0);
/// Bytes of scratch a reduce region's first pass writes (0: one pass).
std::uint64_t reduce_partial_bytes(const Region& region, const Kernel& kernel);

/// Throws the CPU executor's ValueError when the argument block's header (the first
/// kArgHeaderBytes of `args`, read back after the dispatch) reports a NaN operand of a logical op.
void check_error(const Region& region, const void* args);

/// `groups` workgroups as an x * y grid with x at most max_groups_x, as square as the limit allows
/// (x * y - groups < y workgroups idle). Kernels take their linear index as y * numGroups.x + x.
void split_groups(std::uint64_t groups, std::uint32_t max_groups_x, std::uint32_t& x, std::uint32_t& y);

}  // namespace tandem::detail::vk
