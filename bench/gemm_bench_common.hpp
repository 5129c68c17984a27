// What the two Vulkan GEMM benchmarks (bench_gemm_gpu.cpp, bench_gemm_coopmat.cpp) share: JSON
// lines out, the operands' values (a counter hash, the same on the device and the host), the
// device set-up (context, heaps, pipeline cache, one command buffer, a fence, timestamp queries,
// the kernel that fills the operands), recording helpers, the GPU timing of a batch from its
// timestamps, the read-back of sampled columns of D and their check against a double reference
// with the error bound of a length-n dot product, and argument splitting.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/gemm.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/pipeline_cache.hpp"

namespace gemm_bench {

namespace vk = tandem::detail::vk;
using json = nlohmann::json;

/// Every object emitted so far (for a table at the end).
inline std::vector<json>& results() {
    static std::vector<json> r;
    return r;
}

/// One JSON object per line on stdout, flushed.
inline void emit(const json& j) {
    results().push_back(j);
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
}

inline std::uint32_t hash(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
/// The value at element index i of an array with `seed` (exact in float and double).
inline double value(std::uint32_t seed, std::uint64_t i) {
    const std::uint32_t h = hash(static_cast<std::uint32_t>(i) ^ hash(seed + static_cast<std::uint32_t>(i >> 32)));
    return static_cast<double>(h >> 8) * (2.0 / 16777216.0) - 1.0;
}

/// The device's side of value(): fills `count` floats (or doubles with is_f64) at addr.
inline const char* kInitGlsl = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer D { double v[]; };
layout(push_constant) uniform P { uint64_t addr; uint64_t count; uint seed; uint is_f64; } p;
uint hash(uint x) { x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x; }
void main() {
    for (uint64_t i = gl_GlobalInvocationID.x; i < p.count; i += uint64_t(gl_NumWorkGroups.x) * 256ul) {
        uint h = hash(uint(i) ^ hash(p.seed + uint(i >> 32)));
        double v = double(h >> 8) * (2.0LF / 16777216.0LF) - 1.0LF;
        if (p.is_f64 != 0u) D(p.addr + i * 8ul).v[0] = v; else F(p.addr + i * 4ul).v[0] = float(v);
    }
}
)";

/// Milliseconds since t0.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// TFLOP/s of an n x n x n product taking `ms`.
inline double tflops(std::uint32_t n, double ms) { return 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3) / 1e12; }

/// The device "vulkan" opens: open() makes the context; setup() the rest (heaps, pipeline cache,
/// a command buffer, a fence, `max_queries` timestamp queries, the operands' init kernel).
class Device {
public:
    ~Device() {
        if (ctx) vkDeviceWaitIdle(ctx->device());
    }

    void open() {
        vk::ContextOptions co;
        co.device = "vulkan";
        ctx = vk::Context::create(co);
    }

