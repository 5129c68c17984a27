// Whether the kernels a region needs on this device are built, what waiting for them would cost
// (placement prices it: Backend::pipeline_wait_s), and building them ahead of time on the
// KernelBuilder's threads (Backend::prepare): generated kernels by signature, GEMM variants, and
// the fixed kernels of scans, transposes, permutes, remaps and indexing.
#include <string>
#include <vector>

#include "backends/vulkan/gemm.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "backends/vulkan/index_kernels.hpp"
#include "backends/vulkan/permute.hpp"
#include "backends/vulkan/reduce_kernels.hpp"
#include "backends/vulkan/remap.hpp"
#include "backends/vulkan/scan.hpp"
#include "backends/vulkan/transpose.hpp"
#include "backends/vulkan/user_kernel.hpp"
#include "backends/vulkan/vulkan_backend.hpp"
#include "graph/permute_plan.hpp"

namespace tandem::detail::vk {

std::string VulkanBackend::matmul_kernel_key(const Region& r, bool& built) const {
    built = true;
    if (matmul_precision_of(r) != MatmulPrecision::full) return "";  // rounding and tensor-core kernels: not priced
    const GemmArgs g = matmul_args(r);
    const bool split = gemm_->split_parts(g) > 1;
    built = gemm_->built(g, split) && (!split || pipelines_->cached(Gemm::split_sum_kernel(g.dtype)));
    return "gemm " + std::to_string(gemm_->variant(g, split));
}

void VulkanBackend::prepare_matmul(const Region& r) {
    bool built = true;
    const std::string key = matmul_kernel_key(r, built);
    if (built) return;
    const GemmArgs g = matmul_args(r);
    kernels_->prepare_fixed(key, [this, g] {
        const bool split = gemm_->split_parts(g) > 1;
        gemm_->pipeline(g, split);
        if (split) pipelines_->get(Gemm::split_sum_kernel(g.dtype));
    });
}

std::shared_ptr<const KernelBuilder::Form> VulkanBackend::kernel_form(const Region& r) const {
    const bool kept = ordinal() < BackendMemo::kSlots;
    if (kept)
        if (auto known = r.memo.get(ordinal())) return std::static_pointer_cast<const KernelBuilder::Form>(known);
    std::vector<InputAccess> access;
    std::vector<InputWalk> walks;
    access_for(r, access, walks);
    std::uint64_t variant = 0;
    if (r.is_reduce()) {
        const ReducePlan rp = plan_reduce(r, codegen_.reduction_threads,
                                          reduce_workgroup(r, codegen_.reduction_workgroup_size, codegen_.max_shared_bytes));
        variant = !rp.contiguous ? rp.per_invocation : rp.whole_outputs ? 1024 : 0;
    }
    auto form = kernels_->form(r, std::move(access), std::move(walks), variant);
    if (kept) r.memo.set(ordinal(), form);
    return form;
}

std::string VulkanBackend::fixed_key(const Region& r) {
    // The traits that choose the kernels (cheap to form: the kernels' text is not).
    switch (r.kind) {
        case RegionKind::transpose:
        case RegionKind::scan:
        case RegionKind::remap:
        case RegionKind::permute:
        case RegionKind::gather:
        case RegionKind::scatter:
        case RegionKind::find: break;
        case RegionKind::kernel: return "user " + r.call->name + ' ' + std::to_string(r.call->structure);
        default: return "";  // generated kernels, GEMMs (their own keys), copies
    }
    const DType t = r.outputs[0].node->dtype;
    const DType sub = r.inputs.size() > 1 ? r.inputs[1]->dtype : DType::f64;
    const bool tiled = r.kind == RegionKind::permute && !plan_permute(r.inputs[0]->shape, r.permutation).runs();
    return "fixed " + std::to_string(static_cast<int>(r.kind)) + ' ' + std::to_string(static_cast<int>(t)) + ' ' +
           std::to_string(static_cast<int>(r.scan_op)) + ' ' + std::to_string(static_cast<int>(sub)) + (tiled ? " tiled" : "");
}

std::vector<Kernel> VulkanBackend::fixed_kernels(const Region& r) {
    const DType t = r.outputs[0].node->dtype;
    const DType sub = r.inputs.size() > 1 ? r.inputs[1]->dtype : DType::f64;
    switch (r.kind) {
        case RegionKind::transpose: return {transpose_kernel(t)};
        case RegionKind::scan: return {scan_kernel(r.scan_op, t)};
        case RegionKind::remap: return {remap_kernel(t)};
        case RegionKind::permute: return {permute_kernel(t, !plan_permute(r.inputs[0]->shape, r.permutation).runs())};
        case RegionKind::gather: return {gather_kernel(t, sub)};
        case RegionKind::scatter: return {scatter_kernel(t, sub, true), scatter_kernel(t, sub, false)};
        case RegionKind::find: return {find_kernel(1), find_kernel(2), find_kernel(3)};
        case RegionKind::kernel: return r.call->has_glsl() ? std::vector<Kernel>{user_kernel(*r.call)} : std::vector<Kernel>{};
        default: return {};
    }
}

double VulkanBackend::fixed_wait_s(const Region& r) {
    const std::string key = fixed_key(r);
    if (key.empty()) return 0.0;
    {
        std::lock_guard lock(fixed_ready_mutex_);
        if (fixed_ready_.count(key)) return 0.0;
    }
    for (const Kernel& k : fixed_kernels(r))
        if (!pipelines_->cached(k)) return kernels_->fixed_wait_s(key);
    std::lock_guard lock(fixed_ready_mutex_);
    fixed_ready_.insert(key);
    return 0.0;
}

void VulkanBackend::quiesce() {
    // With a disk cache, the builds queued are worth finishing: the next process finds them
    // there. Without one they die with the process.
    if (!options_.pipeline_cache_dir.empty() && !lost_) kernels_->finish(kExitBuildBudget);
    kernels_->stop();
}

double VulkanBackend::pipeline_wait_s(const Region& r) {
    if (lost_) return 0.0;
    try {
        if (r.kind == RegionKind::matmul) {
            bool built = true;
            const std::string key = matmul_kernel_key(r, built);
            return built ? 0.0 : kernels_->fixed_wait_s(key);
        }
        // A fixed kernel (a scan, a transpose, indexing): priced until the pipeline cache has it.
        if (r.kind != RegionKind::elementwise && r.kind != RegionKind::reduce) return fixed_wait_s(r);
        return kernels_->wait_s(r, *kernel_form(r));
    } catch (const std::exception&) {
        return 0.0;  // code generation refuses it: the recording says so (and the CPU runs it)
    }
}

void VulkanBackend::prepare(const Region& r) {
    if (lost_) return;
    try {
        if (r.kind == RegionKind::matmul) return prepare_matmul(r);
        if (r.kind != RegionKind::elementwise && r.kind != RegionKind::reduce) {
            if (fixed_wait_s(r) > 0)
                kernels_->prepare_fixed(fixed_key(r), [this, ks = fixed_kernels(r)] {
                    for (const Kernel& k : ks) pipelines_->get(k);
                });
            return;
        }
        kernels_->prepare(r, *kernel_form(r));
    } catch (const std::exception&) {
        // Code generation refused it: the recording will say so (and run it on the CPU).
    }
}

}  // namespace tandem::detail::vk
