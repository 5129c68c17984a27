// The continuations of a runtime's futures run on its continuation threads
// (runtime/continuations.hpp), never on the thread that completes the work: a continuation may
// block on another value of the same runtime, or take long, without stalling or deadlocking it.
// Shared by the CPU suite (test_futures.cpp) and the Vulkan suite (test_vulkan_futures.cpp),
// where the completing thread is the device's completion thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <thread>
#include <vector>

#include "tandem/tandem.hpp"

namespace continuation_cases {

using namespace std::chrono_literals;

// Large enough for the device's size threshold (64 Ki elements).
inline constexpr std::int64_t kElements = 1 << 18;

/// n points from lo to hi, from host data (uploaded where the work runs on a device).
inline tandem::Array ramp(tandem::Runtime& rt, double lo, double hi, std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1);
    return rt.array(std::span<const double>(v), tandem::Shape{n, 1});
}

/// A continuation that calls get() on another value of the runtime (deadlocked when
/// continuations ran on the device's completion thread: the value it waits for is completed
/// by that same thread).
inline void continuation_blocks_on_another_value(tandem::Runtime& rt) {
    auto x = ramp(rt, -1, 1, kElements);
    auto y = tandem::sin(x) * 2.0;
    auto z = tandem::cos(x) + 1.0;
    auto f = y.gather().then([z](const tandem::HostArray& h) { return h.at(0) + z.gather().get().at(kElements - 1); });
    ASSERT_TRUE(f.wait_for(60s)) << "a continuation waiting for another value never finished (deadlock)";
    EXPECT_NEAR(f.get(), 2.0 * std::sin(-1.0) + std::cos(1.0) + 1.0, 1e-12);
}

/// While one continuation is blocked (until the test lets it go), other work of the runtime
/// completes, and so do other continuations. (A continuation registered on a future that is
/// ready already runs at once on the registering thread, as documented; should the gather win
/// that race, the case tries again with a new value.)
inline void blocked_continuation_stalls_nothing(tandem::Runtime& rt) {
    const auto here = std::this_thread::get_id();
    for (int attempt = 0; attempt < 5; ++attempt) {
        std::promise<void> release;
        std::shared_future<void> released = release.get_future().share();
        auto x = ramp(rt, 0, 1 + attempt, 4 * kElements);
        auto blocked = (tandem::exp(x) * 3.0).gather().then([released, here](const tandem::HostArray& h) {
            if (std::this_thread::get_id() == here) return std::int64_t{-1};  // ran at once: ready already
            released.wait();
            return h.numel();
        });
        if (blocked.ready() && blocked.get() == -1) continue;
        // blocked's continuation is waiting now (or about to); these need the completing thread
        auto y = ramp(rt, 0, 1, kElements);
        auto other = (tandem::sqrt(y) + 0.5).gather();
        ASSERT_TRUE(other.wait_for(60s)) << "a blocked continuation stalled the runtime's completions";
        auto chained = (y * 4.0).gather().then([](const tandem::HostArray& h) { return h.at(kElements - 1); });
        ASSERT_TRUE(chained.wait_for(60s)) << "a blocked continuation kept another continuation from running";
        EXPECT_EQ(chained.get(), 4.0);
        EXPECT_NEAR(other.get().at(kElements - 1), 1.5, 1e-15);
        EXPECT_FALSE(blocked.ready());
        release.set_value();
        ASSERT_TRUE(blocked.wait_for(60s));
        EXPECT_EQ(blocked.get(), 4 * kElements);
        return;
    }
    FAIL() << "five gathers in a row finished before their continuation was registered";
}

}  // namespace continuation_cases
