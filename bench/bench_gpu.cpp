// tandem-gpu-bench: the GPU measurements of the Vulkan backend issue, on whatever Vulkan device
// Config::device = "vulkan" opens (the H100 on the GPU machine, lavapipe here).
//
//   a. bandwidth: for fp32 and fp64 over 2^log2n elements, with inputs made and kept on the
//      device, `c = a + b`, `a.*b + sin(a)*0.5 + b` and the 8-op chain
//      `exp(-(sin(x).*x).^2) ./ (1 + abs(x))`, timed as wall time around evaluate(...).get()
//      (nothing is downloaded) and as GPU time (Metrics::kernel_ms deltas); against two device
//      copies measured in the same process: Tandem's copy-like kernel `a * 1.0` and a raw
//      vkCmdCopyBuffer between two device-local buffers (on a second VkDevice of the same GPU,
//      opened through Tandem's internal vk::Context).
//   b. pipeline creation: the first evaluate of a never-seen expression in this process; with an
//      empty --cache-dir it is cold (glslang + vkCreateComputePipelines), in a second process
//      with the same directory it is warm (from the disk cache). bench/run-gpu.sh runs both.
//   c. latency: gather().get() of a 100-op elementwise chain over 1000 elements (one fused region,
//      downloaded), median of 100; against a raw vkQueueSubmit + vkWaitForFences round trip of an
//      empty command buffer and of one tiny dispatch (1 workgroup of 1 thread).
//   e. reductions: sum of 2^log2n fp32 along dimension 1, 2, all, and sum(A .* B, 2) (--only reduce);
//      with them transpose, randn, N-D permutes, a gather of n/4 random elements, their indexed
//      assignment and find (bytes counted: what a minimal kernel moves).
//   f. command groups (--only kernel): an empty one submitted and waited for, and 10000 submitted
//      then waited for once, against raw vkQueueSubmit of one tiny dispatch (waited for each time,
//      and 10000 submitted then waited for once).
//   d. host <-> device copies of up to 256 MiB (the copy queue): upload and download time (wall and
//      Metrics::upload_ms / download_ms), and 4 upload -> compute -> readback jobs launched together
//      against one (the overlap).
//
// Every result is checked before it is timed (a small size against a double-precision CPU
// reference). Output: one JSON object per line (stdout), then a readable table.
//
// Usage: tandem-gpu-bench [--log2n N] [--cache-dir DIR|none] [--only pipeline|reduce|kernel|all]
//                         [--reps R] [--warmup W] [--latency-reps L] [--label TEXT]
// Exit status: 0 done, 1 a check failed, 2 bad usage or no device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "tandem/tandem.hpp"

namespace vk = tandem::detail::vk;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    int log2n = 28;
    std::string cache_dir = "none";
    std::string only = "all";
    std::string label;
    int reps = 10, warmup = 2, latency_reps = 100;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double min_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

std::vector<json> g_results;  // every object emitted, for the closing table

void emit(const json& j) {
    g_results.push_back(j);
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) {
    emit({{"kind", "error"}, {"what", what}});
    std::fprintf(stderr, "tandem-gpu-bench: %s\n", what.c_str());
    std::exit(1);
}

// ---- the expressions -----------------------------------------------------------------------

struct Expr {
    const char* name;
    const char* text;
    int arrays;  // arrays counted for the bandwidth: inputs read + the output written
    std::function<tandem::Array(const tandem::Array&, const tandem::Array&)> build;
    std::function<double(double, double)> reference;
};

std::vector<Expr> expressions() {
    using namespace tandem;
    return {
        {"add", "c = a + b", 3, [](const Array& a, const Array& b) { return a + b; },
         [](double a, double b) { return a + b; }},
        {"chain4", "a.*b + sin(a)*0.5 + b", 3,
         [](const Array& a, const Array& b) { return a * b + tandem::sin(a) * 0.5 + b; },
         [](double a, double b) { return a * b + std::sin(a) * 0.5 + b; }},
        {"chain8", "exp(-(sin(x).*x).^2) ./ (1 + abs(x)), x = a", 2,
         [](const Array& x, const Array&) {
             return tandem::exp(-tandem::power(tandem::sin(x) * x, 2.0)) / (1.0 + tandem::abs(x));
         },
         [](double x, double) {
             const double s = std::sin(x) * x;
             return std::exp(-(s * s)) / (1.0 + std::fabs(x));
         }},
        {"copy_tandem", "c = a * 1.0 (Tandem's copy-like kernel)", 2,
         [](const Array& a, const Array&) { return a * 1.0; }, [](double a, double) { return a; }},
    };
}

// Inputs made on the device: a = linspace(-10, 10, n), b = linspace(3, -7, n), as single or double.
std::pair<tandem::Array, tandem::Array> inputs(tandem::Runtime& rt, std::int64_t n, tandem::DType t) {
    tandem::Array a = rt.linspace(-10.0, 10.0, n), b = rt.linspace(3.0, -7.0, n);
    if (t == tandem::DType::f32) {
        a = tandem::single(a);
        b = tandem::single(b);
    }
    return {a, b};
}

const char* dt_name(tandem::DType t) { return t == tandem::DType::f32 ? "fp32" : "fp64"; }

// Checks each expression on the device against a double CPU reference computed from the
// device's own inputs (gathered), at a small size.
void check_expressions(tandem::Runtime& rt, tandem::DType t) {
    const std::int64_t n = 65536 + 17;  // not a multiple of the workgroup's elements: the tail is covered too
    auto [a, b] = inputs(rt, n, t);
    auto host = rt.gather({a, b}).get();
    for (const Expr& e : expressions()) {
        tandem::HostArray got = e.build(a, b).gather().get();
        double worst = 0, scale = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            double x, y, g;
            if (t == tandem::DType::f32) {
                x = host[0].data<float>()[i];
                y = host[1].data<float>()[i];
                g = got.data<float>()[i];
            } else {
                x = host[0].data<double>()[i];
                y = host[1].data<double>()[i];
                g = got.data<double>()[i];
            }
            const double want = e.reference(x, y);
            worst = std::max(worst, std::fabs(g - want));
            scale = std::max(scale, std::fabs(want));
        }
        const double rel = worst / std::max(scale, 1e-300);
        const double limit = t == tandem::DType::f32 ? 2e-6 : 1e-13;
        emit({{"kind", "check"}, {"dtype", dt_name(t)}, {"expr", e.name}, {"n", n}, {"max_norm_rel_diff", rel},
              {"limit", limit}, {"pass", rel <= limit}});
        if (!(rel <= limit))
            fail(std::string("check failed: ") + e.name + " " + dt_name(t) + ": max-norm relative difference " +
                 std::to_string(rel) + " > " + std::to_string(limit));
    }
}

