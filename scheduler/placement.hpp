// Placement: which executor runs a region. In automatic mode, the earliest predicted finish
// (StarPU's dmda): for the CPU and each device, when the executor is free, when each input can be
// there (its producer's predicted finish, plus a transfer where it has no valid copy on that
// side, plus the wait for the device's queue when the host needs a device value), the region's
// compute time from its cost summary (scheduler/cost_model.hpp), and for the device the download
// of outputs a host sink wants. Close calls stay where most of the inputs' bytes are, so a chain
// does not flip between executors. Forced modes put every region on one side.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "backends/backend.hpp"
#include "scheduler/cost_model.hpp"
#include "scheduler/streaming.hpp"

namespace tandem::detail {

enum class PlacementMode : std::uint8_t {
    automatic,  ///< the cost model
    cpu,        ///< every region on the CPU (a device may be open)
    device,     ///< every region the device can take (of at least min_device_elements elements)
};

/// Whether a region may run split over several devices (Config::split).
enum class SplitMode : std::uint8_t {
    automatic,  ///< when it finishes sooner so (by kSplitGain)
    always,     ///< whenever it can be split
    off,
};

/// Where one input of a region is, as placement sees it.
struct InputSite {
    std::int64_t bytes = 0;
    bool on_host = false;       ///< it has (or its producer will give it) a host copy
    std::uint32_t devices = 0;  ///< bit d: it has (or its producer will give it) a copy on device d
    /// Split over devices (Value::parts; a region run in pieces gives it so): bit d, a part on
    /// device d. A region split the same way reads its part in place on each; any other reader
    /// has it assembled through the host.
    std::uint32_t parts = 0;
    double ready_s = 0;      ///< predicted seconds from now until it exists (0: it does)
    /// Seconds regions reading it have lost so far by running on the CPU, because only the host
    /// had it (Value::upload_regret_s). Once that reaches its upload's time, the upload counts as
    /// paid for: the next reader may go to a device (a copy there serves every later reader).
    double regret_s = 0;
    /// Of regret_s, what readers earlier in this plan added. An upload they paid for serves the
    /// readers still to come: it counts as paid for only when a later region of the plan reads
    /// the value too (read_later), or for what earlier plans' readers paid (a value read again
    /// run after run). Otherwise the upload would serve this region alone: a batch read by two
    /// regions went up for the second after the first ran on the CPU.
    double regret_plan_s = 0;
    bool read_later = true;
    /// The part of regret_s that pays for moving it.
    double paid_s() const noexcept { return read_later ? regret_s : regret_s - regret_plan_s; }
};

struct PlacementQuery {
    const Region* region = nullptr;
    std::vector<InputSite> inputs;
    std::int64_t bytes_to_host = 0;  ///< outputs a host sink (a gather) wants back
    /// Outputs that later regions of the same plan read. Their consumers are taken to run where
    /// this region's inputs are (a chain goes on where it is): run on the other side, the region
    /// pays for sending them back, and the round trip the consumers wait for.
    std::int64_t bytes_to_consumers = 0;
    /// The device on which those later regions' other inputs are (every one placed so far, none
    /// only on the host), -1 when not one device. They will run there, so the region is priced
    /// as they see it: run on the CPU, its results reach them after a round trip, and not before
    /// the device is free for them. Asked only where that could change the decision (a
    /// generator: ones, rand; a region the CPU would take); unset: not known.
    std::function<int()> consumers_device;
    /// Every later region of the plan that reads its outputs can be split over the devices too
    /// (through views): a result split over them is read in place there. When not, placement
    /// does not leave its results in parts (the reader would have them assembled on the host).
    bool readers_split = true;
    /// A vector's region may be cut on second-level blocks when split (plan_split's vector_blocks):
    /// no region of the plan reads a vector of its extent as something else.
    bool vector_blocks = false;
    /// Seconds of device work later in the plan that does not read this region's results (other
    /// independent pipelines). When it can keep the other devices busy until this region is done
    /// whole, the region is not split (automatic splitting): pieces would finish it sooner but
    /// the plan no sooner, and a split costs a submission per device and, for partials, a round
    /// trip through the host.
    double parallel_slack_s = 0;
    /// Seconds before device d's kernel for this region is built (Backend::pipeline_wait_s); asked
    /// only of a device that could matter (it might win or be explored), in automatic placement;
    /// empty: every kernel is ready.
    std::function<double(std::size_t d)> pipeline_wait_s;
};

struct PlacementDecision {
    Backend* backend = nullptr;
    const char* reason = "";  ///< for TANDEM_LOG=exec and =placement
    /// Predicted seconds from now until it finishes on the chosen executor, on the CPU and on
    /// the best device (-1: not considered).
    double finish_s = 0, cpu_s = -1, device_s = -1;
    double transfer_s = 0;  ///< predicted seconds of link traffic the chosen executor needs
    /// The device whose link carries that traffic (the chosen device's; for the CPU, the device its
    /// first input comes down from); -1: none.
    int link = -1;
    double compute_s = 0;   ///< predicted compute seconds on the chosen executor (its outstanding work)
    /// Run on the CPU: how much sooner a device would have finished it, had its host-only inputs
    /// been there already (0 otherwise). The scheduler adds it to those inputs' regret.
    double regret_s = 0;
    /// On a device: the other device that would have finished it regret_s sooner had its inputs
    /// been there (-1: none; kSplitRegret: split over the devices, had its inputs been in parts
    /// there; kWholeRegret: whole on one, had its inputs in parts been whole there); the scheduler adds it to those inputs' regret (a move that pays for itself makes
    /// the next reader go there).
    int regret_device = -1;
    /// On a device although larger than its memory budget: the pieces it streams in
    /// (scheduler/streaming.hpp); 0 otherwise.
    std::int64_t stream_pieces = 0;
    /// Split over several devices at once (data parallelism: one piece each, run side by side):
    /// bit d, device d runs a piece (`backend` is the first of them); 0 otherwise.
    std::uint32_t split = 0;
    StreamPlan split_plan{};  ///< the pieces, when split
    bool resident() const noexcept {  ///< its results stay on the device(s)
        return !backend->on_host() && stream_pieces == 0 && !(split && split_plan.partials);
    }
    /// Placed where the model predicts it slower, to learn its time there (Placement's
    /// exploration): the scheduler calls Placement::explored when it finishes.
    bool exploring = false;
    /// Run on the CPU only because this device's kernel was not built yet (it would have won
    /// otherwise): the scheduler has it built in the background (Backend::prepare).
    Backend* warm_up = nullptr;
    /// Devices (bit d) that would have finished it sooner than where it goes had their kernel
    /// been built (one device's is, another's not; a split waits for every device's): the
    /// scheduler has it built there in the background, or a device that is cold once would
    /// never be used.
    std::uint32_t prepare_on = 0;
    double warm_finish_s = 0;  ///< place_split: its finish had every device's kernel been built
    double in_place_finish_s = 0;  ///< place_split: its finish had every input been in parts on the devices (and every kernel built)
};

/// A streamed region's pieces take at most this share of the budget each (1 / it): two in
/// flight leave room for what else the device holds.
inline constexpr std::uint64_t kStreamPieceShare = 4;

/// PlacementDecision::regret_device when the region would have been split over the devices
/// sooner, had its inputs been in parts there.
inline constexpr int kSplitRegret = -2;

/// PlacementDecision::regret_device when the region was split only because an input is in parts
/// (with a host copy), while independent work would have kept the other devices busy had it
/// been whole on one.
inline constexpr int kWholeRegret = -3;

/// The executor index of the CPU in Placement's per-executor calls (devices are 0, 1, ...).
inline constexpr int kHost = -1;

class Placement {
public:
    /// `devices`: the runtime's devices in ordinal order (none: CPU only); profile.devices holds
    /// their rates in the same order (a device past its end gets the last entry's: alike devices).
    /// `device_memory_budgets`: bytes of device copies each device may hold, by ordinal (0 or
    /// missing: no limit); a region whose inputs and outputs alone exceed a device's goes to one it
    /// fits, else streams through one, else runs on the CPU.
    Placement(Backend& cpu, std::vector<Backend*> devices, PlacementMode mode, std::int64_t min_device_elements,
              MachineProfile profile, std::vector<std::uint64_t> device_memory_budgets = {});
    /// `cpu_free_s`, `device_free_s` and `link_free_s` (per device: its link to the host): seconds
    /// from now until each executor, and each link, has done the work (the transfers) already
    /// placed on it (missing entries: free now).
    PlacementDecision place(const PlacementQuery& q, double cpu_free_s, std::span<const double> device_free_s,
                            std::span<const double> link_free_s = {}) const;
    /// One device (or none): its free times alone.
    PlacementDecision place(const PlacementQuery& q, double cpu_free_s, double device_free_s, double link_free_s = 0) const {
        return place(q, cpu_free_s, std::span<const double>(&device_free_s, 1), std::span<const double>(&link_free_s, 1));
    }
    /// The predicted compute seconds of a region on the CPU (kHost) or on device `executor`: the
    /// model's, scaled by what runs of regions like it there taught (PerformanceHistory).
    double compute_s(const Region& r, int executor) const;
    /// The enabled device whose predicted compute for `r` is the shortest, if it beats the CPU's
    /// (transfers aside: where `r` would run had its inputs been there), else null.
    Backend* faster_device(const Region& r) const;
    /// The model's alone, unrefined: what an observed time is compared with.
    double model_s(const Region& r, int executor) const;
    /// A region ran: its compute took `observed_s` on that executor. Placement is not thread-safe:
    /// the scheduler calls it under its model lock.
    void learn(const Region& r, int executor, double observed_s);
    /// Whether a run of `r` there should be measured for learn (PerformanceHistory::wants_sample).
    bool wants_sample(const Region& r, int executor);
    /// Explore (automatic mode, with learning on): place a region now and then on the side the
    /// model says is slower (by at most kExploreFactor), until that side has kMinSamples runs of
    /// regions like it, one such run in flight per kind of region at a time.
    void set_exploration(bool on) noexcept { explore_ = on; }
    void set_split(SplitMode mode) noexcept { split_ = mode; }
    static constexpr double kExploreFactor = 1.5;
    /// A split over several devices is taken when it finishes in at most 1 / kSplitGain of the
    /// best single device's time.
    static constexpr double kSplitGain = 1.15;
    /// A region with inputs whose readers will run on a busy device goes with them on a close
    /// call only when that device computes it in at most 1 / kReadersDeviceGain of the CPU's
    /// time: the device's queue grows by little, the CPU's cores are spared much.
    static constexpr double kReadersDeviceGain = 4;
    /// An exploring run of `r` on `executor` finished (or was moved): others may explore again.
    void explored(const Region& r, int executor);
    std::uint64_t explorations() const noexcept { return exploring_started_; }
    /// A transfer of `bytes` to device `device` (`up`) or back from it took `observed_s` (its host
    /// side and its copy): later transfers of about that size are
    /// priced so.
    void learn_link(std::size_t device, bool up, std::int64_t bytes, double observed_s);
    /// The predicted seconds of such a transfer: the device's link rates, scaled by what transfers
    /// of about that size taught.
    double upload_s(std::size_t device, std::int64_t bytes) const;
    double download_s(std::size_t device, std::int64_t bytes) const;
    /// Device `d`'s rates, link and history.
    const DeviceProfile& device_profile(std::size_t d) const noexcept { return profile_.devices[d]; }
    std::uint64_t runs_learned() const noexcept { return learned_; }  ///< learn() calls so far
    Backend& cpu() const noexcept { return *cpu_; }
    /// The devices, in ordinal order (a lost one included).
    const std::vector<Backend*>& devices() const noexcept { return devices_; }
    /// The first device, or null without one (even when disabled).
    Backend* device() const noexcept { return devices_.empty() ? nullptr : devices_[0]; }
    PlacementMode mode() const noexcept { return mode_; }
    const MachineProfile& profile() const noexcept { return profile_; }
    /// Sends no more work to device `ordinal` (after it was lost).
    void disable_device(std::size_t ordinal) noexcept { enabled_.fetch_and(~(1u << ordinal)); }
    bool device_enabled(std::size_t ordinal) const noexcept { return (enabled_.load() >> ordinal) & 1u; }
    int enabled_devices() const noexcept { return std::popcount(enabled_.load()); }

private:
    /// A region too large for every device's budget: streamed on the first enabled device, or
    /// on the CPU when that finishes sooner (automatic mode).
    PlacementDecision place_streamed(const PlacementQuery& q, PlacementDecision cpu,
                                     std::span<const double> device_free_s, double ready) const;
    /// The region split over every enabled device it fits a share of (plan_split), when it can
    /// be: each piece's finish on its device, its windows' transfers included; partials come
    /// back to the host and finish there. backend null: it cannot. `beat_s`: the best single
    /// device's finish (kernels not built yet are asked about only when the split could beat it).
    PlacementDecision place_split(const PlacementQuery& q, double cpu_free_s, std::span<const double> device_free_s,
                                  std::span<const double> link_free_s, double ready, double beat_s) const;
    std::uint64_t budget(std::size_t d) const noexcept { return d < budgets_.size() ? budgets_[d] : 0; }

    Backend* cpu_;
    std::vector<Backend*> devices_;
    PlacementMode mode_;
    std::int64_t min_device_elements_;
    MachineProfile profile_;
    std::vector<std::uint64_t> budgets_;
    std::vector<std::vector<std::size_t>> alike_;  // per device: the others of the same identity (Backend::identity)
    bool explore_ = false;
    SplitMode split_ = SplitMode::automatic;
    // (signature, executor) of exploring runs in flight; place() is const for its callers' sake
    // but runs under the scheduler's model lock, as learn() does.
    static std::uint64_t explore_key(std::uint64_t sig, int executor) noexcept {
        return sig * 31 + static_cast<std::uint64_t>(executor + 1);
    }
    mutable std::unordered_set<std::uint64_t> exploring_;
    mutable std::uint64_t exploring_started_ = 0;
    std::uint64_t learned_ = 0;
    std::atomic<std::uint32_t> enabled_;  // bit d: device d takes work
};

}  // namespace tandem::detail
