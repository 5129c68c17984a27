#include "backends/vulkan/vulkan_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "backends/vulkan/batch.hpp"
#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/gemm.hpp"

namespace tandem::detail::vk {

namespace {
/// Milliseconds between two timestamps of a queue with `valid_bits` (they wrap) on device `d`.
double ms_between(std::uint64_t from, std::uint64_t to, std::uint32_t valid_bits, const DeviceDescription& d) {
    const std::uint64_t mask = valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1;
    return static_cast<double>((to - from) & mask) * d.timestamp_period_ns / 1e6;
}

Semaphore make_timeline(VkDevice device) {
    VkSemaphoreTypeCreateInfo tci{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr, VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &tci, 0};
    VkSemaphore sem = VK_NULL_HANDLE;
    check(vkCreateSemaphore(device, &sci, nullptr, &sem), "vkCreateSemaphore (timeline)");
    return Semaphore(device, sem);
}

CommandPool make_pool(VkDevice device, std::uint32_t family) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, family};
    VkCommandPool pool = VK_NULL_HANDLE;
    check(vkCreateCommandPool(device, &pci, nullptr, &pool), "vkCreateCommandPool");
    return CommandPool(device, pool);
}

/// Waits until every semaphore reached its value; VK_TIMEOUT is not an error, only slow.
/// `spin`: how long to poll the counters before blocking. A blocking wait on the H100 wakes
/// ~30 us after the GPU signals (measured: a 2-op gather took 93 us blocking, 55 us polling
/// for up to 200 us first; a 0.35 ms reduction 0.445 ms wall with 200 us), so batches up to a
/// millisecond are worth a core's moment; longer ones pay the wake-up once.
VkResult wait_all(VkDevice device, std::initializer_list<std::pair<VkSemaphore, std::uint64_t>> waits,
                  std::chrono::microseconds spin = std::chrono::microseconds(0)) {
    VkSemaphore sems[4];
    std::uint64_t values[4];
    std::uint32_t n = 0;
    for (auto [sem, value] : waits)
        if (sem != VK_NULL_HANDLE) {
            sems[n] = sem;
            values[n++] = value;
        }
    if (spin.count() > 0) {
        const auto until = std::chrono::steady_clock::now() + spin;
        for (;;) {
            bool all = true;
            for (std::uint32_t i = 0; i < n && all; ++i) {
                std::uint64_t v = 0;
                if (VkResult r = vkGetSemaphoreCounterValue(device, sems[i], &v); r != VK_SUCCESS) return r;
                all = v >= values[i];
            }
            if (all) return VK_SUCCESS;
            if (std::chrono::steady_clock::now() >= until) break;
        }
    }
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, n, sems, values};
    VkResult res = VK_TIMEOUT;
    while (res == VK_TIMEOUT) res = vkWaitSemaphores(device, &wi, 1'000'000'000ull);
    return res;
}

}  // namespace

