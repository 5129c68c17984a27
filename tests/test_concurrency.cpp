// Concurrency (its own binary: the ThreadSanitizer build compiles only this file): 8 threads
// building and gathering at once on one runtime, sharing some arrays built before they start;
// every result checked against a scalar reference. Also: two threads gathering the same value at
// the same moment both get it, and it is computed once.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <random>
#include <thread>

#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::Runtime;
using tandem::Shape;

namespace {

constexpr int kThreads = 8;

#if defined(TANDEM_TSAN) || defined(__SANITIZE_THREAD__)
constexpr int kRounds = 20;
constexpr std::int64_t kRows = 100;
#else
constexpr int kRounds = 25;
constexpr std::int64_t kRows = 300;
#endif

std::vector<double> ramp(std::int64_t n, double lo, double hi) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n);
    return v;
}

bool near(double got, double want) {
    if (std::isnan(want)) return std::isnan(got);
    return std::abs(got - want) <= 1e-12 * (1 + std::abs(want));
}

/// One thread's work: a few expressions over its own arrays and the shared ones.
void worker(Runtime& rt, int id, const Array& shared_col, const std::vector<double>& col,
            const Array& shared_row, const std::vector<double>& row, std::atomic<int>& failures, std::barrier<>& sync) {
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(id));
    const std::int64_t cols = static_cast<std::int64_t>(row.size());
    for (int round = 0; round < kRounds; ++round) {
        sync.arrive_and_wait();  // everybody builds and gathers at the same moment
        // own data
        std::vector<double> mine(static_cast<std::size_t>(kRows * cols));
        std::uniform_real_distribution<double> u(-3, 3);
        for (auto& x : mine) x = u(rng);
        Array m = rt.array(std::span<const double>(mine), Shape{kRows, cols});
        const double k = static_cast<double>(id + round);
        // expressions mixing own and shared arrays; some identical in every thread (hash-consed)
        Array common = tandem::sin(shared_col) * shared_row + 1.0;         // the same in all threads
        Array e1 = m * shared_col - tandem::cos(shared_row * k);             // own x shared
        Array e2 = tandem::max(m, common) / (1.0 + tandem::abs(m + k));       // uses common
        Array e3 = tandem::where(m > 0.0, tandem::exp(-tandem::abs(m)), -m);  // logical in the middle
        std::vector<tandem::HostArray> hs;
        tandem::HostArray hc;
        try {
            if (round % 2 == 0) {
                hs = rt.gather({e1, e2, e3}).get();
            } else {
                auto f1 = e1.gather(), f2 = e2.gather(), f3 = e3.gather();
                hs = {f1.get(), f2.get(), f3.get()};
            }
            hc = common.gather().get();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "thread " << id << " round " << round << ": " << e.what();
            ++failures;
            continue;
        }
        int bad = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
            for (std::int64_t i = 0; i < kRows; ++i) {
                const auto lin = i + j * kRows;
                const double x = mine[static_cast<std::size_t>(lin)], c = col[static_cast<std::size_t>(i)],
                             r = row[static_cast<std::size_t>(j)];
                const double cm = std::sin(c) * r + 1.0;
                const double w1 = x * c - std::cos(r * k);
                const double w2 = tref::ref_max(x, cm) / (1.0 + std::abs(x + k));
                const double w3 = x > 0.0 ? std::exp(-std::abs(x)) : -x;
                bad += !near(hc.at(lin), cm) + !near(hs[0].at(lin), w1) + !near(hs[1].at(lin), w2) +
                       !near(hs[2].at(lin), w3);
            }
        }
        if (bad) {
            ADD_FAILURE() << "thread " << id << " round " << round << ": " << bad << " wrong elements";
            ++failures;
        }
    }
}

}  // namespace

TEST(Concurrency, EightThreadsBuildAndGather) {
    Runtime rt;
    const auto col = ramp(kRows, -2, 2), row = ramp(17, -1, 3);
    // shared arrays, built before the threads start
    Array shared_col = rt.array(std::span<const double>(col), Shape{kRows, 1});
    Array shared_row = rt.array(std::span<const double>(row), Shape{1, 17});
    std::atomic<int> failures{0};
    std::barrier<> sync(kThreads);
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id)
        threads.emplace_back([&, id] { worker(rt, id, shared_col, col, shared_row, row, failures, sync); });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(rt.metrics().regions_failed, 0u);
    // still usable afterwards
    EXPECT_EQ((shared_row * 0.0).gather().get().to_doubles(), std::vector<double>(17, 0.0));
}

