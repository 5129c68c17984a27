// User kernels (tandem/kernel.hpp) against plain references: each dependency kind, access
// modes, interop with Array, host tasks and host accessors, and bad input. Shared by the CPU
// suite (test_kernel.cpp: the C++ bodies run) and the Vulkan suite (test_vulkan_kernel.cpp: the
// GLSL bodies run on lavapipe, with the validation layer on).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace kernel_cases {

using tandem::AccessMode;
using tandem::Buffer;
using tandem::Handler;
using tandem::Item;
using tandem::Kernel;
using tandem::Queue;
using tandem::Range;
using tandem::Shape;
namespace access = tandem::access;

/// Random values with the special ones mixed in: NaN, +-Inf, -0, subnormals.
inline std::vector<double> specials(std::int64_t n, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(0.0, 10.0);
    const double pool[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), -0.0, 0.0, 4.9e-324, -1e308, 1e308};
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        v[static_cast<std::size_t>(i)] = i % 7 == 3 ? pool[(i / 7) % 8] : normal(gen);
    return v;
}

/// Equal as values: NaN where NaN, the same infinities, the same sign of zero, finite within
/// `ulps` (a device may contract a*b+c into one rounding).
inline void expect_values(const std::vector<double>& got, const std::vector<double>& want, double rel, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = got[i], w = want[i];
        if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(g)) << what << " at " << i << ": " << g << ", want NaN";
        } else if (std::isinf(w) || w == 0.0) {
            EXPECT_EQ(g, w) << what << " at " << i;
            if (w == 0.0) {
                EXPECT_EQ(std::signbit(g), std::signbit(w)) << what << " at " << i << ": the sign of zero";
            }
        } else {
            EXPECT_LE(std::fabs(g - w), rel * std::fabs(w)) << what << " at " << i << ": " << g << ", want " << w;
        }
        if (::testing::Test::HasFailure()) return;
    }
}

inline std::vector<double> values(const tandem::Array& a) { return a.gather().get().to_doubles(); }
inline std::vector<double> values(const Buffer& b) { return values(b.array()); }

/// y = a * x + b, elementwise over a 2-D buffer (both bodies).
inline const Kernel& axpb() {
    static const Kernel k = Kernel("axpb")
                                .accessors({"x", "y"})
                                .scalars({"a", "b"})
                                .glsl("y(item.x, item.y) = a * x(item.x, item.y) + b;")
                                .cost(2, 16);
    return k;
}

inline void submit_axpb(Queue& q, Buffer& x, Buffer& y, double a, double b, bool no_init = true) {
    q.submit([&](Handler& h) {
        auto in = h.require<double>(x, access::read);
        auto out = no_init ? h.require<double>(y, access::write, tandem::no_init) : h.require<double>(y, access::write);
        h.scalars({a, b});
        h.parallel_for(Range(x.shape()[0], x.shape()[1]), axpb(), [=](Item it) { out[it] = a * in[it] + b; });
    });
}

/// A kernel over a 2-D range with special values in: the result as the reference computes it.
inline void elementwise_with_specials(tandem::Runtime& rt) {
    const std::int64_t m = 67, n = 131;  // not multiples of a workgroup
    auto xs = specials(m * n, 1);
    Buffer x(rt, std::span<const double>(xs), Shape{m, n}, "x");
    Buffer y(rt, Shape{m, n}, tandem::DType::f64, "y");
    Queue q(rt);
    submit_axpb(q, x, y, -2.5, 0.75);
    q.wait();
    std::vector<double> want(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) want[i] = -2.5 * xs[i] + 0.75;
    expect_values(values(y), want, 4e-16, "axpb");
}

