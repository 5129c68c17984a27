#include "scheduler/streaming.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "graph/reduce_order.hpp"
#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

/// Elements of `s` before dimension d (a window's stride along d).
std::int64_t inner(const Shape& s, int d) {
    std::int64_t n = 1;
    for (int i = 0; i < d; ++i) n *= s[i];
    return n;
}

Shape with_extent(const Shape& s, int d, std::int64_t extent) {
    std::vector<std::int64_t> dims = s.dims();
    if (static_cast<int>(dims.size()) <= d) dims.resize(static_cast<std::size_t>(d) + 1, 1);
    dims[static_cast<std::size_t>(d)] = extent;
    return Shape(std::move(dims));
}

bool sums_in_double(OpKind op) { return op == OpKind::Sum || op == OpKind::Prod; }

/// Elements of a second-level block of the canonical order (graph/reduce_order.hpp): a chunk of
/// kReduceChunk first-level partials.
constexpr std::int64_t kSecondLevel = kReduceChunk * kReduceChunk;

/// A vector of `extent` elements split over `devices`: the elements of a piece when every
/// device's piece is whole second-level blocks, which costs each at most 1/64 more than an even
/// share; else 0. A piece of a sum then folds its blocks where it runs and brings back a value
/// per block, not one per chunk (W1's 1e8 elements: 97657 partials, 0.78 MB, to fold on the
/// host). The windows of a vector are cut the same way, so that a split value is still read in
/// place by the sum after it.
std::int64_t second_level_share(std::int64_t extent, std::int64_t devices) {
    const std::int64_t share = (extent + devices - 1) / devices;
    const std::int64_t per_piece = (share + kSecondLevel - 1) / kSecondLevel * kSecondLevel;
    const bool every_device = (devices - 1) * per_piece < extent / kSecondLevel * kSecondLevel;
    return every_device && per_piece - share <= share / 64 ? per_piece : 0;
}

/// Windows along D: whether a piece reads input k whole. A product cut into blocks of its
/// result's columns reads A whole (and a bias per row); the others, their columns. Any other
/// region reads whole what is broadcast along D.
bool read_whole(const Region& r, std::size_t k, int D) {
    if (r.kind == RegionKind::matmul)
        return k == 0 || (r.epilogue.bias == Region::Epilogue::Bias::per_row && k + 1 == r.inputs.size());
    return r.inputs[k]->shape[D] != r.shape[D];
}

/// The type of reduction j's partials: double for sums and products (the canonical order
/// accumulates there), else the result's.
DType partial_dtype(const Region& r, std::size_t j) {
    return sums_in_double(r.reductions[j].op) ? DType::f64 : r.outputs[j].node->dtype;
}

/// One chunk of a later level of the canonical order (graph/reduce_order.hpp): interleaved
/// lanes from +0 (sums) or 1 (products), in order, then the tree.
double fold_chunk(const double* y, std::int64_t n, bool sum) {
    double lane[kReduceLanes];
    std::fill_n(lane, kReduceLanes, sum ? 0.0 : 1.0);
    std::int64_t p = 0;
    if (sum) {
        for (; p + kReduceLanes <= n; p += kReduceLanes)
            for (std::int64_t l = 0; l < kReduceLanes; ++l) lane[l] += y[p + l];
        for (std::int64_t l = 0; p + l < n; ++l) lane[l] += y[p + l];
        for (std::int64_t w = kReduceLanes / 2; w > 0; w /= 2)
            for (std::int64_t l = 0; l < w; ++l) lane[l] += lane[l + w];
    } else {
        for (; p + kReduceLanes <= n; p += kReduceLanes)
            for (std::int64_t l = 0; l < kReduceLanes; ++l) lane[l] *= y[p + l];
        for (std::int64_t l = 0; p + l < n; ++l) lane[l] *= y[p + l];
        for (std::int64_t w = kReduceLanes / 2; w > 0; w /= 2)
            for (std::int64_t l = 0; l < w; ++l) lane[l] *= lane[l + w];
    }
    return lane[0];
}

