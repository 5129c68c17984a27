// tandem-gemm-gpu-bench: TFLOP/s of the Vulkan GEMM (backends/vulkan/gemm.hpp) on the device that
// "vulkan" opens (the H100 on the GPU machine; lavapipe here, with --sizes 256).
//
// For each element type: A and B (n x n, values k/2^23 - 1 from a counter hash, the same on the
// host) are made on the device by a small kernel; every tiling in --tiles (default: the GPU
// candidates that fit) is timed on the first size, NN, and the fastest is kept; then every size is
// timed with it (and, at the first size, the other three transpose combinations). A timing is the
// GPU time between timestamps around each of --reps back-to-back dispatches (after --warmup), as
// the median and the best; TFLOP/s = 2 n^3 / time. Each timed product is checked on sampled
// columns against a double-precision host reference (error bound of a length-n dot product).
// Output: one JSON object per line, then a table.
//
// Usage: tandem-gemm-gpu-bench [--sizes 4096,8192] [--dtypes f32,f64] [--tiles BMxBNxBK/TMxTN[vW][wM][p0],...]
//                              [--reps R] [--warmup W] [--no-sweep] [--mad fma,mul] [--probe]
//                              [--warm-ms MS] [--no-check] [--stats [--ir-dir DIR] [--spv F.spv,...]]
//                              [--coopmat]
// --mad sweeps the kernel's variants too: fma() or a * b + c as the inner multiply-add, or D:X+Y
// (#define X 1 and Y 1 before gemm.glsl, for experiment switches added to it; --no-check for the
// ones whose products are wrong on purpose). --probe first measures the device's multiply-add
// throughput (fp32/fp64: 8 chains of fma(), of a * b + c, and a 4x4 outer product whose operands
// are all registers, as in a GEMM). --stats times nothing: it prints the driver's statistics of
// each kernel (VK_KHR_pipeline_executable_properties: registers, local memory, ...; NVIDIA's
// "Local Memory Size" reads 2^36 + the bytes), for SPIR-V files given with --spv too, and writes
// the driver's internal representations (if any) to --ir-dir. --coopmat lists the
// cooperative-matrix shapes and element types the device offers (NV and KHR extensions).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/gemm.hpp"
#include "gemm_bench_common.hpp"

namespace vk = tandem::detail::vk;
using gemm_bench::emit;
using gemm_bench::json;
using gemm_bench::split;
using tandem::DType;