// ---- raw Vulkan baselines on a second VkDevice of the same GPU -------------------------------

class Raw {
public:
    Raw() {
        vk::ContextOptions o;
        o.device = "vulkan";
        ctx_ = vk::Context::create(o);
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, ctx_->compute_family()};
        VkCommandPool pool = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(dev(), &pci, nullptr, &pool), "vkCreateCommandPool");
        pool_ = vk::CommandPool(dev(), pool);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool_.get(),
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        vk::check(vkAllocateCommandBuffers(dev(), &ai, &cmd_), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
        VkFence f = VK_NULL_HANDLE;
        vk::check(vkCreateFence(dev(), &fi, nullptr, &f), "vkCreateFence");
        fence_ = vk::Fence(dev(), f);
        if (ctx_->description().timestamp_period_ns > 0) {
            VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP, 2, 0};
            VkQueryPool q = VK_NULL_HANDLE;
            vk::check(vkCreateQueryPool(dev(), &qi, nullptr, &q), "vkCreateQueryPool");
            queries_ = vk::QueryPool(dev(), q);
        }
    }
    ~Raw() {
        if (ctx_) vkDeviceWaitIdle(dev());
        pipeline_.reset();
        layout_.reset();
        copy_pipeline_.reset();
        copy_layout_.reset();
    }
    VkDevice dev() const { return ctx_->device(); }
    const vk::Context& context() const { return *ctx_; }

    // Records `body` into the command buffer (between two timestamps when `timed`).
    // (simultaneous: the buffer may be pending several times at once, for submit_many.)
    void record(const std::function<void(VkCommandBuffer)>& body, bool timed, bool simultaneous = false) {
        vk::check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                    simultaneous ? VkCommandBufferUsageFlags{VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT} : 0u,
                                    nullptr};
        vk::check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
        timed_ = timed && queries_;
        if (timed_) {
            vkCmdResetQueryPool(cmd_, queries_.get(), 0, 2);
            vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_.get(), 0);
        }
        body(cmd_);
        if (timed_) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 1);
        vk::check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    }
    // Submits the recorded command buffer and waits on its fence; returns wall ms, and the GPU ms
    // between the timestamps in *gpu_ms (NaN when untimed).
    double submit_wait(double* gpu_ms = nullptr) {
        VkFence f = fence_.get();
        vk::check(vkResetFences(dev(), 1, &f), "vkResetFences");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd_, 0, nullptr};
        const auto t0 = Clock::now();
        vk::check(vkQueueSubmit(ctx_->compute_queue(), 1, &si, f), "vkQueueSubmit");
        vk::check(vkWaitForFences(dev(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        const double wall = ms_since(t0);
        if (gpu_ms) {
            *gpu_ms = NAN;
            std::uint64_t ts[2] = {0, 0};
            if (timed_ && vkGetQueryPoolResults(dev(), queries_.get(), 0, 2, sizeof ts, ts, sizeof ts[0],
                                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
                const auto bits = ctx_->description().timestamp_valid_bits;
                const std::uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
                *gpu_ms = static_cast<double>((ts[1] - ts[0]) & mask) * ctx_->description().timestamp_period_ns / 1e6;
            }
        }
        return wall;
    }
    // Submits the recorded command buffer (recorded simultaneous) `count` times, one vkQueueSubmit
    // each, then waits for the queue; returns wall ms.
    double submit_many(int count) {
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd_, 0, nullptr};
        const auto t0 = Clock::now();
        for (int i = 0; i < count; ++i) vk::check(vkQueueSubmit(ctx_->compute_queue(), 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
        vk::check(vkQueueWaitIdle(ctx_->compute_queue()), "vkQueueWaitIdle");
        return ms_since(t0);
    }
    // A pipeline whose shader does nothing (local size 1), for the tiny-dispatch round trip.
    VkPipeline tiny_pipeline() {
        if (pipeline_) return pipeline_.get();
        auto spirv = vk::compile_compute_shader("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
        VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0,
                                    spirv.size() * sizeof(std::uint32_t), spirv.data()};
        VkShaderModule m = VK_NULL_HANDLE;
        vk::check(vkCreateShaderModule(dev(), &mi, nullptr, &m), "vkCreateShaderModule");
        vk::ShaderModule module(dev(), m);
        VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, nullptr, 0, 0, nullptr, 0, nullptr};
        VkPipelineLayout l = VK_NULL_HANDLE;
        vk::check(vkCreatePipelineLayout(dev(), &li, nullptr, &l), "vkCreatePipelineLayout");
        layout_ = vk::PipelineLayout(dev(), l);
        VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, nullptr, 0,
                                       {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0,
                                        VK_SHADER_STAGE_COMPUTE_BIT, m, "main", nullptr},
                                       l, VK_NULL_HANDLE, -1};
        VkPipeline p = VK_NULL_HANDLE;
        vk::check(vkCreateComputePipelines(dev(), VK_NULL_HANDLE, 1, &ci, nullptr, &p), "vkCreateComputePipelines");
        pipeline_ = vk::Pipeline(dev(), p);
        return p;
    }

    // A hand-written copy kernel (uvec4 loads and stores through buffer device addresses, a
    // grid-stride loop): the compute-shader copy bandwidth, next to vkCmdCopyBuffer's.
    void record_shader_copy(const vk::DeviceArray& src, const vk::DeviceArray& dst, VkDeviceSize bytes) {
        if (!copy_pipeline_) {
            auto spirv = vk::compile_compute_shader(R"(#version 450
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 { uvec4 v[]; };
layout(push_constant) uniform P { V4 src; V4 dst; uint count; } p;
void main() {
    uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) p.dst.v[i] = p.src.v[i];
}
)");
            VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0,
                                        spirv.size() * sizeof(std::uint32_t), spirv.data()};
            VkShaderModule m = VK_NULL_HANDLE;
            vk::check(vkCreateShaderModule(dev(), &mi, nullptr, &m), "vkCreateShaderModule");
            vk::ShaderModule module(dev(), m);
            VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 24};
            VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, nullptr, 0, 0, nullptr, 1, &range};
            VkPipelineLayout l = VK_NULL_HANDLE;
            vk::check(vkCreatePipelineLayout(dev(), &li, nullptr, &l), "vkCreatePipelineLayout");
            copy_layout_ = vk::PipelineLayout(dev(), l);
            VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, nullptr, 0,
                                           {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0,
                                            VK_SHADER_STAGE_COMPUTE_BIT, m, "main", nullptr},
                                           l, VK_NULL_HANDLE, -1};
            VkPipeline pl = VK_NULL_HANDLE;
            vk::check(vkCreateComputePipelines(dev(), VK_NULL_HANDLE, 1, &ci, nullptr, &pl), "vkCreateComputePipelines");
            copy_pipeline_ = vk::Pipeline(dev(), pl);
        }
        struct {
            std::uint64_t src, dst;
            std::uint32_t count, pad;
        } push{src.address(), dst.address(), static_cast<std::uint32_t>(bytes / 16), 0};
        const std::uint32_t groups = static_cast<std::uint32_t>(
            std::clamp<std::uint64_t>((bytes / 16 + 255) / 256 / 4, 1, 65535));
        record(
            [&](VkCommandBuffer cmd) {
                vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, copy_pipeline_.get());
                vkCmdPushConstants(cmd, copy_layout_.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
                vkCmdDispatch(cmd, groups, 1, 1);
            },
            true);
    }

