// Random expression trees (random_trees.hpp; depth up to 12, mixed broadcast-compatible shapes,
// shared subexpressions, plain-number operands):
//  - every op and dtype mix, fused (default Config) vs unfused (Config::fusion = false):
//    the results must be bit-identical (the same kernels run either way);
//  - ops with bounded derivatives on inputs in [-2, 2] plus NaN/Inf, against a recursive
//    scalar double reference that carries an error bound alongside each value.
// Shapes: output 7x5x3 with leaves 7x5x3, 7x1x3, 1x5x1, 1x1, 7x5, 1x5x3; and 0-size variants.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "random_trees.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tref::Dims;
using tref::Host;

namespace {

using ttree::Built;
using ttree::Generator;
using ttree::Kind;
using ttree::Node;
using ttree::ShapeSet;
using ttree::Tree;

const ShapeSet kFull{"7x5x3", {{7, 5, 3}, {7, 1, 3}, {1, 5, 1}, {1, 1}, {7, 5}, {1, 5, 3}}};
const ShapeSet kEmpty{"7x0x3", {{7, 0, 3}, {7, 1, 3}, {1, 0, 1}, {1, 1}, {7, 0}, {1, 0, 3}, {1, 1, 3}}};

// Every op (with comparisons, logical ops and where), every dtype mix: fused vs unfused.
const ttree::Family kAllOps{ttree::Style::mixed, ttree::row_ops(1, true, {"single", "double"}),
                            ttree::row_ops(2, true, {"ldivide"})};

// Ops with bounded derivatives on double leaves: also against the reference below.
const ttree::Family kReferenceOps{
    ttree::Style::bounded,
    {"uminus", "abs", "sin", "cos", "tanh", "atan", "exp(-abs)", "sqrt(abs)"},
    {"plus", "minus", "times", "min", "max", "hypot", "div1abs"}};

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
        Generator gen(seed, reference_ops ? kReferenceOps : kAllOps);
        const int target = 1 + it % 12;
        Tree t = gen.make(shapes, target);
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
