// The Vulkan backend end to end, through the public API only: every region of a GPU runtime
// (Config::device = "vulkan", device_min_elements = 0) runs on the Vulkan device (lavapipe in
// CI) with the Khronos validation layer on, and is compared with a CPU-only runtime fed the
// same inputs:
//  - every elementwise op in double, single, mixed and logical, over the shape patterns of
//    test_elementwise.cpp, on data full of special values: bit-identical, except the
//    transcendental functions (within 4 ulp of the CPU, NaN/Inf positions identical);
//  - random fused trees: bit-identical without transcendental ops; trees of ops with bounded
//    derivatives (sin, tanh, exp(-|x|), hypot, ...) within a tolerance relative to magnitude;
//  - multi-output plans, regions of several shapes, a plan split between the CPU and the GPU;
//  - NaN converted to logical on the GPU: the error reaches the future, naming the op;
//  - injected faults (compile, oom, device_lost, submit_failed): the work completes on the CPU;
//  - the on-disk pipeline cache: reuse by a second runtime, corrupt files rebuilt;
//  - an array larger than lavapipe's maxStorageBufferRange (128 MiB).
// Every GPU test ends with Metrics::validation_messages == 0, and checks that the regions did
// run on the device (no silent fallback to the CPU).
//
// No Vulkan device: the tests FAIL (CI installs lavapipe and the validation layers).
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "random_trees.hpp"
#include "reference.hpp"
#include "vulkan_runtime.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Operand;
using tandem::Runtime;
using tref::Acc;
using tref::Dims;
using tref::Host;

namespace {

// ---- runtimes (vulkan_runtime.hpp) ---------------------------------------------------------------

using tvk::cpu_config;
using tvk::expect_device_clean;
using tvk::gpu_config;
using tvk::open_gpu;

std::uint64_t seed_of(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

std::string sanitize(const std::string& n) {
    std::string out;
    for (char c : n) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

// ---- the op table --------------------------------------------------------------------------------

enum class Cls {
    exact,    ///< bit-identical to the CPU, the sign of zero included
    logical,  ///< logical ops: bit-identical; a NaN operand is an error (inputs made NaN-free)
    trans,    ///< transcendental: within 4 ulp of the CPU, NaN/Inf positions identical
};

constexpr double kTransUlps = 4.0;

struct Op {
    std::string name;
    int arity;
    Cls cls;
    std::function<Array(const std::vector<Operand>&)> make;
};

Op un(std::string name, Cls cls, Array (*f)(const Array&)) {
    return {std::move(name), 1, cls, [f](const std::vector<Operand>& x) { return f(x.at(0).array()); }};
}
Op bin(std::string name, Cls cls, Array (*f)(const Operand&, const Operand&)) {
    return {std::move(name), 2, cls, [f](const std::vector<Operand>& x) { return f(x.at(0), x.at(1)); }};
}

const std::vector<Op>& binary_ops() {
    static const std::vector<Op> ops = {
        bin("plus", Cls::exact, tandem::plus), bin("minus", Cls::exact, tandem::minus),
        bin("times", Cls::exact, tandem::times), bin("rdivide", Cls::exact, tandem::rdivide),
        bin("ldivide", Cls::exact, tandem::ldivide), bin("mod", Cls::exact, tandem::mod),
        bin("rem", Cls::exact, tandem::rem), bin("min", Cls::exact, tandem::min), bin("max", Cls::exact, tandem::max),
        bin("eq", Cls::exact, tandem::eq), bin("ne", Cls::exact, tandem::ne), bin("lt", Cls::exact, tandem::lt),
        bin("le", Cls::exact, tandem::le), bin("gt", Cls::exact, tandem::gt), bin("ge", Cls::exact, tandem::ge),
        {"op+", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] + x[1]; }},
        {"op/", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] / x[1]; }},
        {"op<", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] < x[1]; }},
        bin("and", Cls::logical, tandem::logical_and), bin("or", Cls::logical, tandem::logical_or),
        bin("xor", Cls::logical, tandem::logical_xor),
        {"op&", 2, Cls::logical, [](const std::vector<Operand>& x) { return x[0] & x[1]; }},
        {"op|", 2, Cls::logical, [](const std::vector<Operand>& x) { return x[0] | x[1]; }},
        bin("atan2", Cls::trans, tandem::atan2), bin("hypot", Cls::trans, tandem::hypot),
        bin("power", Cls::trans, tandem::power),
    };
    return ops;
}

const std::vector<Op>& unary_ops() {
    static const std::vector<Op> ops = {
        un("uminus", Cls::exact, tandem::uminus), un("abs", Cls::exact, tandem::abs), un("sqrt", Cls::exact, tandem::sqrt),
        un("floor", Cls::exact, tandem::floor), un("ceil", Cls::exact, tandem::ceil), un("round", Cls::exact, tandem::round),
        un("fix", Cls::exact, tandem::fix), un("sign", Cls::exact, tandem::sign), un("isnan", Cls::exact, tandem::isnan),
        un("isinf", Cls::exact, tandem::isinf), un("isfinite", Cls::exact, tandem::isfinite),
        un("single", Cls::exact, tandem::single), un("double", Cls::exact, tandem::as_double),
        {"astype(f32)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f32); }},
        {"astype(f64)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f64); }},
        {"op-", 1, Cls::exact, [](const std::vector<Operand>& x) { return -x[0].array(); }},
        un("not", Cls::logical, tandem::logical_not), un("logical", Cls::logical, tandem::logical),
        {"astype(logical)", 1, Cls::logical, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::logical); }},
        {"op!", 1, Cls::logical, [](const std::vector<Operand>& x) { return !x[0].array(); }},
        un("exp", Cls::trans, tandem::exp), un("log", Cls::trans, tandem::log), un("log2", Cls::trans, tandem::log2),
        un("log10", Cls::trans, tandem::log10), un("log1p", Cls::trans, tandem::log1p), un("expm1", Cls::trans, tandem::expm1),
        un("sin", Cls::trans, tandem::sin), un("cos", Cls::trans, tandem::cos), un("tan", Cls::trans, tandem::tan),
        un("asin", Cls::trans, tandem::asin), un("acos", Cls::trans, tandem::acos), un("atan", Cls::trans, tandem::atan),
        un("sinh", Cls::trans, tandem::sinh), un("cosh", Cls::trans, tandem::cosh), un("tanh", Cls::trans, tandem::tanh),
    };
    return ops;
}

