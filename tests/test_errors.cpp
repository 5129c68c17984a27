// Bad input: each error is a tandem::Error subclass whose message names the op, the argument
// and the shapes; a failed value poisons only what depends on it; the runtime stays usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "op_rows.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

// The arrays-larger-than-memory case asks for 8 TiB: under AddressSanitizer an allocation that
// fails must come back as a failure (for the runtime to turn into OutOfMemoryError), not abort.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

using tandem::Array;
using tandem::DType;
using tandem::Operand;
using tandem::Runtime;
using tandem::Shape;

namespace {

using tref::contains;

std::vector<double> values(const Array& a) { return a.gather().get().to_doubles(); }

/// The exception a gather's future delivers, as its message; fails if there is none or if it
/// is not an E.
template <class E>
std::string gather_error(const Array& a) {
    tandem::Future<tandem::HostArray> f;
    try {
        f = a.gather();  // never throws for data-dependent errors: they come through the future
    } catch (const std::exception& e) {
        ADD_FAILURE() << "gather() threw at once: " << e.what();
        return e.what();
    }
    try {
        (void)f.get();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

Array nan_array(Runtime& rt) {
    std::vector<double> d = {1, 0, tref::kNaN, 2, -3, 0};
    return rt.array(std::span<const double>(d), Shape{2, 3});
}

}  // namespace

// ---- shape errors -----------------------------------------------------------------------------

TEST(Errors, BinaryShapeMismatchNamesOpAndShapes) {
    Runtime rt;
    Array a = rt.zeros(Shape{3, 4}), b = rt.ones(Shape{4, 3});
    // every binary row of ops.def, the operators and ldivide
    std::vector<std::pair<std::string, std::function<Array(const Operand&, const Operand&)>>> ops = {
        {"plus", [](const Operand& x, const Operand& y) { return x + y; }},
        {"rdivide", [](const Operand& x, const Operand& y) { return x / y; }},
        {"lt", [](const Operand& x, const Operand& y) { return x < y; }},
        {"and", [](const Operand& x, const Operand& y) { return x & y; }},
        {"ldivide", [](const Operand& x, const Operand& y) { return tandem::ldivide(x, y); }},
    };
    for (const trows::Row& r : trows::elementwise_rows())
        if (r.arity == 2) ops.emplace_back(r.name, [m = r.make](const Operand& x, const Operand& y) { return m({x, y}); });
    const auto m0 = rt.metrics();
    for (const auto& [name, make] : ops) {
        SCOPED_TRACE(name);
        try {
            (void)make(a, b);
            ADD_FAILURE() << "no ShapeError";
        } catch (const tandem::ShapeError& e) {
            const std::string m = e.what();
            EXPECT_TRUE(contains(m, name)) << m;
            EXPECT_TRUE(contains(m, "3x4")) << m;
            EXPECT_TRUE(contains(m, "4x3")) << m;
        }
    }
    EXPECT_EQ(rt.metrics().plans, m0.plans) << "nothing runs for a rejected op";
    // still usable
    EXPECT_EQ(values(a + 1.0), std::vector<double>(12, 1.0));
}

TEST(Errors, NdMismatchAndEmptyMismatch) {
    Runtime rt;
    try {
        (void)(rt.zeros(Shape{2, 3, 4}) * rt.zeros(Shape{2, 5}));
        ADD_FAILURE() << "no ShapeError";
    } catch (const tandem::ShapeError& e) {
        EXPECT_TRUE(contains(e.what(), "times")) << e.what();
        EXPECT_TRUE(contains(e.what(), "2x3x4")) << e.what();
        EXPECT_TRUE(contains(e.what(), "2x5")) << e.what();
    }
    try {
        (void)(rt.zeros(Shape{0, 3}) + rt.zeros(Shape{2, 3}));
        ADD_FAILURE() << "no ShapeError";
    } catch (const tandem::ShapeError& e) {
        EXPECT_TRUE(contains(e.what(), "0x3")) << e.what();
        EXPECT_TRUE(contains(e.what(), "2x3")) << e.what();
    }
    // but 1 against 0 is fine
    EXPECT_EQ((rt.zeros(Shape{1, 3}) + rt.zeros(Shape{0, 3})).shape(), Shape({0, 3}));
}

TEST(Errors, WhereShapeMismatch) {
    Runtime rt;
    try {
        (void)tandem::where(rt.ones(Shape{3, 4}, DType::logical), rt.zeros(Shape{4, 3}), 1.0);
        ADD_FAILURE() << "no ShapeError";
    } catch (const tandem::ShapeError& e) {
        EXPECT_TRUE(contains(e.what(), "where")) << e.what();
        EXPECT_TRUE(contains(e.what(), "3x4")) << e.what();
        EXPECT_TRUE(contains(e.what(), "4x3")) << e.what();
    }
    EXPECT_THROW((void)tandem::where(rt.ones(Shape{3, 1}), rt.zeros(Shape{1, 4}), rt.zeros(Shape{2, 4})), tandem::ShapeError);
}

TEST(Errors, CreationShapeErrors) {
    Runtime rt;
    EXPECT_THROW((void)rt.zeros(Shape{-1, 2}), tandem::ShapeError);
    std::vector<double> d(3);
    try {
        (void)rt.array(std::span<const double>(d), Shape{2, 2});
        ADD_FAILURE() << "no ShapeError";
    } catch (const tandem::ShapeError& e) {
        EXPECT_TRUE(contains(e.what(), "2x2")) << e.what();
        EXPECT_TRUE(contains(e.what(), "3")) << e.what();
    }
}

// ---- element-type errors ------------------------------------------------------------------------

TEST(Errors, HostArrayWrongAccessorIsDTypeError) {
    Runtime rt;
    auto h = rt.zeros(Shape{2, 2}).gather().get();
    EXPECT_THROW((void)h.data<float>(), tandem::DTypeError);
    EXPECT_THROW((void)h.data<std::uint8_t>(), tandem::DTypeError);
    EXPECT_NO_THROW((void)h.data<double>());
    try {
        (void)h.data<float>();
    } catch (const tandem::DTypeError& e) {
        EXPECT_TRUE(contains(e.what(), "double")) << e.what();
        EXPECT_TRUE(contains(e.what(), "float")) << e.what();
    }
    auto l = rt.ones(Shape{2, 2}, DType::logical).gather().get();
    EXPECT_THROW((void)l.data<double>(), tandem::DTypeError);
    auto f = rt.ones(Shape{2, 2}, DType::f32).gather().get();
    EXPECT_THROW((void)f.data<double>(), tandem::DTypeError);
    EXPECT_THROW((void)f.span<std::uint8_t>(), tandem::DTypeError);
}

TEST(Errors, UnknownDtypeIsDTypeError) {
    Runtime rt;
    const auto bogus = static_cast<DType>(77);
    Array x = rt.zeros(Shape{2, 2});
    EXPECT_THROW((void)tandem::astype(x, bogus), tandem::DTypeError);
    EXPECT_THROW((void)rt.zeros(Shape{2, 2}, bogus), tandem::DTypeError);
    EXPECT_THROW((void)rt.scalar(1.0, bogus), tandem::DTypeError);
    EXPECT_EQ(values(x + 1.0), std::vector<double>(4, 1.0));
}

// ---- value errors: data-dependent, through the future -----------------------------------------

TEST(Errors, HostArrayAtOutOfRangeIsValueError) {
    Runtime rt;
    auto h = rt.zeros(Shape{2, 3}).gather().get();
    EXPECT_THROW((void)h.at(6), tandem::ValueError);
    EXPECT_THROW((void)h.at(-1), tandem::ValueError);
    EXPECT_THROW((void)h.at({2, 0}), tandem::ValueError);
    EXPECT_THROW((void)h.at({0, 3}), tandem::ValueError);
    try {
        (void)h.at(17);
    } catch (const tandem::ValueError& e) {
        EXPECT_TRUE(contains(e.what(), "17")) << e.what();
        EXPECT_TRUE(contains(e.what(), "6")) << e.what();
    }
    EXPECT_EQ(h.at(5), 0.0);
    EXPECT_THROW((void)tandem::HostArray{}.at(0), tandem::ValueError);
}

TEST(Errors, NaNToLogicalFailsThroughTheFuture) {
    Runtime rt;
    Array x = nan_array(rt);
    const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> cases = {
        {"logical", [](const Array& a) { return tandem::logical(a); }},
        {"cast", [](const Array& a) { return tandem::astype(a, DType::logical); }},
        {"and", [](const Array& a) { return a & 1.0; }},
        {"or", [](const Array& a) { return 0.0 | a; }},
        {"xor", [](const Array& a) { return tandem::logical_xor(a, a * 2.0); }},
        {"not", [](const Array& a) { return !a; }},
        {"not", [](const Array& a) { return ~a; }},
        {"where", [](const Array& a) { return tandem::where(a, 1.0, 2.0); }},
    };
    for (const auto& [name, make] : cases) {
        SCOPED_TRACE(name);
        Array bad;
        ASSERT_NO_THROW(bad = make(x)) << "building is lazy; the NaN is found when computing";
        const std::string m = gather_error<tandem::ValueError>(bad);
        EXPECT_TRUE(contains(m, "NaN")) << m;
        if (name != "cast") {
            EXPECT_TRUE(contains(m, name)) << m;
        } else {
            EXPECT_TRUE(contains(m, "logical") || contains(m, "cast")) << m;
        }
        // gathering it again gives the same error (and does not hang)
        EXPECT_THROW((void)bad.gather().get(), tandem::ValueError);
    }
    // a single-precision NaN too
    std::vector<float> f = {1.0f, std::numeric_limits<float>::quiet_NaN()};
    Array xf = rt.array(std::span<const float>(f), Shape{1, 2});
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(tandem::logical(xf)), "NaN"));
    // without NaN these are fine
    std::vector<double> ok = {1, 0, -2};
    Array y = rt.array(std::span<const double>(ok));
    EXPECT_EQ(values(tandem::logical(y)), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(values(!y), (std::vector<double>{0, 1, 0}));
}

TEST(Errors, FailedValuePoisonsOnlyItsDependents) {
    Runtime rt;
    Array x = nan_array(rt);
    Array bad = tandem::logical(x);
    Array dependent = (bad + 1.0) * 2.0;       // depends on bad
    Array dependent2 = tandem::sin(x) + bad;   // fused with the failing op
    Array independent = tandem::sin(x) * 2.0;  // same input, does not depend on bad
    const auto m0 = rt.metrics();
    (void)gather_error<tandem::ValueError>(bad);
    EXPECT_GE(rt.metrics().regions_failed - m0.regions_failed, 1u);
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(dependent), "NaN"));
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(dependent2), "NaN"));
    auto h = independent.gather().get();
    const auto xs = x.gather().get().to_doubles();
    ASSERT_EQ(h.numel(), 6);
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (std::isnan(xs[i])) EXPECT_TRUE(std::isnan(h.at(static_cast<std::int64_t>(i))));
        else EXPECT_NEAR(h.at(static_cast<std::int64_t>(i)), std::sin(xs[i]) * 2.0, 1e-15);
    }
    // new work on the same runtime is fine
    EXPECT_EQ(values(rt.ones(Shape{2, 2}) * 3.0), std::vector<double>(4, 3.0));
}

