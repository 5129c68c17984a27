// tandem-gemm-coopmat-bench: TFLOP/s of the f16 tensor-core GEMM (MatmulPrecision::f16 on a
// device with VK_NV_cooperative_matrix: backends/vulkan/gemm_coopmat.hpp) on the device "vulkan"
// opens (the H100 on the GPU machine). The peer is cuBLAS fp16 through PyTorch, in the same
// command: python3 bench/gemm_torch.py --dtypes fp16,fp16_from_fp32.
//
// A and B (n x n single, values k/2^23 - 1 from a counter hash, the same on the host) are made on
// the device. The kernel reads them as f32 and rounds them to f16 while staging its tiles (input
// f32), or reads halves that two packing dispatches rounded first (input f16, the packing timed
// with the product). Every tiling in --tiles (default: a few that fit) is timed at the first size,
// NN, with either input, and the fastest kept; then every size is timed with it, the other
// transposes at the first size, and the exact (integer) f32 -> f16 conversion at the first size. A
// timing is the GPU time between timestamps around each of --reps back-to-back products (after 2
// warm-up ones and --warm-ms of warm-up work), median and best; TFLOP/s = 2 n^3 / time (of the
// product with its packing; "gemm_ms": the product's dispatch alone). Every timed product is checked on sampled
// columns against a double reference on the rounded operands (bound 3 (n + 2) 2^-23 sum |a b|).
// Then --api times matmul(A, B, {.., f16}) through the public API (Runtime::evaluate wall time of
// the product alone, operands already on the device). One JSON object per line.
//
// Usage: tandem-gemm-coopmat-bench [--sizes 4096,8192] [--reps 10] [--tiles BMxBNxBK/WMxWNgG,...]
//                                  [--warm-ms 200] [--no-api | --api-only]
#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/gemm.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "tandem/tandem.hpp"

namespace vk = tandem::detail::vk;
using json = nlohmann::json;