/// Read after write, write after read, write after write: each group sees the version the
/// groups before it left, whatever runs when.
inline void dependency_kinds(tandem::Runtime& rt) {
    const std::int64_t m = 300, n = 257;
    auto xs = specials(m * n, 2);
    Buffer x(rt, std::span<const double>(xs), Shape{m, n}, "x");
    Buffer b(rt, Shape{m, n}, tandem::DType::f64, "b");
    Buffer c(rt, Shape{m, n}, tandem::DType::f64, "c");
    Queue q(rt);
    submit_axpb(q, x, b, 1.0, 1.0);     // b = x + 1
    submit_axpb(q, b, c, 2.0, 0.0);     // RAW: c = 2 b
    tandem::Array c_first = c.array();  // (a snapshot: the version RAW wrote)
    submit_axpb(q, x, b, 0.0, 7.0);     // WAR with the group above: b = 7 (never seen by it)
    submit_axpb(q, x, b, 3.0, 0.0);     // WAW: b = 3 x
    submit_axpb(q, b, c, 1.0, 0.5);     // RAW again: c = b + 0.5 = 3 x + 0.5
    q.wait();
    std::vector<double> raw(xs.size()), last_b(xs.size()), last_c(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
        raw[i] = 2.0 * (1.0 * xs[i] + 1.0) + 0.0;
        last_b[i] = 3.0 * xs[i] + 0.0;
        last_c[i] = 1.0 * last_b[i] + 0.5;
    }
    expect_values(values(c_first), raw, 4e-16, "read after write");
    expect_values(values(b), last_b, 4e-16, "write after write");
    expect_values(values(c), last_c, 4e-16, "read after the last write");
}

/// read_write updates the current contents: three increments in a row add three.
inline void read_write_in_place(tandem::Runtime& rt) {
    static const Kernel inc = Kernel("increment").accessors({"v"}).glsl("v_at(item.x) = v_at(item.x) + 1.0;");
    const std::int64_t n = 1000;
    auto xs = specials(n, 3);
    Buffer v(rt, std::span<const double>(xs), Shape{n, 1}, "v");
    tandem::Array before = v.array();
    Queue q(rt);
    for (int k = 0; k < 3; ++k)
        q.submit([&](Handler& h) {
            auto acc = h.require<double>(v, access::read_write);
            h.parallel_for(Range(n), inc, [=](Item it) { acc[it.linear] += 1.0; });
        });
    q.wait();
    std::vector<double> want(xs);
    for (double& w : want) w = ((w + 1.0) + 1.0) + 1.0;
    expect_values(values(v), want, 0, "three increments");
    expect_values(values(before), xs, 0, "the array taken before keeps its value");
}

/// An Array feeds a kernel and the kernel's output feeds fused ops, gathered once.
inline void interop_with_arrays(tandem::Runtime& rt) {
    const std::int64_t m = 128, n = 96;
    tandem::Array lin = tandem::reshape(rt.linspace(-1, 1, m * n), Shape{m, n});
    Buffer x(tandem::exp(lin) * 2.0, "x");  // an Array's value, no copy
    Buffer y(rt, Shape{m, n}, tandem::DType::f64, "y");
    Queue q(rt);
    submit_axpb(q, x, y, 0.5, -1.0);  // y = exp(lin) - 1
    tandem::Array total = tandem::sum(tandem::sum(y.array() * y.array(), 1), 2);
    const double got = total.gather().get().at(0);
    const auto xv = values(x);  // (exp as Tandem computes it)
    double want = 0;
    std::vector<double> yv(xv.size());
    for (std::size_t i = 0; i < xv.size(); ++i) yv[i] = 0.5 * xv[i] - 1.0;
    for (double v : yv) want += v * v;
    EXPECT_NEAR(got, want, 1e-9 * want);
    expect_values(values(y), yv, 4e-16, "the kernel's output");
}