/// Windows along D: the step in positions that starts every input's window where a device can
/// read it in place and a piece with random numbers on a whole Philox block (4 elements), and
/// the step for the Philox block alone (a must).
std::pair<std::int64_t, std::int64_t> window_steps(const Region& r, int D) {
    const Shape& S = r.shape;
    std::int64_t align = 1;
    for (std::size_t k = 0; k < r.inputs.size(); ++k)
        if (const auto& in = r.inputs[k]; !read_whole(r, k, D)) {
            const auto stride = inner(in->shape, D) * static_cast<std::int64_t>(dtype_size(in->dtype));
            const auto a = static_cast<std::int64_t>(Backend::kWindowAlignment) / std::gcd(static_cast<std::int64_t>(Backend::kWindowAlignment), stride);
            align = std::lcm(align, a);
        }
    const bool random = std::any_of(r.program.begin(), r.program.end(), [](const Instr& ins) {
        return ins.op == OpKind::RandU || ins.op == OpKind::RandN;
    });
    const std::int64_t block = random ? 4 / std::gcd(inner(S, D), std::int64_t{4}) : 1;
    return {std::lcm(align, block), block};
}
}  // namespace

std::pair<std::int64_t, std::int64_t> partial_range(const StreamPlan& p, std::int64_t index) {
    const std::int64_t aligned = p.extent / kReduceChunk * kReduceChunk;
    if (p.folded) {  // pieces of whole blocks, then the rest's whole chunks, then the tail
        const std::int64_t folding = (p.folded + p.per_piece - 1) / p.per_piece;
        if (index < folding) return {index * p.per_piece, std::min(p.folded, (index + 1) * p.per_piece)};
        if (index == folding && aligned > p.folded) return {p.folded, aligned};
        return {aligned, p.extent};
    }
    const std::int64_t first = index * p.per_piece;
    if (first >= aligned) return {aligned, p.extent};
    return {first, std::min(aligned, first + p.per_piece)};
}

std::int64_t StreamPlan::pieces() const noexcept {
    if (!partials) return (extent + per_piece - 1) / per_piece;
    const std::int64_t aligned = extent / kReduceChunk * kReduceChunk;
    if (folded) return (folded + per_piece - 1) / per_piece + (aligned > folded ? 1 : 0) + (aligned < extent ? 1 : 0);
    return (aligned + per_piece - 1) / per_piece + (aligned < extent ? 1 : 0);
}

