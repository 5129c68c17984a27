// A user kernel's command group on the CPU executor: its accessors bound to the region's host
// copies, then its C++ body over chunks of the range on the executor's threads.
#include <cstring>
#include <mutex>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/parallel.hpp"
#include "graph/kernel_call.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {

namespace {
/// Items per chunk: enough that a chunk's call costs nothing beside its items, few enough that the
/// range spreads over the threads (a body's item may be one multiply-add or a long loop).
constexpr std::int64_t kItemsPerChunk = 4096;
}  // namespace

void CpuBackend::run_kernel(const Region& region, std::span<const Storage* const> inputs,
                            std::span<Storage* const> outputs) {
    const KernelCall& k = *region.call;
    if (!k.has_cpu())
        throw Error(k.label() + " has no C++ body, and the CPU executor was asked to run it (no device could: see the log)");
    // A written buffer the plan does not want still needs somewhere to go.
    std::vector<std::shared_ptr<Storage>> scratch;
    std::vector<void*> data(k.accesses.size(), nullptr);
    for (std::size_t a = 0; a < k.accesses.size(); ++a) {
        const KernelAccess& acc = k.accesses[a];
        const std::size_t bytes = static_cast<std::size_t>(acc.shape.numel()) * dtype_size(acc.dtype);
        if (!acc.writes()) {
            data[a] = const_cast<void*>(inputs[static_cast<std::size_t>(acc.input)]->data());
            continue;
        }
        Storage* out = nullptr;
        if (const int j = region.kernel_output(static_cast<std::size_t>(acc.output)); j >= 0) {
            out = outputs[static_cast<std::size_t>(j)];
        } else {
            scratch.push_back(pool_.allocate(bytes, "kernel scratch"));
            out = scratch.back().get();
        }
        // read_write: the new version starts as the old one (the body updates it in place).
        if (acc.reads() && bytes > 0) std::memcpy(out->data(), inputs[static_cast<std::size_t>(acc.input)]->data(), bytes);
        data[a] = out->data();
    }
    // The accessors the body captured point at the call's bindings: one run of it at a time.
    std::lock_guard lock(k.run_mutex);
    for (std::size_t a = 0; a < data.size(); ++a) (*k.bindings)[a].data = data[a];
    if (k.host_task) return k.cpu(0, 1);
    for_chunks(k.items(), kItemsPerChunk, [&](std::int64_t first, std::int64_t last) { k.cpu(first, last); });
}

}  // namespace tandem::detail::cpu
