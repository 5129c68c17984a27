// The scheduler: turns a gather into a plan (the pending part of the graph, fused into regions),
// places each region on a backend, and runs regions as their inputs become ready, without
// blocking the caller. Many threads may gather at once; a value is computed once however many
// ask for it.
//
// Regions on the CPU run on the work queue once their inputs are computed. Regions on a device
// are recorded into the device's queue as soon as their device inputs are recorded (queue order
// and barriers do the rest) and complete asynchronously; a device region that fails (lost device,
// or a data-dependent error in a region with several outputs) runs again on the CPU.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_set>
#include <unordered_map>
#include <vector>

#include "graph/fusion.hpp"
#include "graph/fusion_cache.hpp"
#include "scheduler/node_state.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/submit_thread.hpp"
#include "scheduler/trace.hpp"
#include "scheduler/work_queue.hpp"
#include "tandem/future.hpp"
#include "tandem/host_array.hpp"
#include "tandem/runtime.hpp"

namespace tandem::detail {

/// Things to do once the scheduler's lock is released (start jobs, resolve futures).
using Deferred = std::vector<std::function<void()>>;

/// The progress of one region. Guarded by the scheduler lock.
struct Completion {
    Backend* backend = nullptr;
    std::uint32_t parts = 0;  ///< split over devices (bit d: a piece on device d), results left there
    bool recorded = false;  ///< in the device's queue: later work on that device may read it
    std::vector<std::function<void(Deferred&)>> on_recorded;
    std::vector<std::function<void(Deferred&)>> on_done;
};

struct SchedulerOptions {
    int threads = 1;
    bool fuse = true;
    bool log_graph = false;
    bool log_exec = false;
    bool log_placement = false;
    std::string trace_file;  ///< TANDEM_TRACE: "" = no trace
    std::size_t region_records = 0;  ///< how many RegionRecords to keep
    PlacementMode placement = PlacementMode::automatic;
    std::int64_t min_device_elements = 0;  ///< smaller regions stay on the CPU
    SplitMode split = SplitMode::automatic;  ///< regions split over several devices (Config::split)
    FusionCache::Mode fusion_cache = FusionCache::Mode::on;  ///< Config::plan_cache
    MachineProfile profile;                ///< the cost model's rates
    bool learn = true;                     ///< refine the model with observed times (automatic placement)
    /// Bytes of arrays each device may hold, by ordinal (0 or missing: no limit).
    std::vector<std::uint64_t> device_memory_budgets;
    HostPool* pool = nullptr;                ///< host memory for streamed regions' results (null: the heap)
    /// Tests only (Config::test_fault = slow_plan): each plan pauses this long once placed.
    std::chrono::milliseconds plan_pause{0};
};

class Scheduler {
public:
    /// `devices`: in ordinal order (Backend::ordinal()), maybe none. `nodes`: where the graph a
    /// finished region no longer needs is buried.
    Scheduler(NodeTable& nodes, Backend& cpu, std::vector<Backend*> devices, const SchedulerOptions& options);
    /// Waits for the work in flight.
    ~Scheduler();

