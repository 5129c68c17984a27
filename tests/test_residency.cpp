// The residency table (scheduler/residency.hpp) on its own: what a device budget counts, which
// copies make room (least recently used, never pinned ones), and what it forgets.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "scheduler/residency.hpp"

using namespace tandem::detail;

namespace {

struct FakeCopy : DeviceCopy {};

std::shared_ptr<Value> on_device(std::size_t bytes) {
    auto v = std::make_shared<Value>(bytes);
    v->set_device(0, std::make_shared<FakeCopy>());
    return v;
}

}  // namespace

TEST(Residency, PinsCountAndUnpinnedCopiesStay) {
    ResidencyTable t(1000);
    auto a = on_device(300), b = on_device(300);
    t.pin(a);
    t.pin(a);  // two regions use it: counted once
    t.pin(b);
    EXPECT_EQ(t.resident_bytes(), 600u);
    t.unpin(*a);
    t.unpin(*b);
    EXPECT_EQ(t.resident_bytes(), 600u) << "unpinned copies stay counted until room is needed";
    EXPECT_TRUE(t.make_room(400).empty()) << "600 + 400 fits 1000";
    EXPECT_EQ(t.counters().peak_resident_bytes, 600u) << "taken when room is made";
}

TEST(Residency, RoomComesFromTheLeastRecentlyUsedUnpinnedCopies) {
    ResidencyTable t(1000);
    auto a = on_device(300), b = on_device(300), c = on_device(300);
    for (auto& v : {a, b, c}) t.pin(v);
    for (auto& v : {a, b, c}) t.unpin(*v);
    t.pin(a);  // a used again: now the most recent, and in use
    auto victims = t.make_room(300);  // 900 + 300 > 1000: one must go, the oldest unpinned (b)
    ASSERT_EQ(victims.size(), 1u);
    EXPECT_EQ(victims[0], b);
    EXPECT_EQ(t.resident_bytes(), 600u);
    victims = t.make_room(1000);  // everything unpinned: c; a is pinned and stays
    ASSERT_EQ(victims.size(), 1u);
    EXPECT_EQ(victims[0], c);
    EXPECT_EQ(t.resident_bytes(), 300u) << "a pinned copy is never chosen, even when that leaves too little room";
    t.unpin(*a);
    victims = t.evict_all();
    ASSERT_EQ(victims.size(), 1u);
    EXPECT_EQ(victims[0], a);
    EXPECT_EQ(t.resident_bytes(), 0u);
    t.note_eviction(300, true);
    t.note_eviction(300, false);
    const auto n = t.counters();
    EXPECT_EQ(n.evictions, 2u);
    EXPECT_EQ(n.write_backs, 1u);
    EXPECT_EQ(n.evicted_bytes, 600u);
    EXPECT_EQ(n.written_back_bytes, 300u);
}

TEST(Residency, DeadValuesAndRefusedUploadsAreForgotten) {
    ResidencyTable t(1000);
    auto a = on_device(400);
    t.pin(a);
    t.unpin(*a);
    a.reset();  // the value died: its copy with it
    auto never = std::make_shared<Value>(500);  // pinned for a region the device then refused
    t.pin(never);
    EXPECT_EQ(t.resident_bytes(), 900u);
    t.unpin(*never);
    EXPECT_EQ(t.resident_bytes(), 400u) << "a value that never got its device copy stops counting";
    EXPECT_TRUE(t.make_room(700).empty()) << "a dead value is no victim";
    EXPECT_EQ(t.resident_bytes(), 0u);
}

TEST(Residency, NoBudgetNeverEvicts) {
    ResidencyTable t(0);
    auto a = on_device(1u << 30);
    t.pin(a);
    t.unpin(*a);
    EXPECT_TRUE(t.make_room(std::uint64_t{1} << 40).empty());
    EXPECT_EQ(t.evict_all().size(), 1u) << "after running out of memory anyway, all unpinned copies go";
}

// A large table is swept at a new peak only once its entries have grown by a quarter (a sweep
// walks them all): the peak never counts a value that died, and misses at most the last
// quarter's growth of live ones.
TEST(Residency, ALargeTablesPeakCountsLiveCopiesOnly) {
    ResidencyTable dying(0);
    for (int i = 0; i < 5000; ++i) {
        auto v = on_device(100);
        dying.pin(v);
        EXPECT_TRUE(dying.make_room(0).empty());
        dying.unpin(*v);
    }  // each dies unswept, the table growing with dead entries
    EXPECT_EQ(dying.counters().peak_resident_bytes, 100u) << "a dead value counted in the peak";
    ResidencyTable growing(0);
    std::vector<std::shared_ptr<Value>> live;
    for (int i = 0; i < 3000; ++i) {
        live.push_back(on_device(100));
        growing.pin(live.back());
        EXPECT_TRUE(growing.make_room(0).empty());
    }
    const std::uint64_t peak = growing.counters().peak_resident_bytes;
    EXPECT_LE(peak, 300000u);
    EXPECT_GE(peak, 240000u) << "more than a quarter of the live growth missed";
}