std::optional<StreamPlan> plan_stream(const Region& r, std::uint64_t piece_bytes) {
    // Scans, remaps and concatenations work line by line along reduce_dim: windows along another
    // dimension are independent pieces (a scan along the split dimension is not: its lines cross
    // the pieces).
    const bool along_lines = r.kind == RegionKind::scan || r.kind == RegionKind::remap || r.kind == RegionKind::concat;
    // A product, by blocks of its result's columns: each is A times B's columns (contiguous
    // windows of B, C and a bias per column; each element's sum in the same order, graph/
    // matmul_order.hpp). B transposed would be read by rows: not cut.
    const bool product = r.kind == RegionKind::matmul && !r.trans_b && r.shape.ndims() == 2 && r.shape[1] > 1;
    if (r.kind != RegionKind::elementwise && r.kind != RegionKind::reduce && !along_lines && !product) return std::nullopt;
    // Generators number the whole region's elements (each piece from its Region::index_base);
    // random numbers come in Philox blocks of up to 4: a piece then starts on a multiple of 4
    // (window_steps).
    for (const Reduction& red : r.reductions)
        if (red.op == OpKind::ArgMax || red.op == OpKind::ArgMin) return std::nullopt;
    const Shape& S = r.shape;
    int D = -1;
    for (int d = 0; d < S.ndims(); ++d)
        if (S[d] > 1) D = d;
    if (D < 0) return std::nullopt;
    if (along_lines && (r.reduce_dim < 0 || r.reduce_dim >= D)) return std::nullopt;
    const auto budget = static_cast<std::int64_t>(std::min<std::uint64_t>(piece_bytes, INT64_MAX));

    StreamPlan p;
    p.dim = D;
    p.partials = r.is_reduce() && (r.reduce_dim == -1 || r.reduce_dim == D);
    if (p.partials && r.reduce_dim == D && inner(S, D) > 1) {
        // Rows: positions along D, each feeding inner(S, D) outputs. An input is windowed along
        // D or broadcast along it, and before D either whole or one position.
        p.rows = inner(S, D);
        std::int64_t per_position = 0, fixed = 0;
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            const Node& in = *r.inputs[k];
            const std::int64_t before = inner(in.shape, D);
            if (r.has_view(k) || (before != p.rows && before != 1)) return std::nullopt;
            if (in.shape[D] == S[D]) per_position += before * static_cast<std::int64_t>(dtype_size(in.dtype));
            else fixed += static_cast<std::int64_t>(in.bytes());
        }
        per_position += p.rows * 8 / kReduceChunk + 1;  // the partials (double), a little
        if (budget <= fixed) return std::nullopt;
        p.extent = S[D];
        p.per_piece = (budget - fixed) / per_position / kReduceChunk * kReduceChunk;
        if (p.per_piece < kReduceChunk) return std::nullopt;
        return p;
    }
    if (p.partials) {
        // Flat windows of every input: each is the whole domain, or one element; or one value per
        // position along D (windows of positions) when a position holds whole chunks.
        std::int64_t per_element = 0, fixed = 0;
        const std::int64_t position = inner(S, D);
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            const Node& in = *r.inputs[k];
            if (in.shape.numel() == 1) {
                fixed += static_cast<std::int64_t>(in.bytes());
            } else if (in.shape == S && !r.has_view(k)) {
                per_element += static_cast<std::int64_t>(dtype_size(in.dtype));
            } else if (!r.has_view(k) && position % kReduceChunk == 0 && in.shape.numel() == S[D] && in.shape[D] == S[D]) {
                p.position = position;
                per_element += 1;  // (a value per position: next to nothing per element)
            } else {
                return std::nullopt;
            }
        }
        if (budget <= fixed) return std::nullopt;
        p.extent = S.numel();
        const std::int64_t step = p.position ? p.position : kReduceChunk;
        p.per_piece = (budget - fixed) / std::max<std::int64_t>(per_element, 1) / step * step;
        if (p.per_piece < step) return std::nullopt;
        return p;
    }
    std::int64_t per_position = 0, fixed = 0;
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
        const Node& in = *r.inputs[k];
        if (read_whole(r, k, D)) {
            fixed += static_cast<std::int64_t>(in.bytes());  // broadcast along D (or a product's A): whole
            continue;
        }
        if (r.has_view(k) && static_cast<int>(r.input_views[k].size()) > D && !(r.input_views[k][static_cast<std::size_t>(D)] == AxisMap{}))
            return std::nullopt;  // a remap along D reads outside the window
        per_position += inner(in.shape, D) * static_cast<std::int64_t>(dtype_size(in.dtype));
    }
    for (const Region::Output& o : r.outputs)
        per_position += inner(o.node->shape, D) * static_cast<std::int64_t>(dtype_size(o.node->dtype));
    if (budget <= fixed || per_position == 0) return std::nullopt;
    p.extent = S[D];
    p.per_piece = std::min(p.extent, (budget - fixed) / per_position);
    if (p.per_piece < 1) return std::nullopt;
    const auto [aligned, block] = window_steps(r, D);
    if (p.per_piece < p.extent && p.per_piece >= aligned) p.per_piece = p.per_piece / aligned * aligned;
    else if (p.per_piece < p.extent) p.per_piece = p.per_piece / block * block;
    if (p.per_piece < 1) return std::nullopt;
    return p;
}

bool is_vector(const Shape& s) {
    int long_dims = 0;
    for (int d = 0; d < s.ndims(); ++d) long_dims += s[d] > 1;
    return long_dims <= 1;
}

