// Vulkan code generation, the GLSL compiler and the pipeline cache. The first group needs no
// device: every op in f64 and f32, with full, scalar and strided inputs, generates GLSL that
// glslang accepts; keys are stable and shape/constant-agnostic; argument packing follows the
// documented layout. The second group opens a Vulkan device (lavapipe in CI; validation on) for
// the pipeline cache (memory and disk hits, corrupt files, unwritable directories, warm-up) and
// for dispatches of generated kernels compared with the CPU executor's semantics.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "graph/generators.hpp"
#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/kernel_builder.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/pipeline_cache.hpp"
#include "op_rows.hpp"
#include "plan_helper.hpp"
#include "region_builder.hpp"

namespace {

using namespace tandem::detail;
using namespace tandem::detail::vk;
using tandem::DType;
using tandem::Shape;
namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Regions exercising `op` in type t with each access pattern (and immediates).
std::vector<Region> regions_for(OpKind op, DType t) {
    std::vector<Region> out;
    const Shape s{4, 5};
    const OpInfo& info = op_info(op);
    if (op == OpKind::Input) return out;
    if (info.group == OpGroup::Reduce || info.group == OpGroup::Contract || info.group == OpGroup::View ||
        info.group == OpGroup::Scan || info.group == OpGroup::User)
        return out;  // never program instructions
    if (op == OpKind::Constant) {
        Builder b(s);
        b.out(b.op(op, {}, t, {3.5, 0, 0}));
        out.push_back(b.r);
        return out;
    }
    if (info.group == OpGroup::Generator) {
        Builder b(Shape{1, 7});
        auto g = b.op(op, {}, DType::f64, {1.0, op == OpKind::Linspace ? 2.0 : 0.25, 7});
        auto x = b.op(OpKind::Mul, {b.value(g), b.input(t, Shape{1, 7})});
        b.out(g);
        b.out(x);
        out.push_back(b.r);
        return out;
    }
    const std::vector<DType> casts = {DType::f64, DType::f32, DType::logical};
    for (int variant = 0; variant < 3; ++variant) {
        Builder b(s);
        auto full = [&](DType d) { return b.input(d, s); };
        auto strided = [&](DType d) { return variant == 1 ? b.input(d, Shape{4, 1}) : b.input(d, Shape{1, 5}); };
        auto scal = [&](DType d) { return b.input(d, Shape{1, 1}); };
        std::vector<Arg> args;
        if (info.arity == 1) {
            args = {variant == 0 ? full(t) : variant == 1 ? strided(t) : scal(t)};
        } else if (info.arity == 2) {
            if (variant == 0) args = {full(t), strided(t)};
            else if (variant == 1) args = {scal(t), Builder::scalar(op == OpKind::Pow ? 2.0 : 0.5, t)};
            else args = {Builder::scalar(1.5, t), full(DType::logical)};
        } else {
            if (variant == 0) args = {full(DType::logical), strided(t), Builder::scalar(2.0, t)};
            else if (variant == 1) args = {strided(t), scal(t), full(DType::f64)};
            else args = {Builder::scalar(1.0), full(t), full(DType::logical)};
        }
        auto v = b.op(op, args, casts[static_cast<std::size_t>(variant)]);
        b.out(v);
        // A second output in the other storage type exercises the output conversions.
        b.out(v, t == DType::f64 ? DType::f32 : DType::f64);
        out.push_back(b.r);
    }
    return out;
}

// ---- no device needed ----------------------------------------------------------------------

TEST(VulkanCodegen, EveryOpCompilesInF64AndF32) {
    struct Job {
        std::string what;
        Kernel kernel;
    };
    std::vector<Job> jobs;
    for (std::size_t k = 0; k < kOpCount; ++k) {
        const auto op = static_cast<OpKind>(k);
        for (DType t : {DType::f64, DType::f32})
            for (const Region& r : regions_for(op, t)) {
                Kernel kn = kernel_for(r);
                ASSERT_EQ(kn.glsl.rfind("#version 450\n", 0), 0u) << op_info(op).name;
                jobs.push_back({std::string(op_info(op).name) + " " + (t == DType::f64 ? "f64" : "f32") + " [" +
                                    kn.key + "]",
                                std::move(kn)});
            }
    }
    ASSERT_GT(jobs.size(), 250u);
    // Compiled from four threads at once: compile_compute_shader is thread-safe.
    std::vector<std::future<std::string>> results;
    const std::size_t threads = 4;
    for (std::size_t w = 0; w < threads; ++w)
        results.push_back(std::async(std::launch::async, [&, w] {
            std::string failures;
            for (std::size_t j = w; j < jobs.size(); j += threads) {
                try {
                    auto spirv = compile_compute_shader(jobs[j].kernel.glsl);
                    if (spirv.empty() || spirv[0] != 0x07230203u) failures += jobs[j].what + ": no SPIR-V\n";
                } catch (const ShaderCompileError& e) {
                    failures += jobs[j].what + ": " + e.what() + "\n";
                }
            }
            return failures;
        }));
    for (auto& f : results) EXPECT_EQ(f.get(), "");
}

TEST(VulkanCodegen, KeysAreShapeAndConstantAgnostic) {
    auto make = [](Shape s, Shape in_shape, double c, DType t) {
        Builder b(s);
        auto x = b.input(t, s);
        auto y = b.input(t, in_shape);
        auto v = b.op(OpKind::Add, {x, Builder::scalar(c, t)});
        auto w = b.op(OpKind::Mul, {b.value(v), y});
        b.out(w);
        return b.r;
    };
    const Kernel a = kernel_for(make(Shape{4, 5}, Shape{1, 5}, 1.0, DType::f64));
    const Kernel b = kernel_for(make(Shape{40, 50}, Shape{1, 50}, 7.0, DType::f64));
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.glsl, b.glsl);
    const Kernel c = kernel_for(make(Shape{4, 5}, Shape{4, 1}, 1.0, DType::f64));  // other collapsed pattern, same dims
    EXPECT_EQ(a.key, c.key);
    const Kernel d = kernel_for(make(Shape{4, 5, 3}, Shape{4, 1, 3}, 1.0, DType::f64));  // two collapsed dims
    EXPECT_NE(a.key, d.key);
    const Kernel e = kernel_for(make(Shape{4, 5}, Shape{1, 5}, 1.0, DType::f32));
    EXPECT_NE(a.key, e.key);
    const Kernel f = kernel_for(make(Shape{4, 5}, Shape{4, 5}, 1.0, DType::f64));
    EXPECT_NE(a.key, f.key);
    CodegenOptions o;
    o.workgroup_size = 64;
    EXPECT_NE(a.key, kernel_for(make(Shape{4, 5}, Shape{1, 5}, 1.0, DType::f64), o).key);
    // Only regions with a transcendental carry the math library.
    EXPECT_EQ(a.glsl.find("tdm_exp"), std::string::npos);
}

