// Random expression trees (depth up to 12, mixed broadcast-compatible shapes, shared
// subexpressions, plain-number operands):
//  - every op and dtype mix, fused (default Config) vs unfused (Config::fusion = false):
//    the results must be bit-identical (the same kernels run either way);
//  - ops with bounded derivatives on inputs in [-2, 2] plus NaN/Inf, against a recursive
//    scalar double reference that carries an error bound alongside each value.
// Shapes: output 7x5x3 with leaves 7x5x3, 7x1x3, 1x5x1, 1x1, 7x5, 1x5x3; and 0-size variants.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Operand;
using tref::Dims;
using tref::Host;

namespace {

enum class Kind { leaf, number, unary, binary, where };

struct Node {
    Kind kind;
    std::string op;        ///< op name (unary/binary)
    int leaf = -1;         ///< index into the leaves (Kind::leaf)
    double number = 0;     ///< Kind::number
    std::vector<int> kids; ///< indices into Tree::nodes
};

struct Tree {
    std::vector<Node> nodes;
    std::vector<Host> leaves;
    int root = -1;
    int depth = 0;

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

Array build_unary(const std::string& op, const Array& a) {
    static const std::map<std::string, std::function<Array(const Array&)>> table = {
        {"uminus", [](const Array& x) { return -x; }},
        {"abs", [](const Array& x) { return tandem::abs(x); }},
        {"sqrt", [](const Array& x) { return tandem::sqrt(x); }},
        {"exp", [](const Array& x) { return tandem::exp(x); }},
        {"log", [](const Array& x) { return tandem::log(x); }},
        {"log2", [](const Array& x) { return tandem::log2(x); }},
        {"log10", [](const Array& x) { return tandem::log10(x); }},
        {"log1p", [](const Array& x) { return tandem::log1p(x); }},
        {"expm1", [](const Array& x) { return tandem::expm1(x); }},
        {"sin", [](const Array& x) { return tandem::sin(x); }},
        {"cos", [](const Array& x) { return tandem::cos(x); }},
        {"tan", [](const Array& x) { return tandem::tan(x); }},
        {"asin", [](const Array& x) { return tandem::asin(x); }},
        {"acos", [](const Array& x) { return tandem::acos(x); }},
        {"atan", [](const Array& x) { return tandem::atan(x); }},
        {"sinh", [](const Array& x) { return tandem::sinh(x); }},
        {"cosh", [](const Array& x) { return tandem::cosh(x); }},
        {"tanh", [](const Array& x) { return tandem::tanh(x); }},
        {"floor", [](const Array& x) { return tandem::floor(x); }},
        {"ceil", [](const Array& x) { return tandem::ceil(x); }},
        {"round", [](const Array& x) { return tandem::round(x); }},
        {"fix", [](const Array& x) { return tandem::fix(x); }},
        {"sign", [](const Array& x) { return tandem::sign(x); }},
        {"isnan", [](const Array& x) { return tandem::isnan(x); }},
        {"isinf", [](const Array& x) { return tandem::isinf(x); }},
        {"isfinite", [](const Array& x) { return tandem::isfinite(x); }},
        {"single", [](const Array& x) { return tandem::single(x); }},
        {"double", [](const Array& x) { return tandem::as_double(x); }},
        {"not", [](const Array& x) { return !x; }},
        // composites with bounded derivatives (reference trees)
        {"exp(-abs)", [](const Array& x) { return tandem::exp(-tandem::abs(x)); }},
        {"sqrt(abs)", [](const Array& x) { return tandem::sqrt(tandem::abs(x)); }},
    };
    return table.at(op)(a);
}

Array build_binary(const std::string& op, const Operand& a, const Operand& b) {
    static const std::map<std::string, std::function<Array(const Operand&, const Operand&)>> table = {
        {"plus", [](const Operand& x, const Operand& y) { return x + y; }},
        {"minus", [](const Operand& x, const Operand& y) { return x - y; }},
        {"times", [](const Operand& x, const Operand& y) { return x * y; }},
        {"rdivide", [](const Operand& x, const Operand& y) { return x / y; }},
        {"ldivide", [](const Operand& x, const Operand& y) { return tandem::ldivide(x, y); }},
        {"power", [](const Operand& x, const Operand& y) { return tandem::power(x, y); }},
        {"atan2", [](const Operand& x, const Operand& y) { return tandem::atan2(x, y); }},
        {"hypot", [](const Operand& x, const Operand& y) { return tandem::hypot(x, y); }},
        {"mod", [](const Operand& x, const Operand& y) { return tandem::mod(x, y); }},
        {"rem", [](const Operand& x, const Operand& y) { return tandem::rem(x, y); }},
        {"min", [](const Operand& x, const Operand& y) { return tandem::min(x, y); }},
        {"max", [](const Operand& x, const Operand& y) { return tandem::max(x, y); }},
        {"eq", [](const Operand& x, const Operand& y) { return x == y; }},
        {"ne", [](const Operand& x, const Operand& y) { return x != y; }},
        {"lt", [](const Operand& x, const Operand& y) { return x < y; }},
        {"le", [](const Operand& x, const Operand& y) { return x <= y; }},
        {"gt", [](const Operand& x, const Operand& y) { return x > y; }},
        {"ge", [](const Operand& x, const Operand& y) { return x >= y; }},
        {"and", [](const Operand& x, const Operand& y) { return x & y; }},
        {"or", [](const Operand& x, const Operand& y) { return x | y; }},
        {"xor", [](const Operand& x, const Operand& y) { return tandem::logical_xor(x, y); }},
        // composite with bounded derivatives (reference trees): x / (1 + |y|)
        {"div1abs", [](const Operand& x, const Operand& y) {
             return x / (1.0 + tandem::abs(y.is_array() ? y.array() : throw std::logic_error("div1abs")));
         }},
    };
    return table.at(op)(a, b);
}

struct Built {
    tandem::Runtime& rt;
    const Tree& t;
    std::vector<Array> leaves;
    std::map<int, Array> memo;