TEST(Errors, AStartedChainThatFailsPoisonsOnlyWhatIsBuiltOnIt) {
    // A chain deep enough to start computing before its gather (Config::start_depth) fails
    // there; the error waits in its value and comes out of each gather that depends on it, and
    // the runtime's other work and a chain on the same input are unharmed.
    tandem::Config c;
    c.device = "cpu";
    c.start_depth = 8;
    Runtime rt(c);
    std::vector<double> xs(std::size_t{1} << 18);  // steps heavy enough to start
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i % 7) - 3.0;
    xs[12345] = std::nan("");
    Array x = rt.array(std::span<const double>(xs), Shape{static_cast<std::int64_t>(xs.size()), 1});
    Array y = tandem::logical(x) * 1.0;  // fails on the NaN
    for (int i = 0; i < 20; ++i) y = y * 0.5 + 1.0;
    Array fine = x;
    for (int i = 0; i < 20; ++i) fine = fine * 0.5 + 1.0;
    rt.wait_idle();
    EXPECT_GE(rt.metrics().regions_failed, 1u) << "started, and failed, before any gather";
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(y), "NaN"));
    EXPECT_TRUE(contains(gather_error<tandem::ValueError>(tandem::sum(y + fine)), "NaN"));
    const auto h = fine.gather().get().to_doubles();
    ASSERT_EQ(h.size(), xs.size());
    std::size_t off = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        double r = xs[i];
        for (int k = 0; k < 20; ++k) r = r * 0.5 + 1.0;
        off += std::isnan(r) ? !std::isnan(h[i]) : h[i] != r;
    }
    EXPECT_EQ(off, 0u);
}

