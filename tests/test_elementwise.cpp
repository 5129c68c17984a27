// Every elementwise op (the rows of graph/ops.def, tests/op_rows.hpp) against its reference, table-driven:
// op x element types (double, single, mixed, logical) x shape patterns (same shape, scalar
// arrays and plain numbers on either side, column vs row, N-D expansion, empty arrays) on
// random data full of special values, plus a pairwise table of the special values.
//
// Accuracy: arithmetic, rounding, comparisons, min/max/mod/rem and casts are bit-exact;
// transcendentals (Tandem's library, the GPU's) are within 2 ulp of glibc in the result's precision.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "op_rows.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Operand;
using tref::Acc;
using tref::Dims;
using tref::Host;

namespace {

enum class Res {
    arith,    ///< single wins, logical counts as double
    logical,  ///< comparisons, logical ops, isnan/isinf/isfinite
};

struct BinOp {
    std::string name;
    std::function<Array(const Operand&, const Operand&)> make;
    std::function<double(double, double, bool single)> ref;
    Res res;
    Acc acc;
    bool nan_is_error = false;  ///< logical ops: a NaN operand is an error (tested in test_errors)
};

struct UnOp {
    std::string name;
    std::function<Array(const Array&)> make;
    std::function<double(double, bool single)> ref;
    Res res;
    Acc acc;
    bool nan_is_error = false;
};

constexpr double kUlps = 2.0;

BinOp from_row(const trows::Row& r) {
    return {r.name, [m = r.make](const Operand& a, const Operand& b) { return m({a, b}); },
            [&r](double a, double b, bool single) { return r.ref(a, b, single); },
            r.logical_result() ? Res::logical : Res::arith, r.acc, r.rule == tandem::detail::TypeRule::Logical};
}

/// Every binary row of ops.def, and the spellings of the same ops that are not rows: operators and
/// ldivide (rdivide with its operands swapped).
std::vector<BinOp> binary_ops() {
    std::vector<BinOp> ops;
    for (const trows::Row& r : trows::elementwise_rows())
        if (r.arity == 2) ops.push_back(from_row(r));
    auto alias = [&](std::string name, const std::string& row, std::function<Array(const Operand&, const Operand&)> make) {
        BinOp op = from_row(trows::row(row));
        op.name = std::move(name);
        op.make = std::move(make);
        ops.push_back(std::move(op));
    };
    alias("operator plus", "plus", [](const Operand& a, const Operand& b) { return a + b; });
    alias("operator minus", "minus", [](const Operand& a, const Operand& b) { return a - b; });
    alias("operator times", "times", [](const Operand& a, const Operand& b) { return a * b; });
    alias("operator rdivide", "rdivide", [](const Operand& a, const Operand& b) { return a / b; });
    alias("operator eq", "eq", [](const Operand& a, const Operand& b) { return a == b; });
    alias("operator ne", "ne", [](const Operand& a, const Operand& b) { return a != b; });
    alias("operator lt", "lt", [](const Operand& a, const Operand& b) { return a < b; });
    alias("operator le", "le", [](const Operand& a, const Operand& b) { return a <= b; });
    alias("operator gt", "gt", [](const Operand& a, const Operand& b) { return a > b; });
    alias("operator ge", "ge", [](const Operand& a, const Operand& b) { return a >= b; });
    alias("operator and", "and", [](const Operand& a, const Operand& b) { return a & b; });
    alias("operator or", "or", [](const Operand& a, const Operand& b) { return a | b; });
    alias("ldivide", "rdivide", [](const Operand& a, const Operand& b) { return tandem::ldivide(a, b); });
    ops.back().ref = [](double a, double b, bool single) { return trows::row("rdivide").ref(b, a, single); };
    return ops;
}

/// Every unary row of ops.def, and the operator spellings.
std::vector<UnOp> unary_ops() {
    std::vector<UnOp> ops;
    auto add = [&](const trows::Row& r, std::string name, std::function<Array(const Array&)> make) {
        ops.push_back({std::move(name), std::move(make), [&r](double x, bool single) { return r.ref(x, 0.0, single); },
                       r.logical_result() ? Res::logical : Res::arith, r.acc, r.rule == tandem::detail::TypeRule::Logical});
    };
    for (const trows::Row& r : trows::elementwise_rows())
        if (r.arity == 1) add(r, r.name, [m = r.make](const Array& a) { return m({Operand(a)}); });
    add(trows::row("uminus"), "operator uminus", [](const Array& a) { return -a; });
    add(trows::row("not"), "operator not", [](const Array& a) { return !a; });
    add(trows::row("not"), "operator tilde", [](const Array& a) { return ~a; });
    return ops;
}

/// One operand of a case: an array, or a plain number (an Operand holding a double).
struct In {
    Host host;           ///< for a plain number: 1x1 f64 holding it
    bool plain = false;
};

Operand operand(tandem::Runtime& rt, const In& in) {
    if (in.plain) return Operand(in.host.v.at(0));
    return Operand(tref::make_array(rt, in.host));
}

std::string describe_in(const In& in) {
    if (in.plain) return "number " + tref::fmt(in.host.v[0]);
    return std::string(tref::dtype_str(in.host.dtype)) + " " + tref::dims_str(in.host.dims);
}

In plain(double v) { return In{Host{{1, 1}, DType::f64, {v}}, true}; }

/// Values whose zero-ness changes when a double is rounded to single (nonzero, below half of
/// the smallest float subnormal) are nudged, so that logical ops on mixed operands do not
/// depend on the order of conversion; NaN (an error for logical ops) becomes 2.
void make_logical_safe(Host& h, bool mixed = false) {
    for (auto& x : h.v) {
        if (std::isnan(x)) x = 2.0;
        else if (mixed && x != 0 && std::abs(x) < 1e-45) x = std::copysign(0.75, x);
    }
}

DType result_type(Res res, DType a, DType b) { return res == Res::logical ? DType::logical : tandem::arithmetic_result(a, b); }
DType compute_type(DType a, DType b) { return (a == DType::f32 || b == DType::f32) ? DType::f32 : DType::f64; }

struct Pattern {
    std::string name;
    Dims a, b;
};

const std::vector<Pattern>& binary_patterns() {
    static const std::vector<Pattern> p = {
        {"same", {61, 70}, {61, 70}},           // 4270 elements: crosses the executor's blocks
        {"scalar-array", {1, 1}, {7, 6}},
        {"array-scalar", {7, 6}, {1, 1}},
        {"column-row", {5, 1}, {1, 4}},
        {"row-column", {1, 4}, {5, 1}},
        {"nd-expansion", {3, 1, 4}, {1, 5, 1}},
        {"nd-same", {3, 4, 2, 2}, {3, 4, 2, 2}},
        {"nd-partial", {3, 4, 2}, {3, 1, 2}},
        {"empty-0x3-1x3", {0, 3}, {1, 3}},
        {"1x1-0x0", {1, 1}, {0, 0}},
        {"empty-nd", {2, 0, 3}, {2, 1, 1}},
    };
    return p;
}

const std::vector<double>& plain_numbers() {
    static const std::vector<double> p = {tref::kNaN, -0.0, 0.0, 2.5, -tref::kInf, 0.5, 3.0, -1.0, 1e-310, 1e300};
    return p;
}

using tref::seed_of;

/// Runs one binary case and compares with the reference.
void check_binary(tandem::Runtime& rt, const BinOp& op, In a, In b, const std::string& what) {
    SCOPED_TRACE(op.name + " " + what + ": " + describe_in(a) + " , " + describe_in(b));
    if (op.nan_is_error) {
        const bool mixed = compute_type(a.host.dtype, b.host.dtype) == DType::f32;
        for (In* in : {&a, &b}) {
            if (in->plain && (std::isnan(in->host.v[0]) || (mixed && in->host.v[0] != 0 && std::abs(in->host.v[0]) < 1e-45)))
                return;  // not this op's business (NaN: test_errors)
            if (!in->plain) make_logical_safe(in->host, mixed);
        }
    }
    const DType compute = compute_type(a.host.dtype, b.host.dtype);
    const DType out = result_type(op.res, a.host.dtype, b.host.dtype);
    const bool single = compute == DType::f32;
    Host want = tref::apply({&a.host, &b.host}, compute, out,
                            [&](const std::vector<double>& x) { return op.ref(x[0], x[1], single); });

    Array r;
    try {
        r = op.make(operand(rt, a), operand(rt, b));
    } catch (const std::exception& e) {
        ADD_FAILURE() << "building threw: " << e.what();
        return;
    }
    EXPECT_EQ(r.shape(), tref::to_shape(want.dims)) << "lazy shape";
    EXPECT_EQ(r.dtype(), out) << "lazy dtype";
    Host got;
    try {
        got = tref::gather(r);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "gather threw: " << e.what();
        return;
    }
    const tref::Indexer ia(want.dims, a.host.dims), ib(want.dims, b.host.dims);
    auto describe = [&](std::int64_t i) {
        return tref::fmt(a.host.v[static_cast<std::size_t>(ia(i))]) + ", " + tref::fmt(b.host.v[static_cast<std::size_t>(ib(i))]);
    };
    EXPECT_TRUE(tref::same_values(got, want, op.acc, kUlps, describe));
}

void PrintTo(const BinOp& op, std::ostream* os) { *os << op.name; }
void PrintTo(const UnOp& op, std::ostream* os) { *os << op.name; }

class Binary : public ::testing::TestWithParam<BinOp> {};
void run_binary(tandem::Runtime& rt, const BinOp& op);

/// Runtimes whose CPU kernels are capped at each instruction set (a cap above what the CPU has
/// falls back to the best it has): every ISA's kernels must meet the same reference.
const std::vector<std::string>& isas() {
    static const std::vector<std::string> v = {"auto", "baseline", "avx2"};
    return v;
}

tandem::Config isa_config(const std::string& isa) {
    tandem::Config c;
    c.cpu_isa = isa;
    return c;
}

TEST_P(Binary, AgainstReference) {
    for (const auto& isa : isas()) {
        tandem::Runtime rt(isa_config(isa));
        SCOPED_TRACE("cpu_isa cap " + isa + " -> " + rt.info().cpu_isa);
        run_binary(rt, GetParam());
    }
}

void run_binary(tandem::Runtime& rt, const BinOp& op) {
    const std::pair<DType, DType> combos[] = {
        {DType::f64, DType::f64},         {DType::f32, DType::f32}, {DType::f64, DType::f32},
        {DType::f32, DType::f64},         {DType::logical, DType::logical}, {DType::logical, DType::f64},
        {DType::f64, DType::logical},     {DType::f32, DType::logical},
    };
    for (auto [ta, tb] : combos) {
        const std::string types = std::string(tref::dtype_str(ta)) + "," + tref::dtype_str(tb);
        for (const auto& p : binary_patterns()) {
            const std::string what = types + " " + p.name;
            std::mt19937_64 rng(seed_of(op.name + what));
            In a{tref::random_host(p.a, ta, rng)}, b{tref::random_host(p.b, tb, rng)};
            check_binary(rt, op, a, b, what + " seed=" + std::to_string(seed_of(op.name + what)));
        }
        // Every special value against every special value.
        {
            auto sa = tref::special_values(ta), sb = tref::special_values(tb);
            In a{Host{{static_cast<std::int64_t>(sa.size()), 1}, ta, sa}};
            In b{Host{{1, static_cast<std::int64_t>(sb.size())}, tb, sb}};
            check_binary(rt, op, a, b, types + " specials-table");
        }
        // Plain numbers (double scalars) on either side.
        std::mt19937_64 rng(seed_of(op.name + types + "plain"));
        if (tb == DType::f64) {
            In a{tref::random_host({9, 8}, ta, rng)};
            for (double v : plain_numbers()) check_binary(rt, op, a, plain(v), types + " array-number");
        }
        if (ta == DType::f64) {
            In b{tref::random_host({9, 8}, tb, rng)};
            for (double v : plain_numbers()) check_binary(rt, op, plain(v), b, types + " number-array");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, Binary, ::testing::ValuesIn(binary_ops()), [](const auto& p) {
    std::string n = p.param.name;
    std::string out;
    for (char c : n) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
});

class Unary : public ::testing::TestWithParam<UnOp> {};

void run_unary(tandem::Runtime& rt, const UnOp& op);

TEST_P(Unary, AgainstReference) {
    for (const auto& isa : isas()) {
        tandem::Runtime rt(isa_config(isa));
        SCOPED_TRACE("cpu_isa cap " + isa + " -> " + rt.info().cpu_isa);
        run_unary(rt, GetParam());
    }
}

void run_unary(tandem::Runtime& rt, const UnOp& op) {
    const std::vector<std::pair<std::string, Dims>> shapes = {
        {"matrix", {61, 70}}, {"scalar", {1, 1}}, {"empty", {0, 3}}, {"row", {1, 9}},
        {"nd", {3, 4, 2, 2}}, {"empty-nd", {3, 0, 2}},
    };
    for (DType t : {DType::f64, DType::f32, DType::logical}) {
        std::vector<std::pair<std::string, Host>> inputs;
        for (const auto& [name, dims] : shapes) {
            std::mt19937_64 rng(seed_of(op.name + tref::dtype_str(t) + name));
            inputs.emplace_back(name + " seed=" + std::to_string(seed_of(op.name + tref::dtype_str(t) + name)),
                                tref::random_host(dims, t, rng));
        }
        auto sp = tref::special_values(t);
        inputs.emplace_back("specials", Host{{static_cast<std::int64_t>(sp.size()), 1}, t, sp});
        for (auto& [name, in] : inputs) {
            SCOPED_TRACE(op.name + " " + tref::dtype_str(t) + " " + name + " " + tref::dims_str(in.dims));
            if (op.nan_is_error) make_logical_safe(in);
            const DType out = op.res == Res::logical ? DType::logical : (t == DType::f32 ? DType::f32 : DType::f64);
            const DType compute = t == DType::f32 ? DType::f32 : DType::f64;
            const bool single = compute == DType::f32;
            Host want = tref::apply({&in}, compute, out, [&](const std::vector<double>& x) { return op.ref(x[0], single); });
            Array r;
            try {
                r = op.make(tref::make_array(rt, in));
            } catch (const std::exception& e) {
                ADD_FAILURE() << "building threw: " << e.what();
                continue;
            }
            EXPECT_EQ(r.shape(), tref::to_shape(want.dims));
            EXPECT_EQ(r.dtype(), out);
            Host got;
            try {
                got = tref::gather(r);
            } catch (const std::exception& e) {
                ADD_FAILURE() << "gather threw: " << e.what();
                continue;
            }
            auto describe = [&](std::int64_t i) { return tref::fmt(in.v[static_cast<std::size_t>(i)]); };
            EXPECT_TRUE(tref::same_values(got, want, op.acc, kUlps, describe));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, Unary, ::testing::ValuesIn(unary_ops()), [](const auto& p) {
    std::string out;
    for (char c : p.param.name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
});

// ---- where -------------------------------------------------------------------------------------

void run_where(tandem::Runtime& rt);

TEST(Where, AgainstReference) {
    for (const auto& isa : isas()) {
        tandem::Runtime rt(isa_config(isa));
        SCOPED_TRACE("cpu_isa cap " + isa + " -> " + rt.info().cpu_isa);
        run_where(rt);
    }
}

void run_where(tandem::Runtime& rt) {
    struct Case {
        std::string name;
        Dims c, a, b;
        bool c_plain = false, a_plain = false, b_plain = false;
    };
    const std::vector<Case> cases = {
        {"same", {23, 19}, {23, 19}, {23, 19}},
        {"col-row-scalar", {5, 1}, {1, 4}, {1, 1}},
        {"nd", {3, 1, 4}, {1, 5}, {3, 5, 4}},
        {"empty", {0, 3}, {1, 3}, {1, 1}},
        {"cond-number", {1, 1}, {4, 3}, {4, 3}, true},
        {"numbers-as-values", {6, 7}, {1, 1}, {1, 1}, false, true, true},
        {"number-and-array", {6, 7}, {1, 1}, {6, 1}, false, true, false},
    };
    const std::pair<DType, DType> value_types[] = {
        {DType::f64, DType::f64}, {DType::f32, DType::f32}, {DType::f64, DType::f32}, {DType::f32, DType::f64}};
    for (DType tc : {DType::f64, DType::logical, DType::f32}) {
        for (auto [ta, tb] : value_types) {
            for (const auto& cs : cases) {
                const std::string what = std::string("cond ") + tref::dtype_str(tc) + " values " + tref::dtype_str(ta) +
                                         "," + tref::dtype_str(tb) + " " + cs.name;
                SCOPED_TRACE(what);
                std::mt19937_64 rng(seed_of("where" + what));
                In c{tref::random_host(cs.c, cs.c_plain ? DType::f64 : tc, rng)};
                make_logical_safe(c.host, true);
                // a third of the conditions false
                for (auto& x : c.host.v)
                    if (rng() % 3 == 0) x = 0.0;
                c.plain = cs.c_plain;
                In a{tref::random_host(cs.a, cs.a_plain ? DType::f64 : ta, rng)};
                a.plain = cs.a_plain;
                In b{tref::random_host(cs.b, cs.b_plain ? DType::f64 : tb, rng)};
                b.plain = cs.b_plain;
                if (cs.c_plain) {
                    c.host.v[0] = 0.0;  // both a true and a false plain condition
                }
                for (int round = 0; round < (cs.c_plain ? 2 : 1); ++round) {
                    if (cs.c_plain) c.host.v[0] = round == 0 ? 0.0 : -3.5;
                    const DType compute = compute_type(a.host.dtype, b.host.dtype);
                    const DType out = tandem::arithmetic_result(a.host.dtype, b.host.dtype);
                    // The condition's own type does not take part in the conversion.
                    Host cc = c.host;
                    for (auto& x : cc.v) x = x != 0.0 ? 1.0 : 0.0;
                    Host aa = a.host, bb = b.host;
                    if (compute == DType::f32) {
                        for (auto& x : aa.v) x = tref::to_type(x, DType::f32);
                        for (auto& x : bb.v) x = tref::to_type(x, DType::f32);
                    }
                    Host want = tref::apply({&cc, &aa, &bb}, DType::f64, out,
                                            [](const std::vector<double>& x) { return x[0] != 0.0 ? x[1] : x[2]; });
                    Array r = tandem::where(operand(rt, c), operand(rt, a), operand(rt, b));
                    EXPECT_EQ(r.shape(), tref::to_shape(want.dims));
                    EXPECT_EQ(r.dtype(), out);
                    EXPECT_TRUE(tref::same_values(tref::gather(r), want, Acc::exact_signed));
                }
            }
        }
    }
}

// ---- casts -------------------------------------------------------------------------------------

void run_casts(tandem::Runtime& rt);

TEST(Cast, EveryTypeToEveryType) {
    for (const auto& isa : isas()) {
        tandem::Runtime rt(isa_config(isa));
        SCOPED_TRACE("cpu_isa cap " + isa + " -> " + rt.info().cpu_isa);
        run_casts(rt);
    }
}

void run_casts(tandem::Runtime& rt) {
    for (DType from : {DType::f64, DType::f32, DType::logical}) {
        for (DType to : {DType::f64, DType::f32, DType::logical}) {
            for (int variant = 0; variant < 2; ++variant) {
                const std::string what = std::string(tref::dtype_str(from)) + " -> " + tref::dtype_str(to) +
                                         (variant ? " (named function)" : " (astype)");
                SCOPED_TRACE(what);
                std::mt19937_64 rng(seed_of("cast" + what));
                Host in = tref::random_host({47, 13}, from, rng);
                auto sp = tref::special_values(from);
                std::copy(sp.begin(), sp.end(), in.v.begin());
                if (to == DType::logical) make_logical_safe(in);  // NaN -> logical is an error (test_errors)
                Host want = tref::apply({&in}, DType::f64, to, [](const std::vector<double>& x) { return x[0]; });
                Array x = tref::make_array(rt, in);
                Array r = variant == 0              ? tandem::astype(x, to)
                          : to == DType::f64        ? tandem::as_double(x)
                          : to == DType::f32        ? tandem::single(x)
                                                    : tandem::logical(x);
                EXPECT_EQ(r.dtype(), to);
                EXPECT_EQ(r.shape(), tandem::Shape({47, 13}));
                EXPECT_TRUE(tref::same_values(tref::gather(r), want, Acc::exact_signed));
            }
        }
    }
}

TEST(Cast, DoubleToSingleRoundsToNearestAndOverflowsToInf) {
    tandem::Runtime rt;
    std::vector<double> d = {0.1, 1e300, -1e300, 1e-310, 16777217.0, 3.4028235677973366e38, 1.0000000596046448};
    auto h = tandem::single(rt.array(std::span<const double>(d))).gather().get();
    ASSERT_EQ(h.dtype(), DType::f32);
    const float* p = h.data<float>();
    EXPECT_EQ(p[0], 0.1f);
    EXPECT_EQ(p[1], INFINITY);
    EXPECT_EQ(p[2], -INFINITY);
    EXPECT_EQ(p[3], 0.0f);
    EXPECT_EQ(p[4], 16777216.0f) << "ties to even";
    EXPECT_EQ(p[5], static_cast<float>(3.4028235677973366e38));
    EXPECT_EQ(p[6], static_cast<float>(1.0000000596046448));
}

// ---- hand-checked values (independent of the reference functions) ------------------------------

TEST(Semantics, HandCheckedValues) {
    tandem::Runtime rt;
    auto v = [&](std::vector<double> d) { return rt.array(std::span<const double>(d), tandem::Shape{1, static_cast<std::int64_t>(d.size())}); };
    auto vals = [](const Array& a) { return a.gather().get().to_doubles(); };
    EXPECT_EQ(vals(tandem::round(v({2.5, -2.5, 0.5, -0.5, 1.49999, 0.49999999999999994}))),
              (std::vector<double>{3, -3, 1, -1, 1, 0}));
    EXPECT_EQ(vals(tandem::fix(v({2.7, -2.7, 0.2}))), (std::vector<double>{2, -2, 0}));
    EXPECT_EQ(vals(tandem::mod(v({5, -5, 5, -5, 5, 5.5, -1}), v({3, 3, -3, -3, 0, 2, tref::kInf}))),
              (std::vector<double>{2, 1, -1, -2, 5, 1.5, tref::kInf}));
    auto r = vals(tandem::rem(v({5, -5, 5, 5}), v({3, 3, -3, 0})));
    EXPECT_EQ(r[0], 2);
    EXPECT_EQ(r[1], -2);
    EXPECT_EQ(r[2], 2);
    EXPECT_TRUE(std::isnan(r[3]));
    // MATLAB compensates round-off: a / b within round-off of an integer (b not one) gives 0,
    // with the sign of b (mod) or of a (rem); elsewhere the exact remainder.
    const auto snapped = vals(tandem::mod(v({0.3, -0.3, 1.0, 0.7, 0.3, 3.0, 0.35}), v({0.1, 0.1, 0.1, 0.1, -0.1, 0.2, 0.1})));
    EXPECT_EQ(std::vector<double>(snapped.begin(), snapped.end() - 1), (std::vector<double>{0, 0, 0, 0, 0, 0}));
    EXPECT_TRUE(std::signbit(snapped[4])) << "mod(0.3, -0.1): the sign of b";
    EXPECT_NEAR(snapped[6], 0.05, 1e-15) << "mod(0.35, 0.1): not near an integer quotient";
    const auto rsnap = vals(tandem::rem(v({0.3, -0.3, 0.35}), v({0.1, 0.1, 0.1})));
    EXPECT_EQ(rsnap[0], 0.0);
    EXPECT_TRUE(rsnap[1] == 0.0 && std::signbit(rsnap[1])) << "rem(-0.3, 0.1): the sign of a";
    EXPECT_NEAR(rsnap[2], 0.05, 1e-15);
    EXPECT_EQ(vals(tandem::mod(tandem::single(v({0.3, 5.5})), tandem::single(v({0.1, 2})))), (std::vector<double>{0, 1.5}));
    auto m = vals(tandem::mod(v({tref::kInf, tref::kNaN, 3}), v({2, 2, tref::kNaN})));
    EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]) && std::isnan(m[2]));
    auto mx = vals(tandem::max(v({tref::kNaN, 1, tref::kNaN, -2}), v({3, tref::kNaN, tref::kNaN, -1})));
    EXPECT_EQ(mx[0], 3);
    EXPECT_EQ(mx[1], 1);
    EXPECT_TRUE(std::isnan(mx[2]));
    EXPECT_EQ(mx[3], -1);
    auto mn = vals(tandem::min(v({tref::kNaN, 1, -2}), 0));
    EXPECT_EQ(mn, (std::vector<double>{0, 0, -2}));
    auto sg = vals(tandem::sign(v({-3, 0, -0.0, 2, tref::kNaN, -tref::kInf})));
    EXPECT_EQ(sg[0], -1);
    EXPECT_EQ(sg[1], 0);
    EXPECT_EQ(sg[2], 0);
    EXPECT_EQ(sg[3], 1);
    EXPECT_TRUE(std::isnan(sg[4]));
    EXPECT_EQ(sg[5], -1);
    auto pw = vals(tandem::power(v({-8, tref::kNaN, 2, -2, 0}), v({1.0 / 3.0, 0, 10, 3, -1})));
    EXPECT_TRUE(std::isnan(pw[0]));
    EXPECT_EQ(pw[1], 1);
    EXPECT_EQ(pw[2], 1024);
    EXPECT_EQ(pw[3], -8);
    EXPECT_EQ(pw[4], tref::kInf);
    EXPECT_EQ(vals(tandem::ldivide(v({2, 4}), v({1, 1}))), (std::vector<double>{0.5, 0.25}));
    auto ne = tandem::ne(v({tref::kNaN}), v({tref::kNaN})).gather().get();
    EXPECT_EQ(ne.data<std::uint8_t>()[0], 1) << "NaN ~= NaN is true";
    auto eqn = (v({tref::kNaN}) == v({tref::kNaN})).gather().get();
    EXPECT_EQ(eqn.data<std::uint8_t>()[0], 0);
    auto sq = vals(tandem::sqrt(v({-1, 4})));
    EXPECT_TRUE(std::isnan(sq[0])) << "real-valued: sqrt(-1) is NaN";
    EXPECT_EQ(sq[1], 2);
    auto lg = vals(tandem::log(v({-1, 0})));
    EXPECT_TRUE(std::isnan(lg[0]));
    EXPECT_EQ(lg[1], -tref::kInf);
}

TEST(Semantics, LogicalArithmeticIsDouble) {
    tandem::Runtime rt;
    std::vector<std::uint8_t> t = {1, 1, 0};
    auto l = rt.logical_array(std::span<const std::uint8_t>(t), tandem::Shape{1, 3});
    auto s = l + l;
    EXPECT_EQ(s.dtype(), DType::f64);
    EXPECT_EQ(s.gather().get().to_doubles(), (std::vector<double>{2, 2, 0}));
    EXPECT_EQ((-l).dtype(), DType::f64);
    EXPECT_EQ((l * 0.5).gather().get().to_doubles(), (std::vector<double>{0.5, 0.5, 0}));
    EXPECT_EQ((l & l).dtype(), DType::logical);
    EXPECT_EQ((l < 1).dtype(), DType::logical);
    EXPECT_EQ(tandem::single(l).dtype(), DType::f32);
    EXPECT_EQ((tandem::single(l) + l).dtype(), DType::f32);
}

TEST(Semantics, MixedSingleDoubleComputesInSingle) {
    tandem::Runtime rt;
    std::vector<float> f = {0.1f, 1.0f};
    auto x = rt.array(std::span<const float>(f), tandem::Shape{1, 2});
    // 0.1 (double) is rounded to 0.1f first, so it equals the single 0.1f.
    auto e = (x == 0.1).gather().get();
    ASSERT_EQ(e.dtype(), DType::logical);
    EXPECT_EQ(e.data<std::uint8_t>()[0], 1);
    auto s = (x + 1e-10).gather().get();
    ASSERT_EQ(s.dtype(), DType::f32);
    EXPECT_EQ(s.data<float>()[0], 0.1f + static_cast<float>(1e-10));
    EXPECT_EQ(s.data<float>()[1], 1.0f);
    auto big = (x * 1e300).gather().get();
    EXPECT_EQ(big.data<float>()[1], INFINITY) << "1e300 converted to single is Inf";
}

}  // namespace