// ---- inputs ------------------------------------------------------------------------------------

/// One operand: an array, or a plain number (an Operand holding a double).
struct In {
    Host host;  ///< for a plain number: 1x1 f64 holding it
    bool plain = false;
};

In plain(double v) { return In{Host{{1, 1}, DType::f64, {v}}, true}; }

std::string describe_in(const In& in) {
    if (in.plain) return "number " + tref::fmt(in.host.v[0]);
    return std::string(tref::dtype_str(in.host.dtype)) + " " + tref::dims_str(in.host.dims);
}

/// Random data with the special values of its type at the front.
Host data(const Dims& dims, DType t, std::mt19937_64& rng) {
    Host h = tref::random_host(dims, t, rng);
    const auto sp = tref::special_values(t);
    for (std::size_t i = 0; i < sp.size() && i < h.v.size(); ++i) h.v[i] = sp[i];
    return h;
}

/// For logical ops (a NaN operand is an error): NaN -> 2; with mixed single/double operands,
/// doubles whose zero-ness changes when rounded to single are nudged.
void make_logical_safe(In& in, bool mixed) {
    for (auto& x : in.host.v) {
        if (std::isnan(x)) x = 2.0;
        else if (mixed && x != 0 && std::abs(x) < 1e-45) x = std::copysign(0.75, x);
    }
}

/// Results of a list of ops on the same inputs, in one gather per runtime (one multi-output
/// plan), compared output by output.
void check_ops(Runtime& gpu, Runtime& cpu, const std::vector<const Op*>& ops, std::vector<In> ins,
               const std::string& what) {
    if (ops.empty()) return;
    const bool logical = ops[0]->cls == Cls::logical;
    if (logical) {
        bool mixed = false;
        for (const auto& in : ins) mixed = mixed || (!in.plain && in.host.dtype == DType::f32);
        for (auto& in : ins) {
            if (in.plain && std::isnan(in.host.v[0])) return;  // an error: tested in LogicalNaN
            make_logical_safe(in, mixed);
        }
    }
    std::string names;
    for (auto* op : ops) names += " " + op->name;
    std::string inputs;
    for (const auto& in : ins) inputs += " [" + describe_in(in) + "]";
    SCOPED_TRACE(what + ":" + inputs + " ops:" + names);

    auto build = [&](Runtime& rt) {
        std::vector<Operand> xs;
        for (const auto& in : ins) xs.push_back(in.plain ? Operand(in.host.v[0]) : Operand(tref::make_array(rt, in.host)));
        std::vector<Array> outs;
        for (auto* op : ops) outs.push_back(op->make(xs));
        return outs;
    };
    std::vector<tandem::HostArray> hg, hc;
    try {
        hc = cpu.gather(build(cpu)).get();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "CPU gather threw: " << e.what();
        return;
    }
    const auto m0 = gpu.metrics();
    try {
        hg = gpu.gather(build(gpu)).get();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "GPU gather threw: " << e.what();
        return;
    }
    const auto m1 = gpu.metrics();
    EXPECT_EQ(m1.device_fallbacks, m0.device_fallbacks) << "a region fell back to the CPU";
    ASSERT_EQ(hg.size(), ops.size());
    for (std::size_t k = 0; k < ops.size(); ++k) {
        const Host g = tref::from_host_array(hg[k]), c = tref::from_host_array(hc[k]);
        std::vector<tref::Indexer> idx;
        for (const auto& in : ins) idx.emplace_back(c.dims, in.host.dims);
        auto describe = [&](std::int64_t i) {
            std::string s;
            for (std::size_t j = 0; j < ins.size(); ++j)
                s += (j ? ", " : "") + tref::fmt(ins[j].host.v[static_cast<std::size_t>(idx[j](i))]);
            return s;
        };
        const bool trans = ops[k]->cls == Cls::trans;
        EXPECT_TRUE(tref::same_values(g, c, trans ? Acc::ulp : Acc::exact_signed, kTransUlps, describe))
            << ops[k]->name << " (" << what << "," << inputs << "): GPU vs CPU";
    }
}

struct Pattern {
    std::string name;
    Dims a, b;
};

const std::vector<Pattern>& binary_patterns() {
    static const std::vector<Pattern> p = {
        {"same", {61, 70}, {61, 70}},
        {"scalar-array", {1, 1}, {7, 6}},
        {"array-scalar", {7, 6}, {1, 1}},
        {"column-row", {5, 1}, {1, 4}},
        {"nd-expansion", {3, 1, 4}, {1, 5, 1}},
        {"empty-0x3-1x3", {0, 3}, {1, 3}},
    };
    return p;
}