TEST(VulkanCodegen, StableHashHasFixedValues) {
    EXPECT_EQ(stable_hash("", 0), 0xcbf29ce484222325ull);
    EXPECT_EQ(stable_hash("a", 1), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(stable_hash("foobar", 6), 0x85944171f73967e8ull);
    EXPECT_EQ(stable_hash("foobar", 6, 1), stable_hash("foobar", 6, 1));
    EXPECT_NE(stable_hash("foobar", 6, 1), stable_hash("foobar", 6));
}

TEST(VulkanCodegen, PackArgumentsFollowsTheLayout) {
    Builder b(Shape{6, 4, 3});
    auto x = b.input(DType::f64, Shape{6, 4, 3});
    auto y = b.input(DType::f32, Shape{6, 1, 3});
    std::uint32_t v = b.op(OpKind::Add, {x, y});
    // 20 scalar immediates: more than the 14 that fit in 128 bytes of push constants.
    for (int k = 0; k < 20; ++k) v = b.op(OpKind::Add, {b.value(v), Builder::scalar(k + 0.5)});
    b.out(v);
    CodegenOptions o;
    o.workgroup_size = 8;
    o.elements_per_thread = 2;
    const Kernel kn = kernel_for(b.r, o);
    ASSERT_EQ(kn.push_bytes, 128u);
    ASSERT_EQ(kn.access[1], InputAccess::strided);
    const auto dims = b.r.input_dims(1);
    ASSERT_EQ(dims.size(), 3u);  // (6,1) (4,0) (3,6)
    EXPECT_EQ(std::make_pair(dims[0].extent, dims[0].stride), std::make_pair(std::int64_t{6}, std::int64_t{1}));
    EXPECT_EQ(std::make_pair(dims[1].extent, dims[1].stride), std::make_pair(std::int64_t{4}, std::int64_t{0}));
    EXPECT_EQ(std::make_pair(dims[2].extent, dims[2].stride), std::make_pair(std::int64_t{3}, std::int64_t{6}));
    EXPECT_FALSE(dims[0].mapped() || dims[1].mapped() || dims[2].mapped());
    const std::uint64_t in[2] = {0x1000, 0x2000}, outs[1] = {0x3000};
    const Launch l = pack_arguments(b.r, kn, in, outs, 0xABC0, 4);
    ASSERT_EQ(l.push.size(), 128u);
    auto u64 = [](const std::vector<std::byte>& bytes, std::size_t off) {
        std::uint64_t r = 0;
        std::memcpy(&r, bytes.data() + off, 8);
        return r;
    };
    auto f64 = [](const std::vector<std::byte>& bytes, std::size_t off) {
        double r = 0;
        std::memcpy(&r, bytes.data() + off, 8);
        return r;
    };
    EXPECT_EQ(u64(l.push, 0), 0xABC0u);
    EXPECT_EQ(u64(l.push, 8), 72u);
    EXPECT_EQ(f64(l.push, 16), 0.5);
    EXPECT_EQ(f64(l.push, 120), 13.5);
    ASSERT_EQ(l.args.size(), 16 + 3 * 8 + 3 * 48 + 6 * 8);
    std::uint32_t flag = 1, instr = 0;
    std::memcpy(&flag, l.args.data(), 4);
    std::memcpy(&instr, l.args.data() + 4, 4);
    EXPECT_EQ(flag, 0u);
    EXPECT_EQ(instr, 0xFFFFFFFFu);
    EXPECT_EQ(u64(l.args, 16), 0x1000u);
    EXPECT_EQ(u64(l.args, 24), 0x2000u);
    EXPECT_EQ(u64(l.args, 32), 0x3000u);
    // (extent, stride, divisor, n, step, offset) per dimension; n = 0: plain
    EXPECT_EQ(u64(l.args, 40), 6u);
    EXPECT_EQ(u64(l.args, 48), 1u);
    EXPECT_EQ(u64(l.args, 56), extent_divisor(6));
    EXPECT_EQ(u64(l.args, 64), 0u);
    EXPECT_EQ(u64(l.args, 88), 4u);
    EXPECT_EQ(u64(l.args, 96), 0u);
    EXPECT_EQ(u64(l.args, 136), 3u);
    EXPECT_EQ(u64(l.args, 144), 6u);
    EXPECT_EQ(f64(l.args, 184), 14.5);
    EXPECT_EQ(f64(l.args, 224), 19.5);
    // 72 elements / 16 per group = 5 groups, folded into 3 x 2 with max_groups_x = 4 (x as small
    // as two rows allow: one workgroup idle rather than three).
    EXPECT_EQ(l.groups_x, 3u);
    EXPECT_EQ(l.groups_y, 2u);
}

// The kernels' tdmk_udiv, as GLSL computes it, against the division it replaces.
TEST(VulkanCodegen, InvariantDivisorDividesEveryIndexExactly) {
    auto udiv = [](std::uint32_t n, std::uint64_t dv) {
        const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t{n} * static_cast<std::uint32_t>(dv)) >> 32);
        return (hi + ((n - hi) >> ((dv >> 32) & 0xFF))) >> (dv >> 40);
    };
    std::vector<std::int64_t> divisors;
    for (std::int64_t d = 1; d <= 300; ++d) divisors.push_back(d);
    for (int l = 2; l <= 32; ++l)
        for (std::int64_t delta : {-1, 0, 1})
            if (const std::int64_t d = (std::int64_t{1} << l) + delta; d <= 0xFFFFFFFFLL) divisors.push_back(d);
    for (std::int64_t d : {3840LL, 2160LL, 8294400LL, 1000000LL, 65537LL, 0x7FFFFFFFLL, 0x80000001LL, 0xFFFFFFFELL})
        divisors.push_back(d);
    std::mt19937_64 rng(7);
    for (std::int64_t d : divisors) {
        const std::uint64_t dv = extent_divisor(d);
        const auto du = static_cast<std::uint64_t>(d);
        std::vector<std::uint64_t> ns = {0, 1, du - 1, du, du + 1, 2 * du - 1, 2 * du, 0xFFFFFFFFu, 0xFFFFFFFEu,
                                         0xFFFFFFFFu / du * du, 0xFFFFFFFFu / du * du - 1};
        for (int k = 0; k < 2000; ++k) ns.push_back(rng() & 0xFFFFFFFFu);
        for (std::uint64_t n : ns) {
            if (n > 0xFFFFFFFFu) continue;
            ASSERT_EQ(udiv(static_cast<std::uint32_t>(n), dv), n / du) << n << " / " << d;
        }
    }
    // Extents of 2^32 and more are above every 32-bit index: the quotient is 0.
    for (std::int64_t d : {std::int64_t{1} << 32, (std::int64_t{1} << 32) + 1, std::int64_t{1} << 40})
        for (std::uint32_t n : {0u, 1u, 0xFFFFFFFFu}) EXPECT_EQ(udiv(n, extent_divisor(d)), 0u) << n << " / " << d;
}

TEST(VulkanCodegen, NanScalarOfLogicalOpIsCaughtOnTheHost) {
    Builder b(Shape{3, 1});
    auto v = b.op(OpKind::And, {b.input(DType::f64, Shape{3, 1}), Builder::scalar(kNaN)});
    b.out(v);
    const Kernel kn = kernel_for(b.r);
    const std::uint64_t in[1] = {0}, outs[1] = {0};
    EXPECT_THROW(pack_arguments(b.r, kn, in, outs, 0, 65535), tandem::ValueError);
    // The kernel's report, as the header reads back after a dispatch.
    std::byte header[16] = {};
    EXPECT_NO_THROW(check_error(b.r, header));
    const std::uint32_t flag = kErrorNanToLogical, instr = 0;
    std::memcpy(header + kErrorFlagOffset, &flag, 4);
    std::memcpy(header + kErrorInstrOffset, &instr, 4);
    try {
        check_error(b.r, header);
        FAIL() << "no error";
    } catch (const tandem::ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("and: NaN's cannot be converted to logicals"), std::string::npos) << e.what();
    }
}

TEST(VulkanCodegen, ContiguousFastPathIsChosenAndKeyed) {
    auto make = [](Shape s, Shape in_shape, DType t, DType out_t) {
        Builder b(s);
        auto v = b.op(OpKind::Add, {b.input(t, s), b.input(t, in_shape)});
        b.out(v, out_t);
        return b.r;
    };
    CodegenOptions o;
    o.workgroup_size = 8;
    o.elements_per_thread = 3;
    // All full (or scalar) inputs: the vector path, V = 2 with any f64 array, else 4.
    const Kernel f64 = kernel_for(make(Shape{1025, 1}, Shape{1025, 1}, DType::f64, DType::f64), o);
    EXPECT_EQ(f64.vector_width, 2u);
    EXPECT_EQ(f64.elements_per_thread, 4u);  // whole vectors: ceil(3 / 2) steps of 2
    EXPECT_NE(f64.glsl.find("dvec2"), std::string::npos);
    const Kernel f32 = kernel_for(make(Shape{7, 3}, Shape{1, 1}, DType::f32, DType::f32), o);
    EXPECT_EQ(f32.vector_width, 4u);
    EXPECT_EQ(kernel_for(make(Shape{7, 3}, Shape{7, 3}, DType::f32, DType::f64), o).vector_width, 2u);
    EXPECT_EQ(kernel_for(make(Shape{7, 3}, Shape{7, 3}, DType::logical, DType::logical), o).vector_width, 4u);
    // Strided inputs, or the fast path turned off: the general path, with another key.
    const Kernel strided = kernel_for(make(Shape{1025, 2}, Shape{1025, 1}, DType::f64, DType::f64), o);
    EXPECT_EQ(strided.vector_width, 1u);
    CodegenOptions off = o;
    off.contiguous_fast_path = false;
    const Kernel general = kernel_for(make(Shape{1025, 1}, Shape{1025, 1}, DType::f64, DType::f64), off);
    EXPECT_EQ(general.vector_width, 1u);
    EXPECT_NE(general.key, f64.key);
    // The same kernel for every size below 2^32; the general one from 2^32 elements on.
    EXPECT_EQ(kernel_for(make(Shape{3, 1}, Shape{3, 1}, DType::f64, DType::f64), o).key, f64.key);
    const Region huge = make(Shape{65536, 65536}, Shape{65536, 65536}, DType::f64, DType::f64);
    EXPECT_EQ(kernel_for(huge, o).vector_width, 1u);
    const std::uint64_t in[2] = {0, 0}, outs[1] = {0};
    EXPECT_THROW(pack_arguments(huge, f64, in, outs, 0, 65535), tandem::DeviceError);
    // Groups cover ceil(count / V) vectors, tile = workgroup_size * steps vectors.
    const Launch l = pack_arguments(make(Shape{1025, 1}, Shape{1025, 1}, DType::f64, DType::f64), f64, in, outs, 0, 65535);
    EXPECT_EQ(l.groups_x, 33u);  // 513 vectors / 16
    EXPECT_EQ(l.groups_y, 1u);
}

