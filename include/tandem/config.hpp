// Runtime settings, in one typed object, read once. Config::from_environment() reads the
// TANDEM_* variables; an invalid value is a ConfigError naming the variable.
#pragma once

#include "tandem/export.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem {

struct TANDEM_API Config {
    /// Worker threads of the CPU executor; 0 = the cores this process may use (hwloc).
    /// TANDEM_CPU_THREADS.
    int cpu_threads = 0;
    /// Elements per block of the CPU block interpreter. TANDEM_BLOCK_ELEMENTS (a multiple of 16
    /// from 64 to 1048576).
    std::int64_t block_elements = 2048;
    /// Most capable vector instruction set the CPU kernels may use: "auto" (the best the CPU
    /// has), "avx512", "avx2" or "baseline". TANDEM_CPU_ISA.
    std::string cpu_isa = "auto";
    /// Fuse elementwise chains into regions (off: one region per op, for testing and
    /// comparison). TANDEM_FUSION=0|1.
    bool fusion = true;
    /// Bytes of freed host buffers kept for reuse; SIZE_MAX = auto (1/8 of physical memory).
    /// TANDEM_HOST_POOL_MB.
    std::size_t host_pool_bytes = SIZE_MAX;
    /// Where regions may run: "auto" (every GPU of the best kind there is: discrete >
    /// integrated > virtual; a Vulkan driver that runs on the CPU, such as lavapipe, only when
    /// asked for, since the CPU executor is faster), "all" (every GPU), "cpu", "vulkan" (the best
    /// Vulkan device, lavapipe included; failing to open one is an error), "vulkan:<index>" or
    /// "vulkan:<name substring>"; or several of the Vulkan ones separated by commas (up to 8,
    /// "vulkan:0,vulkan:1" or "vulkan:0,1"; one named twice is opened twice, as two logical
    /// devices). Placement spreads work over several devices, and splits a large region over
    /// them. TANDEM_DEVICE.
    std::string device = "auto";
    /// Which executor runs each region when a device is open: "auto" (the cost model: the
    /// earliest predicted finish, counting transfers; scheduler/placement.hpp), "cpu" (all on
    /// the CPU) or "gpu" (every region the device can take). TANDEM_PLACEMENT.
    std::string placement = "auto";
    /// The cost model's rates, measured by `tandem calibrate`: "" = the default place
    /// ($XDG_CONFIG_HOME/tandem/calibration.json, else ~/.config/tandem/calibration.json), a
    /// path, or "none" (the built-in defaults). A file that is corrupt, of another version or of
    /// another machine is reported once and ignored. TANDEM_CALIBRATION.
    std::string calibration_file;
    /// With automatic placement, refine the cost model with the observed time of each region run
    /// (per kind of region and size, on each executor), and keep what was learned in the
    /// calibration file for the next runtime (off: the calibrated rates alone, nothing written).
    /// TANDEM_PLACEMENT_LEARNING=0|1.
    bool placement_learning = true;
    /// With several devices, whether one region may run split over them (a piece on each, side
    /// by side): "auto" (when the cost model says it finishes sooner), "always" (every region
    /// that can be split: comparisons and tests), "off". TANDEM_SPLIT.
    std::string split = "auto";
    /// Fusion's results remembered by the structure of the plan they came from, so that a program
    /// built again (a loop's body, a solver's step) is fused once: "on", "off", or "verify" (tests:
    /// fuse anyway on each hit and fail the gather if the results differ). TANDEM_PLAN_CACHE.
    std::string plan_cache = "on";
    /// A pending chain this many operations deep, of 2^18 elements an operation or more on the
    /// average, starts computing while the program goes on building on it (0: nothing computes
    /// before a gather; a chain's first piece starts at a quarter of the depth, at least 16). A
    /// loop unrolled into the graph (a Monte Carlo path's time steps, a stencil's) then runs its
    /// first steps while its later ones are built and planned, instead of after the whole loop
    /// was built. It starts where the program holds nothing inside the chain but its head (after
    /// a step, not mid-step), and cuts fusion there: one more write and read of the value the
    /// chain carries. Smaller steps are not started: planning them in pieces costs the host more
    /// than it wins. TANDEM_START_DEPTH.
    std::int64_t start_depth = 64;
    /// Regions with fewer elements than this always stay on the CPU (0: no floor; with
    /// placement "gpu", a way to keep the small ones off the device). TANDEM_DEVICE_MIN_ELEMENTS.
    std::int64_t device_min_elements = 0;
    /// Bytes of arrays the device may hold at once; past it, the least recently used copies no
    /// running work needs are dropped (written back to the host first when they are the only
    /// copy). "" = auto (90% of what VK_EXT_memory_budget allows this process, else 80% of the
    /// device's memory), a size ("512M", "6G", "1048576": K, M, G, T are powers of 1024) or a
    /// share of the device's memory ("50%"). TANDEM_DEVICE_MEMORY_LIMIT.
    std::string device_memory_limit;
    /// Run Vulkan with the Khronos validation layer and synchronization validation; messages
    /// are counted in Metrics::validation_messages. TANDEM_VULKAN_VALIDATION=0|1.
    bool vulkan_validation = false;
    /// Invocations per workgroup of the GPU reduction kernels: 0 = the device's default, else a
    /// power of two from 32 to 1024 (and at most the device's limit); a region of many reductions
    /// takes half as many, or fewer, where its shared arrays would not fit. TANDEM_REDUCTION_WG.
    std::uint32_t reduction_workgroup = 0;
    /// Invocations a GPU reduction along a later dimension aims for (it holds fewer lanes of the
    /// sum an invocation until it has them): 0 = the default (2^20, measured), else at least 1.
    /// Speed only: the bits are the same. TANDEM_REDUCTION_THREADS.
    std::int64_t reduction_threads = 0;
    /// Single-precision subnormals on a GPU that may flush them (NVIDIA; one whose driver cannot
    /// promise DenormPreserve): "exact" (the default) guards every f32 operation so that the
    /// device gives the CPU's bits, at a cost in speed (see docs/benchmarks.md); "device" lets it
    /// flush, and results where f32 subnormals occur may then differ from the CPU's.
    /// TANDEM_F32_SUBNORMALS=exact|device.
    std::string f32_subnormals = "exact";
    /// Combine within a workgroup with subgroup shuffles where the device has them (else a
    /// shared-memory tree). TANDEM_VULKAN_SUBGROUPS=0|1.
    bool vulkan_subgroups = true;
    /// Compile a region's repeated steps (a loop in the user's program, unrolled into the graph)
    /// as a loop in the kernel, so that compile time does not grow with the number of steps
    /// (off: straight-line code; the same bits either way). TANDEM_VULKAN_LOOPS=0|1.
    bool vulkan_loops = true;
    /// Time every GPU kernel with timestamp queries (Metrics::kernel_ms), for profiling. Off, only
    /// the runs the cost model learns from are timed: a timestamp pair around a dispatch costs an
    /// H100 ~1.8 us, 2% of a 0.1 ms step of a stencil. TANDEM_TIME_KERNELS=0|1.
    bool time_kernels = false;
    /// Directory of the on-disk pipeline cache: "" = $TANDEM_PIPELINE_CACHE_DIR, else
    /// $XDG_CACHE_HOME/tandem, else ~/.cache/tandem; "none" = in memory only.
    std::string pipeline_cache_dir;
    /// Tests only: make the device fail once, to test the fallback to the CPU: "compile"
    /// (a shader that does not compile), "oom" (no device memory), "oom_later" (no device memory
    /// for the fourth region, when earlier results live on the device), "device_lost" (found
    /// when a batch completes), "device_lost_later" or "device_lost_later:N" (found when the
    /// fourth, or Nth, batch completes, when earlier results live only on the device),
    /// "device_lost_in_download" (found by the first download), "submit_failed" (vkQueueSubmit
    /// fails), "slow_compile" (every kernel build takes 1.5 s longer: what a caller waits for),
    /// "slow_plan" (every plan pauses 2 s once fused and placed, before it is installed: what
    /// other threads must not wait for); "<fault>@<d>" gives a device's fault to the d-th device of the list alone.
    std::string test_fault;
    /// Comma-separated log topics written to stderr: "graph" (regions of each plan),
    /// "exec" (each region run, with its host time), "gpu" (each dispatch and copy's GPU time,
    /// from timestamp queries, with its region and its start on the queue's clock), "placement"
    /// (each region's predicted finish on the CPU and the device, and the executor chosen).
    /// TANDEM_LOG.
    std::string log;
    /// How many of the latest regions run Runtime::region_records() returns (what ran where,
    /// predicted against measured): 0 keeps none (a record costs a few allocations; with records
    /// kept, every GPU kernel is timed, as with time_kernels). TANDEM_REGION_RECORDS.
    std::int64_t region_records = 0;
    /// A Chrome / Perfetto trace of the regions run (a lane per CPU worker and one for the
    /// device's queue), written to this file when the runtime is destroyed; "" = none.
    /// TANDEM_TRACE.
    std::string trace_file;

    /// Defaults overridden by the TANDEM_* environment variables.
    static Config from_environment();
    /// Throws ConfigError if a field is out of range.
    void validate() const;
    /// device_memory_limit in bytes for a device of `device_bytes` of memory (0: auto). Throws
    /// ConfigError for a malformed limit.
    std::uint64_t device_memory_limit_bytes(std::uint64_t device_bytes) const;
};

}  // namespace tandem