    Built(tandem::Runtime& r, const Tree& tree) : rt(r), t(tree) {
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

struct ShapeSet {
    std::string name;
    std::vector<Dims> leaf_dims;
};

const ShapeSet kFull{"7x5x3", {{7, 5, 3}, {7, 1, 3}, {1, 5, 1}, {1, 1}, {7, 5}, {1, 5, 3}}};
const ShapeSet kEmpty{"7x0x3", {{7, 0, 3}, {7, 1, 3}, {1, 0, 1}, {1, 1}, {7, 0}, {1, 0, 3}, {1, 1, 3}}};

class Generator {
public:
    Generator(std::uint64_t seed, bool reference_ops) : rng_(seed), ref_(reference_ops) {}

    Tree make(const ShapeSet& shapes, int target_depth, bool empty_leaves) {
        Tree t;
        tree_ = &t;
        // 3..6 leaves of the set's shapes; full-shape leaf always there so the output is full
        const int nleaves = 3 + static_cast<int>(rng_() % 4);
        for (int i = 0; i < nleaves; ++i) {
            const Dims& d = i == 0 ? shapes.leaf_dims[0] : shapes.leaf_dims[rng_() % shapes.leaf_dims.size()];
            t.leaves.push_back(make_leaf(d));
        }
        (void)empty_leaves;
        t.root = gen(target_depth, true);
        t.depth = depth_of(t.root);
        tree_ = nullptr;
        return t;
    }

    /// Static magnitude bound of a node (reference trees), assuming finite inputs in [-2, 2].
    double bound(int i) const { return bounds_.at(static_cast<std::size_t>(i)); }

private:
    Host make_leaf(const Dims& d) {
        Host h;
        h.dims = tref::normalize(d);
        const auto n = static_cast<std::size_t>(tref::numel(h.dims));
        if (ref_) {
            h.dtype = DType::f64;
            std::uniform_real_distribution<double> u(-2.0, 2.0);
            h.v.resize(n);
            for (auto& x : h.v) {
                const auto c = rng_() % 100;
                x = c < 3 ? tref::kNaN : c < 5 ? tref::kInf : c < 7 ? -tref::kInf : c < 9 ? 0.0 : c < 10 ? -0.0 : u(rng_);
            }
        } else {
            const auto c = rng_() % 10;
            const DType t = c < 6 ? DType::f64 : c < 9 ? DType::f32 : DType::logical;
            h = tref::random_host(d, t, rng_);
        }
        return h;
    }

    int add(Node n, double b) {
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
        Node n{Kind::leaf, "", static_cast<int>(rng_() % tree_->leaves.size()), 0, {}};
        return add(n, 2.0);
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
        return ref_ ? gen_ref(depth, must_reach) : gen_any(depth, must_reach);
    }

    /// A comparison (logical, never NaN): the only input of logical ops and where's condition.
    int comparison(int depth, bool must_reach) {
        static const char* cmps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        const int a = gen(depth - 1, must_reach), b = operand(std::min(depth - 1, 2));
        return add(Node{Kind::binary, cmps[rng_() % 6], -1, 0, {a, b}}, 1.0);
    }

    int gen_any(int depth, bool must_reach) {
        static const std::vector<std::string> unary = {
            "uminus", "abs", "sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin",
            "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil", "round", "fix", "sign", "isnan", "isinf",
            "isfinite", "single", "double"};
        static const std::vector<std::string> binary = {"plus", "minus", "times", "rdivide", "ldivide", "power",
                                                        "atan2", "hypot", "mod", "rem", "min", "max"};
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
            if (tree_->nodes[static_cast<std::size_t>(a)].kind == Kind::number &&
                tree_->nodes[static_cast<std::size_t>(b)].kind == Kind::number)
                b = leaf(depth - 1);
            return add(Node{Kind::binary, binary[rng_() % binary.size()], -1, 0, {a, b}}, 0);
        }
        if (c < 87) return comparison(depth, must_reach);
        if (c < 93) {
            static const char* logic[] = {"and", "or", "xor"};
            const int a = comparison(depth - 1, must_reach), b = comparison(std::min(depth - 1, 2), false);
            return add(Node{Kind::binary, logic[rng_() % 3], -1, 0, {a, b}}, 1.0);
        }
        if (c < 95) {
            const int a = comparison(depth - 1, must_reach);
            return add(Node{Kind::unary, "not", -1, 0, {a}}, 1.0);
        }
        const int cond = comparison(std::min(depth - 1, 3), false);
        const int a = gen(depth - 1, must_reach), b = operand(depth - 1);
        return add(Node{Kind::where, "where", -1, 0, {cond, a, b}}, 0);
    }

    // Reference trees: ops with bounded derivatives, magnitudes kept below ~1e3.
    int gen_ref(int depth, bool must_reach) {
        static const std::vector<std::string> unary = {"uminus", "abs", "sin", "cos", "tanh", "atan", "exp(-abs)",
                                                       "sqrt(abs)"};
        if (rng_() % 100 < 45) {
            const int a = gen(depth - 1, must_reach);
            const std::string op = unary[rng_() % unary.size()];
            const double ma = bound(a);
            const double b = op == "uminus" || op == "abs" ? ma
                             : op == "atan"                ? 1.5707963267948966
                             : op == "sqrt(abs)"           ? std::sqrt(ma)
                                                           : 1.0;
            return add(Node{Kind::unary, op, -1, 0, {a}}, b);
        }
        const bool first = rng_() % 2 == 0;
        int a = first ? gen(depth - 1, must_reach) : operand(depth - 1);
        int b = first ? operand(depth - 1) : gen(depth - 1, must_reach);
        if (tree_->nodes[static_cast<std::size_t>(a)].kind == Kind::number &&
            tree_->nodes[static_cast<std::size_t>(b)].kind == Kind::number)
            b = leaf(depth - 1);
        const double ma = bound(a), mb = bound(b);
        static const std::vector<std::string> binary = {"plus", "minus", "times", "min", "max", "hypot", "div1abs"};
        std::string op = binary[rng_() % binary.size()];
        if (op == "div1abs" && tree_->nodes[static_cast<std::size_t>(b)].kind == Kind::number) op = "times";
        if ((op == "times" && ma * mb > 1e3) || ((op == "plus" || op == "minus" || op == "hypot") && ma + mb > 1e3))
            op = tree_->nodes[static_cast<std::size_t>(b)].kind == Kind::number ? "min" : "div1abs";
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
    bool ref_;
    Tree* tree_ = nullptr;
    std::vector<double> bounds_;
};

// ---- the reference evaluator with error bounds ----------------------------------------------

struct RefVal {
    Dims dims;
    std::vector<double> v;  ///< reference values
    std::vector<double> e;  ///< bound on |library - reference| (0 where not finite)
    double m = 0;           ///< static magnitude bound
};

double ulps(double v, double k) { return std::isfinite(v) ? k * std::numeric_limits<double>::epsilon() * std::abs(v) + 1e-300 : 0; }
double term(double e, double x) { return e == 0 || !std::isfinite(x) ? 0 : e * std::abs(x); }

class Reference {
public:
    Reference(const Tree& t, const Generator& g) : t_(t), g_(g) {}

    const RefVal& eval(int i) {
        if (auto it = memo_.find(i); it != memo_.end()) return it->second;
        const Node& n = t_.nodes[static_cast<std::size_t>(i)];
        RefVal r;
        r.m = g_.bound(i);
        if (n.kind == Kind::leaf) {
            const Host& h = t_.leaves[static_cast<std::size_t>(n.leaf)];
            r.dims = h.dims;
            r.v = h.v;
            r.e.assign(r.v.size(), 0.0);
        } else if (n.kind == Kind::number) {
            r.dims = {1, 1};
            r.v = {n.number};
            r.e = {0.0};
        } else if (n.kind == Kind::unary) {
            const RefVal& a = eval(n.kids[0]);
            r.dims = a.dims;
            r.v.resize(a.v.size());
            r.e.resize(a.v.size());
            for (std::size_t k = 0; k < a.v.size(); ++k) {
                const double x = a.v[k], ex = std::isfinite(x) ? a.e[k] : 0.0;
                double v = 0, e = 0;
                if (n.op == "uminus") v = -x, e = ex;
                else if (n.op == "abs") v = std::fabs(x), e = ex;
                else if (n.op == "sin") v = std::sin(x), e = ex + ulps(v, 4);
                else if (n.op == "cos") v = std::cos(x), e = ex + ulps(v, 4);
                else if (n.op == "tanh") v = std::tanh(x), e = ex + ulps(v, 4);
                else if (n.op == "atan") v = std::atan(x), e = ex + ulps(v, 4);
                else if (n.op == "exp(-abs)") v = std::exp(-std::fabs(x)), e = ex + ulps(v, 4);
                else if (n.op == "sqrt(abs)") {
                    v = std::sqrt(std::fabs(x));
                    const double ax = std::fabs(x);
                    e = (ex > 0 && std::isfinite(x) ? std::sqrt(ax + ex) - std::sqrt(std::max(0.0, ax - ex)) : 0.0) +
                        ulps(v, 2);
                } else throw std::logic_error("reference: unary " + n.op);
                r.v[k] = v;
                r.e[k] = std::isfinite(v) ? e : 0.0;
            }
        } else if (n.kind == Kind::binary) {
            const RefVal& a = eval(n.kids[0]);
            const RefVal& b = eval(n.kids[1]);
            r.dims = *tref::broadcast(a.dims, b.dims);
            const auto cnt = static_cast<std::size_t>(tref::numel(r.dims));
            r.v.resize(cnt);
            r.e.resize(cnt);
            const tref::Indexer ia(r.dims, a.dims), ib(r.dims, b.dims);
            for (std::size_t k = 0; k < cnt; ++k) {
                const auto ja = static_cast<std::size_t>(ia(static_cast<std::int64_t>(k)));
                const auto jb = static_cast<std::size_t>(ib(static_cast<std::int64_t>(k)));
                const double x = a.v[ja], y = b.v[jb];
                const double ex = std::isfinite(x) ? a.e[ja] : 0.0, ey = std::isfinite(y) ? b.e[jb] : 0.0;
                double v = 0, e = 0;
                if (n.op == "plus") v = x + y, e = ex + ey + ulps(v, 1);
                else if (n.op == "minus") v = x - y, e = ex + ey + ulps(v, 1);
                else if (n.op == "times") v = x * y, e = term(ex, y) + term(ey, x) + ex * ey + ulps(v, 1);
                else if (n.op == "min") v = tref::ref_min(x, y), e = std::isnan(x) ? ey : std::isnan(y) ? ex : std::max(ex, ey);
                else if (n.op == "max") v = tref::ref_max(x, y), e = std::isnan(x) ? ey : std::isnan(y) ? ex : std::max(ex, ey);
                else if (n.op == "hypot") v = std::hypot(x, y), e = ex + ey + ulps(v, 4);
                else if (n.op == "div1abs") {
                    v = x / (1.0 + std::fabs(y));
                    e = ex + (std::isfinite(x) ? (std::fabs(x) + ex) * ey : 0.0) + ulps(v, 4);
                } else throw std::logic_error("reference: binary " + n.op);
                r.v[k] = v;
                r.e[k] = std::isfinite(v) ? e : 0.0;
            }
        } else {
            throw std::logic_error("reference: where");
        }
        return memo_.emplace(i, std::move(r)).first->second;
    }

private:
    const Tree& t_;
    const Generator& g_;
    std::map<int, RefVal> memo_;
};

::testing::AssertionResult matches_reference(const Host& got, const RefVal& want) {
    if (got.dims != want.dims)
        return ::testing::AssertionFailure() << "shape " << tref::dims_str(got.dims) << ", expected " << tref::dims_str(want.dims);
    if (got.dtype != DType::f64) return ::testing::AssertionFailure() << "dtype " << tref::dtype_str(got.dtype);
    std::ostringstream os;
    int bad = 0;
    for (std::size_t k = 0; k < want.v.size(); ++k) {
        const double g = got.v[k], w = want.v[k];
        bool ok;
        if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
        else if (std::isinf(w) || std::isinf(g)) ok = g == w;
        else ok = std::abs(g - w) <= 1e-9 * (1 + want.m) + 4 * want.e[k];
        if (!ok && bad++ < 5)
            os << "\n  [" << k << "] got " << tref::fmt(g) << ", expected " << tref::fmt(w) << " (error bound "
               << want.e[k] << ", magnitude bound " << want.m << ")";
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " elements differ:" << os.str();
}

tandem::Config unfused_config() {
    tandem::Config c;
    c.fusion = false;
    return c;
}

void run_trees(bool reference_ops, const ShapeSet& shapes, int count, std::uint64_t base_seed) {
    tandem::Runtime fused{tandem::Config{}};  // explicit defaults, whatever TANDEM_FUSION says
    tandem::Runtime unfused(unfused_config());
    int max_depth_seen = 0, with_values = 0;
    for (int it = 0; it < count; ++it) {
        const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(it);
        Generator gen(seed, reference_ops);
        const int target = 1 + it % 12;
        Tree t = gen.make(shapes, target, false);
        max_depth_seen = std::max(max_depth_seen, t.depth);
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + t.describe());

        Built bf(fused, t), bu(unfused, t);
        Array rf, ru;
        try {
            rf = bf.array(t.root);
            ru = bu.array(t.root);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "building threw: " << e.what();
            continue;
        }
        ASSERT_EQ(rf.shape(), ru.shape());
        ASSERT_EQ(rf.dtype(), ru.dtype());
        // Gather the root together with an inner node (a multi-output plan) in the fused runtime.
        int inner = t.root;
        for (int tries = 0; tries < 10; ++tries) {
            const int j = static_cast<int>((seed * 31 + static_cast<std::uint64_t>(tries) * 7) % t.nodes.size());
            if (t.nodes[static_cast<std::size_t>(j)].kind != Kind::number) {
                inner = j;
                break;
            }
        }
        std::vector<tandem::HostArray> hf;
        Host hu, hiu;
        try {
            hf = fused.gather({rf, bf.array(inner)}).get();
            hu = tref::gather(ru);
            hiu = tref::gather(bu.array(inner));
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
            continue;
        }
        const Host gf = tref::from_host_array(hf.at(0));
        EXPECT_TRUE(tref::same_values(gf, hu, tref::Acc::exact_signed)) << "fused vs unfused (root)";
        EXPECT_TRUE(tref::same_values(tref::from_host_array(hf.at(1)), hiu, tref::Acc::exact_signed))
            << "fused vs unfused (inner node " << inner << ")";
        if (reference_ops) {
            Reference ref(t, gen);
            EXPECT_TRUE(matches_reference(gf, ref.eval(t.root))) << "vs reference";
            if (!gf.v.empty()) ++with_values;
        }
        if (::testing::Test::HasFailure()) break;  // one failing tree is enough to look at
    }
    EXPECT_EQ(max_depth_seen, 12) << "the generator should reach depth 12, and no more";
    if (reference_ops && shapes.name == kFull.name) {
        EXPECT_GT(with_values, count / 2);
    }
}

}  // namespace

TEST(Trees, AllOpsFusedEqualsUnfused) { run_trees(false, kFull, 300, 1000); }
TEST(Trees, AllOpsFusedEqualsUnfusedEmpty) { run_trees(false, kEmpty, 40, 5000); }
TEST(Trees, BoundedOpsAgainstReference) { run_trees(true, kFull, 300, 9000); }
TEST(Trees, BoundedOpsAgainstReferenceEmpty) { run_trees(true, kEmpty, 40, 13000); }

TEST(Trees, DeepChainOfDepthTwelveAgainstReference) {
    // A fixed depth-12 tree mixing broadcasts: checks the evaluation order of a deep region.
    tandem::Runtime rt;
    std::mt19937_64 rng(4242);
    Host a = tref::random_host({7, 5, 3}, DType::f64, rng, false), b = tref::random_host({7, 1, 3}, DType::f64, rng, false),
         c = tref::random_host({1, 5, 1}, DType::f64, rng, false);
    for (auto* h : {&a, &b, &c})
        for (auto& x : h->v) x = std::fmod(x, 2.0);
    Array A = tref::make_array(rt, a), B = tref::make_array(rt, b), C = tref::make_array(rt, c);
    Array y = A;
    for (int d = 0; d < 12; ++d) y = (d % 3 == 0) ? tandem::sin(y + B) : (d % 3 == 1) ? y * 0.5 - C : tandem::tanh(y * C);
    auto got = tref::gather(y);
    Host want = a;
    const tref::Indexer ib({7, 5, 3}, b.dims), ic({7, 5, 3}, c.dims);
    for (std::size_t k = 0; k < want.v.size(); ++k) {
        double v = a.v[k];
        const double bv = b.v[static_cast<std::size_t>(ib(static_cast<std::int64_t>(k)))];
        const double cv = c.v[static_cast<std::size_t>(ic(static_cast<std::int64_t>(k)))];
        for (int d = 0; d < 12; ++d) v = (d % 3 == 0) ? std::sin(v + bv) : (d % 3 == 1) ? v * 0.5 - cv : std::tanh(v * cv);
        want.v[k] = v;
    }
    ASSERT_EQ(got.dims, want.dims);
    for (std::size_t k = 0; k < want.v.size(); ++k) EXPECT_NEAR(got.v[k], want.v[k], 1e-12) << k;
}