TEST(VulkanCodegen, CompileErrorNamesTheLine) {
    const std::string bad = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n    float x = undefined_thing;\n}\n";
    try {
        compile_compute_shader(bad);
        FAIL() << "compiled";
    } catch (const ShaderCompileError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
        EXPECT_NE(m.find("4:"), std::string::npos) << m;
    }
}

/// The instructions of a SPIR-V module: opcode and operands.
std::vector<std::vector<std::uint32_t>> spirv_instructions(const std::vector<std::uint32_t>& m) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::size_t i = 5; i < m.size();) {
        const std::uint32_t words = m[i] >> 16;
        if (words == 0 || i + words > m.size()) break;
        out.emplace_back(m.begin() + static_cast<std::ptrdiff_t>(i), m.begin() + static_cast<std::ptrdiff_t>(i + words));
        i += words;
    }
    return out;
}

TEST(VulkanCodegen, MarkersForbidContractionAndKeepSubnormals) {
    const std::string body = "layout(local_size_x = 1) in;\n"
                             "layout(std430, binding = 0) buffer B { float v[]; } b;\n"
                             "void main() { b.v[0] = b.v[1] * b.v[2] + b.v[3]; b.v[4] = -b.v[5] / b.v[6]; }\n";
    const auto plain = compile_compute_shader("#version 450\n" + body);
    const auto exact = compile_compute_shader(std::string("#version 450\n") + kExactArithmeticMarker + body);
    const auto kept = compile_compute_shader(std::string("#version 450\n") + kPreserveF32DenormalsMarker + body);
    auto count = [](const std::vector<std::uint32_t>& m, auto pred) {
        int n = 0;
        for (const auto& ins : spirv_instructions(m)) n += pred(ins) ? 1 : 0;
        return n;
    };
    auto no_contraction = [](const std::vector<std::uint32_t>& i) { return (i[0] & 0xFFFFu) == 71 && i.size() == 3 && i[2] == 42; };
    auto float_ops = [](const std::vector<std::uint32_t>& i) {
        const std::uint32_t op = i[0] & 0xFFFFu;
        return op == 127 || op == 129 || op == 131 || op == 133 || op == 136;
    };
    EXPECT_EQ(count(plain, no_contraction), 0);
    EXPECT_EQ(count(exact, float_ops), 4);  // *, +, negate, /
    EXPECT_EQ(count(exact, no_contraction), 4) << "every float operation decorated NoContraction";
    EXPECT_EQ(exact.size(), plain.size() + 4 * 3);
    auto denorm_cap = [](const std::vector<std::uint32_t>& i) { return (i[0] & 0xFFFFu) == 17 && i[1] == 4464; };
    auto denorm_mode = [](const std::vector<std::uint32_t>& i) {
        return (i[0] & 0xFFFFu) == 16 && i.size() == 4 && i[2] == 4459 && i[3] == 32;
    };
    EXPECT_EQ(count(kept, denorm_cap), 1);
    EXPECT_EQ(count(kept, denorm_mode), 1);
    EXPECT_EQ(count(plain, denorm_mode), 0);
    EXPECT_EQ(kept.size(), plain.size() + 2 + 4);
    // layout: capabilities first, the execution mode after the entry point, before the annotations
    const auto ins = spirv_instructions(kept);
    std::size_t cap = 0, entry = 0, mode = 0, first_decoration = ins.size();
    for (std::size_t k = 0; k < ins.size(); ++k) {
        const std::uint32_t op = ins[k][0] & 0xFFFFu;
        if (denorm_cap(ins[k])) cap = k;
        if (op == 15) entry = k;
        if (denorm_mode(ins[k])) mode = k;
        if (op == 71 && first_decoration == ins.size()) first_decoration = k;
    }
    EXPECT_LT(cap, entry);
    EXPECT_GT(mode, entry);
    EXPECT_LT(mode, first_decoration);
}

// ---- with a device ---------------------------------------------------------------------------

class VulkanDevice : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ContextOptions o;
        o.validation = true;
        ctx_ = Context::create(o).release();  // fails (not skips) without a device: CI has lavapipe
    }
    static void TearDownTestSuite() {
        delete ctx_;
        ctx_ = nullptr;
    }
    void TearDown() override {
        ASSERT_NE(ctx_, nullptr);
        EXPECT_EQ(ctx_->validation_messages(), 0u) << [] {
            std::string s;
            for (auto& t : ctx_->validation_texts()) s += t + "\n";
            return s;
        }();
    }
    static fs::path temp_dir(const char* name) {
        fs::path d = fs::temp_directory_path() / ("tandem-pc-" + std::to_string(::getpid()) + "-" + name);
        fs::remove_all(d);
        return d;
    }
    static Kernel sample_kernel(double which = 0) {
        Builder b(Shape{8, 8});
        auto v = b.op(OpKind::Sin, {b.input(DType::f64, Shape{8, 8})});
        v = b.op(which == 0 ? OpKind::Add : OpKind::Sub, {b.value(v), Builder::scalar(1.0)});
        b.out(v);
        return kernel_for(b.r);
    }
    static Context* ctx_;
};
Context* VulkanDevice::ctx_ = nullptr;

TEST_F(VulkanDevice, PipelineCacheMissThenHitThenDiskHit) {
    ASSERT_NE(ctx_, nullptr);
    const fs::path dir = temp_dir("hits");
    std::vector<std::string> reports;
    const Kernel k = sample_kernel();
    {
        PipelineCache pc(*ctx_, dir.string(), [&](const std::string& m) { reports.push_back(m); });
        const ComputePipeline& p = pc.get(k);
        EXPECT_NE(p.pipeline, VK_NULL_HANDLE);
        EXPECT_EQ(&pc.get(k), &p);
        auto s = pc.stats();
        EXPECT_EQ(s.misses, 1u);
        EXPECT_EQ(s.hits, 1u);
        EXPECT_EQ(s.directory, dir.string());
        EXPECT_GT(s.compile_ms, 0.0);
    }
    EXPECT_TRUE(fs::exists(dir / "pipeline_cache.bin"));
    {
        PipelineCache pc(*ctx_, dir.string(), [&](const std::string& m) { reports.push_back(m); });
        pc.get(k);
        auto s = pc.stats();
        EXPECT_EQ(s.disk_hits, 1u);
        EXPECT_EQ(s.misses, 0u);
        pc.get(sample_kernel(1));
        EXPECT_EQ(pc.stats().misses, 1u);
    }
    EXPECT_TRUE(reports.empty()) << reports.front();
    fs::remove_all(dir);
}

