// The Vulkan backend: fused regions as generated compute kernels, recorded into batches (one
// command buffer, precise buffer barriers between dependent dispatches) and submitted without
// waiting; a timeline semaphore per batch, watched by one completion thread, finishes them.
// Copies: small ones ride in the compute batch (no extra submission: the latency of small
// gathers); large ones go to the copy queue (the dedicated transfer queue when the device has
// one) in submissions of their own, ordered by timeline semaphores, so uploads overlap the
// compute before them and readbacks the compute after them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/backend.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/kernel_builder.hpp"
#include "backends/vulkan/pipeline_cache.hpp"

namespace tandem::detail::vk {

class Gemm;
struct UserKernel;
struct GemmArgs;

/// A batch goes to an idle device once it holds this many dispatches (the host keeps recording).
inline constexpr std::uint32_t kEarlySubmitDispatches = 4;
/// What building a generated kernel's pipeline is taken to cost before one has been timed on this
/// device (glslang + the driver: 20-60 ms on lavapipe, 50-200 ms on the H100's driver).
inline constexpr double kExpectedBuildSeconds = 0.05;
/// Likewise a pipeline made from SPIR-V in the on-disk cache (no compile).
inline constexpr double kExpectedLoadSeconds = 0.002;
/// How long a runtime going away waits for the kernels it began building ahead of time: what a
/// short program saved by not waiting for them at first, given back at most once (their SPIR-V
/// is on disk for the next process), and bounded.
inline constexpr std::chrono::milliseconds kExitBuildBudget{2000};

struct VulkanOptions {
    ContextOptions context;
    std::string pipeline_cache_dir;  ///< "" = memory only
    std::string test_fault;          ///< Config::test_fault (tests only)
    HostPool* pool = nullptr;        ///< where downloads land
    std::uint32_t reduction_workgroup = 0;  ///< 0: the device's default (Config::reduction_workgroup)
    std::uint64_t reduction_threads = 0;    ///< 0: kStridedThreads (Config::reduction_threads)
    bool subgroups = true;                  ///< Config::vulkan_subgroups
    bool exact_f32_subnormals = true;       ///< Config::f32_subnormals == "exact"
    bool loops = true;                      ///< Config::vulkan_loops
    bool log_gpu = false;                   ///< TANDEM_LOG=gpu: each timed span's GPU time to stderr
    bool time_kernels = false;              ///< Config::time_kernels: every kernel timed, not only those the model samples
};

struct DeviceStats {
    std::uint64_t dispatches = 0, batches = 0;
    std::uint64_t upload_bytes = 0, download_bytes = 0;
    std::uint64_t copy_queue_submits = 0;  ///< uploads and readbacks sent to the copy queue
    double kernel_ms = 0;                  ///< GPU time of the kernels timed, from timestamp queries
    std::uint64_t kernel_timed_regions = 0;  ///< regions whose kernels kernel_ms counts
    double upload_ms = 0, download_ms = 0; ///< GPU time of the copies (0 where the queue has no timestamps)
};

class VulkanBackend final : public Backend {
public:
    /// Throws DeviceError (or ConfigError for a malformed device request) saying why.
    static std::unique_ptr<VulkanBackend> create(const VulkanOptions& options);
    ~VulkanBackend() override;

    std::string_view name() const noexcept override { return "vulkan"; }
    bool on_host() const noexcept override { return false; }
    DeviceClass device_class() const noexcept override;
    std::string identity() const override;
    void submit(Submission s) override;
    void flush() override;
    void download(Value& v) override;
    bool lost() const noexcept override { return lost_.load(); }
    std::shared_ptr<DeviceCopy> window(const Value& v, std::size_t offset, std::size_t bytes) const override;
    std::uint64_t memory_budget() const override;
    std::uint64_t memory_bytes() const override { return context_->device_heap_bytes(); }
    void add_metrics(Metrics& m) const override;
    void set_activity_sink(ActivitySink sink) override;
    double pipeline_wait_s(const Region& r) override;
    void prepare(const Region& r) override;
    /// Finishes the builds begun ahead of time, within kExitBuildBudget (their SPIR-V goes to
    /// the disk cache: the next process starts warm), then stops the builder.
    void quiesce() override;

