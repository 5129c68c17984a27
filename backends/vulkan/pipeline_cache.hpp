// Pipelines for generated kernels, cached in memory and on disk. The key is a stable 64-bit hash
// (FNV-1a, not std::hash) of the kernel source and key, workgroup size, push-constant size and
// the device's pipelineCacheUUID and driver version. On disk, under $TANDEM_PIPELINE_CACHE_DIR or
// $XDG_CACHE_HOME/tandem (~/.cache/tandem): one SPIR-V file per kernel and the VkPipelineCache
// blob, each written atomically (temporary file + rename). A file that cannot be read, is corrupt
// or belongs to another device/driver is reported once, ignored and rebuilt; a directory that
// cannot be written is reported once and the cache works in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/context.hpp"

namespace tandem::detail::vk {

struct PipelineCacheStats {
    std::uint64_t hits = 0;         ///< served from memory
    std::uint64_t disk_hits = 0;    ///< SPIR-V read from disk (no compile)
    std::uint64_t misses = 0;       ///< compiled
    std::uint64_t warmed = 0;       ///< pipelines created from disk by warm_up()
    double compile_ms = 0;          ///< glslang + vkCreateComputePipelines, summed
    std::string directory;          ///< "" when the disk cache is off
};

/// A compiled kernel ready to dispatch. Owned by the cache; valid while the cache lives.
struct ComputePipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    std::uint32_t push_bytes = 0;
};

class PipelineCache {
public:
    /// `directory`: "" to cache in memory only. `report`: called once per problem (a message
    /// naming the file and what is wrong), e.g. to log it.
    PipelineCache(const Context& context, std::string directory, std::function<void(const std::string&)> report);
    /// Writes the VkPipelineCache blob (atomically) and destroys the pipelines.
    ~PipelineCache();
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    /// The pipeline for `kernel`: from memory, else from disk SPIR-V, else compiled (and
    /// written to disk). Throws ShaderCompileError or DeviceError. Thread-safe.
    const ComputePipeline& get(const Kernel& kernel);
    /// Whether get() would find `kernel` built or its SPIR-V on disk (no compile). Thread-safe.
    bool cached(const Kernel& kernel) const;
    /// Called after get() built a pipeline (compiled, or from disk SPIR-V), with its host time.
    /// Set before the first get().
    using BuildObserver = std::function<void(std::chrono::steady_clock::time_point start,
                                             std::chrono::steady_clock::time_point end, bool from_disk)>;
    void set_build_observer(BuildObserver observer);
    /// Loads and creates, on a background thread, the pipelines whose SPIR-V is on disk, so a
    /// later get() of them is a memory hit (off the critical path).
    void warm_up();
    PipelineCacheStats stats() const;
    /// Waits for warm_up() to finish (for tests and tools; the destructor also stops it).
    void wait_warm_up();

    /// The default directory: $TANDEM_PIPELINE_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else
    /// $HOME/.cache/tandem; "" if none can be formed.
    static std::string default_directory();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The stable hash used for keys (exposed for tests).
std::uint64_t stable_hash(const void* data, std::size_t bytes, std::uint64_t seed = 0xcbf29ce484222325ull);  // FNV-1a 64 offset basis

}  // namespace tandem::detail::vk