// Kernels built ahead of time (the scheduler's answer to a cold pipeline: the CPU runs the region
// while the device's kernel builds): a kernel never seen waits the expected build time; prepare()
// builds it on the builder's thread, after which it waits nothing and recording compiles nothing.
TEST_F(VulkanDevice, KernelBuilderBuildsAheadAndPricesTheWait) {
    ASSERT_NE(ctx_, nullptr);
    PipelineCache pc(*ctx_, "", [](const std::string&) {});
    KernelBuilder kb(pc, CodegenOptions{}, 0.05, 0.002);
    auto region = [](OpKind op) {
        Builder b(Shape{8, 8});
        auto v = b.op(OpKind::Sin, {b.input(DType::f64, Shape{8, 8})});
        b.out(b.op(op, {b.value(v), Builder::scalar(1.0)}));
        return b.r;
    };
    const Region r = region(OpKind::Add);
    std::vector<InputAccess> access;
    std::vector<InputWalk> walks;
    access_for(r, access, walks);
    EXPECT_DOUBLE_EQ(kb.wait_s(r, access, walks, 0), 0.05);
    kb.prepare(r, access, walks, 0);
    kb.prepare(r, access, walks, 0);  // under way already: nothing more
    EXPECT_EQ(kb.prepared(), 1u);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (kb.wait_s(r, access, walks, 0) > 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Ready: the build is done (one under way is priced at least as long as it has run).
    KernelBuilder::Entry& e = kb.get(r, access, walks, 0);
    EXPECT_NE(e.pipeline.get()->pipeline, VK_NULL_HANDLE);
    EXPECT_EQ(pc.stats().misses, 1u);
    EXPECT_EQ(kb.wait_s(r, access, walks, 0), 0.0);
    EXPECT_EQ(&kb.get(r, access, walks, 0), &e);  // the same entry, nothing generated again
    EXPECT_EQ(pc.stats().misses, 1u);
    // A kernel recorded before any prepare() builds on the recording thread, and its time
    // becomes what the next cold kernel is expected to wait.
    const Region other = region(OpKind::Sub);
    KernelBuilder::Entry& e2 = kb.get(other, access, walks, 0);
    EXPECT_NE(e2.pipeline.get(), e.pipeline.get());
    EXPECT_EQ(pc.stats().misses, 2u);
    EXPECT_NE(kb.expected_build_s(), 0.05);
    EXPECT_EQ(kb.prepared(), 1u);
    // A kernel whose SPIR-V the on-disk cache holds is priced as a load, not a compile.
    const fs::path dir = temp_dir("builder");
    {
        PipelineCache disk(*ctx_, dir.string(), [](const std::string&) {});
        KernelBuilder first(disk, CodegenOptions{}, 0.05, 0.002);
        first.get(r, access, walks, 0);
    }
    {
        PipelineCache disk(*ctx_, dir.string(), [](const std::string&) {});
        KernelBuilder second(disk, CodegenOptions{}, 0.05, 0.002);
        EXPECT_DOUBLE_EQ(second.wait_s(r, access, walks, 0), 0.002);
        EXPECT_DOUBLE_EQ(second.wait_s(other, access, walks, 0), 0.05);
        second.get(r, access, walks, 0);
        EXPECT_EQ(disk.stats().disk_hits, 1u);
        EXPECT_EQ(disk.stats().misses, 0u);
    }
    fs::remove_all(dir);
}

// A reduction its size splits needs a second pass, a kernel of its own: it is priced too until
// both are built, and prepare() builds both (a recording then compiles nothing).
TEST_F(VulkanDevice, KernelBuilderPricesASplitReductionsSecondPass) {
    ASSERT_NE(ctx_, nullptr);
    tandem::Config cpu;
    cpu.device = "cpu";
    tandem::Runtime rt(cpu);
    const std::int64_t n = 1 << 20;
    std::vector<double> v(static_cast<std::size_t>(n), 0.5);
    auto x = rt.array(std::span<const double>(v), tandem::Shape{n, 1});
    const std::vector<Region> regions = plan_helper::plan({tandem::sum(tandem::exp(x))});
    ASSERT_EQ(regions.size(), 1u);
    const Region& r = regions[0];
    const CodegenOptions options;
    std::vector<InputAccess> access;
    std::vector<InputWalk> walks;
    access_for(r, access, walks);
    const ReducePlan rp = plan_reduce(r, options.reduction_threads, options.reduction_workgroup_size);
    const std::uint64_t variant = !rp.contiguous ? rp.per_invocation : rp.whole_outputs ? 1024 : 0;
    PipelineCache pc(*ctx_, "", [](const std::string&) {});
    KernelBuilder kb(pc, options, 0.05, 0.002);
    ASSERT_GT(reduce_partial_bytes(r, kernel_for(r, options)), 0u) << "a sum this long is split";
    EXPECT_DOUBLE_EQ(kb.wait_s(r, access, walks, variant), 0.05 + 0.05) << "the kernel and its second pass";
    kb.prepare(r, access, walks, variant);
    EXPECT_EQ(kb.prepared(), 2u);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (kb.wait_s(r, access, walks, variant) > 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(kb.wait_s(r, access, walks, variant), 0.0);
    const std::uint64_t built = pc.stats().misses;
    EXPECT_EQ(built, 2u);
    KernelBuilder::Entry& e = kb.get(r, access, walks, variant);
    EXPECT_NE(kb.combine(e).pipeline, VK_NULL_HANDLE);
    EXPECT_EQ(pc.stats().misses, built) << "the recording compiles nothing";
}

// Threads that need the same kernel at once (a recording, and the builder making it ahead of
// time) compile it once: the others wait for that build and get the same pipeline.
TEST_F(VulkanDevice, PipelineCacheBuildsAKernelOnceForThreadsThatNeedItAtOnce) {
    ASSERT_NE(ctx_, nullptr);
    PipelineCache pc(*ctx_, "", [](const std::string&) {});
    const Kernel k = sample_kernel(7);
    constexpr int kThreads = 4;
    std::vector<const ComputePipeline*> got(kThreads, nullptr);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) threads.emplace_back([&, i] { got[static_cast<std::size_t>(i)] = &pc.get(k); });
    for (auto& t : threads) t.join();
    for (const ComputePipeline* p : got) EXPECT_EQ(p, got[0]);
    EXPECT_NE(got[0]->pipeline, VK_NULL_HANDLE);
    EXPECT_EQ(pc.stats().misses, 1u);
    EXPECT_EQ(pc.stats().hits, static_cast<std::uint64_t>(kThreads - 1));
}

// A fixed kernel (a GEMM variant) built ahead of time: priced at the expected build until its
// build has run, then nothing; prepared once however often it is asked for.
TEST_F(VulkanDevice, KernelBuilderBuildsFixedKernelsAheadOnce) {
    ASSERT_NE(ctx_, nullptr);
    PipelineCache pc(*ctx_, "", [](const std::string&) {});
    KernelBuilder kb(pc, CodegenOptions{}, 0.05, 0.002, 0.3);
    EXPECT_DOUBLE_EQ(kb.fixed_wait_s("gemm 1"), 0.3);
    std::atomic<int> builds{0};
    const ComputePipeline* built = nullptr;
    kb.prepare_fixed("gemm 1", [&] {
        built = &pc.get(sample_kernel(8));
        builds.fetch_add(1);
    });
    kb.prepare_fixed("gemm 1", [&] { builds.fetch_add(1); });  // prepared already: nothing more
    EXPECT_EQ(kb.prepared(), 1u);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (kb.fixed_wait_s("gemm 1") > 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Waiting nothing: built (a build under way is priced at least as long as it has run).
    kb.stop();
    EXPECT_EQ(builds.load(), 1);
    ASSERT_NE(built, nullptr);
    EXPECT_EQ(&pc.get(sample_kernel(8)), built) << "the recording finds it built";
    EXPECT_EQ(pc.stats().misses, 1u);
    EXPECT_DOUBLE_EQ(kb.fixed_wait_s("gemm 1"), 0.0);
    EXPECT_NE(kb.fixed_wait_s("gemm 2"), 0.3) << "what the build took is what the next is expected to take";
    // A build running past what builds took so far is priced at least as long as it has run (an
    // expectation too low would send recordings to wait behind it).
    KernelBuilder slow(pc, CodegenOptions{}, 0.05, 0.002, 0.01);
    std::atomic<bool> started{false}, release{false};
    slow.prepare_fixed("slow", [&] {
        started = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GE(slow.fixed_wait_s("slow"), 0.05);
    // A runtime going away waits for what it began, within a budget: not done within 20 ms ...
    EXPECT_FALSE(slow.finish(std::chrono::milliseconds(20)));
    // ... and done once it may finish; builds queued behind it are waited for too.
    std::atomic<int> after{0};
    slow.prepare_fixed("queued", [&] { after = 1; });
    release = true;
    EXPECT_TRUE(slow.finish(std::chrono::seconds(60)));
    EXPECT_EQ(after.load(), 1);
    slow.stop();
    EXPECT_EQ(slow.fixed_wait_s("slow"), 0.0);
}

TEST_F(VulkanDevice, CorruptFilesAreReportedOnceAndRebuilt) {
    const fs::path dir = temp_dir("corrupt");
    const Kernel k = sample_kernel();
    { PipelineCache pc(*ctx_, dir.string(), nullptr); pc.get(k); }
    std::vector<fs::path> spv;
    for (auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".spv") spv.push_back(e.path());
    ASSERT_EQ(spv.size(), 1u);
    for (int mode = 0; mode < 2; ++mode) {
        if (mode == 0) fs::resize_file(spv[0], fs::file_size(spv[0]) / 2);  // truncated
        else {
            std::fstream f(spv[0], std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(100);
            f.write("garbage!", 8);  // garbled payload
        }
        // The VkPipelineCache blob garbled too.
        {
            std::fstream f(dir / "pipeline_cache.bin", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(40);
            f.write("garbage!", 8);
        }
        std::vector<std::string> reports;
        {
            PipelineCache pc(*ctx_, dir.string(), [&](const std::string& m) { reports.push_back(m); });
            EXPECT_NE(pc.get(k).pipeline, VK_NULL_HANDLE);
            EXPECT_EQ(pc.stats().misses, 1u);
            EXPECT_EQ(pc.stats().disk_hits, 0u);
        }
        ASSERT_EQ(reports.size(), 2u) << mode;
        EXPECT_NE(reports[0].find("pipeline_cache.bin"), std::string::npos) << reports[0];
        EXPECT_NE(reports[1].find(spv[0].filename().string()), std::string::npos) << reports[1];
        // Rebuilt: the next cache reads it from disk without complaint.
        reports.clear();
        PipelineCache pc(*ctx_, dir.string(), [&](const std::string& m) { reports.push_back(m); });
        pc.get(k);
        EXPECT_EQ(pc.stats().disk_hits, 1u);
        EXPECT_TRUE(reports.empty());
    }
    fs::remove_all(dir);
}

TEST_F(VulkanDevice, UnwritableDirectoryIsReportedAndWorksInMemory) {
    // Tests run as root, where permissions do not stop writes: a directory under a regular file
    // can never be created.
    const fs::path base = temp_dir("unwritable");
    fs::create_directories(base);
    { std::ofstream(base / "file.txt") << "x"; }
    const fs::path dir = base / "file.txt" / "sub";
    std::vector<std::string> reports;
    {
        PipelineCache pc(*ctx_, dir.string(), [&](const std::string& m) { reports.push_back(m); });
        pc.get(sample_kernel());
        pc.get(sample_kernel());
        pc.get(sample_kernel(1));
        auto s = pc.stats();
        EXPECT_EQ(s.misses, 2u);
        EXPECT_EQ(s.hits, 1u);
        EXPECT_EQ(s.directory, "");
    }
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_NE(reports[0].find(dir.string()), std::string::npos) << reports[0];
    fs::remove_all(base);
}

TEST_F(VulkanDevice, WarmUpLoadsPipelinesFromDisk) {
    const fs::path dir = temp_dir("warm");
    { PipelineCache pc(*ctx_, dir.string(), nullptr); pc.get(sample_kernel()); pc.get(sample_kernel(1)); }
    PipelineCache pc(*ctx_, dir.string(), nullptr);
    pc.warm_up();
    pc.wait_warm_up();
    EXPECT_EQ(pc.stats().warmed, 2u);
    pc.get(sample_kernel());
    pc.get(sample_kernel(1));
    auto s = pc.stats();
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses + s.disk_hits, 0u);
    fs::remove_all(dir);
}

// ---- generated kernels on the device, against the CPU executor's semantics ------------------

/// The CPU executor's semantics for one element, written out plainly (backends/cpu/program.cpp
/// and kernels_impl.inc): value types, conversions, MATLAB's rules. Transcendentals use libm.
struct Reference {
    const Region& r;
    const std::vector<std::vector<double>>& in;  // input values (f32 inputs already floats)
    std::vector<double> val;
    std::vector<DType> type;
    std::uint32_t error = 0xFFFFFFFFu;

    static DType reg(DType t) { return t == DType::f32 ? DType::f32 : DType::f64; }
    static double conv(double v, DType t) { return t == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v; }
    std::int64_t input_index(std::size_t k, std::int64_t e) const {
        const Shape& out = r.shape;
        const Shape& is = r.inputs[k]->shape;
        std::int64_t idx = 0, stride = 1;
        for (int d = 0; d < out.ndims(); ++d) {
            const std::int64_t sub = e % out[d];
            e /= out[d];
            if (is[d] != 1) idx += sub * stride;
            stride *= is[d];
        }
        return idx;
    }
    DType own(const Arg& a) const { return a.kind == Arg::Kind::Value ? type[a.index] : reg(a.dtype); }
    double arg(const Arg& a, DType t, std::int64_t e) const {
        switch (a.kind) {
            case Arg::Kind::Scalar: return conv(a.scalar, t);
            case Arg::Kind::Value: return conv(val[a.index], t);
            case Arg::Kind::Input: return conv(in[a.index][static_cast<std::size_t>(input_index(a.index, e))], t);
        }
        return 0;
    }
    /// ops.def's reference column, computed in T.
    template <class T>
    static T apply(OpKind op, T a, T b) {
        const trows::Row* r = trows::find(op);
        if (r == nullptr) {
            ADD_FAILURE() << "no reference for " << op_info(op).name;
            return T(0);
        }
        if constexpr (sizeof(T) == 4) return r->ref_f32(a, b);
        else return r->ref_f64(a, b);
    }
    void nan_check(std::size_t i, double x) {
        if (std::isnan(x)) error = std::min(error, static_cast<std::uint32_t>(i));
    }
    void element(std::int64_t e) {
        val.assign(r.program.size(), 0);
        type.assign(r.program.size(), DType::f64);
        for (std::size_t i = 0; i < r.program.size(); ++i) {
            const Instr& ins = r.program[i];
            const DType t = reg(ins.compute);
            double v = 0;
            DType vt = t;
            switch (ins.op) {
                case OpKind::Constant: vt = reg(ins.dtype); v = conv(ins.attr[0], vt); break;
                case OpKind::Linspace: {
                    const auto n = static_cast<std::int64_t>(ins.attr[2]);
                    vt = DType::f64;
                    v = linspace_value(ins.attr[0], ins.attr[1], n, linspace_steps(ins.attr[0], ins.attr[1], n), e);
                    break;
                }
                case OpKind::Colon: vt = DType::f64; v = colon_value(ins.attr[0], ins.attr[1], ins.attr[2], e); break;
                case OpKind::Cast:
                    if (ins.dtype != DType::logical) {
                        vt = reg(ins.dtype);
                        v = arg(ins.args[0], vt, e);
                    } else {
                        vt = own(ins.args[0]);
                        v = arg(ins.args[0], vt, e);
                        nan_check(i, v);
                        v = v != 0 ? 1 : 0;
                    }
                    break;
                case OpKind::Where: {
                    const double c = arg(ins.args[0], own(ins.args[0]), e);
                    nan_check(i, c);
                    v = c != 0 ? arg(ins.args[1], t, e) : arg(ins.args[2], t, e);
                    break;
                }
                default: {
                    const double a = arg(ins.args[0], t, e);
                    const bool sq = ins.op == OpKind::Pow && ins.args[1].kind == Arg::Kind::Scalar && ins.args[1].scalar == 2.0;
                    const double b = op_info(ins.op).arity > 1 ? arg(ins.args[1], t, e) : 0.0;
                    if (op_info(ins.op).rule == TypeRule::Logical) {
                        nan_check(i, a);
                        if (op_info(ins.op).arity > 1) nan_check(i, b);
                    }
                    const OpKind op = sq ? OpKind::Mul : ins.op;
                    v = t == DType::f32 ? static_cast<double>(apply<float>(op, static_cast<float>(a), static_cast<float>(sq ? a : b)))
                                        : apply<double>(op, a, sq ? a : b);
                }
            }
            val[i] = v;
            type[i] = vt;
        }
    }
};

/// Runs a region on the device through a generated kernel (host-visible memory throughout).
class Dispatcher {
public:
    explicit Dispatcher(const Context& ctx) : ctx_(ctx), heap_(std::make_shared<DeviceHeap>(ctx, DeviceHeap::Kind::upload, 8 << 20)),
                                              cache_(ctx, "", nullptr) {
        VkCommandPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.queueFamilyIndex = ctx.compute_family();
        check(vkCreateCommandPool(ctx.device(), &pi, nullptr, &pool_), "vkCreateCommandPool");
    }
    ~Dispatcher() { vkDestroyCommandPool(ctx_.device(), pool_, nullptr); }

    /// The options the backend would use on this device's float controls (a device that may
    /// flush fp32 subnormals gets the guarded lowering).
    CodegenOptions device_options() const {
        CodegenOptions o;
        o.f32_guarded = !ctx_.description().denorm_preserve_f32;
        o.preserve_f32_denormals = ctx_.description().denorm_preserve_f32;
        o.preserve_signed_zeros = ctx_.description().signed_zero_preserve;
        return o;
    }
    /// Output values (as doubles) of `r` for `in`; throws what check_error throws.
    std::vector<std::vector<double>> run(const Region& r, const std::vector<std::vector<double>>& in) {
        return run(r, in, device_options());
    }
    std::vector<std::vector<double>> run(const Region& r, const std::vector<std::vector<double>>& in,
                                         const CodegenOptions& o) {
        const Kernel k = kernel_for(r, o);
        const ComputePipeline& p = cache_.get(k);
        std::vector<std::shared_ptr<DeviceArray>> keep;
        std::vector<std::uint64_t> ins, outs;
        auto alloc = [&](std::size_t bytes) {
            keep.push_back(heap_->allocate(std::max<std::size_t>(bytes, 16)));
            return keep.back();
        };
        for (std::size_t i = 0; i < r.inputs.size(); ++i) {
            const DType t = r.inputs[i]->dtype;
            auto a = alloc(in[i].size() * dtype_size(t));
            for (std::size_t e = 0; e < in[i].size(); ++e) {
                auto* base = static_cast<unsigned char*>(a->mapped());
                if (t == DType::f64) std::memcpy(base + 8 * e, &in[i][e], 8);
                else if (t == DType::f32) {
                    float f = static_cast<float>(in[i][e]);
                    std::memcpy(base + 4 * e, &f, 4);
                } else base[e] = in[i][e] != 0 ? 1 : 0;
            }
            ins.push_back(a->address());
        }
        const auto n = static_cast<std::size_t>(r.shape.numel());
        std::vector<std::shared_ptr<DeviceArray>> out_arrays;
        for (const auto& o2 : r.outputs) {
            out_arrays.push_back(alloc(n * dtype_size(o2.node->dtype)));
            outs.push_back(out_arrays.back()->address());
        }
        const std::size_t arg_bytes = pack_arguments(r, k, ins, outs, 0, 65535).args.size();
        auto args = alloc(arg_bytes);
        const Launch l = pack_arguments(r, k, ins, outs, args->address(), 7);  // small x limit: exercises groups_y
        std::memcpy(args->mapped(), l.args.data(), l.args.size());

        VkCommandBufferAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = pool_;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        check(vkAllocateCommandBuffers(ctx_.device(), &ai, &cb), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vkBeginCommandBuffer(cb, &bi);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
        vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<std::uint32_t>(l.push.size()),
                           l.push.data());
        if (l.groups_x) vkCmdDispatch(cb, l.groups_x, l.groups_y, 1);
        VkMemoryBarrier mb{};
        mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                             0, nullptr);
        vkEndCommandBuffer(cb);
        VkFenceCreateInfo fi{};
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        VkFence fence = VK_NULL_HANDLE;
        check(vkCreateFence(ctx_.device(), &fi, nullptr, &fence), "vkCreateFence");
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        check(vkQueueSubmit(ctx_.compute_queue(), 1, &si, fence), "vkQueueSubmit");
        check(vkWaitForFences(ctx_.device(), 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        vkDestroyFence(ctx_.device(), fence, nullptr);
        vkFreeCommandBuffers(ctx_.device(), pool_, 1, &cb);

        check_error(r, args->mapped());
        std::vector<std::vector<double>> res;
        for (std::size_t j = 0; j < r.outputs.size(); ++j) {
            const DType t = r.outputs[j].node->dtype;
            const auto* base = static_cast<const unsigned char*>(out_arrays[j]->mapped());
            std::vector<double> v(n);
            for (std::size_t e = 0; e < n; ++e) {
                if (t == DType::f64) std::memcpy(&v[e], base + 8 * e, 8);
                else if (t == DType::f32) {
                    float f;
                    std::memcpy(&f, base + 4 * e, 4);
                    v[e] = f;
                } else v[e] = base[e];
            }
            res.push_back(std::move(v));
        }
        return res;
    }

private:
    const Context& ctx_;
    std::shared_ptr<DeviceHeap> heap_;
    PipelineCache cache_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
};

/// Ordinary numbers mixed with the special values (and halves, for round).
std::vector<double> test_values(std::size_t n, std::uint64_t seed) {
    const double special[] = {0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, 1e308, -1e308,
                              5e-324, -2.2e-308, 1e-300, 7.0, -7.0, 0.1, 1e20, 123456.789,
                              // single precision's subnormals, and factors whose products are
                              1e-40, -3e-39, 1.401298464324817e-45, -1.1754943508222875e-38, 1e-20, -3e-21};
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-10, 10);
    std::uniform_int_distribution<int> ex(-60, 60);
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto pick = g() % 4;
        if (pick == 0) v[i] = special[g() % std::size(special)];
        else if (pick == 1) v[i] = std::ldexp(u(g), ex(g));
        else v[i] = u(g);
    }
    return v;
}

/// Compares the device's outputs with the reference: bit for bit (NaN matches NaN), or
/// within `ulps` where the region has transcendental functions.
void expect_matches(const Region& r, const std::vector<std::vector<double>>& in,
                    const std::vector<std::vector<double>>& got, double ulps, const std::string& what) {
    Reference ref{r, in, {}, {}};
    const auto n = r.shape.numel();
    int shown = 0;
    for (std::int64_t e = 0; e < n; ++e) {
        ref.element(e);
        for (std::size_t j = 0; j < r.outputs.size(); ++j) {
            const DType t = r.outputs[j].node->dtype;
            double want = ref.val[r.outputs[j].value];
            want = t == DType::logical ? (want != 0 ? 1 : 0) : Reference::conv(want, t);
            const double have = got[j][static_cast<std::size_t>(e)];
            bool ok = std::isnan(want) ? std::isnan(have)
                                       : std::bit_cast<std::uint64_t>(want) == std::bit_cast<std::uint64_t>(have);
            if (!ok && ulps > 0 && std::isfinite(want) && std::isfinite(have)) {
                const double ulp = t == DType::f32 ? std::fabs(static_cast<double>(std::nextafter(static_cast<float>(want), std::numeric_limits<float>::infinity()) - static_cast<float>(want)))
                                                   : std::fabs(std::nextafter(want, kInf) - want);
                ok = std::fabs(have - want) <= ulps * ulp;
            }
            if (!ok && shown++ < 8) {
                std::ostringstream inputs;
                for (std::size_t k = 0; k < in.size(); ++k)
                    inputs << ' ' << in[k][static_cast<std::size_t>(ref.input_index(k, e))];
                ADD_FAILURE() << what << " element " << e << " output " << j << ": want " << want << " have " << have
                              << " (inputs" << inputs.str() << ")";
            }
        }
    }
}

TEST_F(VulkanDevice, BasicOpsMatchTheCpuBitForBit) {
    Dispatcher d(*ctx_);
    const OpKind unary[] = {OpKind::Neg, OpKind::Abs, OpKind::Sqrt, OpKind::Floor, OpKind::Ceil, OpKind::Round,
                            OpKind::Fix, OpKind::Sign, OpKind::IsNan, OpKind::IsInf, OpKind::IsFinite};
    const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::Rem,
                             OpKind::Min, OpKind::Max, OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le,
                             OpKind::Gt, OpKind::Ge};
    const Shape s{37, 29};
    const auto n = static_cast<std::size_t>(s.numel());
    // Both single-precision lowerings: plain floats (right on a device that keeps subnormals, as
    // lavapipe does) and guarded ones (right everywhere); on a device that flushes, the plain one
    // is not expected to match.
    bool flushes = false;
    {
        Builder b(Shape{1, 1});
        b.out(b.op(OpKind::Mul, {b.input(DType::f32, Shape{1, 1}), Builder::scalar(1.0, DType::f32)}));
        const std::vector<std::vector<double>> in = {{static_cast<double>(1e-40f)}};
        CodegenOptions plain = d.device_options();
        plain.f32_guarded = false;
        flushes = d.run(b.r, in, plain)[0][0] == 0.0;
    }
    RecordProperty("f32_subnormals_flushed", flushes ? "yes" : "no");
    for (bool guard : {false, true}) {
        if (flushes && !guard) continue;
        CodegenOptions o = d.device_options();
        o.f32_guarded = guard;
        const std::string mode = guard ? " (f32 guarded)" : "";
        for (DType t : {DType::f64, DType::f32}) {
            for (OpKind op : unary) {
                Builder b(s);
                b.out(b.op(op, {b.input(t, s)}));
                const std::vector<std::vector<double>> in = {test_values(n, 1)};
                expect_matches(b.r, in, d.run(b.r, in, o), 0, std::string(op_info(op).name) + mode);
            }
            for (OpKind op : binary) {
                Builder b(s);
                // full x strided (a row, expanded) and an immediate in a second instruction
                auto v = b.op(op, {b.input(t, s), b.input(t, Shape{1, 29})});
                b.out(v);
                b.out(b.op(op, {Builder::scalar(2.5, t), b.value(v)}));
                const std::vector<std::vector<double>> in = {test_values(n, 2), test_values(29, 3)};
                expect_matches(b.r, in, d.run(b.r, in, o), 0, std::string(op_info(op).name) + mode);
            }
        }
    }
}

TEST_F(VulkanDevice, MixedTypesExpansionGeneratorsAndLogicals) {
    Dispatcher d(*ctx_);
    const Shape s{1, 300};
    Builder b(s);
    auto x = b.input(DType::f32, s);
    auto y = b.input(DType::f64, Shape{1, 1});
    auto m = b.input(DType::logical, s);
    auto lin = b.op(OpKind::Linspace, {}, DType::f64, {-1.0, 2.0, 300});
    auto col = b.op(OpKind::Colon, {}, DType::f64, {0.5, 0.25, 1e300});
    auto p = b.op(OpKind::Pow, {x, Builder::scalar(2.0)});              // x.^2 -> x*x (f32)
    auto q = b.op(OpKind::Mul, {b.value(p), y});                          // f32 * f64 scalar input
    auto w = b.op(OpKind::Where, {m, b.value(q), b.value(lin)});           // f32
    auto c = b.op(OpKind::Cast, {b.value(col)}, DType::f32);
    auto g = b.op(OpKind::Gt, {b.value(w), b.value(c)});                   // logical
    auto z = b.op(OpKind::Add, {b.value(g), b.value(lin)});                // logical + double
    auto k = b.op(OpKind::Constant, {}, DType::f32, {0.1f, 0, 0});
    b.out(w);
    b.out(g);
    b.out(z);
    b.out(k);
    b.out(col);
    std::vector<double> mv(300);
    for (std::size_t i = 0; i < 300; ++i) mv[i] = (i % 3) == 0;
    std::vector<double> xv = test_values(300, 5);
    for (double& v : xv) v = static_cast<float>(v);
    const std::vector<std::vector<double>> in = {xv, {1.0 / 3.0}, mv};
    expect_matches(b.r, in, d.run(b.r, in), 0, "mixed");
}

TEST_F(VulkanDevice, NanOperandOfLogicalOpRaisesValueError) {
    Dispatcher d(*ctx_);
    const Shape s{10, 10};
    Builder b(s);
    auto a = b.op(OpKind::Add, {b.input(DType::f64, s), Builder::scalar(1)});
    auto o = b.op(OpKind::Or, {b.value(a), b.input(DType::f64, s)});
    b.out(o);
    std::vector<double> x(100, 1.0), y(100, 0.0);
    EXPECT_NO_THROW(d.run(b.r, {x, y}));
    y[77] = kNaN;
    try {
        d.run(b.r, {x, y});
        FAIL() << "no error";
    } catch (const tandem::ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("or: NaN's cannot"), std::string::npos) << e.what();
    }
}

TEST_F(VulkanDevice, TranscendentalsAreWithinTolerance) {
    Dispatcher d(*ctx_);
    const Shape s{64, 16};
    const auto n = static_cast<std::size_t>(s.numel());
    std::vector<OpKind> functions;  // every elementary function of ops.def
    for (const trows::Row& r : trows::elementwise_rows())
        if (r.transcendental()) functions.push_back(r.op);
    for (DType t : {DType::f64, DType::f32})
        for (OpKind op : functions) {
            Builder b(s);
            if (op_info(op).arity == 1) b.out(b.op(op, {b.input(t, s)}));
            else b.out(b.op(op, {b.input(t, s), b.input(t, s)}));
            std::vector<std::vector<double>> in = {test_values(n, 7), test_values(n, 8)};
            if (op_info(op).arity == 1) in.pop_back();
            for (auto& v : in)
                for (double& x : v) x = Reference::conv(x, t);
            expect_matches(b.r, in, d.run(b.r, in), 4, std::string(op_info(op).name));
        }
}

/// Division and sqrt: is the device's f64 `/` and sqrt IEEE round-to-nearest? (lavapipe: yes.)
/// Also checks that the exact-correction path (CodegenOptions::exact_f64_div_sqrt) is right.
TEST_F(VulkanDevice, DivisionAndSqrtAreCorrectlyRounded) {
    Dispatcher d(*ctx_);
    const Shape s{1 << 16, 4};
    const auto n = static_cast<std::size_t>(s.numel());
    std::mt19937_64 g(11);
    std::vector<double> a(n), bv(n);
    for (std::size_t i = 0; i < n; ++i) {
        // random bit patterns over the whole finite range, and near-1 ratios
        auto rnd = [&] {
            double v;
            do v = std::bit_cast<double>(g()); while (!std::isfinite(v));
            return v;
        };
        a[i] = rnd();
        bv[i] = i % 2 ? rnd() : a[i] * (1 + std::ldexp(static_cast<double>(g() % 1000), -40));
        if (i % 7 == 0) a[i] = std::fabs(a[i]);
    }
    for (bool exact : {false, true})
        for (DType t : {DType::f64, DType::f32}) {
            Builder b(s);
            auto x = b.input(t, s);
            b.out(b.op(OpKind::Div, {x, b.input(t, s)}));
            b.out(b.op(OpKind::Sqrt, {x}));
            std::vector<std::vector<double>> in = {a, bv};
            for (auto& v : in)
                for (double& e : v) e = Reference::conv(e, t);
            CodegenOptions o = d.device_options();
            o.exact_f64_div_sqrt = exact;
            expect_matches(b.r, in, d.run(b.r, in, o), 0, std::string("div/sqrt ") + (exact ? "exact " : "device ") +
                                                              (t == DType::f64 ? "f64" : "f32"));
        }
}

/// Single-precision division (convert_f32.glsl tdm_divf: a reciprocal refined in double where the
/// operands allow, the f64 division of exact conversions elsewhere) is IEEE float division, bit
/// for bit: random floats of every exponent, quotients at the subnormal and overflow thresholds,
/// divisors near 2^126 and powers of two, zeros, subnormals, infinities and NaN.
TEST_F(VulkanDevice, SingleDivisionIsCorrectlyRoundedEverywhere) {
    Dispatcher d(*ctx_);
    const Shape s{1 << 17, 2};
    const auto n = static_cast<std::size_t>(s.numel());
    std::mt19937_64 g(12);
    auto any_float = [&] {
        float v;
        do v = std::bit_cast<float>(static_cast<std::uint32_t>(g())); while (std::isnan(v));
        return v;
    };
    std::vector<double> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
        float x = any_float(), y = any_float();
        switch (i % 8) {
            case 0: break;                                                         // anything
            case 1: y = x * (1.0f + std::ldexp(static_cast<float>(g() % 64), -23)); break;  // near 1
            case 2: y = std::ldexp(1.0f, static_cast<int>(g() % 254) - 126); break;        // powers of two
            case 3: y = std::ldexp(1.0f + std::ldexp(static_cast<float>(g() % 4096), -12), 125 + static_cast<int>(g() % 3));
                    break;                                                                 // 2^125 .. 2^128
            case 4: x = std::ldexp(1.0f + std::ldexp(static_cast<float>(g() % 1024), -10), -100);   // quotients near
                    y = std::ldexp(1.0f + std::ldexp(static_cast<float>(g() % 1024), -10), 26);     // 2^-126
                    break;
            case 5: x = std::ldexp(1.0f + std::ldexp(static_cast<float>(g() % 1024), -10), 100);    // and near
                    y = std::ldexp(1.0f + std::ldexp(static_cast<float>(g() % 1024), -10), -28);    // FLT_MAX
                    break;
            case 6: x = std::bit_cast<float>(static_cast<std::uint32_t>(g() % 0x00800000u)); break;  // subnormal / 0
            default: {
                const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 3.0f};
                (g() % 2 ? x : y) = special[g() % 8];
            }
        }
        a[i] = x;
        b[i] = y;
    }
    Builder bld(s);
    bld.out(bld.op(OpKind::Div, {bld.input(DType::f32, s), bld.input(DType::f32, s)}));
    expect_matches(bld.r, {a, b}, d.run(bld.r, {a, b}), 0, "f32 division");
}

