// The machine as hwloc sees it: what the CPU executor is sized from and `tandem info` shows.
#pragma once

#include "tandem/runtime.hpp"

namespace tandem::detail {

/// Reads the topology through hwloc (restricted to the cpuset this process is bound to for
/// the allowed_* fields). Never throws: on failure the fields hwloc could not fill stay 0.
CpuTopology detect_topology();

/// Threads for the CPU executor when Config::cpu_threads is 0: the cores this process may
/// use (at least 1).
int default_cpu_threads(const CpuTopology& topology);

}  // namespace tandem::detail
