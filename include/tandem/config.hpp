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
    /// Comma-separated log topics written to stderr: "graph" (regions of each plan),
    /// "exec" (each region run). TANDEM_LOG.
    std::string log;

    /// Defaults overridden by the TANDEM_* environment variables.
    static Config from_environment();
    /// Throws ConfigError if a field is out of range.
    void validate() const;
};

}  // namespace tandem