    void setup(std::uint32_t max_queries, const char* init_key) {
        heap = std::make_shared<vk::DeviceHeap>(*ctx, vk::DeviceHeap::Kind::device_local, 256ull << 20, 256ull << 20);
        readback = std::make_shared<vk::DeviceHeap>(*ctx, vk::DeviceHeap::Kind::readback, 64ull << 20, 64ull << 20);
        pipelines = std::make_unique<vk::PipelineCache>(*ctx, "", nullptr);
        VkDevice dev = ctx->device();
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, ctx->compute_family()};
        VkCommandPool pool = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(dev, &pci, nullptr, &pool), "vkCreateCommandPool");
        pool_ = vk::CommandPool(dev, pool);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        vk::check(vkAllocateCommandBuffers(dev, &ai, &cmd), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
        VkFence f = VK_NULL_HANDLE;
        vk::check(vkCreateFence(dev, &fi, nullptr, &f), "vkCreateFence");
        fence_ = vk::Fence(dev, f);
        max_queries_ = max_queries;
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP,
                                 max_queries, 0};
        VkQueryPool q = VK_NULL_HANDLE;
        vk::check(vkCreateQueryPool(dev, &qi, nullptr, &q), "vkCreateQueryPool");
        queries_ = vk::QueryPool(dev, q);
        vk::Kernel init;
        init.glsl = kInitGlsl;
        init.key = init_key;
        init.workgroup_size = 256;
        init.elements_per_thread = 1;
        init.push_bytes = 24;
        init_ = &pipelines->get(init);
    }

    void begin() {
        vk::check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
        vk::check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    }
    void barrier(VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src, dst};
        vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
    }
    /// A compute -> compute barrier after a product (its writes before the next one's `dst`).
    void after_product(VkAccessFlags dst) {
        barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst);
    }
    void submit_wait() {
        vk::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkFence f = fence_.get();
        vk::check(vkResetFences(ctx->device(), 1, &f), "vkResetFences");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd, 0, nullptr};
        vk::check(vkQueueSubmit(ctx->compute_queue(), 1, &si, f), "vkQueueSubmit");
        vk::check(vkWaitForFences(ctx->device(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    }

    /// Fills A (seed 1) and B (seed 2), n x n, with value() on the device; waits.
    void fill(const vk::DeviceArray& a, const vk::DeviceArray& b, std::uint32_t n, bool f64) {
        begin();
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, init_->pipeline);
        for (auto [arr, seed] : {std::pair{&a, 1u}, {&b, 2u}}) {
            struct {
                std::uint64_t addr, count;
                std::uint32_t seed, is_f64;
            } push{arr->address(), std::uint64_t{n} * n, seed, f64 ? 1u : 0u};
            vkCmdPushConstants(cmd, init_->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
            vkCmdDispatch(cmd, 4096, 1, 1);
        }
        submit_wait();
    }

    /// Keeps the GPU busy for `ms` first (batches of 4 of `record`), so that its clocks are up when
    /// the timed batch starts.
    template <class Record>
    void warm(double ms, Record record) {
        const auto warm0 = std::chrono::steady_clock::now();
        while (ms_since(warm0) < ms) {
            begin();
            for (int i = 0; i < 4; ++i) record();
            submit_wait();
        }
    }

    /// Opens the command buffer and resets every query: the timed batch follows.
    void begin_timed() {
        begin();
        vkCmdResetQueryPool(cmd, queries_.get(), 0, max_queries_);
    }
    void timestamp(std::uint32_t query) {
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), query);
    }
    std::uint32_t max_queries() const { return max_queries_; }

    /// Records the copy of the columns `cols` of D (n x n, `es`-byte elements) to a readback array.
    std::shared_ptr<vk::DeviceArray> copy_columns(const vk::DeviceArray& d, const std::vector<std::uint32_t>& cols,
                                                  std::uint32_t n, VkDeviceSize es) {
        const VkDeviceSize col_bytes = VkDeviceSize{n} * es;
        auto back = readback->allocate(col_bytes * cols.size());
        barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
        std::vector<VkBufferCopy> regions;
        for (std::size_t c = 0; c < cols.size(); ++c)
            regions.push_back({d.offset() + VkDeviceSize{cols[c]} * col_bytes, back->offset() + c * col_bytes, col_bytes});
        vkCmdCopyBuffer(cmd, d.buffer(), back->buffer(), static_cast<std::uint32_t>(regions.size()), regions.data());
        barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
        return back;
    }

    /// The first `count` timestamps of the submitted batch; span_ms() turns two into milliseconds.
    std::vector<std::uint64_t> timestamps(std::size_t count) const {
        std::vector<std::uint64_t> ts(count);
        vk::check(vkGetQueryPoolResults(ctx->device(), queries_.get(), 0, static_cast<std::uint32_t>(count), ts.size() * 8,
                                        ts.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults");
        return ts;
    }
    double span_ms(const std::vector<std::uint64_t>& ts, std::size_t from, std::size_t to) const {
        const auto& desc = ctx->description();
        const std::uint64_t mask = desc.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << desc.timestamp_valid_bits) - 1);
        return static_cast<double>((ts[to] - ts[from]) & mask) * desc.timestamp_period_ns / 1e6;
    }

    std::unique_ptr<vk::Context> ctx;
    std::shared_ptr<vk::DeviceHeap> heap, readback;
    std::unique_ptr<vk::PipelineCache> pipelines;
    VkCommandBuffer cmd = VK_NULL_HANDLE;

