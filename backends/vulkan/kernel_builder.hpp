// Generated kernels by region signature, and their pipelines. A pipeline is built on the
// recording thread when first needed, or ahead of time on the builder's own thread (prepare()):
// a region that placement sent to the CPU because its pipeline was cold finds it ready the next
// time. Placement asks how long a region would wait for its pipeline (wait_s()) and prices it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/vulkan/arguments.hpp"
#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "graph/region.hpp"

namespace tandem::detail::vk {

/// The identity of a region's generated kernel: its structure, not its extents or constants (a
/// region seen before skips code generation and the pipeline cache's hashing of the source).
std::string signature(const Region& r, const std::vector<InputAccess>& access, const std::vector<InputWalk>& walks,
                      std::uint64_t reduce_variant);

class KernelBuilder {
public:
    /// A kernel and its pipeline (and a reduce region's combine pass, made when first needed).
    struct Entry {
        Kernel kernel;
        std::shared_future<const ComputePipeline*> pipeline;  ///< ready once built (or failed)
        std::once_flag combine_once;
        std::atomic<const ComputePipeline*> combine{nullptr};  ///< set once, by combine()
    };

    /// `expected_build_s`: what a compile is taken to cost until one has been timed
    /// (`expected_load_s` likewise for a pipeline made from SPIR-V on disk).
    /// `expected_fixed_s` likewise for a fixed kernel.
    KernelBuilder(PipelineCache& pipelines, const CodegenOptions& codegen, double expected_build_s,
                  double expected_load_s, double expected_fixed_s = 0.2);
    /// stop().
    ~KernelBuilder();
    /// Stops the threads after the builds in progress; builds not begun are dropped (a recording
    /// that needs one builds it). prepare() does nothing after it.
    void stop();
    /// Waits until every build queued is done, or `budget` has passed; true if all are.
    bool finish(std::chrono::milliseconds budget);
    /// Tests only (Config::test_fault = slow_compile): every build takes `extra` longer.
    void slow_down_builds(std::chrono::milliseconds extra) { extra_build_time_ = extra; }
    KernelBuilder(const KernelBuilder&) = delete;
    KernelBuilder& operator=(const KernelBuilder&) = delete;

    struct Slot;
    /// A region's generated kernel as the builder keeps it: how the region reads its inputs, the
    /// kernel's signature and its slot (found, or made with the kernel generated). Formed once
    /// per region (the backend keeps it in Region::memo): placement's question whether it is
    /// built and the recording then share it. Throws what code generation throws.
    struct Form {
        std::vector<InputAccess> access;
        std::vector<InputWalk> walks;
        std::uint64_t reduce_variant = 0;
        std::string signature;
        Slot* slot = nullptr;  ///< the builder's, never freed before it
    };
    std::shared_ptr<const Form> form(const Region& r, std::vector<InputAccess> access, std::vector<InputWalk> walks,
                                     std::uint64_t reduce_variant);

    /// The kernel of region `r` (of form `f`), with its pipeline built: now, on this thread, or by
    /// waiting for a build already under way. Throws ShaderCompileError or DeviceError; the entry
    /// stays (a later get() throws the same).
    Entry& get(const Form& f);
    /// get() when it would not wait: the entry once its pipeline (and a split reduction's
    /// combine pass) is built, else null, having waited for nothing (a build that failed counts
    /// as built: get() throws its error at once).
    Entry* get_if_built(const Region& r, const Form& f);
    /// The combine pass of a split reduction, built on first use (a failed build throws, and a
    /// later call tries again).
    const ComputePipeline& combine(Entry& e);
    /// Seconds `r` would wait for its pipeline (and a split reduction's second pass) if recorded
    /// now: 0 once built; what is left of a build under way (at least as long as it has run); else the expected compile time, or the expected load time when the
    /// pipeline cache has its SPIR-V (a kernel never seen was generated for its form, once).
    double wait_s(const Region& r, const Form& f);
    /// Starts building `r`'s pipeline on the builder's threads (nothing if it is built or under
    /// way), and the second pass of a reduction that `r`'s size splits (a kernel of its own).
    void prepare(const Region& r, const Form& f);
    /// The same, the form made on the spot (tests).
    Entry& get(const Region& r, const std::vector<InputAccess>& access, const std::vector<InputWalk>& walks,
               std::uint64_t reduce_variant) {
        return get(*form(r, access, walks, reduce_variant));
    }
    double wait_s(const Region& r, const std::vector<InputAccess>& access, const std::vector<InputWalk>& walks,
                  std::uint64_t reduce_variant) {
        return wait_s(r, *form(r, access, walks, reduce_variant));
    }
    void prepare(const Region& r, const std::vector<InputAccess>& access, const std::vector<InputWalk>& walks,
                 std::uint64_t reduce_variant) {
        prepare(r, *form(r, access, walks, reduce_variant));
    }