    /// The targets' values. `to_host`: with host copies (HostArrays with elements); otherwise
    /// the values stay where they are computed and the HostArrays are empty placeholders.
    Future<std::vector<HostArray>> gather(const std::vector<std::shared_ptr<Node>>& targets, bool to_host);
    /// Starts computing a deep pending chain while the program builds on it (Config::start_depth),
    /// left where it is computed; nothing waits for it (an error stays in the values, for the
    /// gathers that read them). A value of the chain that something outside it still holds (a
    /// variable of the program, a node built beside the chain) would have to be a result too, or
    /// what is built on it later would compute the chain up to it again: unless `held_too`, such
    /// a chain is not started (false; a stencil's step cut at an inner value, whose input the
    /// rest of the step reads), else those values are its results as well.
    bool start(const std::shared_ptr<Node>& head, bool held_too);
    /// Computes every group's nodes in one plan and leaves them where they are computed; a future
    /// per group, ready when its nodes are (with the first error among them): the command groups
    /// a queue sends at once (tandem/kernel.hpp), each failing on its own. It lets go of the
    /// groups before recording them (a group's future holds its nodes until it is done).
    std::vector<Future<std::monostate>> evaluate_groups(std::vector<std::vector<std::shared_ptr<Node>>> groups);
    void wait_idle();
    /// Runs f under the scheduler's lock (reading Node::inputs or Node::eval safely).
    template <class F>
    auto locked(F f) {
        std::lock_guard lock(mutex_);
        return f();
    }
    void add_metrics(Metrics& m) const;
    std::vector<RegionRecord> region_records() const;
    /// Operand k of `n` while n is not computed yet (its graph is still there), else null: what a
    /// builder may look through (matmul reads a pending transpose's operand in place).
    std::shared_ptr<Node> pending_operand(const Node& n, std::size_t k) const;
    /// What the model learned (with what it started from), and from how many runs this session.
    std::pair<MachineProfile, std::uint64_t> learned() const;
    /// The calibration file the model's rates came from ("" for the built-in defaults).
    const std::string& calibration_file() const noexcept { return placement_.profile().file; }
    /// "auto: earliest predicted finish (cost model: built-in defaults for ...)", for `tandem info`.
    std::string placement_text() const;

private:
    struct Job {
        Region region;
        PlacementDecision placement;
        double charged_s = 0;       ///< predicted compute seconds counted in its executor's outstanding work
        int charged_link = -1;      ///< the device whose link charged_link_s is counted on
        double charged_link_s = 0;  ///< predicted transfer seconds counted in the link's
        /// When it started running (CPU) or was recorded (device), for TANDEM_LOG=placement.
        std::chrono::steady_clock::time_point started{};
        std::shared_ptr<Completion> completion;
        std::size_t waiting = 0;              // inputs not yet ready for this placement
        std::vector<bool> wanted_on_host;     // outputs a host sink wants back
        std::vector<std::shared_ptr<Value>> outputs;
        /// Its device inputs and outputs, pinned in the residency table while it is recorded
        /// and in flight there (empty otherwise).
        std::vector<std::shared_ptr<Value>> pinned;
        int memory_retries = 0;  // times the device ran out of memory for it
        /// Seconds its compute took (a CPU run; a device region's kernels, from timestamp
        /// queries), 0 when unknown: what the model learns from.
        double observed_s = 0;
        bool fell_back = false;  // placed on the device, requeued on the CPU
        /// Why its device refused or failed it: the error of a user kernel with no C++ body,
        /// which the CPU cannot run instead.
        std::exception_ptr device_error;
        std::uint64_t written_bytes = 0;  // its outputs' bytes, counted in device_written_ while recorded
    };
    using JobPtr = std::shared_ptr<Job>;