/// Folded remaps read through index maps (Region::input_views): a circshift along dimension 1
/// (wraps once), a flip along 2 (no wrap), a repmat along 1 read directly (wraps any number of
/// times) and a plane broadcast along 2; in 32-bit and in 64-bit integers, bit for bit the host's
/// reads of the same positions.
TEST_F(VulkanDevice, FoldedRemapsReadTheMappedPositions) {
    Dispatcher d(*ctx_);
    const std::int64_t m = 37, n = 11;
    const Shape s{m, n};
    Builder b(s);
    auto x = b.input(DType::f64, s);
    auto y = b.input(DType::f64, s);
    auto z = b.input(DType::f64, Shape{5, n});  // repmat along 1: position k % 5
    auto w = b.input(DType::f64, s);            // one column, broadcast: column 3
    b.r.input_views = {{{1, m - 4}, {1, 0}}, {{1, 0}, {-1, n - 1}}, {{1, 0}, {1, 0}}, {{1, 0}, {0, 3}}};
    auto p = b.op(OpKind::Add, {x, y});
    auto q = b.op(OpKind::Mul, {b.value(p), z});
    auto r = b.op(OpKind::Sub, {b.value(q), w});
    b.out(r);
    std::vector<std::vector<double>> in = {test_values(static_cast<std::size_t>(m * n), 1), test_values(static_cast<std::size_t>(m * n), 2),
                                           test_values(static_cast<std::size_t>(5 * n), 3), test_values(static_cast<std::size_t>(m * n), 4)};
    std::vector<double> want(static_cast<std::size_t>(m * n));
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
            const double xv = in[0][static_cast<std::size_t>((i + m - 4) % m + m * j)];
            const double yv = in[1][static_cast<std::size_t>(i + m * (n - 1 - j))];
            const double zv = in[2][static_cast<std::size_t>(i % 5 + 5 * j)];
            const double wv = in[3][static_cast<std::size_t>(i + m * 3)];
            want[static_cast<std::size_t>(i + m * j)] = (xv + yv) * zv - wv;
        }
    const auto walks = [&] {
        std::vector<InputAccess> access;
        std::vector<InputWalk> wk;
        access_for(b.r, access, wk);
        return wk;
    }();
    // Every walk here has the region's extents (37, 11): one split of the index for all four.
    EXPECT_EQ(walks[0], "Op");
    EXPECT_EQ(walks[1], "pN@0");
    EXPECT_EQ(walks[2], "Ap@0");
    EXPECT_EQ(walks[3], "pN@0");
    for (bool narrow : {true, false}) {
        CodegenOptions o = d.device_options();
        o.narrow_maps = narrow;
        o.workgroup_size = 32;
        const auto got = d.run(b.r, in, o);
        for (std::size_t e = 0; e < want.size(); ++e)
            ASSERT_EQ(std::bit_cast<std::uint64_t>(got[0][e]), std::bit_cast<std::uint64_t>(want[e]))
                << (narrow ? "32-bit" : "64-bit") << " maps, element " << e;
    }
    CodegenOptions wide;
    wide.narrow_maps = false;
    EXPECT_NE(kernel_for(b.r, wide).key, kernel_for(b.r, {}).key);
}

