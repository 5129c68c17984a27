// Random expression trees for the tests that compute the same expression two ways and compare:
// test_trees.cpp (fused vs unfused vs a scalar reference) and test_vulkan_trees.cpp (the Vulkan
// device vs the CPU). A tree has 3..6 leaves of broadcast-compatible shapes (the first one full),
// shared subexpressions (a DAG), plain-number operands, and reaches the target depth. A Family
// says which ops are drawn and how:
//  - Style::mixed: leaves of every element type (tref::random_host: special values included);
//    the family's unary and binary ops, plus comparisons, and / or / xor / not of comparisons,
//    and where (whose condition is a comparison): logical ops never meet NaN.
//  - Style::bounded: leaves of one floating type in [-2, 2] with NaN, +-Inf and +-0; ops with
//    bounded derivatives only (see unary_bound and Generator::gen_bounded), and every node
//    carries a static magnitude bound (Generator::bound) kept below ~1e3.
// The generator draws ops by index from the family's lists: the same seed and the same lists
// make the same tree.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "op_rows.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace ttree {

using tandem::Array;
using tandem::DType;
using tandem::Operand;
using tref::Dims;
using tref::Host;

enum class Kind { leaf, number, unary, binary, where };

struct Node {
    Kind kind;
    std::string op;         ///< op name (unary/binary), a key of build_unary / build_binary
    int leaf = -1;          ///< index into the leaves (Kind::leaf)
    double number = 0;      ///< Kind::number
    std::vector<int> kids;  ///< indices into Tree::nodes
};

struct Tree {
    std::vector<Node> nodes;
    std::vector<Host> leaves;
    int root = -1;
    int depth = 0;
    bool transcendental = false;  ///< some node is a transcendental op (is_transcendental)

    std::string to_string(int i) const {
        const Node& n = nodes[static_cast<std::size_t>(i)];
        switch (n.kind) {
            case Kind::leaf: return "L" + std::to_string(n.leaf);
            case Kind::number: return tref::fmt(n.number);
            case Kind::unary: return n.op + "(" + to_string(n.kids[0]) + ")";
            case Kind::binary: return n.op + "(" + to_string(n.kids[0]) + ", " + to_string(n.kids[1]) + ")";
            case Kind::where:
                return "where(" + to_string(n.kids[0]) + ", " + to_string(n.kids[1]) + ", " + to_string(n.kids[2]) + ")";
        }
        return "?";
    }
    std::string describe() const {
        std::ostringstream os;
        os << "depth " << depth << ", " << nodes.size() << " nodes: " << to_string(root) << "\n leaves:";
        for (std::size_t i = 0; i < leaves.size(); ++i)
            os << " L" << i << "=" << tref::dtype_str(leaves[i].dtype) << " " << tref::dims_str(leaves[i].dims);
        return os.str();
    }
};

// ---- building in a runtime ------------------------------------------------------------------

/// An op of the tree: an ops.def row (tests/op_rows.hpp) by its name, or one of the composites and
/// casts below.
inline Array build_unary(const std::string& op, const Array& a) {
    static const std::map<std::string, std::function<Array(const Array&)>> others = {
        {"single", [](const Array& x) { return tandem::single(x); }},
        {"double", [](const Array& x) { return tandem::as_double(x); }},
        // composites with bounded derivatives (Style::bounded)
        {"exp(-abs)", [](const Array& x) { return tandem::exp(-tandem::abs(x)); }},
        {"sqrt(abs)", [](const Array& x) { return tandem::sqrt(tandem::abs(x)); }},
        {"log1p(abs)", [](const Array& x) { return tandem::log1p(tandem::abs(x)); }},
    };
    if (auto it = others.find(op); it != others.end()) return it->second(a);
    return trows::row(op).make({Operand(a)});
}