const std::vector<double>& plain_numbers() {
    static const std::vector<double> p = {tref::kNaN, -0.0, 0.0, 2.5, -tref::kInf, 0.5, 3.0, -1.0, 1e-310, 1e300};
    return p;
}

std::vector<const Op*> of_class(const std::vector<Op>& ops, Cls c) {
    std::vector<const Op*> r;
    for (const auto& op : ops)
        if (op.cls == c) r.push_back(&op);
    return r;
}

struct TypePair {
    DType a, b;
};

class VulkanBackendBinary : public ::testing::TestWithParam<TypePair> {};

/// Every binary op for one pair of element types, over every pattern, GPU vs CPU. Non-
/// transcendental ops of a class share one gather (one fused multi-output region);
/// transcendental ones are gathered one by one.
TEST_P(VulkanBackendBinary, EveryOpEveryPatternMatchesCpu) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    const auto [ta, tb] = GetParam();
    const std::string types = std::string(tref::dtype_str(ta)) + "," + tref::dtype_str(tb);
    const auto exact = of_class(binary_ops(), Cls::exact), logical = of_class(binary_ops(), Cls::logical),
               trans = of_class(binary_ops(), Cls::trans);
    auto run_all = [&](const std::vector<In>& ins, const std::string& what) {
        check_ops(*gpu, cpu, exact, ins, what);
        check_ops(*gpu, cpu, logical, ins, what);
        for (auto* op : trans) check_ops(*gpu, cpu, {op}, ins, what);
    };
    for (const auto& p : binary_patterns()) {
        std::mt19937_64 rng(seed_of(types + p.name));
        run_all({In{data(p.a, ta, rng)}, In{data(p.b, tb, rng)}}, types + " " + p.name);
    }
    {
        // Every special value against every special value (a column against a row).
        auto sa = tref::special_values(ta), sb = tref::special_values(tb);
        run_all({In{Host{{static_cast<std::int64_t>(sa.size()), 1}, ta, sa}},
                 In{Host{{1, static_cast<std::int64_t>(sb.size())}, tb, sb}}},
                types + " specials-table");
    }
    // Plain numbers on either side (double scalars).
    std::mt19937_64 rng(seed_of(types + "plain"));
    const Host ha = data({9, 8}, ta, rng), hb = data({9, 8}, tb, rng);
    for (double v : plain_numbers()) {
        if (tb == DType::f64) run_all({In{ha}, plain(v)}, types + " array-number");
        if (ta == DType::f64) run_all({plain(v), In{hb}}, types + " number-array");
    }
    expect_device_clean(*gpu);
}

INSTANTIATE_TEST_SUITE_P(VulkanBackend, VulkanBackendBinary,
                         ::testing::Values(TypePair{DType::f64, DType::f64}, TypePair{DType::f32, DType::f32},
                                           TypePair{DType::f64, DType::f32}, TypePair{DType::f32, DType::f64},
                                           TypePair{DType::logical, DType::logical},
                                           TypePair{DType::logical, DType::f64}, TypePair{DType::f32, DType::logical}),
                         [](const auto& p) {
                             return std::string(tref::dtype_str(p.param.a)) + "_" + tref::dtype_str(p.param.b);
                         });

class VulkanBackendUnary : public ::testing::TestWithParam<DType> {};

TEST_P(VulkanBackendUnary, EveryOpEveryShapeMatchesCpu) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    const DType t = GetParam();
    const auto exact = of_class(unary_ops(), Cls::exact), logical = of_class(unary_ops(), Cls::logical),
               trans = of_class(unary_ops(), Cls::trans);
    const std::vector<std::pair<std::string, Dims>> shapes = {
        {"matrix", {61, 70}}, {"scalar", {1, 1}}, {"empty", {0, 3}}, {"nd", {3, 4, 2, 2}}, {"row", {1, 9}}};
    for (const auto& [name, dims] : shapes) {
        std::mt19937_64 rng(seed_of(std::string(tref::dtype_str(t)) + name));
        const std::vector<In> ins = {In{data(dims, t, rng)}};
        const std::string what = std::string(tref::dtype_str(t)) + " " + name;
        check_ops(*gpu, cpu, exact, ins, what);
        check_ops(*gpu, cpu, logical, ins, what);
        for (auto* op : trans) check_ops(*gpu, cpu, {op}, ins, what);
    }
    expect_device_clean(*gpu);
}

INSTANTIATE_TEST_SUITE_P(VulkanBackend, VulkanBackendUnary, ::testing::Values(DType::f64, DType::f32, DType::logical),
                         [](const auto& p) { return std::string(tref::dtype_str(p.param)); });

TEST(VulkanBackendOps, WhereMatchesCpu) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    const Op where{"where", 3, Cls::exact,
                   [](const std::vector<Operand>& x) { return tandem::where(x[0], x[1], x[2]); }};
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
    const TypePair value_types[] = {
        {DType::f64, DType::f64}, {DType::f32, DType::f32}, {DType::f64, DType::f32}, {DType::logical, DType::f64}};
    for (DType tc : {DType::f64, DType::logical, DType::f32}) {
        for (auto [ta, tb] : value_types) {
            if (tc == DType::f32 && ta != tb) continue;  // keeps the kernel count (the runtime) down
            for (const auto& cs : cases) {
                const std::string what = std::string("where cond ") + tref::dtype_str(tc) + " values " +
                                         tref::dtype_str(ta) + "," + tref::dtype_str(tb) + " " + cs.name;
                std::mt19937_64 rng(seed_of(what));
                In c{data(cs.c, cs.c_plain ? DType::f64 : tc, rng), cs.c_plain};
                for (auto& x : c.host.v) {
                    if (std::isnan(x)) x = 2.0;  // NaN as a condition is an error (LogicalNaN)
                    else if (std::abs(x) < 1e-45 && x != 0) x = 0.75;
                    if (rng() % 3 == 0) x = 0.0;
                }
                In a{data(cs.a, cs.a_plain ? DType::f64 : ta, rng), cs.a_plain};
                In b{data(cs.b, cs.b_plain ? DType::f64 : tb, rng), cs.b_plain};
                for (double cv : cs.c_plain ? std::vector<double>{0.0, -3.5} : std::vector<double>{1.0}) {
                    if (cs.c_plain) c.host.v[0] = cv;
                    check_ops(*gpu, cpu, {&where}, {c, a, b}, what);
                }
            }
        }
    }
    expect_device_clean(*gpu);
}

