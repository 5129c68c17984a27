#include "backends/vulkan/vulkan_backend.hpp"

#include <algorithm>
#include <cstring>

#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/compiler.hpp"

namespace tandem::detail::vk {

namespace {
constexpr std::uint32_t kMaxDispatchesPerBatch = 64;
constexpr VkDeviceSize kBlockBytes = VkDeviceSize{256} << 20;

void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage,
             VkAccessFlags dst) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src, dst};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void buffer_barrier(VkCommandBuffer cmd, const DeviceArray& a, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
    VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER, nullptr, src, dst, VK_QUEUE_FAMILY_IGNORED,
                            VK_QUEUE_FAMILY_IGNORED, a.buffer(), a.offset(), a.bytes()};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, nullptr, 1, &b, 0, nullptr);
}
/// What decides the generated kernel: the ops and types of the program, where each argument
/// comes from, how each input is read, and whether 32-bit indices suffice. Not the sizes and not
/// the scalar values: those are arguments. Far cheaper to form than the GLSL itself.
std::string signature(const Region& r, const std::vector<InputAccess>& access, const std::vector<int>& dims) {
    std::string s;
    s.reserve(16 * r.program.size() + 8 * r.inputs.size() + 16);
    auto put = [&](std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(r.shape.numel() < (std::int64_t{1} << 31));
    for (auto& in : r.inputs) put(static_cast<std::uint64_t>(in->dtype));
    for (std::size_t k = 0; k < access.size(); ++k) put(static_cast<std::uint64_t>(access[k]) << 32 | static_cast<std::uint32_t>(dims[k]));
    for (const Instr& ins : r.program) {
        put(static_cast<std::uint64_t>(ins.op) | static_cast<std::uint64_t>(ins.dtype) << 8 |
            static_cast<std::uint64_t>(ins.compute) << 16);
        for (int k = 0; k < op_info(ins.op).arity; ++k) {
            const Arg& a = ins.args[static_cast<std::size_t>(k)];
            put(static_cast<std::uint64_t>(a.kind) | static_cast<std::uint64_t>(a.dtype) << 8 |
                static_cast<std::uint64_t>(a.kind == Arg::Kind::Scalar ? 0 : a.index) << 16);
        }
    }
    for (auto& o : r.outputs) put(o.value | static_cast<std::uint64_t>(o.node->dtype) << 32);
    return s;
}

}  // namespace

/// A value's device copy made by this backend.
/// A value's device copy made by this backend. It keeps the device alive: a value may outlive
/// the runtime that computed it (members are destroyed last to first: the array, then the
/// context).
struct VulkanBackend::Copy final : DeviceCopy {
    Copy(std::shared_ptr<Context> c, std::shared_ptr<DeviceArray> a) : context(std::move(c)), array(std::move(a)) {}
    std::shared_ptr<Context> context;
    std::shared_ptr<DeviceArray> array;
};

struct VulkanBackend::Batch {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    QueryPool queries;
    std::uint32_t dispatches = 0;
    std::uint64_t signal = 0;
    struct Item {
        std::function<void(std::exception_ptr)> done;
        const Region* region;
        std::shared_ptr<DeviceArray> args;
        std::vector<std::pair<std::shared_ptr<DeviceArray>, std::shared_ptr<Value>>> readbacks;
    };
    std::vector<Item> items;
    std::vector<std::shared_ptr<void>> keep;  // staging and arrays the recorded work reads
};