std::unique_ptr<VulkanBackend> VulkanBackend::create(const VulkanOptions& options) {
    std::unique_ptr<VulkanBackend> b(new VulkanBackend());
    b->options_ = options;
    if (options.test_fault == "device_lost_later") b->lost_after_batches_ = 4;
    if (options.test_fault.rfind("device_lost_later:", 0) == 0) b->lost_after_batches_ = std::stoi(options.test_fault.substr(18));
    b->context_ = Context::create(options.context);
    const Context& c = *b->context_;
    b->device_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::device_local, kBlockBytes);
    b->upload_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::upload, VkDeviceSize{64} << 20);
    b->readback_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::readback, VkDeviceSize{64} << 20);
    b->pipelines_ = std::make_unique<PipelineCache>(c, options.pipeline_cache_dir, [](const std::string& m) {
        std::fprintf(stderr, "[tandem] pipeline cache: %s\n", m.c_str());
    });
    const DeviceDescription& d = c.description();
    // Warming up compiles every cached pipeline on a background thread. A driver that runs on the
    // CPU (lavapipe) would compile them on the cores the CPU executor computes on, for seconds
    // after start, whether or not any region goes there: its pipelines are built when first used.
    if (d.type != "cpu") b->pipelines_->warm_up();
    b->gemm_ = std::make_unique<Gemm>(c, *b->pipelines_);
    b->codegen_.max_push_bytes = std::min<std::uint32_t>(d.max_push_constants, 128);
    // NVIDIA: subgroups of 32, lavapipe: 8; a workgroup of several subgroups, a few elements each.
    b->codegen_.workgroup_size = std::min<std::uint32_t>(256, std::max<std::uint32_t>(64, d.max_workgroup_invocations / 4));
    b->codegen_.elements_per_thread = d.type == "cpu" ? 16 : 4;
    b->codegen_.max_shared_bytes = d.shared_memory_bytes;
    b->codegen_.subgroup_shuffle = d.subgroup_shuffle && options.subgroups;
    b->codegen_.preserve_f32_denormals = d.denorm_preserve_f32;
    b->codegen_.preserve_signed_zeros = d.signed_zero_preserve;
    b->codegen_.f32_guarded = !d.denorm_preserve_f32 && options.exact_f32_subnormals;
    b->codegen_.loops = options.loops;
    // Reductions: 256 invocations unless the device has fewer (or the setting says otherwise).
    b->codegen_.reduction_workgroup_size = std::min<std::uint32_t>(256, d.max_workgroup_invocations);
    if (options.reduction_workgroup != 0) {
        if (options.reduction_workgroup > d.max_workgroup_invocations)
            throw ConfigError("TANDEM_REDUCTION_WG / Config::reduction_workgroup = " +
                              std::to_string(options.reduction_workgroup) + ": more than the " +
                              std::to_string(d.max_workgroup_invocations) + " invocations per workgroup of " + d.name);
        b->codegen_.reduction_workgroup_size = options.reduction_workgroup;
    }
    b->codegen_.reduction_threads = options.reduction_threads;
    b->kernels_ = std::make_unique<KernelBuilder>(*b->pipelines_, b->codegen_, kExpectedBuildSeconds,
                                                  kExpectedLoadSeconds);  // after the options above
    if (options.test_fault == "slow_compile") b->kernels_->slow_down_builds(std::chrono::milliseconds(1500));

    b->pool_ = make_pool(c.device(), c.compute_family());
    b->copy_pool_ = make_pool(c.device(), c.transfer_family());
    b->timeline_ = make_timeline(c.device());
    b->upload_timeline_ = make_timeline(c.device());
    b->download_timeline_ = make_timeline(c.device());
    // A transfer-only queue cannot reset queries in a command buffer: it needs hostQueryReset.
    b->copy_timestamps_ = d.transfer_timestamp_bits > 0 && (d.host_query_reset || !c.has_transfer_queue());
    // Polling before blocking pays on a GPU; on a CPU device (lavapipe) it takes the core the
    // device itself runs on.
    if (d.type != "cpu") b->completion_spin_ = std::chrono::microseconds(1000);
    b->completer_ = std::thread([p = b.get()] { p->complete_loop(); });
    return b;
}

VulkanBackend::~VulkanBackend() {
    if (kernels_) kernels_->stop();  // no build ahead of time while the rest goes
    flush();
    {
        std::lock_guard lock(done_mutex_);
        stopping_ = true;
    }
    done_cv_.notify_all();
    if (completer_.joinable()) completer_.join();
    if (context_) vkDeviceWaitIdle(context_->device());
    std::lock_guard lock(record_mutex_);
    for (VkCommandBuffer cmd : free_cmds_) vkFreeCommandBuffers(context_->device(), pool_.get(), 1, &cmd);
    for (VkCommandBuffer cmd : free_copy_cmds_) vkFreeCommandBuffers(context_->device(), copy_pool_.get(), 1, &cmd);
    free_cmds_.clear();
    free_copy_cmds_.clear();
}

VulkanBackend::Batch& VulkanBackend::open_batch(const Submission& s) {
    // A timestamp pair around a dispatch costs an H100 ~1.8 us (2% of a 0.1 ms stencil step):
    // kernels are timed when the cost model asks (Submission::measured), or all of them on request.
    const bool timed = options_.time_kernels || options_.log_gpu || static_cast<bool>(s.measured);
    if (open_) {
        open_->time_kernels = timed;
        return *open_;
    }
    auto b = std::make_unique<Batch>();
    if (!free_cmds_.empty()) {
        b->cmd = free_cmds_.back();
        free_cmds_.pop_back();
    } else {
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool_.get(),
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        check(vkAllocateCommandBuffers(context_->device(), &ai, &b->cmd), "vkAllocateCommandBuffers");
    }
    if (!free_queries_.empty()) {
        b->queries = std::move(free_queries_.back());
        free_queries_.pop_back();
    } else if (context_->description().timestamp_period_ns > 0) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP,
                                 2 * kMaxSpansPerBatch, 0};
        VkQueryPool q = VK_NULL_HANDLE;
        check(vkCreateQueryPool(context_->device(), &qi, nullptr, &q), "vkCreateQueryPool");
        b->queries = QueryPool(context_->device(), q);
        if (context_->description().host_query_reset) vkResetQueryPool(context_->device(), q, 0, 2 * kMaxSpansPerBatch);
    }
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
    check(vkBeginCommandBuffer(b->cmd, &bi), "vkBeginCommandBuffer");
    b->time_kernels = timed;
    // Queries are reset on the host when recycled where the device can (hostQueryReset), else by
    // the batch before its first timed span: a batch that times nothing resets nothing.
    b->queries_reset = context_->description().host_query_reset;
    // Whatever earlier batches wrote is visible to this one (same queue, submission order).
    barrier(b->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
    // Batches are submitted in the order they open, so the timeline values rise as they must.
    b->signal = ++timeline_value_;
    open_ = std::move(b);
    return *open_;
}

