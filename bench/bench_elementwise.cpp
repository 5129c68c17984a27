// tandem-bench: the elementwise benchmarks of the benchmark issue.
//
//   * a fused chain of 8 elementwise ops with 2 transcendental functions over 2^24 doubles,
//       y = exp(-(sin(x) .* x).^2) ./ (1 + abs(x)),   x = linspace(-10, 10, 2^24)
//     in Tandem and in Eigen (one expression, single thread); NumPy and numexpr run the same
//     chain in bench/peers.py, against the result this program dumps (TANDEM_BENCH_DUMP);
//   * c = a + b over 2^24 doubles in Tandem, against
//   * the machine's copy bandwidth: a parallel copy with as many threads as Tandem's CPU
//     executor uses, three ways (memcpy, ordinary stores, streaming stores; run-cpu.sh takes
//     the best as the reference);
//   * and, for information, the chain in single precision in Tandem and Eigen.
//
// Every result is checked before anything is timed: Tandem's chain against Eigen's (max-norm
// relative difference <= 1e-12, and elementwise relative difference <= 1e-10 so that errors in
// the tiny values cannot hide), c = a + b exactly, the copies exactly. A failed check exits 2
// with a message and times nothing.
//
// Environment:
//   TANDEM_BENCH_DUMP=path   write Tandem's chain result (raw little-endian doubles) to path
//   TANDEM_BENCH_LOG2N=k     2^k elements instead of 2^24 (for quick smoke runs; 10..28)
//   TANDEM_*                 the runtime's own settings (TANDEM_CPU_THREADS, ...)
//
// bench/run-cpu.sh runs this with JSON output (--benchmark_out), then the Python peers, and
// prints the ratios against the targets. See docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <bit>
#include <emmintrin.h>  // SSE2: the x86-64 baseline, for the copy variants

#include <Eigen/Core>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tandem/tandem.hpp"

namespace {

// ---- the expression, once per library ------------------------------------------------------

// 8 ops: sin, .*, .^, unary -, exp, abs, +, ./ (2 transcendental: sin, exp).
tandem::Array chain_tandem(const tandem::Array& x) {
    return tandem::exp(-tandem::power(tandem::sin(x) * x, 2.0)) / (1.0 + tandem::abs(x));
}

// The same expression in Eigen. `.square()` is Eigen's x.^2 (NumPy's `**2` and, we expect,
// Tandem's power(., 2) take the same shortcut); a std::pow would only slow Eigen down.
template <class Derived>
auto chain_eigen(const Eigen::ArrayBase<Derived>& x) {
    using Scalar = typename Derived::Scalar;
    return (-(x.sin() * x).square()).exp() / (Scalar(1) + x.abs());
}

// ---- shared state, built once in main() before anything is timed --------------------------

struct State {
    std::int64_t n = 0;
    int threads = 1;
    std::unique_ptr<tandem::Runtime> rt;
    std::unique_ptr<tbb::task_arena> arena;  // the copy baseline's threads: as many as Tandem's

    std::vector<double> x_host, b_host;
    tandem::Array x, x32, a, b;  // materialized inputs
    tandem::Array m;             // b's elements as a rows x cols matrix (the reductions)
    tandem::Array m2;            // x's elements likewise (the fused sum(m .* m2, 2))
    std::int64_t rows = 1, cols = 1;

    Eigen::ArrayXd ex, ey;       // Eigen's input and (preallocated) output
    Eigen::ArrayXf ex32, ey32;

    std::vector<double> copy_src, copy_dst;
};
State* g = nullptr;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "tandem-bench: CHECK FAILED: %s\n", what.c_str());
    std::fflush(stderr);
    std::exit(2);
}

// max|got - want| / max|want| (the max-norm relative difference), and the largest elementwise
// relative difference (for information).
template <class T, class U>
std::pair<double, double> rel_diff(const T* got, const U* want, std::int64_t n) {
    double num = 0, den = 0, elem = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double g_ = static_cast<double>(got[i]);
        const double w = static_cast<double>(want[i]);
        if (std::isnan(g_) || std::isnan(w)) return {INFINITY, INFINITY};
        const double d = std::fabs(g_ - w);
        num = std::max(num, d);
        den = std::max(den, std::fabs(w));
        if (w != 0) elem = std::max(elem, d / std::fabs(w));
    }
    return {den > 0 ? num / den : num, elem};
}