namespace {

struct Options {
    std::vector<std::uint32_t> sizes = {4096, 8192};
    std::vector<DType> dtypes = {DType::f32, DType::f64};
    std::vector<vk::GemmTiles> tiles;  // empty: the defaults below
    int reps = 10, warmup = 2;
    bool sweep = true;
    std::vector<std::string> mads = {"fma"};  // inner multiply-add forms to sweep: fma() or a * b + c
    bool probe = false;                       // FMA-throughput probe first
    double warm_ms = 250;                     // GPU kept busy this long before each timed batch (clocks up)
    bool stats = false;                       // the driver's statistics of each kernel (and nothing timed)
    std::string ir_dir;                       // --stats: write the driver's internal representations here
    std::vector<std::string> spv_files;       // --stats: also these SPIR-V files (a GEMM kernel's layout)
    bool coopmat = false;                     // list the device's cooperative-matrix shapes and types
    bool check = true;                        // --no-check: experiments whose products are wrong on purpose
};

const char* dt_name(DType t) { return t == DType::f32 ? "fp32" : "fp64"; }

// A Vulkan output structure, zeroed, with its sType.
template <class S>
S typed(VkStructureType type) {
    S s{};
    s.sType = type;
    return s;
}

// "fma" (the default), "mul" (a * b + c), or "D:X+Y": #define X 1 and Y 1 (gemm.glsl's experiment
// switches).
std::string mad_defines(const std::string& mad) {
    if (mad.rfind("D:", 0) == 0) {
        std::string out;
        std::stringstream ss(mad.substr(2));
        for (std::string m; std::getline(ss, m, '+');)
            if (!m.empty()) out += "#define " + m + " 1\n";
        return out;
    }
    return mad == "mul" ? "#define MAD(a, b, c) ((a) * (b) + (c))" : "";
}

const char* kProbeGlsl = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer O { T v[]; };
layout(push_constant) uniform P { uint64_t out_addr; uint iters; uint pad; } p;
void main() {
    T x = T(gl_GlobalInvocationID.x) * T(1e-9);
#ifdef OUTER
    // A 4x4 outer product per iteration, as a GEMM's inner loop: three register operands per FMA.
    T a0 = x, a1 = x + T(1), a2 = x + T(2), a3 = x + T(3);
    T b0 = x * T(0.5), b1 = x + T(0.25), b2 = x - T(0.75), b3 = x * T(0.125);
    T c00 = T(0), c01 = T(0), c02 = T(0), c03 = T(0), c10 = T(0), c11 = T(0), c12 = T(0), c13 = T(0);
    T c20 = T(0), c21 = T(0), c22 = T(0), c23 = T(0), c30 = T(0), c31 = T(0), c32 = T(0), c33 = T(0);
    for (uint i = 0; i < p.iters; ++i) {
        c00 = MAD(a0, b0, c00); c01 = MAD(a0, b1, c01); c02 = MAD(a0, b2, c02); c03 = MAD(a0, b3, c03);
        c10 = MAD(a1, b0, c10); c11 = MAD(a1, b1, c11); c12 = MAD(a1, b2, c12); c13 = MAD(a1, b3, c13);
        c20 = MAD(a2, b0, c20); c21 = MAD(a2, b1, c21); c22 = MAD(a2, b2, c22); c23 = MAD(a2, b3, c23);
        c30 = MAD(a3, b0, c30); c31 = MAD(a3, b1, c31); c32 = MAD(a3, b2, c32); c33 = MAD(a3, b3, c33);
    }
    O(p.out_addr + uint64_t(gl_GlobalInvocationID.x) * 8ul).v[0] = c00 + c01 + c02 + c03 + c10 + c11 + c12 + c13 +
        c20 + c21 + c22 + c23 + c30 + c31 + c32 + c33;
#else
    T a0 = x, a1 = x + T(1), a2 = x + T(2), a3 = x + T(3), a4 = x + T(4), a5 = x + T(5), a6 = x + T(6), a7 = x + T(7);
    const T m = T(0.9999999), c = T(1e-7);
    for (uint i = 0; i < p.iters; ++i) {
        a0 = MAD(a0, m, c); a1 = MAD(a1, m, c); a2 = MAD(a2, m, c); a3 = MAD(a3, m, c);
        a4 = MAD(a4, m, c); a5 = MAD(a5, m, c); a6 = MAD(a6, m, c); a7 = MAD(a7, m, c);
    }
    O(p.out_addr + uint64_t(gl_GlobalInvocationID.x) * 8ul).v[0] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
#endif
}
)";

class Bench {
public:
    explicit Bench(const Options& o) : opt_(o) {
        dev_.open();
        dev_.setup(kMaxQueries, "bench:gemm-init");
        ctx_ = dev_.ctx.get();
        gemm_ = std::make_unique<vk::Gemm>(*ctx_, *dev_.pipelines);
        const auto& d = ctx_->description();
        emit({{"kind", "device"}, {"name", d.name}, {"driver", d.driver}, {"shared_memory_bytes", d.shared_memory_bytes},
              {"tiles_f32", gemm_->tiles(DType::f32).name()}, {"tiles_f64", gemm_->tiles(DType::f64).name()}});
    }
    ~Bench() {
        if (ctx_) vkDeviceWaitIdle(ctx_->device());
    }