TEST(VulkanBackendOps, CastsEveryTypeToEveryTypeMatchCpu) {
    // Casts between every pair of types (the named functions and astype), special values included.
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    const std::vector<Op> casts = {
        un("single", Cls::exact, tandem::single), un("double", Cls::exact, tandem::as_double),
        {"astype(f32)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f32); }},
        {"astype(f64)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f64); }},
        un("logical", Cls::logical, tandem::logical),
        {"astype(logical)", 1, Cls::logical, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::logical); }},
        // a cast inside a fused chain, both ways
        {"single(x)*3-x", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::single(x[0].array()) * 3.0 - x[0]; }},
        {"double(single(x))+x", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::as_double(tandem::single(x[0].array())) + x[0]; }},
    };
    for (DType from : {DType::f64, DType::f32, DType::logical}) {
        std::mt19937_64 rng(seed_of(std::string("cast") + tref::dtype_str(from)));
        const std::vector<In> ins = {In{data({47, 13}, from, rng)}};
        check_ops(*gpu, cpu, of_class(casts, Cls::exact), ins, std::string("casts from ") + tref::dtype_str(from));
        check_ops(*gpu, cpu, of_class(casts, Cls::logical), ins, std::string("casts from ") + tref::dtype_str(from));
    }
    // double -> single: rounding to nearest, overflow to Inf, underflow to zero, on the GPU
    std::vector<double> d = {0.1, 1e300, -1e300, 1e-310, 16777217.0, 3.4028235677973366e38, 1.0000000596046448, -1e-50};
    auto h = tandem::single(gpu->array(std::span<const double>(d))).gather().get();
    ASSERT_EQ(h.dtype(), DType::f32);
    for (std::size_t i = 0; i < d.size(); ++i) {
        const float want = static_cast<float>(d[i]);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(h.data<float>()[i]), std::bit_cast<std::uint32_t>(want))
            << "single(" << tref::fmt(d[i]) << ") = " << h.data<float>()[i] << ", expected " << want;
    }
    expect_device_clean(*gpu);
}

// ---- random fused trees -------------------------------------------------------------------------

using ttree::Built;
using ttree::Generator;
using ttree::Kind;
using ttree::ShapeSet;
using ttree::Tree;

// 13x11x7 = 1001 elements: lavapipe runs f64 transcendentals slowly, a few thousand at most.
const ShapeSet kFull{"13x11x7", {{13, 11, 7}, {13, 1, 7}, {1, 11, 1}, {1, 1}, {13, 11}, {1, 11, 7}}};
const ShapeSet kEmpty{"13x0x7", {{13, 0, 7}, {13, 1, 7}, {1, 0, 1}, {1, 1}, {13, 0}, {1, 1, 7}}};

// Every non-transcendental op, comparisons, logical ops and where, mixed element types with
// special values: bit-identical to the CPU.
const ttree::Family kExactOps{
    ttree::Style::mixed,
    {"uminus", "abs", "sqrt", "floor", "ceil", "round", "fix", "sign", "isnan", "isinf", "isfinite", "single",
     "double"},
    {"plus", "minus", "times", "rdivide", "ldivide", "mod", "rem", "min", "max"}};

// Ops with bounded derivatives (transcendentals among them) on leaves in [-2, 2] + NaN/Inf:
// close to the CPU relative to the magnitude bound; double leaves, then single.
const std::vector<std::string> kBoundedUnary = {"uminus", "abs",       "sin",       "cos",       "tanh",
                                                "atan",   "exp(-abs)", "sqrt(abs)", "log1p(abs)"};
const std::vector<std::string> kBoundedBinary = {"plus", "minus", "times", "min", "max", "hypot", "div1abs"};
const ttree::Family kBoundedOps{ttree::Style::bounded, kBoundedUnary, kBoundedBinary, DType::f64};
const ttree::Family kBoundedSingleOps{ttree::Style::bounded, kBoundedUnary, kBoundedBinary, DType::f32};

