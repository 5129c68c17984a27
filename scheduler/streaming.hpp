// Streaming: a region whose inputs and outputs together exceed a device's memory budget still
// runs on the device, in pieces that fit, one after another (two in flight: one uploads while
// the other computes). The region is cut along its last dimension of more than one position
// (the outermost in memory, so each piece reads and writes contiguous windows of its arrays,
// views of their host copies, and inputs broadcast along it whole):
//  - windows: an elementwise region, a reduction along another dimension, or a scan, remap
//    (flip, circshift, repmat) or concatenation along another dimension; each piece writes its
//    window of every output.
//  - partials: a reduction along the split dimension (of every element, of a vector, or of each
//    row of a matrix); pieces start on multiples of kReduceChunk positions, so each gives exactly
//    the canonical order's first-level partials (graph/reduce_order.hpp: a chunk of 1024
//    positions folds alone, with the lanes of the whole region: interleaved for a vector,
//    blocked for rows), sums and products in double; the region's reductions of those partials
//    (the later levels, interleaved), and its tail, then finish on the host: the same bits as
//    the whole region anywhere.
// Generators (linspace, colon, rand, randn) number a piece's elements from its Region::index_base:
// the whole region's values (a piece with random numbers starts on a whole Philox block).
// Not streamed (the CPU runs them): other region kinds (products, transposes, permutations,
// indexing), scans and remaps along the split dimension, arg-max/min, remaps folded into the
// split dimension (or into any input of a row reduction), inputs broadcast along only some of
// the dimensions before a row reduction's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/node.hpp"
#include "backends/backend.hpp"
#include "graph/region.hpp"
#include "scheduler/node_state.hpp"
#include "scheduler/residency.hpp"

namespace tandem::detail {

struct StreamPlan {
    bool partials = false;        ///< reductions of the split elements (else windows)
    int dim = 0;                  ///< windows: the split dimension (0-based)
    std::int64_t extent = 0;      ///< positions along it (windows, rows), elements (partials of every element)
    std::int64_t rows = 1;        ///< partials: the outputs a position feeds (1: every element, or a vector)
    std::int64_t per_piece = 0;   ///< positions (elements: a multiple of kReduceChunk) a piece
    std::int64_t pieces() const noexcept;
};

/// How `r` runs in pieces of at most `piece_bytes` of inputs and outputs each, or nothing when
/// it cannot (see above) or a piece would not fit.
std::optional<StreamPlan> plan_stream(const Region& r, std::uint64_t piece_bytes);

/// One piece: a region over its part of the domain, its inputs (windows of the region's inputs'
/// host copies, or the whole of a broadcast one) and fresh output values; partials: the outputs
/// are the reductions' partials (a row each), else windows of the region's outputs, at
/// `output_offsets` bytes into them.
struct StreamPiece {
    Region region;
    std::vector<std::shared_ptr<Value>> inputs, outputs;
    std::vector<std::size_t> output_offsets;
};

/// Piece `index` of plan `p` for `r`, whose inputs' values are `inputs`, for `device`: a
/// window of an input with a copy there shares it (Backend::window), the others are views of
/// host copies (uploaded with the piece).
StreamPiece make_piece(const Region& r, const StreamPlan& p, std::int64_t index,
                       std::span<const std::shared_ptr<Value>> inputs, const Backend& device, NodeTable& nodes);

/// Whether every window of input k starts where a device can read it in place
/// (Backend::kWindowAlignment): otherwise it goes through the host.
bool windows_aligned(const Region& r, const StreamPlan& p, std::size_t k);

/// Partials: the positions [first, end) piece `index` covers (whole chunks, then the rest alone).
std::pair<std::int64_t, std::int64_t> partial_range(const StreamPlan& p, std::int64_t index);

/// Where a streamed region's results go, piece after piece: windows of the region's host
/// outputs, or each reduction's partials (P x rows: chunk k of row i at k + P i), which finish()
/// reduces along their first dimension with the region's tail on the host executor.
class StreamResults {
public:
    using Allocate = std::function<std::shared_ptr<Storage>(std::size_t bytes, const std::string& what)>;
    StreamResults(const Region& r, const StreamPlan& p, const Allocate& allocate);
    /// The next piece's results (pieces come in order; their outputs have host copies).
    void add(const StreamPiece& piece);
    /// The region's output values, with host copies; `cpu` finishes partials.
    std::vector<std::shared_ptr<Value>> finish(Backend& cpu, NodeTable& nodes);

private:
    const Region& r_;
    const StreamPlan& p_;
    std::vector<std::shared_ptr<Storage>> results_;
    std::int64_t chunks_ = 0;  // partials placed so far, per row
};

}  // namespace tandem::detail