    void run() {
        if (opt_.coopmat) coopmat();
        if (opt_.stats) {
            stats();
            return;
        }
        if (opt_.probe) probe();
        for (DType dt : opt_.dtypes) {
            const std::uint32_t n0 = opt_.sizes.front();
            if (opt_.sweep) {
                std::vector<vk::GemmTiles> cands = opt_.tiles;
                if (cands.empty())
                    cands = dt == DType::f64
                                ? std::vector<vk::GemmTiles>{{128, 128, 8, 8, 8},  {128, 128, 8, 8, 8, 1}, {128, 128, 8, 16, 4},
                                                             {256, 64, 8, 16, 4},  {128, 64, 8, 8, 4},     {64, 64, 8, 4, 4},
                                                             {64, 64, 16, 4, 4}}
                                : std::vector<vk::GemmTiles>{{128, 128, 8, 8, 8},  {128, 128, 16, 8, 8}, {128, 64, 8, 8, 4},
                                                             {64, 128, 8, 4, 8},   {128, 256, 8, 8, 16}, {256, 128, 8, 16, 8},
                                                             {64, 64, 8, 4, 4}};
                double best = 0;
                vk::GemmTiles best_tiles = gemm_->tiles(dt);
                std::string best_mad = opt_.mads.front();
                for (const auto& mad : opt_.mads)
                    for (const auto& t : cands) {
                        if (!t.unfit_reason(dt, ctx_->description()).empty()) continue;
                        gemm_->set_tiles(dt, t);
                        gemm_->set_defines(dt, mad_defines(mad));
                        mad_ = mad;
                        const double tf = measure(dt, n0, false, false, "sweep", std::max(3, opt_.reps / 2));
                        if (tf > best) {
                            best = tf;
                            best_tiles = t;
                            best_mad = mad;
                        }
                    }
                gemm_->set_tiles(dt, best_tiles);
                gemm_->set_defines(dt, mad_defines(best_mad));
                mad_ = best_mad;
                emit({{"kind", "best_tiles"}, {"dtype", dt_name(dt)}, {"tiles", best_tiles.name()}, {"mad", best_mad},
                      {"tflops", best}});
            }
            for (std::uint32_t n : opt_.sizes) measure(dt, n, false, false, "final", opt_.reps);
            for (auto [ta, tb] : {std::pair{false, true}, {true, false}, {true, true}})
                measure(dt, n0, ta, tb, "final", std::max(3, opt_.reps / 2));
        }
    }

private:
    static constexpr std::uint32_t kMaxQueries = 128;

    // Device arrays of the current (dtype, n), made once.
    void prepare(DType dt, std::uint32_t n) {
        if (dt == cur_dt_ && n == cur_n_) return;
        a_.reset();
        b_.reset();
        d_.reset();
        const VkDeviceSize bytes = VkDeviceSize{n} * n * tandem::dtype_size(dt);
        a_ = dev_.heap->allocate(bytes);
        b_ = dev_.heap->allocate(bytes);
        d_ = dev_.heap->allocate(bytes);
        dev_.fill(*a_, *b_, n, dt == DType::f64);
        cur_dt_ = dt;
        cur_n_ = n;
    }

    // Times `reps` products; returns the TFLOP/s of the median.
    double measure(DType dt, std::uint32_t n, bool ta, bool tb, const char* phase, int reps) {
        prepare(dt, n);
        const vk::GemmArgs g = gemm_bench::square_product(dt, n, ta, tb, *a_, *b_, *d_);
        const auto t0 = std::chrono::steady_clock::now();
        gemm_->pipeline(g);
        const double compile_ms = gemm_bench::ms_since(t0);
        auto product = [&](VkAccessFlags next) {
            gemm_->record(dev_.cmd, g);
            dev_.after_product(next);
        };
        dev_.warm(opt_.warm_ms, [&] { product(VK_ACCESS_SHADER_WRITE_BIT); });
        const int total = std::min<int>(opt_.warmup + reps, kMaxQueries - 1);
        dev_.begin_timed();
        for (int i = 0; i < total; ++i) {
            dev_.timestamp(static_cast<std::uint32_t>(i));
            product(VK_ACCESS_SHADER_WRITE_BIT);
        }
        dev_.timestamp(static_cast<std::uint32_t>(total));
        // Sampled columns of D for the check.
        const std::vector<std::uint32_t> cols = {0, n / 3, n - 1};
        auto back = dev_.copy_columns(*d_, cols, n, tandem::dtype_size(dt));
        const auto w0 = std::chrono::steady_clock::now();
        dev_.submit_wait();
        const double wall_ms = gemm_bench::ms_since(w0);
        const std::vector<std::uint64_t> ts = dev_.timestamps(static_cast<std::size_t>(total) + 1);
        std::vector<double> ms;
        for (int i = opt_.warmup; i < total; ++i)
            ms.push_back(dev_.span_ms(ts, static_cast<std::size_t>(i), static_cast<std::size_t>(i) + 1));
        const auto [med, best] = gemm_bench::median_best(ms);
        // Check sampled columns (rows strided for large n) against a double host reference.
        back->invalidate();
        const double worst = opt_.check ? gemm_bench::check_columns(*back, cols, n, ta, tb, dt == DType::f64,
                                                                    n > 4096 ? 5 : 1, [](double x) { return x; })
                                        : 0.0;
        const vk::GemmTiles t = gemm_->tiles(dt);
        const double tflops = gemm_bench::tflops(n, med);
        emit({{"kind", "gemm"}, {"phase", phase}, {"dtype", dt_name(dt)}, {"n", n},
              {"op", gemm_bench::op_name(ta, tb)}, {"tiles", t.name()}, {"mad", mad_},
              {"median_ms", med}, {"best_ms", best}, {"tflops", tflops}, {"tflops_best", gemm_bench::tflops(n, best)},
              {"reps", reps}, {"batch_wall_ms", wall_ms}, {"pipeline_ms", compile_ms}, {"check_worst_of_bound", worst}});
        return tflops;
    }