/// GPU vs CPU within `rel` * (1 + magnitude bound); NaN and Inf positions identical.
::testing::AssertionResult close_to(const Host& got, const Host& want, double rel, double magnitude) {
    if (got.dims != want.dims)
        return ::testing::AssertionFailure() << "shape " << tref::dims_str(got.dims) << ", expected " << tref::dims_str(want.dims);
    if (got.dtype != want.dtype)
        return ::testing::AssertionFailure() << "dtype " << tref::dtype_str(got.dtype) << ", expected " << tref::dtype_str(want.dtype);
    std::ostringstream os;
    int bad = 0;
    for (std::size_t k = 0; k < want.v.size(); ++k) {
        const double g = got.v[k], w = want.v[k];
        bool ok;
        if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
        else if (std::isinf(w) || std::isinf(g)) ok = g == w;
        else ok = std::abs(g - w) <= rel * (1 + magnitude);
        if (!ok && bad++ < 5)
            os << "\n  [" << k << "] GPU " << tref::fmt(g) << ", CPU " << tref::fmt(w) << " (magnitude bound " << magnitude << ")";
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << want.v.size() << " elements differ:" << os.str();
}

void run_trees(const ttree::Family& family, const ShapeSet& shapes, int count, std::uint64_t base_seed) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    int max_depth_seen = 0, with_trans = 0;
    for (int it = 0; it < count; ++it) {
        const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(it);
        Generator gen(seed, family);
        Tree t = gen.make(shapes, 1 + it % 8);
        max_depth_seen = std::max(max_depth_seen, t.depth);
        with_trans += t.transcendental ? 1 : 0;
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + t.describe());
        // the root and an inner node, gathered together (a multi-output plan)
        int inner = t.root;
        for (int tries = 0; tries < 10; ++tries) {
            const int j = static_cast<int>((seed * 31 + static_cast<std::uint64_t>(tries) * 7) % t.nodes.size());
            if (t.nodes[static_cast<std::size_t>(j)].kind != Kind::number) {
                inner = j;
                break;
            }
        }
        Built bg(*gpu, t), bc(cpu, t);
        std::vector<tandem::HostArray> hg, hc;
        const auto m0 = gpu->metrics();
        try {
            hc = cpu.gather({bc.array(t.root), bc.array(inner)}).get();
            hg = gpu->gather({bg.array(t.root), bg.array(inner)}).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
            break;
        }
        EXPECT_EQ(gpu->metrics().device_fallbacks, m0.device_fallbacks) << "a region fell back to the CPU";
        for (int k = 0; k < 2; ++k) {
            const Host g = tref::from_host_array(hg[static_cast<std::size_t>(k)]);
            const Host c = tref::from_host_array(hc[static_cast<std::size_t>(k)]);
            const char* which = k == 0 ? "root" : "inner node";
            if (family.style == ttree::Style::mixed) {
                EXPECT_TRUE(tref::same_values(g, c, Acc::exact_signed)) << which << ": GPU vs CPU";
            } else {
                const double rel = family.leaf_dtype == DType::f64 ? 1e-9 : 1e-4;
                EXPECT_TRUE(close_to(g, c, rel, gen.bound(k == 0 ? t.root : inner))) << which << ": GPU vs CPU";
            }
        }
        if (::testing::Test::HasFailure()) break;  // one failing tree is enough to look at
    }
    EXPECT_EQ(max_depth_seen, 8) << "the generator should reach depth 8";
    if (family.style == ttree::Style::bounded && shapes.name == kFull.name) {
        EXPECT_GT(with_trans, count / 2) << "most bounded trees should hold a transcendental op";
    }
    expect_device_clean(*gpu);
}

// Tree counts keep this file near a minute on lavapipe with validation: every tree is a new
// kernel, and lavapipe compiles f64 transcendental code slowly (~0.2 s a tree).
TEST(VulkanBackendTrees, ExactOpsBitIdenticalToCpu) { run_trees(kExactOps, kFull, 100, 21000); }
TEST(VulkanBackendTrees, ExactOpsBitIdenticalToCpuEmpty) { run_trees(kExactOps, kEmpty, 16, 23000); }
TEST(VulkanBackendTrees, BoundedOpsDoubleCloseToCpu) { run_trees(kBoundedOps, kFull, 40, 25000); }
TEST(VulkanBackendTrees, BoundedOpsSingleCloseToCpu) { run_trees(kBoundedSingleOps, kFull, 24, 27000); }

// ---- plans: several outputs, several shapes, CPU and GPU together -----------------------------

std::vector<Array> plan_values(Runtime& rt, const Host& col, const Host& row, const Host& mat, const Host& small) {
    Array c = tref::make_array(rt, col), r = tref::make_array(rt, row), m = tref::make_array(rt, mat),
          s = tref::make_array(rt, small);
    Array e = tandem::exp(c * 0.01) + r;            // exp on the column, expanded by the row
    Array big = e * m - tandem::sin(m);             // large: n x k
    Array small_v = tandem::tanh(s) * 2.0 + 1.0;    // small: 1 x k
    Array mixed = big / (1.0 + tandem::abs(small_v));  // large region reading a small value
    Array tall = tandem::hypot(c, 3.0);             // n x 1
    Array cmp = (big > small_v) | (m < 0.0);        // logical output
    Array sgl = tandem::single(big) + 1.0;          // single output
    return {e, big, small_v, mixed, tall, cmp, sgl, small_v - 1.0, tandem::round(big * 1e3)};
}

void compare_plans(const std::vector<tandem::HostArray>& got, const std::vector<tandem::HostArray>& want,
                   const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        const Host g = tref::from_host_array(got[k]), w = tref::from_host_array(want[k]);
        // transcendentals inside: within a tolerance relative to the magnitude (at most ~2e4)
        EXPECT_TRUE(close_to(g, w, g.dtype == DType::f32 ? 1e-5 : 1e-12, 1e3)) << what << ": output " << k;
    }
}