private:
    std::unique_ptr<vk::Context> ctx_;
    vk::PipelineLayout copy_layout_;
    vk::Pipeline copy_pipeline_;
    vk::CommandPool pool_;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    vk::Fence fence_;
    vk::QueryPool queries_;
    vk::PipelineLayout layout_;
    vk::Pipeline pipeline_;
    bool timed_ = false;
};

// ---- measurements --------------------------------------------------------------------------

struct Timing {
    std::vector<double> wall_ms, gpu_ms;
};

// Wall time around evaluate(...).get() of a freshly built graph, and the kernel_ms delta.
Timing time_evaluate(tandem::Runtime& rt, const std::function<tandem::Array()>& build, int warmup, int reps,
                     std::uint64_t* regions_per_eval, std::uint64_t* fallbacks) {
    Timing t;
    const auto m0 = rt.metrics();
    for (int i = 0; i < warmup + reps; ++i) {
        tandem::Array c = build();  // graph built outside the timed part
        const auto before = rt.metrics();
        const auto t0 = Clock::now();
        rt.evaluate({c}).get();
        const double wall = ms_since(t0);
        const auto after = rt.metrics();
        if (i >= warmup) {
            t.wall_ms.push_back(wall);
            t.gpu_ms.push_back(after.kernel_ms - before.kernel_ms);
        }
    }
    const auto m1 = rt.metrics();
    *regions_per_eval = (m1.device_regions - m0.device_regions) / static_cast<std::uint64_t>(warmup + reps);
    *fallbacks = m1.device_fallbacks - m0.device_fallbacks;
    return t;
}

void bench_bandwidth(tandem::Runtime& rt, Raw& raw, const Options& o) {
    const std::int64_t n = std::int64_t{1} << o.log2n;
    for (tandem::DType t : {tandem::DType::f32, tandem::DType::f64}) {
        check_expressions(rt, t);
        const double es = t == tandem::DType::f32 ? 4.0 : 8.0;
        {
            auto [a, b] = inputs(rt, n, t);
            const auto m0 = rt.metrics();
            const auto t0 = Clock::now();
            rt.evaluate({a, b}).get();
            const double make_ms = ms_since(t0);
            const auto m1 = rt.metrics();
            emit({{"kind", "inputs"}, {"dtype", dt_name(t)}, {"n", n}, {"ms", make_ms},
                  {"device_regions", m1.device_regions - m0.device_regions},
                  {"upload_bytes", m1.upload_bytes - m0.upload_bytes}});
            for (const Expr& e : expressions()) {
                std::uint64_t regions = 0, fallbacks = 0;
                Timing tm = time_evaluate(rt, [&] { return e.build(a, b); }, o.warmup, o.reps, &regions, &fallbacks);
                const double bytes = e.arrays * es * static_cast<double>(n);
                const double wall = median(tm.wall_ms), gpu = median(tm.gpu_ms);
                emit({{"kind", "bandwidth"}, {"system", "tandem"}, {"dtype", dt_name(t)}, {"expr", e.name},
                      {"text", e.text}, {"n", n}, {"bytes", bytes}, {"median_wall_ms", wall},
                      {"min_wall_ms", min_of(tm.wall_ms)}, {"median_kernel_ms", gpu},
                      {"wall_GBps", bytes / wall / 1e6}, {"kernel_GBps", gpu > 0 ? bytes / gpu / 1e6 : NAN},
                      {"wall_ms", tm.wall_ms}, {"kernel_ms", tm.gpu_ms}, {"device_regions_per_evaluate", regions},
                      {"device_fallbacks", fallbacks}});
            }
        }  // a, b freed
        // The raw copy: vkCmdCopyBuffer of n elements between two device-local buffers.
        {
            auto heap = std::make_shared<vk::DeviceHeap>(raw.context(), vk::DeviceHeap::Kind::device_local,
                                                         VkDeviceSize{256} << 20);
            const auto bytes = static_cast<VkDeviceSize>(es * static_cast<double>(n));
            // what a fresh device allocation of this size costs (Tandem allocates each output)
            std::vector<double> alloc_ms, free_ms;
            for (int i = 0; i < 3; ++i) {
                auto t0 = Clock::now();
                auto tmp = heap->allocate(bytes);
                alloc_ms.push_back(ms_since(t0));
                t0 = Clock::now();
                tmp.reset();
                free_ms.push_back(ms_since(t0));
            }
            emit({{"kind", "alloc"}, {"dtype", dt_name(t)}, {"bytes", bytes}, {"what", "DeviceHeap::allocate + release of one array of n elements (a block of its own)"},
                  {"allocate_ms", alloc_ms}, {"release_ms", free_ms}});
            auto src = heap->allocate(bytes), dst = heap->allocate(bytes);
            for (int pass = 0; pass < 2; ++pass) {
            if (pass == 0) raw.record_shader_copy(*src, *dst, bytes);
            else raw.record(
                [&](VkCommandBuffer cmd) {
                    VkBufferCopy region{src->offset(), dst->offset(), bytes};
                    vkCmdCopyBuffer(cmd, src->buffer(), dst->buffer(), 1, &region);
                },
                true);
            std::vector<double> wall, gpu;
            for (int i = 0; i < o.warmup + o.reps; ++i) {
                double g = NAN;
                const double w = raw.submit_wait(&g);
                if (i >= o.warmup) {
                    wall.push_back(w);
                    gpu.push_back(g);
                }
            }
            const double counted = 2.0 * static_cast<double>(bytes);
            emit({{"kind", "bandwidth"}, {"system", pass == 0 ? "vk_shader_copy" : "vk_copy"}, {"dtype", dt_name(t)},
                  {"expr", "copy_raw"},
                  {"text", pass == 0 ? "raw compute-shader copy (uvec4), device-local to device-local"
                                     : "raw vkCmdCopyBuffer, device-local to device-local"}, {"n", n}, {"bytes", counted},
                  {"median_wall_ms", median(wall)}, {"min_wall_ms", min_of(wall)}, {"median_kernel_ms", median(gpu)},
                  {"wall_GBps", counted / median(wall) / 1e6},
                  {"kernel_GBps", median(gpu) > 0 ? counted / median(gpu) / 1e6 : NAN}, {"wall_ms", wall},
                  {"kernel_ms", gpu}});
            }
        }
    }
}

