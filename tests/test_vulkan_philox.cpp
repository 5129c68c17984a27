// The random-number core on the Vulkan device (lavapipe in CI): shaders/philox.glsl compiled into small
// compute kernels, each function run over 1e6 element indices (several seeds, streams and index ranges,
// the 2^32 and 2^63 boundaries included) and compared bit for bit with backends/cpu/philox.hpp --
// the promise that the same seed and shape give the same numbers wherever a region runs. Also Random123's
// known answers on the device, and the word-level normal transforms on crafted extreme words.
//
// Settings: TANDEM_PHILOX_COUNT (elements per function, default 1000000); TANDEM_TEST_VALIDATION=0 runs
// without the Khronos validation layer (the GPU machine has none; CI keeps it on and it must stay
// silent). Throughput belongs to the generator ops' benchmark (tandem-gpu-bench --only reduce: randn).
// The Vulkan side (context, pipelines, submission, read-back) is glsl_harness.hpp, shared with
// test_vulkan_math.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/philox.hpp"
#include "glsl_harness.hpp"
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
        const bool validation = env_flag("TANDEM_TEST_VALIDATION", true);
        dev_.open(validation);
        std::printf("[philox] device: %s, validation %s\n", dev_.ctx->description().name.c_str(), validation ? "on" : "off");
    }
    static void TearDownTestSuite() { dev_.close(); }

    /// EXPR for count elements (element indices base + g), with optional input words.
    template <class T> std::vector<T> run_device(const std::string& expr, std::size_t count, const Push& params,
                                                 const std::vector<Words>* in = nullptr) {
        const tglsl::Kernel k = dev_.kernel(shader_source<T>(expr, 64), sizeof(Push));
        const VkDeviceSize bytes = std::max<VkDeviceSize>(count * sizeof(T), 16);
        auto oa = dev_.readback->allocate(bytes);
        std::memset(oa->mapped(), 0xA5, count * sizeof(T));
        std::shared_ptr<vk::DeviceArray> ia;
        if (in) {
            ia = dev_.upload->allocate(std::max<VkDeviceSize>(in->size() * sizeof(Words), 16));
            std::memcpy(ia->mapped(), in->data(), in->size() * sizeof(Words));
        }
        dev_.submit([&](VkCommandBuffer cb) {
            tglsl::dispatch_1d(cb, k, count, [&](std::uint32_t first) {
                Push p = params;
                p.in = ia ? ia->address() : 0;
                p.out = oa->address();
                p.first = first;
                p.count = static_cast<std::uint32_t>(count);
                return p;
            });
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
        EXPECT_EQ(dev_.ctx->validation_messages(), 0u) << dev_.texts();
    }

    static inline tglsl::Device dev_;
};

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
    EXPECT_EQ(dev_.ctx->validation_messages(), 0u) << dev_.texts();
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
    EXPECT_EQ(dev_.ctx->validation_messages(), 0u) << dev_.texts();
}

}  // namespace
