#include "graph/fusion_cache.hpp"

#include <bit>
#include <string>

#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

/// A random draw's seed and stream are its parameters, not its structure: fusion reads them
/// into its instructions and nowhere else, and each backend passes them to its kernel as
/// arguments. They are left out of the key, and a hit takes them from the plan's own nodes
/// (put_parameters): a loop that draws new numbers each run (W3) is fused once.
bool parameters_only(OpKind op) { return op == OpKind::RandU || op == OpKind::RandN; }

std::uint64_t mix(std::uint64_t h, std::uint64_t w) { return (h ^ w) * 0x100000001b3ull ^ (h >> 29); }

/// Calls word(w, attribute) for each word of the key of a plan (see the header): `slot` numbers
/// the boundary nodes, `boundary` lists them (both filled on the first visit, read after).
template <class Word>
void visit_key(const std::vector<Node*>& pending, const std::vector<bool>& wanted, std::uint64_t mark, bool fuse,
               std::unordered_map<const Node*, std::int64_t>& slot, std::vector<const Node*>& boundary, Word word) {
    // `operands`: how many the node reads (a pending node's; a boundary node's are not read: a
    // completion may be releasing them).
    auto node = [&](const Node& n, std::size_t operands) {
        word(static_cast<std::uint64_t>(n.op) | static_cast<std::uint64_t>(n.dtype) << 8 |
                 static_cast<std::uint64_t>(n.shape.ndims()) << 16 | static_cast<std::uint64_t>(operands) << 32,
             false);
        for (int d = 0; d < n.shape.ndims(); ++d) word(static_cast<std::uint64_t>(n.shape[d]), false);
        if (!parameters_only(n.op))
            for (double a : n.attr) word(std::bit_cast<std::uint64_t>(a), true);
    };
    word(fuse ? 1 : 0, false);
    word(pending.size(), false);
    for (std::size_t i = 0; i < pending.size(); ++i) {
        const Node& n = *pending[i];
        node(n, n.inputs.size());
        word(wanted[i] ? 1 : 0, false);
        for (const auto& in : n.inputs) {
            if (in->pass_mark == mark) {
                word(in->pass_index, false);
                continue;
            }
            auto [it, fresh] = slot.try_emplace(in.get(), -static_cast<std::int64_t>(boundary.size()) - 1);
            if (fresh) boundary.push_back(in.get());
            word(static_cast<std::uint64_t>(it->second), false);  // (a boundary slot: from 2^63 up)
        }
    }
    for (const Node* b : boundary) node(*b, 0);
}

/// A cached region's random draws with this plan's seeds and streams (see parameters_only).
void put_parameters(std::vector<Instr>& program, const std::vector<Node*>& pending) {
    for (Instr& ins : program)
        if (parameters_only(ins.op) && ins.plan_position != Instr::kMadeByFusion) ins.attr = pending[ins.plan_position]->attr;
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

bool same_arg(const Arg& a, const Arg& b) {
    return a.kind == b.kind && a.index == b.index && same_bits(a.scalar, b.scalar) && a.dtype == b.dtype;
}

bool same_instrs(const std::vector<Instr>& a, const std::vector<Instr>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const Instr &x = a[i], &y = b[i];
        if (x.op != y.op || x.dtype != y.dtype || x.compute != y.compute) return false;
        for (std::size_t k = 0; k < 3; ++k)
            if (!same_arg(x.args[k], y.args[k]) || !same_bits(x.attr[k], y.attr[k])) return false;
    }
    return true;
}

bool same_cost(const RegionCost& a, const RegionCost& b) {
    return a.input_bytes == b.input_bytes && a.output_bytes == b.output_bytes && a.ops == b.ops &&
           a.elements == b.elements && a.reduce_len == b.reduce_len && a.reduce_lines == b.reduce_lines && a.m == b.m &&
           a.n == b.n && a.k == b.k && a.product_dtype == b.product_dtype && a.product_precision == b.product_precision;
}

}  // namespace

bool same_region(const Region& a, const Region& b) {
    if (a.kind != b.kind || a.shape != b.shape || !same_cost(a.cost, b.cost) || a.inputs != b.inputs || a.call != b.call ||
        a.input_views != b.input_views || !same_instrs(a.program, b.program) || !same_instrs(a.tail, b.tail))
        return false;
    if (a.outputs.size() != b.outputs.size() || a.reductions.size() != b.reductions.size()) return false;
    for (std::size_t j = 0; j < a.outputs.size(); ++j)
        if (a.outputs[j].value != b.outputs[j].value || a.outputs[j].node != b.outputs[j].node) return false;
    for (std::size_t j = 0; j < a.reductions.size(); ++j)
        if (a.reductions[j].op != b.reductions[j].op || a.reductions[j].value != b.reductions[j].value) return false;
    const Region::Epilogue &x = a.epilogue, &y = b.epilogue;
    const bool same_epilogue = same_bits(x.alpha, y.alpha) && same_bits(x.beta, y.beta) && x.has_c == y.has_c &&
                               x.bias == y.bias && x.relu == y.relu && x.zero_first == y.zero_first;
    return same_epilogue && a.reduce_dim == b.reduce_dim && a.index_base == b.index_base && a.trans_a == b.trans_a &&
           a.trans_b == b.trans_b && a.matmul_precision == b.matmul_precision && a.scan_op == b.scan_op &&
           a.remap_a == b.remap_a && a.remap_b == b.remap_b && a.permutation == b.permutation &&
           a.index_extents.inner == b.index_extents.inner && a.index_extents.count == b.index_extents.count &&
           a.index_extents.outer == b.index_extents.outer && a.index_extents.extent == b.index_extents.extent &&
           a.index_position == b.index_position;
}

