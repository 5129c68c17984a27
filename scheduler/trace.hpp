// TANDEM_TRACE: a Chrome / Perfetto trace (JSON, "X" events) of the regions a runtime ran, one
// lane per CPU worker thread and one for the device's queue (a device region spans its recording
// to its completion, its batch's wait included), with a lane for the copies between host and
// device that have submissions of their own (large uploads and readbacks, blocking downloads:
// from their submission to when the host saw them done, their own device time in the event's
// arguments) and one for kernel builds (compiles and disk-cache loads), written when the runtime
// is destroyed. Open it in https://ui.perfetto.dev or chrome://tracing to see the CPU and the GPU
// busy together.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace tandem::detail {

class Trace {
public:
    explicit Trace(std::string path);
    /// Writes the file (a message on stderr if it cannot).
    ~Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    /// A region from `start` to now: on the calling thread's lane (a CPU worker; `device` -1), or
    /// on device `device`'s lane.
    void region(const std::string& name, std::chrono::steady_clock::time_point start, int device);
    /// A copy or a kernel build, on its lane (thread-safe: a backend's threads call it).
    void activity(const Activity& a);

private:
    static constexpr int kTransferLane = 1000, kCompileLane = 1001;
    /// Device 0's queue is lane 0 (CPU workers count from 1); device d > 0 is kDeviceLanes + d.
    static constexpr int kDeviceLanes = 500;
    static int device_lane(int device) noexcept { return device == 0 ? 0 : kDeviceLanes + device; }
    struct Event {
        std::string name;
        int lane;
        double start_us, duration_us;
        std::uint64_t bytes = 0;
        double device_ms = -1;
    };
    std::string path_;
    std::chrono::steady_clock::time_point origin_;
    std::mutex mutex_;
    std::vector<Event> events_;
    int next_lane_ = 1;  // 0 is the device queue's
    int devices_seen_ = 0;  // 1 + the highest device ordinal traced
    std::uint64_t id_;   // unique per trace: a thread's lane numbers are kept per trace id
};

}  // namespace tandem::detail