TEST(VulkanBackendPlans, MultiOutputSeveralShapesMatchCpu) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(77);
    const std::int64_t n = 300, k = 40;
    Host col = tref::random_host({n, 1}, DType::f64, rng, false), row = tref::random_host({1, k}, DType::f64, rng, false),
         mat = tref::random_host({n, k}, DType::f64, rng, false), small = tref::random_host({1, k}, DType::f64, rng, false);
    for (auto* h : {&col, &row, &mat, &small})
        for (auto& x : h->v) x = std::fmod(x, 4.0);
    const auto want = cpu.gather(plan_values(cpu, col, row, mat, small)).get();
    const auto got = gpu->gather(plan_values(*gpu, col, row, mat, small)).get();
    compare_plans(got, want, "one plan on the GPU");
    // Gathered one by one too (values reused from the device where they are there).
    auto vals = plan_values(*gpu, col, row, mat, small);
    std::vector<tandem::Future<tandem::HostArray>> fs;
    for (auto& v : vals) fs.push_back(v.gather());
    std::vector<tandem::HostArray> one_by_one;
    for (auto& f : fs) one_by_one.push_back(f.get());
    compare_plans(one_by_one, want, "separate gathers on the GPU");
    // A value computed on the GPU, kept there, used by a later plan.
    Array kept = vals[1] * 2.0;
    auto h1 = kept.gather().get();
    Array later = kept + tandem::cos(vals[0]);
    auto h2 = later.gather().get();
    auto cv = plan_values(cpu, col, row, mat, small);
    auto w1 = (cv[1] * 2.0).gather().get();
    auto w2 = ((cv[1] * 2.0) + tandem::cos(cv[0])).gather().get();
    compare_plans({h1, h2}, {w1, w2}, "a GPU value used by a later plan");
    expect_device_clean(*gpu);
}

TEST(VulkanBackendPlans, SmallRegionsOnCpuLargeOnGpuInOnePlan) {
    // device_min_elements = 1000: the 1 x 40 regions run on the CPU, the 300 x 40 ones on the GPU,
    // in one plan; the results equal a CPU-only runtime's.
    tandem::Config c = gpu_config();
    c.device_min_elements = 1000;
    auto mixed = open_gpu(c);
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(78);
    const std::int64_t n = 300, k = 40;
    Host col = tref::random_host({n, 1}, DType::f64, rng, false), row = tref::random_host({1, k}, DType::f64, rng, false),
         mat = tref::random_host({n, k}, DType::f64, rng, false), small = tref::random_host({1, k}, DType::f64, rng, false);
    for (auto* h : {&col, &row, &mat, &small})
        for (auto& x : h->v) x = std::fmod(x, 4.0);
    const auto m0 = mixed->metrics();
    const auto got = mixed->gather(plan_values(*mixed, col, row, mat, small)).get();
    const auto m1 = mixed->metrics();
    const auto want = cpu.gather(plan_values(cpu, col, row, mat, small)).get();
    compare_plans(got, want, "a plan split between CPU and GPU");
    EXPECT_GT(m1.device_regions - m0.device_regions, 0u) << "the large regions should run on the GPU";
    EXPECT_GT(m1.regions_executed - m0.regions_executed, m1.device_regions - m0.device_regions)
        << "the small regions should run on the CPU";
    // A large value on the GPU read by a region below the threshold (0 elements, on the CPU), and
    // a small CPU value read by a GPU region.
    Array big = tandem::exp(tref::make_array(*mixed, mat) * 0.1);  // GPU, stays there
    Array none = big + mixed->zeros(tandem::Shape{n, k, 0});       // n x k x 0: CPU
    Array s = tandem::sin(tref::make_array(*mixed, small));        // CPU
    Array both = big * s;                                          // GPU
    auto h = mixed->gather({none, both}).get();
    Array cbig = tandem::exp(tref::make_array(cpu, mat) * 0.1);
    auto hw = cpu.gather({cbig + cpu.zeros(tandem::Shape{n, k, 0}), cbig * tandem::sin(tref::make_array(cpu, small))}).get();
    compare_plans(h, hw, "GPU value read by an empty CPU region; CPU value read by a GPU region");
    expect_device_clean(*mixed);
}

// ---- logical ops on NaN: an error on the GPU too -----------------------------------------------

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

template <class E>
std::string gather_error(const Array& a) {
    try {
        (void)a.gather().get();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected " << typeid(E).name() << ", got: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected " << typeid(E).name() << ", the gather succeeded";
    return {};
}

TEST(VulkanBackendErrors, LogicalOfNaNFailsThroughTheFutureNamingTheOp) {
    auto gpu = open_gpu();
    std::vector<double> d(3000, 1.5);
    d[17] = tref::kNaN;
    d[2999] = -2.0;
    Array x = gpu->array(std::span<const double>(d));
    const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> cases = {
        {"logical", [](const Array& a) { return tandem::logical(a); }},
        {"and", [](const Array& a) { return a & 1.0; }},
        {"or", [](const Array& a) { return 0.0 | tandem::sin(a); }},
        {"xor", [](const Array& a) { return tandem::logical_xor(a > 0.0, a * 2.0); }},
        {"not", [](const Array& a) { return !(a + 1.0); }},
        {"where", [](const Array& a) { return tandem::where(a, 1.0, 2.0); }},
    };
    for (const auto& [name, make] : cases) {
        SCOPED_TRACE(name);
        Array bad = make(x);
        const std::string m = gather_error<tandem::ValueError>(bad);
        EXPECT_TRUE(contains(m, "NaN")) << m;
        EXPECT_TRUE(contains(m, name)) << m;
        EXPECT_THROW((void)bad.gather().get(), tandem::ValueError) << "a second gather gives the same error";
        EXPECT_THROW((void)(bad * 2.0).gather().get(), tandem::ValueError) << "a dependent value fails too";
    }
    // single precision too
    std::vector<float> f(2000, 0.25f);
    f[1999] = std::numeric_limits<float>::quiet_NaN();
    Array xf = gpu->array(std::span<const float>(f), tandem::Shape{1, 2000});
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(xf | 0.0), "NaN"));
    // without NaN: fine, on the GPU
    std::vector<double> ok = {1, 0, -2, 0.5};
    auto h = tandem::logical(gpu->array(std::span<const double>(ok))).gather().get().to_doubles();
    EXPECT_EQ(h, (std::vector<double>{1, 0, 1, 1}));
    expect_device_clean(*gpu);
}