TEST(Errors, FailedValueInAMultiOutputGather) {
    Runtime rt;
    Array x = nan_array(rt);
    Array good = x * 2.0;           // same shape as bad: may share its region
    Array bad = x & 1.0;
    auto f = rt.gather({good, bad});
    EXPECT_THROW((void)f.get(), tandem::ValueError);
    // good does not depend on bad: gathered alone it computes
    std::vector<double> h;
    try {
        h = good.gather().get().to_doubles();
    } catch (const std::exception& e) {
        FAIL() << "x * 2 does not depend on the failed x & 1, yet its gather fails: " << e.what();
    }
    ASSERT_EQ(h.size(), 6u);
    EXPECT_EQ(h[0], 2.0);
    EXPECT_TRUE(std::isnan(h[2]));
    EXPECT_EQ(h[4], -6.0);
    // and the failure is not forgotten
    EXPECT_THROW((void)bad.gather().get(), tandem::ValueError);
}

TEST(Errors, FailureDoesNotLeakIntoOtherThreadsWork) {
    Runtime rt;
    Array x = nan_array(rt);
    for (int round = 0; round < 20; ++round) {
        Array bad = tandem::where(x + static_cast<double>(round), 1.0, 0.0);
        Array good = tandem::cos(x + static_cast<double>(round));
        auto fb = bad.gather();
        auto fg = good.gather();
        EXPECT_THROW((void)fb.get(), tandem::ValueError);
        EXPECT_NEAR(fg.get().at(0), std::cos(1.0 + round), 1e-15);
    }
}

