// Residency: where an array's valid copies live. A Value is one array's elements with at most a
// host copy and one copy per device; values are immutable, so a copy once valid stays valid, and
// a transfer only ever adds a copy. Data stays where it was computed until a consumer elsewhere
// (a CPU region, another device, a gather) needs it, or until a device's memory budget needs its
// room: then the least recently used copy that no work in flight uses goes (written back first
// when it is the only one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/memory.hpp"

namespace tandem::detail {

/// A backend's copy of a value in device memory (the Vulkan backend derives from it).
struct DeviceCopy {
    virtual ~DeviceCopy() = default;
};

/// Devices a runtime may open at once (a Value keeps a copy slot for each).
inline constexpr std::size_t kMaxDevices = 8;

class Value;

/// Bytes [offset, offset + value->bytes()) of a value split over devices.
struct ValuePart {
    std::size_t offset = 0;
    std::shared_ptr<Value> value;
};

class Value {
public:
    explicit Value(std::size_t bytes) : bytes_(bytes) {}
    Value(std::size_t bytes, std::shared_ptr<Storage> host) : bytes_(bytes), host_(std::move(host)) {}

    std::size_t bytes() const noexcept { return bytes_; }
    std::shared_ptr<Storage> host() const {
        std::lock_guard lock(mutex_);
        return host_;
    }
    /// Its copy on device `ordinal` (Backend::ordinal()), or null.
    std::shared_ptr<DeviceCopy> device(std::size_t ordinal) const {
        std::lock_guard lock(mutex_);
        return devices_[ordinal];
    }
    /// Bit d set: it has a copy on device d.
    std::uint32_t device_mask() const {
        std::lock_guard lock(mutex_);
        std::uint32_t mask = 0;
        for (std::size_t d = 0; d < kMaxDevices; ++d)
            if (devices_[d]) mask |= 1u << d;
        return mask;
    }
    void set_host(std::shared_ptr<Storage> s) {
        std::lock_guard lock(mutex_);
        host_ = std::move(s);
    }
    void set_device(std::size_t ordinal, std::shared_ptr<DeviceCopy> d) {
        std::lock_guard lock(mutex_);
        devices_[ordinal] = std::move(d);
    }

    /// A value split over devices: its bytes are its parts', in order, each a value with copies
    /// of its own. The output of a region run in pieces, one per device, has no whole copy
    /// until one is assembled (through the host); a value read by such a region keeps the
    /// windows its pieces took as parts (null: none), so the next one reads them in place.
    std::shared_ptr<const std::vector<ValuePart>> parts() const {
        std::lock_guard lock(mutex_);
        return parts_;
    }
    bool split() const {
        std::lock_guard lock(mutex_);
        return parts_ != nullptr;
    }
    void set_parts(std::vector<ValuePart> parts) {
        auto p = std::make_shared<const std::vector<ValuePart>>(std::move(parts));
        std::lock_guard lock(mutex_);
        parts_ = std::move(p);
    }
    /// Forgets the parts of a value that has a whole copy (they are windows of what it had).
    void clear_parts() {
        std::lock_guard lock(mutex_);
        parts_.reset();
    }
    /// Bit d: a part has a copy on device d.
    std::uint32_t part_mask() const {
        std::uint32_t mask = 0;
        if (auto ps = parts())
            for (const ValuePart& p : *ps) mask |= p.value->device_mask();
        return mask;
    }

    /// Seconds the regions that read it lost by running on the CPU because only the host had it
    /// (placement's InputSite::regret_s). The scheduler's lock guards it.
    double upload_regret_s = 0;

private:
    const std::size_t bytes_;
    mutable std::mutex mutex_;
    std::shared_ptr<Storage> host_;
    std::array<std::shared_ptr<DeviceCopy>, kMaxDevices> devices_;
    std::shared_ptr<const std::vector<ValuePart>> parts_;
};

struct ResidencyCounters {
    std::uint64_t evictions = 0;            ///< device copies dropped to make room
    std::uint64_t write_backs = 0;          ///< of which were the only copy, downloaded first
    std::uint64_t evicted_bytes = 0, written_back_bytes = 0;
    std::uint64_t peak_resident_bytes = 0;  ///< most bytes of device copies counted once room was made
};

/// The copies of one device (its ordinal), for its memory budget: their bytes, when each was last
/// used, and how many regions in flight use it (pins). Thread-safe; never calls out.
class ResidencyTable {
public:
    /// `budget`: bytes of device copies the device may hold (0: no limit).
    explicit ResidencyTable(std::uint64_t budget, std::size_t ordinal = 0) : budget_(budget), ordinal_(ordinal) {}

    std::uint64_t budget() const noexcept { return budget_; }
    /// Bytes of the copies counted now (a pinned value about to be uploaded included).
    std::uint64_t resident_bytes() const;
    /// `v` is used by a region going to the device: counted (it has, or is about to get, a
    /// copy there), most recently used, and never chosen to make room until unpinned.
    void pin(const std::shared_ptr<Value>& v);
    /// The region that pinned `v` is done with it. A value that never got its copy (its region
    /// was refused) stops counting.
    void unpin(const Value& v);
    /// The least recently used unpinned copies whose room brings the bytes counted to at most
    /// budget - `bytes`, oldest first, no longer counted: the caller writes back the ones with no
    /// host copy and drops their device copies (Value::set_device(ordinal, nullptr)). As many as there are
    /// when that is not enough. Values that died or lost their copy meanwhile are forgotten.
    std::vector<std::shared_ptr<Value>> make_room(std::uint64_t bytes);
    /// Every unpinned copy (after the device ran out of memory anyway).
    std::vector<std::shared_ptr<Value>> evict_all() { return make_room(UINT64_MAX); }
    /// What the caller did with a value make_room gave it.
    void note_eviction(std::uint64_t bytes, bool written_back);
    ResidencyCounters counters() const;

private:
    struct Entry {
        std::weak_ptr<Value> value;
        std::uint64_t bytes = 0;
        std::uint64_t last_use = 0;
        std::uint32_t pins = 0;
    };
    void forget(std::unordered_map<const Value*, Entry>::iterator it);  // mutex_ held
    void sweep();  // forgets what died or lost its copy (mutex_ held)
    /// Entries a table may have and still be swept at every new peak (make_room).
    static constexpr std::size_t kSweepAlways = 256;

    const std::uint64_t budget_;
    const std::size_t ordinal_;
    mutable std::mutex mutex_;
    std::unordered_map<const Value*, Entry> entries_;
    std::uint64_t clock_ = 0, resident_ = 0;
    std::size_t swept_entries_ = 0;  // entries the last sweep left
    ResidencyCounters counters_;
};

}  // namespace tandem::detail
