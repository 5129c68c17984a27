// Residency: where an array's valid copies live. A Value is one array's elements with at most a
// host copy and a device copy; values are immutable, so a copy once valid stays valid, and a
// transfer only ever adds a copy. Data stays where it was computed until a consumer elsewhere
// (a CPU region, a gather) needs it.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "runtime/memory.hpp"

namespace tandem::detail {

/// A backend's copy of a value in device memory (the Vulkan backend derives from it).
struct DeviceCopy {
    virtual ~DeviceCopy() = default;
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
    std::shared_ptr<DeviceCopy> device() const {
        std::lock_guard lock(mutex_);
        return device_;
    }
    void set_host(std::shared_ptr<Storage> s) {
        std::lock_guard lock(mutex_);
        host_ = std::move(s);
    }
    void set_device(std::shared_ptr<DeviceCopy> d) {
        std::lock_guard lock(mutex_);
        device_ = std::move(d);
    }

private:
    const std::size_t bytes_;
    mutable std::mutex mutex_;
    std::shared_ptr<Storage> host_;
    std::shared_ptr<DeviceCopy> device_;
};

}  // namespace tandem::detail