// ---- arrays larger than memory ------------------------------------------------------------------

TEST(Errors, ArrayLargerThanMemoryIsOutOfMemoryError) {
    Runtime rt;
    const std::int64_t n = std::int64_t{1} << 20;  // 2^40 doubles: 8 TiB
    std::string message;
    try {
        Array big = rt.zeros(Shape{n, n});
        auto f = (big + 1.0).gather();
        (void)f.get();
        ADD_FAILURE() << "no error";
    } catch (const tandem::OutOfMemoryError& e) {
        message = e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not an OutOfMemoryError: " << e.what();
    }
    EXPECT_TRUE(contains(message, "1048576x1048576")) << message;
    // still usable
    EXPECT_EQ(values(rt.ones(Shape{3, 3}) + 1.0), std::vector<double>(9, 2.0));
    // gathering the big zeros alone fails the same way
    try {
        Array big = rt.zeros(Shape{n, n});
        (void)big.gather().get();
        ADD_FAILURE() << "no error";
    } catch (const tandem::OutOfMemoryError&) {
    }
    EXPECT_EQ(values(rt.zeros(Shape{1, 2})), std::vector<double>(2, 0.0));
}

// ---- settings ---------------------------------------------------------------------------------

TEST(Errors, ConfigValidate) {
    tandem::Config ok;
    EXPECT_NO_THROW(ok.validate());
    tandem::Config c;
    c.cpu_threads = -1;
    EXPECT_THROW(c.validate(), tandem::ConfigError);
    try {
        c.validate();
    } catch (const tandem::ConfigError& e) {
        EXPECT_TRUE(contains(e.what(), "cpu_threads")) << e.what();
    }
    EXPECT_THROW({ Runtime rt(c); }, tandem::ConfigError);
    tandem::Config b;
    b.block_elements = 1;
    EXPECT_THROW(b.validate(), tandem::ConfigError);
    b.block_elements = 64;
    EXPECT_NO_THROW(b.validate());
    b.block_elements = std::int64_t{1} << 30;
    EXPECT_THROW(b.validate(), tandem::ConfigError);
    tandem::Config d;
    d.start_depth = -1;
    try {
        d.validate();
        ADD_FAILURE() << "no ConfigError for start_depth = -1";
    } catch (const tandem::ConfigError& e) {
        EXPECT_TRUE(contains(e.what(), "TANDEM_START_DEPTH")) << e.what();
    }
    d.start_depth = 0;
    EXPECT_NO_THROW(d.validate());
}

