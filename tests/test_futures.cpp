// Future / Promise / then / when_all / make_ready_future, alone and with gathers: copies share
// one result, continuations run once the value is there (and never block), errors pass along,
// exceptions thrown by continuations become errors, and invalid futures throw tandem::Error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "reference.hpp"
#include "continuation_cases.hpp"
#include "tandem/tandem.hpp"

using namespace std::chrono_literals;
using tandem::Future;
using tandem::HostArray;
using tandem::Promise;

namespace {

std::exception_ptr error_of(const std::string& what) { return std::make_exception_ptr(tandem::ValueError(what)); }

template <class T>
std::string error_message(const Future<T>& f) {
    try {
        (void)f.get();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace

TEST(Future, DefaultIsInvalidAndEveryCallThrows) {
    Future<int> f;
    EXPECT_FALSE(f.valid());
    EXPECT_THROW((void)f.get(), tandem::Error);
    EXPECT_THROW((void)f.ready(), tandem::Error);
    EXPECT_THROW(f.wait(), tandem::Error);
    EXPECT_THROW((void)f.wait_for(1ms), tandem::Error);
    EXPECT_THROW((void)f.then([](int x) { return x; }), tandem::Error);
    Future<HostArray> g;
    EXPECT_FALSE(g.valid());
    EXPECT_THROW((void)g.get(), tandem::Error);
}

TEST(Future, PromiseDeliversValue) {
    Promise<int> p;
    Future<int> f = p.future();
    EXPECT_TRUE(f.valid());
    EXPECT_FALSE(f.ready());
    EXPECT_FALSE(f.wait_for(10ms));
    p.set_value(42);
    EXPECT_TRUE(f.ready());
    EXPECT_TRUE(f.wait_for(0ms));
    EXPECT_EQ(f.get(), 42);
    EXPECT_EQ(f.get(), 42) << "get can be called again";
    Future<int> copy = f;
    EXPECT_EQ(copy.get(), 42);
    EXPECT_THROW(p.set_value(1), tandem::Error) << "a result is set once";
}

TEST(Future, PromiseDeliversErrorToEveryCopy) {
    Promise<int> p;
    Future<int> f = p.future(), g = f;
    p.set_error(error_of("boom"));
    EXPECT_TRUE(f.ready());
    EXPECT_THROW((void)f.get(), tandem::ValueError);
    EXPECT_THROW((void)g.get(), tandem::ValueError);
    EXPECT_EQ(error_message(g), "boom");
    EXPECT_THROW(p.set_error(error_of("again")), tandem::Error);
}

TEST(Future, WaitBlocksUntilAnotherThreadSetsTheValue) {
    Promise<std::string> p;
    Future<std::string> f = p.future();
    std::thread t([p] {
        std::this_thread::sleep_for(20ms);
        p.set_value("done");
    });
    f.wait();
    EXPECT_TRUE(f.ready());
    EXPECT_EQ(f.get(), "done");
    t.join();
}

TEST(Future, MakeReadyFuture) {
    auto f = tandem::make_ready_future(std::string("x"));
    EXPECT_TRUE(f.valid());
    EXPECT_TRUE(f.ready());
    EXPECT_EQ(f.get(), "x");
}

TEST(Future, ThenOnAReadyFutureRunsAtOnceOnThisThread) {
    auto f = tandem::make_ready_future(20);
    std::thread::id ran_on;
    auto g = f.then([&](int x) {
        ran_on = std::this_thread::get_id();
        return x + 1;
    });
    EXPECT_TRUE(g.ready());
    EXPECT_EQ(ran_on, std::this_thread::get_id());
    EXPECT_EQ(g.get(), 21);
}

TEST(Future, ThenRunsWhenTheValueArrives) {
    Promise<int> p;
    std::atomic<int> calls{0};
    auto g = p.future().then([&](int x) {
        ++calls;
        return x * 2.5;
    });
    static_assert(std::is_same_v<decltype(g), Future<double>>);
    EXPECT_FALSE(g.ready());
    EXPECT_EQ(calls.load(), 0) << "a continuation does not run before the value is there";
    p.set_value(4);
    EXPECT_TRUE(g.ready());
    EXPECT_EQ(g.get(), 10.0);
    EXPECT_EQ(calls.load(), 1);
}

TEST(Future, ThenOfThen) {
    Promise<int> p;
    auto h = p.future().then([](int x) { return x + 1; }).then([](int x) { return std::to_string(x); }).then(
        [](const std::string& s) { return s + "!"; });
    p.set_value(41);
    EXPECT_EQ(h.get(), "42!");
}

TEST(Future, ThenReturningVoidGivesMonostate) {
    int seen = 0;
    auto f = tandem::make_ready_future(7).then([&](int x) { seen = x; });
    static_assert(std::is_same_v<decltype(f), Future<std::monostate>>);
    f.wait();
    EXPECT_EQ(seen, 7);
    EXPECT_NO_THROW((void)f.get());
}

TEST(Future, ThenReturningAFutureIsFlattened) {
    Promise<int> outer;
    Promise<std::string> inner;
    auto f = outer.future().then([inner](int x) {
        EXPECT_EQ(x, 3);
        return inner.future();
    });
    static_assert(std::is_same_v<decltype(f), Future<std::string>>);
    outer.set_value(3);
    EXPECT_FALSE(f.ready()) << "waits for the inner future too";
    inner.set_value("inner");
    EXPECT_TRUE(f.ready());
    EXPECT_EQ(f.get(), "inner");
}

TEST(Future, ThenReturningAFailedFuture) {
    Promise<int> inner;
    auto f = tandem::make_ready_future(1).then([inner](int) { return inner.future(); });
    inner.set_error(error_of("inner failed"));
    EXPECT_THROW((void)f.get(), tandem::ValueError);
    EXPECT_EQ(error_message(f), "inner failed");
}

TEST(Future, ExceptionInThenBecomesTheError) {
    auto f = tandem::make_ready_future(1).then([](int) -> int { throw tandem::ShapeError("from then"); });
    EXPECT_TRUE(f.ready());
    EXPECT_THROW((void)f.get(), tandem::ShapeError);
    EXPECT_EQ(error_message(f), "from then");
    auto g = tandem::make_ready_future(1).then([](int) -> Future<int> { throw std::runtime_error("plain"); });
    EXPECT_THROW((void)g.get(), std::runtime_error);
    // and it keeps passing along the chain
    auto h = f.then([](int x) { return x + 1; });
    EXPECT_THROW((void)h.get(), tandem::ShapeError);
}

TEST(Future, ErrorSkipsTheContinuation) {
    Promise<int> p;
    bool called = false;
    auto g = p.future().then([&](int x) {
        called = true;
        return x;
    });
    p.set_error(error_of("upstream"));
    EXPECT_THROW((void)g.get(), tandem::ValueError);
    EXPECT_FALSE(called);
}

TEST(Future, ManyContinuationsOnOneFuture) {
    Promise<int> p;
    auto f = p.future();
    std::vector<Future<int>> outs;
    for (int k = 0; k < 10; ++k) outs.push_back(f.then([k](int x) { return x + k; }));
    p.set_value(100);
    for (int k = 0; k < 10; ++k) EXPECT_EQ(outs[static_cast<std::size_t>(k)].get(), 100 + k);
}

TEST(WhenAll, ValuesInOrder) {
    std::vector<Promise<int>> ps(5);
    std::vector<Future<int>> fs;
    for (auto& p : ps) fs.push_back(p.future());
    auto all = tandem::when_all(fs);
    for (int k : {3, 1, 4, 0, 2}) {
        EXPECT_FALSE(all.ready());
        ps[static_cast<std::size_t>(k)].set_value(k * 10);
    }
    EXPECT_TRUE(all.ready());
    EXPECT_EQ(all.get(), (std::vector<int>{0, 10, 20, 30, 40}));
}

TEST(WhenAll, Empty) {
    auto all = tandem::when_all(std::vector<Future<int>>{});
    EXPECT_TRUE(all.ready());
    EXPECT_TRUE(all.get().empty());
}

TEST(WhenAll, FirstErrorInInputOrder) {
    Promise<int> a, b, c;
    auto all = tandem::when_all(std::vector<Future<int>>{a.future(), b.future(), c.future()});
    c.set_error(error_of("third"));  // fails first in time
    b.set_error(error_of("second"));
    EXPECT_FALSE(all.ready()) << "waits for every input";
    a.set_value(1);
    EXPECT_TRUE(all.ready());
    EXPECT_EQ(error_message(all), "second");
}

TEST(WhenAll, InvalidInputThrows) {
    std::vector<Future<int>> fs{tandem::make_ready_future(1), Future<int>{}};
    EXPECT_THROW((void)tandem::when_all(fs), tandem::Error);
}

TEST(WhenAll, FromManyThreads) {
    std::vector<Promise<int>> ps(16);
    std::vector<Future<int>> fs;
    for (auto& p : ps) fs.push_back(p.future());
    auto all = tandem::when_all(fs);
    std::vector<std::thread> ts;
    for (int k = 0; k < 16; ++k) ts.emplace_back([&ps, k] { ps[static_cast<std::size_t>(k)].set_value(k); });
    for (auto& t : ts) t.join();
    auto v = all.get();
    for (int k = 0; k < 16; ++k) EXPECT_EQ(v[static_cast<std::size_t>(k)], k);
}

// ---- with the runtime ---------------------------------------------------------------------------

TEST(GatherFuture, IsValidAndDelivers) {
    tandem::Runtime rt;
    std::vector<double> d = {1, 2, 3, 4};
    auto x = rt.array(std::span<const double>(d), tandem::Shape{2, 2});
    auto f = (x * x).gather();
    EXPECT_TRUE(f.valid());
    (void)f.wait_for(0ms);  // never blocks, whatever it answers
    EXPECT_EQ(f.get().to_doubles(), (std::vector<double>{1, 4, 9, 16}));
    EXPECT_TRUE(f.ready());
}

TEST(GatherFuture, ThenOnAGather) {
    tandem::Runtime rt;
    auto x = rt.linspace(0, 1, 1001);
    auto total = (x * 2.0).gather().then([](const HostArray& h) {
        double s = 0;
        for (double v : h.to_doubles()) s += v;
        return s;
    });
    EXPECT_NEAR(total.get(), 1001.0, 1e-9);
}

TEST(GatherFuture, GatherInsideAContinuation) {
    // A continuation runs on whatever thread completes the gather (possibly a worker); a
    // gather from there must not block or deadlock.
    tandem::Runtime rt;
    auto x = rt.linspace(-1, 1, 5000);
    auto y = tandem::sin(x);
    auto z = tandem::cos(x) + 1.0;
    auto f = y.gather().then([z](const HostArray&) { return z.gather(); });
    static_assert(std::is_same_v<decltype(f), Future<HostArray>>);
    ASSERT_TRUE(f.wait_for(60s)) << "deadlock?";
    auto h = f.get();
    ASSERT_EQ(h.numel(), 5000);
    for (std::int64_t i = 0; i < 5000; i += 499) {
        const double xi = -1.0 + 2.0 * static_cast<double>(i) / 4999.0;
        EXPECT_NEAR(h.at(i), std::cos(xi) + 1.0, 1e-12);
    }
}

TEST(GatherFuture, GatherManyIsInOrder) {
    tandem::Runtime rt;
    std::vector<tandem::Array> xs;
    for (int k = 0; k < 6; ++k) xs.push_back(rt.fill(k, tandem::Shape{3, k + 1}) * 2.0);
    xs.push_back(rt.fill(1, tandem::Shape{0, 4}));
    auto all = rt.gather(xs).get();
    ASSERT_EQ(all.size(), xs.size());
    for (int k = 0; k < 6; ++k) {
        EXPECT_EQ(all[static_cast<std::size_t>(k)].shape(), tandem::Shape({3, k + 1}));
        EXPECT_EQ(all[static_cast<std::size_t>(k)].to_doubles(), std::vector<double>(static_cast<std::size_t>(3 * (k + 1)), 2.0 * k));
    }
    EXPECT_EQ(all.back().shape(), tandem::Shape({0, 4}));
    EXPECT_TRUE(rt.gather({}).get().empty());
}

TEST(GatherFuture, WhenAllOfGathers) {
    tandem::Runtime rt;
    auto x = rt.colon(1, 10);
    auto all = tandem::when_all(std::vector<Future<HostArray>>{(x + 1.0).gather(), (x * x).gather(), x.gather()}).get();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].at(9), 11);
    EXPECT_EQ(all[1].at(9), 100);
    EXPECT_EQ(all[2].at(0), 1);
}

TEST(GatherFuture, SameValueGatheredTwiceSharesTheResult) {
    tandem::Runtime rt;
    auto x = rt.linspace(0, 1, 10000);
    auto y = tandem::exp(x) * 3.0;
    auto f1 = y.gather();
    auto f2 = y.gather();
    const auto& h1 = f1.get();
    const auto& h2 = f2.get();
    EXPECT_EQ(h1.to_doubles(), h2.to_doubles());
}

TEST(GatherFuture, OutlivesItsRuntime) {
    Future<HostArray> f;
    {
        tandem::Runtime rt;
        auto x = rt.linspace(0, 1, 20000);
        auto y = tandem::sqrt(x) + tandem::sin(x);
        f = y.gather();
    }  // the runtime waits for work in flight; the future keeps its value
    ASSERT_TRUE(f.ready());
    const auto& h = f.get();
    ASSERT_EQ(h.numel(), 20000);
    EXPECT_NEAR(h.at(19999), 1.0 + std::sin(1.0), 1e-14);
}

// ---- continuations run on the runtime's continuation threads (tests/continuation_cases.hpp) ----

TEST(GatherFuture, ContinuationMayBlockOnAnotherValue) {
    tandem::Runtime rt;
    continuation_cases::continuation_blocks_on_another_value(rt);
}

TEST(GatherFuture, BlockedContinuationStallsNothing) {
    tandem::Runtime rt;
    continuation_cases::blocked_continuation_stalls_nothing(rt);
}
