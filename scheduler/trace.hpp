// TANDEM_TRACE: a Chrome / Perfetto trace (JSON, "X" events) of the regions a runtime ran, one
// lane per CPU worker thread and one for the device's queue (a device region spans its recording
// to its completion, its batch's wait included), written when the runtime is destroyed. Open it
// in https://ui.perfetto.dev or chrome://tracing to see the CPU and the GPU busy together.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::detail {

class Trace {
public:
    explicit Trace(std::string path);
    /// Writes the file (a message on stderr if it cannot).
    ~Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    /// A region from `start` to now: on the calling thread's lane (a CPU worker), or on the
    /// device lane.
    void region(const std::string& name, std::chrono::steady_clock::time_point start, bool on_device);

private:
    struct Event {
        std::string name;
        int lane;
        double start_us, duration_us;
    };
    std::string path_;
    std::chrono::steady_clock::time_point origin_;
    std::mutex mutex_;
    std::vector<Event> events_;
    int next_lane_ = 1;  // 0 is the device queue's
    std::uint64_t id_;   // unique per trace: a thread's lane numbers are kept per trace id
};

}  // namespace tandem::detail
