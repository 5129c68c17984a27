// Creation: array (copies), adopt, logical_array, scalar, zeros/ones/fill with each dtype,
// linspace, colon, the default-runtime free functions, HostArray's accessors, an array over a
// HostArray's elements, and to_device (MATLAB's gpuArray) without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::DType;
using tandem::Shape;

namespace {

std::vector<double> values_of(const tandem::Array& a) { return a.gather().get().to_doubles(); }

// |got - want| <= 1e-12 * max(1, |want|)
::testing::AssertionResult near_rel(const std::vector<double>& got, const std::vector<double>& want) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " elements, expected " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double tol = 1e-12 * std::max(1.0, std::abs(want[i]));
        if (!(std::abs(got[i] - want[i]) <= tol))
            return ::testing::AssertionFailure() << "[" << i << "] got " << tref::fmt(got[i]) << ", expected "
                                                 << tref::fmt(want[i]);
    }
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Creation, ArrayCopiesItsInput) {
    tandem::Runtime rt;
    std::vector<double> d = {1, 2, 3, 4, 5, 6};
    auto a = rt.array(std::span<const double>(d), Shape{2, 3});
    d[0] = 100;  // must not affect the array
    d[5] = -1;
    EXPECT_EQ(a.shape(), Shape({2, 3}));
    EXPECT_EQ(a.dtype(), DType::f64);
    EXPECT_EQ(a.numel(), 6);
    EXPECT_EQ(a.ndims(), 2);
    EXPECT_EQ(a.size(0), 2);
    EXPECT_EQ(a.size(1), 3);
    EXPECT_EQ(a.size(2), 1);
    auto h = a.gather().get();
    EXPECT_EQ(h.shape(), Shape({2, 3}));
    EXPECT_EQ(h.dtype(), DType::f64);
    EXPECT_EQ(h.to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
    // Column-major subscripts.
    EXPECT_EQ(h.at({0, 0}), 1);
    EXPECT_EQ(h.at({1, 0}), 2);
    EXPECT_EQ(h.at({0, 1}), 3);
    EXPECT_EQ(h.at({1, 2}), 6);
    EXPECT_EQ(h.at(4), 5);
    EXPECT_EQ(h.at({1}), 2) << "missing trailing subscripts are 0";
}

TEST(Creation, ArrayKeepsSpecialValuesBitExact) {
    tandem::Runtime rt;
    const auto sp = tref::special_values(DType::f64);
    auto h = tref::gather(rt.array(std::span<const double>(sp)));
    tref::Host want{{static_cast<std::int64_t>(sp.size()), 1}, DType::f64, sp};
    EXPECT_TRUE(tref::same_values(h, want, tref::Acc::exact_signed));
}

TEST(Creation, ArrayOfFloats) {
    tandem::Runtime rt;
    std::vector<float> d = {1.5f, -0.0f, 1e-40f, 3e38f, -2.25f, 0.1f};
    auto a = rt.array(std::span<const float>(d), Shape{3, 2});
    d[0] = 9;
    EXPECT_EQ(a.dtype(), DType::f32);
    auto h = a.gather().get();
    ASSERT_EQ(h.dtype(), DType::f32);
    ASSERT_EQ(h.shape(), Shape({3, 2}));
    const float* p = h.data<float>();
    EXPECT_EQ(p[0], 1.5f);
    EXPECT_TRUE(p[1] == 0.0f && std::signbit(p[1]));
    EXPECT_EQ(p[2], 1e-40f);
    EXPECT_EQ(p[3], 3e38f);
    EXPECT_EQ(p[5], 0.1f);
    EXPECT_EQ(h.at(4), -2.25);
    EXPECT_EQ(h.at(5), static_cast<double>(0.1f));
}

TEST(Creation, ArraySizeMismatchIsShapeError) {
    tandem::Runtime rt;
    std::vector<double> d(5, 1.0);
    EXPECT_THROW(rt.array(std::span<const double>(d), Shape{2, 3}), tandem::ShapeError);
    std::vector<float> f(7, 1.0f);
    EXPECT_THROW(rt.array(std::span<const float>(f), Shape{2, 3}), tandem::ShapeError);
    std::vector<std::uint8_t> b(4, 1);
    EXPECT_THROW(rt.logical_array(std::span<const std::uint8_t>(b), Shape{2, 3}), tandem::ShapeError);
    std::vector<double> g(5, 1.0);
    EXPECT_THROW(rt.adopt(std::move(g), Shape{2, 3}), tandem::ShapeError);
    try {
        rt.array(std::span<const double>(d), Shape{2, 3});
    } catch (const tandem::ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
    }
    // The runtime is still fine.
    EXPECT_EQ(values_of(rt.array(std::span<const double>(d), Shape{5, 1})), d);
}

TEST(Creation, ColumnVectorFromSpan) {
    tandem::Runtime rt;
    std::vector<double> d = {3, 1, 4, 1, 5};
    auto a = rt.array(std::span<const double>(d));
    EXPECT_EQ(a.shape(), Shape({5, 1}));
    EXPECT_EQ(values_of(a), d);
}

TEST(Creation, Adopt) {
    tandem::Runtime rt;
    std::vector<double> d = {1, 2, 3, 4, 5, 6, 7, 8};
    auto a = rt.adopt(std::move(d), Shape{2, 2, 2});
    EXPECT_EQ(a.shape(), Shape({2, 2, 2}));
    EXPECT_EQ(a.dtype(), DType::f64);
    EXPECT_EQ(values_of(a), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
    std::vector<float> f = {0.5f, 0.25f};
    auto b = rt.adopt(std::move(f), Shape{1, 2});
    EXPECT_EQ(b.dtype(), DType::f32);
    EXPECT_EQ(values_of(b), (std::vector<double>{0.5, 0.25}));
}

TEST(Creation, ArrayOfAHostArraySharesItsElements) {
    tandem::Runtime rt;
    const double nan = std::nan(""), inf = INFINITY;
    std::vector<double> d = {1.5, -0.0, nan, inf, -inf, 1e-310};
    auto a = rt.array(std::span<const double>(d), Shape{3, 2});
    const tandem::HostArray h = (a * 2.0).gather().get();
    auto back = rt.array(h);  // plain data again: an input, not the expression
    EXPECT_EQ(back.shape(), Shape({3, 2}));
    EXPECT_EQ(back.dtype(), DType::f64);
    const tandem::HostArray again = back.gather().get();
    EXPECT_EQ(again.data<double>(), h.data<double>()) << "shared, not copied";
    EXPECT_TRUE(tref::same_values(tref::from_host_array((back - 1.0).gather().get()),
                                  tref::from_host_array(((a * 2.0) - 1.0).gather().get()), tref::Acc::exact_signed));
    // Every element type, and empty arrays.
    std::vector<float> f = {0.5f, -0.0f};
    auto fs = rt.array(rt.array(std::span<const float>(f), Shape{1, 2}).gather().get());
    EXPECT_EQ(fs.dtype(), DType::f32);
    EXPECT_EQ(values_of(fs), (std::vector<double>{0.5, -0.0}));
    EXPECT_TRUE(std::signbit(values_of(fs)[1]));
    std::vector<std::uint8_t> m = {1, 0, 1};
    auto ls = rt.array(rt.logical_array(m, Shape{3, 1}).gather().get());
    EXPECT_EQ(ls.dtype(), DType::logical);
    EXPECT_EQ(values_of(ls), (std::vector<double>{1, 0, 1}));
    auto e = rt.array(rt.zeros(Shape{0, 3}).gather().get());
    EXPECT_EQ(e.shape(), Shape({0, 3}));
    EXPECT_TRUE(values_of(e).empty());
    // evaluate() gives placeholders without elements: refused, naming them.
    const tandem::HostArray placeholder(nullptr, Shape{2, 2}, DType::f64);
    try {
        (void)rt.array(placeholder);
        FAIL() << "no error";
    } catch (const tandem::ValueError& err) {
        EXPECT_NE(std::string(err.what()).find("no elements"), std::string::npos) << err.what();
    }
}

TEST(Creation, ToDeviceOnACpuOnlyRuntimeKeepsTheValues) {
    // Without a device a value asked for on one is placed as any: same bits, on the CPU.
    tandem::Config c;
    c.device = "cpu";
    tandem::Runtime rt(c);
    std::vector<double> d = {1.5, -0.0, std::nan(""), INFINITY, -2, 3};
    auto a = rt.array(std::span<const double>(d), Shape{2, 3});
    auto g = tandem::to_device(a);
    EXPECT_TRUE(g.device_requested());
    EXPECT_FALSE(a.device_requested()) << "the request is the copy's, not its operand's";
    EXPECT_EQ(tandem::to_device(g).node(), g.node()) << "asked twice: the same value";
    EXPECT_TRUE((tandem::abs(g) + a).device_requested()) << "passed on to what is computed from it";
    EXPECT_FALSE((tandem::abs(a) + 1.0).device_requested());
    EXPECT_TRUE(tref::same_values(tref::gather(g), tref::gather(a), tref::Acc::exact_signed));
    EXPECT_TRUE(tref::same_values(tref::gather(tandem::sum(g * 2.0, 2)), tref::gather(tandem::sum(a * 2.0, 2)),
                                  tref::Acc::exact_signed));
    auto s = tandem::to_device(rt.scalar(0.5, DType::f32));
    EXPECT_EQ(s.dtype(), DType::f32);
    EXPECT_EQ(values_of(s), std::vector<double>{0.5});
    EXPECT_EQ(rt.metrics().device_regions, 0u);
}

TEST(Creation, LogicalArrayNormalisesNonzeroBytes) {
    tandem::Runtime rt;
    std::vector<std::uint8_t> d = {0, 1, 2, 255, 0, 7};
    auto a = rt.logical_array(std::span<const std::uint8_t>(d), Shape{2, 3});
    EXPECT_EQ(a.dtype(), DType::logical);
    auto h = a.gather().get();
    ASSERT_EQ(h.dtype(), DType::logical);
    auto s = h.span<std::uint8_t>();
    EXPECT_EQ(std::vector<std::uint8_t>(s.begin(), s.end()), (std::vector<std::uint8_t>{0, 1, 1, 1, 0, 1}));
    EXPECT_EQ(h.to_doubles(), (std::vector<double>{0, 1, 1, 1, 0, 1}));
}

TEST(Creation, Scalar) {
    tandem::Runtime rt;
    auto a = rt.scalar(2.5);
    EXPECT_EQ(a.shape(), Shape::scalar());
    EXPECT_EQ(a.dtype(), DType::f64);
    EXPECT_EQ(values_of(a), std::vector<double>{2.5});
    auto b = rt.scalar(0.1, DType::f32);
    EXPECT_EQ(b.dtype(), DType::f32);
    auto hb = b.gather().get();
    EXPECT_EQ(hb.data<float>()[0], 0.1f);
    auto c = rt.scalar(3.0, DType::logical);
    EXPECT_EQ(c.dtype(), DType::logical);
    EXPECT_EQ(c.gather().get().data<std::uint8_t>()[0], 1);
    auto n = rt.scalar(tref::kNaN);
    EXPECT_TRUE(std::isnan(values_of(n).at(0)));
}

TEST(Creation, ZerosOnesFillEveryDtype) {
    tandem::Runtime rt;
    for (DType t : {DType::f64, DType::f32, DType::logical}) {
        SCOPED_TRACE(tref::dtype_str(t));
        for (const Shape& s : {Shape{3, 4}, Shape{2, 3, 4}, Shape{1, 1}, Shape{0, 3}, Shape{}}) {
            SCOPED_TRACE(s.to_string());
            auto z = rt.zeros(s, t);
            auto o = rt.ones(s, t);
            EXPECT_EQ(z.shape(), s);
            EXPECT_EQ(z.dtype(), t);
            EXPECT_EQ(o.dtype(), t);
            auto hz = tref::gather(z), ho = tref::gather(o);
            EXPECT_TRUE(tref::same_values(hz, tref::Host{s.dims(), t, std::vector<double>(static_cast<std::size_t>(s.numel()), 0.0)},
                                          tref::Acc::exact_signed));
            EXPECT_TRUE(tref::same_values(ho, tref::Host{s.dims(), t, std::vector<double>(static_cast<std::size_t>(s.numel()), 1.0)}));
        }
    }
    auto f = tref::gather(rt.fill(0.1, Shape{2, 2}, DType::f32));
    EXPECT_TRUE(tref::same_values(f, tref::Host{{2, 2}, DType::f32, std::vector<double>(4, static_cast<double>(0.1f))}));
    auto g = tref::gather(rt.fill(-7.25, Shape{3, 1, 2}));
    EXPECT_TRUE(tref::same_values(g, tref::Host{{3, 1, 2}, DType::f64, std::vector<double>(6, -7.25)}));
    auto l = tref::gather(rt.fill(2.0, Shape{1, 3}, DType::logical));
    EXPECT_TRUE(tref::same_values(l, tref::Host{{1, 3}, DType::logical, std::vector<double>(3, 1.0)}));
    auto l0 = tref::gather(rt.fill(0.0, Shape{1, 3}, DType::logical));
    EXPECT_TRUE(tref::same_values(l0, tref::Host{{1, 3}, DType::logical, std::vector<double>(3, 0.0)}));
    auto inf = tref::gather(rt.fill(-tref::kInf, Shape{2, 1}));
    EXPECT_TRUE(tref::same_values(inf, tref::Host{{2, 1}, DType::f64, std::vector<double>(2, -tref::kInf)}));
}

TEST(Creation, EmptyArrays) {
    tandem::Runtime rt;
    for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{2, 0, 4}, Shape{}}) {
        SCOPED_TRACE(s.to_string());
        std::vector<double> none;
        auto a = rt.array(std::span<const double>(none), s);
        auto h = a.gather().get();
        EXPECT_EQ(h.shape(), s);
        EXPECT_EQ(h.numel(), 0);
        EXPECT_TRUE(h.to_doubles().empty());
        auto b = tref::gather(a + 1.0);
        EXPECT_EQ(b.dims, s.dims());
        EXPECT_TRUE(b.v.empty());
    }
}