// The first evaluate of a never-seen expression (cold: empty cache directory; warm: a second
// process with the same directory).
void bench_pipeline(tandem::Runtime& rt, const Options& o, double runtime_ms) {
    tandem::Array p = rt.linspace(0.1, 0.9, 4096);
    const auto m0 = rt.metrics();
    auto t0 = Clock::now();
    rt.evaluate({p}).get();
    const double first_ms = ms_since(t0);
    const auto m1 = rt.metrics();
    // An expression no other part of this program uses, so the only way to have its pipeline
    // ready is the disk cache.
    tandem::Array q = tandem::tanh(p) * 1.2345 + tandem::cos(p * 2.5) / (1.5 + p) - tandem::sqrt(p);
    t0 = Clock::now();
    rt.evaluate({q}).get();
    const double probe_ms = ms_since(t0);
    const auto m2 = rt.metrics();
    // the same expression again: a memory hit, the floor of an evaluate of this size
    tandem::Array q2 = tandem::tanh(p) * 1.2345 + tandem::cos(p * 2.5) / (1.5 + p) - tandem::sqrt(p);
    t0 = Clock::now();
    rt.evaluate({q2}).get();
    const double again_ms = ms_since(t0);
    auto delta = [](const tandem::Metrics& a, const tandem::Metrics& b) {
        return json{{"pipeline_hits", b.pipeline_hits - a.pipeline_hits},
                    {"pipeline_disk_hits", b.pipeline_disk_hits - a.pipeline_disk_hits},
                    {"pipeline_misses", b.pipeline_misses - a.pipeline_misses},
                    {"pipeline_compile_ms", b.pipeline_compile_ms - a.pipeline_compile_ms},
                    {"device_regions", b.device_regions - a.device_regions}};
    };
    emit({{"kind", "pipeline"}, {"label", o.label}, {"cache_dir", o.cache_dir}, {"runtime_create_ms", runtime_ms},
          {"first_evaluate_linspace_ms", first_ms}, {"first_evaluate_linspace", delta(m0, m1)},
          {"first_evaluate_new_expr_ms", probe_ms}, {"new_expr", delta(m1, m2)}, {"same_expr_again_ms", again_ms},
          {"pipeline_cache", rt.info().pipeline_cache}});
}

