// Streaming: a region whose inputs and outputs together exceed a device's memory budget still
// runs on the device, in pieces that fit, one after another (two in flight: one uploads while
// the other computes). The region is cut along its last dimension of more than one position
// (the outermost in memory, so each piece reads and writes contiguous windows of its arrays,
// views of their host copies, and inputs broadcast along it whole):
//  - windows: an elementwise region, a reduction along another dimension, or a scan, remap
//    (flip, circshift, repmat) or concatenation along another dimension; each piece writes its
//    window of every output. A product op(A) * B (B not transposed) by blocks of its result's
//    columns: each piece reads A (and a bias per row) whole, its columns of B, C and a bias per
//    column; each element sums in the canonical order (graph/matmul_order.hpp): the same bits.
//  - partials: a reduction along the split dimension (of every element, of a vector, or of each
//    row of a matrix; of every element also with inputs that vary along the split dimension
//    alone, when a position holds whole chunks); pieces start on multiples of kReduceChunk positions, so each gives exactly
//    the canonical order's first-level partials (graph/reduce_order.hpp: a chunk of 1024
//    positions folds alone, with the lanes of the whole region: interleaved for a vector,
//    blocked for rows), sums and products in double; the region's reductions of those partials
//    (the later levels, interleaved), and its tail, then finish on the host: the same bits as
//    the whole region anywhere.
// Generators (linspace, colon, rand, randn) number a piece's elements from its Region::index_base:
// the whole region's values (a piece with random numbers starts on a whole Philox block).
// Not streamed (the CPU runs them): other region kinds (products with B transposed,
// transposes, permutations, indexing), scans and remaps along the split dimension, arg-max/min, remaps folded into the
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
    /// Partials of every element with inputs that vary only along the split dimension (one
    /// value per position, as a per-image mean): the elements of a position (a multiple of
    /// kReduceChunk), pieces then hold whole positions; 0 otherwise.
    std::int64_t position = 0;
    /// Split partials of a vector's every element, sums and products: [0, folded) is cut into
    /// pieces of whole second-level blocks (kReduceChunk^2 elements), each of which folds its
    /// blocks on its device to the canonical order's second-level partials (a column of a block
    /// reduced alone is exactly that); the rest comes as first-level partials, its whole chunks
    /// in one piece, then the tail. 0: no piece folds.
    std::int64_t folded = 0;
    std::int64_t pieces() const noexcept;
};

/// How `r` runs in pieces of at most `piece_bytes` of inputs and outputs each, or nothing when
/// it cannot (see above) or a piece would not fit.
std::optional<StreamPlan> plan_stream(const Region& r, std::uint64_t piece_bytes);

/// How `r` runs split over `devices` devices at once (data parallelism: one piece each, the
/// last may take the partials' tail too), or nothing when it cannot be cut in at least two.
/// Pieces are cut where the canonical order's chunks and the windows' alignment allow, the same
/// way for every region of a domain (a value split by one region is read in place, part by
/// part, by the next): partials on multiples of kReduceChunk elements, windows on multiples of
/// kReduceChunk elements too where the extent allows. With `vector_blocks`, a vector's regions
/// (every element a position) are cut on whole second-level blocks where that costs a device at
/// most 1/64 more than an even share, and its sums fold those blocks where they run
/// (StreamPlan::folded). The caller says so for every region of an extent or for none of them
/// (the scheduler's mixed extents, PlacementQuery::vector_blocks): a value cut on blocks and
/// read another way is assembled.
std::optional<StreamPlan> plan_split(const Region& r, std::int64_t devices, bool vector_blocks = false);

/// At most one dimension longer than 1.
bool is_vector(const Shape& s);

/// Input k's window in piece `index` (bytes from the start of its value, and how many), or
/// nothing when the piece reads it whole (broadcast along the split dimension).
std::optional<std::pair<std::size_t, std::size_t>> piece_window(const Region& r, const StreamPlan& p, std::int64_t index,
                                                                std::size_t k);

/// A copy on `device` of bytes [offset, offset + bytes) of `v`, shared in place: of its copy
/// there, or of the part holding those bytes when `v` is split; else null.
std::shared_ptr<DeviceCopy> window_on(const Backend& device, const Value& v, std::size_t offset, std::size_t bytes);

/// One piece: a region over its part of the domain, its inputs (windows of the region's inputs'
/// host copies, or the whole of a broadcast one) and fresh output values; partials: the outputs
/// are the reductions' partials (a row each), else windows of the region's outputs, at
/// `output_offsets` bytes into them.
struct StreamPiece {
    Region region;
    std::vector<std::shared_ptr<Value>> inputs, outputs;
    std::vector<std::size_t> output_offsets;
    /// Partials: the first-level chunks each of its partials stands for (kReduceChunk when it
    /// folded its second level, StreamPlan::folded).
    std::int64_t chunks_each = 1;
};

/// Piece `index` of plan `p` for `r`, whose inputs' values are `inputs`, for `device`: a
/// window of an input with a copy there shares it (window_on), the others are views of host
/// copies (uploaded with the piece).
/// `staged` (empty, or one per input): a host copy of this piece's window of input k, brought
/// down alone from the device holding the input (a split region's piece on another device), or
/// null.
StreamPiece make_piece(const Region& r, const StreamPlan& p, std::int64_t index,
                       std::span<const std::shared_ptr<Value>> inputs, const Backend& device, NodeTable& nodes,
                       std::span<const std::shared_ptr<Storage>> staged = {});

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
    Allocate allocate_;
    std::vector<std::shared_ptr<Storage>> results_;
    std::int64_t chunks_ = 0;  // first-level partials placed (or folded) so far, per row
    /// Many partials of sums of every element (a split region's): each piece's, as it came
    /// back, folded from there (not copied into one array first: 1 MB of fresh memory took
    /// 0.15-0.27 ms on the H200 host).
    bool runs_ = false;
    std::vector<std::vector<std::shared_ptr<Storage>>> pieces_;  // per reduction
    std::vector<std::int64_t> chunks_each_;                      // per piece (StreamPiece::chunks_each)
};

}  // namespace tandem::detail
