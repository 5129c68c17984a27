// tandem-gemm-bench: the CPU GEMM (backends/cpu/gemm.hpp) against calling OpenBLAS directly.
//
//   tandem/<type>/<op>/<n>        Tandem's gemm: oneTBB tasks over a 2-D block grid of C, each
//                                 Tandem's packed micro-kernels in the canonical order (the same
//                                 bits as the Vulkan kernels)
//   tandem_avx2/<type>/<op>/<n>   the same capped at AVX2 (what a CPU without AVX-512 gets; the
//                                 same bits)
//   openblas/<type>/<op>/<n>      cblas_?gemm called directly, OpenBLAS with as many threads as
//                                 the machine has cores (what a user of OpenBLAS alone gets)
//   openblas_1t/<type>/<op>/<n>   cblas_?gemm on one thread (the single-core baseline)
// <op> is NN or TN (A transposed, read in place). Counters: GFLOP/s (2 n^3 per iteration).
// What the canonical order costs: tandem against openblas (whose order depends on the CPU). Run with
//   tandem-gemm-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <tbb/task_arena.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/gemm.hpp"

namespace cpu = tandem::detail::cpu;

namespace {

template <class T>
struct Mats {
    std::vector<T> a, b, c;
    explicit Mats(std::int64_t n) : a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size()) {
        std::mt19937 rng(42);
        std::uniform_real_distribution<T> u(-1, 1);
        for (auto& v : a) v = u(rng);
        for (auto& v : b) v = u(rng);
    }
};

enum class Who { tandem, tandem_avx2, openblas, openblas_1t };

void direct(cpu::Trans ta, std::int64_t n, const float* a, const float* b, float* c) {
    const int in = static_cast<int>(n);
    cblas_sgemm(CblasColMajor, ta == cpu::Trans::none ? CblasNoTrans : CblasTrans, CblasNoTrans, in, in, in, 1.0f, a,
                in, b, in, 0.0f, c, in);
}
void direct(cpu::Trans ta, std::int64_t n, const double* a, const double* b, double* c) {
    const int in = static_cast<int>(n);
    cblas_dgemm(CblasColMajor, ta == cpu::Trans::none ? CblasNoTrans : CblasTrans, CblasNoTrans, in, in, in, 1.0, a,
                in, b, in, 0.0, c, in);
}

template <class T>
void BM_gemm(benchmark::State& state, Who who, cpu::Trans ta) {
    const std::int64_t n = state.range(0);
    Mats<T> m(n);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto once = [&] {
        switch (who) {
        case Who::tandem:
            cpu::gemm(ta, cpu::Trans::none, n, n, n, T(1), m.a.data(), n, m.b.data(), n, T(0), m.c.data(), n);
            break;
        case Who::tandem_avx2:
            cpu::gemm(ta, cpu::Trans::none, n, n, n, T(1), m.a.data(), n, m.b.data(), n, T(0), m.c.data(), n,
                      {.isa = "avx2"});
            break;
        case Who::openblas:
        case Who::openblas_1t:
            direct(ta, n, m.a.data(), m.b.data(), m.c.data());
            break;
        }
    };
    // OpenBLAS's thread count is process-wide: set for each baseline.
    if (who == Who::openblas) openblas_set_num_threads(cores);
    if (who == Who::openblas_1t) openblas_set_num_threads(1);
    once();  // warm: OpenBLAS's buffers, TBB's workers
    for (auto _ : state) {
        once();
        benchmark::DoNotOptimize(m.c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * static_cast<double>(n) *
                                                       static_cast<double>(n) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
    state.counters["threads"] = who == Who::openblas_1t ? 1 : (who == Who::openblas ? cores : tbb::this_task_arena::max_concurrency());
}

void register_all() {
    const std::pair<const char*, Who> whos[] = {{"tandem", Who::tandem},
                                                {"tandem_avx2", Who::tandem_avx2},
                                                {"openblas", Who::openblas},
                                                {"openblas_1t", Who::openblas_1t}};
    for (auto [op, ta] : {std::pair{"NN", cpu::Trans::none}, {"TN", cpu::Trans::transpose}})
        for (auto [name, who] : whos) {
            for (auto [type, f64] : {std::pair{"f32", false}, {"f64", true}}) {
                const std::string full = std::string(name) + "/" + type + "/" + op;
                auto* b = f64 ? benchmark::RegisterBenchmark(full.c_str(), BM_gemm<double>, who, ta)
                              : benchmark::RegisterBenchmark(full.c_str(), BM_gemm<float>, who, ta);
                b->Arg(128)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);
            }
        }
}

}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