    /// What a plan does with a pending node that something outside it holds (start()).
    enum class Held { ignored, wanted, refused };
    /// Plans the targets' pending graph (fused into regions, placed) and wires the jobs, then
    /// calls `then()` under the lock; not under it. `to_host`: the targets are wanted on the
    /// host. Values lost with a device are planned again from their recipes. False (nothing
    /// planned, `then` not called) when `held` is refused and the walk found such a node.
    template <class Then>
    bool plan(const std::vector<std::shared_ptr<Node>>& targets, bool to_host, Deferred& after, Then then,
              Held held = Held::ignored);
    /// A plan's nodes, found under the lock: those neither computed nor in flight, in order
    /// (inputs first), marked with `mark` (Node::pass_mark); and the targets among them.
    struct PlanWalk {
        std::uint64_t mark = 0;
        std::vector<Node*> pending;
        std::vector<Node*> wanted;
        std::unordered_set<Node*> wanted_set;
        bool refused = false;  // Held::refused, and a pending node is held outside the plan
        std::chrono::steady_clock::time_point started, walked, fused, placed;  // for TANDEM_LOG=exec
    };
    /// `held`: refused leaves the walk empty, with `refused` set, when there is such a node.
    PlanWalk walk_plan(const std::vector<std::shared_ptr<Node>>& targets, Held held = Held::ignored);  // under the lock
    /// Places the plan's regions (fused from walk.pending), in order, as jobs: not under the lock.
    std::vector<JobPtr> place_regions(const PlanWalk& walk, std::vector<Region> regions, bool to_host);
    /// Installs the plan's jobs (their outputs in flight, their work counted) and wires them;
    /// under the lock.
    void install_plan(const PlanWalk& walk, const std::vector<JobPtr>& jobs,
                      const std::vector<std::shared_ptr<Node>>& targets, Deferred& after);
    /// Placement's fastest device for `r` (under the model's lock).
    Backend* faster_device(const Region& r) const;
    /// gather()'s body: `promise` resolves once the targets are computed. `regathers`: how many
    /// times to plan again when a device is lost while the targets come back from it.
    void gather_into(const std::vector<std::shared_ptr<Node>>& targets, bool to_host,
                     Promise<std::vector<HostArray>> promise, int regathers);
    /// True if every copy of `v` was on devices that are lost (it must be computed again).
    bool lost(const Value& v);
    /// A CPU job found an input lost with its device: plans it again from its recipe and makes
    /// the job wait for it (true), or finds nothing to compute it from (false).
    bool recompute_inputs(const JobPtr& job);
    /// Recipes (under the lock, when a region is planned on a device, while its nodes are in
    /// cache): nodes that compute what a node computes, holding no device data, for the operands
    /// of `region`'s outputs (Node::recipe, which becomes Node::inputs if the output completes
    /// on the device alone). A computed operand with a host copy becomes an input node over it;
    /// one with a device copy only, or planned on a device, its own recipe; the region's interior
    /// is copied. `memo`: per plan.
    /// Recipes made so far in a plan: by position for the plan's nodes (Node::pass_index; a
    /// chain of a thousand nodes copied for a result the user holds cost as much in hash lookups
    /// as in the copies), by address for the rest.
    struct RecipeMemo {
        std::uint64_t mark = 0;
        std::vector<std::shared_ptr<Node>> plan;
        std::unordered_map<const Node*, std::shared_ptr<Node>> others;
        std::size_t made = 0;             ///< recipe nodes made
        std::size_t budget = SIZE_MAX;    ///< recipe_of gives up (null) once `made` passes it
        RecipeMemo(std::uint64_t plan_mark, std::size_t plan_nodes) : mark(plan_mark), plan(plan_nodes) {}
        /// Its recipe, or null when not made yet.
        const std::shared_ptr<Node>* find(const Node* n) const {
            if (n->pass_mark == mark && n->pass_index < plan.size()) return plan[n->pass_index] ? &plan[n->pass_index] : nullptr;
            auto it = others.find(n);
            return it == others.end() ? nullptr : &it->second;
        }
        void put(const Node* n, std::shared_ptr<Node> recipe) {
            if (n->pass_mark == mark && n->pass_index < plan.size()) plan[n->pass_index] = std::move(recipe);
            else others.emplace(n, std::move(recipe));
        }
    };
    /// Node::recipe for the plan's device results that may outlive it (`pending`, `targets`:
    /// the plan's nodes and what it was asked for, marked with `mark`).
    void make_recipes(const std::vector<JobPtr>& jobs, const std::vector<Node*>& pending,
                      const std::vector<std::shared_ptr<Node>>& targets, std::uint64_t mark);
    /// (Past memo.budget: unfinished, holding nulls.)
    std::vector<std::shared_ptr<Node>> recipe_inputs(const Node& n, const Region& region, RecipeMemo& memo);
    std::shared_ptr<Node> recipe_of(Node* n, const Region& region, RecipeMemo& memo);
    /// `n`'s recipe when it needs none of its operands' (null otherwise).
    std::shared_ptr<Node> recipe_leaf(Node& n, const Region& region);
    /// A region is done: the intermediates it was the last reader of (or made, unread) let go of
    /// their values.
    void release_intermediates(const Region& r);  // mutex_ held
    /// Under the lock: `resolve` runs once every node of `nodes` is computed or failed (with the
    /// deferred actions of the completion that finishes the last; into `after` if none is pending).
    void when_done(const std::vector<std::shared_ptr<Node>>& nodes, std::function<void(Deferred&)> resolve, Deferred& after);
    /// Makes `job` wait for its inputs (under the lock); true if it can start now.
    bool wire(const JobPtr& job);
    void launch(const JobPtr& job);
    void run_on_host(const JobPtr& job);
    /// A region larger than its device's budget, in pieces (scheduler/streaming.hpp), on a
    /// worker thread: each piece's windows go up, its results come back into the region's host
    /// outputs (partials: finished on the host); on a device error the CPU runs it.
    void run_streamed(const JobPtr& job);
    /// A region split over several devices (data parallelism, scheduler/split_run.cpp), on a
    /// worker thread: a piece on each, side by side; windows stay on their devices as the parts
    /// of split values, partials come back and finish on the host.
    void run_split(const JobPtr& job);
    void record_on_device(const JobPtr& job);
    /// Records `job` on its device's submitting thread (its recording would wait here).
    void hand_off(const JobPtr& job);
    /// A device region's results, recorded on `recorded_on` (a split region's windows: on every
    /// device, the first named), are published so that readers on the same queues record
    /// behind them; what they wake goes into `after`. Nothing when it completed or moved to the
    /// CPU meanwhile.
    void publish_recorded(const JobPtr& job, const Backend* recorded_on, Deferred& after);
    void record_view(const JobPtr& job);  // a view of a device value, with it
    void finish_view(const JobPtr& job);
    /// "cpu", "vulkan"; with several devices "vulkan:1", and "vulkan:0+1" for a split region.
    std::string executor_name(const PlacementDecision& d) const;
    /// A region finished (or failed): record the outcome in its nodes, wake what waits.
    /// `per_output`: errors of single outputs (a multi-output region whose slices were run).
    /// `from_device`: reported by a device backend's completion (which may call for a rerun).
    void complete(const JobPtr& job, std::exception_ptr error, std::vector<std::exception_ptr> per_output,
                  bool from_device);
    /// Runs deferred actions, then sends what device backends recorded meanwhile.
    void drain(Deferred& after);
    /// Host copies for values that only have device copies (blocking downloads; a split value's
    /// parts come down and are assembled).
    void ensure_host(const std::vector<std::shared_ptr<Value>>& values);
    /// Sends what every device recorded.
    void flush_devices(std::uint32_t mask);  // sends the open batch of each device in `mask` (bit d: device d)
    void requeue_on_host(const JobPtr& job, Deferred& after);
    /// A device job refused before anything was recorded: the CPU runs it, and the log says why
    /// (once per `cause`).
    void run_on_cpu_instead(const JobPtr& job, const std::string& cause, const std::string& message);
    /// The values of `job`'s inputs (under the lock), or the error of the first failed one.
    std::exception_ptr input_values(const Job& job, std::vector<std::shared_ptr<Value>>& values);
    /// True when one of `values` is no longer published: its producer, recorded on a device, was
    /// sent back to the CPU (the device failed) after `job` was launched behind it. `job` is then
    /// wired to wait for it again, and relaunched when it is done.
    bool waits_again(const JobPtr& job, std::vector<std::shared_ptr<Value>>& values);
    /// Prints `message` the first time a region falls back to the CPU for `cause`; after that,
    /// fallbacks for it are counted, not printed (a lost device does not print a line per region).
    void report_fallback(const std::string& cause, const std::string& message);
    /// Drops `device`'s copies make_room chose, writing back those that are the only copy.
    void evict(Backend& device, const std::vector<std::shared_ptr<Value>>& victims);
    void unpin(Job& job);
    /// After the device ran out of memory for `job`: true if it was parked or relaunched to try
    /// again (after evicting all it can, or once work in flight frees memory).
    bool retry_after_oom(const JobPtr& job);

