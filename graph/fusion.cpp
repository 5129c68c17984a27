#include "graph/fusion.hpp"

#include "graph/kernel_call.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <sstream>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace tandem::detail {

namespace {

/// A constant as an immediate of its own type (single rounds, logical is 0/1 unless NaN, whose
/// conversion the consuming op rejects).
double immediate(const Node& c) {
    double v = c.constant();
    if (c.dtype == DType::f32) return static_cast<double>(static_cast<float>(v));
    return v;
}

struct Group {
    Shape shape;
    std::vector<std::size_t> members;  // indices into pending, in topological order
    bool own = false;                  // a region of its own (matmul, view, scan, ...)
};

/// The elementwise chain a matrix product's GEMM applies as its epilogue: act(alpha * P + beta * C
/// + bias), matched in exactly that order, so the CPU (which applies it after the product, op by
/// op) gives the unfused chain's bits.
struct EpilogueChain {
    std::vector<std::size_t> nodes;  // positions in pending after the product; the last is the result
    Region::Epilogue epilogue;
    std::shared_ptr<Node> c, bias;
};

bool is_scalar_constant(const Node& n) { return n.op == OpKind::Constant && n.shape.numel() == 1; }

/// The epilogue after the product at pending[i]: each link is the only reader of the one before,
/// not wanted, of the product's type and shape; C and the bias are computed before the product
/// (pos < i) or outside the plan, so folding them in cannot make a cycle.
template <class Pos>
EpilogueChain match_epilogue(const std::vector<Node*>& pending, std::size_t i, const Pos& pos, const std::vector<bool>& wanted,
                             const std::vector<int>& readers, const std::vector<std::size_t>& reader) {
    constexpr std::size_t kOutside = SIZE_MAX;
    EpilogueChain chain;
    const Node& product = *pending[i];
    const Shape& shape = product.shape;
    const DType t = product.dtype;
    auto before = [&](const Node& n) { return pos(&n) == kOutside || pos(&n) < i; };
    auto operand = [&](const Node& n) { return n.dtype == t && n.op != OpKind::Constant && before(n); };
    int stage = 0;  // 0: alpha may come, 1: C, 2: bias, 3: relu, 4: done
    std::size_t cur = i;
    while (stage < 4 && !wanted[cur] && readers[cur] == 1) {
        const std::size_t y = reader[cur];
        const Node& Y = *pending[y];
        if (Y.dtype != t || Y.shape != shape || Y.inputs.size() != 2) break;
        const bool first = Y.inputs[0].get() == pending[cur];
        if (first == (Y.inputs[1].get() == pending[cur])) break;  // reads the link twice (or not at all)
        const Node& other = *Y.inputs[first ? 1 : 0];
        if (Y.op == OpKind::Mul && stage == 0 && is_scalar_constant(other)) {
            chain.epilogue.alpha = immediate(other);
            stage = 1;
        } else if (Y.op == OpKind::Add && stage <= 1 && other.shape == shape) {
            const std::size_t z = pos(&other);
            const bool scaled = other.op == OpKind::Mul && z != kOutside && !wanted[z] && readers[z] == 1 && other.dtype == t &&
                                other.inputs.size() == 2 && (is_scalar_constant(*other.inputs[0]) != is_scalar_constant(*other.inputs[1]));
            if (scaled) {
                const bool t_first = is_scalar_constant(*other.inputs[0]);
                const Node& c = *other.inputs[t_first ? 1 : 0];
                // beta = 0 is left to the graph: a GEMM ignores C then (BLAS), 0 * NaN is NaN.
                if (c.shape != shape || !operand(c) || immediate(*other.inputs[t_first ? 0 : 1]) == 0.0) break;
                chain.epilogue.beta = immediate(*other.inputs[t_first ? 0 : 1]);
                chain.c = other.inputs[t_first ? 1 : 0];
                chain.nodes.push_back(z);
            } else {
                if (!operand(other)) break;
                chain.epilogue.beta = 1;
                chain.c = Y.inputs[first ? 1 : 0];
            }
            chain.epilogue.has_c = true;
            stage = 2;
        } else if (Y.op == OpKind::Add && stage <= 2 && operand(other) && other.shape != shape &&
                   (other.shape == Shape{shape[0], 1} || other.shape == Shape{1, shape[1]})) {
            chain.epilogue.bias = other.shape == Shape{shape[0], 1} ? Region::Epilogue::Bias::per_row
                                                                    : Region::Epilogue::Bias::per_column;
            chain.bias = Y.inputs[first ? 1 : 0];
            stage = 3;
        } else if (Y.op == OpKind::Max && is_scalar_constant(other) && immediate(other) == 0.0) {
            chain.epilogue.relu = true;
            chain.epilogue.zero_first = !first;
            stage = 4;
        } else {
            break;
        }
        chain.nodes.push_back(y);
        cur = y;
    }
    return chain;
}

/// What a region over `shape` reads when it reads `r`: a remap (circshift, flip, a range,
/// repmat) not yet computed is followed to its input, its index map folded into the read, and so
/// on down a chain of remaps while each one composes with the maps so far (a remap's positions
/// mod its input's extent n compose with a map into it when that map never wraps, or when the
/// remap keeps the extent). `views` empty: read `r` itself.
struct FoldedRead {
    std::shared_ptr<Node> source;
    std::vector<AxisMap> views;
};
template <class Pos>
FoldedRead fold_remaps(const std::shared_ptr<Node>& r, const Shape& shape, const Pos& pos) {
    constexpr std::size_t kOutside = SIZE_MAX;
    FoldedRead f{r, {}};
    const int nd = std::max(shape.ndims(), r->shape.ndims());
    std::vector<AxisMap> maps(static_cast<std::size_t>(nd));
    for (int d = 0; d < nd; ++d)
        if (r->shape[d] != shape[d]) maps[static_cast<std::size_t>(d)] = {0, 0};  // expanded: position 0
    bool folded = false;
    while (f.source->op == OpKind::Remap && pos(f.source.get()) != kOutside) {
        const Node& remap = *f.source;
        const int d = static_cast<int>(remap.attr[0]);
        const auto a = static_cast<std::int64_t>(remap.attr[1]), b = static_cast<std::int64_t>(remap.attr[2]);
        const std::shared_ptr<Node>& in = remap.inputs[0];
        const std::int64_t n = in->shape[d], E = remap.shape[d], K = shape[d];
        if (d >= nd || n == 0) break;
        AxisMap& m = maps[static_cast<std::size_t>(d)];
        const std::int64_t last = m.step * (K - 1);
        const std::int64_t lo = m.offset + std::min<std::int64_t>(0, last), hi = m.offset + std::max<std::int64_t>(0, last);
        if (!(lo >= 0 && hi < E) && E != n) break;  // the map wraps at E: mod E then mod n do not compose
        // Normalised, so that the next remap's wrap check above sees the positions it reads.
        m = lowest_in_period({a * m.step, a * m.offset + b}, K, n);
        f.source = in;
        folded = true;
    }
    if (!folded) return f;
    const Shape& src = f.source->shape;
    bool identity = true;
    for (int d = 0; d < nd; ++d) {
        const AxisMap& m = maps[static_cast<std::size_t>(d)];
        const std::int64_t n = src[d];
        identity &= n == 1 || (shape[d] == n && m.step == 1 && m.offset == 0);
    }
    if (!identity) f.views = std::move(maps);
    return f;
}

/// The nodes of group h that computing pending[k] again needs (k's backward slice within h),
/// if it is cheap: at most kMaxRecomputed elementwise ops, none random, and at most
/// `transcendentals` transcendental ones (one costs about as much as the memory traffic saved on
/// a CPU; it pays only where it spares writing the value at all). Empty: not worth it.
template <class Pos>
std::vector<std::size_t> recompute_slice(const std::vector<Node*>& pending, std::size_t k, std::size_t h,
                                         const std::vector<std::size_t>& group_of, const Pos& pos, int transcendentals) {
    constexpr std::size_t kMaxRecomputed = 4;
    std::vector<std::size_t> slice, stack{k};
    while (!stack.empty()) {
        const std::size_t m = stack.back();
        stack.pop_back();
        if (std::find(slice.begin(), slice.end(), m) != slice.end()) continue;
        const Node& n = *pending[m];
        const OpInfo& info = op_info(n.op);
        if (!is_elementwise(n.op) || info.group == OpGroup::Generator || slice.size() == kMaxRecomputed ||
            (is_transcendental(n.op) && transcendentals-- == 0))
            return {};
        slice.push_back(m);
        for (auto& in : n.inputs)
            if (std::size_t q = pos(in.get()); q != SIZE_MAX && group_of[q] == h) stack.push_back(q);
    }
    return slice;
}

/// Drops the instructions no output or reduction needs (a value that a reduction now recomputes
/// for itself is computed by its own group for nothing), renumbering the rest.
void prune_dead_values(Region& r) {
    if (r.program.empty()) return;
    std::vector<bool> live(r.program.size(), false);
    for (const auto& o : r.outputs)
        if (o.value < live.size()) live[o.value] = true;
    for (const Reduction& red : r.reductions) live[red.value] = true;
    for (std::size_t i = r.program.size(); i-- > 0;) {
        if (!live[i]) continue;
        for (int k = 0; k < op_info(r.program[i].op).arity; ++k)
            if (const Arg& a = r.program[i].args[static_cast<std::size_t>(k)]; a.kind == Arg::Kind::Value) live[a.index] = true;
    }
    if (std::all_of(live.begin(), live.end(), [](bool b) { return b; })) return;
    std::vector<std::uint32_t> index(r.program.size(), UINT32_MAX);
    std::vector<Instr> kept;
    for (std::size_t i = 0; i < r.program.size(); ++i) {
        if (!live[i]) continue;
        Instr ins = r.program[i];
        for (auto& a : ins.args)
            if (a.kind == Arg::Kind::Value) a.index = index[a.index];
        index[i] = static_cast<std::uint32_t>(kept.size());
        kept.push_back(ins);
    }
    r.program = std::move(kept);
    for (auto& o : r.outputs) o.value = index[o.value];
    for (Reduction& red : r.reductions) red.value = index[red.value];
}

/// The groups' dependencies (a group reads values of its deps), with a level per group kept
/// topological as edges arrive (level[g] > level[d] for every dep d: raising a group raises its
/// dependents), so that asking whether a node's reads depend on a group `to` walks only groups
/// above `to`'s level. Without the bound a node that may join the newest group proved it by
/// walking all of its reads' ancestry: quadratic in a loop's length (a 100-step stencil, a new
/// group each step). One walk per node serves all the groups it tries (begin, reached).
class GroupGraph {
public:
    std::size_t add() {
        deps_.emplace_back();
        dependents_.emplace_back();
        level_.push_back(0);
        seen_.push_back(0);
        return deps_.size() - 1;
    }
    void depend(std::size_t g, std::size_t d) {
        // A group reads few others: a short vector (searched) walks faster than a set's nodes.
        std::vector<std::size_t>& deps = deps_[g];
        if (std::find(deps.begin(), deps.end(), d) != deps.end()) return;
        deps.push_back(d);
        dependents_[d].push_back(g);
        if (level_[g] > level_[d]) return;
        level_[g] = level_[d] + 1;
        stack_.assign(1, g);
        while (!stack_.empty()) {  // the dependents of a raised group rise above it
            const std::size_t x = stack_.back();
            stack_.pop_back();
            for (std::size_t y : dependents_[x])
                if (level_[y] <= level_[x]) {
                    level_[y] = level_[x] + 1;
                    stack_.push_back(y);
                }
        }
    }
    const std::vector<std::size_t>& deps(std::size_t g) const { return deps_[g]; }
    /// Starts a query for a node that reads `reads`: which groups some read reaches by a path of
    /// at least one edge (a node may join such a group only if it is not reached: joining it would
    /// make a cycle). One walk serves every candidate the node tries, newest first: groups at or
    /// below the lowest candidate level asked so far wait, unexpanded, until an older candidate
    /// needs them (a path to a group runs through groups above its level only).
    void begin(std::span<const std::size_t> reads) {
        ++walk_;
        stack_.clear();
        deferred_.clear();
        bound_ = UINT64_MAX;
        for (std::size_t q : reads)
            for (std::size_t d : deps_[q]) mark(d);
    }
    /// Whether a read of the query reaches `to`.
    bool reached(std::size_t to) {
        if (level_[to] < bound_) {
            bound_ = level_[to];
            std::size_t kept = 0;
            for (std::size_t x : deferred_) {
                if (level_[x] > bound_) stack_.push_back(x);
                else deferred_[kept++] = x;
            }
            deferred_.resize(kept);
        }
        while (!stack_.empty()) {
            const std::size_t x = stack_.back();
            stack_.pop_back();
            if (level_[x] <= bound_) {
                deferred_.push_back(x);
                continue;
            }
            for (std::size_t d : deps_[x]) mark(d);
        }
        return seen_[to] == walk_;
    }

private:
    void mark(std::size_t g) {
        if (seen_[g] == walk_) return;
        seen_[g] = walk_;
        stack_.push_back(g);
    }
    std::vector<std::vector<std::size_t>> deps_, dependents_;
    std::vector<std::uint64_t> level_, seen_;
    std::vector<std::size_t> stack_, deferred_;
    std::uint64_t walk_ = 0, bound_ = 0;
};

/// The selection of a Gather or Scatter node (see Region::IndexExtents); for Find, the positions.
Region::IndexExtents index_extents_of(const Node& n) {
    const Shape& a = n.inputs[0]->shape;
    if (n.op == OpKind::Find) return {1, n.shape.numel(), 1, a.numel()};
    const std::int64_t count = n.inputs[1]->shape.numel();
    const int d = static_cast<int>(n.attr[0]);
    if (d < 0) return {1, count, 1, a.numel()};
    std::int64_t inner = 1, outer = 1;
    for (int q = 0; q < d; ++q) inner *= a[q];
    for (int q = d + 1; q < a.ndims(); ++q) outer *= a[q];
    return {inner, count, outer, a[d]};
}

/// An instruction whose data may make it fail (a NaN converted to logical: an operand of a
/// logical op, a where's condition, logical() of a number): a region holding one may need
/// Region::slice to find which outputs failed.
bool fails_on_data(const Instr& ins) {
    const bool to_logical = op_info(ins.op).rule == TypeRule::Logical || (ins.op == OpKind::Cast && ins.dtype == DType::logical);
    const int converted = ins.op == OpKind::Where ? 1 : to_logical ? op_info(ins.op).arity : 0;
    for (int k = 0; k < converted; ++k)
        if (ins.args[static_cast<std::size_t>(k)].dtype != DType::logical) return true;
    return false;
}

/// Tails: an elementwise region over a reduce region's result shape that reads nothing but that
/// region's reductions (mean's division by n, norm's square root, sigma + 1e-6) runs as the reduce
/// region's tail (Region::tail), once per result, instead of as a region of its own: a dispatch and
/// a region's host work fewer, on latency-bound small programs. Regions are in topological order
/// and the tail reads only the reduce region's results, so it may move there.
void fold_tails(std::vector<Region>& regions) {
    std::unordered_map<const Node*, std::pair<std::size_t, std::uint32_t>> produced;  // node -> (region, reduction)
    std::vector<bool> folded(regions.size(), false);
    auto plain_elementwise = [](const Region& e) {
        return e.kind == RegionKind::elementwise && e.input_views.empty() &&
               !e.program.empty() && !e.outputs.empty() && !e.inputs.empty();
    };
    for (std::size_t g = 0; g < regions.size(); ++g) {
        Region& e = regions[g];
        if (e.is_reduce()) {
            if (std::none_of(e.program.begin(), e.program.end(), fails_on_data))
                for (std::uint32_t j = 0; j < e.reductions.size(); ++j) produced[e.outputs[j].node.get()] = {g, j};
            continue;
        }
        if (!plain_elementwise(e)) continue;
        auto first = produced.find(e.inputs.front().get());
        if (first == produced.end()) continue;
        const std::size_t r = first->second.first;
        Region& red = regions[r];
        bool ok = e.shape == red.outputs.front().node->shape;
        for (const auto& in : e.inputs) {
            auto it = produced.find(in.get());
            ok &= it != produced.end() && it->second.first == r;
        }
        for (const Instr& ins : e.program) ok &= !fails_on_data(ins) && op_info(ins.op).group != OpGroup::Generator;
        if (!ok) continue;
        const auto offset = static_cast<std::uint32_t>(red.tail.size());
        for (Instr ins : e.program) {
            for (int k = 0; k < op_info(ins.op).arity; ++k) {
                Arg& a = ins.args[static_cast<std::size_t>(k)];
                if (a.kind == Arg::Kind::Value) a.index += offset;
                else if (a.kind == Arg::Kind::Input) a.index = produced.at(e.inputs[a.index].get()).second;
            }
            red.tail.push_back(ins);
        }
        for (const Region::Output& o : e.outputs) red.outputs.push_back({o.value + offset, o.node});
        folded[g] = true;
    }
    std::size_t kept = 0;
    for (std::size_t g = 0; g < regions.size(); ++g)
        if (!folded[g]) {
            if (kept != g) regions[kept] = std::move(regions[g]);
            ++kept;
        }
    regions.resize(kept);
}

/// The iteration domain of a kernel region: its range, as a shape of at least two dimensions.
Shape kernel_shape(const KernelCall& call) {
    if (call.range_dims == 3) return Shape{call.range[0], call.range[1], call.range[2]};
    return Shape{call.range[0], call.range[1]};
}

}  // namespace

