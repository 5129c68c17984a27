// Runtime: owns the task graph, the CPU executor (and, later, devices), the memory pools and
// the metrics. Arrays belong to the runtime that created them. default_runtime() is the one
// the free creation functions use.
#pragma once

#include "tandem/export.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tandem/array.hpp"
#include "tandem/config.hpp"

namespace tandem {

namespace detail {
class RuntimeImpl;
}

/// What hwloc sees of the machine, and what the process may use of it.
struct CpuTopology {
    std::string model;                ///< CPU model name, if hwloc reports one
    int packages = 0;
    int numa_nodes = 0;
    int cores = 0;                    ///< physical cores in the machine
    int pus = 0;                      ///< hardware threads in the machine
    int allowed_cores = 0;            ///< cores this process may run on
    int allowed_pus = 0;              ///< hardware threads this process may run on
    std::uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  ///< per cache instance
    std::uint64_t memory_bytes = 0;   ///< physical memory
};

struct RuntimeInfo {
    std::string version;
    std::string build;                ///< compiler and build type
    std::string cpu_isa;              ///< vector instruction set the CPU kernels dispatched to
    int cpu_threads = 0;              ///< CPU executor threads
    std::int64_t block_elements = 0;
    bool fusion = true;
    CpuTopology topology;
    /// Every device seen, one line each (name, vendor, type, driver, API, memory, subgroup,
    /// shared memory, float64, queues); the one in use is marked "[in use]".
    std::vector<std::string> devices;
    std::string devices_note;         ///< why no device is in use, when none is
    std::string pipeline_cache;       ///< its directory and counters, when a device is in use
    std::string placement;            ///< the placement mode and where the cost model's rates come from
};

/// Counters since the runtime started.
struct Metrics {
    std::uint64_t plans = 0;              ///< gathers that needed new work
    std::uint64_t plans_fused_from_cache = 0;  ///< of which fusion's result was remembered (Config::plan_cache)
    std::uint64_t regions_executed = 0;   ///< fused regions run
    std::uint64_t regions_failed = 0;     ///< regions whose computation threw
    std::uint64_t ops_executed = 0;       ///< graph ops inside the regions run
    std::uint64_t elements_written = 0;   ///< elements of region outputs
    std::uint64_t host_bytes_allocated = 0;
    std::uint64_t host_pool_hits = 0;     ///< allocations served by reused buffers
    std::uint64_t device_regions = 0;     ///< regions recorded on a device (all of them)
    std::vector<std::uint64_t> device_regions_each;  ///< per device, in ordinal order
    std::uint64_t device_fallbacks = 0;   ///< device regions that ran on the CPU instead
    std::uint64_t device_dispatches = 0;  ///< kernels dispatched
    std::uint64_t device_batches = 0;     ///< command buffers submitted
    std::uint64_t upload_bytes = 0, download_bytes = 0;
    /// GPU time of the kernels timed (timestamp queries): all of them with Config::time_kernels
    /// or TANDEM_LOG=gpu, else those of the regions the cost model samples (kernel_timed_regions;
    /// kernel_ms / kernel_timed_regions is then a region's mean).
    double kernel_ms = 0;
    std::uint64_t kernel_timed_regions = 0;  ///< device regions whose kernels kernel_ms counts
    double upload_ms = 0, download_ms = 0; ///< GPU time of host<->device copies (timestamp queries)
    std::uint64_t copy_queue_submits = 0; ///< large copies sent to the copy (transfer) queue
    std::uint64_t pipeline_hits = 0, pipeline_disk_hits = 0, pipeline_misses = 0;
    double pipeline_compile_ms = 0;
    /// Kernels built ahead of time, in the background: placement ran their region on the CPU
    /// because the device's pipeline was not built yet (it would have won otherwise).
    std::uint64_t pipelines_built_ahead = 0;
    /// Generated kernels' identities worked out (how each input is read, the signature that
    /// names the kernel): once per region and device, and not again for a program built again
    /// while the fusion cache holds its structure (placement and the recording share it).
    std::uint64_t kernels_formed = 0;
    std::uint64_t validation_messages = 0; ///< Vulkan validation messages (with vulkan_validation)
    // The device's memory (Config::device_memory_limit).
    std::uint64_t device_memory_budget = 0;     ///< bytes of arrays a device may hold (the largest of the devices'; 0: no device)
    std::uint64_t device_peak_resident_bytes = 0;
    std::uint64_t evictions = 0;                ///< device copies dropped to keep within the budget
    std::uint64_t write_backs = 0;              ///< of which were downloaded first (the only copy)
    std::uint64_t evicted_bytes = 0, written_back_bytes = 0;
    std::uint64_t memory_retries = 0;           ///< regions retried after the device ran out of memory
    std::uint64_t budget_waits = 0;             ///< regions that waited for work in flight to free budget
    std::uint64_t run_ahead_waits = 0;          ///< device regions that waited for the device to catch up (recorded far ahead)
    std::uint64_t runs_learned = 0;             ///< region runs the cost model learned from (Config::placement_learning)
    std::uint64_t explorations = 0;             ///< regions run on the side the model predicted slower, to learn its time there
    std::uint64_t values_recomputed = 0;        ///< values lost with a device and computed again from their recipes
    std::uint64_t lineage_checkpoints = 0;      ///< device results brought back to bound the recipes kept
    std::uint64_t streamed_regions = 0;         ///< regions larger than the device's budget run there in pieces
    std::uint64_t streamed_pieces = 0;          ///< their pieces
    std::uint64_t split_regions = 0;            ///< regions split over several devices at once (data parallelism)
    std::uint64_t split_pieces = 0;             ///< their pieces (one per device, and a reduction's tail)
    std::uint64_t split_values_assembled = 0;   ///< split results brought together on the host for a reader
    /// Device regions recorded by their device's submitting thread instead of the thread that
    /// launched them, whose recording would have waited (a kernel not built yet, an input to
    /// bring from another device): a gather, a completion or a CPU worker never waits for those.
    std::uint64_t recordings_handed_off = 0;
};

/// One region run, for Runtime::region_records() (Config::region_records).
struct RegionRecord {
    std::string kind;         ///< "elementwise", "reduce", "matmul", ...
    std::string shape;        ///< its iteration domain ("1000x1")
    std::string ops;          ///< what it computes ("exp, *, sum")
    std::string executor;     ///< "cpu", or the device's backend ("vulkan")
    std::string reason;       ///< why it ran there
    double predicted_cpu_ms = -1, predicted_device_ms = -1;  ///< predicted finish on each, from placement (-1: not considered)
    double predicted_ms = 0;  ///< predicted compute time on the executor that ran it
    double compute_ms = -1;   ///< measured compute time (a CPU run; a device region's kernels; -1: unknown)
    double wall_ms = 0;       ///< from its start (run on the CPU, recording on a device) to its completion
    std::uint64_t bytes_read = 0, bytes_written = 0;
    bool failed = false;      ///< its computation threw (the error is in its values' futures)
    bool fell_back = false;   ///< placed on the device, run on the CPU instead
};

class TANDEM_API Runtime {
public:
    Runtime();
    explicit Runtime(Config config);
    /// Waits for the work in flight. Arrays that outlive their runtime must not be used.
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // ---- creation ---------------------------------------------------------------------
    /// Copies `data` (column-major, numel == shape.numel(), else ShapeError).
    Array array(std::span<const double> data, const Shape& shape);
    Array array(std::span<const float> data, const Shape& shape);
    /// Logical array from bytes; any nonzero byte is true.
    Array logical_array(std::span<const std::uint8_t> data, const Shape& shape);
    /// A column vector (n x 1) copied from `data`.
    Array array(std::span<const double> data) { return array(data, Shape{static_cast<std::int64_t>(data.size()), 1}); }
    /// An array of `h`'s elements, shared with it (neither is ever written), not copied: a gathered
    /// value back in a graph as plain data (ValueError for a HostArray without elements, as
    /// evaluate() gives).
    Array array(const HostArray& h);
    /// Takes ownership of `data` without copying it.
    Array adopt(std::vector<double>&& data, const Shape& shape);
    Array adopt(std::vector<float>&& data, const Shape& shape);
    Array scalar(double value, DType dtype = DType::f64);
    Array zeros(const Shape& shape, DType dtype = DType::f64);
    Array ones(const Shape& shape, DType dtype = DType::f64);
    Array fill(double value, const Shape& shape, DType dtype = DType::f64);
    /// MATLAB linspace(a, b, n): 1 x n, first exactly a, last exactly b, a + k * (b - a) / (n - 1)
    /// between (where b - a overflows, MATLAB's a + k * b / (n - 1) - k * a / (n - 1)).
    Array linspace(double a, double b, std::int64_t n = 100);
    /// MATLAB a:b and a:step:b (1 x n row vectors; empty when the range is): a + k * step, never
    /// past b (0:0.1:0.3 ends on 0.3, as in MATLAB and Octave).
    Array colon(double a, double b) { return colon(a, 1.0, b); }
    Array colon(double a, double step, double b);