TEST(Creation, LinspaceFollowsMatlab) {
    tandem::Runtime rt;
    struct Case {
        double a, b;
        std::int64_t n;
    };
    for (Case c : {Case{0, 1, 11}, Case{-3, 7, 100}, Case{1, -1, 5}, Case{0.1, 0.7, 3}, Case{-1e6, 1e6, 1001},
                   Case{2, 2, 4}, Case{0, 1, 2}}) {
        SCOPED_TRACE(std::to_string(c.a) + ", " + std::to_string(c.b) + ", " + std::to_string(c.n));
        auto x = rt.linspace(c.a, c.b, c.n);
        EXPECT_EQ(x.shape(), Shape({1, c.n}));
        auto v = values_of(x);
        ASSERT_EQ(static_cast<std::int64_t>(v.size()), c.n);
        EXPECT_EQ(v.front(), c.a) << "first is exactly a";
        EXPECT_EQ(v.back(), c.b) << "last is exactly b";
        std::vector<double> want(static_cast<std::size_t>(c.n));
        for (std::int64_t i = 0; i < c.n; ++i)
            want[static_cast<std::size_t>(i)] = c.a + static_cast<double>(i) * (c.b - c.a) / static_cast<double>(c.n - 1);
        want.back() = c.b;
        EXPECT_TRUE(near_rel(v, want));
    }
}

