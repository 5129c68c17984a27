#include "scheduler/residency.hpp"

#include <algorithm>

namespace tandem::detail {

std::uint64_t ResidencyTable::resident_bytes() const {
    std::lock_guard lock(mutex_);
    return resident_;
}

void ResidencyTable::pin(const std::shared_ptr<Value>& v) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = entries_.try_emplace(v.get());
    Entry& e = it->second;
    if (!fresh && e.value.lock() != v) {  // a dead value's entry, its address reused
        resident_ -= e.bytes;
        e = Entry{};
        fresh = true;
    }
    if (fresh) {
        e.value = v;
        e.bytes = v->bytes();
        resident_ += e.bytes;
    }
    e.last_use = ++clock_;
    ++e.pins;
}

void ResidencyTable::unpin(const Value& v) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(&v);
    if (it == entries_.end() || it->second.pins == 0) return;  // made room for meanwhile
    if (--it->second.pins == 0 && !v.device(ordinal_)) forget(it);
}

void ResidencyTable::forget(std::unordered_map<const Value*, Entry>::iterator it) {
    resident_ -= it->second.bytes;
    entries_.erase(it);
}

std::vector<std::shared_ptr<Value>> ResidencyTable::make_room(std::uint64_t bytes) {
    std::vector<std::shared_ptr<Value>> victims;
    std::lock_guard lock(mutex_);
    const std::uint64_t limit = budget_ == 0 ? UINT64_MAX : budget_;
    const std::uint64_t target = bytes >= limit ? 0 : limit - bytes;
    // The peak is taken here, where the copies counted are about to be allocated (a pin counts
    // its value before its room is made), over live copies only: values that died since are
    // swept out before a new peak is recorded. A sweep walks every entry, so a large table is
    // swept once its entries have grown by a quarter since the last sweep, and a higher count
    // waits for it (the peak of a large table may miss the last quarter's growth): with
    // thousands of regions in flight, a sweep at each made recording quadratic (a third of the
    // host's time in a stream of empty command groups on lavapipe).
    struct Peak {
        ResidencyTable& t;
        ~Peak() {
            if (t.resident_ <= t.counters_.peak_resident_bytes) return;
            if (t.entries_.size() > kSweepAlways && 4 * t.entries_.size() < 5 * t.swept_entries_) return;
            t.sweep();
            t.counters_.peak_resident_bytes = std::max(t.counters_.peak_resident_bytes, t.resident_);
        }
    } peak{*this};
    if (resident_ <= target) return victims;
    // Unpinned entries, least recently used first. Eviction is rare (a working set above the
    // budget), so sorting at each is cheaper than keeping an order at every pin.
    std::vector<std::pair<std::uint64_t, const Value*>> order;
    for (auto it = entries_.begin(); it != entries_.end();) {
        auto next = std::next(it);
        if (it->second.pins == 0) {
            auto v = it->second.value.lock();
            if (!v || !v->device(ordinal_)) forget(it);  // died, or its copy went elsewhere: no room to win
            else order.emplace_back(it->second.last_use, it->first);
        }
        it = next;
    }
    std::sort(order.begin(), order.end());
    for (auto& [use, key] : order) {
        if (resident_ <= target) break;
        auto it = entries_.find(key);
        if (auto v = it->second.value.lock()) victims.push_back(std::move(v));
        forget(it);
    }
    return victims;
}

void ResidencyTable::note_eviction(std::uint64_t bytes, bool written_back) {
    std::lock_guard lock(mutex_);
    ++counters_.evictions;
    counters_.evicted_bytes += bytes;
    if (written_back) {
        ++counters_.write_backs;
        counters_.written_back_bytes += bytes;
    }
}

void ResidencyTable::sweep() {
    for (auto it = entries_.begin(); it != entries_.end();) {
        auto next = std::next(it);
        if (it->second.pins == 0) {
            auto v = it->second.value.lock();
            if (!v || !v->device(ordinal_)) forget(it);
        }
        it = next;
    }
    swept_entries_ = entries_.size();
}

ResidencyCounters ResidencyTable::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

}  // namespace tandem::detail