std::optional<StreamPlan> plan_split(const Region& r, std::int64_t devices, bool vector_blocks) {
    if (devices < 2) return std::nullopt;
    std::optional<StreamPlan> p = plan_stream(r, UINT64_MAX);  // the cut's shape, whole
    if (!p) return std::nullopt;
    auto round_up = [](std::int64_t a, std::int64_t step) { return (a + step - 1) / step * step; };
    if (p->partials) {
        const std::int64_t aligned = p->extent / kReduceChunk * kReduceChunk;
        const std::int64_t step = p->position ? p->position : kReduceChunk;  // whole positions
        if (aligned < 2 * step) return std::nullopt;
        // A share of the whole extent (not of its whole chunks): cut where windows of the same
        // domain are, so that a value split by one is read in place by the other.
        p->per_piece = round_up((p->extent + devices - 1) / devices, step);
        if (vector_blocks && p->rows == 1 && !p->position && is_vector(r.shape))
            if (const std::int64_t blocks = second_level_share(p->extent, devices)) {
                p->per_piece = blocks;
                if (std::all_of(r.reductions.begin(), r.reductions.end(), [](const Reduction& red) { return sums_in_double(red.op); }))
                    p->folded = p->extent / kSecondLevel * kSecondLevel;
            }
    } else {
        // Windows of whole chunks of elements where the extent allows (so that a reduction of
        // the value split so is cut at the same places), else aligned, else on Philox blocks.
        const auto [aligned, block] = window_steps(r, p->dim);
        const std::int64_t per_position = inner(r.shape, p->dim);
        const std::int64_t chunked = std::lcm(aligned, kReduceChunk / std::gcd(kReduceChunk, per_position));
        const std::int64_t share = (p->extent + devices - 1) / devices;
        p->per_piece = 0;
        if (vector_blocks && per_position == 1 && is_vector(r.shape))  // as a sum of the vector is cut
            if (const std::int64_t blocks = second_level_share(p->extent, devices); blocks % std::lcm(aligned, block) == 0)
                p->per_piece = blocks;
        for (std::int64_t step : {chunked, aligned, block})
            if (p->per_piece == 0 && round_up(share, step) < p->extent) {
                p->per_piece = round_up(share, step);
                break;
            }
        if (p->per_piece == 0) return std::nullopt;
    }
    if (p->pieces() < 2) return std::nullopt;
    return p;
}

std::optional<std::pair<std::size_t, std::size_t>> piece_window(const Region& r, const StreamPlan& p, std::int64_t index,
                                                                std::size_t k) {
    const Node& in = *r.inputs[k];
    const std::size_t es = dtype_size(in.dtype);
    auto bytes = [es](std::int64_t first, std::int64_t elements) {
        return std::make_pair(static_cast<std::size_t>(first) * es, static_cast<std::size_t>(elements) * es);
    };
    if (!p.partials) {
        if (read_whole(r, k, p.dim)) return std::nullopt;  // broadcast along D (or a product's A): whole
        const std::int64_t first = index * p.per_piece, len = std::min(p.extent, first + p.per_piece) - first;
        const std::int64_t before = inner(in.shape, p.dim);
        return bytes(first * before, len * before);
    }
    const auto [first, end] = partial_range(p, index);
    if (p.rows == 1) {
        if (in.shape.numel() == 1) return std::nullopt;
        if (in.shape != r.shape) return bytes(first / p.position, (end - first) / p.position);  // a value per position
        return bytes(first, end - first);
    }
    if (in.shape[p.dim] != r.shape[p.dim]) return std::nullopt;
    const std::int64_t before = inner(in.shape, p.dim);
    return bytes(first * before, (end - first) * before);
}

std::shared_ptr<DeviceCopy> window_on(const Backend& device, const Value& v, std::size_t offset, std::size_t bytes) {
    if (auto copy = device.window(v, offset, bytes)) return copy;
    if (auto parts = v.parts())
        for (const ValuePart& part : *parts)
            if (part.offset <= offset && offset + bytes <= part.offset + part.value->bytes())
                return device.window(*part.value, offset - part.offset, bytes);
    return nullptr;
}

bool windows_aligned(const Region& r, const StreamPlan& p, std::size_t k) {
    const Node& in = *r.inputs[k];
    const auto es = static_cast<std::int64_t>(dtype_size(in.dtype));
    const auto a = static_cast<std::int64_t>(Backend::kWindowAlignment);
    if (p.partials && p.rows == 1 && in.shape.numel() > 1 && in.shape != r.shape)  // a value per position
        return (p.per_piece / p.position * es) % a == 0;
    if (p.partials) {
        const std::int64_t before = in.shape[p.dim] == r.shape[p.dim] ? (p.rows == 1 ? 1 : inner(in.shape, p.dim)) : 0;
        return before == 0 || ((p.per_piece * before * es) % a == 0 && (p.extent / kReduceChunk * kReduceChunk * before * es) % a == 0);
    }
    return read_whole(r, k, p.dim) || (p.per_piece * inner(in.shape, p.dim) * es) % a == 0;
}