void bench_latency(tandem::Runtime& rt, Raw& raw, const Options& o) {
    const std::int64_t n = 1000;
    tandem::Array x = rt.linspace(0.0, 1.0, n);
    rt.evaluate({x}).get();
    auto chain = [&] {
        tandem::Array y = x;
        for (int i = 0; i < 50; ++i) y = y * 0.999 + 0.001;  // 100 elementwise ops
        return y;
    };
    // check, and that it is one region on the device
    {
        const auto m0 = rt.metrics();
        tandem::HostArray h = chain().gather().get();
        const auto m1 = rt.metrics();
        double worst = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            double y = static_cast<double>(i) / static_cast<double>(n - 1);
            for (int k = 0; k < 50; ++k) y = y * 0.999 + 0.001;
            worst = std::max(worst, std::fabs(h.data<double>()[i] - y));
        }
        emit({{"kind", "check"}, {"dtype", "fp64"}, {"expr", "latency_chain100"}, {"n", n}, {"max_abs_diff", worst},
              {"limit", 1e-13}, {"pass", worst <= 1e-13}, {"device_regions", m1.device_regions - m0.device_regions},
              {"regions_executed", m1.regions_executed - m0.regions_executed},
              {"ops_executed", m1.ops_executed - m0.ops_executed}});
        if (!(worst <= 1e-13)) fail("check failed: the 100-op latency chain");
    }
    std::vector<double> wall;
    const auto m0 = rt.metrics();
    const int warm = 5;
    for (int i = 0; i < warm + o.latency_reps; ++i) {
        tandem::Array y = chain();
        const auto t0 = Clock::now();
        tandem::HostArray h = y.gather().get();
        const double w = ms_since(t0);
        if (i >= warm) wall.push_back(w);
    }
    const auto m1 = rt.metrics();
    const double evals = warm + o.latency_reps;
    emit({{"kind", "latency"}, {"system", "tandem"}, {"what", "gather of a 100-op chain, 1000 doubles"},
          {"median_us", median(wall) * 1e3}, {"min_us", min_of(wall) * 1e3},
          {"device_regions_per_gather", static_cast<double>(m1.device_regions - m0.device_regions) / evals},
          {"batches_per_gather", static_cast<double>(m1.device_batches - m0.device_batches) / evals},
          {"download_bytes_per_gather", static_cast<double>(m1.download_bytes - m0.download_bytes) / evals}});
    // the same without the graph: evaluate (no download) of the same chain
    {
        std::vector<double> ev;
        for (int i = 0; i < warm + o.latency_reps; ++i) {
            tandem::Array y = chain();
            const auto t0 = Clock::now();
            rt.evaluate({y}).get();
            const double w = ms_since(t0);
            if (i >= warm) ev.push_back(w);
        }
        emit({{"kind", "latency"}, {"system", "tandem_evaluate"},
              {"what", "evaluate (no download) of a 100-op chain, 1000 doubles"}, {"median_us", median(ev) * 1e3},
              {"min_us", min_of(ev) * 1e3}});
    }
    // diagnostics: a 1-op expression on the device, and the same 100-op chain on a CPU-only runtime
    {
        std::vector<double> one;
        for (int i = 0; i < warm + o.latency_reps; ++i) {
            tandem::Array y = x + 1.0;
            const auto t0 = Clock::now();
            tandem::HostArray h = y.gather().get();
            const double w = ms_since(t0);
            if (i >= warm) one.push_back(w);
        }
        emit({{"kind", "latency"}, {"system", "tandem_1op"}, {"what", "gather of x + 1 (1 op), 1000 doubles, on the device"},
              {"median_us", median(one) * 1e3}, {"min_us", min_of(one) * 1e3}});
        tandem::Config c = rt.config();
        c.device = "cpu";
        tandem::Runtime cpu(c);
        tandem::Array xc = cpu.linspace(0.0, 1.0, n);
        cpu.evaluate({xc}).get();
        std::vector<double> cw;
        for (int i = 0; i < warm + o.latency_reps; ++i) {
            tandem::Array y = xc;
            for (int k = 0; k < 50; ++k) y = y * 0.999 + 0.001;
            const auto t0 = Clock::now();
            tandem::HostArray h = y.gather().get();
            const double w = ms_since(t0);
            if (i >= warm) cw.push_back(w);
        }
        emit({{"kind", "latency"}, {"system", "tandem_cpu"},
              {"what", "gather of the 100-op chain, 1000 doubles, CPU-only runtime (graph + fusion + CPU executor)"},
              {"median_us", median(cw) * 1e3}, {"min_us", min_of(cw) * 1e3}});
    }
    // raw round trips
    for (const char* what : {"empty", "tiny_dispatch"}) {
        const bool tiny = std::strcmp(what, "tiny_dispatch") == 0;
        VkPipeline p = tiny ? raw.tiny_pipeline() : VK_NULL_HANDLE;
        raw.record(
            [&](VkCommandBuffer cmd) {
                if (!tiny) return;
                vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
                vkCmdDispatch(cmd, 1, 1, 1);
            },
            false);
        std::vector<double> rt_ms;
        for (int i = 0; i < 10 + o.latency_reps; ++i) {
            const double w = raw.submit_wait();
            if (i >= 10) rt_ms.push_back(w);
        }
        emit({{"kind", "latency"}, {"system", std::string("raw_") + what},
              {"what", tiny ? "vkQueueSubmit + vkWaitForFences, one 1x1x1 dispatch of an empty shader"
                            : "vkQueueSubmit + vkWaitForFences, an empty command buffer"},
              {"median_us", median(rt_ms) * 1e3}, {"min_us", min_of(rt_ms) * 1e3}});
    }
}