namespace {

struct Options {
    std::vector<std::uint32_t> sizes = {4096, 8192};
    std::vector<vk::CoopmatTiles> tiles = {{128, 128, 32, 2, 2, 8},  {128, 128, 64, 2, 2, 8},    {128, 128, 32, 2, 2, 8, 2},
                                           {128, 128, 32, 2, 2, 16}, {256, 128, 32, 4, 2, 8},    {128, 256, 32, 2, 4, 8},
                                           {128, 128, 64, 2, 4, 8}};
    std::vector<std::pair<bool, bool>> sweep_ops = {{false, false}, {true, false}};  // NN and TN
    int reps = 10, warmup = 2;
    double warm_ms = 200;
    bool api = true;
    bool kernel = true;  // --api-only: false
};

void emit(const json& j) {
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
}

std::uint32_t hash(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
double value(std::uint32_t seed, std::uint64_t i) {
    const std::uint32_t h = hash(static_cast<std::uint32_t>(i) ^ hash(seed + static_cast<std::uint32_t>(i >> 32)));
    return static_cast<double>(h >> 8) * (2.0 / 16777216.0) - 1.0;
}

const char* kInitGlsl = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F { float v[]; };
layout(push_constant) uniform P { uint64_t addr; uint64_t count; uint seed; uint pad; } p;
uint hash(uint x) { x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x; }
void main() {
    for (uint64_t i = gl_GlobalInvocationID.x; i < p.count; i += uint64_t(gl_NumWorkGroups.x) * 256ul) {
        uint h = hash(uint(i) ^ hash(p.seed + uint(i >> 32)));
        F(p.addr + i * 4ul).v[0] = float(double(h >> 8) * (2.0LF / 16777216.0LF) - 1.0LF);
    }
}
)";

class Bench {
public:
    explicit Bench(const Options& o) : opt_(o) {
        vk::ContextOptions co;
        co.device = "vulkan";
        ctx_ = vk::Context::create(co);
        const auto& d = ctx_->description();
        emit({{"kind", "device"}, {"name", d.name}, {"driver", d.driver}, {"coopmat", vk::coopmat_text(d)},
              {"shapes", d.cooperative_matrix_shapes}});
        if (!vk::GemmCoopmat::available(d)) {
            emit({{"kind", "error"}, {"what", "no tensor-core path on this device: " + d.coopmat_note}});
            std::exit(2);
        }
        heap_ = std::make_shared<vk::DeviceHeap>(*ctx_, vk::DeviceHeap::Kind::device_local, 256ull << 20, 256ull << 20);
        readback_ = std::make_shared<vk::DeviceHeap>(*ctx_, vk::DeviceHeap::Kind::readback, 64ull << 20, 64ull << 20);
        pipelines_ = std::make_unique<vk::PipelineCache>(*ctx_, "", nullptr);
        coop_ = std::make_unique<vk::GemmCoopmat>(*ctx_, *pipelines_);
        VkDevice dev = ctx_->device();
        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, ctx_->compute_family()};
        VkCommandPool pool = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(dev, &pci, nullptr, &pool), "vkCreateCommandPool");
        pool_ = vk::CommandPool(dev, pool);
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        vk::check(vkAllocateCommandBuffers(dev, &ai, &cmd_), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
        VkFence f = VK_NULL_HANDLE;
        vk::check(vkCreateFence(dev, &fi, nullptr, &f), "vkCreateFence");
        fence_ = vk::Fence(dev, f);
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP, kMaxQueries, 0};
        VkQueryPool q = VK_NULL_HANDLE;
        vk::check(vkCreateQueryPool(dev, &qi, nullptr, &q), "vkCreateQueryPool");
        queries_ = vk::QueryPool(dev, q);
        vk::Kernel init;
        init.glsl = kInitGlsl;
        init.key = "bench:coopmat-init";
        init.workgroup_size = 256;
        init.elements_per_thread = 1;
        init.push_bytes = 24;
        init_ = &pipelines_->get(init);
        pack_ = &pipelines_->get(vk::pack_f16_kernel());
    }
    ~Bench() {
        if (ctx_) vkDeviceWaitIdle(ctx_->device());
    }

    void run() {
        const std::uint32_t n0 = opt_.sizes.front();
        double best = 0;
        vk::CoopmatTiles best_tiles = coop_->tiles();
        vk::CoopmatInput best_input = coop_->input();
        for (const auto& t : opt_.tiles) {
            if (std::string why = t.unfit_reason(ctx_->description()); !why.empty()) {
                emit({{"kind", "skip"}, {"tiles", t.name()}, {"why", why}});
                continue;
            }
            coop_->set_tiles(t);
            for (auto in : {vk::CoopmatInput::f32, vk::CoopmatInput::f16}) {
                coop_->set_input(in);
                // Score: the rate of the sweep's transposes together (total flops over total time).
                double seconds = 0;
                for (auto [ta, tb] : opt_.sweep_ops) seconds += 1.0 / measure(n0, ta, tb, "sweep", std::max(3, opt_.reps / 2));
                const double tf = static_cast<double>(opt_.sweep_ops.size()) / seconds;
                if (tf > best) {
                    best = tf;
                    best_tiles = t;
                    best_input = in;
                }
            }
        }
        coop_->set_tiles(best_tiles);
        coop_->set_input(best_input);
        emit({{"kind", "best_tiles"}, {"tiles", best_tiles.name()}, {"input", input_name()}, {"tflops", best}});
        for (std::uint32_t n : opt_.sizes) measure(n, false, false, "final", opt_.reps);
        for (auto [ta, tb] : {std::pair{false, true}, {true, false}, {true, true}}) measure(n0, ta, tb, "final", std::max(3, opt_.reps / 2));
        coop_->set_input(vk::CoopmatInput::f32);
        coop_->set_conversion(vk::CoopmatConversion::exact);
        measure(n0, false, false, "exact-conversion", std::max(3, opt_.reps / 2));
        coop_->set_conversion(vk::CoopmatConversion::hardware);
        coop_->set_input(best_input);
    }

