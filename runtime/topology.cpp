// The machine through hwloc: counts, caches, memory, and the part of it this process may use.
#include "runtime/topology.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

namespace tandem::detail {
namespace {

struct TopologyDeleter {
    void operator()(hwloc_topology_t topology) const noexcept { hwloc_topology_destroy(topology); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
    void operator()(hwloc_bitmap_t bitmap) const noexcept { hwloc_bitmap_free(bitmap); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

TopologyPtr load_topology() {
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) return nullptr;
    TopologyPtr topology{raw};
    if (hwloc_topology_load(topology.get()) != 0) return nullptr;
    return topology;
}

int count(hwloc_topology_t topology, hwloc_obj_type_t type) {
    // -1 means "objects of this type at several depths"; hwloc 2 never does that for the
    // types asked here, but a negative count must not reach the caller.
    return std::max(hwloc_get_nbobjs_by_type(topology, type), 0);
}

int count_intersecting(hwloc_topology_t topology, hwloc_obj_type_t type, hwloc_const_cpuset_t set) {
    int n = 0;
    for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topology, type, nullptr); obj != nullptr;
         obj = hwloc_get_next_obj_by_type(topology, type, obj)) {
        if (obj->cpuset != nullptr && hwloc_bitmap_intersects(obj->cpuset, set)) ++n;
    }
    return n;
}

std::uint64_t cache_size(hwloc_topology_t topology, hwloc_obj_type_t type) {
    hwloc_obj_t cache = hwloc_get_obj_by_type(topology, type, 0);
    return cache != nullptr && cache->attr != nullptr ? cache->attr->cache.size : 0;
}

/// The PUs this process is bound to (taskset, cgroups, an MPI launcher), or, when hwloc cannot
/// tell, the PUs the topology says are allowed.
BitmapPtr process_cpuset(hwloc_topology_t topology) {
    BitmapPtr set{hwloc_bitmap_alloc()};
    if (set == nullptr) return nullptr;
    if (hwloc_get_proc_cpubind(topology, getpid(), set.get(), HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_iszero(set.get())) {
        return set;
    }
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topology);
    if (allowed == nullptr || hwloc_bitmap_copy(set.get(), allowed) != 0) return nullptr;
    return set;
}

void fill(hwloc_topology_t topology, CpuTopology& out) {
    out.packages = count(topology, HWLOC_OBJ_PACKAGE);
    out.numa_nodes = count(topology, HWLOC_OBJ_NUMANODE);
    out.cores = count(topology, HWLOC_OBJ_CORE);
    out.pus = count(topology, HWLOC_OBJ_PU);

    if (BitmapPtr bound = process_cpuset(topology)) {
        out.allowed_cores = count_intersecting(topology, HWLOC_OBJ_CORE, bound.get());
        out.allowed_pus = count_intersecting(topology, HWLOC_OBJ_PU, bound.get());
    }

    out.l1d_bytes = cache_size(topology, HWLOC_OBJ_L1CACHE);  // data or unified; L1i is a separate type
    out.l2_bytes = cache_size(topology, HWLOC_OBJ_L2CACHE);
    out.l3_bytes = cache_size(topology, HWLOC_OBJ_L3CACHE);

    hwloc_obj_t root = hwloc_get_root_obj(topology);
    if (root != nullptr) out.memory_bytes = root->total_memory;
    // hwloc sums the NUMA nodes' sysfs meminfo, which in some VMs (memory hot-plugged or added
    // through virtio-mem, as on the Firecracker development machine: 4.3 of 23.5 GiB) misses
    // most of the memory; the kernel's own total is the better number then.
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
        const auto kernel_total = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
        out.memory_bytes = std::max(out.memory_bytes, kernel_total);
    }

    // Some platforms (VMs, non-x86) put CPUModel on the root rather than on a package.
    hwloc_obj_t package = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0);
    const char* model = package != nullptr ? hwloc_obj_get_info_by_name(package, "CPUModel") : nullptr;
    if (model == nullptr && root != nullptr) model = hwloc_obj_get_info_by_name(root, "CPUModel");
    if (model != nullptr) out.model = model;
}

}  // namespace

CpuTopology detect_topology() {
    CpuTopology result;
    try {
        if (TopologyPtr topology = load_topology()) fill(topology.get(), result);
    } catch (...) {
        // Only an allocation failure can land here; what was filled before it stays.
    }
    return result;
}

int default_cpu_threads(const CpuTopology& topology) {
    // Cores, not hardware threads: the block kernels saturate a core's vector units, so a
    // second thread on its sibling PU only adds contention. PUs when hwloc saw no cores.
    const int threads = topology.allowed_cores > 0 ? topology.allowed_cores : topology.allowed_pus;
    return std::max(threads, 1);
}

}  // namespace tandem::detail