// f. command groups (tandem/kernel.hpp): an empty one (a GLSL-only kernel of one item that does
// nothing, no accessors) submitted and waited for, and `kGroups` submitted then waited for once;
// against a raw vkQueueSubmit of one 1x1x1 dispatch of an empty shader, waited for each time, and
// kGroups of them submitted then waited for once.
void bench_command_groups(tandem::Runtime& timed_rt, Raw& raw, const Options& o) {
    constexpr int kGroups = 10000;
    // A runtime as users get it: kernels timed only when the cost model samples them (the other
    // parts of this benchmark time every kernel).
    tandem::Config c = timed_rt.config();
    c.time_kernels = false;
    tandem::Runtime rt(c);
    static const tandem::Kernel nothing = tandem::Kernel("nothing").glsl("// an empty command group's work\n");
    // A queue as it comes and an in-order one (each group also follows the one before it).
    for (const bool in_order : {false, true}) {
        tandem::Queue q(rt, tandem::QueueOptions{.in_order = in_order});
        const std::string suffix = in_order ? "_in_order" : "";
        auto submit_one = [&] { return q.submit([](tandem::Handler& h) { h.parallel_for(tandem::Range(1), nothing); }); };
        for (int i = 0; i < 20; ++i) submit_one().wait();  // the pipeline built, the plans cached
        std::vector<double> one;
        for (int i = 0; i < o.latency_reps; ++i) {
            const auto t0 = Clock::now();
            submit_one().wait();
            one.push_back(ms_since(t0));
        }
        emit({{"kind", "command_group"}, {"system", "tandem_empty_group" + suffix},
              {"what", "submit of an empty command group (GLSL, 1 item) and wait on its event" +
                           std::string(in_order ? ", in-order queue" : "")},
              {"median_us", median(one) * 1e3}, {"min_us", min_of(one) * 1e3}});
        std::vector<double> many;
        for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            for (int i = 0; i < kGroups; ++i) submit_one();
            q.wait();
            many.push_back(ms_since(t0) / kGroups);
        }
        emit({{"kind", "command_group"}, {"system", "tandem_empty_groups" + suffix},
              {"what", std::to_string(kGroups) + " empty command groups submitted, then waited for; per group" +
                           std::string(in_order ? ", in-order queue" : "")},
              {"median_us", median(many) * 1e3}, {"min_us", min_of(many) * 1e3}});
    }
    VkPipeline p = raw.tiny_pipeline();
    raw.record(
        [&](VkCommandBuffer cmd) {
            vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
            vkCmdDispatch(cmd, 1, 1, 1);
        },
        false, true);
    std::vector<double> raw_one, raw_many;
    for (int i = 0; i < 10 + o.latency_reps; ++i) {
        const double w = raw.submit_wait();
        if (i >= 10) raw_one.push_back(w);
    }
    for (int r = 0; r < 3; ++r) raw_many.push_back(raw.submit_many(kGroups) / kGroups);
    emit({{"kind", "command_group"}, {"system", "raw_submit"},
          {"what", "vkQueueSubmit + vkWaitForFences, one 1x1x1 dispatch of an empty shader"},
          {"median_us", median(raw_one) * 1e3}, {"min_us", min_of(raw_one) * 1e3}});
    emit({{"kind", "command_group"}, {"system", "raw_submits"},
          {"what", std::to_string(kGroups) + " vkQueueSubmit of that dispatch, then vkQueueWaitIdle; per submit"},
          {"median_us", median(raw_many) * 1e3}, {"min_us", min_of(raw_many) * 1e3}});
    const auto m = rt.metrics();
    emit({{"kind", "command_group"}, {"system", "tandem_metrics"}, {"device_regions", m.device_regions},
          {"device_batches", m.device_batches}, {"device_fallbacks", m.device_fallbacks}});
}

// d. host <-> device copies: uploads and readbacks of 1 MiB or more go to the copy (transfer)
// queue. Upload: evaluate of x * 1.0 with x only on the host; download: gather of a value left on
// the device; pipelined: 4 independent upload -> compute -> readback jobs launched together,
// against 4 times one of them (the overlap of copies with each other and with compute).
void bench_transfer(tandem::Runtime& rt, const Options& o) {
    const std::int64_t n = std::int64_t{1} << std::min(o.log2n, 25);  // at most 256 MiB of doubles
    const double bytes = static_cast<double>(n) * 8.0;
    std::vector<double> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<double>(i % 1000) * 0.5;
    std::vector<double> up_wall, up_gpu, down_wall, down_gpu, one_wall, four_wall;
    std::uint64_t queue_submits = 0;
    for (int r = 0; r < o.warmup + o.reps; ++r) {
        tandem::Array x = rt.array(std::span<const double>(host), tandem::Shape{n, 1});
        const auto m0 = rt.metrics();
        auto t0 = Clock::now();
        tandem::Array y = x * 1.0;
        rt.evaluate({y}).get();
        const double up = ms_since(t0);
        const auto m1 = rt.metrics();
        t0 = Clock::now();
        tandem::HostArray h = y.gather().get();
        const double down = ms_since(t0);
        const auto m2 = rt.metrics();
        if (h.data<double>()[n - 1] != host.back()) fail("check failed: the transfer round trip");
        // one upload -> compute -> readback job, then four launched together
        std::vector<tandem::Array> xs;
        for (int k = 0; k < 5; ++k) xs.push_back(rt.array(std::span<const double>(host), tandem::Shape{n, 1}));
        t0 = Clock::now();
        tandem::HostArray h1 = (xs[0] * 2.0 + 1.0).gather().get();
        const double one = ms_since(t0);
        t0 = Clock::now();
        std::vector<tandem::Future<tandem::HostArray>> fs;
        for (int k = 1; k < 5; ++k) fs.push_back((xs[static_cast<std::size_t>(k)] * 2.0 + k).gather());
        for (auto& f : fs) f.get();
        const double four = ms_since(t0);
        const auto m3 = rt.metrics();
        if (r < o.warmup) continue;
        up_wall.push_back(up);
        up_gpu.push_back(m1.upload_ms - m0.upload_ms);
        down_wall.push_back(down);
        down_gpu.push_back(m2.download_ms - m1.download_ms);
        one_wall.push_back(one);
        four_wall.push_back(four);
        queue_submits = m3.copy_queue_submits - m0.copy_queue_submits;
    }
    emit({{"kind", "transfer"}, {"n", n}, {"bytes", bytes}, {"upload_wall_ms", median(up_wall)},
          {"upload_gpu_ms", median(up_gpu)}, {"upload_GBps", bytes / median(up_gpu) / 1e6},
          {"download_wall_ms", median(down_wall)}, {"download_gpu_ms", median(down_gpu)},
          {"download_GBps", bytes / median(down_gpu) / 1e6}, {"one_job_wall_ms", median(one_wall)},
          {"four_jobs_wall_ms", median(four_wall)}, {"four_over_one", median(four_wall) / median(one_wall)},
          {"copy_queue_submits_per_rep", queue_submits}});
}