/// A host task runs after the groups it depends on, once, on a CPU thread; a host accessor
/// reads what the groups wrote and writes the buffer's next version.
inline void host_task_and_host_accessor(tandem::Runtime& rt) {
    const std::int64_t n = 4096;
    auto xs = specials(n, 5);
    for (double& v : xs)
        if (!std::isfinite(v) || std::fabs(v) > 1e300) v = 1.0;
    Buffer x(rt, std::span<const double>(xs), Shape{n, 1}, "x");
    Buffer y(rt, Shape{n, 1}, tandem::DType::f64, "y");
    Queue q(rt);
    submit_axpb(q, x, y, 2.0, 0.0);
    std::atomic<int> runs{0};
    double seen = 0;
    auto ev = q.submit([&](Handler& h) {
        auto acc = h.require<double>(y, access::read);
        h.host_task([=, &runs, &seen] {
            double s = 0;
            for (std::int64_t i = 0; i < n; ++i) s += acc[i];
            seen = s;
            ++runs;
        });
    });
    ev.wait();
    double want = 0;
    for (double v : xs) want += 2.0 * v;
    EXPECT_EQ(runs.load(), 1);
    EXPECT_NEAR(seen, want, 1e-9 * std::fabs(want) + 1e-9);
    {
        tandem::HostAccessor<double, AccessMode::read_write> h(y);
        ASSERT_EQ(h.size(), n);
        EXPECT_EQ(h[7], 2.0 * xs[7]);
        for (std::int64_t i = 0; i < n; ++i) h[i] = static_cast<double>(i);
    }
    submit_axpb(q, y, x, 1.0, 1.0);  // x = y + 1 = i + 1
    q.wait();
    tandem::HostAccessor<double, AccessMode::read> r(x);
    for (std::int64_t i = 0; i < n; i += 511) EXPECT_EQ(r[i], static_cast<double>(i) + 1.0);
}