TEST(Concurrency, GraphsFreedByTheBuildersAndByTheBurialThreadAlike) {
    // A finished region's graph is freed by the next build on any thread, or by the node
    // table's burial thread when no build comes for 2 ms: threads that pause longer than that
    // between rounds leave it to that thread while the others build.
    Runtime rt;
    const auto col = ramp(kRows, -2, 2);
    const Array x = rt.array(std::span<const double>(col), Shape{kRows, 1});
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < 4; ++id) {
        threads.emplace_back([&, id] {
            for (int round = 0; round < kRounds; ++round) {
                const double k = id * 10 + round;
                Array y = tandem::sum(x * k + 1.0, 1);
                const tandem::Future<tandem::HostArray> f = y.gather();
                y = Array();  // the graph is the burial's
                double want = 0;
                for (double v : col) want += v * k + 1.0;
                if (!near(f.get().at(0), want)) ++failures;
                if ((round + id) % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    rt.wait_idle();
}

TEST(Concurrency, DefaultRuntimeFromManyThreads) {
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
        threads.emplace_back([&failures, id] {
            for (int round = 0; round < kRounds; ++round) {
                const double k = id * 100 + round;
                auto h = (tandem::linspace(0, 1, 1001) * 2.0 + k).gather().get();
                if (h.numel() != 1001 || h.at(0) != k || !near(h.at(1000), 2.0 + k) || !near(h.at(500), 1.0 + k)) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, SameValueGatheredByTwoThreadsAtOnce) {
    for (int rep = 0; rep < 10; ++rep) {
        SCOPED_TRACE("rep " + std::to_string(rep));
        Runtime rt{tandem::Config{}};  // fused, whatever TANDEM_FUSION says
        const auto xv = ramp(20000, -5, 5);
        Array x = rt.array(std::span<const double>(xv), Shape{200, 100});
        (void)x.gather().get();
        // 7 ops (sin abs uminus exp times tanh plus), one region
        Array y = tandem::tanh(tandem::sin(x) * tandem::exp(-tandem::abs(x))) + static_cast<double>(rep);
        const auto m0 = rt.metrics();
        std::barrier<> sync(2);
        tandem::HostArray h[2];
        std::string errors[2];
        std::thread t[2];
        for (int k = 0; k < 2; ++k) {
            t[k] = std::thread([&, k] {
                sync.arrive_and_wait();
                try {
                    h[k] = y.gather().get();
                } catch (const std::exception& e) {
                    errors[k] = e.what();
                }
            });
        }
        t[0].join();
        t[1].join();
        ASSERT_EQ(errors[0], "");
        ASSERT_EQ(errors[1], "");
        const auto m1 = rt.metrics();
        EXPECT_EQ(m1.ops_executed - m0.ops_executed, 7u) << "computed once";
        EXPECT_EQ(m1.regions_executed - m0.regions_executed, 1u);
        for (int k = 0; k < 2; ++k) {
            ASSERT_EQ(h[k].numel(), 20000);
            int bad = 0;
            for (std::size_t i = 0; i < xv.size(); ++i)
                bad += !near(h[k].at(static_cast<std::int64_t>(i)),
                             std::tanh(std::sin(xv[i]) * std::exp(-std::abs(xv[i]))) + rep);
            EXPECT_EQ(bad, 0) << "thread " << k;
        }
        EXPECT_EQ(h[0].to_doubles(), h[1].to_doubles());
    }
}

TEST(Concurrency, BuildingTheSameExpressionInManyThreadsGivesOneNode) {
    Runtime rt;
    const auto xv = ramp(1000, 0, 1);
    Array x = rt.array(std::span<const double>(xv), Shape{1000, 1});
    std::vector<std::shared_ptr<tandem::detail::Node>> nodes(kThreads);
    std::barrier<> sync(kThreads);
    std::vector<std::thread> threads;
    std::vector<Array> keep(kThreads);
    for (int id = 0; id < kThreads; ++id) {
        threads.emplace_back([&, id] {
            sync.arrive_and_wait();
            keep[static_cast<std::size_t>(id)] = tandem::exp(x * 2.0) - x;
            nodes[static_cast<std::size_t>(id)] = keep[static_cast<std::size_t>(id)].node();
        });
    }
    for (auto& t : threads) t.join();
    for (int id = 1; id < kThreads; ++id) EXPECT_EQ(nodes[static_cast<std::size_t>(id)], nodes[0]);
    auto h = keep[3].gather().get();
    EXPECT_NEAR(h.at(999), std::exp(xv[999] * 2.0) - xv[999], 1e-12);
}

TEST(Concurrency, ErrorsInOneThreadDoNotDisturbOthers) {
    Runtime rt;
    std::vector<double> d = {1, tref::kNaN, 3, 4};
    Array x = rt.array(std::span<const double>(d), Shape{2, 2});
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
        threads.emplace_back([&, id] {
            for (int round = 0; round < kRounds; ++round) {
                const double k = id * 1000 + round;
                if (id % 2 == 0) {
                    try {
                        (void)tandem::logical(x + k).gather().get();
                        ++failures;  // must fail: NaN to logical
                    } catch (const tandem::ValueError&) {
                    } catch (...) {
                        ++failures;
                    }
                } else {
                    try {
                        auto h = (x * 2.0 + k).gather().get();
                        if (h.at(0) != 2.0 + k || !std::isnan(h.at(1)) || h.at(3) != 8.0 + k) ++failures;
                    } catch (...) {
                        ++failures;
                    }
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, ContinuationsFromManyThreadsMayGatherAndBlock) {
    // Continuations run on the runtime's continuation threads (runtime/continuations.hpp): from
    // eight threads at once, each continuation gathers another value and waits for it there.
    Runtime rt;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
        threads.emplace_back([&rt, &failures, id] {
            std::vector<tandem::Future<double>> results;
            for (int round = 0; round < kRounds; ++round) {
                const double k = id * 100 + round;
                Array x = rt.linspace(0, 1, 2001) + k;
                Array y = x * 2.0;
                results.push_back(x.gather().then([y](const tandem::HostArray& h) { return h.at(0) + y.gather().get().at(2000); }));
            }
            for (int round = 0; round < kRounds; ++round) {
                const double k = id * 100 + round;
                if (!near(results[static_cast<std::size_t>(round)].get(), k + 2.0 * (1.0 + k))) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, EightThreadsSubmitAHundredThousandSmallNodes) {
    // The scheduler under load from many submitters: 8 threads build and gather 100,000 small
    // nodes in all (chains of 250 ops on a few elements, each thread its own values plus one
    // shared input), every result checked.
    Runtime rt;
    const std::vector<double> base = {0.5, 1.5, -2.0, 4.0};
    Array shared = rt.array(std::span<const double>(base), Shape{4, 1});
    constexpr int kChain = 250, kPerThread = 100000 / (kThreads * kChain);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
        threads.emplace_back([&, id] {
            for (int c = 0; c < kPerThread; ++c) {
                Array x = shared + static_cast<double>(id * 1000 + c);
                double want[4];
                for (int i = 0; i < 4; ++i) want[i] = base[static_cast<std::size_t>(i)] + (id * 1000 + c);
                for (int k = 0; k < kChain / 2; ++k) {
                    x = x * 0.5 + 1.0;
                    for (double& w : want) w = w * 0.5 + 1.0;
                }
                const auto h = x.gather().get();
                for (int i = 0; i < 4; ++i)
                    if (h.at(i) != want[i]) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(rt.metrics().regions_failed, 0u);
}

TEST(Concurrency, APlanBeingMadeHoldsNotTheSchedulersLock) {
    // A plan's fusion and placement (~1 ms for a 1,300-node program on a slow host) ran under
    // the scheduler's one lock, and every completion, CPU worker and reader of the graph waited
    // for them. Planners now take turns on a lock of their own and hold the scheduler's only to
    // walk the graph, to read an earlier plan's value, and to install the plan. With the
    // slow_plan fault each plan pauses 2 s once placed; Array::describe, which takes the
    // scheduler's lock, must not wait for that.
    tandem::Config c;
    c.device = "cpu";
    c.test_fault = "slow_plan";
    Runtime rt(c);
    const std::vector<double> base = {0.5, 1.5, -2.0, 4.0};
    Array x = rt.array(std::span<const double>(base), Shape{4, 1});
    Array y = x * 2.0 + 1.0;
    std::atomic<bool> gathered{false};
    std::vector<double> got;
    std::thread planner([&] {
        got = y.gather().get().to_doubles();
        gathered = true;
    });
    while (rt.metrics().plans == 0) std::this_thread::yield();  // its walk is done: it fuses, places, pauses
    const auto start = std::chrono::steady_clock::now();
    const std::string text = y.describe();
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_FALSE(gathered.load()) << "the plan should still be pausing";
    EXPECT_LT(waited, std::chrono::milliseconds(1000)) << "describe() waited for a plan being fused";
    EXPECT_NE(text.find("times"), std::string::npos) << text;
    planner.join();
    EXPECT_EQ(got, (std::vector<double>{2.0, 4.0, -3.0, 9.0}));
}

TEST(Concurrency, EightThreadsSubmitCommandGroups) {
    // User kernels from 8 threads at once: one queue shared by all and one of each thread's own,
    // a buffer every thread reads, and each thread's buffers updated in place and read back as
    // arrays; every value checked.
    Runtime rt;
    const std::int64_t n = kRows;
    tandem::Buffer base(rt, ramp(n, 0, 1), Shape{n, 1}, "base");
    tandem::Queue shared(rt);
    std::barrier start(kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            tandem::Queue own(rt, {.in_order = t % 2 == 0});
            tandem::Buffer acc(rt, std::vector<double>(static_cast<std::size_t>(n), 0.0), Shape{n, 1}, "acc" + std::to_string(t));
            start.arrive_and_wait();
            for (int round = 0; round < kRounds; ++round) {
                tandem::Queue& q = round % 2 == 0 ? shared : own;
                q.submit([&](tandem::Handler& h) {  // acc += base * (t + 1)
                    auto b = h.require<double>(base, tandem::access::read);
                    auto a = h.require<double>(acc, tandem::access::read_write);
                    h.parallel_for(tandem::Range(n), [=](tandem::Item it) { a[it.linear] += b[it.linear] * (t + 1); });
                });
                if (round % 5 == 4) {
                    const auto got = (acc.array() * 1.0).gather().get();
                    const double want = (round + 1) * (t + 1) * (static_cast<double>(n - 1) / static_cast<double>(n));
                    if (!near(got.at(n - 1), want)) ++failures;
                }
            }
            double seen = -1;
            own.submit([&](tandem::Handler& h) {
                auto a = h.require<double>(acc, tandem::access::read);
                h.host_task([=, &seen] { seen = a[0] + a[n - 1]; });
            }).wait();
            if (!near(seen, kRounds * (t + 1) * (static_cast<double>(n - 1) / static_cast<double>(n)))) ++failures;
        });
    for (auto& th : threads) th.join();
    shared.wait();
    EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, EightThreadsOnOneInOrderQueueMakeOneChain) {
    // Every group of an in-order queue follows the one submitted before it, whichever thread
    // submitted either: no two of its host tasks ever run at once.
    Runtime rt;
    tandem::Queue q(rt, {.in_order = true});
    std::atomic<int> active{0}, overlaps{0}, runs{0};
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            start.arrive_and_wait();
            for (int k = 0; k < 10; ++k)
                q.submit([&](tandem::Handler& h) {
                    h.host_task([&] {
                        if (active.fetch_add(1) != 0) ++overlaps;
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                        active.fetch_sub(1);
                        ++runs;
                    });
                });
        });
    for (auto& th : threads) th.join();
    q.wait();
    EXPECT_EQ(runs.load(), kThreads * 10);
    EXPECT_EQ(overlaps.load(), 0);
}

TEST(Concurrency, ChainsStartedWhileFourThreadsBuildThem) {
    // Deep, heavy chains (Config::start_depth) start computing from the threads that build them,
    // each on its own next node, while the others build and gather theirs; every value is right.
    tandem::Config c;
    c.device = "cpu";
    c.start_depth = 8;
    Runtime rt(c);
    constexpr std::int64_t n = std::int64_t{1} << 18;  // heavy enough to start
    std::vector<double> base(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<double>(i % 13) - 6.0;
    const Array shared = rt.array(std::span<const double>(base), Shape{n, 1});
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < 4; ++id) {
        threads.emplace_back([&, id] {
            Array x = shared + static_cast<double>(id);
            for (int k = 0; k < 12; ++k) x = x * 0.5 + 1.0;
            const auto h = x.gather().get();
            for (std::int64_t i = 0; i < n; i += 4099) {
                double w = base[static_cast<std::size_t>(i)] + id;
                for (int k = 0; k < 12; ++k) w = w * 0.5 + 1.0;
                if (h.at(i) != w) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_GT(rt.metrics().plans, 4u) << "the chains started before their gathers";
    EXPECT_EQ(rt.metrics().regions_failed, 0u);
}