private:
    static constexpr std::uint32_t kMaxQueries = 64;

    const char* input_name() const { return coop_->input() == vk::CoopmatInput::f16 ? "f16 (packed first)" : "f32"; }

    void begin() {
        vk::check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
        vk::check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    }
    void barrier(VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src, dst};
        vkCmdPipelineBarrier(cmd_, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
    }
    void submit_wait() {
        vk::check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
        VkFence f = fence_.get();
        vk::check(vkResetFences(ctx_->device(), 1, &f), "vkResetFences");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd_, 0, nullptr};
        vk::check(vkQueueSubmit(ctx_->compute_queue(), 1, &si, f), "vkQueueSubmit");
        vk::check(vkWaitForFences(ctx_->device(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    }

    void prepare(std::uint32_t n) {
        if (n == cur_n_) return;
        a_.reset();
        b_.reset();
        d_.reset();
        pa_.reset();
        pb_.reset();
        const VkDeviceSize bytes = VkDeviceSize{n} * n * 4;
        a_ = heap_->allocate(bytes);
        b_ = heap_->allocate(bytes);
        d_ = heap_->allocate(bytes);
        pa_ = heap_->allocate(vk::packed_f16_bytes(std::uint64_t{n} * n));
        pb_ = heap_->allocate(vk::packed_f16_bytes(std::uint64_t{n} * n));
        begin();
        vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, init_->pipeline);
        for (auto [arr, seed] : {std::pair{a_.get(), 1u}, {b_.get(), 2u}}) {
            struct {
                std::uint64_t addr, count;
                std::uint32_t seed, pad;
            } push{arr->address(), std::uint64_t{n} * n, seed, 0};
            vkCmdPushConstants(cmd_, init_->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
            vkCmdDispatch(cmd_, 4096, 1, 1);
        }
        submit_wait();
        cur_n_ = n;
    }

    double measure(std::uint32_t n, bool ta, bool tb, const char* phase, int reps) {
        prepare(n);
        vk::GemmArgs g;
        g.dtype = tandem::DType::f32;
        g.trans_a = ta;
        g.trans_b = tb;
        g.m = g.n = g.k = n;
        g.a = a_->address();
        g.b = b_->address();
        g.d = d_->address();
        g.lda = g.ldb = g.ldc = g.ldd = n;
        const bool packed = coop_->input() == vk::CoopmatInput::f16;
        // Input f16: the packing of A and B (timed with the product), then the kernel on the halves.
        auto pack = [&] {
            if (!packed) return;
            vk::record_pack_f16(cmd_, *pack_, a_->address(), pa_->address(), std::uint64_t{n} * n);
            vk::record_pack_f16(cmd_, *pack_, b_->address(), pb_->address(), std::uint64_t{n} * n);
            barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        };
        if (packed) {
            g.a = pa_->address();
            g.b = pb_->address();
        }
        const auto t0 = std::chrono::steady_clock::now();
        coop_->pipeline(g);
        const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const auto warm0 = std::chrono::steady_clock::now();
        while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm0).count() < opt_.warm_ms) {
            begin();
            for (int i = 0; i < 4; ++i) {
                pack();
                coop_->record(cmd_, g);
                barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        VK_ACCESS_SHADER_WRITE_BIT);
            }
            submit_wait();
        }
        const int total = std::min<int>(opt_.warmup + reps, (kMaxQueries - 1) / 2);
        begin();
        vkCmdResetQueryPool(cmd_, queries_.get(), 0, kMaxQueries);
        for (int i = 0; i < total; ++i) {
            vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), static_cast<std::uint32_t>(2 * i));
            pack();
            vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), static_cast<std::uint32_t>(2 * i + 1));
            coop_->record(cmd_, g);
            barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT);
        }
        vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), static_cast<std::uint32_t>(2 * total));
        const std::vector<std::uint32_t> cols = {0, n / 3, n - 1};
        const VkDeviceSize col_bytes = VkDeviceSize{n} * 4;
        auto back = readback_->allocate(col_bytes * cols.size());
        barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
        std::vector<VkBufferCopy> regions;
        for (std::size_t c = 0; c < cols.size(); ++c)
            regions.push_back({d_->offset() + VkDeviceSize{cols[c]} * col_bytes, back->offset() + c * col_bytes, col_bytes});
        vkCmdCopyBuffer(cmd_, d_->buffer(), back->buffer(), static_cast<std::uint32_t>(regions.size()), regions.data());
        barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        submit_wait();
        std::vector<std::uint64_t> ts(2 * static_cast<std::size_t>(total) + 1);
        vk::check(vkGetQueryPoolResults(ctx_->device(), queries_.get(), 0, static_cast<std::uint32_t>(ts.size()), ts.size() * 8,
                                        ts.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults");
        const auto& desc = ctx_->description();
        const std::uint64_t mask = desc.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << desc.timestamp_valid_bits) - 1);
        auto span_ms = [&](std::size_t from, std::size_t to) {
            return static_cast<double>((ts[to] - ts[from]) & mask) * desc.timestamp_period_ns / 1e6;
        };
        std::vector<double> ms, gemm_ms;
        for (int i = opt_.warmup; i < total; ++i) {
            const auto at = 2 * static_cast<std::size_t>(i);
            ms.push_back(span_ms(at, at + 2));
            gemm_ms.push_back(span_ms(at + 1, at + 2));
        }
        std::sort(ms.begin(), ms.end());
        std::sort(gemm_ms.begin(), gemm_ms.end());
        const double med = ms[ms.size() / 2], best = ms.front();
        const double flop = 2.0 * n * static_cast<double>(n) * n;
        // Sampled columns against a double reference on the rounded operands.
        back->invalidate();
        double worst = 0;
        const std::uint32_t row_step = n > 4096 ? 7 : 3;
        auto r16 = [](double x) { return static_cast<double>(tandem::detail::cpu::round_to_f16(static_cast<float>(x))); };
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::uint32_t j = cols[c];
            std::vector<double> bcol(n);
            for (std::uint32_t p = 0; p < n; ++p) bcol[p] = r16(value(2, tb ? j + std::uint64_t{p} * n : p + std::uint64_t{j} * n));
            for (std::uint32_t i = 0; i < n; i += row_step) {
                double ref = 0, mag = 0;
                for (std::uint32_t p = 0; p < n; ++p) {
                    const double x = r16(value(1, ta ? p + std::uint64_t{i} * n : i + std::uint64_t{p} * n));
                    ref += x * bcol[p];
                    mag += std::fabs(x * bcol[p]);
                }
                float got = 0;
                std::memcpy(&got, static_cast<const char*>(back->mapped()) + c * col_bytes + i * 4, 4);
                const double bound = 3.0 * (n + 2) * 0x1p-23 * mag;
                worst = std::max(worst, std::fabs(got - ref) / bound);
                if (!(std::fabs(got - ref) <= bound)) {
                    emit({{"kind", "error"}, {"what", "check failed"}, {"i", i}, {"j", j}, {"got", got}, {"ref", ref}});
                    std::exit(1);
                }
            }
        }
        const double tflops = flop / (med * 1e-3) / 1e12;
        emit({{"kind", "coopmat"}, {"phase", phase}, {"n", n}, {"op", std::string(ta ? "T" : "N") + (tb ? "T" : "N")},
              {"tiles", coop_->tiles().name()},
              {"input", input_name()},
              {"conversion", coop_->conversion() == vk::CoopmatConversion::exact ? "exact" : "hardware"}, {"median_ms", med},
              {"gemm_median_ms", gemm_ms[gemm_ms.size() / 2]},
              {"best_ms", best}, {"tflops", tflops}, {"tflops_best", flop / (best * 1e-3) / 1e12}, {"reps", reps},
              {"pipeline_ms", compile_ms}, {"check_worst_of_bound", worst}});
        return tflops;
    }

    Options opt_;
    std::unique_ptr<vk::Context> ctx_;
    std::shared_ptr<vk::DeviceHeap> heap_, readback_;
    std::unique_ptr<vk::PipelineCache> pipelines_;
    std::unique_ptr<vk::GemmCoopmat> coop_;
    vk::CommandPool pool_;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    vk::Fence fence_;
    vk::QueryPool queries_;
    const vk::ComputePipeline *init_ = nullptr, *pack_ = nullptr;
    std::shared_ptr<vk::DeviceArray> a_, b_, d_, pa_, pb_;
    std::uint32_t cur_n_ = 0;
};