// e. reductions and other ops of issue 4: over n fp32 elements as a rows x cols matrix (rows =
// 2^(log2n/2)), sum along dimension 1 (contiguous), along dimension 2 (strided), over all
// elements, and the fused sum(A .* B, 2) (bytes counted: the inputs read once); transpose(A)
// (read and written: 2 arrays); randn of n singles (written: 1 array).
void bench_reduce(tandem::Runtime& rt, const Options& o) {
    const std::int64_t n = std::int64_t{1} << o.log2n;
    const std::int64_t rows = std::int64_t{1} << (o.log2n / 2), cols = n / rows;
    std::vector<double> col(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < col.size(); ++i) col[i] = std::sin(static_cast<double>(i)) * 0.5;
    tandem::Array c = rt.array(std::span<const double>(col), tandem::Shape{rows, 1});
    tandem::Array r = rt.linspace(-1.0, 1.0, cols);
    tandem::Array A = tandem::single(c + r * 0.25), B = tandem::single(c * r + 1.0);
    rt.evaluate({A, B}).get();
    // check against a double CPU reference at a few outputs
    {
        tandem::HostArray s1 = tandem::sum(A, 1).gather().get(), s2 = tandem::sum(A * B, 2).gather().get();
        double worst = 0;
        const double step = cols > 1 ? 2.0 / static_cast<double>(cols - 1) : 0.0;
        for (std::int64_t j : {std::int64_t{0}, cols / 3, cols - 1}) {
            const double rj = j == cols - 1 ? 1.0 : -1.0 + static_cast<double>(j) * step;
            double want = 0;
            for (std::int64_t i = 0; i < rows; ++i)
                want += static_cast<double>(static_cast<float>(col[static_cast<std::size_t>(i)] + rj * 0.25));
            worst = std::max(worst, std::fabs(static_cast<double>(s1.data<float>()[j]) - want) / (1.0 + std::fabs(want)));
        }
        for (std::int64_t i : {std::int64_t{0}, rows / 2, rows - 1}) {
            double want = 0;
            for (std::int64_t j = 0; j < cols; ++j) {
                const double rj = j == cols - 1 ? 1.0 : -1.0 + static_cast<double>(j) * step;
                const double ci = col[static_cast<std::size_t>(i)];
                want += static_cast<double>(static_cast<float>(ci + rj * 0.25)) * static_cast<double>(static_cast<float>(ci * rj + 1.0));
            }
            worst = std::max(worst, std::fabs(static_cast<double>(s2.data<float>()[i]) - want) / (1.0 + std::fabs(want)));
        }
        emit({{"kind", "check"}, {"dtype", "fp32"}, {"expr", "reductions"}, {"max_rel_diff", worst}, {"limit", 1e-4},
              {"pass", worst <= 1e-4}});
        if (!(worst <= 1e-4)) fail("check failed: reductions");
    }
    // For the rearrangements: A as rows x cols/4 x 4, and n/4 random subscripts (doubles).
    const tandem::Array A3 = tandem::reshape(A, tandem::Shape{rows, cols / 4, 4});
    const tandem::Array I = tandem::floor(tandem::rand(rt, tandem::Shape{n / 4, 1}) * static_cast<double>(n)) + 1.0;
    rt.evaluate({I}).get();
    struct Red {
        const char* name;
        const char* text;
        double arrays;
        std::function<tandem::Array()> build;
    };
    const std::vector<Red> reds = {
        {"sum_dim1", "sum(A, 1)", 1, [&] { return tandem::sum(A, 1); }},
        {"sum_dim2", "sum(A, 2)", 1, [&] { return tandem::sum(A, 2); }},
        {"sum_all", "sum(A, 'all')", 1, [&] { return tandem::sum(A, tandem::all_dims); }},
        {"sum_ab_dim2", "sum(A .* B, 2)", 2, [&] { return tandem::sum(A * B, 2); }},
        {"transpose", "transpose(A)", 2, [&] { return tandem::transpose(A); }},
        {"randn", "randn(n, 1, 'single')", 1, [&] { return tandem::randn(rt, tandem::Shape{n, 1}, tandem::DType::f32); }},
        // rearrangements and indexing (bytes: what a minimal kernel must move)
        {"permute_213", "permute(A3, [2 1 3])", 2, [&] { return tandem::permute(A3, {2, 1, 3}); }},
        {"permute_132", "permute(A3, [1 3 2])", 2, [&] { return tandem::permute(A3, {1, 3, 2}); }},
        {"gather", "A(I), n/4 random I", 0.25 * 16 / 4, [&] { return tandem::index(A, I); }},
        {"assign", "A(I) = 0", 2 + 0.25 * 8 / 4, [&] { return tandem::assign(A, I, 0.0); }},
        {"find", "find(A > 0.5)", 5.0 / 4, [&] { return tandem::find(A > 0.5); }},
    };
    for (const Red& e : reds) {
        std::uint64_t regions = 0, fallbacks = 0;
        Timing tm = time_evaluate(rt, e.build, o.warmup, o.reps, &regions, &fallbacks);
        const double bytes = e.arrays * 4.0 * static_cast<double>(n);
        const double wall = median(tm.wall_ms), gpu = median(tm.gpu_ms);
        emit({{"kind", "reduce"}, {"system", "tandem"}, {"dtype", "fp32"}, {"expr", e.name}, {"text", e.text},
              {"rows", rows}, {"cols", cols}, {"bytes", bytes}, {"median_wall_ms", wall}, {"median_kernel_ms", gpu},
              {"wall_GBps", bytes / wall / 1e6}, {"kernel_GBps", gpu > 0 ? bytes / gpu / 1e6 : NAN},
              {"device_regions_per_evaluate", regions}, {"device_fallbacks", fallbacks}});
        std::printf("reduce %-12s %-16s %8.3f ms wall %8.3f ms GPU %7.0f GB/s wall %7.0f GB/s GPU\n", e.name, e.text,
                    wall, gpu, bytes / wall / 1e6, gpu > 0 ? bytes / gpu / 1e6 : NAN);
    }
}