inline Array build_binary(const std::string& op, const Operand& a, const Operand& b) {
    static const std::map<std::string, std::function<Array(const Operand&, const Operand&)>> others = {
        {"ldivide", [](const Operand& x, const Operand& y) { return tandem::ldivide(x, y); }},
        // composite with bounded derivatives (Style::bounded): x / (1 + |y|)
        {"div1abs", [](const Operand& x, const Operand& y) {
             return x / (1.0 + tandem::abs(y.is_array() ? y.array() : throw std::logic_error("div1abs")));
         }},
    };
    if (auto it = others.find(op); it != others.end()) return it->second(a, b);
    return trows::row(op).make({a, b});
}

/// A tree's nodes as arrays of one runtime (leaves copied in once, shared nodes built once).
struct Built {
    const Tree& t;
    std::vector<Array> leaves;
    std::map<int, Array> memo;

    Built(tandem::Runtime& rt, const Tree& tree) : t(tree) {
        for (const auto& h : t.leaves) leaves.push_back(tref::make_array(rt, h));
    }
    Operand operand(int i) {
        const Node& n = t.nodes[static_cast<std::size_t>(i)];
        if (n.kind == Kind::number) return Operand(n.number);
        return Operand(array(i));
    }
    Array array(int i) {
        if (auto it = memo.find(i); it != memo.end()) return it->second;
        const Node& n = t.nodes[static_cast<std::size_t>(i)];
        Array r;
        switch (n.kind) {
            case Kind::leaf: r = leaves[static_cast<std::size_t>(n.leaf)]; break;
            case Kind::number: throw std::logic_error("a number is not an array");
            case Kind::unary: r = build_unary(n.op, array(n.kids[0])); break;
            case Kind::binary: r = build_binary(n.op, operand(n.kids[0]), operand(n.kids[1])); break;
            case Kind::where: r = tandem::where(operand(n.kids[0]), operand(n.kids[1]), operand(n.kids[2])); break;
        }
        memo[i] = r;
        return r;
    }
};

// ---- generation -------------------------------------------------------------------------------

/// The leaves' shapes: the first is the output's (every tree has a leaf of it), the others
/// broadcast to it.
struct ShapeSet {
    std::string name;
    std::vector<Dims> leaf_dims;
};

enum class Style { mixed, bounded };

/// The ops a Generator draws (see the top of this file), by index: order matters for seeds.
struct Family {
    Style style;
    std::vector<std::string> unary;   ///< unary ops (keys of build_unary)
    std::vector<std::string> binary;  ///< binary ops (keys of build_binary); bounded: of gen_bounded's
    DType leaf_dtype = DType::f64;    ///< Style::bounded: the leaves' element type (f64 or f32)
};

/// The rows a mixed family draws (comparisons and logical ops come with the style), plus `extra`:
/// with `transcendental` false, only the ops every executor computes exactly.
inline std::vector<std::string> row_ops(int arity, bool transcendental, std::vector<std::string> extra) {
    auto ops = trows::names(arity, [&](const trows::Row& r) {
        const bool arith = r.rule == trows::TypeRule::Arithmetic || (arity == 1 && r.rule == trows::TypeRule::Predicate);
        return arith && (transcendental || !r.transcendental());
    });
    ops.insert(ops.end(), extra.begin(), extra.end());
    return ops;
}

/// Transcendental ops: the rows of that cost class, and the composites made of one.
inline bool is_transcendental(const std::string& op) {
    if (op == "exp(-abs)" || op == "log1p(abs)") return true;
    if (op == "ldivide" || op == "div1abs" || op == "sqrt(abs)" || op == "single" || op == "double") return false;
    return trows::row(op).transcendental();
}

/// Static magnitude bound of a bounded unary op's result, given its operand's bound `ma`.
inline double unary_bound(const std::string& op, double ma) {
    if (op == "uminus" || op == "abs") return ma;
    if (op == "atan") return 1.5707963267948966;
    if (op == "sqrt(abs)") return std::sqrt(ma);
    if (op == "log1p(abs)") return std::log1p(ma);
    if (op == "sin" || op == "cos" || op == "tanh" || op == "exp(-abs)") return 1.0;
    throw std::logic_error("random_trees: no magnitude bound for unary " + op);
}

class Generator {
public:
    Generator(std::uint64_t seed, const Family& family) : rng_(seed), family_(family) {}