StreamPiece make_piece(const Region& r, const StreamPlan& p, std::int64_t index,
                       std::span<const std::shared_ptr<Value>> inputs, const Backend& device, NodeTable& nodes,
                       std::span<const std::shared_ptr<Storage>> staged) {
    StreamPiece piece;
    Region& q = piece.region;
    q = r;
    q.outputs.clear();
    const Shape& S = r.shape;
    auto window = [&](std::size_t k, const Shape& shape) {
        const Node& in = *r.inputs[k];
        const auto [offset, bytes] = *piece_window(r, p, index, k);
        auto on_device = window_on(device, *inputs[k], offset, bytes);
        auto host = inputs[k]->host();
        std::shared_ptr<Storage> window_down = k < staged.size() ? staged[k] : nullptr;
        if (!on_device && !host && !window_down) throw Error("streaming: a window with neither a device nor a host copy (scheduler bug)");
        // In place on the device where it is there; else its window brought down alone, or a view
        // of the host copy, to upload.
        auto value = std::make_shared<Value>(bytes, on_device ? nullptr
                                                    : window_down ? std::move(window_down)
                                                    : host        ? Storage::view(std::move(host), offset, bytes)
                                                                  : nullptr);
        if (on_device) value->set_device(device.ordinal(), std::move(on_device));
        q.inputs[k] = make_input(nodes, in.dtype, shape, value);
        piece.inputs.push_back(std::move(value));
    };
    auto output = [&](const Node& of, const Shape& shape, DType dtype, std::uint32_t value, std::size_t offset) {
        auto node = nodes.make_recipe(of, {});
        node->shape = shape;
        node->dtype = dtype;
        q.outputs.push_back({value, node});
        piece.outputs.push_back(std::make_shared<Value>(node->bytes()));
        piece.output_offsets.push_back(offset);
    };
    if (!p.partials) {
        const int D = p.dim;
        const std::int64_t first = index * p.per_piece, len = std::min(p.extent, first + p.per_piece) - first;
        q.shape = with_extent(S, D, len);
        q.index_base = r.index_base + first * inner(S, D);
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            if (!read_whole(r, k, D)) window(k, with_extent(r.inputs[k]->shape, D, len));
            else piece.inputs.push_back(inputs[k]);  // broadcast along D (or a product's A): whole
        }
        for (const Region::Output& o : r.outputs) {
            const Node& n = *o.node;
            output(n, with_extent(n.shape, D, len), n.dtype, o.value,
                   static_cast<std::size_t>(first * inner(n.shape, D)) * dtype_size(n.dtype));
        }
        return piece;
    }
    // Partials: whole chunks as the columns of a kReduceChunk x q domain, the rest as one column
    // (rows: a rows x kReduceChunk x q domain, reduced along its middle, or rows x rest).
    const auto [first, end] = partial_range(p, index);
    const std::int64_t len = end - first;
    q.index_base = r.index_base + first * p.rows;  // the piece's elements are contiguous in the region's order
    // A piece of whole second-level blocks reduces each alone: its second-level partial.
    const std::int64_t fold = p.folded && end <= p.folded ? kSecondLevel : kReduceChunk;
    piece.chunks_each = fold / kReduceChunk;
    const bool whole_chunks = len % fold == 0;
    const std::int64_t chunk = whole_chunks ? fold : len, q_chunks = whole_chunks ? len / fold : 1;
    q.tail.clear();
    Shape partial_shape{1, q_chunks};
    if (p.rows == 1 && p.position) {
        // Whole positions: chunk x (chunks a position) x positions, reduced along the first; an
        // input with a value per position is broadcast along the first two.
        const std::int64_t per_position = p.position / kReduceChunk, positions = len / p.position;
        q.shape = Shape{kReduceChunk, per_position, positions};
        q.reduce_dim = 0;
        partial_shape = Shape{1, per_position, positions};
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            if (r.inputs[k]->shape.numel() == 1) piece.inputs.push_back(inputs[k]);
            else if (r.inputs[k]->shape == r.shape) window(k, q.shape);
            else window(k, Shape{1, 1, positions});
        }
    } else if (p.rows == 1) {
        q.shape = Shape{chunk, q_chunks};
        q.reduce_dim = 0;
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            if (r.inputs[k]->shape.numel() == 1) piece.inputs.push_back(inputs[k]);
            else window(k, q.shape);
        }
    } else {
        q.shape = Shape{p.rows, chunk, q_chunks};
        q.reduce_dim = 1;
        partial_shape = Shape{p.rows, 1, q_chunks};
        for (std::size_t k = 0; k < r.inputs.size(); ++k) {
            const Node& in = *r.inputs[k];
            const std::int64_t before = inner(in.shape, p.dim);
            if (in.shape[p.dim] == r.shape[p.dim]) {
                window(k, Shape{before, chunk, q_chunks});
            } else {  // broadcast along D: whole, as before x 1
                q.inputs[k] = make_input(nodes, in.dtype, Shape{before, 1}, inputs[k]);
                piece.inputs.push_back(inputs[k]);
            }
        }
    }
    for (std::size_t j = 0; j < r.reductions.size(); ++j) {
        Reduction& red = q.reductions[j];
        const Node& n = *r.outputs[j].node;
        DType t = q.program[red.value].dtype;
        if (sums_in_double(red.op) && t != DType::f64) {
            // The canonical order accumulates in double: the partials stay there.
            Instr cast{OpKind::Cast, DType::f64, DType::f64, {}, {static_cast<double>(DType::f64), 0, 0}};
            cast.args[0] = Arg{Arg::Kind::Value, red.value, 0.0, t};
            cast.compute = compute_dtype(OpKind::Cast, &t);
            red.value = static_cast<std::uint32_t>(q.program.size());
            q.program.push_back(cast);
        }
        output(n, partial_shape, partial_dtype(r, j), red.value, 0);
    }
    return piece;
}