// Several devices: the list's forms, the split setting, a fault for one device.
TEST(Errors, DeviceListSplitAndFaultSettings) {
    tandem::Config c;
    for (const char* good : {"all", "auto", "vulkan:0,1", "vulkan:0,vulkan:1", "vulkan:0,1,2"}) {
        c.device = good;
        EXPECT_NO_THROW(c.validate()) << good;
    }
    for (const char* bad : {"1", "all,vulkan:0", "vulkan:0,all", "vulkan:0,,1"}) {
        c.device = bad;
        try {
            c.validate();
            ADD_FAILURE() << "no ConfigError for " << bad;
        } catch (const tandem::ConfigError& e) {
            EXPECT_TRUE(contains(e.what(), "TANDEM_DEVICE")) << e.what();
        }
    }
    c.device = "auto";
    for (const char* good : {"auto", "always", "off"}) {
        c.split = good;
        EXPECT_NO_THROW(c.validate()) << good;
    }
    c.split = "sometimes";
    try {
        c.validate();
        ADD_FAILURE() << "no ConfigError for split = sometimes";
    } catch (const tandem::ConfigError& e) {
        EXPECT_TRUE(contains(e.what(), "TANDEM_SPLIT") && contains(e.what(), "sometimes")) << e.what();
    }
    c.split = "auto";
    c.test_fault = "device_lost@1";
    EXPECT_NO_THROW(c.validate());
    for (const char* bad : {"device_lost@", "device_lost@9", "device_lost@1x", "nothing@1"}) {
        c.test_fault = bad;
        EXPECT_THROW(c.validate(), tandem::ConfigError) << bad;
    }
}

TEST(Errors, DeviceMemoryLimit) {
    tandem::Config c;
    const std::uint64_t gib = std::uint64_t{1} << 30;
    EXPECT_EQ(c.device_memory_limit_bytes(80 * gib), 0u) << "unset: auto";
    const std::vector<std::pair<std::string, std::uint64_t>> good = {
        {"auto", 0},           {"1048576", 1048576}, {"512M", 512u << 20}, {"512MiB", 512u << 20},
        {"6G", 6 * gib},       {"1.5g", 3 * gib / 2}, {"64KB", 64u << 10}, {"50%", 40 * gib},
        {"100%", 80 * gib},
    };
    for (const auto& [text, bytes] : good) {
        c.device_memory_limit = text;
        EXPECT_NO_THROW(c.validate()) << text;
        EXPECT_EQ(c.device_memory_limit_bytes(80 * gib), bytes) << text;
    }
    for (const char* bad : {"0", "-5G", "12X", "lots", "0.5%", "101%", "5GG", "1e30"}) {
        c.device_memory_limit = bad;
        try {
            c.validate();
            ADD_FAILURE() << "no ConfigError for " << bad;
        } catch (const tandem::ConfigError& e) {
            EXPECT_TRUE(contains(e.what(), "TANDEM_DEVICE_MEMORY_LIMIT")) << e.what();
            EXPECT_TRUE(contains(e.what(), bad)) << e.what();
        }
    }
}