    // The cooperative-matrix shapes the device offers (VK_NV_cooperative_matrix, VK_KHR_cooperative_matrix),
    // asked of the physical device: which element types (fp64 among them?) the driver exposes.
    void coopmat() {
        VkPhysicalDevice phys = ctx_->physical();
        std::uint32_t count = 0;
        vkEnumerateDeviceExtensionProperties(phys, nullptr, &count, nullptr);
        std::vector<VkExtensionProperties> exts(count);
        vkEnumerateDeviceExtensionProperties(phys, nullptr, &count, exts.data());
        auto has = [&](const char* name) {
            return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
        };
        static const char* kTypes[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
        auto type = [](std::uint32_t t) -> std::string { return t < 11 ? kTypes[t] : std::to_string(t); };
        for (const char* which : {"NV", "KHR"}) {
            const bool nv = std::string(which) == "NV";
            const char* ext = nv ? "VK_NV_cooperative_matrix" : "VK_KHR_cooperative_matrix";
            json j{{"kind", "coopmat"}, {"extension", ext}, {"supported", has(ext)}};
            if (!has(ext)) {
                emit(j);
                continue;
            }
            // The KHR structure is declared here (these headers may predate it); same layout as NV's
            // plus saturatingAccumulation, with the same component-type values.
            struct KhrProps {
                VkStructureType sType;
                void* pNext;
                std::uint32_t m, n, k, a, b, c, result;
                VkBool32 saturating;
                std::uint32_t scope;
            };
            using Fn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*, void*);
            auto fn = reinterpret_cast<Fn>(vkGetInstanceProcAddr(
                ctx_->instance(), nv ? "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"
                                     : "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
            if (fn == nullptr) {
                j["error"] = "no entry point";
                emit(j);
                continue;
            }
            std::uint32_t n = 0;
            fn(phys, &n, nullptr);
            json shapes = json::array();
            if (nv) {
                std::vector<VkCooperativeMatrixPropertiesNV> props(
                    n, typed<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
                fn(phys, &n, props.data());
                for (const auto& p : props)
                    shapes.push_back({{"m", p.MSize}, {"n", p.NSize}, {"k", p.KSize}, {"a", type(p.AType)}, {"b", type(p.BType)},
                                      {"c", type(p.CType)}, {"d", type(p.DType)}, {"scope", p.scope}});
            } else {
                std::vector<KhrProps> props(n, typed<KhrProps>(static_cast<VkStructureType>(1000506001)));
                fn(phys, &n, props.data());
                for (const auto& p : props)
                    shapes.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"a", type(p.a)}, {"b", type(p.b)}, {"c", type(p.c)},
                                      {"d", type(p.result)}, {"scope", p.scope}});
            }
            j["shapes"] = shapes;
            emit(j);
        }
    }