/// depends_on orders groups that share no buffer; an in-order queue orders them all.
inline void explicit_and_in_order_dependencies(tandem::Runtime& rt) {
    std::vector<int> order;
    std::mutex m;
    auto log = [&](int k) {
        std::lock_guard lock(m);
        order.push_back(k);
    };
    {
        Queue q(rt);
        auto first = q.submit([&](Handler& h) {
            h.host_task([&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                log(1);
            });
        });
        q.submit([&](Handler& h) {
            h.depends_on(first);
            h.host_task([&] { log(2); });
        });
        q.wait();
    }
    {
        Queue q(rt, {.in_order = true});
        q.submit([&](Handler& h) {
            h.host_task([&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                log(3);
            });
        });
        q.submit([&](Handler& h) { h.host_task([&] { log(4); }); });
        auto empty = q.submit([](Handler&) {});  // only dependencies: ready after both
        empty.wait();
        std::lock_guard lock(m);
        EXPECT_EQ(order.size(), 4u);
    }
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

/// A C++ body that throws: the error arrives through its event, the groups that read what it
/// writes fail with it, independent groups go on.
inline void throwing_body_poisons_dependants_only(tandem::Runtime& rt) {
    const std::int64_t n = 512;
    auto xs = specials(n, 6);
    Buffer x(rt, std::span<const double>(xs), Shape{n, 1}, "x");
    Buffer bad(rt, Shape{n, 1}, tandem::DType::f64, "bad");
    Buffer after(rt, Shape{n, 1}, tandem::DType::f64, "after");
    Buffer good(rt, Shape{n, 1}, tandem::DType::f64, "good");
    Queue q(rt);
    auto failing = q.submit([&](Handler& h) {
        auto in = h.require<double>(x, access::read);
        auto out = h.require<double>(bad, access::write);
        h.parallel_for(Range(n), [=](Item it) {
            if (it.linear == 100) throw tandem::ValueError("item 100 refuses");
            out[it] = in[it];
        });
    });
    submit_axpb(q, bad, after, 1.0, 0.0);
    submit_axpb(q, x, good, 1.0, 0.0);
    EXPECT_THROW(failing.wait(), tandem::ValueError);
    EXPECT_THROW(after.array().gather().get(), tandem::ValueError);
    std::vector<double> want(xs);
    for (double& w : want) w = 1.0 * w + 0.0;  // (-0 + 0 is +0)
    expect_values(values(good), want, 0, "an independent group");
    EXPECT_THROW(q.wait(), tandem::ValueError);
}

/// Bad input: a tandem::KernelError naming the kernel and the buffer, thrown by submit, and
/// nothing of the group submitted (the buffers keep their versions).
inline void bad_input_is_refused_at_submit(tandem::Runtime& rt) {
    Buffer x(rt, Shape{10, 10}, tandem::DType::f64, "xin");
    Buffer f(rt, std::vector<float>(100, 1.0f), Shape{10, 10}, "single");
    Buffer small(rt, Shape{5, 5}, tandem::DType::f64, "small");
    Queue q(rt);
    auto expect_error = [&](auto group, const std::vector<std::string>& words) {
        try {
            q.submit(group);
            ADD_FAILURE() << "no error; expected one naming " << words.front();
        } catch (const tandem::KernelError& e) {
            for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
        }
    };
    // Read before anything wrote it.
    expect_error([&](Handler& h) {
        auto a = h.require<double>(x, access::read);
        auto b = h.require<double>(small, access::write);
        h.scalars({1, 0});
        h.parallel_for(Range(5, 5), axpb(), [=](Item it) { b[it] = a[it]; });
    }, {"axpb", "xin", "before anything wrote it"});
    // The wrong element type.
    expect_error([&](Handler& h) {
        auto a = h.require<double>(f, access::read);
        auto b = h.require<double>(small, access::write);
        h.scalars({1, 0});
        h.parallel_for(Range(5, 5), axpb(), [=](Item it) { b[it] = a[it]; });
    }, {"axpb", "single", "double"});
    // A range larger than a buffer it writes.
    expect_error([&](Handler& h) {
        auto a = h.require<float>(f, access::read);
        auto b = h.require<double>(small, access::write);
        h.scalars({1, 0});
        h.parallel_for(Range(10, 10), axpb(), [=](Item it) { b[it] = a[it]; });
    }, {"axpb", "small", "10x10"});
    // One buffer twice.
    expect_error([&](Handler& h) {
        auto a = h.require<double>(small, access::read);
        auto b = h.require<double>(small, access::write);
        h.parallel_for(Range(5, 5), [=](Item it) { b[it] = a[it]; });
    }, {"small", "twice"});
    // The GLSL body names two accessors, the group requires one.
    expect_error([&](Handler& h) {
        auto b = h.require<double>(small, access::write);
        h.scalars({1, 0});
        h.parallel_for(Range(5, 5), axpb(), [=](Item it) { b[it] = 0; });
    }, {"axpb", "2 accessors", "1 buffers"});
    // Scalars missing.
    expect_error([&](Handler& h) {
        auto a = h.require<float>(f, access::read);
        auto b = h.require<double>(x, access::write);
        h.parallel_for(Range(10, 10), axpb(), [=](Item it) { b[it] = a[it]; });
    }, {"axpb", "2 scalars", "gives 0"});
    // Nothing was submitted: x is still unwritten, and the queue has nothing to wait for.
    EXPECT_THROW(x.array(), tandem::KernelError);
    q.wait();
}

/// A buffer whose runtime is gone: an Error naming it.
inline void buffer_outliving_its_runtime(const tandem::Config& config) {
    std::unique_ptr<Buffer> orphan;
    {
        tandem::Runtime rt(config);
        orphan = std::make_unique<Buffer>(rt, std::vector<double>(16, 1.0), Shape{4, 4}, "orphan");
    }
    tandem::Runtime other(config);
    Buffer mine(other, Shape{4, 4}, tandem::DType::f64, "mine");
    Queue q(other);
    try {
        q.submit([&](Handler& h) {
            auto a = h.require<double>(*orphan, access::read);
            auto b = h.require<double>(mine, access::write);
            h.parallel_for(Range(4, 4), [=](Item it) { b[it] = a[it]; });
        });
        ADD_FAILURE() << "no error for a buffer of a runtime that is gone";
    } catch (const tandem::KernelError& e) {
        EXPECT_NE(std::string(e.what()).find("orphan"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("gone"), std::string::npos) << e.what();
    }
    EXPECT_THROW(orphan->array(), tandem::KernelError);
}

}  // namespace kernel_cases