    Tree make(const ShapeSet& shapes, int target_depth) {
        Tree t;
        tree_ = &t;
        // 3..6 leaves of the set's shapes; full-shape leaf always there so the output is full
        const int nleaves = 3 + static_cast<int>(rng_() % 4);
        for (int i = 0; i < nleaves; ++i) {
            const Dims& d = i == 0 ? shapes.leaf_dims[0] : shapes.leaf_dims[rng_() % shapes.leaf_dims.size()];
            t.leaves.push_back(make_leaf(d));
        }
        t.root = gen(target_depth, true);
        t.depth = depth_of(t.root);
        tree_ = nullptr;
        return t;
    }

    /// Static magnitude bound of a node (Style::bounded), assuming finite inputs in [-2, 2].
    double bound(int i) const { return bounds_.at(static_cast<std::size_t>(i)); }

private:
    Host make_leaf(const Dims& d) {
        Host h;
        h.dims = tref::normalize(d);
        const auto n = static_cast<std::size_t>(tref::numel(h.dims));
        if (family_.style == Style::bounded) {
            h.dtype = family_.leaf_dtype;
            std::uniform_real_distribution<double> u(-2.0, 2.0);
            h.v.resize(n);
            for (auto& x : h.v) {
                const auto c = rng_() % 100;
                x = c < 3 ? tref::kNaN : c < 5 ? tref::kInf : c < 7 ? -tref::kInf : c < 9 ? 0.0 : c < 10 ? -0.0 : u(rng_);
                x = tref::to_type(x, h.dtype);
            }
        } else {
            const auto c = rng_() % 10;
            const DType t = c < 6 ? DType::f64 : c < 9 ? DType::f32 : DType::logical;
            h = tref::random_host(d, t, rng_);
        }
        return h;
    }

    int add(Node n, double b) {
        if ((n.kind == Kind::unary || n.kind == Kind::binary) && is_transcendental(n.op)) tree_->transcendental = true;
        tree_->nodes.push_back(std::move(n));
        bounds_.resize(tree_->nodes.size());
        bounds_.back() = b;
        return static_cast<int>(tree_->nodes.size()) - 1;
    }

    int leaf(int depth_left) {
        // sometimes reuse an existing non-number node: shared subexpressions (a DAG)
        if (!tree_->nodes.empty() && rng_() % 8 == 0) {
            const int j = static_cast<int>(rng_() % tree_->nodes.size());
            if (tree_->nodes[static_cast<std::size_t>(j)].kind != Kind::number && bound(j) <= 8 &&
                depth_of(j) <= depth_left)
                return j;
        }
        return add(Node{Kind::leaf, "", static_cast<int>(rng_() % tree_->leaves.size()), 0, {}}, 2.0);
    }

    int number() {
        static const double nums[] = {0.5, -1.25, 2.0, 3.0, -0.75, 1.0};
        const double v = nums[rng_() % 6];
        return add(Node{Kind::number, "", -1, v, {}}, std::abs(v));
    }

    /// An operand of a binary op: mostly arrays, sometimes a plain number.
    int operand(int depth) { return (rng_() % 7 == 0) ? number() : gen(depth, false); }

    int gen(int depth, bool must_reach) {
        if (depth <= 0 || (!must_reach && rng_() % 100 < 45)) return leaf(depth);
        return family_.style == Style::bounded ? gen_bounded(depth, must_reach) : gen_mixed(depth, must_reach);
    }

    /// A comparison (logical, never NaN): the only input of logical ops and where's condition.
    int comparison(int depth, bool must_reach) {
        static const auto cmps = trows::names(2, [](const trows::Row& r) { return r.rule == trows::TypeRule::Predicate; });
        const int a = gen(depth - 1, must_reach), b = operand(std::min(depth - 1, 2));
        return add(Node{Kind::binary, cmps[rng_() % cmps.size()], -1, 0, {a, b}}, 1.0);
    }

    bool is_number(int i) const { return tree_->nodes[static_cast<std::size_t>(i)].kind == Kind::number; }