    NodeTable& nodes_;
    Placement placement_;
    SchedulerOptions options_;
    mutable std::mutex mutex_;
    /// Held by the thread making a plan, from its walk to its wiring, and taken before mutex_:
    /// planners take turns, without holding mutex_ while they fuse.
    std::mutex plan_mutex_;
    FusionCache fusion_cache_;  // under plan_mutex_
    std::condition_variable idle_;
    std::size_t in_flight_ = 0;
    /// Threads still working for the scheduler after their job may have been counted out: the
    /// rest of a completion whose region went back to the CPU and finished there meanwhile, a
    /// recording whose batch completed under it. wait_idle() waits for them too, or a runtime
    /// destroyed right after would be freed under them (seen: a device completion releasing
    /// the graph through a destroyed scheduler, after a lost device, hung the Lineage test).
    std::size_t active_ = 0;
    struct ActiveScope;
    std::uint64_t plan_mark_ = 0;  // marks the nodes of the plan being made (under both locks)
    /// Predicted compute seconds of the work placed on each executor and not finished yet
    /// (under the lock). Counted per job and taken back when it completes, so a misprediction
    /// lasts only as long as the work it is about, never accumulates.
    struct Outstanding {
        double cpu = 0;
        std::vector<double> device;  // per device
        std::vector<double> link;    // per device: its link to the host
        /// Adds (sign 1) or takes back (-1) what `job` is charged.
        void add(const Job& job, double sign);
    };
    Outstanding outstanding_;
    /// Charges `job` with its predicted seconds (its executor's, its link's), counted in `on`.
    static void charge(Job& job, double seconds, double link_seconds, Outstanding& on);
    void add_outstanding(const Job& job);  // what it was charged, counted in outstanding_
    void discharge(Job& job);
    /// Guards placement_'s model (its rates' histories, the exploring runs): the planner places
    /// without the scheduler's lock. Taken after mutex_ where both are held.
    mutable std::mutex model_mutex_;
    std::atomic<std::uint64_t> plans_{0}, regions_{0}, device_regions_{0}, fallbacks_{0}, failed_{0}, ops_{0},
        elements_{0};
    std::vector<std::unique_ptr<ResidencyTable>> residency_;  // each device's copies
    std::vector<std::size_t> device_jobs_;  // per device: recorded there, not complete (under the lock)
    /// Per device: bytes the jobs recorded there and not complete write (under the lock). Past
    /// the budget / kRunAhead (within [kMinRunAheadBytes, kMaxRunAheadBytes]) the host records no
    /// further ahead: new device jobs wait for completions.
    std::vector<std::uint64_t> device_written_;
    std::vector<bool> run_ahead_full_;  // per device: reached its run-ahead; records again at three quarters
    static constexpr std::uint64_t kRunAhead = 8;
    static constexpr std::uint64_t kMinRunAheadBytes = std::uint64_t{64} << 20, kMaxRunAheadBytes = std::uint64_t{8} << 30;
    std::atomic<std::uint64_t> run_ahead_waits_{0};  // device jobs that waited for the device to catch up
    std::vector<JobPtr> memory_waiters_;         // out of device memory, relaunched at the next completion
    std::atomic<std::uint64_t> memory_retries_{0}, budget_waits_{0};
    /// Values computed again after their device was lost; results brought back to bound lineage.
    std::atomic<std::uint64_t> recomputed_{0}, checkpoints_{0}, streamed_{0}, pieces_{0};
    std::atomic<std::uint64_t> split_{0}, split_pieces_{0}, assembled_{0};  // data-parallel regions, their pieces, split values assembled
    std::atomic<std::uint64_t> handed_off_{0};  // recordings made by a device's submitting thread
    /// Device regions on a chain of device-only results after which a result also comes back
    /// to the host (a checkpoint): the recipes a long loop keeps stay this deep at most.
    static constexpr std::uint32_t kLineageCheckpoint = 1024;
    /// A device result that outlives its plan (a variable the user keeps) of at most
    /// kHostCopyInsteadOfRecipe bytes whose recipe would copy more than kRecipeCopyLimit of the
    /// plan's nodes comes back to the host with its batch instead: the end of a long chain (a
    /// power iteration's vector) copied the chain, a thousand nodes built on the host before
    /// any of the plan ran, where its download costs the batch microseconds.
    static constexpr std::uint64_t kHostCopyInsteadOfRecipe = 64 << 10;
    static constexpr std::size_t kRecipeCopyLimit = 64;
    static constexpr std::uint64_t kCheckpointBytesPerRegion = 8 << 10;  // a larger result's checkpoints are further apart
    std::array<std::atomic<std::uint64_t>, kMaxDevices> device_regions_each_{};
    std::mutex reported_mutex_;
    std::set<std::string> reported_;  // fallback causes already printed
    std::deque<RegionRecord> records_;  // the latest options_.region_records (under the lock)
    void record(const Job& job, bool failed);  // under the lock
    /// Written once the work in flight is done and the device has let go of it (its copies and
    /// builds are reported from its own threads, until it goes).
    std::shared_ptr<Trace> trace_;
    /// Transfers the devices reported (way, bytes, seconds), learned from under the lock at the next
    /// completion: the devices report from their own threads, which must not take the lock
    /// (and may report after the scheduler is gone: the inbox is shared with their sinks).
    struct LinkInbox {
        struct Sample {
            std::size_t device;  ///< its ordinal
            bool up;
            std::int64_t bytes;
            double seconds;
        };
        std::mutex mutex;
        std::vector<Sample> samples;
    };
    std::shared_ptr<LinkInbox> link_inbox_ = std::make_shared<LinkInbox>();
    void learn_link();  // under the lock
    WorkQueue workers_;  // its threads stop before the rest is destroyed
    /// Per device (by ordinal): records what would block the thread that launched it. Last:
    /// stopped first (nothing is queued once the scheduler is idle).
    std::vector<std::unique_ptr<SubmitThread>> submitters_;
};

}  // namespace tandem::detail