TEST(VulkanBackendErrors, NaNErrorInAMultiOutputGatherLeavesTheOthersCorrect) {
    auto gpu = open_gpu();
    Runtime cpu(cpu_config());
    std::mt19937_64 rng(5);
    Host hx = tref::random_host({50, 40}, DType::f64, rng);  // NaN among the values
    hx.v[123] = tref::kNaN;
    Array x = tref::make_array(*gpu, hx);
    Array good = x * 2.0 + tandem::exp(x * 0.001);  // same shape as bad: may share its region
    Array good2 = tandem::floor(x) - 1.0;
    Array bad = tandem::logical_and(x, good);       // NaN in x: an error
    auto f = gpu->gather({good, bad, good2});
    EXPECT_THROW((void)f.get(), tandem::ValueError) << "the plan's future carries the error";
    // Issued together, separately: the bad one fails, the others are correct.
    auto fg = good.gather(), fb = bad.gather(), fg2 = good2.gather();
    EXPECT_THROW((void)fb.get(), tandem::ValueError);
    Array cx = tref::make_array(cpu, hx);
    auto want = cpu.gather({cx * 2.0 + tandem::exp(cx * 0.001), tandem::floor(cx) - 1.0}).get();
    try {
        EXPECT_TRUE(tref::same_values(tref::from_host_array(fg.get()), tref::from_host_array(want[0]), Acc::ulp, 4))
            << "x*2 + exp(x/1000) does not depend on the failed and(x, ...)";
        EXPECT_TRUE(tref::same_values(tref::from_host_array(fg2.get()), tref::from_host_array(want[1]), Acc::exact_signed));
    } catch (const std::exception& e) {
        ADD_FAILURE() << "an output that does not depend on the NaN failed: " << e.what();
    }
    // The runtime goes on: new work on the GPU.
    auto h = (x * 0.0 + 3.0).gather().get();
    EXPECT_EQ(h.at(0), 3.0);
    // A multi-output region with a data error is run again on the CPU by design (the GPU flags
    // the error for the whole region; the CPU tells which outputs it reaches): fallbacks allowed.
    expect_device_clean(*gpu, /*fallbacks_allowed=*/true);
}

// ---- injected faults: the work completes on the CPU ---------------------------------------------

/// A few plans, each compared with a CPU runtime.
void run_fault_workload(Runtime& rt, Runtime& cpu, const std::string& what) {
    std::mt19937_64 rng(seed_of(what));
    Host a = tref::random_host({40, 30}, DType::f64, rng), b = tref::random_host({40, 1}, DType::f64, rng);
    Host fa = tref::random_host({40, 30}, DType::f32, rng);
    auto exprs = [](Runtime& r, const Host& ha, const Host& hb, const Host& hf) {
        Array x = tref::make_array(r, ha), y = tref::make_array(r, hb), z = tref::make_array(r, hf);
        Array p = x + y * 2.0;
        Array q = tandem::max(p, 0.5) - tandem::floor(x);
        Array s = z * 3.0f + 1.0;
        return std::vector<Array>{p, q, s, tandem::mod(q, y), p > y};
    };
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(what + " round " + std::to_string(round));
        std::vector<tandem::HostArray> got;
        try {
            got = rt.gather(exprs(rt, a, b, fa)).get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "gather threw: " << e.what();
            continue;
        }
        const auto want = cpu.gather(exprs(cpu, a, b, fa)).get();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed))
                << "output " << k;
        for (auto& x : a.v) x = x * 0.5 + 1.0;  // new inputs each round
    }
}