// matmul(A, B, {false, false, f16}) through the public API: wall time of evaluate() of the product
// alone (A and B already on the device), median of --reps.
void api(const Options& o) {
    tandem::Config c;
    c.device = "vulkan";
    tandem::Runtime rt(c);
    for (std::uint32_t n : o.sizes) {
        const tandem::Shape s{n, n};
        tandem::Array a = tandem::rand(rt, s, tandem::DType::f32), b = tandem::rand(rt, s, tandem::DType::f32);
        rt.evaluate({a, b}).get();
        for (auto p : {tandem::MatmulPrecision::f16, tandem::MatmulPrecision::full}) {
            std::vector<double> ms;
            for (int r = 0; r < o.reps + 2; ++r) {
                // A fresh node each time (the previous product was released with its node).
                const tandem::Array p_ab = tandem::matmul(a, b, {false, false, p});
                const auto t0 = std::chrono::steady_clock::now();
                rt.evaluate({p_ab}).get();
                if (r >= 2) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            std::sort(ms.begin(), ms.end());
            const double med = ms[ms.size() / 2];
            emit({{"kind", "api"}, {"n", n}, {"precision", tandem::to_string(p)}, {"median_wall_ms", med},
                  {"tflops_wall", 2.0 * n * static_cast<double>(n) * n / (med * 1e-3) / 1e12}});
        }
    }
}

std::vector<std::uint32_t> parse_sizes(const std::string& s) {
    std::vector<std::uint32_t> out;
    std::stringstream ss(s);
    for (std::string t; std::getline(ss, t, ',');) out.push_back(static_cast<std::uint32_t>(std::stoul(t)));
    return out;
}

// "128x128x32/2x4g8"
vk::CoopmatTiles parse_tiles(const std::string& s) {
    vk::CoopmatTiles t;
    if (std::sscanf(s.c_str(), "%ux%ux%u/%ux%ug%u", &t.bm, &t.bn, &t.bk, &t.warps_m, &t.warps_n, &t.group_m) < 5) {
        std::fprintf(stderr, "bad tiling '%s' (BMxBNxBK/WMxWN[gG])\n", s.c_str());
        std::exit(2);
    }
    return t;
}

}  // namespace