private:
    vk::CommandPool pool_;
    vk::Fence fence_;
    vk::QueryPool queries_;
    std::uint32_t max_queries_ = 0;
    const vk::ComputePipeline* init_ = nullptr;
};

/// Median and best of a list of times (sorted in place).
struct Times {
    double median, best;
};
inline Times median_best(std::vector<double>& ms) {
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.front()};
}

/// Checks the sampled columns `cols` of D = op(A) op(B) (n x n; read back by copy_columns, elements
/// f64 or f32) on every row_step-th row against a double host reference on round(value()), with
/// the bound 3 (n + 2) eps sum |a b|. A failure emits an error and exits 1; returns the worst
/// error as a fraction of its bound.
template <class Round>
double check_columns(const vk::DeviceArray& back, const std::vector<std::uint32_t>& cols, std::uint32_t n, bool ta,
                     bool tb, bool f64, std::uint32_t row_step, Round round) {
    const VkDeviceSize es = f64 ? 8 : 4, col_bytes = VkDeviceSize{n} * es;
    double worst = 0;
    for (std::size_t c = 0; c < cols.size(); ++c) {
        const std::uint32_t j = cols[c];
        std::vector<double> bcol(n);
        for (std::uint32_t p = 0; p < n; ++p) bcol[p] = round(value(2, tb ? j + std::uint64_t{p} * n : p + std::uint64_t{j} * n));
        for (std::uint32_t i = 0; i < n; i += row_step) {
            double ref = 0, mag = 0;
            for (std::uint32_t p = 0; p < n; ++p) {
                const double x = round(value(1, ta ? p + std::uint64_t{i} * n : i + std::uint64_t{p} * n));
                ref += x * bcol[p];
                mag += std::fabs(x * bcol[p]);
            }
            const char* at = static_cast<const char*>(back.mapped()) + c * col_bytes + i * es;
            double got;
            if (f64) std::memcpy(&got, at, 8);
            else {
                float f;
                std::memcpy(&f, at, 4);
                got = f;
            }
            const double eps = f64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
            const double bound = 3.0 * (n + 2) * eps * mag;
            worst = std::max(worst, std::fabs(got - ref) / bound);
            if (!(std::fabs(got - ref) <= bound)) {
                emit({{"kind", "error"}, {"what", "check failed"}, {"i", i}, {"j", j}, {"got", got}, {"ref", ref}});
                std::exit(1);
            }
        }
    }
    return worst;
}

/// D = op(A) op(B), all n x n and contiguous (alpha 1, beta 0, no C).
inline vk::GemmArgs square_product(tandem::DType dt, std::uint32_t n, bool ta, bool tb, const vk::DeviceArray& a,
                                   const vk::DeviceArray& b, const vk::DeviceArray& d) {
    vk::GemmArgs g;
    g.dtype = dt;
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = g.n = g.k = n;
    g.a = a.address();
    g.b = b.address();
    g.d = d.address();
    g.lda = g.ldb = g.ldd = n;
    g.alpha = 1;
    g.beta = 0;
    return g;
}

/// "NN", "NT", "TN" or "TT".
inline std::string op_name(bool ta, bool tb) { return std::string(ta ? "T" : "N") + (tb ? "T" : "N"); }

/// The parts of a comma-separated list (empty parts dropped unless keep_empty).
inline std::vector<std::string> split(const std::string& s, bool keep_empty = false) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string part; std::getline(ss, part, ',');)
        if (keep_empty || !part.empty()) out.push_back(part);
    return out;
}

}  // namespace gemm_bench