std::unique_ptr<VulkanBackend::CopyJob> VulkanBackend::open_copy(Span kind) {
    auto job = std::make_unique<CopyJob>();
    job->kind = kind;
    if (!free_copy_cmds_.empty()) {
        job->cmd = free_copy_cmds_.back();
        free_copy_cmds_.pop_back();
    } else {
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, copy_pool_.get(),
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        check(vkAllocateCommandBuffers(context_->device(), &ai, &job->cmd), "vkAllocateCommandBuffers (copy)");
    }
    if (copy_timestamps_) {
        if (!free_copy_queries_.empty()) {
            job->queries = std::move(free_copy_queries_.back());
            free_copy_queries_.pop_back();
        } else {
            VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP, 2, 0};
            VkQueryPool q = VK_NULL_HANDLE;
            check(vkCreateQueryPool(context_->device(), &qi, nullptr, &q), "vkCreateQueryPool (copy)");
            job->queries = QueryPool(context_->device(), q);
        }
    }
    const bool host_reset = job->queries && context_->description().host_query_reset;
    if (host_reset) vkResetQueryPool(context_->device(), job->queries.get(), 0, 2);  // not in use: recycled after completion
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
    check(vkBeginCommandBuffer(job->cmd, &bi), "vkBeginCommandBuffer (copy)");
    if (job->queries) {
        if (!host_reset) vkCmdResetQueryPool(job->cmd, job->queries.get(), 0, 2);  // the compute queue: allowed
        vkCmdWriteTimestamp(job->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, job->queries.get(), 0);
    }
    return job;
}