/// The contiguous fast path against the reference and the general path, with counts that leave
/// every tail (count % V) and several workgroup shapes (groups folded into y by the small x limit).
TEST_F(VulkanDevice, ContiguousFastPathHandlesTails) {
    Dispatcher d(*ctx_);
    const std::int64_t counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 33, 1023, 1024, 1025, 4099};
    std::vector<CodegenOptions> opts(3, d.device_options());
    opts[0].workgroup_size = 8;
    opts[0].elements_per_thread = 3;
    opts[1].workgroup_size = 32;
    opts[1].elements_per_thread = 16;
    opts[2].contiguous_fast_path = false;
    for (std::int64_t n : counts) {
        const Shape s{n, 1};
        const auto un = static_cast<std::size_t>(n);
        std::vector<double> mask(un);
        for (std::size_t i = 0; i < un; ++i) mask[i] = (i * 7 + 3) % 5 < 2;
        for (DType t : {DType::f64, DType::f32}) {
            // x .* y + c (a scalar input), min with a colon generator, compared as a logical,
            // logical input mixed in; outputs in f64, f32 and logical.
            Builder b(s);
            auto x = b.input(t, s);
            auto y = b.input(t, s);
            auto c = b.input(DType::f64, Shape{1, 1});
            auto m = b.input(DType::logical, s);
            auto p = b.op(OpKind::Mul, {x, y});
            auto q = b.op(OpKind::Add, {b.value(p), c});
            auto col = b.op(OpKind::Colon, {}, DType::f64, {-3.5, 0.75, 1e300});
            auto mn = b.op(OpKind::Min, {b.value(q), b.value(col)});
            auto g = b.op(OpKind::Gt, {b.value(mn), Builder::scalar(0.25, t)});
            auto w = b.op(OpKind::Where, {m, b.value(q), b.value(p)});
            b.out(mn);
            b.out(g);
            b.out(w, t == DType::f64 ? DType::f32 : DType::f64);
            std::vector<std::vector<double>> in = {test_values(un, 20 + static_cast<std::uint64_t>(n)),
                                                   test_values(un, 40 + static_cast<std::uint64_t>(n)), {0.375}, mask};
            for (int k = 0; k < 2; ++k)
                for (double& e : in[static_cast<std::size_t>(k)]) e = Reference::conv(e, t);
            std::vector<std::vector<std::vector<double>>> results;
            for (const CodegenOptions& o : opts) {
                const std::string what = std::string(t == DType::f64 ? "f64" : "f32") + " n=" + std::to_string(n) +
                                         " wg=" + std::to_string(o.workgroup_size) +
                                         (o.contiguous_fast_path ? " fast" : " general");
                // An f64 value is stored in both types: V = 2.
                EXPECT_EQ(kernel_for(b.r, o).vector_width, o.contiguous_fast_path ? 2u : 1u) << what;
                results.push_back(d.run(b.r, in, o));
                expect_matches(b.r, in, results.back(), 0, what);
            }
            // Bit for bit the same as the general path (NaNs included).
            for (std::size_t r = 0; r + 1 < results.size(); ++r)
                for (std::size_t j = 0; j < results[r].size(); ++j)
                    for (std::size_t e = 0; e < un; ++e)
                        ASSERT_EQ(std::bit_cast<std::uint64_t>(results[r][j][e]), std::bit_cast<std::uint64_t>(results.back()[j][e]))
                            << "n=" << n << " output " << j << " element " << e;
        }
        // Pure f32 (V = 4) and pure logical (V = 4, byte vectors), with a linspace generator.
        {
            Builder b(s);
            auto x = b.input(DType::f32, s);
            auto m = b.input(DType::logical, s);
            auto lin = b.op(OpKind::Linspace, {}, DType::f64, {-1.0, 2.0, static_cast<double>(n)});
            auto lf = b.op(OpKind::Cast, {b.value(lin)}, DType::f32);
            auto sm = b.op(OpKind::Add, {x, b.value(lf)});
            auto nt = b.op(OpKind::Not, {m});
            auto o2 = b.op(OpKind::Xor, {b.value(nt), b.value(sm)});
            b.out(sm);
            b.out(o2);
            std::vector<double> xv = test_values(un, 60 + static_cast<std::uint64_t>(n));
            for (double& e : xv) e = static_cast<float>(e);
            for (double& e : xv)
                if (std::isnan(e)) e = 1.0;  // xor of a NaN raises
            std::vector<std::vector<double>> in = {xv, mask};
            EXPECT_EQ(kernel_for(b.r, opts[0]).vector_width, 4u);
            for (const CodegenOptions& o : opts)
                expect_matches(b.r, in, d.run(b.r, in, o), 0, "f32/logical n=" + std::to_string(n));
            Builder bl(s);
            auto nm = bl.op(OpKind::Not, {bl.input(DType::logical, s)});
            bl.out(nm);
            EXPECT_EQ(kernel_for(bl.r, opts[0]).vector_width, 4u);
            for (const CodegenOptions& o : opts)
                expect_matches(bl.r, {mask}, d.run(bl.r, {mask}, o), 0, "logical n=" + std::to_string(n));
        }
        // A NaN operand of a logical op in the tail (the last element) is reported.
        {
            Builder b(s);
            b.out(b.op(OpKind::Or, {b.input(DType::f64, s), b.input(DType::f64, s)}));
            std::vector<double> a(un, 0.0), z(un, 1.0);
            a.back() = kNaN;
            for (const CodegenOptions& o : opts) EXPECT_THROW(d.run(b.r, {a, z}, o), tandem::ValueError) << n;
        }
    }
}

}  // namespace