std::unique_ptr<VulkanBackend> VulkanBackend::create(const VulkanOptions& options) {
    std::unique_ptr<VulkanBackend> b(new VulkanBackend());
    b->options_ = options;
    b->context_ = Context::create(options.context);
    const Context& c = *b->context_;
    b->device_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::device_local, kBlockBytes);
    b->upload_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::upload, VkDeviceSize{64} << 20);
    b->readback_heap_ = std::make_shared<DeviceHeap>(c, DeviceHeap::Kind::readback, VkDeviceSize{64} << 20);
    b->pipelines_ = std::make_unique<PipelineCache>(c, options.pipeline_cache_dir, [](const std::string& m) {
        std::fprintf(stderr, "[tandem] pipeline cache: %s\n", m.c_str());
    });
    b->pipelines_->warm_up();
    const DeviceDescription& d = c.description();
    b->codegen_.max_push_bytes = std::min<std::uint32_t>(d.max_push_constants, 128);
    // NVIDIA: subgroups of 32, lavapipe: 8; a workgroup of several subgroups, a few elements each.
    b->codegen_.workgroup_size = std::min<std::uint32_t>(256, std::max<std::uint32_t>(64, d.max_workgroup_invocations / 4));
    b->codegen_.elements_per_thread = d.type == "cpu" ? 16 : 4;

    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, c.compute_family()};
    VkCommandPool pool = VK_NULL_HANDLE;
    check(vkCreateCommandPool(c.device(), &pci, nullptr, &pool), "vkCreateCommandPool");
    b->pool_ = CommandPool(c.device(), pool);
    VkSemaphoreTypeCreateInfo tci{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr, VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &tci, 0};
    VkSemaphore sem = VK_NULL_HANDLE;
    check(vkCreateSemaphore(c.device(), &sci, nullptr, &sem), "vkCreateSemaphore (timeline)");
    b->timeline_ = Semaphore(c.device(), sem);
    b->completer_ = std::thread([p = b.get()] { p->complete_loop(); });
    return b;
}

VulkanBackend::~VulkanBackend() {
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
    free_cmds_.clear();
}

VulkanBackend::Batch& VulkanBackend::open_batch() {
    if (open_) return *open_;
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
                                 2 * kMaxDispatchesPerBatch, 0};
        VkQueryPool q = VK_NULL_HANDLE;
        check(vkCreateQueryPool(context_->device(), &qi, nullptr, &q), "vkCreateQueryPool");
        b->queries = QueryPool(context_->device(), q);
    }
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
    check(vkBeginCommandBuffer(b->cmd, &bi), "vkBeginCommandBuffer");
    if (b->queries) vkCmdResetQueryPool(b->cmd, b->queries.get(), 0, 2 * kMaxDispatchesPerBatch);
    // Whatever earlier batches wrote is visible to this one (same queue, submission order).
    barrier(b->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
    open_ = std::move(b);
    return *open_;
}