std::vector<Region> FusionCache::fuse(const std::vector<Node*>& pending, const std::vector<Node*>& targets,
                                      std::uint64_t mark, const FusionOptions& options) {
    if (mode_ == Mode::off) return detail::fuse(pending, targets, mark, options);
    // The key's hashes first (with and without the attributes); the words themselves only to
    // compare with an entry, or to store one.
    std::vector<bool> wanted(pending.size(), false);
    for (const Node* t : targets)
        if (t->pass_mark == mark) wanted[t->pass_index] = true;
    std::vector<const Node*> boundary;
    std::unordered_map<const Node*, Code> slot;
    std::uint64_t h = 0xcbf29ce484222325ull, skeleton = h;
    std::size_t words = 0;
    visit_key(pending, wanted, mark, options.fuse, slot, boundary, [&](std::uint64_t w, bool attribute) {
        h = mix(h, w);
        if (!attribute) skeleton = mix(skeleton, w);
        ++words;
    });
    Skeleton& sk = skeletons_[skeleton];
    // A structure that keeps coming back with other attributes (its random streams or constants
    // change each run) is no longer looked up or stored: each copy would be used never.
    if (sk.hits == 0 && sk.misses > kVolatileMisses) {
        return detail::fuse(pending, targets, mark, options);
    }
    auto node_of = [&](Code c) {
        return c >= 0 ? pending[static_cast<std::size_t>(c)]->shared_from_this()
                      : std::const_pointer_cast<Node>(boundary[static_cast<std::size_t>(-c - 1)]->shared_from_this());
    };

    auto same_key = [&](const std::vector<std::uint64_t>& key) {
        if (key.size() != words) return false;
        std::size_t at = 0;
        bool same = true;
        visit_key(pending, wanted, mark, options.fuse, slot, boundary, [&](std::uint64_t w, bool) {
            same = same && key[at++] == w;
        });
        return same;
    };
    if (auto it = entries_.find(h); it != entries_.end() && same_key(it->second.key)) {
        Entry& e = it->second;
        e.last_use = ++clock_;
        hits_.fetch_add(1, std::memory_order_relaxed);
        ++sk.hits;
        std::vector<Region> regions = e.regions;
        for (std::size_t r = 0; r < regions.size(); ++r) {
            for (std::size_t k = 0; k < regions[r].inputs.size(); ++k) regions[r].inputs[k] = node_of(e.inputs[r][k]);
            for (std::size_t j = 0; j < regions[r].outputs.size(); ++j) regions[r].outputs[j].node = node_of(e.outputs[r][j]);
            put_parameters(regions[r].program, pending);
            put_parameters(regions[r].tail, pending);
            regions[r].memo.share(e.regions[r].memo);  // what the backends worked out holds for it too
            // A command group alike in structure (its attributes): this plan's call runs.
            if (regions[r].kind == RegionKind::kernel) regions[r].call = regions[r].outputs.front().node->call;
        }
        if (mode_ == Mode::verify) {
            const std::vector<Region> fresh = detail::fuse(pending, targets, mark, options);
            bool same = fresh.size() == regions.size();
            for (std::size_t r = 0; same && r < regions.size(); ++r) same = same_region(regions[r], fresh[r]);
            if (!same)
                throw Error("fusion cache (TANDEM_PLAN_CACHE=verify): a plan of " + std::to_string(pending.size()) +
                            " nodes gave other regions than the cached ones of the same structure (a bug: "
                            "fusion read something the key leaves out)");
        }
        return regions;
    }
    ++sk.misses;
    std::vector<Region> regions = detail::fuse(pending, targets, mark, options);
    if (skeletons_.size() > 16 * capacity_) skeletons_.clear();  // (sk dangles from here)
    // Remembered with null nodes (the cache must not keep a graph alive), each named by its code.
    Entry e;
    e.regions = regions;
    auto code_of = [&](const Node* n, Code& c) {
        if (n->pass_mark == mark) return c = static_cast<Code>(n->pass_index), true;
        auto s = slot.find(n);
        if (s == slot.end()) return false;  // read from further away than an operand: not remembered
        return c = s->second, true;
    };
    for (const Region& r : regions)  // (a draw fusion made itself could not be given its stream)
        for (const std::vector<Instr>* p : {&r.program, &r.tail})
            for (const Instr& ins : *p)
                if (parameters_only(ins.op) && ins.plan_position == Instr::kMadeByFusion) return regions;
    e.inputs.resize(regions.size());
    e.outputs.resize(regions.size());
    for (std::size_t r = 0; r < regions.size(); ++r) {
        e.regions[r].memo.share(regions[r].memo);  // the backends' work on this plan serves the hits
        e.regions[r].call.reset();  // (its body's captures are the call's own, not the cache's)
        for (auto& in : e.regions[r].inputs) {
            Code c = 0;
            if (!code_of(in.get(), c)) return regions;
            e.inputs[r].push_back(c);
            in.reset();
        }
        for (auto& o : e.regions[r].outputs) {
            Code c = 0;
            if (!code_of(o.node.get(), c)) return regions;
            e.outputs[r].push_back(c);
            o.node.reset();
        }
    }
    e.key.reserve(words);
    visit_key(pending, wanted, mark, options.fuse, slot, boundary, [&](std::uint64_t w, bool) { e.key.push_back(w); });
    e.last_use = ++clock_;
    if (entries_.size() >= capacity_ && !entries_.count(h)) {
        auto oldest = entries_.begin();
        for (auto i = entries_.begin(); i != entries_.end(); ++i)
            if (i->second.last_use < oldest->second.last_use) oldest = i;
        entries_.erase(oldest);
    }
    entries_[h] = std::move(e);
    return regions;
}

}  // namespace tandem::detail