void VulkanBackend::submit_copy(CopyJob& job, VkSemaphore wait, std::uint64_t wait_value, VkSemaphore signal) {
    if (job.kind == Span::download)
        barrier(job.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
    if (job.queries) vkCmdWriteTimestamp(job.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, job.queries.get(), 1);
    check(vkEndCommandBuffer(job.cmd), "vkEndCommandBuffer (copy)");
    const bool waits = wait != VK_NULL_HANDLE && wait_value > 0;
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, nullptr, waits ? 1u : 0u,
                                     &wait_value, 1, &job.signal};
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &ti, waits ? 1u : 0u, &wait, &stage, 1, &job.cmd, 1, &signal};
    job.submitted = std::chrono::steady_clock::now();
    {
        std::lock_guard qlock(queue_mutex_);
        check(vkQueueSubmit(context_->transfer_queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit (copy queue)");
    }
    std::lock_guard slock(stats_mutex_);
    ++stats_.copy_queue_submits;
}

const char* VulkanBackend::span_name(Span kind) noexcept {
    return kind == Span::kernel ? "kernel" : kind == Span::upload ? "upload" : "download";
}

void VulkanBackend::log_spans(const Batch& b, const std::vector<std::uint64_t>& ts) const {
    // One write per batch: lines of concurrent batches do not interleave.
    const DeviceDescription& d = context_->description();
    std::string text;
    char line[96];
    for (std::size_t i = 0; i < b.spans.size(); ++i) {
        const double ms = ms_between(ts[2 * i], ts[2 * i + 1], d.timestamp_valid_bits, d);
        // The start on the queue's clock, from the first span logged: gaps between batches show.
        if (log_base_ == 0) log_base_ = ts[0];
        const double at = ms_between(log_base_, ts[2 * i], d.timestamp_valid_bits, d);
        std::snprintf(line, sizeof line, "[tandem gpu] batch %llu at %.3f %s %.3f ms",
                      static_cast<unsigned long long>(b.signal), at, span_name(b.spans[i]), ms);
        text += line;
        if (const Region* r = b.span_regions[i]) text += " " + r->shape.to_string() + " " + r->summary();
        text += '\n';
    }
    std::fputs(text.c_str(), stderr);
}

void VulkanBackend::add_time(Span kind, double ms) {
    std::lock_guard slock(stats_mutex_);
    (kind == Span::kernel ? stats_.kernel_ms : kind == Span::upload ? stats_.upload_ms : stats_.download_ms) += ms;
}

/// After its submission finished (or never happened): the copy's time, and its command buffer
/// and queries back to the free lists.
void VulkanBackend::retire_copy(std::unique_ptr<CopyJob> job) {
    if (!job) return;
    const DeviceDescription& d = context_->description();
    std::uint64_t ts[2] = {0, 0};
    double ms = -1;
    if (job->queries && vkGetQueryPoolResults(context_->device(), job->queries.get(), 0, 2, sizeof ts, ts,
                                              sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
    {
        ms = ms_between(ts[0], ts[1], d.transfer_timestamp_bits, d);
        add_time(job->kind, ms);
        if (options_.log_gpu) std::fprintf(stderr, "[tandem gpu] copy queue %s %.3f ms\n", span_name(job->kind), ms);
    }
    if (activity_ && job->submitted != std::chrono::steady_clock::time_point{}) {
        Activity a;
        a.kind = job->kind == Span::upload ? Activity::Kind::upload : Activity::Kind::download;
        a.start = job->submitted;
        a.end = std::chrono::steady_clock::now();
        a.bytes = job->bytes;
        a.device_ms = ms;
        a.host_ms = job->host_ms;
        activity_(a);
    }
    std::lock_guard lock(record_mutex_);
    recycle_copy_locked(*job);
}

void VulkanBackend::recycle_copy_locked(CopyJob& job) {
    vkResetCommandBuffer(job.cmd, 0);
    free_copy_cmds_.push_back(job.cmd);
    job.cmd = VK_NULL_HANDLE;
    if (job.queries) free_copy_queries_.push_back(std::move(job.queries));
}

std::shared_ptr<DeviceArray> VulkanBackend::device_copy(Value& v, Batch& b) {
    if (auto d = v.device(ordinal())) {
        auto& copy = static_cast<Copy&>(*d);
        b.upload_wait = std::max(b.upload_wait, copy.uploaded_at);
        return copy.array;
    }
    auto host = v.host();
    if (!host) throw Error("vulkan: an input has neither a host nor a device copy (scheduler bug)");
    const auto host_start = std::chrono::steady_clock::now();
    const VkDeviceSize bytes = std::max<VkDeviceSize>(v.bytes(), 1);
    auto arr = device_heap_->allocate(bytes);
    auto staging = upload_heap_->allocate(bytes);
    copy_bytes(staging->mapped(), host->data(), v.bytes());
    VkBufferCopy region{staging->offset(), arr->offset(), bytes};
    std::uint64_t uploaded_at = 0;
    if (bytes >= kQueueCopyBytes) {
        // Submitted now: the copy engine starts while the host goes on recording.
        auto job = open_copy(Span::upload);
        vkCmdCopyBuffer(job->cmd, staging->buffer(), arr->buffer(), 1, &region);
        job->keep.push_back(staging);
        job->bytes = v.bytes();
        job->signal = ++upload_value_;
        try {
            submit_copy(*job, VK_NULL_HANDLE, 0, upload_timeline_.get());
        } catch (...) {
            lost_ = true;
            recycle_copy_locked(*job);
            throw;
        }
        uploaded_at = job->signal;
        job->host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();
        b.upload_wait = std::max(b.upload_wait, uploaded_at);
        b.uploads.push_back(std::move(job));
    } else {
        const int q = b.begin_span(Span::upload);
        vkCmdCopyBuffer(b.cmd, staging->buffer(), arr->buffer(), 1, &region);
        b.end_span(q);
        buffer_barrier(b.cmd, *arr, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        b.keep.push_back(staging);
    }
    v.set_device(ordinal(), std::make_shared<Copy>(context_, arr, 0, uploaded_at));
    std::lock_guard lock(stats_mutex_);
    stats_.upload_bytes += v.bytes();
    return arr;
}

std::string VulkanBackend::identity() const {
    const DeviceDescription& d = context_->description();
    static constexpr char kHex[] = "0123456789abcdef";
    std::string uuid;
    for (std::uint8_t b : d.pipeline_cache_uuid) {
        uuid += kHex[b >> 4];
        uuid += kHex[b & 15];
    }
    return d.name + " (" + d.driver + ", " + uuid + ")";
}

DeviceClass VulkanBackend::device_class() const noexcept {
    const std::string& t = context_->description().type;
    if (t == "discrete") return DeviceClass::discrete_gpu;
    if (t == "integrated") return DeviceClass::integrated_gpu;
    if (t == "cpu") return DeviceClass::cpu_device;
    return DeviceClass::virtual_gpu;
}

void VulkanBackend::submit(Submission s) {
    const Region& r = *s.region;
    if (lost_) throw DeviceLost("vulkan: the device was lost earlier; no more work is sent to it");
    // Injected faults count the submissions that go ahead (not those refused as cold, which come again).
    auto inject_fault = [&] {
        if (options_.test_fault.empty() || fault_fired_) return;
        if (options_.test_fault == "compile") {
            fault_fired_ = true;
            throw ShaderCompileError("injected fault (Config::test_fault = compile): the shader did not compile");
        }
        if (options_.test_fault == "oom" || (options_.test_fault == "oom_later" && ++fault_countdown_ == 4)) {
            fault_fired_ = true;
            throw DeviceOutOfMemory("injected fault (Config::test_fault = " + options_.test_fault +
                                    "): out of device memory");
        }
    };
    const bool generated = r.kind == RegionKind::elementwise || r.kind == RegionKind::reduce;
    if (!generated) {
        // A caller that must not block refuses a kernel not built yet (a generated one below,
        // once its signature is known).
        if (s.refuse_cold && pipeline_wait_s(r) > 0) throw KernelNotReady();
        inject_fault();
    }
    switch (r.kind) {
        case RegionKind::elementwise:
        case RegionKind::reduce: break;  // a generated kernel: below
        case RegionKind::matmul: return submit_matmul(std::move(s));
        case RegionKind::view: throw Error("internal: a view region reached the Vulkan backend (the scheduler shares its value)");
        case RegionKind::transpose: return submit_transpose(std::move(s));
        case RegionKind::permute: return submit_permute(std::move(s));
        case RegionKind::scan: return submit_scan(std::move(s));
        case RegionKind::concat: return submit_cat(std::move(s));
        case RegionKind::remap: return submit_remap(std::move(s));
        case RegionKind::gather: return submit_gather(std::move(s));
        case RegionKind::scatter: return submit_scatter(std::move(s));
        case RegionKind::find: return submit_find(std::move(s));
        case RegionKind::kernel: return submit_kernel(std::move(s));
    }
    // Everything that can fail for a reason of its own happens before recording anything.
    const std::shared_ptr<const KernelBuilder::Form> form = kernel_form(r);
    const std::vector<InputWalk>& walks = form->walks;
    KernelBuilder::Entry* built = s.refuse_cold ? kernels_->get_if_built(r, *form) : nullptr;
    if (s.refuse_cold && !built) throw KernelNotReady();
    inject_fault();
    KernelBuilder::Entry& entry = built ? *built : kernels_->get(*form);
    const Kernel* kernel = &entry.kernel;
    const ComputePipeline& pipeline = *entry.pipeline.get();
    // A reduce region split into parts: the scratch for the partials, and the second pass.
    const std::uint64_t partial_bytes = reduce_partial_bytes(r, *kernel);
    std::shared_ptr<DeviceArray> partials;
    const ComputePipeline* combine = nullptr;
    if (partial_bytes > 0) {
        partials = device_heap_->allocate(partial_bytes);
        combine = &kernels_->combine(entry);
    }
    std::vector<std::shared_ptr<DeviceArray>> outs;
    for (std::size_t j = 0; j < r.outputs.size(); ++j)
        outs.push_back(device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[j]->bytes(), 1)));
    std::size_t arg_bound = kArgHeaderBytes + 8 * (r.inputs.size() + r.outputs.size()) + 8 * r.program.size() * 3;
    for (const InputWalk& w : walks) arg_bound += kStridedDimBytes * walk_letters(w).size();
    if (r.is_reduce()) arg_bound += 8 * kReduceParamsCount;
    if (!r.tail.empty()) arg_bound += kArgHeaderBytes + 8 * r.outputs.size() + 8 * r.tail.size() * 3;
    auto args = upload_heap_->allocate(arg_bound);

    std::lock_guard lock(record_mutex_);
    if (open_ && open_->spans.size() + s.inputs.size() + 2 * outs.size() + 1 > kMaxSpansPerBatch) submit_locked();
    Batch& b = open_batch(s);
    std::vector<std::uint64_t> in_addr, out_addr;
    for (auto& v : s.inputs) {
        auto arr = device_copy(*v, b);
        in_addr.push_back(arr->address());
        b.keep.push_back(arr);
    }
    for (std::size_t j = 0; j < outs.size(); ++j) {
        out_addr.push_back(outs[j]->address());
        s.outputs[j]->set_device(ordinal(), std::make_shared<Copy>(context_, outs[j], b.signal, 0));
    }
    Launch launch = pack_arguments(r, *kernel, in_addr, out_addr, args->address(), 65535,
                                   partials ? partials->address() : 0);
    if (launch.args.size() > arg_bound) throw Error("vulkan: argument block larger than reserved (bug)");
    std::memcpy(args->mapped(), launch.args.data(), launch.args.size());

    if (launch.groups_x > 0) {
        const int q = b.begin_span(Span::kernel, &r);
        vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
        vkCmdPushConstants(b.cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<std::uint32_t>(launch.push.size()), launch.push.data());
        vkCmdDispatch(b.cmd, launch.groups_x, launch.groups_y, 1);
        // The combine passes, a level each: the same push constants with the level for the count.
        for (std::size_t level = 0; combine && level < launch.combines.size(); ++level) {
            buffer_barrier(b.cmd, *partials, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
            if (level == 0) vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, combine->pipeline);
            const std::uint64_t count = level + 1;
            std::memcpy(launch.push.data() + 8, &count, 8);
            vkCmdPushConstants(b.cmd, combine->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               static_cast<std::uint32_t>(launch.push.size()), launch.push.data());
            vkCmdDispatch(b.cmd, launch.combines[level].first, launch.combines[level].second, 1);
        }
        b.end_span(q);
        ++b.dispatches;
    }
    if (partials) b.keep.push_back(partials);
    // Precise barriers: later dispatches and copies read exactly these outputs.
    for (auto& o : outs)
        buffer_barrier(b.cmd, *o, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    finish_outputs(b, s, args, outs);
}

void VulkanBackend::finish_outputs(Batch& b, Submission& s, std::shared_ptr<DeviceArray> args,
                                   const std::vector<std::shared_ptr<DeviceArray>>& outs) {
    Batch::Item item{std::move(s.done), s.region, std::move(args), {}, {}, std::move(s.measured)};
    for (std::size_t j = 0; j < outs.size(); ++j) {
        if (j >= s.wanted_on_host.size() || !s.wanted_on_host[j]) continue;
        auto rb = readback_heap_->allocate(outs[j]->bytes());
        VkBufferCopy region{outs[j]->offset(), rb->offset(), outs[j]->bytes()};
        if (outs[j]->bytes() >= kQueueCopyBytes) {
            // After the batch, on the copy queue: it overlaps the next batch's compute.
            if (!b.readback) b.readback = open_copy(Span::download);
            vkCmdCopyBuffer(b.readback->cmd, outs[j]->buffer(), rb->buffer(), 1, &region);
            b.readback->bytes += outs[j]->bytes();
        } else {
            const int q = b.begin_span(Span::download, s.region);
            vkCmdCopyBuffer(b.cmd, outs[j]->buffer(), rb->buffer(), 1, &region);
            b.end_span(q);
        }
        item.readbacks.emplace_back(rb, s.outputs[j]);
    }
    b.items.push_back(std::move(item));
    {
        std::lock_guard slock(stats_mutex_);
        ++stats_.dispatches;
    }
    submit_if_due_locked();
}

void VulkanBackend::flush() {
    std::lock_guard lock(record_mutex_);
    early_dispatches_ = kEarlySubmitDispatches;
    submit_locked();
}

void VulkanBackend::submit_locked() {
    if (!open_) return;
    std::unique_ptr<Batch> b = std::move(open_);
    // Results, error flags and readbacks become visible to the host.
    barrier(b->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    bool submitted = false;
    try {
        check(vkEndCommandBuffer(b->cmd), "vkEndCommandBuffer");
        // A batch after a failed upload would wait forever for it.
        if (lost_) throw DeviceLost("vulkan: the device was lost; the batch was not submitted");
        if (options_.test_fault == "submit_failed" && !fault_fired_.exchange(true))
            throw DeviceLost("injected fault (Config::test_fault = submit_failed): vkQueueSubmit: VK_ERROR_DEVICE_LOST");
        const bool waits = b->upload_wait > 0;
        const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
        VkSemaphore wait = upload_timeline_.get(), signal = timeline_.get();
        VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, nullptr, waits ? 1u : 0u,
                                         &b->upload_wait, 1, &b->signal};
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &ti, waits ? 1u : 0u, &wait, &stage, 1, &b->cmd, 1, &signal};
        {
            std::lock_guard qlock(queue_mutex_);
            check(vkQueueSubmit(context_->compute_queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
        }
        submitted = true;
        if (b->readback) {
            b->readback->signal = ++download_value_;
            submit_copy(*b->readback, timeline_.get(), b->signal, download_timeline_.get());
        }
    } catch (...) {
        b->error = std::current_exception();
        lost_ = true;
    }
    {
        std::lock_guard slock(stats_mutex_);
        ++stats_.batches;
    }
    // A batch that was not submitted goes to the completion thread too, which fails its work:
    // done() must not run here, under record_mutex_ (it may flush, which takes that lock).
    b->submitted = submitted;
    unfinished_batches_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard dlock(done_mutex_);
        in_flight_.push_back(std::move(b));
    }
    done_cv_.notify_one();
}

void VulkanBackend::submit_if_due_locked() {
    if (!open_) return;
    // Full; or the device is idle and has a few dispatches waiting: while the host records the rest
    // of a long program (W5's 200 small regions), the device runs its start.
    // The early size doubles with each early submission until a flush (a long program's batches
    // grow 4, 8, 16, ... rather than being all small, each a submission and a completion).
    if (open_->dispatches >= kMaxDispatchesPerBatch) return submit_locked();
    if (open_->dispatches >= early_dispatches_ && unfinished_batches_.load(std::memory_order_relaxed) == 0) {
        early_dispatches_ = std::min(2 * early_dispatches_, kMaxDispatchesPerBatch);
        submit_locked();
    }
}

void VulkanBackend::complete_loop() {
    for (;;) {
        std::unique_ptr<Batch> b;
        {
            std::unique_lock lock(done_mutex_);
            done_cv_.wait(lock, [&] { return stopping_ || !in_flight_.empty(); });
            if (in_flight_.empty()) return;
            b = std::move(in_flight_.front());
            in_flight_.pop_front();
        }
        // A batch whose readback was never submitted (b->error) waits for its compute only; one
        // never submitted waits for nothing.
        const bool readback = b->readback && !b->error;
        VkResult res = !b->submitted ? VK_SUCCESS : wait_all(context_->device(),
                                {{timeline_.get(), b->signal},
                                 {readback ? download_timeline_.get() : VK_NULL_HANDLE, readback ? b->readback->signal : 0}},
                                completion_spin_);
        unfinished_batches_.fetch_sub(1, std::memory_order_relaxed);
        std::exception_ptr error = b->error;
        if (!error && res != VK_SUCCESS) {
            try {
                check(res, "vkWaitSemaphores");
            } catch (...) {
                error = std::current_exception();
            }
            lost_ = true;
        }
        if (!error && !fault_fired_ &&
            (options_.test_fault == "device_lost" ||
             (lost_after_batches_ > 0 && b->submitted && ++fault_countdown_ == lost_after_batches_))) {
            fault_fired_ = true;
            lost_ = true;
            error = std::make_exception_ptr(DeviceLost("injected fault (Config::test_fault = " + options_.test_fault +
                                                       "): VK_ERROR_DEVICE_LOST"));
        }
        const DeviceDescription& d = context_->description();
        std::unordered_map<const Region*, double> region_ms;  // each region's kernels
        if (!error && b->queries && !b->spans.empty()) {
            std::vector<std::uint64_t> ts(2 * b->spans.size());
            if (vkGetQueryPoolResults(context_->device(), b->queries.get(), 0, static_cast<std::uint32_t>(ts.size()),
                                      ts.size() * sizeof(std::uint64_t), ts.data(), sizeof(std::uint64_t),
                                      VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
                double ms[3] = {0, 0, 0};
                for (std::size_t i = 0; i < b->spans.size(); ++i) {
                    const double span_ms = ms_between(ts[2 * i], ts[2 * i + 1], d.timestamp_valid_bits, d);
                    ms[static_cast<int>(b->spans[i])] += span_ms;
                    if (b->spans[i] == Span::kernel && b->span_regions[i]) region_ms[b->span_regions[i]] += span_ms;
                }
                for (Span k : {Span::kernel, Span::upload, Span::download}) add_time(k, ms[static_cast<int>(k)]);
                std::lock_guard slock(stats_mutex_);
                stats_.kernel_timed_regions += region_ms.size();
                if (options_.log_gpu) log_spans(*b, ts);
            }
        }
        for (auto& item : b->items) {
            std::exception_ptr e = error;
            if (!e) {
                try {
                    if (item.args) check_error(*item.region, item.args->mapped());
                    if (item.check) item.check();
                    for (auto& [rb, value] : item.readbacks) {
                        rb->invalidate();
                        auto host = options_.pool->allocate(value->bytes(), "download");
                        copy_bytes(host->data(), rb->mapped(), value->bytes());
                        value->set_host(std::move(host));
                        std::lock_guard slock(stats_mutex_);
                        stats_.download_bytes += value->bytes();
                    }
                } catch (...) {
                    e = std::current_exception();
                }
            }
            if (!e && item.measured)
                if (auto it = region_ms.find(item.region); it != region_ms.end()) item.measured(1e-3 * it->second);
            item.done(e);
        }
        if (!b->submitted) {
            // Its uploads were submitted and may still run (on a device that failed): they keep
            // what they read until the backend is destroyed, after vkDeviceWaitIdle.
            std::lock_guard lock(record_mutex_);
            free_cmds_.push_back(b->cmd);
            if (b->readback) recycle_copy_locked(*b->readback);
            b->readback.reset();
            orphans_.push_back(std::move(b));
            continue;
        }
        for (auto& job : b->uploads) retire_copy(std::move(job));
        if (!b->error) retire_copy(std::move(b->readback));
        std::lock_guard lock(record_mutex_);
        if (b->readback) recycle_copy_locked(*b->readback);  // never submitted
        vkResetCommandBuffer(b->cmd, 0);
        free_cmds_.push_back(b->cmd);
        if (b->queries) {
            if (context_->description().host_query_reset && !b->spans.empty())
                vkResetQueryPool(context_->device(), b->queries.get(), 0, static_cast<std::uint32_t>(2 * b->spans.size()));
            free_queries_.push_back(std::move(b->queries));
        }
    }
}

std::shared_ptr<DeviceCopy> VulkanBackend::window(const Value& v, std::size_t offset, std::size_t bytes) const {
    auto d = v.device(ordinal());
    if (!d || lost_ || offset % kWindowAlignment != 0) return nullptr;
    const auto& copy = static_cast<const Copy&>(*d);
    return std::make_shared<Copy>(context_, DeviceArray::window(copy.array, offset, bytes), copy.ready_at, copy.uploaded_at);
}

void VulkanBackend::download(Value& v) {
    if (v.host()) return;
    auto d = v.device(ordinal());
    if (!d) throw Error("vulkan: download of a value with no device copy (scheduler bug)");
    if (lost_) throw DeviceLost("vulkan: the device was lost; a value that lived only there is gone");
    if (options_.test_fault == "device_lost_in_download" && !fault_fired_.exchange(true)) {
        lost_ = true;
        throw DeviceLost("injected fault (Config::test_fault = device_lost_in_download): VK_ERROR_DEVICE_LOST");
    }
    const auto& copy = static_cast<Copy&>(*d);
    const auto& arr = copy.array;
    auto rb = readback_heap_->allocate(arr->bytes());
    std::unique_ptr<CopyJob> job;
    {
        std::lock_guard lock(record_mutex_);
        // The batch that writes it must be submitted before a copy can wait for it.
        if (open_ && copy.ready_at >= open_->signal) submit_locked();
        job = open_copy(Span::download);
        VkBufferCopy region{arr->offset(), rb->offset(), arr->bytes()};
        vkCmdCopyBuffer(job->cmd, arr->buffer(), rb->buffer(), 1, &region);
        job->bytes = arr->bytes();
        job->signal = ++download_value_;
        try {
            submit_copy(*job, timeline_.get(), copy.ready_at, download_timeline_.get());
        } catch (...) {
            lost_ = true;
            recycle_copy_locked(*job);
            throw;
        }
    }
    const VkResult res = wait_all(context_->device(), {{download_timeline_.get(), job->signal}}, completion_spin_);
    if (res != VK_SUCCESS) {
        lost_ = true;
        check(res, "vkWaitSemaphores (download)");
    }
    retire_copy(std::move(job));
    rb->invalidate();
    auto host = options_.pool->allocate(v.bytes(), "download");
    copy_bytes(host->data(), rb->mapped(), v.bytes());
    v.set_host(std::move(host));
    std::lock_guard slock(stats_mutex_);
    stats_.download_bytes += v.bytes();
}

std::uint64_t VulkanBackend::memory_budget() const {
    // Headroom for what is not an array: staging, reduction partials, pipelines, the driver's own.
    if (const std::uint64_t b = context_->device_heap_budget()) return b / 10 * 9;
    return context_->device_heap_bytes() / 10 * 8;
}

void VulkanBackend::set_activity_sink(ActivitySink sink) {
    activity_ = std::move(sink);
    if (!activity_) return pipelines_->set_build_observer({});
    pipelines_->set_build_observer([this](auto start, auto end, bool from_disk) {
        Activity a;
        a.kind = Activity::Kind::compile;
        a.start = start;
        a.end = end;
        a.from_disk = from_disk;
        activity_(a);
    });
}

void VulkanBackend::add_metrics(Metrics& m) const {
    // Added to: a runtime with several devices sums them.
    const DeviceStats d = stats();
    m.device_dispatches += d.dispatches;
    m.device_batches += d.batches;
    m.upload_bytes += d.upload_bytes;
    m.download_bytes += d.download_bytes;
    m.kernel_ms += d.kernel_ms;
    m.kernel_timed_regions += d.kernel_timed_regions;
    m.upload_ms += d.upload_ms;
    m.download_ms += d.download_ms;
    m.copy_queue_submits += d.copy_queue_submits;
    const PipelineCacheStats p = pipeline_stats();
    m.pipeline_hits += p.hits;
    m.pipeline_disk_hits += p.disk_hits;
    m.pipeline_misses += p.misses;
    m.pipeline_compile_ms += p.compile_ms;
    m.pipelines_built_ahead += kernels_->prepared();
    m.kernels_formed += kernels_->forms();
    m.validation_messages += context_->validation_messages();
}

int VulkanBackend::system_index() const noexcept { return static_cast<int>(context_->description().index); }

std::string VulkanBackend::kernel_cache_text() const {
    const PipelineCacheStats p = pipeline_stats();
    return (p.directory.empty() ? std::string("in memory") : p.directory) + ": " + std::to_string(p.hits) + " hits, " +
           std::to_string(p.disk_hits) + " disk hits, " + std::to_string(p.misses) + " compiled (" +
           std::to_string(p.compile_ms) + " ms)";
}

DeviceStats VulkanBackend::stats() const {
    std::lock_guard lock(stats_mutex_);
    return stats_;
}

}  // namespace tandem::detail::vk