// ---- the copy baselines ----------------------------------------------------------------------

// Splits [0, n) into one contiguous chunk per thread, as a static schedule would.
template <class F>
void for_chunks(std::int64_t n, F f) {
    const int t = g->threads;
    g->arena->execute([&] {
        tbb::parallel_for(
            0, t,
            [&](int i) {
                const std::int64_t lo = n * i / t;
                const std::int64_t hi = n * (i + 1) / t;
                f(lo, hi);
            },
            tbb::static_partitioner());
    });
}

void copy_memcpy(const double* src, double* dst, std::int64_t n) {
    for_chunks(n, [&](std::int64_t lo, std::int64_t hi) {
        std::memcpy(dst + lo, src + lo, static_cast<std::size_t>(hi - lo) * sizeof(double));
    });
}

// Ordinary (write-allocate) stores: what a plain loop writing an output does.
void copy_stores(const double* src, double* dst, std::int64_t n) {
    for_chunks(n, [&](std::int64_t lo, std::int64_t hi) {
        std::int64_t i = lo;
        for (; i < hi && (reinterpret_cast<std::uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
        for (; i + 8 <= hi; i += 8) {
            const __m128d v0 = _mm_loadu_pd(src + i), v1 = _mm_loadu_pd(src + i + 2);
            const __m128d v2 = _mm_loadu_pd(src + i + 4), v3 = _mm_loadu_pd(src + i + 6);
            _mm_store_pd(dst + i, v0);
            _mm_store_pd(dst + i + 2, v1);
            _mm_store_pd(dst + i + 4, v2);
            _mm_store_pd(dst + i + 6, v3);
            asm volatile("" ::: "memory");  // keep GCC from turning the loop back into memcpy
        }
        for (; i < hi; ++i) dst[i] = src[i];
    });
}

// Non-temporal (streaming) stores: no read of the destination before it is written.
void copy_stream(const double* src, double* dst, std::int64_t n) {
    for_chunks(n, [&](std::int64_t lo, std::int64_t hi) {
        std::int64_t i = lo;
        for (; i < hi && (reinterpret_cast<std::uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
        for (; i + 8 <= hi; i += 8) {
            const __m128d v0 = _mm_loadu_pd(src + i), v1 = _mm_loadu_pd(src + i + 2);
            const __m128d v2 = _mm_loadu_pd(src + i + 4), v3 = _mm_loadu_pd(src + i + 6);
            _mm_stream_pd(dst + i, v0);
            _mm_stream_pd(dst + i + 2, v1);
            _mm_stream_pd(dst + i + 4, v2);
            _mm_stream_pd(dst + i + 6, v3);
        }
        for (; i < hi; ++i) dst[i] = src[i];
        _mm_sfence();
    });
}

// ---- counters --------------------------------------------------------------------------------

void set_counters(benchmark::State& state, double bytes_per_iteration, double elements_per_iteration) {
    state.counters["bytes_per_second"] =
        benchmark::Counter(bytes_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["elements_per_second"] =
        benchmark::Counter(elements_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["n"] = static_cast<double>(g->n);
    state.counters["threads"] = static_cast<double>(g->threads);
}

// Regions Tandem ran per iteration: 1 for one fused pass; 0 would mean a cached value was timed.
// Anything but 1 fails the benchmark rather than report a figure that measured nothing.
void check_regions(benchmark::State& state, const tandem::Metrics& before) {
    const tandem::Metrics after = g->rt->metrics();
    const double per = static_cast<double>(after.regions_executed - before.regions_executed) /
                       static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["regions_per_iteration"] = per;
    if (per != 1.0) {
        char message[160];
        std::snprintf(message, sizeof message,
                      "Tandem ran %.3g regions per iteration instead of 1 (a reused value, or an unfused chain)", per);
        state.SkipWithError(message);
    }
}

// Frees finished graphs on this thread (Runtime::wait_idle: Tandem frees them on the thread that
// builds next, or soon after) and waits until nothing holds `node` any more (the caller has
// dropped its Arrays and futures).
void wait_released(tandem::Runtime& rt, const std::weak_ptr<tandem::detail::Node>& node) {
    rt.wait_idle();
    if (node.expired()) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!node.expired()) {
        if (std::chrono::steady_clock::now() > deadline)
            fail("Tandem still holds a gathered value 2 s after its last Array and future were dropped");
        std::this_thread::yield();
    }
}

// One timed Tandem evaluation: gather `value`, then drop it and wait until Tandem has let go
// of its node too. Tandem hash-conses nodes (the same op on the same operands gives the same
// node while that node lives), so the next iteration's `a + b` would otherwise find this one,
// already computed, if a worker thread still held it for a moment after resolving the future;
// waiting also puts the result's buffer back in Tandem's pool, as a program that drops its
// results would. The wait is part of the timed work (it is the tail of this gather).
template <class T>
void evaluate_fresh(tandem::Array value) {
    tandem::Runtime& rt = value.runtime();
    const std::weak_ptr<tandem::detail::Node> node = value.node();
    {
        const tandem::Future<tandem::HostArray> f = value.gather();
        value = tandem::Array();
        benchmark::DoNotOptimize(f.get().template data<T>());
    }
    wait_released(rt, node);
}

// ---- the benchmarks --------------------------------------------------------------------------

void BM_fused_chain_tandem(benchmark::State& state) {
    const tandem::Metrics before = g->rt->metrics();
    for (auto _ : state) evaluate_fresh<double>(chain_tandem(g->x));  // the graph is built anew each time
    check_regions(state, before);
    // Bytes that must move: x read, y written.
    set_counters(state, 2.0 * 8.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

void BM_fused_chain_eigen(benchmark::State& state) {
    for (auto _ : state) {
        g->ey = chain_eigen(g->ex);
        benchmark::DoNotOptimize(g->ey.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, 2.0 * 8.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

void BM_fused_chain_tandem_f32(benchmark::State& state) {
    const tandem::Metrics before = g->rt->metrics();
    for (auto _ : state) evaluate_fresh<float>(chain_tandem(g->x32));
    check_regions(state, before);
    set_counters(state, 2.0 * 4.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

void BM_fused_chain_eigen_f32(benchmark::State& state) {
    for (auto _ : state) {
        g->ey32 = chain_eigen(g->ex32);
        benchmark::DoNotOptimize(g->ey32.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, 2.0 * 4.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

void BM_add_tandem(benchmark::State& state) {
    const tandem::Metrics before = g->rt->metrics();
    for (auto _ : state) evaluate_fresh<double>(g->a + g->b);
    check_regions(state, before);
    // a and b read, c written: 3 arrays.
    set_counters(state, 3.0 * 8.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

// Reductions of the rows x cols matrix: its elements read once (the outputs are small).
template <int Dim>
void BM_sum_tandem(benchmark::State& state) {
    const tandem::Metrics before = g->rt->metrics();
    for (auto _ : state) evaluate_fresh<double>(Dim == 0 ? tandem::sum(g->m, tandem::all_dims) : tandem::sum(g->m, Dim));
    check_regions(state, before);
    set_counters(state, 8.0 * static_cast<double>(g->rows * g->cols), static_cast<double>(g->rows * g->cols));
}

// Reductions with their producer folded in: sum(A .* B, 2) reads both matrices once and writes
// no product; mean(A .^ 2) (along dimension 1) reads A once.
void BM_sum_ab_dim2_tandem(benchmark::State& state) {
    const tandem::Metrics before = g->rt->metrics();
    for (auto _ : state) evaluate_fresh<double>(tandem::sum(g->m * g->m2, 2));
    check_regions(state, before);
    set_counters(state, 2.0 * 8.0 * static_cast<double>(g->rows * g->cols), static_cast<double>(g->rows * g->cols));
}

void BM_mean_sq_tandem(benchmark::State& state) {
    for (auto _ : state) evaluate_fresh<double>(tandem::mean(tandem::power(g->m, 2.0)));
    set_counters(state, 8.0 * static_cast<double>(g->rows * g->cols), static_cast<double>(g->rows * g->cols));
}

template <void (*Copy)(const double*, double*, std::int64_t)>
void BM_copy(benchmark::State& state) {
    for (auto _ : state) {
        Copy(g->copy_src.data(), g->copy_dst.data(), g->n);
        benchmark::DoNotOptimize(g->copy_dst.data());
        benchmark::ClobberMemory();
    }
    // src read, dst written: 2 arrays (the STREAM convention).
    set_counters(state, 2.0 * 8.0 * static_cast<double>(g->n), static_cast<double>(g->n));
}

// ---- setup: inputs, the checks before timing, the dump ---------------------------------------

std::int64_t elements_from_env() {
    int log2n = 24;
    if (const char* s = std::getenv("TANDEM_BENCH_LOG2N"); s != nullptr && *s != '\0') {
        char* end = nullptr;
        const long v = std::strtol(s, &end, 10);
        if (*end != '\0' || v < 10 || v > 28) fail(std::string("TANDEM_BENCH_LOG2N must be 10..28, not '") + s + "'");
        log2n = static_cast<int>(v);
    }
    return std::int64_t{1} << log2n;
}

void setup(State& s) {
    s.n = elements_from_env();
    const std::int64_t n = s.n;
    s.rt = std::make_unique<tandem::Runtime>(tandem::Config::from_environment());
    const tandem::RuntimeInfo info = s.rt->info();
    s.threads = std::max(1, info.cpu_threads);
    s.arena = std::make_unique<tbb::task_arena>(s.threads);

    benchmark::AddCustomContext("tandem_version", info.version);
    benchmark::AddCustomContext("tandem_build", info.build);
    benchmark::AddCustomContext("tandem_cpu_isa", info.cpu_isa);
    benchmark::AddCustomContext("tandem_cpu_threads", std::to_string(s.threads));
    benchmark::AddCustomContext("tandem_block_elements", std::to_string(info.block_elements));
    benchmark::AddCustomContext("tandem_fusion", info.fusion ? "1" : "0");
    benchmark::AddCustomContext("bench_n", std::to_string(n));
    benchmark::AddCustomContext("eigen_version", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                     std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                     std::to_string(EIGEN_MINOR_VERSION));
    benchmark::AddCustomContext("eigen_simd", Eigen::SimdInstructionSetsInUse());

    // x = linspace(-10, 10, n), made the same way in peers.py: x[i] = -10 + (20 i) / (n - 1).
    s.x_host.resize(static_cast<std::size_t>(n));
    s.b_host.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        s.x_host[static_cast<std::size_t>(i)] = -10.0 + 20.0 * static_cast<double>(i) / static_cast<double>(n - 1);
        s.b_host[static_cast<std::size_t>(i)] = 1.0 + 0.5 * static_cast<double>(i) / static_cast<double>(n);
    }
    std::vector<float> x32_host(s.x_host.begin(), s.x_host.end());  // rounded once, to float

    const tandem::Shape shape{n, 1};
    s.x = s.rt->array(std::span<const double>(s.x_host), shape);
    s.x32 = s.rt->array(std::span<const float>(x32_host), shape);
    s.a = s.x;
    s.b = s.rt->array(std::span<const double>(s.b_host), shape);
    s.rows = std::int64_t{1} << (std::bit_width(static_cast<std::uint64_t>(n)) / 2);
    s.cols = n / s.rows;
    s.m = s.rt->array(std::span<const double>(s.b_host.data(), static_cast<std::size_t>(s.rows * s.cols)),
                      tandem::Shape{s.rows, s.cols});
    s.m2 = s.rt->array(std::span<const double>(s.x_host.data(), static_cast<std::size_t>(s.rows * s.cols)),
                       tandem::Shape{s.rows, s.cols});
    // The inputs are materialized before anything is timed (and stay so).
    s.rt->gather({s.x, s.x32, s.b, s.m, s.m2}).get();
    // -- check 0: the reductions against plain loops (also their warm-up).
    {
        auto h1 = tandem::sum(s.m, 1).gather().get(), h2 = tandem::sum(s.m, 2).gather().get();
        auto ha = tandem::sum(s.m, tandem::all_dims).gather().get();
        double worst = 0, total = 0;
        for (std::int64_t j = 0; j < s.cols; ++j) {
            double want = 0;
            for (std::int64_t i = 0; i < s.rows; ++i) want += s.b_host[static_cast<std::size_t>(i + s.rows * j)];
            total += want;
            worst = std::max(worst, std::fabs(h1.data<double>()[j] - want) / std::fabs(want));
        }
        for (std::int64_t i = 0; i < s.rows; ++i) {
            double want = 0;
            for (std::int64_t j = 0; j < s.cols; ++j) want += s.b_host[static_cast<std::size_t>(i + s.rows * j)];
            worst = std::max(worst, std::fabs(h2.data<double>()[i] - want) / std::fabs(want));
        }
        worst = std::max(worst, std::fabs(ha.data<double>()[0] - total) / total);
        // The fused ones: sum(m .* m2, 2) and mean(m .^ 2).
        auto hab = tandem::sum(s.m * s.m2, 2).gather().get(), hsq = tandem::mean(tandem::power(s.m, 2.0)).gather().get();
        for (std::int64_t i = 0; i < s.rows; ++i) {
            double want = 0, scale = 0;
            for (std::int64_t j = 0; j < s.cols; ++j) {
                const auto k = static_cast<std::size_t>(i + s.rows * j);
                want += s.b_host[k] * s.x_host[k];
                scale += std::fabs(s.b_host[k] * s.x_host[k]);
            }
            worst = std::max(worst, std::fabs(hab.data<double>()[i] - want) / scale);
        }
        for (std::int64_t j = 0; j < s.cols; ++j) {
            double want = 0;
            for (std::int64_t i = 0; i < s.rows; ++i) want += s.b_host[static_cast<std::size_t>(i + s.rows * j)] * s.b_host[static_cast<std::size_t>(i + s.rows * j)];
            want /= static_cast<double>(s.rows);
            worst = std::max(worst, std::fabs(hsq.data<double>()[j] - want) / want);
        }
        if (!(worst < 1e-12)) fail("Tandem's sums are wrong (relative difference " + std::to_string(worst) + ")");
    }

    s.ex = Eigen::Map<const Eigen::ArrayXd>(s.x_host.data(), static_cast<Eigen::Index>(n));
    s.ex32 = Eigen::Map<const Eigen::ArrayXf>(x32_host.data(), static_cast<Eigen::Index>(n));
    s.ey.resize(static_cast<Eigen::Index>(n));
    s.ey32.resize(static_cast<Eigen::Index>(n));

    // -- check 1: the chain, Tandem against Eigen (this is also every benchmark's warm-up).
    const tandem::Metrics before = s.rt->metrics();
    const tandem::HostArray y = chain_tandem(s.x).gather().get();
    const tandem::Metrics after = s.rt->metrics();
    if (y.numel() != n) fail("Tandem's chain result has " + std::to_string(y.numel()) + " elements, not " + std::to_string(n));
    s.ey = chain_eigen(s.ex);
    auto [rel, elem] = rel_diff(y.data<double>(), s.ey.data(), n);
    std::fprintf(stderr,
                 "tandem-bench: check chain f64, Tandem vs Eigen: max-norm relative difference %.3g "
                 "(limit 1e-12), largest elementwise relative difference %.3g (limit 1e-10)\n",
                 rel, elem);
    if (!(rel <= 1e-12)) fail("Tandem's chain differs from Eigen's by more than 1e-12 (max-norm relative)");
    // The max-norm cannot see errors in the tiny values (y is down to 1e-45 near |x| = 10).
    if (!(elem <= 1e-10)) fail("Tandem's chain differs from Eigen's by more than 1e-10 (elementwise relative)");
    const auto regions = after.regions_executed - before.regions_executed;
    std::fprintf(stderr, "tandem-bench: the chain ran as %llu fused region(s), %llu op(s)\n",
                 static_cast<unsigned long long>(regions),
                 static_cast<unsigned long long>(after.ops_executed - before.ops_executed));
    benchmark::AddCustomContext("tandem_chain_regions", std::to_string(regions));

    // -- the dump for peers.py (NumPy and numexpr are checked against it there).
    if (const char* path = std::getenv("TANDEM_BENCH_DUMP"); path != nullptr && *path != '\0') {
        std::FILE* f = std::fopen(path, "wb");
        if (f == nullptr) fail(std::string("cannot open TANDEM_BENCH_DUMP file ") + path);
        const std::size_t wrote = std::fwrite(y.data<double>(), sizeof(double), static_cast<std::size_t>(n), f);
        if (std::fclose(f) != 0 || wrote != static_cast<std::size_t>(n)) fail(std::string("cannot write ") + path);
        std::fprintf(stderr, "tandem-bench: wrote the chain result (%lld doubles) to %s\n", static_cast<long long>(n), path);
    }

    // -- check 2: the chain in single precision, against Eigen's double chain of the same
    // (float-rounded) inputs.
    {
        const tandem::HostArray y32 = chain_tandem(s.x32).gather().get();
        const Eigen::ArrayXd ref = chain_eigen(s.ex32.cast<double>().eval());
        auto [rel32, elem32] = rel_diff(y32.data<float>(), ref.data(), n);
        std::fprintf(stderr, "tandem-bench: check chain f32, Tandem vs Eigen f64: max-norm relative difference %.3g (limit 1e-5)\n",
                     rel32);
        if (!(rel32 <= 1e-5)) fail("Tandem's single-precision chain differs from the double one by more than 1e-5");
        s.ey32 = chain_eigen(s.ex32);
        auto [rele32, eleme32] = rel_diff(s.ey32.data(), ref.data(), n);
        if (!(rele32 <= 1e-5)) fail("Eigen's single-precision chain differs from the double one by more than 1e-5");
        (void)elem32;
        (void)eleme32;
    }

    // -- check 3: c = a + b, exactly.
    {
        tandem::Array sum = s.a + s.b;
        tandem::Runtime& sum_rt = sum.runtime();
        const std::weak_ptr<tandem::detail::Node> node = sum.node();
        {
            const tandem::HostArray c = sum.gather().get();
            sum = tandem::Array();
            const double* cd = c.data<double>();
            for (std::int64_t i = 0; i < n; ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (cd[i] != s.x_host[k] + s.b_host[k]) fail("Tandem's a + b is wrong at element " + std::to_string(i));
            }
        }
        wait_released(sum_rt, node);  // else the benchmark's first a + b could find this one, computed
    }

    // -- check 4: the copies, exactly.
    s.copy_src = s.b_host;
    s.copy_dst.assign(static_cast<std::size_t>(n), 0.0);  // touched once: no page faults when timed
    for (auto copy : {copy_memcpy, copy_stores, copy_stream}) {
        std::fill(s.copy_dst.begin(), s.copy_dst.end(), 0.0);
        copy(s.copy_src.data(), s.copy_dst.data(), n);
        if (s.copy_dst != s.copy_src) fail("a copy baseline copied wrongly");
    }
    std::fprintf(stderr, "tandem-bench: checks passed (n = %lld, Tandem %s, %d CPU thread(s), Eigen SIMD: %s)\n",
                 static_cast<long long>(n), info.cpu_isa.c_str(), s.threads, Eigen::SimdInstructionSetsInUse());
}

// Repetitions give medians; each repetition times a few iterations, in wall-clock time.
constexpr int kRepetitions = 7;

void register_benchmarks() {
    auto timed = [](benchmark::internal::Benchmark* b, int iterations) {
        b->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(kRepetitions)
            ->ReportAggregatesOnly(true);
    };
    timed(benchmark::RegisterBenchmark("BM_fused_chain_tandem", BM_fused_chain_tandem), 3);
    timed(benchmark::RegisterBenchmark("BM_fused_chain_eigen", BM_fused_chain_eigen), 3);
    timed(benchmark::RegisterBenchmark("BM_fused_chain_tandem_f32", BM_fused_chain_tandem_f32), 3);
    timed(benchmark::RegisterBenchmark("BM_fused_chain_eigen_f32", BM_fused_chain_eigen_f32), 3);
    timed(benchmark::RegisterBenchmark("BM_add_tandem", BM_add_tandem), 10);
    timed(benchmark::RegisterBenchmark("BM_sum_dim1_tandem", BM_sum_tandem<1>), 10);
    timed(benchmark::RegisterBenchmark("BM_sum_dim2_tandem", BM_sum_tandem<2>), 10);
    timed(benchmark::RegisterBenchmark("BM_sum_all_tandem", BM_sum_tandem<0>), 10);
    timed(benchmark::RegisterBenchmark("BM_sum_ab_dim2_tandem", BM_sum_ab_dim2_tandem), 10);
    timed(benchmark::RegisterBenchmark("BM_mean_sq_tandem", BM_mean_sq_tandem), 10);
    timed(benchmark::RegisterBenchmark("BM_copy_bandwidth", BM_copy<copy_memcpy>), 10);
    timed(benchmark::RegisterBenchmark("BM_copy_bandwidth_stores", BM_copy<copy_stores>), 10);
    timed(benchmark::RegisterBenchmark("BM_copy_bandwidth_stream", BM_copy<copy_stream>), 10);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    State state;
    g = &state;
    try {
        setup(state);
    } catch (const std::exception& e) {
        fail(std::string("setup threw: ") + e.what());
    }
    register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    // Release Tandem's arrays before their runtime.
    state.x = state.x32 = state.a = state.b = state.m = tandem::Array();
    state.rt.reset();
    g = nullptr;
    return 0;
}