StreamResults::StreamResults(const Region& r, const StreamPlan& p, const Allocate& allocate)
    : r_(r), p_(p), allocate_(allocate) {
    runs_ = p.partials && p.rows == 1 && reduce_chunks(p.extent) > kReduceChunk &&
            std::all_of(r.reductions.begin(), r.reductions.end(), [](const Reduction& red) { return sums_in_double(red.op); });
    if (runs_) {
        pieces_.resize(r.reductions.size());
    } else if (p.partials) {
        const std::int64_t chunks = reduce_chunks(p.extent);  // whole chunks, and one for the rest
        for (std::size_t j = 0; j < r.reductions.size(); ++j)
            results_.push_back(allocate(static_cast<std::size_t>(chunks * p.rows) * dtype_size(partial_dtype(r, j)),
                                        "streamed partials"));
    } else {
        for (const auto& o : r.outputs) results_.push_back(allocate(o.node->bytes(), o.node->label()));
    }
}

void StreamResults::add(const StreamPiece& piece) {
    const std::int64_t P = reduce_chunks(p_.extent), rows = p_.rows;
    std::int64_t q = 0;
    for (std::size_t j = 0; j < piece.outputs.size(); ++j) {
        const auto host = piece.outputs[j]->host();
        if (!host) throw Error("streaming: a piece's result did not come back (bug)");
        const auto* from = static_cast<const std::byte*>(host->data());
        if (runs_) {
            pieces_[j].push_back(host);
            q = static_cast<std::int64_t>(host->bytes() / sizeof(double)) * piece.chunks_each;
            continue;
        }
        if (piece.chunks_each != 1) throw Error("streaming: a folded piece outside a run of partials (bug)");
        auto* to = static_cast<std::byte*>(results_[j]->data());
        if (!p_.partials) {
            std::memcpy(to + piece.output_offsets[j], from, host->bytes());
            continue;
        }
        // The piece's rows x q partials (row i of chunk o at i + rows o) into place.
        const std::size_t es = dtype_size(partial_dtype(r_, j));
        q = static_cast<std::int64_t>(host->bytes() / es) / rows;
        if (rows == 1) {  // one run
            std::memcpy(to + static_cast<std::size_t>(chunks_) * es, from, host->bytes());
            continue;
        }
        for (std::int64_t o = 0; o < q; ++o)
            for (std::int64_t i = 0; i < rows; ++i)
                std::memcpy(to + static_cast<std::size_t>(chunks_ + o + P * i) * es,
                            from + static_cast<std::size_t>(i + rows * o) * es, es);
    }
    chunks_ += q;
    if (runs_) chunks_each_.push_back(piece.chunks_each);
}