TEST(Creation, LinspaceEdgeCounts) {
    tandem::Runtime rt;
    auto one = rt.linspace(3, 8, 1);
    EXPECT_EQ(one.shape(), Shape({1, 1}));
    EXPECT_EQ(values_of(one), std::vector<double>{8}) << "n == 1 gives b";
    for (std::int64_t n : {0, -1, -100}) {
        auto e = rt.linspace(0, 1, n);
        EXPECT_EQ(e.shape(), Shape({1, 0})) << n;
        EXPECT_TRUE(values_of(e).empty());
    }
    // Where b - a overflows: MATLAB's a + k * (b / (n - 1)) - k * (a / (n - 1)), ends exact.
    EXPECT_EQ(values_of(rt.linspace(-1e308, 1e308, 3)), (std::vector<double>{-1e308, 0, 1e308}));
    const auto wide = values_of(rt.linspace(1e308, -1.5e308, 5));
    EXPECT_EQ(wide.front(), 1e308);
    EXPECT_EQ(wide.back(), -1.5e308);
    for (double x : wide) EXPECT_TRUE(std::isfinite(x));
    auto d = rt.linspace(0, 1);
    EXPECT_EQ(d.shape(), Shape({1, 100})) << "default n = 100";
    EXPECT_EQ(d.dtype(), DType::f64);
}