    // The driver's own account of each GEMM kernel (VK_KHR_pipeline_executable_properties: register
    // count, spills, ...; its internal representations into --ir-dir), through a second VkDevice on
    // the same physical device that enables the extension. Nothing is timed.
    void stats() {
        VkPhysicalDevice phys = ctx_->physical();
        VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, nullptr, VK_TRUE};
        VkPhysicalDeviceVulkan12Features f12{};
        f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
        f12.pNext = &pe;
        f12.bufferDeviceAddress = VK_TRUE;
        VkPhysicalDeviceFeatures2 f2{};
        f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
        f2.pNext = &f12;
        f2.features.shaderFloat64 = VK_TRUE;
        f2.features.shaderInt64 = VK_TRUE;
        const float prio = 1;
        VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, ctx_->compute_family(), 1, &prio};
        const char* ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        VkDeviceCreateInfo di{};
        di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        di.pNext = &f2;
        di.queueCreateInfoCount = 1;
        di.pQueueCreateInfos = &qi;
        di.enabledExtensionCount = 1;
        di.ppEnabledExtensionNames = &ext;
        VkDevice dev = VK_NULL_HANDLE;
        if (VkResult r = vkCreateDevice(phys, &di, nullptr, &dev); r != VK_SUCCESS) {
            emit({{"kind", "stats"}, {"error", std::string("vkCreateDevice with ") + ext + ": " + vk::result_name(r)}});
            return;
        }
        VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, vk::kGemmPushBytes};
        VkPipelineLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        li.pushConstantRangeCount = 1;
        li.pPushConstantRanges = &range;
        VkPipelineLayout layout = VK_NULL_HANDLE;
        vk::check(vkCreatePipelineLayout(dev, &li, nullptr, &layout), "vkCreatePipelineLayout");
        struct Item {
            DType dt;
            vk::GemmTiles t;
            std::string mad;  // or the SPIR-V file's name
        };
        std::vector<Item> items;
        for (DType dt : opt_.dtypes) {
            std::vector<vk::GemmTiles> cands = opt_.tiles;
            if (cands.empty()) cands = {gemm_->tiles(dt)};
            for (const auto& mad : opt_.mads)
                for (const auto& t : cands)
                    if (t.unfit_reason(dt, ctx_->description()).empty()) items.push_back({dt, t, mad});
        }
        for (const auto& f : opt_.spv_files) items.push_back({DType::f64, vk::GemmTiles{0, 0, 0, 0, 0}, f});
        for (const auto& [dt, t, mad] : items) {
            std::vector<std::uint32_t> spirv;
            if (mad.size() > 4 && mad.compare(mad.size() - 4, 4, ".spv") == 0) {
                if (FILE* f = std::fopen(mad.c_str(), "rb")) {
                    std::uint32_t w;
                    while (std::fread(&w, 4, 1, f) == 1) spirv.push_back(w);
                    std::fclose(f);
                }
            } else
                spirv = vk::compile_compute_shader(
                    vk::gemm_kernel(dt, false, false, vk::GemmActivation::none, t, mad_defines(mad)).glsl);
            VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0, spirv.size() * 4,
                                        spirv.data()};
            VkShaderModule module = VK_NULL_HANDLE;
            vk::check(vkCreateShaderModule(dev, &mi, nullptr, &module), "vkCreateShaderModule");
            VkComputePipelineCreateInfo ci{};
            ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
            ci.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                       VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
            ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
            ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
            ci.stage.module = module;
            ci.stage.pName = "main";
            ci.layout = layout;
            VkPipeline pipe = VK_NULL_HANDLE;
            vk::check(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &pipe), "vkCreateComputePipelines");
            vkDestroyShaderModule(dev, module, nullptr);
            VkPipelineInfoKHR pinfo{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, pipe};
            std::uint32_t ne = 0;
            vkGetPipelineExecutablePropertiesKHR(dev, &pinfo, &ne, nullptr);
            std::vector<VkPipelineExecutablePropertiesKHR> execs(
                ne, typed<VkPipelineExecutablePropertiesKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR));
            vkGetPipelineExecutablePropertiesKHR(dev, &pinfo, &ne, execs.data());
            for (std::uint32_t e = 0; e < ne; ++e) {
                VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipe, e};
                std::uint32_t ns = 0;
                vkGetPipelineExecutableStatisticsKHR(dev, &ei, &ns, nullptr);
                std::vector<VkPipelineExecutableStatisticKHR> st(
                    ns, typed<VkPipelineExecutableStatisticKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR));
                vkGetPipelineExecutableStatisticsKHR(dev, &ei, &ns, st.data());
                json j{{"kind", "stats"}, {"dtype", dt_name(dt)}, {"tiles", t.bm ? t.name() : "-"}, {"mad", mad},
                       {"executable", execs[e].name}, {"subgroup_size", execs[e].subgroupSize}};
                for (const auto& s : st) {
                    switch (s.format) {
                    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: j[s.name] = s.value.b32 != 0; break;
                    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: j[s.name] = s.value.i64; break;
                    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: j[s.name] = s.value.u64; break;
                    default: j[s.name] = s.value.f64;
                    }
                }
                std::uint32_t nr = 0;
                vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &nr, nullptr);
                std::vector<VkPipelineExecutableInternalRepresentationKHR> irs(
                    nr, typed<VkPipelineExecutableInternalRepresentationKHR>(
                            VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR));
                vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &nr, irs.data());
                std::vector<std::vector<char>> bufs(nr);
                for (std::uint32_t r = 0; r < nr; ++r) {
                    bufs[r].resize(irs[r].dataSize + 1, 0);
                    irs[r].pData = bufs[r].data();
                }
                vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &nr, irs.data());
                json names = json::array();
                for (std::uint32_t r = 0; r < nr; ++r) {
                    names.push_back({{"name", irs[r].name}, {"text", irs[r].isText != 0}, {"bytes", irs[r].dataSize}});
                    if (opt_.ir_dir.empty()) continue;
                    std::string file = std::string(dt_name(dt)) + "_" + t.name() + "_" + mad + "_" + irs[r].name;
                    for (char& c : file)
                        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
                    if (FILE* f = std::fopen((opt_.ir_dir + "/" + file + ".txt").c_str(), "wb")) {
                        std::fwrite(bufs[r].data(), 1, irs[r].dataSize, f);
                        std::fclose(f);
                    }
                }
                j["internal_representations"] = names;
                emit(j);
            }
            vkDestroyPipeline(dev, pipe, nullptr);
        }
        vkDestroyPipelineLayout(dev, layout, nullptr);
        vkDestroyDevice(dev, nullptr);
    }

    // Multiply-add throughput: 8 independent chains per invocation, fp32/fp64, fma() and a * b + c.
    void probe() {
        auto out = dev_.heap->allocate(8ull << 22);
        for (const char* type : {"float", "double"})
            for (const char* mad : {"fma", "mul", "outer"}) {
                // outer: fma() in a 4x4 outer product (16 chains, all operands registers)
                const bool outer = std::string(mad) == "outer";
                vk::Kernel k;
                k.glsl = std::string(kProbeGlsl);
                const std::string defs = std::string("#define T ") + type + "\n#define MAD(a, b, c) " +
                                         (std::string(mad) == "mul" ? "((a) * (b) + (c))" : "fma(a, b, c)") + "\n" +
                                         (outer ? "#define OUTER 1\n" : "");
                k.glsl.insert(k.glsl.find('\n') + 1, defs);
                k.key = std::string("bench:probe:") + type + mad;
                k.workgroup_size = 256;
                k.elements_per_thread = 1;
                k.push_bytes = 16;
                const vk::ComputePipeline& p = dev_.pipelines->get(k);
                struct {
                    std::uint64_t addr;
                    std::uint32_t iters, pad;
                } push{out->address(), 4096, 0};
                const std::uint32_t groups = 132 * 64;  // a multiple of any SM count near the H100's
                double best = 1e30;
                for (int r = 0; r < 4; ++r) {
                    dev_.begin_timed();
                    vkCmdBindPipeline(dev_.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
                    vkCmdPushConstants(dev_.cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
                    dev_.timestamp(0);
                    vkCmdDispatch(dev_.cmd, groups, 1, 1);
                    dev_.timestamp(1);
                    dev_.submit_wait();
                    best = std::min(best, dev_.span_ms(dev_.timestamps(2), 0, 1));
                }
                const double flop = 2.0 * (outer ? 16 : 8) * push.iters * 256.0 * groups;
                emit({{"kind", "probe"}, {"type", type}, {"mad", mad}, {"ms", best}, {"tflops", flop / (best * 1e-3) / 1e12}});
            }
    }

    std::string mad_ = "fma";
    Options opt_;
    gemm_bench::Device dev_;
    vk::Context* ctx_ = nullptr;
    std::unique_ptr<vk::Gemm> gemm_;
    std::shared_ptr<vk::DeviceArray> a_, b_, d_;
    DType cur_dt_ = DType::logical;
    std::uint32_t cur_n_ = 0;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "tandem-gemm-gpu-bench: %s\nusage: tandem-gemm-gpu-bench [--sizes 4096,8192] [--dtypes f32,f64] "
                 "[--tiles BMxBNxBK/TMxTN[vW][wM][p0],...] [--reps R] [--warmup W] [--no-sweep]\n",
                 why.c_str());
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--sizes") {
            o.sizes.clear();
            for (const auto& s : split(next())) o.sizes.push_back(static_cast<std::uint32_t>(std::stoul(s)));
        } else if (a == "--dtypes") {
            o.dtypes.clear();
            for (const auto& s : split(next())) {
                if (s == "f32") o.dtypes.push_back(DType::f32);
                else if (s == "f64") o.dtypes.push_back(DType::f64);
                else usage("unknown dtype " + s);
            }
        } else if (a == "--tiles") {
            for (const auto& s : split(next())) {
                vk::GemmTiles t;
                int used = 0;
                if (std::sscanf(s.c_str(), "%ux%ux%u/%ux%u%n", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn, &used) < 5)
                    usage("bad tiles " + s);
                for (std::size_t p = static_cast<std::size_t>(used); p < s.size();) {  // suffixes vW, wM
                    std::size_t end = p + 1;
                    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
                    if (end == p + 1 || (s[p] != 'v' && s[p] != 'w' && s[p] != 'p')) usage("bad tiles " + s);
                    (s[p] == 'v' ? t.vw : s[p] == 'w' ? t.wm : t.pad) =
                        static_cast<std::uint32_t>(std::stoul(s.substr(p + 1, end - p - 1)));
                    p = end;
                }
                o.tiles.push_back(t);
            }
        } else if (a == "--reps") o.reps = std::stoi(next());
        else if (a == "--warmup") o.warmup = std::stoi(next());
        else if (a == "--no-sweep") o.sweep = false;
        else if (a == "--probe") o.probe = true;
        else if (a == "--warm-ms") o.warm_ms = std::stod(next());
        else if (a == "--stats") o.stats = true;
        else if (a == "--ir-dir") o.ir_dir = next();
        else if (a == "--spv") o.spv_files = split(next());
        else if (a == "--coopmat") o.coopmat = true;
        else if (a == "--no-check") o.check = false;
        else if (a == "--mad") {
            o.mads = split(next());
            for (const auto& m : o.mads)
                if (m != "fma" && m != "mul" && m.rfind("D:", 0) != 0) usage("--mad takes fma, mul or D:MACRO+MACRO");
        }
        else usage("unknown argument " + a);
    }
    if (o.sizes.empty() || o.dtypes.empty() || o.reps < 1) usage("nothing to measure");
    try {
        Bench b(o);
        b.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tandem-gemm-gpu-bench: %s\n", e.what());
        return 2;
    }
    std::printf("\n%-6s %-6s %-3s %-16s %-4s %10s %10s %10s\n", "dtype", "n", "op", "tiles", "mad", "median_ms", "TFLOP/s",
                "best");
    for (const json& j : gemm_bench::results())
        if (j["kind"] == "gemm")
            std::printf("%-6s %-6u %-3s %-16s %-4s %10.3f %10.2f %10.2f %s\n", j["dtype"].get<std::string>().c_str(),
                        j["n"].get<unsigned>(), j["op"].get<std::string>().c_str(), j["tiles"].get<std::string>().c_str(),
                        j["mad"].get<std::string>().c_str(), j["median_ms"].get<double>(), j["tflops"].get<double>(),
                        j["tflops_best"].get<double>(), j["phase"].get<std::string>().c_str());
    return 0;
}
