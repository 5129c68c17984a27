// The contract every backend fills: run one fused region. The scheduler decides where a region
// runs; the backend makes the copies it needs (a device backend uploads host-only inputs in the
// same submission) and gives every output a copy on its side.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <span>
#include <cstdint>
#include <string>
#include <string_view>

#include "graph/region.hpp"
#include "scheduler/residency.hpp"
#include "tandem/runtime.hpp"

namespace tandem::detail {

/// One region handed to a backend: its inputs' values, its outputs' values (fresh, no copies
/// yet), which outputs a host sink (a gather) wants back, and what to call when it is done.
struct Submission {
    const Region* region = nullptr;
    std::span<const std::shared_ptr<Value>> inputs;
    std::span<const std::shared_ptr<Value>> outputs;
    std::span<const bool> wanted_on_host;  ///< per output: also make a host copy
    /// Called exactly once: with nullptr when every output has its copies, else with the error
    /// (a data-dependent failure, a lost device). May run on any thread, even before submit()
    /// returns (another thread's flush may send the batch), never under a lock the backend's
    /// flush() takes.
    std::function<void(std::exception_ptr)> done;
    /// Device backends, optional: called before `done` with the seconds the device spent on the
    /// region's kernels (timestamp queries), when the device can tell.
    std::function<void(double)> measured;
    /// Refuse (KernelNotReady, nothing recorded) rather than wait for a kernel that is not built
    /// yet: the caller must not block (the scheduler then hands it to the device's submitting thread).
    bool refuse_cold = false;
};

/// Backend::submit's refusal of a Submission with refuse_cold whose kernel is not built yet.
struct KernelNotReady : std::exception {
    const char* what() const noexcept override { return "the region's kernel is not built yet"; }
};

/// What kind of processor a backend runs on (the cost model's defaults follow it).
enum class DeviceClass : std::uint8_t {
    host,            ///< the CPU executor itself
    discrete_gpu,
    integrated_gpu,
    virtual_gpu,
    cpu_device,      ///< a device API implemented on the CPU (lavapipe)
};

/// Work of a backend that is no region: a copy between host and device, or a kernel's build.
/// Host times: from when the backend started it to when it saw it done.
struct Activity {
    enum class Kind : std::uint8_t { upload, download, compile };
    Kind kind = Kind::upload;
    std::chrono::steady_clock::time_point start, end;
    std::uint64_t bytes = 0;  ///< a copy's
    double device_ms = -1;    ///< a copy's own time on the device (timestamp queries; -1: unknown)
    double host_ms = -1;      ///< an upload's host side: the staging copy and the submit (-1: unknown)
    bool from_disk = false;   ///< a build whose SPIR-V came from the disk cache (no compile)
};
using ActivitySink = std::function<void(const Activity&)>;

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string_view name() const noexcept = 0;
    virtual DeviceClass device_class() const noexcept { return DeviceClass::host; }
    /// What a calibration of this device is valid for: its name, driver and pipeline-cache UUID
    /// ("" for the CPU executor).
    virtual std::string identity() const { return ""; }
    /// True for the CPU executor: it reads and writes host copies, and runs on the scheduler's
    /// worker threads; a device backend records work and completes it asynchronously.
    virtual bool on_host() const noexcept = 0;
    /// Runs (host) or records (device) the region. Throws, having done nothing, to refuse it (a
    /// shader that fails to compile, no device memory): the scheduler then runs it on the CPU.
    virtual void submit(Submission s) = 0;
    /// Sends what was recorded (device backends batch submissions until this is called).
    virtual void flush() {}
    /// Seconds `r` would wait before running here because its kernel is not built yet (a device's
    /// pipeline compiles on first use): 0 once it is, what is left of a build under way, else the
    /// expected build time. Placement adds it to this executor's predicted finish.
    virtual double pipeline_wait_s(const Region& r) { (void)r; return 0.0; }
    /// Starts building `r`'s kernel in the background, so that a later run finds it ready
    /// (placement ran `r` elsewhere because the build would have cost more than it saved).
    virtual void prepare(const Region& r) { (void)r; }
    /// Stops work of its own in the background (kernels built ahead): the scheduler whose
    /// activity it reports is going away.
    virtual void quiesce() {}
    /// Gives `v` a host copy from its device copy, blocking until it is there (device backends).
    virtual void download(Value& v) { (void)v; }
    /// True once the device is lost: its copies can no longer be read (any thread).
    virtual bool lost() const noexcept { return false; }
    /// A copy on this device of bytes [offset, offset + bytes) of `v`'s copy here, sharing its
    /// memory (a streamed region's window), or null: no copy here, or an offset its kernels
    /// cannot read from (multiples of kWindowAlignment always can).
    virtual std::shared_ptr<DeviceCopy> window(const Value& v, std::size_t offset, std::size_t bytes) const {
        (void)v, (void)offset, (void)bytes;
        return nullptr;
    }
    static constexpr std::size_t kWindowAlignment = 256;
    /// Bytes of arrays this device should hold at once by its own account (what its driver says
    /// the process may use, with headroom); 0 for the CPU executor.
    virtual std::uint64_t memory_budget() const { return 0; }
    /// The device's memory, for a budget given as a share of it; 0 for the CPU executor.
    virtual std::uint64_t memory_bytes() const { return 0; }
    /// Its index among the system's devices of its kind (TANDEM_DEVICE's numbering, `tandem info`'s
    /// list); -1 for the CPU executor.
    virtual int system_index() const noexcept { return -1; }
    /// Its kernel cache in words ("<directory>: 12 hits, ..."), for `tandem info`; "" without one.
    virtual std::string kernel_cache_text() const { return ""; }
    /// Adds its counters (transfers, kernels, pipelines) to `m` (+=: several devices sum).
    virtual void add_metrics(Metrics& m) const { (void)m; }
    /// Which of the runtime's devices it is (its copy slot in a Value); 0 for the CPU executor.
    std::size_t ordinal() const noexcept { return ordinal_; }
    void set_ordinal(std::size_t ordinal) noexcept { ordinal_ = ordinal; }
    /// Where to report its copies and kernel builds (for TANDEM_TRACE). Set once, before the
    /// first submission; called from any of its threads.
    virtual void set_activity_sink(ActivitySink sink) { (void)sink; }

private:
    std::size_t ordinal_ = 0;
};

}  // namespace tandem::detail
