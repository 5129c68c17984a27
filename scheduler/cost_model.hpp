// The cost model: how long a region takes on an executor, from its cost summary (RegionCost,
// filled in by fusion) and a profile of the executor (how fast it streams bytes, does each class
// of element operation, multiplies matrices, and what a region costs to start), plus what moving
// its inputs there costs (the link between host and device: bandwidth each way, latency, and the
// wait for the device's queue when the host needs a value computed there).
//
// The profiles come from `tandem calibrate` when it has run on this machine; until then from
// built-in defaults by the kind of executor (a CPU with N threads, a discrete GPU, an integrated
// one, a Vulkan driver running on the CPU). Defaults are deliberately plain numbers: they decide
// the obvious cases (a region of a few elements, a pass over gigabytes) and leave the close ones
// to calibration.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.hpp"
#include "graph/region.hpp"

namespace tandem::detail {

/// How fast one executor does each kind of work.
struct ExecutorProfile {
    std::string name;             ///< "cpu (2 threads)", "discrete GPU", ... for logs
    double launch_s = 0;          ///< fixed cost of one region: a CPU job, a dispatch in a batch
    double bytes_per_s = 1;       ///< streaming memory bandwidth (reads + writes)
    /// Element operations per second by cost class and compute type ([class][0: f64, 1: f32]).
    std::array<std::array<double, 2>, kCostClasses> ops_per_s{};
    std::array<double, 2> flops_per_s{1, 1};  ///< matrix products: f64, f32
};

/// The link between the host and a device.
struct LinkProfile {
    double upload_bytes_per_s = 1, download_bytes_per_s = 1;
    double latency_s = 0;  ///< a copy's fixed cost
    /// What the host waits when it needs a value the device computes: the device's batch sent,
    /// run and completed, the waiting thread woken (a round trip).
    double sync_s = 0;
};

/// Built-in profiles, used until calibration replaces them.
ExecutorProfile default_cpu_profile(int threads);
ExecutorProfile default_device_profile(DeviceClass kind, int cpu_threads);
LinkProfile default_link_profile(DeviceClass kind);

/// What a region is, for learning from its runs: its kind, the compute types and the classes of
/// its element operations, and its size to a factor of 4 (elements, or a product's flops). Regions
/// of one signature take alike long per second the model predicts.
std::uint64_t region_signature(const RegionCost& c, RegionKind kind);

/// The model refined by what happened (StarPU's history-based models), for one executor: per region
/// signature (or transfer size class), the ratios of observed to predicted time of the last kSamples
/// runs; once kMinSamples are known, their median (robust to an outlier run) scales the prediction.
/// Not thread-safe (the scheduler's lock guards it).
class PerformanceHistory {
public:
    static constexpr std::size_t kSamples = 16, kMinSamples = 3;
    static constexpr double kMaxCorrection = 64;  ///< a ratio is clamped to [1/64, 64]

    void observe(std::uint64_t signature, double predicted_s, double observed_s);
    /// The factor the prediction is multiplied by (1: not enough runs seen).
    double correction(std::uint64_t signature) const;
    std::size_t size() const noexcept { return ratios_.size(); }
    /// Whether the next run of `signature` should be measured: every run until kSamples are
    /// held, then one in kSampleEvery (timing a GPU kernel is not free: see VulkanBackend).
    bool wants_sample(std::uint64_t signature);
    static constexpr std::uint32_t kSampleEvery = 8;
    /// Runs of `signature` it holds (at most kSamples).
    std::size_t samples(std::uint64_t signature) const noexcept {
        auto it = ratios_.find(signature);
        return it == ratios_.end() ? 0 : it->second.count;
    }

    /// For the calibration file.
    struct Entry {
        std::uint64_t signature = 0;
        std::vector<double> ratios;  ///< oldest first
    };
    std::vector<Entry> entries() const;  ///< by signature
    void add(const Entry& e);

private:
    /// The last kSamples ratios of a signature, and their median: placement asks for it a few
    /// times a region, on the planning thread; a run adds to it once, on a completion thread.
    struct Samples {
        std::array<double, kSamples> ring{};
        std::uint8_t count = 0, next = 0;  ///< held; where the next one goes (the oldest, when full)
        std::uint32_t asked = 0;           ///< wants_sample calls once full
        double median = 1;                 ///< of those held, once kMinSamples are
    };
    std::unordered_map<std::uint64_t, Samples> ratios_;
};

/// One device: its rates, the link between it and the host, and what its runs taught.
struct DeviceProfile {
    /// The device it was measured on (Backend::identity(): name, driver, pipeline-cache UUID); for
    /// the defaults, the device they stand in for.
    std::string identity;
    std::string source = "built-in defaults";  ///< or "calibrated"
    ExecutorProfile rates;
    LinkProfile link;
    PerformanceHistory history;  ///< its regions and its transfers
};

/// The profiles placement uses: the CPU's, and each device's (by ordinal) with its link.
struct MachineProfile {
    ExecutorProfile cpu;
    PerformanceHistory cpu_history;
    std::vector<DeviceProfile> devices;
    std::string source = "built-in defaults";  ///< or the calibration file it came from
    std::string file;                          ///< that file's path ("" for the defaults)
    /// Kinds of region (and transfer) run whose history refines the model, over every executor.
    std::size_t history_size() const noexcept;
};
/// The built-in profile of one device of class `kind` (identity left empty).
DeviceProfile default_device(DeviceClass kind, int cpu_threads);
/// The CPU's and one default device profile per entry of `devices` (their classes, by ordinal).
MachineProfile default_machine_profile(int cpu_threads, const std::vector<DeviceClass>& devices);

/// Seconds to run region `r` on executor `p` once its inputs are there: the start, then the
/// larger of its memory traffic and its arithmetic (they overlap), then a product's flops.
double compute_seconds(const RegionCost& c, const ExecutorProfile& p);
/// Seconds to bring `bytes` to the device (upload) or to the host (download, with the wait for
/// the device's queue when the value is computed there).
double upload_seconds(std::int64_t bytes, const LinkProfile& l);
/// The PerformanceHistory signature of transfers one way (`up`: to the device) of about `bytes`
/// (a size class per factor of 4; a tag no region signature has).
std::uint64_t link_signature(bool up, std::int64_t bytes);
double download_seconds(std::int64_t bytes, const LinkProfile& l);

}  // namespace tandem::detail