    // ---- Fixed kernels (the GEMM's variants): not generated from a region; `key` names one and
    // `build` makes its pipelines (through the pipeline cache, which a recording that needs the
    // same kernel meanwhile waits on rather than compiling it again).
    /// Seconds a recording would wait for the fixed kernel `key` that is not built yet: what is
    /// left of its build under way, else the expected build of a fixed kernel.
    double fixed_wait_s(const std::string& key) const;
    /// Starts `build` on the builder's thread (nothing if `key` was prepared before).
    void prepare_fixed(const std::string& key, std::function<void()> build);

    /// Builds started ahead of time.
    std::uint64_t prepared() const noexcept { return prepared_.load(std::memory_order_relaxed); }
    /// Forms made (form()): a region's inputs' reads and signature worked out.
    std::uint64_t forms() const noexcept { return forms_.load(std::memory_order_relaxed); }
    /// Running mean of the seconds a compile took (code generation excluded).
    double expected_build_s() const;

    struct Slot {
        Entry entry;
        std::promise<const ComputePipeline*> promise;
        std::chrono::steady_clock::time_point started{};  ///< when its build began (under the lock)
        bool started_set = false;
        bool cached = false;  ///< the pipeline cache had it when the slot was made (a load, not a compile)
        bool combine_cached = false;  ///< likewise a split reduction's second pass
        std::function<void()> fixed;  ///< a fixed kernel's build (no generated kernel)
    };

private:
    double expected_s(const Slot& s) const { return s.cached ? expected_load_s_ : expected_build_s_; }
    /// What is left of s's build under way, begun at s.started.
    static double remaining_s(const Slot& s, double expected);
    /// The slot for `sig`, made (with its kernel generated) if new; `fresh` says so.
    Slot& slot(const std::string& sig, const Region& r, const std::vector<InputAccess>& access,
               const std::vector<InputWalk>& walks, bool& fresh);
    void build(Slot& s);  ///< on the calling thread; sets the promise
    /// What waiting for the task `key` (prepare_fixed's) would cost, `expected` if not queued.
    /// Under mutex_.
    double task_wait_s(const std::string& key, double expected) const;
    void run();           ///< the builder thread

    PipelineCache& pipelines_;
    CodegenOptions codegen_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::unordered_map<std::string, std::unique_ptr<Slot>> slots_;
    std::deque<Slot*> queue_;
    bool stopping_ = false;
    double expected_build_s_, expected_load_s_;  ///< under mutex_
    double expected_fixed_s_;                     ///< under mutex_: a fixed kernel's build
    std::chrono::milliseconds extra_build_time_{0};  ///< set before any build (tests)
    std::atomic<std::uint64_t> prepared_{0};
    std::atomic<std::uint64_t> forms_{0};
    std::vector<std::thread> threads_;  ///< started as builds are queued, up to max_threads_
    std::size_t max_threads_;           ///< a quarter of the host's cores, 1 to 4
    std::size_t idle_threads_ = 0;      ///< waiting for a build (under mutex_)
    std::size_t building_ = 0;          ///< builds under way (under mutex_)
    std::condition_variable idle_cv_;   ///< a build finished (finish() waits on it)
    void start_thread_locked();         ///< another thread if every one is busy and builds wait
    /// A build not begun: its expected time, times the rounds of builds queued before it.
    double queued_s(const Slot& s, double expected) const;
};

}  // namespace tandem::detail::vk
