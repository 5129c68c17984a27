// The random-number core on the Vulkan device (lavapipe in CI): shaders/philox.glsl compiled into small
// compute kernels, each function run over 1e6 element indices (several seeds, streams and index ranges,
// the 2^32 and 2^63 boundaries included) and compared bit for bit with backends/cpu/philox.hpp --
// the promise that the same seed and shape give the same numbers wherever a region runs. Also Random123's
// known answers on the device, and the word-level normal transforms on crafted extreme words.
//
// Settings: TANDEM_PHILOX_COUNT (elements per function, default 1000000); TANDEM_TEST_VALIDATION=0 runs
// without the Khronos validation layer (the GPU machine has none; CI keeps it on and it must stay
// silent). Throughput belongs to the generator ops' benchmark (with the graph integration); the
// ThroughputProbe test (skipped unless TANDEM_PHILOX_PROBE=1) times the whole-block functions alone, and
// the variants in TANDEM_PHILOX_PROBE_DIR (*.glsl files, each with a `//EXPR: <vec4 expression of the
// block index b>` line), over 2^26 blocks (1 GiB written), to see where a generator kernel's time goes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/philox.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "tandem_shaders.hpp"

namespace vk = tandem::detail::vk;
namespace td = tandem::detail;

namespace {

struct Push {
    std::uint64_t in, out, seed, stream, base, n;
    std::int64_t lo;
    std::uint32_t first, count;
};
static_assert(sizeof(Push) == 64);

struct Words {
    std::uint32_t x[4];
};

template <class T> struct Glsl;
template <> struct Glsl<double> { static constexpr const char* type = "double"; };
template <> struct Glsl<float> { static constexpr const char* type = "float"; };
template <> struct Glsl<std::int64_t> { static constexpr const char* type = "int64_t"; };
template <> struct Glsl<Words> { static constexpr const char* type = "uvec4"; };
struct F4 {
    float x[4];
};
struct D2 {
    double x[2];
};
template <> struct Glsl<F4> { static constexpr const char* type = "vec4"; };
template <> struct Glsl<D2> { static constexpr const char* type = "dvec2"; };

template <class T> bool same_bits(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

bool env_flag(const char* name, bool dflt) {
    const char* s = std::getenv(name);
    if (!s || !*s) return dflt;
    return std::string(s) != "0";
}

std::size_t env_count() {
    if (const char* s = std::getenv("TANDEM_PHILOX_COUNT"); s && *s) return static_cast<std::size_t>(std::strtod(s, nullptr));
    return 1000000;
}

// One kernel: out[g] = EXPR for g in [0, count), with i = base + g (the element index), w = in[g].
template <class T> std::string shader_source(const std::string& expr, unsigned local) {
    std::ostringstream s;
    s << "#version 450\n"
         "#extension GL_EXT_buffer_reference : require\n"
         "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
         "layout(local_size_x = " << local << ") in;\n"
      << tandem_shader_philox << '\n'
      << "layout(buffer_reference, std430, buffer_reference_align = 16) buffer In { uvec4 v[]; };\n"
         "layout(buffer_reference, std430, buffer_reference_align = " << (sizeof(T) >= 8 ? 8 : sizeof(T)) << ") buffer Out { "
      << Glsl<T>::type << " v[]; };\n"
         "layout(push_constant) uniform Push { uint64_t in_; uint64_t out_; uint64_t seed; uint64_t stream; uint64_t base;\n"
         "    uint64_t n; int64_t lo; uint first; uint count; } pc;\n"
         "void main() {\n"
         "    uint g = pc.first + gl_GlobalInvocationID.x;\n"
         "    if (g >= pc.count) return;\n"
         "    uint64_t i = pc.base + uint64_t(g);\n"
         "    uvec4 w = pc.in_ != 0UL ? In(pc.in_).v[g] : uvec4(0u);\n"
         "    Out(pc.out_).v[g] = " << expr << ";\n"
         "}\n";
    return s.str();
}

class VulkanPhilox : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        vk::ContextOptions o;
        o.device = "vulkan";
        o.validation = env_flag("TANDEM_TEST_VALIDATION", true);
        ctx_ = vk::Context::create(o);
        using Kind = vk::DeviceHeap::Kind;
        upload_ = std::make_shared<vk::DeviceHeap>(*ctx_, Kind::upload, VkDeviceSize{64} << 20);
        readback_ = ctx_->readback_coherent() ? std::make_shared<vk::DeviceHeap>(*ctx_, Kind::readback, VkDeviceSize{64} << 20)
                                              : upload_;
        std::printf("[philox] device: %s, validation %s\n", ctx_->description().name.c_str(), o.validation ? "on" : "off");
    }
    static void TearDownTestSuite() {
        readback_.reset();
        upload_.reset();
        ctx_.reset();
    }