namespace {
/// Sets (or, with nullptr, unsets) an environment variable for one scope, restoring the old value.
struct EnvVar {
    std::string name;
    std::optional<std::string> old;
    EnvVar(const std::string& n, const char* v) : name(n) {
        if (const char* o = std::getenv(n.c_str())) old = o;
        if (v) ::setenv(n.c_str(), v, 1);
        else ::unsetenv(n.c_str());
    }
    ~EnvVar() {
        if (old) ::setenv(name.c_str(), old->c_str(), 1);
        else ::unsetenv(name.c_str());
    }
};
}  // namespace

TEST(Errors, ConfigFromEnvironment) {
    EnvVar u1("TANDEM_CPU_THREADS", nullptr), u2("TANDEM_FUSION", nullptr), u3("TANDEM_BLOCK_ELEMENTS", nullptr),
        u4("TANDEM_CPU_ISA", nullptr);
    {
        EnvVar e("TANDEM_CPU_THREADS", "abc");
        try {
            (void)tandem::Config::from_environment();
            ADD_FAILURE() << "no ConfigError";
        } catch (const tandem::ConfigError& err) {
            EXPECT_TRUE(contains(err.what(), "TANDEM_CPU_THREADS")) << err.what();
            EXPECT_TRUE(contains(err.what(), "abc")) << err.what();
        }
    }
    {
        EnvVar e("TANDEM_CPU_THREADS", "-3");
        EXPECT_THROW((void)tandem::Config::from_environment(), tandem::ConfigError);
    }
    {
        EnvVar e("TANDEM_BLOCK_ELEMENTS", "12x");
        try {
            (void)tandem::Config::from_environment();
            ADD_FAILURE() << "no ConfigError";
        } catch (const tandem::ConfigError& err) {
            EXPECT_TRUE(contains(err.what(), "TANDEM_BLOCK_ELEMENTS")) << err.what();
        }
    }
    {
        EnvVar e("TANDEM_FUSION", "maybe");
        EXPECT_THROW((void)tandem::Config::from_environment(), tandem::ConfigError);
    }
    {
        EnvVar e("TANDEM_CPU_ISA", "sse9");
        try {
            (void)tandem::Config::from_environment();
            ADD_FAILURE() << "no ConfigError";
        } catch (const tandem::ConfigError& err) {
            EXPECT_TRUE(contains(err.what(), "TANDEM_CPU_ISA")) << err.what();
        }
    }
    {
        EnvVar e("TANDEM_PLACEMENT", "fastest");
        try {
            (void)tandem::Config::from_environment();
            ADD_FAILURE() << "no ConfigError";
        } catch (const tandem::ConfigError& err) {
            EXPECT_TRUE(contains(err.what(), "TANDEM_PLACEMENT")) << err.what();
            EXPECT_TRUE(contains(err.what(), "fastest")) << err.what();
        }
    }
    {
        EnvVar e("TANDEM_PLACEMENT", "gpu");
        EXPECT_EQ(tandem::Config::from_environment().placement, "gpu");
    }
    {
        EnvVar e1("TANDEM_CPU_THREADS", "3");
        EnvVar e2("TANDEM_FUSION", "0");
        EnvVar e3("TANDEM_BLOCK_ELEMENTS", "4096");
        auto c = tandem::Config::from_environment();
        EXPECT_EQ(c.cpu_threads, 3);
        EXPECT_FALSE(c.fusion);
        EXPECT_EQ(c.block_elements, 4096);
    }
    {
        // with none of the variables set, the defaults
        EnvVar u5("TANDEM_HOST_POOL_MB", nullptr), u6("TANDEM_LOG", nullptr), u7("TANDEM_PLACEMENT", nullptr);
        auto d = tandem::Config::from_environment();
        EXPECT_EQ(d.placement, "auto");
        EXPECT_EQ(d.cpu_threads, 0);
        EXPECT_TRUE(d.fusion);
        EXPECT_EQ(d.block_elements, 2048);
        EXPECT_NO_THROW(d.validate());
    }
}