class VulkanBackendFault : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanBackendFault, WorkCompletesOnTheCpu) {
    tandem::Config c = gpu_config();
    c.test_fault = GetParam();
    testing::internal::CaptureStderr();
    std::unique_ptr<Runtime> gpu;
    try {
        gpu = open_gpu(c);
    } catch (...) {
        std::cerr << testing::internal::GetCapturedStderr();
        throw;
    }
    Runtime cpu(cpu_config());
    run_fault_workload(*gpu, cpu, "fault " + GetParam());
    gpu->wait_idle();
    const auto m = gpu->metrics();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_GE(m.device_fallbacks, 1u) << "the injected fault should make a region fall back to the CPU";
    EXPECT_EQ(m.validation_messages, 0u) << "validation messages; stderr:\n" << err;
    EXPECT_EQ(m.regions_failed, 0u) << "a fallback is not a failure";
    const bool lost = GetParam() == "device_lost" || GetParam() == "submit_failed";
    if (!lost) {
        // The device works after a compile error or an out-of-memory: later regions run there.
        EXPECT_GT(m.device_regions, m.device_fallbacks) << "later regions should run on the device again";
        expect_device_clean(*gpu, /*fallbacks_allowed=*/true);
    } else {
        // After the device is lost, later gathers still work (on the CPU).
        std::vector<double> d = {1, 2, 3};
        Array v = gpu->array(std::span<const double>(d));
        EXPECT_EQ((v * 2.0 + 1.0).gather().get().to_doubles(), (std::vector<double>{3, 5, 7}));
        EXPECT_EQ(gpu->metrics().validation_messages, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(VulkanBackend, VulkanBackendFault, ::testing::Values("compile", "oom", "device_lost", "submit_failed"),
                         [](const auto& p) { return p.param; });

// ---- the on-disk pipeline cache -------------------------------------------------------------------

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-vk-cache-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::vector<std::filesystem::path> files(const std::string& ext) const {
        std::vector<std::filesystem::path> r;
        for (const auto& e : std::filesystem::directory_iterator(path))
            if (e.path().extension() == ext) r.push_back(e.path());
        return r;
    }
};

std::vector<Array> cache_exprs(Runtime& rt) {
    std::vector<double> d(500);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(i) * 0.01 - 2.0;
    Array x = rt.array(std::span<const double>(d), tandem::Shape{25, 20});
    Array row = rt.array(std::span<const double>(d.data(), 20), tandem::Shape{1, 20});
    return {tandem::sin(x) * 2.0 + x, tandem::exp(-tandem::abs(x)) + row, tandem::single(x) * 0.5 > row};
}

TEST(VulkanBackendPipelineCache, SecondRuntimeUsesTheDiskCacheAndCorruptFilesAreRebuilt) {
    TempDir dir;
    tandem::Config c = gpu_config();
    c.pipeline_cache_dir = dir.path.string();
    Runtime cpu(cpu_config());
    const auto want = cpu.gather(cache_exprs(cpu)).get();
    auto check = [&](const std::vector<tandem::HostArray>& got, const std::string& what) {
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::ulp, 4))
                << what << ": output " << k;
    };
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "cold runtime");
        const auto m = gpu->metrics();
        EXPECT_GT(m.pipeline_misses, 0u) << "the first runtime compiles";
        EXPECT_EQ(m.pipeline_disk_hits, 0u);
        expect_device_clean(*gpu);
    }
    const auto spv = dir.files(".spv");
    EXPECT_FALSE(spv.empty()) << "no SPIR-V file written under " << dir.path;
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "warm runtime");
        const auto m = gpu->metrics();
        EXPECT_EQ(m.pipeline_misses, 0u) << "the second runtime should find every pipeline in the disk cache";
        EXPECT_GT(m.pipeline_disk_hits + m.pipeline_hits, 0u);
        expect_device_clean(*gpu);
    }
    // Garbage in every cache file (the SPIR-V files and the VkPipelineCache blob): reported,
    // ignored, rebuilt; the results are still right.
    const auto blobs = dir.files(".bin");
    EXPECT_FALSE(blobs.empty()) << "no pipeline cache blob written under " << dir.path;
    for (const auto& p : blobs) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out << "garbage instead of a pipeline cache blob";
    }
    for (const auto& p : dir.files(".spv")) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out << "this is not SPIR-V, just garbage written by the test " << p.filename().string();
    }
    testing::internal::CaptureStderr();
    {
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "runtime over corrupt files");
        const auto m = gpu->metrics();
        EXPECT_GT(m.pipeline_misses, 0u) << "corrupt files must be rebuilt";
        expect_device_clean(*gpu);
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(contains(err, "pipeline cache") && contains(err, "rebuilt")) << "no report of the corrupt files; stderr:\n" << err;
    for (const auto& p : spv) EXPECT_TRUE(contains(err, p.filename().string())) << "not reported: " << p << "\n" << err;
    for (const auto& p : blobs) EXPECT_TRUE(contains(err, p.filename().string())) << "not reported: " << p << "\n" << err;
    {
        // The rebuilt files serve the next runtime again.
        auto gpu = open_gpu(c);
        check(gpu->gather(cache_exprs(*gpu)).get(), "runtime after the rebuild");
        EXPECT_EQ(gpu->metrics().pipeline_misses, 0u) << "the rebuilt files should be valid";
        expect_device_clean(*gpu);
    }
}

// ---- an array larger than maxStorageBufferRange -------------------------------------------------

TEST(VulkanBackendLarge, ArrayLargerThanMaxStorageBufferRange) {
    // 136 MiB of doubles: more than lavapipe's 128 MiB maxStorageBufferRange.
    const std::int64_t n = (std::int64_t{136} << 20) / 8;
    auto gpu = open_gpu();
    std::vector<double> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < a.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = static_cast<double>(s >> 11) * 0x1p-40 - 4096.0;
        b[i] = static_cast<double>(i) * 0.25 + 1.0 / static_cast<double>(1 + (i & 1023));
    }
    Array x = gpu->array(std::span<const double>(a), tandem::Shape{n, 1});
    Array y = gpu->array(std::span<const double>(b), tandem::Shape{n, 1});
    const auto h = (x + y).gather().get();
    ASSERT_EQ(h.numel(), n);
    const double* p = h.data<double>();
    std::int64_t bad = 0, first_bad = -1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double want = a[i] + b[i];  // the CPU executor's result: one IEEE addition
        if (std::bit_cast<std::uint64_t>(p[i]) != std::bit_cast<std::uint64_t>(want)) {
            if (first_bad < 0) first_bad = static_cast<std::int64_t>(i);
            ++bad;
        }
    }
    EXPECT_EQ(bad, 0) << "elements differ from the CPU, first at index " << first_bad << " (byte offset "
                      << first_bad * 8 << ")"
                      << (first_bad >= 0 ? ": got " + tref::fmt(p[first_bad]) + ", expected " +
                                               tref::fmt(a[static_cast<std::size_t>(first_bad)] + b[static_cast<std::size_t>(first_bad)])
                                         : std::string());
    EXPECT_EQ(p[n - 1], a.back() + b.back()) << "the last element (beyond 128 MiB)";
    expect_device_clean(*gpu);
}

}  // namespace