TEST(Creation, ColonFollowsMatlab) {
    tandem::Runtime rt;
    struct Case {
        double a, step, b;
        std::int64_t n;
    };
    for (Case c : {Case{1, 1, 5, 5}, Case{0, 0.25, 1, 5}, Case{10, -3, 1, 4}, Case{0, 2, 7, 4}, Case{-1.5, 0.5, 1.5, 7},
                   Case{1, 1, 1, 1}, Case{0, 0.1, 1, 11}, Case{5, 1, 1, 0}, Case{1, -1, 5, 0}, Case{1, 0, 5, 0},
                   Case{0, 0.3, 1, 4}}) {
        SCOPED_TRACE(std::to_string(c.a) + ":" + std::to_string(c.step) + ":" + std::to_string(c.b));
        auto x = rt.colon(c.a, c.step, c.b);
        EXPECT_EQ(x.shape(), Shape({1, c.n}));
        auto v = values_of(x);
        std::vector<double> want(static_cast<std::size_t>(c.n));
        for (std::int64_t i = 0; i < c.n; ++i) want[static_cast<std::size_t>(i)] = c.a + static_cast<double>(i) * c.step;
        EXPECT_TRUE(near_rel(v, want));
        if (c.n > 0) {
            EXPECT_EQ(v.front(), c.a);
            EXPECT_TRUE(c.step > 0 ? v.back() <= c.b : v.back() >= c.b) << "never past b";
        }
    }
    // MATLAB and Octave end a range on b where a + k * step passes it by a rounding.
    EXPECT_EQ(values_of(rt.colon(0, 0.1, 0.3)), (std::vector<double>{0, 0.1, 2 * 0.1, 0.3}));
    EXPECT_EQ(values_of(rt.colon(0, 0.1, 1)).back(), 1.0);
    EXPECT_EQ(values_of(rt.colon(1, -0.1, 0.7)).back(), 0.7);
    auto y = rt.colon(-2, 3);
    EXPECT_EQ(values_of(y), (std::vector<double>{-2, -1, 0, 1, 2, 3}));
    EXPECT_EQ(rt.colon(3, 2).shape(), Shape({1, 0}));
}