// A crash prints its stack (addresses; resolve them with addr2line on the unstripped binary).
void on_crash(int sig) {
    void* frames[64];
    const int n = backtrace(frames, 64);
    const char msg[] = "tandem-gemm-coopmat-bench: crashed; stack:\n";
    (void)!write(2, msg, sizeof msg - 1);
    backtrace_symbols_fd(frames, n, 2);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

int main(int argc, char** argv) {
    std::signal(SIGSEGV, on_crash);
    std::signal(SIGABRT, on_crash);
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--sizes") o.sizes = parse_sizes(next());
        else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str()));
        else if (a == "--warm-ms") o.warm_ms = std::atof(next().c_str());
        else if (a == "--no-api") o.api = false;
        else if (a == "--api-only") o.kernel = false;
        else if (a == "--tiles") {
            o.tiles.clear();
            std::stringstream ss(next());
            for (std::string t; std::getline(ss, t, ',');) o.tiles.push_back(parse_tiles(t));
        } else {
            std::fprintf(stderr, "usage: tandem-gemm-coopmat-bench [--sizes 4096,8192] [--reps 10] [--tiles ...] "
                                 "[--warm-ms 200] [--no-api]\n");
            return 2;
        }
    }
    try {
        if (o.kernel) {
            Bench b(o);
            b.run();
        }
        if (o.api) api(o);
    } catch (const std::exception& e) {
        emit({{"kind", "error"}, {"what", e.what()}});
        return 1;
    }
    return 0;
}