std::vector<Region> fuse(const std::vector<Node*>& pending, const std::vector<Node*>& targets, std::uint64_t mark,
                         const FusionOptions& options) {
    constexpr std::size_t kFolded = SIZE_MAX;
    constexpr std::size_t kOutside = SIZE_MAX;
    // Position of a node in `pending`, or kOutside (computed or in flight already).
    auto pos = [&](const Node* n) { return n->pass_mark == mark ? n->pass_index : kOutside; };
    std::vector<bool> wanted(pending.size(), false);
    for (Node* t : targets)
        if (pos(t) != kOutside) wanted[pos(t)] = true;
    // A matrix product (or a view) reads materialised operands: a constant one is computed, not folded.
    for (std::size_t i = 0; i < pending.size(); ++i)
        if (own_region(pending[i]->op))
            for (auto& in : pending[i]->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside && in->op == OpKind::Constant) wanted[k] = true;

    // Elementwise chains after a matrix product that its GEMM applies as an epilogue: they join
    // the product's region (chain_of[node] = the product's position).
    std::vector<EpilogueChain> chains;
    std::vector<std::size_t> chain_of(pending.size(), kOutside), chain_index(pending.size(), kOutside);
    // (Only plans with a product pay for the reader counts: planning is on the latency path.)
    const bool has_product =
        options.fuse && std::any_of(pending.begin(), pending.end(), [](const Node* n) { return n->op == OpKind::MatMul; });
    if (has_product) {
        std::vector<int> readers(pending.size(), 0);
        std::vector<std::size_t> reader(pending.size(), kOutside);
        for (std::size_t i = 0; i < pending.size(); ++i)
            for (auto& in : pending[i]->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside) {
                    ++readers[k];
                    reader[k] = i;
                }
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (pending[i]->op != OpKind::MatMul) continue;
            EpilogueChain c = match_epilogue(pending, i, pos, wanted, readers, reader);
            if (c.nodes.empty()) continue;
            for (std::size_t k : c.nodes) chain_of[k] = i;
            chain_index[i] = chains.size();
            chains.push_back(std::move(c));
        }
    }

    std::vector<std::size_t> group_of(pending.size(), kFolded);
    std::vector<Group> groups;
    // Groups by shape. Most plans have few distinct shapes, and a short list beats a map; a plan
    // of many (independent chains over arrays of their own sizes) gets an index by hash, or its
    // lookups grow with the number of shapes (quadratic: 1.5 us a node at 1000 shapes).
    std::vector<std::pair<const Shape*, std::vector<std::size_t>>> by_shape;
    constexpr std::size_t kListedShapes = 16;
    std::unordered_multimap<std::size_t, std::size_t> shape_index;  // hash -> position in by_shape
    auto shape_hash = [](const Shape& s) {
        std::size_t h = static_cast<std::size_t>(s.ndims());
        for (int d = 0; d < s.ndims(); ++d) h = h * 0x9e3779b97f4a7c15ull ^ static_cast<std::size_t>(s[d]);
        return h;
    };
    auto groups_of_shape = [&](const Shape& shape) -> std::vector<std::size_t>& {
        if (by_shape.size() < kListedShapes) {
            for (auto& [s, gs] : by_shape)
                if (*s == shape) return gs;
            if (by_shape.size() + 1 == kListedShapes)  // the next lookup uses the index
                for (std::size_t k = 0; k < by_shape.size(); ++k) shape_index.emplace(shape_hash(*by_shape[k].first), k);
        } else {
            const std::size_t h = shape_hash(shape);
            for (auto [it, end] = shape_index.equal_range(h); it != end; ++it)
                if (*by_shape[it->second].first == shape) return by_shape[it->second].second;
        }
        if (by_shape.size() + 1 >= kListedShapes) shape_index.emplace(shape_hash(shape), by_shape.size());
        return by_shape.emplace_back(&shape, std::vector<std::size_t>{}).second;
    };

    GroupGraph graph;  // groups[g]'s dependencies
    // The group of the reductions of a value along a dimension (see below).
    struct ReductionKey {
        const Node* value;
        double dim;
        bool operator==(const ReductionKey&) const = default;
    };
    struct ReductionKeyHash {
        std::size_t operator()(const ReductionKey& k) const noexcept {
            return std::hash<const void*>()(k.value) * 31 + std::hash<double>()(k.dim);
        }
    };
    std::unordered_map<ReductionKey, std::size_t, ReductionKeyHash> sibling_reductions;
    std::unordered_map<const KernelCall*, std::size_t> kernel_groups;  // a command group's region
    for (std::size_t i = 0; i < pending.size(); ++i) {
        const Node* n = pending[i];
        // Constants become immediates of their consumers; only a wanted constant is computed.
        if (n->op == OpKind::Constant && !wanted[i]) continue;
        if (chain_of[i] != kOutside) {
            // A link of a product's epilogue: computed by the product's region.
            const std::size_t g = group_of[chain_of[i]];
            group_of[i] = g;
            for (auto& in : n->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside && group_of[k] != kFolded && group_of[k] != g) graph.depend(g, group_of[k]);
            continue;
        }
        if (n->op == OpKind::Kernel) {
            // A command group's outputs (its written versions, its token): one region, over its range.
            auto [it, fresh] = kernel_groups.try_emplace(n->call.get(), groups.size());
            if (!fresh) {  // (its operands are the first output's: the group depends on them already)
                group_of[i] = it->second;
                groups[it->second].members.push_back(i);
                continue;
            }
        }
        if (own_region(n->op)) {
            // A region of its own, over the result's shape (a kernel's: over its range).
            const std::size_t g = groups.size();
            groups.push_back({n->op == OpKind::Kernel ? kernel_shape(*n->call) : n->shape, {i}, true});
            graph.add();
            group_of[i] = g;
            for (auto& in : n->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside && group_of[k] != kFolded) graph.depend(g, group_of[k]);
            continue;
        }
        if (is_reduction(n->op)) {
            const std::size_t k = pos(n->inputs[0].get());
            // Reductions of one value along one dimension that no elementwise group produces (an
            // input of the plan, a product's or another reduction's result) share a group: one
            // region reads the value once for all of them (a batch's sum and max: one pass, and
            // one place to run it). One an elementwise group produces may join that group below.
            const bool produced_elsewhere = k == kOutside || group_of[k] == kFolded || groups[group_of[k]].own ||
                                            is_reduction(pending[k]->op);
            if (options.fuse && produced_elsewhere) {
                auto [it, fresh] = sibling_reductions.try_emplace({n->inputs[0].get(), n->attr[0]}, groups.size());
                if (!fresh) {
                    group_of[i] = it->second;
                    groups[it->second].members.push_back(i);
                    continue;
                }
            }
            // A group of its own over its input's shape; it may join its producer's group below.
            const std::size_t g = groups.size();
            groups.push_back({n->inputs[0]->shape, {i}, false});
            graph.add();
            group_of[i] = g;
            if (k != kOutside && group_of[k] != kFolded) graph.depend(g, group_of[k]);
            continue;
        }
        // The groups this node reads (no allocation: planning a long chain is on the latency path).
        std::array<std::size_t, 3> read_buf{};
        std::size_t nreads = 0;
        for (auto& in : n->inputs) {
            std::size_t k = pos(in.get());
            if (k != kOutside && group_of[k] != kFolded) read_buf[nreads++] = group_of[k];
        }
        const std::span<const std::size_t> reads(read_buf.data(), nreads);
        std::size_t chosen = kFolded;
        if (options.fuse) {
            auto& same_shape = groups_of_shape(n->shape);  // elementwise groups only
            // The most recent groups only: a node joins one of the last few (a chain's own group,
            // or a sibling's); trying every older one, each with a walk of the group graph, made
            // planning cubic in a loop's length (an iterative solver of 400 small steps took 3 s).
            constexpr std::size_t kCandidates = 8;
            std::size_t tried = 0;
            graph.begin(reads);
            for (auto g = same_shape.rbegin(); g != same_shape.rend() && chosen == kFolded && tried < kCandidates; ++g, ++tried)
                if (!graph.reached(*g)) chosen = *g;
        }
        if (chosen == kFolded) {
            chosen = groups.size();
            groups.push_back({n->shape, {}, false});
            graph.add();
            groups_of_shape(n->shape).push_back(chosen);
        }
        group_of[i] = chosen;
        groups[chosen].members.push_back(i);
        for (std::size_t q : reads)
            if (q != chosen) graph.depend(chosen, q);
    }

    // Recomputation: an elementwise group that reads a cheap value of another elementwise group
    // of its shape computes it again from that value's own operands (the value's slice within
    // its group), instead of the other region writing it and this one reading it back: a few
    // arithmetic ops cost less than two passes over memory. `imgs - mu` read both by a
    // reduction (its variance) and by the elementwise chain after it is the case in point:
    // recomputed by the chain, it is no longer written, and its square folds into the reduction.
    // A reduction recomputes its input the same way when the input's group is a region anyway
    // (one of its values is wanted or read by something other than a reduction): Xc = X - mu read
    // by a product and by var's sum of Xc.^2 writes Xc only, and the sum squares it as it reads.
    std::vector<std::unordered_set<std::size_t>> recomputed(groups.size());  // slice nodes per group
    // f(k) for each value a recomputed slice reads that is not recomputed with it: the
    // recomputing group reads it (from another group: a slice never reads its reader's group).
    auto for_each_slice_operand = [&](auto&& f) {
        for (std::size_t g = 0; g < groups.size(); ++g)
            for (std::size_t m : recomputed[g])
                for (auto& in : pending[m]->inputs)
                    if (std::size_t k = pos(in.get()); k != kOutside && group_of[k] != kFolded && !recomputed[g].count(k)) f(k);
    };
    if (options.fuse) {
        // A value that is not wanted and is read only by reductions and by elementwise groups of
        // its own shape need never be written when those groups recompute it: its slice may then
        // hold one transcendental op. Softmax's e = exp(x - max(x)) read by sum(e) and by e ./
        // sum(e): the last region recomputes e, the sum folds into e's region, and no array of
        // x's size is written between the reductions (3 passes over x instead of 5 and a write).
        std::vector<bool> spared(pending.size(), true);
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (group_of[i] == kFolded) continue;
            if (wanted[i]) spared[i] = false;
            if (is_reduction(pending[i]->op)) continue;
            const std::size_t g = group_of[i];
            for (auto& in : pending[i]->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside && group_of[k] != kFolded && group_of[k] != g &&
                                                   (groups[g].own || chain_of[i] != kOutside || groups[g].shape != groups[group_of[k]].shape))
                    spared[k] = false;
        }
        // Each read of a value of another group of the same shape: the slice to recompute, if any.
        auto recompute_reads = [&](bool reductions, const std::vector<bool>* written_anyway) {
            for (std::size_t i = 0; i < pending.size(); ++i) {
                const std::size_t g = group_of[i];
                if (g == kFolded || groups[g].own || chain_of[i] != kOutside || is_reduction(pending[i]->op) != reductions) continue;
                for (auto& in : pending[i]->inputs) {
                    const std::size_t k = pos(in.get());
                    if (k == kOutside || group_of[k] == kFolded || group_of[k] == g || recomputed[g].count(k)) continue;
                    const std::size_t h = group_of[k];
                    if (groups[h].own || groups[h].shape != groups[g].shape || is_reduction(pending[k]->op) || chain_of[k] != kOutside)
                        continue;
                    if (written_anyway && !(*written_anyway)[h]) continue;  // it folds into its producer's region instead
                    std::vector<std::size_t> slice = recompute_slice(pending, k, h, group_of, pos, !reductions && spared[k] ? 1 : 0);
                    if (!slice.empty()) recomputed[g].insert(slice.begin(), slice.end());
                }
            }
        };
        recompute_reads(false, nullptr);
        // A group is written anyway when one of its values is wanted or read (not recomputed) by
        // something other than a reduction.
        std::vector<bool> written_anyway(groups.size(), false);
        for (std::size_t i = 0; i < pending.size(); ++i) {
            const std::size_t g = group_of[i];
            if (g == kFolded) continue;
            if (wanted[i]) written_anyway[g] = true;
            if (is_reduction(pending[i]->op)) continue;
            for (auto& in : pending[i]->inputs)
                if (std::size_t k = pos(in.get()); k != kOutside && group_of[k] != kFolded && group_of[k] != g && !recomputed[g].count(k))
                    written_anyway[group_of[k]] = true;
        }
        for_each_slice_operand([&](std::size_t k) { written_anyway[group_of[k]] = true; });
        recompute_reads(true, &written_anyway);
    }
    // What group g reads of node k: nothing when it recomputes k; else k's value.
    auto reads_value = [&](std::size_t g, std::size_t k) { return !recomputed[g].count(k); };

    // A value leaves its region when it is wanted or read by another region (a recomputed
    // slice's operands are read by the region that recomputes it).
    std::vector<bool> is_output(pending.size(), false);
    for (std::size_t i = 0; i < pending.size(); ++i) {
        if (group_of[i] == kFolded) continue;
        if (wanted[i]) is_output[i] = true;
        for (auto& in : pending[i]->inputs) {
            std::size_t k = pos(in.get());
            if (k != kOutside && group_of[k] != kFolded && group_of[k] != group_of[i] && reads_value(group_of[i], k))
                is_output[k] = true;
        }
    }
    for_each_slice_operand([&](std::size_t k) { is_output[k] = true; });

    // An elementwise group whose every output is read only by reductions along one dimension
    // (and is not wanted) becomes their producer: one region reads the inputs once, reduces, and
    // writes no temporary. Otherwise each reduction reads its input materialised.
    std::vector<std::size_t> merged_into(groups.size(), kFolded);
    std::vector<std::vector<std::size_t>> absorbed(groups.size());  // reduce groups merged into each
    if (options.fuse) {
        std::vector<int> reduce_readers(pending.size(), 0), other_readers(pending.size(), 0);
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (group_of[i] == kFolded) continue;
            for (auto& in : pending[i]->inputs) {
                std::size_t k = pos(in.get());
                if (k == kOutside || group_of[k] == kFolded || group_of[k] == group_of[i] || !reads_value(group_of[i], k)) continue;
                (is_reduction(pending[i]->op) ? reduce_readers : other_readers)[k]++;
            }
        }
        for_each_slice_operand([&](std::size_t k) { other_readers[k]++; });
        std::vector<double> dim_of(groups.size(), 0.0);
        std::vector<bool> blocked(groups.size(), false), has_dim(groups.size(), false);
        // A producer drawing several random arrays stays a region of its own: an elementwise
        // kernel draws a Philox block per vector (4 singles, 2 doubles; a normal pair shares its
        // log), a reduce kernel one per element, which costs more than writing the producer's
        // value and reading it back (a Monte Carlo loop draws one array per step).
        std::vector<int> generators(groups.size(), 0);
        for (std::size_t i = 0; i < pending.size(); ++i)
            if (group_of[i] != kFolded && (pending[i]->op == OpKind::RandN || pending[i]->op == OpKind::RandU) &&
                ++generators[group_of[i]] >= 2)
                blocked[group_of[i]] = true;
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (group_of[i] == kFolded || !is_output[i]) continue;
            const std::size_t g = group_of[i];
            if (is_reduction(pending[i]->op)) continue;
            if (wanted[i] || other_readers[i] > 0 || reduce_readers[i] == 0) blocked[g] = true;
        }
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (group_of[i] == kFolded || !is_reduction(pending[i]->op)) continue;
            const std::size_t k = pos(pending[i]->inputs[0].get());
            if (k == kOutside || group_of[k] == kFolded) continue;
            const std::size_t g = group_of[k];
            if (is_reduction(pending[k]->op) || own_region(pending[k]->op) || groups[group_of[k]].own)
                continue;  // its own region
            const double dim = pending[i]->attr[0];
            if (has_dim[g] && dim_of[g] != dim) blocked[g] = true;
            has_dim[g] = true;
            dim_of[g] = dim;
        }
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (group_of[i] == kFolded || !is_reduction(pending[i]->op)) continue;
            const std::size_t k = pos(pending[i]->inputs[0].get());
            if (k == kOutside || group_of[k] == kFolded || is_reduction(pending[k]->op) ||
                own_region(pending[k]->op) || groups[group_of[k]].own)
                continue;
            if (!blocked[group_of[k]]) {
                merged_into[group_of[i]] = group_of[k];
                absorbed[group_of[k]].push_back(group_of[i]);
            }
        }
        // The producer's values now stay inside: they are outputs no more.
        for (std::size_t i = 0; i < pending.size(); ++i)
            if (group_of[i] != kFolded && !absorbed[group_of[i]].empty() && !is_reduction(pending[i]->op))
                is_output[i] = false;
    }

    // Remaps read only by elementwise ops and reductions are folded into those reads (their
    // regions read the remap's input through an index map) and computed for nothing else: a
    // stencil of circshifts is one pass over its grid, not one per shifted copy. A remap is still
    // computed when it is wanted, read by a region of its own kind (a product, another remap it
    // does not compose with, ...) or ends a chain that a read cannot fold further.
    std::vector<bool> remap_needed(pending.size(), false);
    auto pending_remap = [&](const Node* n) { return n->op == OpKind::Remap && pos(n) != kOutside; };
    for (std::size_t i = pending.size(); i-- > 0;) {
        const Node* x = pending[i];
        if (group_of[i] == kFolded) continue;
        if (x->op == OpKind::Remap) {
            remap_needed[i] = remap_needed[i] || wanted[i] || !options.fuse;
            if (!remap_needed[i]) continue;  // not computed: its readers read through it
        }
        const bool folds = options.fuse && !own_region(x->op) && chain_of[i] == kOutside;
        const Shape& domain = is_reduction(x->op) ? x->inputs[0]->shape : x->shape;
        for (auto& in : x->inputs) {
            if (!pending_remap(in.get())) continue;
            const Node* end = folds ? fold_remaps(in, domain, pos).source.get() : in.get();
            if (pending_remap(end)) remap_needed[pos(end)] = true;
        }
    }

    // The regions in the groups' order, each moved after the groups it reads where a node joined
    // an older group and made it read a newer one (W5's last region, v'*G*v / sum(var(X)), came
    // before var(X)'s sum of squares): the plan is in topological order, as placement and the
    // scheduler take it, and otherwise as built (a loop's steps stay in their order).
    std::vector<std::size_t> order;
    order.reserve(groups.size());
    {
        auto region_of_group = [&](std::size_t g) { return merged_into[g] != kFolded ? merged_into[g] : g; };
        std::vector<std::uint8_t> state(groups.size(), 0);  // 1: being ordered, 2: ordered
        std::vector<std::pair<std::size_t, std::size_t>> stack;  // (group, next dependency to look at)
        for (std::size_t root = 0; root < groups.size(); ++root) {
            const std::size_t r0 = region_of_group(root);
            if (state[r0]) continue;
            state[r0] = 1;
            stack.assign(1, {r0, 0});
            while (!stack.empty()) {
                auto& [g, next] = stack.back();
                const std::vector<std::size_t>& deps = graph.deps(g);  // (an absorbed reduction reads only g)
                if (next < deps.size()) {
                    const std::size_t d = region_of_group(deps[next++]);
                    if (!state[d]) {
                        state[d] = 1;
                        stack.push_back({d, 0});
                    }
                    continue;
                }
                state[g] = 2;
                order.push_back(g);
                stack.pop_back();
            }
        }
    }

    std::vector<Region> regions;
    regions.reserve(groups.size());
    // Value index of a pending node within its own region.
    std::vector<std::uint32_t> value_of(pending.size(), UINT32_MAX);
    for (std::size_t gi : order) {
        const Group& g = groups[gi];
        if (merged_into[gi] != kFolded) continue;  // emitted with its producer
        if (g.own && pending[g.members.front()]->op == OpKind::Remap && !remap_needed[g.members.front()]) continue;
        Region r;
        r.shape = g.shape;
        // Inputs by (node, folded view): several remaps of one array are several reads of it.
        std::vector<std::pair<const Node*, std::vector<AxisMap>>> input_keys;
        std::unordered_map<std::size_t, std::uint32_t> clone_of;  // recomputed nodes: their value here
        std::unordered_map<const Node*, std::uint32_t> loaded;  // reductions' inputs loaded as they are: their value here
        // An elementwise node's instruction, its operands through `operand`.
        std::function<void(const std::shared_ptr<Node>&, Arg&)> operand;
        auto instruction = [&](const Node* n) {
            Instr ins{n->op, n->dtype, DType::f64, {}, n->attr};
            DType operand_types[3] = {DType::f64, DType::f64, DType::f64};
            for (std::size_t k = 0; k < n->inputs.size(); ++k) {
                operand_types[k] = n->inputs[k]->dtype;
                operand(n->inputs[k], ins.args[k]);
            }
            if (n->op == OpKind::Constant) ins.attr[0] = immediate(*n);
            if (const std::size_t at = pos(n); at != kOutside) ins.plan_position = static_cast<std::uint32_t>(at);
            ins.compute = n->inputs.empty() ? (n->dtype == DType::f32 ? DType::f32 : DType::f64)
                                            : compute_dtype(n->op, operand_types);
            return ins;
        };
        // An operand of an instruction of this region: a constant's immediate, a value of this
        // region (recomputed ones included), or a region input.
        operand = [&](const std::shared_ptr<Node>& read, Arg& a) {
            FoldedRead folded = options.fuse && pending_remap(read.get()) ? fold_remaps(read, r.shape, pos) : FoldedRead{read, {}};
            const std::shared_ptr<Node>& in_ptr = folded.source;
            const Node* in = in_ptr.get();
            a.dtype = in->dtype;
            if (in->op == OpKind::Constant) {
                a.kind = Arg::Kind::Scalar;
                a.scalar = immediate(*in);
            } else if (std::size_t at = pos(in); folded.views.empty() && at != kOutside && group_of[at] == gi) {
                a.kind = Arg::Kind::Value;
                a.index = value_of[at];
            } else if (folded.views.empty() && at != kOutside && recomputed[gi].count(at)) {
                auto it = clone_of.find(at);
                if (it == clone_of.end()) {
                    Instr ins = instruction(pending[at]);  // its operands first: SSA order
                    it = clone_of.emplace(at, static_cast<std::uint32_t>(r.program.size())).first;
                    r.program.push_back(ins);
                }
                a.kind = Arg::Kind::Value;
                a.index = it->second;
            } else {
                auto key = std::make_pair(in, std::move(folded.views));
                auto it = std::find(input_keys.begin(), input_keys.end(), key);
                if (it == input_keys.end()) {
                    if (!key.second.empty()) {
                        r.input_views.resize(r.inputs.size() + 1);
                        r.input_views.back() = key.second;
                    }
                    r.inputs.push_back(in_ptr);
                    it = input_keys.insert(input_keys.end(), std::move(key));
                }
                a.kind = Arg::Kind::Input;
                a.index = static_cast<std::uint32_t>(it - input_keys.begin());
            }
        };
        for (std::size_t m : g.members) {
            const Node* n = pending[m];
            if (n->op == OpKind::Gather || n->op == OpKind::Scatter || n->op == OpKind::Find) {
                r.kind = n->op == OpKind::Gather    ? RegionKind::gather
                         : n->op == OpKind::Scatter ? RegionKind::scatter
                                                    : RegionKind::find;
                r.inputs = n->inputs;
                r.index_extents = index_extents_of(*n);
                r.index_position = n->op == OpKind::Find || n->attr[0] < 0 ? 0 : static_cast<int>(n->attr[0]) + 1;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Kernel) {
                r.kind = RegionKind::kernel;
                r.call = n->call;
                r.inputs = n->inputs;  // (every output of a call has the same operands)
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Permute) {
                r.kind = RegionKind::permute;
                const auto packed = static_cast<std::uint64_t>(n->attr[0]);
                for (int d = 0; d < static_cast<int>(n->attr[1]); ++d) r.permutation.push_back(static_cast<int>((packed >> (4 * d)) & 15));
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Remap) {
                r.kind = RegionKind::remap;
                r.reduce_dim = static_cast<int>(n->attr[0]);
                r.remap_a = static_cast<std::int64_t>(n->attr[1]);
                r.remap_b = static_cast<std::int64_t>(n->attr[2]);
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Cat) {
                r.kind = RegionKind::concat;
                r.reduce_dim = static_cast<int>(n->attr[0]);
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (op_info(n->op).group == OpGroup::Scan) {
                r.kind = RegionKind::scan;
                r.scan_op = n->op;
                r.reduce_dim = static_cast<int>(n->attr[0]);
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Transpose) {
                r.kind = RegionKind::transpose;
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::Reshape) {
                r.kind = RegionKind::view;
                r.inputs = n->inputs;
                r.outputs.push_back({0, pending[m]->shared_from_this()});
                continue;
            }
            if (n->op == OpKind::MatMul) {
                r.kind = RegionKind::matmul;
                r.trans_a = n->attr[0] != 0;
                r.trans_b = n->attr[1] != 0;
                r.matmul_precision = static_cast<std::uint8_t>(n->attr[2]);  // api/linalg.cpp
                r.inputs = n->inputs;
                if (chain_index[m] == kOutside) {
                    r.outputs.push_back({0, pending[m]->shared_from_this()});
                    continue;
                }
                // The epilogue's operands follow A and B; its last link is the result.
                EpilogueChain& c = chains[chain_index[m]];
                r.epilogue = c.epilogue;
                if (c.c) r.inputs.push_back(c.c);
                if (c.bias) r.inputs.push_back(c.bias);
                r.outputs.push_back({0, pending[c.nodes.back()]->shared_from_this()});
                continue;
            }
            if (is_reduction(n->op)) {
                // A reduction with nothing folded in: its program loads the input as is (or
                // recomputes it: its ops come first), once for the group's reductions of it.
                std::uint32_t v = 0;
                if (auto it = loaded.find(n->inputs[0].get()); it != loaded.end()) {
                    v = it->second;
                } else {
                    Instr ins{OpKind::Cast, n->inputs[0]->dtype, DType::f64, {}, {static_cast<double>(n->inputs[0]->dtype), 0, 0}};
                    operand(n->inputs[0], ins.args[0]);
                    DType t = n->inputs[0]->dtype;
                    ins.compute = compute_dtype(OpKind::Cast, &t);
                    v = static_cast<std::uint32_t>(r.program.size());  // after a recomputed input's ops
                    r.program.push_back(ins);
                    loaded.emplace(n->inputs[0].get(), v);
                }
                r.kind = RegionKind::reduce;
                r.reductions.push_back({n->op, v});
                r.reduce_dim = static_cast<int>(n->attr[0]);
                r.outputs.push_back({v, pending[m]->shared_from_this()});
                continue;
            }
            const Instr ins = instruction(n);
            auto index = static_cast<std::uint32_t>(r.program.size());
            value_of[m] = index;
            r.program.push_back(ins);
            if (is_output[m]) {
                // Outputs hold owning references: the region keeps its nodes alive while in flight.
                r.outputs.push_back({index, pending[m]->shared_from_this()});
            }
        }
        // The reductions folded into this group, in plan order.
        for (std::size_t ri : absorbed[gi]) {
            const std::size_t m = groups[ri].members.front();
            const Node* n = pending[m];
            const std::uint32_t v = value_of[pos(n->inputs[0].get())];
            r.kind = RegionKind::reduce;
            r.reductions.push_back({n->op, v});
            r.reduce_dim = static_cast<int>(n->attr[0]);
            r.outputs.push_back({v, pending[m]->shared_from_this()});
        }
        prune_dead_values(r);
        regions.push_back(std::move(r));
    }
    if (options.fuse) fold_tails(regions);
    for (Region& r : regions) r.cost = summarize_cost(r);
    return regions;
}

}  // namespace tandem::detail
