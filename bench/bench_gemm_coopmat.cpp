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
#include <string>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/vulkan/gemm_coopmat.hpp"
#include "gemm_bench_common.hpp"
#include "tandem/tandem.hpp"

namespace vk = tandem::detail::vk;
using gemm_bench::emit;

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

class Bench {
public:
    explicit Bench(const Options& o) : opt_(o) {
        dev_.open();
        ctx_ = dev_.ctx.get();
        const auto& d = ctx_->description();
        emit({{"kind", "device"}, {"name", d.name}, {"driver", d.driver}, {"coopmat", vk::coopmat_text(d)},
              {"shapes", d.cooperative_matrix_shapes}});
        if (!vk::GemmCoopmat::available(d)) {
            emit({{"kind", "error"}, {"what", "no tensor-core path on this device: " + d.coopmat_note}});
            std::exit(2);
        }
        dev_.setup(kMaxQueries, "bench:coopmat-init");
        coop_ = std::make_unique<vk::GemmCoopmat>(*ctx_, *dev_.pipelines);
        pack_ = &dev_.pipelines->get(vk::pack_f16_kernel());
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

    void prepare(std::uint32_t n) {
        if (n == cur_n_) return;
        a_.reset();
        b_.reset();
        d_.reset();
        pa_.reset();
        pb_.reset();
        const VkDeviceSize bytes = VkDeviceSize{n} * n * 4;
        a_ = dev_.heap->allocate(bytes);
        b_ = dev_.heap->allocate(bytes);
        d_ = dev_.heap->allocate(bytes);
        pa_ = dev_.heap->allocate(vk::packed_f16_bytes(std::uint64_t{n} * n));
        pb_ = dev_.heap->allocate(vk::packed_f16_bytes(std::uint64_t{n} * n));
        dev_.fill(*a_, *b_, n, false);
        cur_n_ = n;
    }

    double measure(std::uint32_t n, bool ta, bool tb, const char* phase, int reps) {
        prepare(n);
        vk::GemmArgs g = gemm_bench::square_product(tandem::DType::f32, n, ta, tb, *a_, *b_, *d_);
        g.ldc = n;
        const bool packed = coop_->input() == vk::CoopmatInput::f16;
        // Input f16: the packing of A and B (timed with the product), then the kernel on the halves.
        auto pack = [&] {
            if (!packed) return;
            vk::record_pack_f16(dev_.cmd, *pack_, a_->address(), pa_->address(), std::uint64_t{n} * n);
            vk::record_pack_f16(dev_.cmd, *pack_, b_->address(), pb_->address(), std::uint64_t{n} * n);
            dev_.after_product(VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        };
        if (packed) {
            g.a = pa_->address();
            g.b = pb_->address();
        }
        const auto t0 = std::chrono::steady_clock::now();
        coop_->pipeline(g);
        const double compile_ms = gemm_bench::ms_since(t0);
        dev_.warm(opt_.warm_ms, [&] {
            pack();
            coop_->record(dev_.cmd, g);
            dev_.after_product(VK_ACCESS_SHADER_WRITE_BIT);
        });
        const int total = std::min<int>(opt_.warmup + reps, (kMaxQueries - 1) / 2);
        dev_.begin_timed();
        for (int i = 0; i < total; ++i) {
            dev_.timestamp(static_cast<std::uint32_t>(2 * i));
            pack();
            dev_.timestamp(static_cast<std::uint32_t>(2 * i + 1));
            coop_->record(dev_.cmd, g);
            dev_.after_product(VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT);
        }
        dev_.timestamp(static_cast<std::uint32_t>(2 * total));
        const std::vector<std::uint32_t> cols = {0, n / 3, n - 1};
        auto back = dev_.copy_columns(*d_, cols, n, 4);
        dev_.submit_wait();
        const std::vector<std::uint64_t> ts = dev_.timestamps(2 * static_cast<std::size_t>(total) + 1);
        std::vector<double> ms, gemm_ms;
        for (int i = opt_.warmup; i < total; ++i) {
            const auto at = 2 * static_cast<std::size_t>(i);
            ms.push_back(dev_.span_ms(ts, at, at + 2));
            gemm_ms.push_back(dev_.span_ms(ts, at + 1, at + 2));
        }
        const auto [med, best] = gemm_bench::median_best(ms);
        const double gemm_med = gemm_bench::median_best(gemm_ms).median;
        // Sampled columns against a double reference on the rounded operands.
        back->invalidate();
        auto r16 = [](double x) { return static_cast<double>(tandem::detail::cpu::round_to_f16(static_cast<float>(x))); };
        const double worst = gemm_bench::check_columns(*back, cols, n, ta, tb, false, n > 4096 ? 7 : 3, r16);
        const double tflops = gemm_bench::tflops(n, med);
        emit({{"kind", "coopmat"}, {"phase", phase}, {"n", n}, {"op", gemm_bench::op_name(ta, tb)},
              {"tiles", coop_->tiles().name()},
              {"input", input_name()},
              {"conversion", coop_->conversion() == vk::CoopmatConversion::exact ? "exact" : "hardware"}, {"median_ms", med},
              {"gemm_median_ms", gemm_med},
              {"best_ms", best}, {"tflops", tflops}, {"tflops_best", gemm_bench::tflops(n, best)}, {"reps", reps},
              {"pipeline_ms", compile_ms}, {"check_worst_of_bound", worst}});
        return tflops;
    }

    Options opt_;
    gemm_bench::Device dev_;
    vk::Context* ctx_ = nullptr;
    std::unique_ptr<vk::GemmCoopmat> coop_;
    const vk::ComputePipeline* pack_ = nullptr;
    std::shared_ptr<vk::DeviceArray> a_, b_, d_, pa_, pb_;
    std::uint32_t cur_n_ = 0;
};

// matmul(A, B, {false, false, f16}) through the public API: wall time of evaluate() of the product
// alone (A and B already on the device), median of --reps.
void api(const Options& o) {
    tandem::Config c;
    c.device = "vulkan";
    c.placement = "gpu";
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
                  {"tflops_wall", gemm_bench::tflops(n, med)}});
        }
    }
}

std::vector<std::uint32_t> parse_sizes(const std::string& s) {
    std::vector<std::uint32_t> out;
    for (const std::string& t : gemm_bench::split(s, true)) out.push_back(static_cast<std::uint32_t>(std::stoul(t)));
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
            for (const std::string& t : gemm_bench::split(next(), true)) o.tiles.push_back(parse_tiles(t));
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