TEST(Creation, DefaultRuntimeFreeFunctions) {
    auto z = tandem::zeros(Shape{2, 3});
    EXPECT_EQ(&z.runtime(), &tandem::default_runtime());
    EXPECT_EQ(values_of(z), std::vector<double>(6, 0.0));
    EXPECT_EQ(values_of(tandem::ones(Shape{1, 2}, DType::f32)), std::vector<double>(2, 1.0));
    EXPECT_EQ(tandem::ones(Shape{1, 2}, DType::f32).dtype(), DType::f32);
    EXPECT_EQ(values_of(tandem::fill(4.5, Shape{2, 1})), std::vector<double>(2, 4.5));
    EXPECT_EQ(values_of(tandem::linspace(0, 1, 3)), (std::vector<double>{0, 0.5, 1}));
    EXPECT_EQ(values_of(tandem::colon(1, 4)), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(values_of(tandem::colon(1, 2, 6)), (std::vector<double>{1, 3, 5}));
    auto w = tandem::zeros(Shape{2, 3}) + 1.5;
    EXPECT_EQ(values_of(w), std::vector<double>(6, 1.5));
}

TEST(Creation, ArraysKnowTheirRuntime) {
    tandem::Runtime r1, r2;
    auto a = r1.zeros(Shape{2, 2});
    auto b = r2.zeros(Shape{2, 2});
    EXPECT_EQ(&a.runtime(), &r1);
    EXPECT_EQ(&b.runtime(), &r2);
    EXPECT_EQ(&(a + 1.0).runtime(), &r1);
    EXPECT_EQ(&(2.0 * b).runtime(), &r2);
}

TEST(HostArray, DefaultIsEmptyDouble) {
    tandem::HostArray h;
    EXPECT_EQ(h.shape(), Shape({0, 0}));
    EXPECT_EQ(h.dtype(), DType::f64);
    EXPECT_EQ(h.numel(), 0);
    EXPECT_TRUE(h.to_doubles().empty());
}

TEST(HostArray, CopiesShareElements) {
    tandem::Runtime rt;
    std::vector<double> d = {1, 2, 3};
    auto h = rt.array(std::span<const double>(d)).gather().get();
    tandem::HostArray c = h;
    EXPECT_EQ(c.data<double>(), h.data<double>());
    EXPECT_EQ(c.storage(), h.storage());
    EXPECT_EQ(c.to_doubles(), d);
}

TEST(HostArray, ToStringShowsClassSizeAndValues) {
    tandem::Runtime rt;
    std::vector<double> d = {1.5, 2, 3, 4, 5, 6};
    auto s = rt.array(std::span<const double>(d), Shape{2, 3}).gather().get().to_string();
    EXPECT_NE(s.find("double"), std::string::npos) << s;
    EXPECT_NE(s.find("2x3"), std::string::npos) << s;
    EXPECT_NE(s.find("1.5"), std::string::npos) << s;
    auto l = rt.ones(Shape{1, 2}, DType::logical).gather().get().to_string();
    EXPECT_NE(l.find("logical"), std::string::npos) << l;
    auto f = rt.ones(Shape{1, 2}, DType::f32).gather().get().to_string();
    EXPECT_NE(f.find("single"), std::string::npos) << f;
    // A large array is shown only in part.
    auto big = rt.zeros(Shape{1000, 1000}).gather().get().to_string(10);
    EXPECT_LT(big.size(), 5000u);
}

TEST(HostArray, DtypeNames) {
    EXPECT_EQ(tandem::dtype_name(DType::f64), "double");
    EXPECT_EQ(tandem::dtype_name(DType::f32), "single");
    EXPECT_EQ(tandem::dtype_name(DType::logical), "logical");
    EXPECT_EQ(tandem::dtype_size(DType::f64), 8u);
    EXPECT_EQ(tandem::dtype_size(DType::f32), 4u);
    EXPECT_EQ(tandem::dtype_size(DType::logical), 1u);
    EXPECT_EQ(tandem::arithmetic_result(DType::logical, DType::logical), DType::f64);
    EXPECT_EQ(tandem::arithmetic_result(DType::f64, DType::f32), DType::f32);
    EXPECT_EQ(tandem::arithmetic_result(DType::logical, DType::f32), DType::f32);
}
