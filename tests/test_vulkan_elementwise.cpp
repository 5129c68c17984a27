// Every elementwise op on the Vulkan device, through the public API: a GPU runtime
// (Config::device = "vulkan", placement = "gpu"; lavapipe in CI, the Khronos validation
// layer on) against a CPU-only runtime fed the same inputs. Every binary and unary op, where and
// the casts, in double, single, mixed and logical, over the shape patterns of
// test_elementwise.cpp (implicit expansion, scalars, N-D, empty) and plain-number operands, on
// data full of special values: bit-identical, except the transcendental functions (within 4 ulp
// of the CPU, NaN/Inf positions identical). The ops of a class share one gather (one fused
// multi-output region). Every test ends with no fallback to the CPU and no validation message.
//
// No Vulkan device: the tests FAIL (CI installs lavapipe and the validation layers).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "op_rows.hpp"
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
using tref::seed_of;

namespace {

// ---- runtimes (vulkan_runtime.hpp) ---------------------------------------------------------------

using tvk::cpu_config;
using tvk::expect_device_clean;
using tvk::gpu_config;
using tvk::open_gpu;

// ---- the op table --------------------------------------------------------------------------------

enum class Cls {
    exact,    ///< bit-identical to the CPU, the sign of zero included
    logical,  ///< logical ops: bit-identical; a NaN operand is an error (inputs made NaN-free)
    trans,    ///< transcendental: bit-identical too (one math library on both executors)
};

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

/// An ops.def row's class here: logical ops refuse NaN, transcendentals are checked apart.
Op from_row(const trows::Row& r) {
    const Cls cls = r.rule == tandem::detail::TypeRule::Logical ? Cls::logical : r.transcendental() ? Cls::trans : Cls::exact;
    return {r.name, r.arity, cls, r.make};
}

/// The rows of one arity, and the spellings of the same ops that are not rows.
std::vector<Op> rows_and(int arity, std::vector<Op> aliases) {
    std::vector<Op> ops;
    for (const trows::Row& r : trows::elementwise_rows())
        if (r.arity == arity) ops.push_back(from_row(r));
    for (Op& op : aliases) ops.push_back(std::move(op));
    return ops;
}

const std::vector<Op>& binary_ops() {
    static const std::vector<Op> ops = rows_and(2, {
        bin("ldivide", Cls::exact, tandem::ldivide),
        {"op+", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] + x[1]; }},
        {"op/", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] / x[1]; }},
        {"op<", 2, Cls::exact, [](const std::vector<Operand>& x) { return x[0] < x[1]; }},
        {"op&", 2, Cls::logical, [](const std::vector<Operand>& x) { return x[0] & x[1]; }},
        {"op|", 2, Cls::logical, [](const std::vector<Operand>& x) { return x[0] | x[1]; }},
    });
    return ops;
}

const std::vector<Op>& unary_ops() {
    static const std::vector<Op> ops = rows_and(1, {
        un("single", Cls::exact, tandem::single), un("double", Cls::exact, tandem::as_double),
        {"astype(f32)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f32); }},
        {"astype(f64)", 1, Cls::exact, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::f64); }},
        {"op-", 1, Cls::exact, [](const std::vector<Operand>& x) { return -x[0].array(); }},
        un("logical", Cls::logical, tandem::logical),
        {"astype(logical)", 1, Cls::logical, [](const std::vector<Operand>& x) { return tandem::astype(x[0].array(), DType::logical); }},
        {"op!", 1, Cls::logical, [](const std::vector<Operand>& x) { return !x[0].array(); }},
    });
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
        // transcendentals too: both executors run the same library (shaders/math_*.glsl)
        EXPECT_TRUE(tref::same_values(g, c, Acc::exact_signed, 0, describe))
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