std::vector<std::shared_ptr<Value>> StreamResults::finish(Backend& cpu, NodeTable& nodes) {
    std::vector<std::shared_ptr<Value>> outputs;
    if (!p_.partials) {
        for (std::size_t j = 0; j < r_.outputs.size(); ++j)
            outputs.push_back(std::make_shared<Value>(r_.outputs[j].node->bytes(), results_[j]));
        return outputs;
    }
    // The region that finishes it: its reductions of the partials along their first dimension
    // (the canonical order's later levels interleave), then its tail; its outputs are r's.
    std::int64_t P = reduce_chunks(p_.extent);
    if (chunks_ != P) throw Error("streaming: the pieces' partials do not add up (bug)");
    // Sums and products: the canonical order's later levels down to one chunk a row here, in a
    // plain loop (the region below, an interpreted cast and reduction, takes ~3 ns a partial:
    // 0.3 ms for W1's 100M elements); the region folds the last chunk and runs the tail.
    const bool all_double = std::all_of(r_.reductions.begin(), r_.reductions.end(),
                                        [](const Reduction& red) { return sums_in_double(red.op); });
    if (runs_) {
        // The first of the later levels straight from the pieces' partials (a chunk that
        // straddles two pieces gathered first), into a small array.
        const std::int64_t next = reduce_chunks(P);
        for (std::size_t j = 0; j < r_.reductions.size(); ++j) {
            results_.push_back(allocate_(static_cast<std::size_t>(next) * sizeof(double), "split partials"));
            auto* out = static_cast<double*>(results_[j]->data());
            const bool sum = r_.reductions[j].op == OpKind::Sum;
            std::vector<const double*> run;
            std::vector<std::int64_t> start;  // each piece's first partial, in first-level chunks
            std::int64_t at = 0;
            for (std::size_t i = 0; i < pieces_[j].size(); ++i) {
                const auto& h = pieces_[j][i];
                run.push_back(static_cast<const double*>(h->data()));
                start.push_back(at);
                at += static_cast<std::int64_t>(h->bytes() / sizeof(double)) * chunks_each_[i];
            }
            start.push_back(at);
            // Chunks of this level fold apart (each its own value: the same bits in any order),
            // on several cores when there are many: the partials just came down, and one core
            // read W2's 1 MB of them from memory in 0.11-0.125 ms on the H200 host.
            auto fold = [&](std::int64_t from, std::int64_t to) {
                double gathered[kReduceChunk];
                auto k = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), from * kReduceChunk) - start.begin()) - 1;
                for (std::int64_t c = from; c < to; ++c) {
                    const std::int64_t first = c * kReduceChunk, n = std::min(kReduceChunk, P - first);
                    while (start[k + 1] <= first) ++k;
                    if (chunks_each_[k] == kReduceChunk) {  // folded on its device (its blocks end on chunks of this level)
                        out[c] = run[k][(first - start[k]) / kReduceChunk];
                        continue;
                    }
                    if (first + n <= start[k + 1]) {
                        out[c] = fold_chunk(run[k] + (first - start[k]), n, sum);
                        continue;
                    }
                    for (std::int64_t i = 0, piece = static_cast<std::int64_t>(k); i < n; ++i) {
                        while (start[static_cast<std::size_t>(piece) + 1] <= first + i) ++piece;
                        gathered[i] = run[static_cast<std::size_t>(piece)][first + i - start[static_cast<std::size_t>(piece)]];
                    }
                    out[c] = fold_chunk(gathered, n, sum);
                }
            };
            constexpr std::int64_t kChunksATask = 16;  // 16K partials, 128 KB
            if (next <= kChunksATask) {
                fold(0, next);
            } else {
                tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, next, kChunksATask),
                                  [&](const tbb::blocked_range<std::int64_t>& b) { fold(b.begin(), b.end()); });
            }
        }
        P = next;
    }
    while (all_double && P > kReduceChunk) {
        const std::int64_t next = reduce_chunks(P);
        for (std::size_t j = 0; j < r_.reductions.size(); ++j) {
            auto* y = static_cast<double*>(results_[j]->data());  // row i at y + P i; folded in place
            const bool sum = r_.reductions[j].op == OpKind::Sum;
            for (std::int64_t i = 0; i < p_.rows; ++i)
                for (std::int64_t c = 0; c < next; ++c)
                    y[c + next * i] = fold_chunk(y + P * i + c * kReduceChunk, std::min(kReduceChunk, P - c * kReduceChunk), sum);
        }
        P = next;
    }
    // The last chunk folds here too, into the reductions' results in their type, and the tail
    // runs on those alone (a region of the partials on the CPU executor, its inputs made nodes
    // first, cost 0.04-0.16 ms on this VM, ~0.3 ms on the H200 host, for a fold of microseconds).
    const std::size_t nred = r_.reductions.size();
    const bool plain = std::all_of(r_.outputs.begin(), r_.outputs.begin() + static_cast<std::ptrdiff_t>(nred),
                                   [](const Region::Output& o) { return o.node->dtype == DType::f64 || o.node->dtype == DType::f32; });
    if (all_double && plain && (r_.tail.empty() ? r_.outputs.size() == nred : r_.outputs.size() > nred)) {
        for (std::size_t j = 0; j < nred; ++j) {
            const Node& n = *r_.outputs[j].node;
            const auto* y = static_cast<const double*>(results_[j]->data());
            auto storage = allocate_(n.bytes(), n.label());
            const bool sum = r_.reductions[j].op == OpKind::Sum;
            for (std::int64_t i = 0; i < p_.rows; ++i) {
                const double v = fold_chunk(y + P * i, P, sum);
                if (n.dtype == DType::f64) static_cast<double*>(storage->data())[i] = v;
                else static_cast<float*>(storage->data())[i] = static_cast<float>(v);
            }
            outputs.push_back(std::make_shared<Value>(n.bytes(), std::move(storage)));
        }
        if (r_.tail.empty()) return outputs;
        const Region tail = r_.tail_region();
        std::vector<std::shared_ptr<Value>> tail_outputs;
        for (const auto& o : tail.outputs) tail_outputs.push_back(std::make_shared<Value>(o.node->bytes()));
        std::exception_ptr e;
        cpu.submit({&tail, outputs, tail_outputs, {}, [&](std::exception_ptr x) { e = x; }, {}});
        if (e) std::rethrow_exception(e);
        outputs.insert(outputs.end(), tail_outputs.begin(), tail_outputs.end());
        return outputs;
    }
    Region c;
    c.kind = RegionKind::reduce;
    c.shape = Shape{P, p_.rows};
    c.reduce_dim = 0;
    std::vector<std::shared_ptr<Value>> values;
    for (std::size_t j = 0; j < r_.reductions.size(); ++j) {
        DType t = partial_dtype(r_, j);
        const std::size_t bytes = static_cast<std::size_t>(P * p_.rows) * dtype_size(t);  // (folded: the front)
        c.inputs.push_back(make_input(nodes, t, c.shape,
                                      bytes == results_[j]->bytes() ? results_[j] : Storage::view(results_[j], 0, bytes)));
        values.push_back(state(*c.inputs.back()).eval.value);
        Instr load{OpKind::Cast, t, DType::f64, {}, {static_cast<double>(t), 0, 0}};
        load.args[0] = Arg{Arg::Kind::Input, static_cast<std::uint32_t>(j), 0.0, t};
        load.compute = compute_dtype(OpKind::Cast, &t);
        c.program.push_back(load);
        c.reductions.push_back({r_.reductions[j].op, static_cast<std::uint32_t>(j)});
    }
    c.tail = r_.tail;
    c.outputs = r_.outputs;
    for (std::size_t j = 0; j < r_.reductions.size(); ++j) c.outputs[j].value = static_cast<std::uint32_t>(j);
    c.cost = r_.cost;
    for (const auto& o : c.outputs) outputs.push_back(std::make_shared<Value>(o.node->bytes()));
    std::exception_ptr e;
    cpu.submit({&c, values, outputs, {}, [&](std::exception_ptr x) { e = x; }, {}});
    if (e) std::rethrow_exception(e);
    return outputs;
}

}  // namespace tandem::detail