    // ---- evaluation -------------------------------------------------------------------
    /// Gathers several values in one plan: shared subexpressions are computed once and values
    /// of one shape come out of one fused pass (a multi-output region).
    Future<std::vector<HostArray>> gather(const std::vector<Array>& values);
    /// Computes the values and leaves them where they were computed (on a device, for large
    /// ones): the future is ready when they are. For timing device work, or to compute ahead of
    /// a later gather; nothing is copied to the host.
    Future<std::monostate> evaluate(const std::vector<Array>& values);
    /// Blocks until no work is in flight, then frees, on this thread, the graphs of finished
    /// work that nothing holds (otherwise the next expression built does, or the runtime soon),
    /// but for their lineage on the devices (recipes no expression can find, and inputs that only
    /// they read), which the next gather or evaluate frees while its work runs, or the runtime
    /// soon after.
    void wait_idle();

    // ---- introspection ----------------------------------------------------------------
    RuntimeInfo info() const;
    Metrics metrics() const;
    /// The last Config::region_records regions run, oldest first (empty when that is 0).
    std::vector<RegionRecord> region_records() const;
    const Config& config() const;

    detail::RuntimeImpl& impl() noexcept { return *impl_; }
    /// The runtime's parts, held weakly (what outlives the runtime, as a Buffer may, asks it first).
    std::weak_ptr<detail::RuntimeImpl> weak_impl() const noexcept { return impl_; }

private:
    std::shared_ptr<detail::RuntimeImpl> impl_;
};

/// The process-wide runtime, made on first use from Config::from_environment().
TANDEM_API Runtime& default_runtime();

/// Creation through the default runtime.
TANDEM_API Array zeros(const Shape& shape, DType dtype = DType::f64);
TANDEM_API Array ones(const Shape& shape, DType dtype = DType::f64);
TANDEM_API Array fill(double value, const Shape& shape, DType dtype = DType::f64);
TANDEM_API Array linspace(double a, double b, std::int64_t n = 100);
TANDEM_API Array colon(double a, double b);
TANDEM_API Array colon(double a, double step, double b);

/// RuntimeInfo as readable text, and as a JSON document.
TANDEM_API std::string to_text(const RuntimeInfo& info);
TANDEM_API std::string to_json(const RuntimeInfo& info);

}  // namespace tandem