    static std::string texts() {
        std::string s;
        for (const auto& t : ctx_->validation_texts()) s += t + "\n";
        return s;
    }

    struct Kernel {
        vk::ShaderModule module;
        vk::PipelineLayout layout;
        vk::Pipeline pipeline;
    };

    template <class T> Kernel make_kernel(const std::string& expr, unsigned local) {
        const VkDevice dev = ctx_->device();
        const std::vector<std::uint32_t> spirv = vk::compile_compute_shader(shader_source<T>(expr, local));
        VkShaderModuleCreateInfo mi{};
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = spirv.size() * 4;
        mi.pCode = spirv.data();
        VkShaderModule raw_module = VK_NULL_HANDLE;
        vk::check(vkCreateShaderModule(dev, &mi, nullptr, &raw_module), "vkCreateShaderModule");
        vk::ShaderModule module(dev, raw_module);
        const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push)};
        VkPipelineLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        li.pushConstantRangeCount = 1;
        li.pPushConstantRanges = &range;
        VkPipelineLayout raw_layout = VK_NULL_HANDLE;
        vk::check(vkCreatePipelineLayout(dev, &li, nullptr, &raw_layout), "vkCreatePipelineLayout");
        vk::PipelineLayout layout(dev, raw_layout);
        VkComputePipelineCreateInfo ci{};
        ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module.get();
        ci.stage.pName = "main";
        ci.layout = layout.get();
        VkPipeline raw_pipeline = VK_NULL_HANDLE;
        vk::check(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &raw_pipeline), "vkCreateComputePipelines");
        return Kernel{std::move(module), std::move(layout), vk::Pipeline(dev, raw_pipeline)};
    }

    /// Records `record(cb)` into one command buffer, submits it and waits; returns the wall time.
    template <class Record> double submit(Record record) {
        const VkDevice dev = ctx_->device();
        VkCommandPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.queueFamilyIndex = ctx_->compute_family();
        VkCommandPool raw_pool = VK_NULL_HANDLE;
        vk::check(vkCreateCommandPool(dev, &pi, nullptr, &raw_pool), "vkCreateCommandPool");
        vk::CommandPool pool(dev, raw_pool);
        VkCommandBufferAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = pool.get();
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        vk::check(vkAllocateCommandBuffers(dev, &ai, &cb), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vk::check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        record(cb);
        VkMemoryBarrier mb{};
        mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
        vk::check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
        VkFenceCreateInfo fi{};
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        VkFence raw_fence = VK_NULL_HANDLE;
        vk::check(vkCreateFence(dev, &fi, nullptr, &raw_fence), "vkCreateFence");
        vk::Fence fence(dev, raw_fence);
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        const auto t0 = std::chrono::steady_clock::now();
        vk::check(vkQueueSubmit(ctx_->compute_queue(), 1, &si, fence.get()), "vkQueueSubmit");
        vk::check(vkWaitForFences(dev, 1, &raw_fence, VK_TRUE, 600'000'000'000ull), "vkWaitForFences");
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    /// EXPR for count elements (element indices base + g), with optional input words.
    template <class T> std::vector<T> run_device(const std::string& expr, std::size_t count, const Push& params,
                                                 const std::vector<Words>* in = nullptr) {
        Kernel k = make_kernel<T>(expr, 64);
        const VkDeviceSize bytes = std::max<VkDeviceSize>(count * sizeof(T), 16);
        auto oa = readback_->allocate(bytes);
        std::memset(oa->mapped(), 0xA5, count * sizeof(T));
        std::shared_ptr<vk::DeviceArray> ia;
        if (in) {
            ia = upload_->allocate(std::max<VkDeviceSize>(in->size() * sizeof(Words), 16));
            std::memcpy(ia->mapped(), in->data(), in->size() * sizeof(Words));
        }
        submit([&](VkCommandBuffer cb) {
            vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline.get());
            constexpr std::uint32_t chunk = 1u << 20;  // 16384 workgroups per dispatch
            for (std::size_t first = 0; first < count; first += chunk) {
                Push p = params;
                p.in = ia ? ia->address() : 0;
                p.out = oa->address();
                p.first = static_cast<std::uint32_t>(first);
                p.count = static_cast<std::uint32_t>(count);
                vkCmdPushConstants(cb, k.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
                const std::size_t m = std::min<std::size_t>(chunk, count - first);
                vkCmdDispatch(cb, static_cast<std::uint32_t>((m + 63) / 64), 1, 1);
            }
        });
        std::vector<T> out(count);
        std::memcpy(out.data(), oa->mapped(), count * sizeof(T));
        return out;
    }

    /// The element function over several (seed, stream, index range) configurations, count
    /// elements in all, against the C++ function ref(seed, stream, i, params).
    template <class T, class Ref> void check_elements(const char* name, const std::string& expr, Ref ref,
                                                      std::uint64_t n = 0, std::int64_t lo = 0) {
        const std::size_t total = env_count();
        struct Config {
            std::uint64_t seed, stream, base;
            double share;
        };
        const Config configs[] = {
            {42, 3, 0, 0.6},                                              // the start of a stream
            {~0ull, (1ull << 40) + 5, (1ull << 32) - total / 10, 0.2},    // across index 2^32, all-ones seed
            {0x9E3779B97F4A7C15ull, 0xFFFFFFFFull, (1ull << 63) - total / 10 - 1, 0.2},  // across 2^63
        };
        std::size_t mismatches = 0, checked = 0;
        std::string first_bad;
        for (const Config& c : configs) {
            const std::size_t count = std::max<std::size_t>(static_cast<std::size_t>(static_cast<double>(total) * c.share), 1);
            Push p{};
            p.seed = c.seed;
            p.stream = c.stream;
            p.base = c.base;
            p.n = n;
            p.lo = lo;
            const std::vector<T> got = run_device<T>(expr, count, p);
            std::vector<T> want(count);
            const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
            std::vector<std::thread> pool;
            for (std::size_t t = 0; t < threads; t++)
                pool.emplace_back([&, t] {
                    for (std::size_t g = count * t / threads; g < count * (t + 1) / threads; g++)
                        want[g] = ref(c.seed, c.stream, c.base + g);
                });
            for (auto& th : pool) th.join();
            for (std::size_t g = 0; g < count; g++)
                if (!same_bits(got[g], want[g])) {
                    if (mismatches++ == 0) {
                        char b[300];
                        std::snprintf(b, sizeof b, "seed %llx stream %llx element %llu", (unsigned long long)c.seed,
                                      (unsigned long long)c.stream, (unsigned long long)(c.base + g));
                        first_bad = b;
                        if constexpr (std::is_floating_point_v<T>)
                            first_bad += ": device " + std::to_string(got[g]) + " cpu " + std::to_string(want[g]);
                    }
                }
            checked += count;
        }
        std::printf("[philox] %-10s %zu elements, %zu differ from the CPU's bits\n", name, checked, mismatches);
        std::fflush(stdout);
        RecordProperty("elements", std::to_string(checked));
        EXPECT_EQ(mismatches, 0u) << name << ": first difference at " << first_bad;
        EXPECT_EQ(ctx_->validation_messages(), 0u) << texts();
    }

    static std::unique_ptr<vk::Context> ctx_;
    static std::shared_ptr<vk::DeviceHeap> upload_, readback_;
};

std::unique_ptr<vk::Context> VulkanPhilox::ctx_;
std::shared_ptr<vk::DeviceHeap> VulkanPhilox::upload_, VulkanPhilox::readback_;

TEST_F(VulkanPhilox, KnownAnswerVectors) {
    // Random123's kat_vectors: counter (the input words), key (seed's halves) -> result
    struct Kat {
        Words ctr;
        std::uint64_t key;
        Words out;
    };
    const Kat kats[] = {
        {{{0, 0, 0, 0}}, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
        {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, ~0ull, {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
        {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0x299f31d0a4093822ull, {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
    };
    for (const Kat& k : kats) {
        const std::vector<Words> in = {k.ctr};
        Push p{};
        p.seed = k.key;
        const std::vector<Words> got =
            run_device<Words>("tdm_philox4x32_10(w, uvec2(uint(pc.seed), uint(pc.seed >> 32)))", 1, p, &in);
        for (int j = 0; j < 4; j++) EXPECT_EQ(got[0].x[j], k.out.x[j]) << "word " << j;
    }
    EXPECT_EQ(ctx_->validation_messages(), 0u) << texts();
}

TEST_F(VulkanPhilox, Blocks) {
    check_elements<Words>("block", "tdm_philox_block(pc.seed, pc.stream, i)", [](std::uint64_t s, std::uint64_t st, std::uint64_t i) {
        const td::PhiloxBlock b = td::philox_block(s, st, i);
        return Words{{b.x[0], b.x[1], b.x[2], b.x[3]}};
    });
}

TEST_F(VulkanPhilox, RandF64) {
    check_elements<double>("rand_f64", "tdm_rand_f64(pc.seed, pc.stream, i)", td::rand_f64);
}

TEST_F(VulkanPhilox, RandF32) {
    check_elements<float>("rand_f32", "tdm_rand_f32(pc.seed, pc.stream, i)", td::rand_f32);
}

TEST_F(VulkanPhilox, Randi) {
    const std::string expr = "tdm_randi(pc.seed, pc.stream, i, pc.lo, pc.n)";
    check_elements<std::int64_t>("randi 1..6", expr, [](std::uint64_t s, std::uint64_t st, std::uint64_t i) {
        return td::randi(s, st, i, 1, 6);
    }, 6, 1);
    check_elements<std::int64_t>("randi 2^53", expr, [](std::uint64_t s, std::uint64_t st, std::uint64_t i) {
        return td::randi(s, st, i, -(std::int64_t{1} << 52), std::uint64_t{1} << 53);
    }, std::uint64_t{1} << 53, -(std::int64_t{1} << 52));
    check_elements<std::int64_t>("randi 2^64", expr, [](std::uint64_t s, std::uint64_t st, std::uint64_t i) {
        return td::randi(s, st, i, -3, 0);
    }, 0, -3);
}

TEST_F(VulkanPhilox, RandnF64) {
    check_elements<double>("randn_f64", "tdm_randn_f64(pc.seed, pc.stream, i)", td::randn_f64);
}

TEST_F(VulkanPhilox, RandnF32) {
    check_elements<float>("randn_f32", "tdm_randn_f32(pc.seed, pc.stream, i)", td::randn_f32);
}

// The whole-block functions of generator kernels (i = the block index here) against the CPU's words-to-values
// functions in the layout of philox.hpp (which test_philox.cpp ties to the element functions).
TEST_F(VulkanPhilox, WholeBlocks) {
    check_elements<F4>("randn_f32x4", "tdm_randn_f32x4(pc.seed, pc.stream, i)", [](std::uint64_t s, std::uint64_t st, std::uint64_t b) {
        const td::PhiloxBlock w = td::philox_block(s, st, b);  // elements 4b .. 4b + 3 (the words' layout)
        return F4{{td::normal_f32_from(w.x[0], w.x[1], false), td::normal_f32_from(w.x[0], w.x[1], true),
                   td::normal_f32_from(w.x[2], w.x[3], false), td::normal_f32_from(w.x[2], w.x[3], true)}};
    });
    check_elements<F4>("rand_f32x4", "tdm_rand_f32x4(pc.seed, pc.stream, i)", [](std::uint64_t s, std::uint64_t st, std::uint64_t b) {
        const td::PhiloxBlock w = td::philox_block(s, st, b);
        return F4{{td::uniform_f32_from(w.x[0]), td::uniform_f32_from(w.x[1]), td::uniform_f32_from(w.x[2]),
                   td::uniform_f32_from(w.x[3])}};
    });
    check_elements<D2>("randn_f64x2", "tdm_randn_f64x2(pc.seed, pc.stream, i)", [](std::uint64_t s, std::uint64_t st, std::uint64_t b) {
        const td::PhiloxBlock w = td::philox_block(s, st, b);
        return D2{{td::normal_f64_from(w, false), td::normal_f64_from(w, true)}};
    });
    check_elements<D2>("rand_f64x2", "tdm_rand_f64x2(pc.seed, pc.stream, i)", [](std::uint64_t s, std::uint64_t st, std::uint64_t b) {
        const td::PhiloxBlock w = td::philox_block(s, st, b);
        return D2{{td::uniform_f64_from(w.x[0], w.x[1]), td::uniform_f64_from(w.x[2], w.x[3])}};
    });
}

// The normal transforms on words that random indices rarely give: u1 = 1 and u1 near 0 (the radius'
// extremes, every leading-zero count of the radius bits), every setting of the three D4 bits with the
// smallest and largest angles.
TEST_F(VulkanPhilox, NormalExtremeWords) {
    std::vector<Words> in;
    std::mt19937_64 rng(5);
    const std::uint32_t angle_low[] = {0u, 0x1Fu, 0x20u, 0x3Fu, 0xFFu, 0x100u, 0x1FFFFFE0u, 0x1FFFFFFFu};
    for (int lz = 0; lz <= 64; lz++) {
        for (std::uint32_t o = 0; o < 8; o++)
            for (std::uint32_t a : angle_low) {
                const std::uint64_t r = rng();
                const std::uint64_t ra = lz == 64 ? 0 : (r | (1ull << 63)) >> lz;  // 0 or lz leading zeros
                const std::uint64_t ran = ~ra;                                     // 2^64 - 1 - ra: the other end
                for (std::uint64_t radius : {ra, ran}) {
                    const std::uint32_t r32 = static_cast<std::uint32_t>(radius >> 32);
                    in.push_back(Words{{static_cast<std::uint32_t>(radius), r32, a, (o << 29) | a}});
                }
            }
    }
    for (int k = 0; k < 100000; k++) {
        const std::uint64_t r = rng();
        in.push_back(Words{{static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32), static_cast<std::uint32_t>(rng()),
                            static_cast<std::uint32_t>(rng())}});
    }
    Push p{};
    std::size_t bad = 0;
    for (bool sine : {false, true}) {
        const std::string s = sine ? "true" : "false";
        const auto d = run_device<double>("tdm_rng_normal_f64(w, " + s + ")", in.size(), p, &in);
        const auto f = run_device<float>("tdm_rng_normal_f32(w.y, w.w, " + s + ")", in.size(), p, &in);
        const auto fx = run_device<float>("tdm_rng_normal_f32(w.x, w.z, " + s + ")", in.size(), p, &in);
        for (std::size_t g = 0; g < in.size(); g++) {
            const td::PhiloxBlock b{{in[g].x[0], in[g].x[1], in[g].x[2], in[g].x[3]}};
            const double wd = td::normal_f64_from(b, sine);
            const float wf = td::normal_f32_from(b.x[1], b.x[3], sine), wfx = td::normal_f32_from(b.x[0], b.x[2], sine);
            if (!same_bits(d[g], wd) || !same_bits(f[g], wf) || !same_bits(fx[g], wfx)) {
                if (bad++ < 5)
                    ADD_FAILURE() << "words " << std::hex << b.x[0] << " " << b.x[1] << " " << b.x[2] << " " << b.x[3]
                                  << std::dec << " sine " << sine << ": f64 device " << d[g] << " cpu " << wd
                                  << ", f32 device " << f[g] << " cpu " << wf << ", " << fx[g] << " cpu " << wfx;
            }
        }
    }
    std::printf("[philox] normal words: %zu words x 2, %zu differ\n", in.size(), bad);
    EXPECT_EQ(bad, 0u);
    // uniform and randi transforms on the same words
    const auto u = run_device<double>("tdm_rng_uniform_f64(w.x, w.y)", in.size(), p, &in);
    const auto uf = run_device<float>("tdm_rng_uniform_f32(w.z)", in.size(), p, &in);
    std::size_t ubad = 0;
    for (std::size_t g = 0; g < in.size(); g++)
        ubad += !same_bits(u[g], td::uniform_f64_from(in[g].x[0], in[g].x[1])) ||
                !same_bits(uf[g], td::uniform_f32_from(in[g].x[2]));
    EXPECT_EQ(ubad, 0u);
    EXPECT_EQ(ctx_->validation_messages(), 0u) << texts();
}



// Not a test of correctness: GPU time of whole-block generator kernels, 2^26 blocks of 16 bytes each (a
// vec4 per invocation, 256 per workgroup), median of 5 dispatches after 2, timestamps around each.
TEST_F(VulkanPhilox, ThroughputProbe) {
    if (!env_flag("TANDEM_PHILOX_PROBE", false)) GTEST_SKIP() << "TANDEM_PHILOX_PROBE=1 runs it";
    if (ctx_->description().timestamp_period_ns <= 0) GTEST_SKIP() << "no timestamps";
    struct Variant {
        std::string name, helpers, expr;
    };
    std::vector<Variant> variants = {
        {"store only", "", "vec4(float(g))"},
        {"philox block", "", "uintBitsToFloat(tdm_philox_block(pc.seed, pc.stream, b))"},
        {"rand_f32x4", "", "tdm_rand_f32x4(pc.seed, pc.stream, b)"},
        {"randn_f32x4", "", "tdm_randn_f32x4(pc.seed, pc.stream, b)"},
        {"randn f32 pairs, hashed words", "",
         "vec4(tdm_rng_normal_f32_pair(g * 0x9E3779B9u, g * 0x85EBCA6Bu), tdm_rng_normal_f32_pair(g * 0xC2B2AE35u, g ^ 0x27D4EB2Fu))"},
        {"randn_f64x2", "", "uintBitsToFloat(uvec4(unpackDouble2x32(tdm_randn_f64x2(pc.seed, pc.stream, b).x), "
                            "unpackDouble2x32(tdm_randn_f64x2(pc.seed, pc.stream, b).y)))"},
    };
    if (const char* dir = std::getenv("TANDEM_PHILOX_PROBE_DIR"); dir && *dir) {
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.path().extension() == ".glsl") files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            std::ifstream in(f);
            std::stringstream text;
            text << in.rdbuf();
            const std::string t = text.str();
            const std::size_t at = t.find("//EXPR:");
            if (at == std::string::npos) continue;
            const std::size_t end = t.find('\n', at);
            variants.push_back({f.stem().string(), t, t.substr(at + 7, end - at - 7)});
        }
    }
    constexpr std::uint32_t kLocal = 256;
    int log2 = 26;  // TANDEM_PHILOX_PROBE_LOG2: fewer blocks (a quick run on lavapipe)
    if (const char* e = std::getenv("TANDEM_PHILOX_PROBE_LOG2"); e && *e) log2 = std::clamp(std::atoi(e), 8, 28);
    const std::uint64_t kBlocks = std::uint64_t{1} << log2;
    const std::uint32_t kGroupsX = static_cast<std::uint32_t>(std::min<std::uint64_t>(16384, kBlocks / kLocal));
    const std::uint32_t kGroupsY = static_cast<std::uint32_t>(kBlocks / kLocal / kGroupsX);
    auto heap = std::make_shared<vk::DeviceHeap>(*ctx_, vk::DeviceHeap::Kind::device_local, kBlocks * 16);
    auto out = heap->allocate(kBlocks * 16);
    const VkDevice dev = ctx_->device();
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    constexpr std::uint32_t kReps = 7, kWarm = 2;
    qi.queryCount = 2 * kReps;
    VkQueryPool pool = VK_NULL_HANDLE;
    vk::check(vkCreateQueryPool(dev, &qi, nullptr, &pool), "vkCreateQueryPool");
    std::printf("[probe] %-34s %9s %9s   (2^%d blocks of 16 bytes)\n", "kernel", "GPU ms", "GB/s", log2);
    for (const Variant& v : variants) {
        std::ostringstream src;
        src << "#version 450\n"
               "#extension GL_EXT_buffer_reference : require\n"
               "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
               "layout(local_size_x = " << kLocal << ") in;\n"
            << tandem_shader_philox << '\n' << v.helpers << '\n'
            << "layout(buffer_reference, std430, buffer_reference_align = 16) buffer In { uvec4 v[]; };\n"
               "layout(buffer_reference, std430, buffer_reference_align = 16) buffer Out { vec4 v[]; };\n"
               "layout(push_constant) uniform Push { uint64_t in_; uint64_t out_; uint64_t seed; uint64_t stream; uint64_t base;\n"
               "    uint64_t n; int64_t lo; uint first; uint count; } pc;\n"
               "void main() {\n"
               "    uint g = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * " << kLocal << "u + gl_LocalInvocationID.x;\n"
               "    uint64_t b = pc.base + uint64_t(g);\n"
               "    Out(pc.out_).v[g] = " << v.expr << ";\n"
               "}\n";
        // make_kernel takes an expression: build the pipeline from the full source here
        const std::vector<std::uint32_t> spirv = vk::compile_compute_shader(src.str());
        VkShaderModuleCreateInfo mi{};
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = spirv.size() * 4;
        mi.pCode = spirv.data();
        VkShaderModule raw_module = VK_NULL_HANDLE;
        vk::check(vkCreateShaderModule(dev, &mi, nullptr, &raw_module), "vkCreateShaderModule");
        vk::ShaderModule module(dev, raw_module);
        const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push)};
        VkPipelineLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        li.pushConstantRangeCount = 1;
        li.pPushConstantRanges = &range;
        VkPipelineLayout raw_layout = VK_NULL_HANDLE;
        vk::check(vkCreatePipelineLayout(dev, &li, nullptr, &raw_layout), "vkCreatePipelineLayout");
        vk::PipelineLayout layout(dev, raw_layout);
        VkComputePipelineCreateInfo ci{};
        ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module.get();
        ci.stage.pName = "main";
        ci.layout = layout.get();
        VkPipeline raw_pipeline = VK_NULL_HANDLE;
        vk::check(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &raw_pipeline), "vkCreateComputePipelines");
        vk::Pipeline pipeline(dev, raw_pipeline);
        Push p{};
        p.out = out->address();
        p.seed = 0x0123456789ABCDEFull;
        p.stream = 7;
        submit([&](VkCommandBuffer cb) {
            vkCmdResetQueryPool(cb, pool, 0, 2 * kReps);
            vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.get());
            vkCmdPushConstants(cb, layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
            VkMemoryBarrier mb{};
            mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
            mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            mb.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            for (std::uint32_t r = 0; r < kReps; r++) {
                vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 2 * r);
                vkCmdDispatch(cb, kGroupsX, kGroupsY, 1);
                vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 2 * r + 1);
                vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                                     0, nullptr, 0, nullptr);
            }
        });
        std::uint64_t ts[2 * kReps] = {};
        vk::check(vkGetQueryPoolResults(dev, pool, 0, 2 * kReps, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "vkGetQueryPoolResults");
        std::vector<double> ms;
        const std::uint64_t mask = ctx_->description().timestamp_valid_bits >= 64
                                       ? ~0ull
                                       : (std::uint64_t{1} << ctx_->description().timestamp_valid_bits) - 1;
        for (std::uint32_t r = kWarm; r < kReps; r++)
            ms.push_back(static_cast<double>((ts[2 * r + 1] - ts[2 * r]) & mask) * ctx_->description().timestamp_period_ns * 1e-6);
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2];
        std::printf("[probe] %-34s %9.3f %9.0f\n", v.name.c_str(), med, static_cast<double>(kBlocks * 16) / med / 1e6);
        std::fflush(stdout);
    }
    vkDestroyQueryPool(dev, pool, nullptr);
}


}  // namespace