    const Context& context() const noexcept { return *context_; }
    DeviceStats stats() const;
    PipelineCacheStats pipeline_stats() const { return pipelines_->stats(); }
    int system_index() const noexcept override;
    std::string kernel_cache_text() const override;

private:
    enum class Span : std::uint8_t { kernel, upload, download };
    struct Batch;
    struct CopyJob;
    struct Copy;
    VulkanBackend() = default;
    /// `r`'s generated kernel on this device: how it reads its inputs, its variant and its slot
    /// in the builder. Formed once per region (kept in r.memo): placement's questions and the
    /// recording share it. Throws what code generation throws.
    std::shared_ptr<const KernelBuilder::Form> kernel_form(const Region& r) const;
    std::shared_ptr<DeviceArray> device_copy(Value& v, Batch& b);
    void submit_matmul(Submission s);
    /// A matmul region's product without its addresses (record_ops.cpp).
    static GemmArgs matmul_args(const Region& r);
    /// The GEMM variant `r` needs, as a KernelBuilder fixed key ("" when not priced), and whether
    /// it is built.
    std::string matmul_kernel_key(const Region& r, bool& built) const;
    void prepare_matmul(const Region& r);  // its GEMM variant built ahead of time
    /// The fixed kernels a region of a fixed kind records (none for generated kernels and
    /// GEMMs), and the key naming them together for the KernelBuilder ("" for none).
    static std::vector<Kernel> fixed_kernels(const Region& r);
    static std::string fixed_key(const Region& r);
    double fixed_wait_s(const Region& r);  // pipeline_wait_s of such a region
    void submit_transpose(Submission s);
    void submit_scan(Submission s);
    void submit_cat(Submission s);
    void submit_remap(Submission s);
    void submit_gather(Submission s);   // record_index.cpp
    void submit_scatter(Submission s);
    void submit_find(Submission s);
    /// Fills `fault` (host-visible, two words) with "no fault" and returns the completion check
    /// that turns what the kernels recorded there into region r's IndexError.
    std::function<void()> subscript_check(const Region& r, std::shared_ptr<DeviceArray> fault, std::shared_ptr<Value> subscripts);
    void submit_permute(Submission s);  // permute.cpp
    void submit_kernel(Submission s);  // a user kernel's command group (user_kernel.cpp)
    /// A kernel region's shader (formed once per structure: kept in its memo).
    std::shared_ptr<const UserKernel> user_kernel_of(const Region& r) const;
    /// A region with one input and one output run by one fixed kernel: its input uploaded (or
    /// reused), gx x gy x gz workgroups (none if any is 0) with the push constants
    /// push(src, dst, pass), dispatched `passes` times in turn (a barrier between), `scratch`
    /// kept until the batch is done.
    void record_one_kernel(Submission s, const ComputePipeline& pipeline, std::uint32_t gx, std::uint32_t gy,
                           const std::function<std::vector<std::byte>(std::uint64_t, std::uint64_t, std::uint32_t)>& push,
                           std::uint32_t gz = 1, std::uint32_t passes = 1, std::shared_ptr<DeviceArray> scratch = nullptr);
    /// The end of recording a region with several outputs: its completion (s.done, with `args`
    /// kept until then) joins the batch with the readbacks of the outputs a host sink wants
    /// (record_mutex_ held).
    void finish_outputs(Batch& b, Submission& s, std::shared_ptr<DeviceArray> args,
                        const std::vector<std::shared_ptr<DeviceArray>>& outs);
    /// `check` (optional) runs when the batch completes and throws to fail the region.
    void finish_item(Batch& b, Submission s, const std::shared_ptr<DeviceArray>& out,
                     std::function<void()> check = {});  // record_mutex_ held
    /// The open batch (a new one if none), set to time `s`'s kernels or not (time_spans).
    Batch& open_batch(const Submission& s);
    std::unique_ptr<CopyJob> open_copy(Span kind);
    void submit_copy(CopyJob& job, VkSemaphore wait, std::uint64_t wait_value, VkSemaphore signal);
    void retire_copy(std::unique_ptr<CopyJob> job);
    void recycle_copy_locked(CopyJob& job);
    void submit_locked();
    void complete_loop();
    void add_time(Span kind, double ms);
    void submit_if_due_locked();  // record_mutex_ held: submits the open batch when full or the device idles
    static const char* span_name(Span kind) noexcept;
    void log_spans(const Batch& b, const std::vector<std::uint64_t>& ts) const;  // the completion thread's
    mutable std::uint64_t log_base_ = 0;  // the first span's start, for TANDEM_LOG=gpu (completion thread only)

    std::shared_ptr<Context> context_;  // shared with every device copy, which may outlive us
    std::shared_ptr<DeviceHeap> device_heap_, upload_heap_, readback_heap_;
    std::unique_ptr<PipelineCache> pipelines_;
    std::unique_ptr<Gemm> gemm_;
    VulkanOptions options_;
    CodegenOptions codegen_;

    std::mutex record_mutex_;   // recording, the open batch, the command pools, the timeline values
    std::mutex queue_mutex_;    // vkQueueSubmit (the copy queue may be the compute queue)
    CommandPool pool_, copy_pool_;
    Semaphore timeline_, upload_timeline_, download_timeline_;
    std::uint64_t timeline_value_ = 0, upload_value_ = 0, download_value_ = 0;
    std::unique_ptr<Batch> open_;
    std::vector<VkCommandBuffer> free_cmds_, free_copy_cmds_;
    std::vector<QueryPool> free_queries_, free_copy_queries_;
    bool copy_timestamps_ = false;
    std::chrono::microseconds completion_spin_{0};  // polling before a blocking wait

    /// User kernels' shaders by their call's structure (with the body, against collisions).
    mutable std::mutex user_kernels_mutex_;
    mutable std::unordered_map<std::uint64_t, std::pair<std::string, std::shared_ptr<const UserKernel>>> user_kernels_;
    static constexpr std::size_t kKeptUserKernels = 256;
    std::mutex fixed_ready_mutex_;
    std::unordered_set<std::string> fixed_ready_;  // fixed_kernels() keys found built: no more lookups
    // Generated kernels by signature, built when first recorded or ahead of time (prepare).
    std::unique_ptr<KernelBuilder> kernels_;

    std::mutex done_mutex_;
    std::condition_variable done_cv_;
    std::deque<std::unique_ptr<Batch>> in_flight_;
    std::atomic<int> unfinished_batches_{0};  // submitted, not yet finished on the device
    std::uint32_t early_dispatches_ = kEarlySubmitDispatches;  // record_mutex_: submit_if_due_locked's early size
    std::vector<std::unique_ptr<Batch>> orphans_;  // never submitted (record_mutex_): kept to the end
    bool stopping_ = false;
    std::atomic<bool> lost_{false};
    std::thread completer_;

    mutable std::mutex stats_mutex_;
    DeviceStats stats_;
    std::atomic<bool> fault_fired_{false};
    ActivitySink activity_;  // set once before the first submission
    std::atomic<int> fault_countdown_{0};
    int lost_after_batches_ = 0;  // test_fault "device_lost_later[:N]": N (4 without one), else 0  // submissions (oom_later) or batches completed (device_lost_later) seen
};

}  // namespace tandem::detail::vk
