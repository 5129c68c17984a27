// The host memory pool (runtime/memory.hpp): freed buffers are reused by size class, the newest
// first, and the oldest are freed past the byte limit; a reuse is a lookup, not a scan of what is
// cached (a loop of command groups caches thousands of small buffers).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/memory.hpp"

using tandem::detail::HostPool;
using tandem::detail::Storage;

TEST(HostPool, ReusesTheNewestBufferOfAClassAndEvictsTheOldest) {
    auto pool = std::make_shared<HostPool>(3 * 4096, 0);
    std::vector<std::shared_ptr<Storage>> held;
    std::vector<void*> addresses;
    for (int k = 0; k < 4; ++k) {
        held.push_back(pool->allocate(4000, "test buffer"));
        addresses.push_back(held.back()->data());
    }
    held.clear();  // released oldest first: the first one is freed (past the 3-buffer limit)
    auto again = pool->allocate(4000, "test buffer");
    EXPECT_EQ(again->data(), addresses[3]) << "the newest cached buffer of the class";
    auto second = pool->allocate(4000, "test buffer");
    EXPECT_EQ(second->data(), addresses[2]);
    auto third = pool->allocate(4000, "test buffer");
    EXPECT_EQ(third->data(), addresses[1]);
    const auto before = pool->stats();
    auto fourth = pool->allocate(4000, "test buffer");  // the cache is empty now: fresh memory
    EXPECT_EQ(pool->stats().hits, before.hits);
    EXPECT_GT(pool->stats().bytes_allocated, before.bytes_allocated);
}

TEST(HostPool, ManyCachedSmallBuffersStayCheapToReuse) {
    auto pool = std::make_shared<HostPool>(std::size_t{64} << 20, 0);
    std::vector<std::shared_ptr<Storage>> held;
    for (int k = 0; k < 20000; ++k) held.push_back(pool->allocate(1 + k % 100, "small"));
    held.clear();
    const auto start = pool->stats().hits;
    for (int round = 0; round < 5; ++round) {
        for (int k = 0; k < 20000; ++k) held.push_back(pool->allocate(1 + k % 100, "small"));
        held.clear();
    }
    EXPECT_EQ(pool->stats().hits - start, 100000u) << "every allocation served from the cache";
}