void print_table() {
    std::printf("\n%-8s %-12s %-46s %10s %10s %9s %9s\n", "dtype", "system", "what", "wall ms", "GPU ms",
                "wall GB/s", "GPU GB/s");
    for (const json& j : g_results) {
        if (j["kind"] == "bandwidth")
            std::printf("%-8s %-12s %-46s %10.3f %10.3f %9.0f %9.0f\n", j["dtype"].get<std::string>().c_str(),
                        j["system"].get<std::string>().c_str(), j["expr"].get<std::string>().c_str(),
                        j["median_wall_ms"].get<double>(), j["median_kernel_ms"].is_number() ? j["median_kernel_ms"].get<double>() : NAN,
                        j["wall_GBps"].get<double>(), j["kernel_GBps"].is_number() ? j["kernel_GBps"].get<double>() : NAN);
    }
    for (const json& j : g_results) {
        if (j["kind"] == "latency")
            std::printf("latency  %-20s median %8.1f us  (min %.1f us): %s\n", j["system"].get<std::string>().c_str(),
                        j["median_us"].get<double>(), j["min_us"].get<double>(), j["what"].get<std::string>().c_str());
        if (j["kind"] == "command_group" && j.contains("median_us"))
            std::printf("group    %-20s median %8.2f us  (min %.2f us): %s\n", j["system"].get<std::string>().c_str(),
                        j["median_us"].get<double>(), j["min_us"].get<double>(), j["what"].get<std::string>().c_str());
        if (j["kind"] == "transfer")
            std::printf("transfer %.0f MiB: upload %.3f ms wall, %.3f ms copy (%.1f GB/s); download %.3f ms wall, %.3f ms "
                        "copy (%.1f GB/s); upload+compute+readback x1 %.3f ms, x4 launched together %.3f ms (%.2fx); "
                        "%llu copy-queue submissions per repetition\n",
                        j["bytes"].get<double>() / 1048576.0, j["upload_wall_ms"].get<double>(),
                        j["upload_gpu_ms"].get<double>(), j["upload_GBps"].get<double>(),
                        j["download_wall_ms"].get<double>(), j["download_gpu_ms"].get<double>(),
                        j["download_GBps"].get<double>(), j["one_job_wall_ms"].get<double>(),
                        j["four_jobs_wall_ms"].get<double>(), j["four_over_one"].get<double>(),
                        static_cast<unsigned long long>(j["copy_queue_submits_per_rep"].get<std::uint64_t>()));
        if (j["kind"] == "pipeline")
            std::printf("pipeline [%s] first evaluate of a new expression %.2f ms (compiled %llu, disk %llu, memory %llu); "
                        "same again %.3f ms\n",
                        j["label"].get<std::string>().c_str(), j["first_evaluate_new_expr_ms"].get<double>(),
                        static_cast<unsigned long long>(j["new_expr"]["pipeline_misses"].get<std::uint64_t>()),
                        static_cast<unsigned long long>(j["new_expr"]["pipeline_disk_hits"].get<std::uint64_t>()),
                        static_cast<unsigned long long>(j["new_expr"]["pipeline_hits"].get<std::uint64_t>()),
                        j["same_expr_again_ms"].get<double>());
    }
}

int usage(const char* msg) {
    std::fprintf(stderr,
                 "tandem-gpu-bench: %s\nusage: tandem-gpu-bench [--log2n N] [--cache-dir DIR|none] "
                 "[--only pipeline|reduce|kernel|all] [--reps R] [--warmup W] [--latency-reps L] [--label TEXT]\n",
                 msg);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++i];
        };
        try {
            if (arg == "--log2n") o.log2n = std::stoi(value());
            else if (arg == "--cache-dir") o.cache_dir = value();
            else if (arg == "--only") o.only = value();
            else if (arg == "--label") o.label = value();
            else if (arg == "--reps") o.reps = std::stoi(value());
            else if (arg == "--warmup") o.warmup = std::stoi(value());
            else if (arg == "--latency-reps") o.latency_reps = std::stoi(value());
            else if (arg == "-h" || arg == "--help") { usage("help"); return 0; }
            else return usage(("unknown argument " + arg).c_str());
        } catch (const std::exception& e) {
            return usage(e.what());
        }
    }
    if (o.log2n < 10 || o.log2n > 31 || (o.only != "all" && o.only != "pipeline" && o.only != "reduce" && o.only != "kernel") || o.reps < 1)
        return usage("bad option value");

    try {
        tandem::Config cfg = tandem::Config::from_environment();
        cfg.device = "vulkan";
        cfg.placement = "gpu";
        cfg.pipeline_cache_dir = o.cache_dir;
        cfg.time_kernels = true;  // GPU times of kernels are what it reports
        const auto t0 = Clock::now();
        tandem::Runtime rt(cfg);
        const double runtime_ms = ms_since(t0);
        const auto info = rt.info();
        std::string in_use;
        for (const auto& d : info.devices)
            if (d.find("[in use]") != std::string::npos) in_use = d;
        emit({{"kind", "context"}, {"tandem_version", info.version}, {"build", info.build}, {"device", in_use},
              {"log2n", o.log2n}, {"reps", o.reps}, {"warmup", o.warmup}, {"latency_reps", o.latency_reps},
              {"cache_dir", o.cache_dir}, {"label", o.label}});
        if (in_use.empty()) {
            std::fprintf(stderr, "tandem-gpu-bench: no Vulkan device in use (%s)\n", info.devices_note.c_str());
            return 2;
        }
        // b. first, before anything else has compiled in this process
        bench_pipeline(rt, o, runtime_ms);
        if (o.only == "pipeline") {
            print_table();
            return 0;
        }
        if (o.only == "reduce") {
            bench_reduce(rt, o);
            return 0;
        }
        Raw raw;
        if (o.only == "kernel") {
            bench_command_groups(rt, raw, o);
            print_table();
            return 0;
        }
        // c. latency
        bench_latency(rt, raw, o);
        // a. bandwidth
        bench_bandwidth(rt, raw, o);
        // d. host <-> device copies
        bench_transfer(rt, o);
        // e. reductions
        bench_reduce(rt, o);
        // f. command groups
        bench_command_groups(rt, raw, o);
        const auto m = rt.metrics();
        emit({{"kind", "metrics"}, {"device_regions", m.device_regions}, {"device_fallbacks", m.device_fallbacks},
              {"device_dispatches", m.device_dispatches}, {"device_batches", m.device_batches},
              {"upload_bytes", m.upload_bytes}, {"download_bytes", m.download_bytes}, {"kernel_ms", m.kernel_ms},
              {"pipeline_hits", m.pipeline_hits}, {"pipeline_disk_hits", m.pipeline_disk_hits},
              {"pipeline_misses", m.pipeline_misses}, {"pipeline_compile_ms", m.pipeline_compile_ms}});
        print_table();
    } catch (const std::exception& e) {
        fail(std::string("error: ") + e.what());
    }
    return 0;
}