    int gen_mixed(int depth, bool must_reach) {
        const auto& unary = family_.unary;
        const auto& binary = family_.binary;
        auto c = rng_() % 100;
        if (depth < 2 && c >= 80) c = 0;  // logical ops and where need two levels (a comparison below)
        if (c < 45) {
            const int a = gen(depth - 1, must_reach);
            return add(Node{Kind::unary, unary[rng_() % unary.size()], -1, 0, {a}}, 0);
        }
        if (c < 80) {
            const bool first = rng_() % 2 == 0;
            int a = first ? gen(depth - 1, must_reach) : operand(depth - 1);
            int b = first ? operand(depth - 1) : gen(depth - 1, must_reach);
            if (is_number(a) && is_number(b)) b = leaf(depth - 1);
            return add(Node{Kind::binary, binary[rng_() % binary.size()], -1, 0, {a, b}}, 0);
        }
        if (c < 87) return comparison(depth, must_reach);
        if (c < 93) {
            static const auto logic = trows::names(2, [](const trows::Row& r) { return r.rule == trows::TypeRule::Logical; });
            const int a = comparison(depth - 1, must_reach), b = comparison(std::min(depth - 1, 2), false);
            return add(Node{Kind::binary, logic[rng_() % logic.size()], -1, 0, {a, b}}, 1.0);
        }
        if (c < 95) {
            const int a = comparison(depth - 1, must_reach);
            static const auto logic = trows::names(1, [](const trows::Row& r) { return r.rule == trows::TypeRule::Logical; });
            return add(Node{Kind::unary, logic[rng_() % logic.size()], -1, 0, {a}}, 1.0);
        }
        const int cond = comparison(std::min(depth - 1, 3), false);
        const int a = gen(depth - 1, must_reach), b = operand(depth - 1);
        return add(Node{Kind::where, "where", -1, 0, {cond, a, b}}, 0);
    }

    /// Ops with bounded derivatives, magnitudes kept below ~1e3: binary ops among plus, minus,
    /// times, min, max, hypot and div1abs (x / (1 + |y|)), which replaces a product or sum that
    /// would grow too large.
    int gen_bounded(int depth, bool must_reach) {
        const auto& unary = family_.unary;
        const auto& binary = family_.binary;
        if (rng_() % 100 < 45) {
            const int a = gen(depth - 1, must_reach);
            const std::string op = unary[rng_() % unary.size()];
            return add(Node{Kind::unary, op, -1, 0, {a}}, unary_bound(op, bound(a)));
        }
        const bool first = rng_() % 2 == 0;
        int a = first ? gen(depth - 1, must_reach) : operand(depth - 1);
        int b = first ? operand(depth - 1) : gen(depth - 1, must_reach);
        if (is_number(a) && is_number(b)) b = leaf(depth - 1);
        const double ma = bound(a), mb = bound(b);
        std::string op = binary[rng_() % binary.size()];
        if (op == "div1abs" && is_number(b)) op = "times";
        if ((op == "times" && ma * mb > 1e3) || ((op == "plus" || op == "minus" || op == "hypot") && ma + mb > 1e3))
            op = is_number(b) ? "min" : "div1abs";
        if (op != "min" && op != "max" && op != "times" && op != "plus" && op != "minus" && op != "hypot" &&
            op != "div1abs")
            throw std::logic_error("random_trees: no magnitude bound for binary " + op);
        const double m = op == "times"                                     ? ma * mb
                         : op == "plus" || op == "minus" || op == "hypot" ? ma + mb
                         : op == "div1abs"                                 ? ma
                                                                           : std::max(ma, mb);
        return add(Node{Kind::binary, op, -1, 0, {a, b}}, m);
    }

    int depth_of(int i) const {
        const Node& n = tree_->nodes[static_cast<std::size_t>(i)];
        int d = 0;
        for (int k : n.kids) d = std::max(d, depth_of(k));
        return n.kids.empty() ? 0 : d + 1;
    }

    std::mt19937_64 rng_;
    Family family_;
    Tree* tree_ = nullptr;
    std::vector<double> bounds_;
};

}  // namespace ttree