std::shared_ptr<DeviceArray> VulkanBackend::device_copy(Value& v, Batch& b) {
    if (auto d = v.device()) return static_cast<Copy&>(*d).array;
    auto host = v.host();
    if (!host) throw Error("vulkan: an input has neither a host nor a device copy (scheduler bug)");
    const VkDeviceSize bytes = std::max<VkDeviceSize>(v.bytes(), 1);
    auto arr = device_heap_->allocate(bytes);
    auto staging = upload_heap_->allocate(bytes);
    if (v.bytes()) std::memcpy(staging->mapped(), host->data(), v.bytes());
    VkBufferCopy region{staging->offset(), arr->offset(), bytes};
    vkCmdCopyBuffer(b.cmd, staging->buffer(), arr->buffer(), 1, &region);
    buffer_barrier(b.cmd, *arr, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    b.keep.push_back(staging);
    v.set_device(std::make_shared<Copy>(context_, arr));
    std::lock_guard lock(stats_mutex_);
    stats_.upload_bytes += v.bytes();
    return arr;
}

void VulkanBackend::submit(Submission s) {
    const Region& r = *s.region;
    if (lost_) throw DeviceLost("vulkan: the device was lost earlier; no more work is sent to it");
    if (!options_.test_fault.empty() && !fault_fired_) {
        if (options_.test_fault == "compile") {
            fault_fired_ = true;
            throw ShaderCompileError("injected fault (Config::test_fault = compile): the shader did not compile");
        }
        if (options_.test_fault == "oom") {
            fault_fired_ = true;
            throw DeviceOutOfMemory("injected fault (Config::test_fault = oom): out of device memory");
        }
    }
    // Everything that can fail for a reason of its own happens before recording anything.
    std::vector<InputAccess> access;
    std::vector<int> dims;
    access_for(r, access, dims);
    const Kernel* kernel = nullptr;
    const ComputePipeline* pipeline_ptr = nullptr;
    std::string sig = signature(r, access, dims);
    {
        std::lock_guard lock(kernels_mutex_);
        if (auto it = kernels_.find(sig); it != kernels_.end()) {
            kernel = &it->second.first;
            pipeline_ptr = it->second.second;
        }
    }
    if (!kernel) {
        Kernel k = generate(r, access, dims, codegen_);
        const ComputePipeline& p = pipelines_->get(k);
        std::lock_guard lock(kernels_mutex_);
        auto [it, fresh] = kernels_.try_emplace(std::move(sig), std::move(k), &p);
        kernel = &it->second.first;
        pipeline_ptr = it->second.second;
    }
    const ComputePipeline& pipeline = *pipeline_ptr;
    std::vector<std::shared_ptr<DeviceArray>> outs;
    for (std::size_t j = 0; j < r.outputs.size(); ++j)
        outs.push_back(device_heap_->allocate(std::max<VkDeviceSize>(s.outputs[j]->bytes(), 1)));
    std::size_t arg_bound = kArgHeaderBytes + 8 * (r.inputs.size() + r.outputs.size()) + 8 * r.program.size() * 3;
    for (int d : dims) arg_bound += 16 * static_cast<std::size_t>(std::max(d, 0));
    auto args = upload_heap_->allocate(arg_bound);

    std::lock_guard lock(record_mutex_);
    Batch& b = open_batch();
    std::vector<std::uint64_t> in_addr, out_addr;
    for (auto& v : s.inputs) {
        auto arr = device_copy(*v, b);
        in_addr.push_back(arr->address());
        b.keep.push_back(arr);
    }
    for (std::size_t j = 0; j < outs.size(); ++j) {
        out_addr.push_back(outs[j]->address());
        s.outputs[j]->set_device(std::make_shared<Copy>(context_, outs[j]));
    }
    Launch launch = pack_arguments(r, *kernel, in_addr, out_addr, args->address(), 65535);
    if (launch.args.size() > arg_bound) throw Error("vulkan: argument block larger than reserved (bug)");
    std::memcpy(args->mapped(), launch.args.data(), launch.args.size());

    if (r.shape.numel() > 0 && launch.groups_x > 0) {
        const std::uint32_t q = 2 * b.dispatches;
        if (b.queries) vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, b.queries.get(), q);
        vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
        vkCmdPushConstants(b.cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<std::uint32_t>(launch.push.size()), launch.push.data());
        vkCmdDispatch(b.cmd, launch.groups_x, launch.groups_y, 1);
        if (b.queries) vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b.queries.get(), q + 1);
        ++b.dispatches;
    }
    // Precise barriers: later dispatches and copies read exactly these outputs.
    for (auto& o : outs)
        buffer_barrier(b.cmd, *o, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    Batch::Item item{std::move(s.done), &r, args, {}};
    for (std::size_t j = 0; j < outs.size(); ++j) {
        if (j >= s.wanted_on_host.size() || !s.wanted_on_host[j]) continue;
        auto rb = readback_heap_->allocate(outs[j]->bytes());
        VkBufferCopy region{outs[j]->offset(), rb->offset(), outs[j]->bytes()};
        vkCmdCopyBuffer(b.cmd, outs[j]->buffer(), rb->buffer(), 1, &region);
        item.readbacks.emplace_back(rb, s.outputs[j]);
    }
    b.items.push_back(std::move(item));
    {
        std::lock_guard slock(stats_mutex_);
        ++stats_.dispatches;
    }
    if (b.dispatches >= kMaxDispatchesPerBatch) submit_locked();
}

void VulkanBackend::flush() {
    std::lock_guard lock(record_mutex_);
    submit_locked();
}