// Generators end where MATLAB ends them, on the device as on the CPU: a colon never passes b
// (0:0.1:0.3 ends on 0.3), linspace starts on a and ends on b, also where b - a overflows.
TEST(VulkanBackendOps, GeneratorsEndWhereMatlabEndsThem) {
    auto gpu = tvk::open_gpu();
    Runtime cpu(cpu_config());
    auto program = [](Runtime& rt) {
        return rt.gather({rt.colon(0, 0.1, 0.3), rt.colon(1, -0.1, 0.7), rt.colon(-1, 0.2, 1), rt.colon(0.5, 0.3, 2.0),
                          rt.linspace(-1e308, 1e308, 3), rt.linspace(-1e308, 1e308, 6), rt.linspace(1e308, -1e308, 4),
                          rt.linspace(-2, 3, 7) * 1.0, rt.colon(0, 0.1, 0.3) + 1.0})
            .get();
    };
    const auto got = program(*gpu), want = program(cpu);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact_signed)) << k;
    EXPECT_EQ(want[0].shape(), tandem::Shape({1, 4}));
    EXPECT_EQ(want[0].at(3), 0.3) << "0:0.1:0.3 ends on 0.3";
    EXPECT_EQ(want[0].at(2), 2 * 0.1) << "the others are a + k * step";
    EXPECT_EQ(want[1].at(3), 0.7) << "1:-0.1:0.7 ends on 0.7";
    EXPECT_EQ(want[2].at(10), 1.0);
    EXPECT_EQ(want[3].shape(), tandem::Shape({1, 6}));
    EXPECT_EQ(want[3].at(5), 0.5 + 5 * 0.3) << "an end short of b stays as it is";
    EXPECT_EQ(std::vector<double>(want[4].data<double>(), want[4].data<double>() + 3), (std::vector<double>{-1e308, 0, 1e308}));
    for (const auto k : {4, 5, 6}) {
        const tandem::HostArray& l = want[static_cast<std::size_t>(k)];
        EXPECT_EQ(l.at(0), k == 6 ? 1e308 : -1e308) << "first exactly a";
        EXPECT_EQ(l.at(l.shape().numel() - 1), k == 6 ? -1e308 : 1e308) << "last exactly b";
        for (std::int64_t i = 0; i < l.shape().numel(); ++i) EXPECT_TRUE(std::isfinite(l.at(i))) << k << " " << i;
    }
    gpu->wait_idle();
    const auto m = gpu->metrics();  // (generators upload nothing: not expect_device_clean)
    EXPECT_GT(m.device_regions, 0u) << "generated on the device";
    EXPECT_EQ(m.device_fallbacks, 0u);
    EXPECT_EQ(m.validation_messages, 0u);
}

// norm's scaling and NaN rules, var of nothing, max of a logical mask, find([]): the device
// gives the CPU's bits and types.
TEST(VulkanBackendOps, NormVarMaxAndFindFollowMatlabOnTheDevice) {
    auto gpu = tvk::open_gpu();
    Runtime cpu(cpu_config());
    auto program = [](Runtime& rt) {
        auto vec = [&](std::vector<double> e) { return rt.array(std::span<const double>(e)); };
        const Array big = vec({1e200, -1e200, 3e199}), small = vec({3e-200, 4e-200}), nan = vec({1, NAN, 2});
        return rt.gather({tandem::norm(big), tandem::norm(small), tandem::norm(big, 3), tandem::norm(small, 1),
                          tandem::norm(nan, HUGE_VAL), tandem::norm(nan, -HUGE_VAL), tandem::norm(nan),
                          tandem::norm(tandem::single(vec({1e30, 1e30}))), tandem::norm(vec({3, 4})),
                          tandem::var(rt.zeros({0, 3})), tandem::max(vec({0, 1, 0}) > 0.5), tandem::find(rt.zeros({0, 0}))})
            .get();
    };
    const auto got = program(*gpu), want = program(cpu);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].dtype(), want[k].dtype()) << k;
        EXPECT_TRUE(tref::same_values(tref::from_host_array(got[k]), tref::from_host_array(want[k]), Acc::exact)) << k;
    }
    EXPECT_TRUE(std::isfinite(want[0].at(0)) && want[1].at(0) > 0) << "no overflow, no underflow";
    EXPECT_TRUE(std::isnan(want[4].at(0)) && std::isnan(want[5].at(0)) && std::isnan(want[6].at(0)));
    EXPECT_EQ(want[10].dtype(), DType::logical);
    EXPECT_EQ(want[11].shape(), tandem::Shape({0, 0}));
    gpu->wait_idle();
    EXPECT_GT(gpu->metrics().device_regions, 0u);
    EXPECT_EQ(gpu->metrics().device_fallbacks, 0u);
    EXPECT_EQ(gpu->metrics().validation_messages, 0u);
}

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

}  // namespace