// ---- null arrays --------------------------------------------------------------------------------

TEST(Errors, NullArrayIsAnError) {
    Array null;
    EXPECT_FALSE(null.valid());
    EXPECT_THROW((void)null.shape(), tandem::Error);
    EXPECT_THROW((void)null.dtype(), tandem::Error);
    EXPECT_THROW((void)null.numel(), tandem::Error);
    EXPECT_THROW((void)null.gather(), tandem::Error);
    EXPECT_THROW((void)null.runtime(), tandem::Error);
    EXPECT_THROW((void)tandem::sin(null), tandem::Error);
    EXPECT_THROW((void)(-null), tandem::Error);
    EXPECT_THROW((void)tandem::astype(null, DType::f32), tandem::Error);
    Runtime rt;
    Array x = rt.ones(Shape{2, 2});
    EXPECT_THROW((void)(x + null), tandem::Error);
    EXPECT_THROW((void)(null * 2.0), tandem::Error);
    EXPECT_THROW((void)tandem::where(x, null, 1.0), tandem::Error);
    EXPECT_THROW((void)rt.gather({x, null}), tandem::Error);
    EXPECT_EQ(values(x + 1.0), std::vector<double>(4, 2.0));
}

TEST(Errors, ArraysOfDifferentRuntimesDoNotMix) {
    Runtime r1, r2;
    Array a = r1.ones(Shape{2, 2}), b = r2.ones(Shape{2, 2});
    try {
        (void)(a + b);
        ADD_FAILURE() << "no error";
    } catch (const tandem::Error& e) {
        EXPECT_TRUE(contains(e.what(), "plus")) << e.what();
    }
    EXPECT_THROW((void)tandem::where(a > 0.0, a, b), tandem::Error);
    EXPECT_THROW((void)r1.gather({a, b}), tandem::Error);
    EXPECT_EQ(values(a + a), std::vector<double>(4, 2.0));
    EXPECT_EQ(values(b * 3.0), std::vector<double>(4, 3.0));
}

TEST(Errors, TwoPlainNumbersUseTheDefaultRuntime) {
    // With no array among the operands there is no runtime to take: the default one builds it.
    Array s = tandem::plus(1.0, 2.0);
    EXPECT_EQ(&s.runtime(), &tandem::default_runtime());
    EXPECT_EQ(s.shape(), Shape::scalar());
    EXPECT_EQ(values(s), std::vector<double>{3.0});
    EXPECT_EQ(values(tandem::where(1.0, 2.0, 3.0)), std::vector<double>{2.0});
    EXPECT_EQ(values(tandem::where(0, 2.0, 3.0)), std::vector<double>{3.0});
}

TEST(Errors, EveryErrorIsATandemError) {
    static_assert(std::is_base_of_v<tandem::Error, tandem::ShapeError>);
    static_assert(std::is_base_of_v<tandem::Error, tandem::DTypeError>);
    static_assert(std::is_base_of_v<tandem::Error, tandem::ValueError>);
    static_assert(std::is_base_of_v<tandem::Error, tandem::OutOfMemoryError>);
    static_assert(std::is_base_of_v<tandem::Error, tandem::ConfigError>);
    static_assert(std::is_base_of_v<std::runtime_error, tandem::Error>);
    Runtime rt;
    EXPECT_THROW((void)(rt.zeros(Shape{2, 2}) + rt.zeros(Shape{3, 3})), tandem::Error);
}