void VulkanBackend::submit_locked() {
    if (!open_) return;
    std::unique_ptr<Batch> b = std::move(open_);
    // Results, error flags and readbacks become visible to the host.
    barrier(b->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    std::exception_ptr error;
    try {
        check(vkEndCommandBuffer(b->cmd), "vkEndCommandBuffer");
        b->signal = ++timeline_value_;
        VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, nullptr, 0, nullptr, 1,
                                         &b->signal};
        VkSemaphore sem = timeline_.get();
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &ti, 0, nullptr, nullptr, 1, &b->cmd, 1, &sem};
        std::lock_guard qlock(queue_mutex_);
        check(vkQueueSubmit(context_->compute_queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    } catch (...) {
        error = std::current_exception();
        lost_ = true;
    }
    {
        std::lock_guard slock(stats_mutex_);
        ++stats_.batches;
    }
    if (error) {
        // Nothing will signal this batch: finish its work as failed, here.
        for (auto& item : b->items) item.done(error);
        free_cmds_.push_back(b->cmd);
        return;
    }
    {
        std::lock_guard dlock(done_mutex_);
        in_flight_.push_back(std::move(b));
    }
    done_cv_.notify_one();
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
        VkSemaphore sem = timeline_.get();
        VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &sem, &b->signal};
        VkResult res = VK_TIMEOUT;
        while (res == VK_TIMEOUT) res = vkWaitSemaphores(context_->device(), &wi, 1'000'000'000ull);
        std::exception_ptr error;
        if (res != VK_SUCCESS) {
            try {
                check(res, "vkWaitSemaphores");
            } catch (...) {
                error = std::current_exception();
            }
            lost_ = true;
        }
        if (!error && options_.test_fault == "device_lost" && !fault_fired_) {
            fault_fired_ = true;
            lost_ = true;
            error = std::make_exception_ptr(
                DeviceLost("injected fault (Config::test_fault = device_lost): VK_ERROR_DEVICE_LOST"));
        }
        if (!error && b->queries && b->dispatches > 0) {
            std::vector<std::uint64_t> ts(2 * b->dispatches);
            if (vkGetQueryPoolResults(context_->device(), b->queries.get(), 0, 2 * b->dispatches,
                                      ts.size() * sizeof(std::uint64_t), ts.data(), sizeof(std::uint64_t),
                                      VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
                double ns = 0;
                for (std::uint32_t i = 0; i < b->dispatches; ++i)
                    ns += static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * context_->description().timestamp_period_ns;
                std::lock_guard slock(stats_mutex_);
                stats_.kernel_ms += ns / 1e6;
            }
        }
        for (auto& item : b->items) {
            std::exception_ptr e = error;
            if (!e) {
                try {
                    check_error(*item.region, item.args->mapped());
                    for (auto& [rb, value] : item.readbacks) {
                        auto host = options_.pool->allocate(value->bytes(), "download");
                        if (value->bytes()) std::memcpy(host->data(), rb->mapped(), value->bytes());
                        value->set_host(std::move(host));
                        std::lock_guard slock(stats_mutex_);
                        stats_.download_bytes += value->bytes();
                    }
                } catch (...) {
                    e = std::current_exception();
                }
            }
            item.done(e);
        }
        std::lock_guard lock(record_mutex_);
        vkResetCommandBuffer(b->cmd, 0);
        free_cmds_.push_back(b->cmd);
        if (b->queries) free_queries_.push_back(std::move(b->queries));
    }
}

void VulkanBackend::download(Value& v) {
    if (v.host()) return;
    auto d = v.device();
    if (!d) throw Error("vulkan: download of a value with no device copy (scheduler bug)");
    if (lost_) throw DeviceLost("vulkan: the device was lost; a value that lived only there is gone");
    const auto& arr = static_cast<Copy&>(*d).array;
    flush();  // the work that produces it must be submitted before the copy
    auto rb = readback_heap_->allocate(arr->bytes());
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    {
        std::lock_guard lock(record_mutex_);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool_.get(),
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        check(vkAllocateCommandBuffers(context_->device(), &ai, &cmd), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
        VkBufferCopy region{arr->offset(), rb->offset(), arr->bytes()};
        vkCmdCopyBuffer(cmd, arr->buffer(), rb->buffer(), 1, &region);
        barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    }
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
    VkFence f = VK_NULL_HANDLE;
    check(vkCreateFence(context_->device(), &fi, nullptr, &f), "vkCreateFence");
    Fence fence(context_->device(), f);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd, 0, nullptr};
    {
        std::lock_guard qlock(queue_mutex_);
        check(vkQueueSubmit(context_->compute_queue(), 1, &si, fence.get()), "vkQueueSubmit (download)");
    }
    check(vkWaitForFences(context_->device(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences (download)");
    {
        std::lock_guard lock(record_mutex_);
        vkFreeCommandBuffers(context_->device(), pool_.get(), 1, &cmd);
    }
    auto host = options_.pool->allocate(v.bytes(), "download");
    if (v.bytes()) std::memcpy(host->data(), rb->mapped(), v.bytes());
    v.set_host(std::move(host));
    std::lock_guard slock(stats_mutex_);
    stats_.download_bytes += v.bytes();
}

DeviceStats VulkanBackend::stats() const {
    std::lock_guard lock(stats_mutex_);
    return stats_;
}

}  // namespace tandem::detail::vk
