// tandem-workloads: the whole programs of the benchmark issue (W1-W5) and two more kinds (W6, W7), in Tandem (the public C++ API,
// with the placement forced to the CPU, forced to the GPU, or automatic) and in Eigen 3.4 with
// OpenBLAS (the C++ peer: Eigen's expressions for the elementwise work and the reductions, its
// products through OpenBLAS with EIGEN_USE_BLAS). One process runs one program at one size:
//
//   tandem-workloads --system tandem --mode cpu --workload 1 --size 1000000 --warmup 1 --reps 5
//
//   W1  y = sin(x).*x + 0.5; z = exp(-y.^2) ./ (1 + abs(x)); s = sum(z)        x: n x 1 double
//   W2  per image mu = mean over dims 1-2, sigma = rms of imgs - mu,
//       out = min(max((imgs - mu) ./ (sigma + 1e-6) * 0.25 + 0.5, 0) .^ 0.8, 1); mean(out(:))
//                                                                          imgs: 2160 x 3840 x B single
//   W3  S = 100 * ones(M, 1, 'single'); T steps of S = S .* exp((r - sig^2/2)*dt + sig*sqrt(dt)*randn(M, 1));
//       exp(-r) * mean(max(S - 100, 0))      (randn inside the loop is timed; r = 0.05, sig = 0.2, dt = 1/T)
//   W4  S = sum(A .* B, 2); r = S' * S                                          A, B: n x n double
//   W5  Xc = X - mean(X); G = Xc'*Xc/(n-1); 50 steps of v = G*v / norm(G*v); v'*G*v / sum(var(X))
//                                                                               X: n x d double
//   W6  100 heat steps u = u + 0.1*(circshift(u,1,1) + circshift(u,-1,1) + circshift(u,1,2) +
//       circshift(u,-1,2) - 4*u); sum(u(:).^2)                                  u: n x n double
//   W7  softmax of each row, rows reduced and broadcast back: E = exp(X - max(X, [], 2));
//       P = E ./ sum(E, 2); sum(P(:) .* X(:))                                   X: n x d double
//   W8  eight independent pipelines: for i = 1..8, s_i = sum(exp(-x_i.^2 / 2) .* cos(3 x_i) + x_i / i);
//       sum of the s_i                                            x_i: (n + i - 1) x 1 double
// --size is n, B, M, n, "nxd" for W5 and W7, n, and n for W8.
//
// The inputs are one formula every peer computes exactly (bench/workload_peers.py and
// bench/workloads.m use the same): u(k, p) = t - floor(t), t = (k * p) * 2^-24, k the 0-based
// column-major linear index and p an odd integer below 2^23. k * p < 2^53 is exact, the rest is
// exact too, so every system sees the same bits (with or without fused multiply-adds) and the
// results can be compared tightly. Tandem makes its inputs with its own ops and evaluates them
// before timing, so that they live where the mode computes (on the GPU when forced there, as a
// PyTorch program's tensors would); Eigen's are filled by plain loops.
//
// A timed run is what a user's program does: build the expression (Tandem: lazily) and gather the
// scalar result to the host (`.gather().get()`: device work included). --warmup runs first, then
// --reps timed runs; each prints nothing until all are done. The output is one JSON object per line
// on stdout: a "context" line, then a "result" line with the value, the samples and (Tandem) what
// the runtime did per run; a failure is an "error" line and exit status 1. Checking the values
// against the other systems is bench/workloads_report.py's job (`scripts/bench` runs everything).
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tandem/tandem.hpp"

namespace {

using tandem::Array;
using json = nlohmann::json;

// ---- the shared input formula --------------------------------------------------------------

constexpr double kScale = 0x1p-24;
// Odd multipliers below 2^23 (k < 2^30 keeps k * p below 2^53).
constexpr double kP1 = 6700417, kP2 = 5754853, kP3 = 7368787, kP4 = 4875851, kP5 = 8086861, kP6 = 3276509;

double weyl(std::int64_t k, double p) {
    const double t = (static_cast<double>(k) * p) * kScale;
    return t - std::floor(t);
}

Array weyl(const Array& k, double p) {
    const Array t = k * p * kScale;
    return t - tandem::floor(t);
}

// 0, 1, ..., n - 1 as an n x 1 double column (MATLAB's (0:n-1)').
Array indices(tandem::Runtime& rt, std::int64_t n) { return tandem::column(rt.colon(0.0, static_cast<double>(n - 1))); }

// W1's x: an Irwin-Hall sum of four uniforms, roughly normal (mean 0, sd 1.15), exact in double.
double w1_x(std::int64_t k) { return 2.0 * (weyl(k, kP1) + weyl(k, kP2) + weyl(k, kP3) + weyl(k, kP4) - 2.0); }

constexpr std::int64_t kHeight = 2160, kWidth = 3840;  // W2's 4K images
constexpr double kRate = 0.05, kVol = 0.2;             // W3's market
constexpr int kStencilSteps = 100;                     // W6's heat steps

struct Size {
    std::int64_t a = 0, b = 0;  // n (W1, W4, W6), B (W2), M (W3), n x d (W5, W7)
};

// ---- Tandem: the programs as a user writes them ----------------------------------------------

// Inputs are made once (and evaluated) by setup; run() builds the program and returns its 1 x 1
// result, unevaluated.
struct TandemWorkload {
    std::vector<Array> inputs;
    std::function<Array()> run;
};

TandemWorkload tandem_workload(tandem::Runtime& rt, int w, Size s, int steps, int iters) {
    TandemWorkload t;
    switch (w) {
    case 1: {
        const Array k = indices(rt, s.a);
        const Array x = 2.0 * (weyl(k, kP1) + weyl(k, kP2) + weyl(k, kP3) + weyl(k, kP4) - 2.0);
        t.inputs = {x};
        t.run = [x] {
            const Array y = tandem::sin(x) * x + 0.5;
            const Array z = tandem::exp(-tandem::power(y, 2.0)) / (1.0 + tandem::abs(x));
            return tandem::sum(z);
        };
        break;
    }
    case 2: {
        const Array imgs = tandem::reshape(tandem::single(weyl(indices(rt, kHeight * kWidth * s.a), kP5)),
                                           tandem::Shape{kHeight, kWidth, s.a});
        t.inputs = {imgs};
        t.run = [imgs] {
            // MATLAB's mean(imgs, [1 2]); Tandem's reductions take one dimension (or all).
            const Array mu = tandem::mean(tandem::mean(imgs, 1), 2);
            const Array d = imgs - mu;
            const Array sigma = tandem::sqrt(tandem::mean(tandem::mean(tandem::power(d, 2.0), 1), 2));
            const Array out = tandem::min(tandem::power(tandem::max(d / (sigma + 1e-6) * 0.25 + 0.5, 0.0), 0.8), 1.0);
            return tandem::mean(out, tandem::all_dims);
        };
        break;
    }
    case 3: {
        const std::int64_t m = s.a;
        t.run = [&rt, m, steps] {
            const double dt = 1.0 / steps;
            Array S = 100.0 * rt.ones({m, 1}, tandem::DType::f32);
            for (int i = 0; i < steps; ++i)
                S = S * tandem::exp((kRate - kVol * kVol / 2) * dt +
                                    kVol * std::sqrt(dt) * tandem::randn(rt, {m, 1}, tandem::DType::f32));
            return std::exp(-kRate) * tandem::mean(tandem::max(S - 100.0, 0.0));
        };
        break;
    }
    case 4: {
        const Array k = tandem::reshape(indices(rt, s.a * s.a), tandem::Shape{s.a, s.a});
        const Array A = weyl(k, kP1) - 0.5, B = weyl(k, kP2) - 0.5;
        t.inputs = {A, B};
        t.run = [A, B] {
            const Array S = tandem::sum(A * B, 2);
            return tandem::matmul(S, S, {.transpose_a = true});
        };
        break;
    }
    case 5: {
        const std::int64_t n = s.a, d = s.b;
        const Array i = indices(rt, n);
        const Array j = tandem::transpose(indices(rt, d));
        const Array k = tandem::reshape(indices(rt, n * d), tandem::Shape{n, d});
        const Array X = (weyl(i, kP3) - 0.5) * weyl(j, kP6) + (weyl(k, kP5) - 0.5) / 4.0;
        t.inputs = {X};
        t.run = [&rt, X, n, d, iters] {
            const Array Xc = X - tandem::mean(X);
            const Array G = tandem::matmul(Xc, Xc, {.transpose_a = true}) / static_cast<double>(n - 1);
            Array v = rt.ones({d, 1}) / std::sqrt(static_cast<double>(d));
            for (int it = 0; it < iters; ++it) {
                const Array Gv = tandem::matmul(G, v);
                v = Gv / tandem::norm(Gv);
            }
            const Array vGv = tandem::matmul(tandem::matmul(v, G, {.transpose_a = true}), v);
            return vGv / tandem::sum(tandem::var(X));
        };
        break;
    }
    case 6: {
        const Array u0 = tandem::reshape(weyl(indices(rt, s.a * s.a), kP6), tandem::Shape{s.a, s.a});
        t.inputs = {u0};
        t.run = [u0] {
            Array u = u0;
            for (int i = 0; i < kStencilSteps; ++i)
                u = u + 0.1 * (tandem::circshift(u, 1, 1) + tandem::circshift(u, -1, 1) + tandem::circshift(u, 1, 2) +
                               tandem::circshift(u, -1, 2) - 4.0 * u);
            return tandem::sum(u * u, tandem::all_dims);
        };
        break;
    }
    case 7: {
        const std::int64_t n = s.a, d = s.b;
        const Array X = 8.0 * tandem::reshape(weyl(indices(rt, n * d), kP4), tandem::Shape{n, d}) - 4.0;
        t.inputs = {X};
        t.run = [X] {
            const Array E = tandem::exp(X - tandem::max(X, {}, 2));
            const Array P = E / tandem::sum(E, 2);
            return tandem::sum(P * X, tandem::all_dims);
        };
        break;
    }
    case 8: {
        // Lengths apart, so that fusion keeps the pipelines apart (one region each).
        for (int i = 0; i < 8; ++i) {
            const Array k = indices(rt, s.a + i);
            t.inputs.push_back(2.0 * (weyl(k, kP1) + weyl(k, kP2) - 1.0));
        }
        t.run = [xs = t.inputs] {
            Array total;
            for (std::size_t i = 0; i < xs.size(); ++i) {
                const Array& x = xs[i];
                const Array si = tandem::sum(tandem::exp(-tandem::power(x, 2.0) / 2.0) * tandem::cos(3.0 * x) +
                                             x / static_cast<double>(i + 1));
                total = i == 0 ? si : total + si;
            }
            return total;
        };
        break;
    }
    default: throw std::invalid_argument("no workload " + std::to_string(w));
    }
    return t;
}

// ---- Eigen 3.4 + OpenBLAS --------------------------------------------------------------------

// Single-threaded expressions (Eigen's coefficient-wise work is); products go to OpenBLAS.
std::function<double()> eigen_workload(int w, Size s, int steps, int iters) {
    switch (w) {
    case 1: {
        auto x = std::make_shared<Eigen::ArrayXd>(s.a);
        for (std::int64_t k = 0; k < s.a; ++k) (*x)(k) = w1_x(k);
        return [x] {
            const auto y = x->sin() * *x + 0.5;
            return ((-y.square()).exp() / (1.0 + x->abs())).sum();
        };
    }
    case 2: {
        const std::int64_t pixels = kHeight * kWidth;
        auto imgs = std::make_shared<Eigen::ArrayXXf>(pixels, s.a);  // one image a column
        for (std::int64_t k = 0; k < pixels * s.a; ++k) imgs->data()[k] = static_cast<float>(weyl(k, kP5));
        // The sums run in double: Eigen's single-precision sum of 8.3M elements (a few packet
        // accumulators, each adding a million values) drifts by 0.5% here, failing the check.
        return [imgs] {
            double total = 0;
            for (Eigen::Index b = 0; b < imgs->cols(); ++b) {
                const auto img = imgs->col(b);
                const auto mu = static_cast<float>(img.cast<double>().mean());
                const auto sigma = static_cast<float>(std::sqrt((img - mu).square().cast<double>().mean()));
                total += (((img - mu) / (sigma + 1e-6f) * 0.25f + 0.5f).max(0.0f).pow(0.8f).min(1.0f)).cast<double>().sum();
            }
            return total / static_cast<double>(imgs->size());
        };
    }
    case 3: {
        // Eigen has no random numbers: the C++ standard library's, as an Eigen user would take.
        auto gen = std::make_shared<std::mt19937>(42);
        const std::int64_t m = s.a;
        return [gen, m, steps] {
            const float dt = 1.0f / static_cast<float>(steps);
            const float drift = (static_cast<float>(kRate) - static_cast<float>(kVol * kVol) / 2) * dt;
            const float vol = static_cast<float>(kVol) * std::sqrt(dt);
            std::normal_distribution<float> normal;
            Eigen::ArrayXf S = Eigen::ArrayXf::Constant(m, 100.0f), z(m);
            for (int i = 0; i < steps; ++i) {
                for (Eigen::Index p = 0; p < m; ++p) z(p) = normal(*gen);
                S *= (drift + vol * z).exp();
            }
            return std::exp(-kRate) * static_cast<double>((S - 100.0f).max(0.0f).mean());
        };
    }
    case 4: {
        const std::int64_t n = s.a;
        auto A = std::make_shared<Eigen::MatrixXd>(n, n), B = std::make_shared<Eigen::MatrixXd>(n, n);
        for (std::int64_t k = 0; k < n * n; ++k) {
            A->data()[k] = weyl(k, kP1) - 0.5;
            B->data()[k] = weyl(k, kP2) - 0.5;
        }
        return [A, B] {
            const Eigen::VectorXd S = (A->array() * B->array()).rowwise().sum();
            return (S.transpose() * S).value();
        };
    }
    case 5: {
        const std::int64_t n = s.a, d = s.b;
        auto X = std::make_shared<Eigen::MatrixXd>(n, d);
        for (std::int64_t j = 0; j < d; ++j)
            for (std::int64_t i = 0; i < n; ++i)
                (*X)(i, j) = (weyl(i, kP3) - 0.5) * weyl(j, kP6) + (weyl(i + n * j, kP5) - 0.5) / 4.0;
        return [X, n, d, iters] {
            const Eigen::RowVectorXd mu = X->colwise().mean();
            const Eigen::MatrixXd Xc = X->rowwise() - mu;
            const Eigen::MatrixXd G = (Xc.transpose() * Xc) / static_cast<double>(n - 1);  // dgemm
            Eigen::VectorXd v = Eigen::VectorXd::Constant(d, 1.0 / std::sqrt(static_cast<double>(d)));
            for (int it = 0; it < iters; ++it) {
                const Eigen::VectorXd Gv = G * v;  // dgemv
                v = Gv / Gv.norm();
            }
            // sum(var(X)): the centred columns' sums of squares / (n - 1)
            const double total_var = Xc.array().square().sum() / static_cast<double>(n - 1);
            return (v.transpose() * G * v).value() / total_var;
        };
    }
    case 6: {
        // Eigen has no circshift: the neighbours' indices wrap by hand, one pass a step.
        const std::int64_t n = s.a;
        auto u0 = std::make_shared<Eigen::ArrayXXd>(n, n);
        for (std::int64_t k = 0; k < n * n; ++k) u0->data()[k] = weyl(k, kP6);
        return [u0, n] {
            Eigen::ArrayXXd u = *u0, v(n, n);
            for (int step = 0; step < kStencilSteps; ++step) {
                for (Eigen::Index j = 0; j < n; ++j) {
                    const Eigen::Index jl = j == 0 ? n - 1 : j - 1, jr = j == n - 1 ? 0 : j + 1;
                    for (Eigen::Index i = 0; i < n; ++i) {
                        const Eigen::Index iu = i == 0 ? n - 1 : i - 1, id = i == n - 1 ? 0 : i + 1;
                        v(i, j) = u(i, j) + 0.1 * (u(iu, j) + u(id, j) + u(i, jl) + u(i, jr) - 4.0 * u(i, j));
                    }
                }
                u.swap(v);
            }
            return u.square().sum();
        };
    }
    case 7: {
        const std::int64_t n = s.a, d = s.b;
        auto X = std::make_shared<Eigen::ArrayXXd>(n, d);
        for (std::int64_t k = 0; k < n * d; ++k) X->data()[k] = 8.0 * weyl(k, kP4) - 4.0;
        return [X] {
            const Eigen::ArrayXXd E = (X->colwise() - X->rowwise().maxCoeff()).exp();
            const Eigen::ArrayXXd P = E.colwise() / E.rowwise().sum();
            return (P * *X).sum();
        };
    }
    case 8: {
        auto xs = std::make_shared<std::vector<Eigen::ArrayXd>>();
        for (std::int64_t i = 0; i < 8; ++i) {
            Eigen::ArrayXd x(s.a + i);
            for (std::int64_t k = 0; k < s.a + i; ++k) x(k) = 2.0 * (weyl(k, kP1) + weyl(k, kP2) - 1.0);
            xs->push_back(std::move(x));
        }
        return [xs] {
            double total = 0;
            for (std::size_t i = 0; i < xs->size(); ++i) {
                const Eigen::ArrayXd& x = (*xs)[i];
                total += ((-x.square() / 2.0).exp() * (3.0 * x).cos() + x / static_cast<double>(i + 1)).sum();
            }
            return total;
        };
    }
    default: throw std::invalid_argument("no workload " + std::to_string(w));
    }
}

// ---- timing ----------------------------------------------------------------------------------

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Frees the run's graph on this thread and checks that nothing holds `node` any more. Tandem
// hash-conses nodes (the same op on the same operands is the same node while it lives), and frees
// a finished graph on the thread that builds the next expression (or soon after, or at
// wait_idle): freeing it here is part of the timed run, as the next build would do it in a
// program that loops (it also returns the run's buffers to the pool).
void release_run(tandem::Runtime& rt, const std::weak_ptr<tandem::detail::Node>& node) {
    rt.wait_idle();
    const auto t0 = std::chrono::steady_clock::now();
    while (!node.expired()) {  // (a thread that ran a continuation may let go a moment later)
        if (ms_since(t0) > 5000) throw std::runtime_error("Tandem still holds a result 5 s after it was dropped");
        std::this_thread::yield();
    }
}

json metrics_delta(const tandem::Metrics& a, const tandem::Metrics& b) {
    return {{"regions", b.regions_executed - a.regions_executed},
            {"device_regions", b.device_regions - a.device_regions},
            {"device_fallbacks", b.device_fallbacks - a.device_fallbacks},
            {"device_dispatches", b.device_dispatches - a.device_dispatches},
            {"upload_MB", static_cast<double>(b.upload_bytes - a.upload_bytes) / 1e6},
            {"download_MB", static_cast<double>(b.download_bytes - a.download_bytes) / 1e6},
            {"kernel_ms", b.kernel_ms - a.kernel_ms},  // of the regions sampled (Metrics::kernel_timed_regions)
            {"kernel_timed_regions", b.kernel_timed_regions - a.kernel_timed_regions},
            {"pipeline_misses", b.pipeline_misses - a.pipeline_misses},
            {"pipelines_built_ahead", b.pipelines_built_ahead - a.pipelines_built_ahead},
            {"kernels_formed", b.kernels_formed - a.kernels_formed},
            {"split_regions", b.split_regions - a.split_regions},
            {"split_values_assembled", b.split_values_assembled - a.split_values_assembled},
            {"recordings_handed_off", b.recordings_handed_off - a.recordings_handed_off}};
}

struct Args {
    std::string system = "tandem", mode = "cpu", size;
    int workload = 1, warmup = 1, reps = 5, steps = 256, iters = 50;
    double min_warmup_ms = 0;  // warm-up continues until this much time has passed (GPU clocks ramp up)
};

// Another warm-up run: the warm-ups after the first (which compiles) took less than
// --min-warmup-ms (at most 100 runs). A GPU that idled (compiling, or another system's CPU run)
// raises its clocks only under load: W2 at B = 16 measured 8.7 ms a run right after an idle
// second and 2.1 ms once warm, on the H100.
bool keep_warming(const Args& a, const std::vector<double>& warm) {
    double total = 0;
    for (std::size_t i = 1; i < warm.size(); ++i) total += warm[i];
    return a.min_warmup_ms > 0 && total < a.min_warmup_ms && warm.size() < 100;
}

Size parse_size(const Args& a) {
    Size s;
    const auto x = a.size.find('x');
    try {
        s.a = std::stoll(a.size.substr(0, x));
        if (x != std::string::npos) s.b = std::stoll(a.size.substr(x + 1));
    } catch (const std::exception&) {
        throw CLI::ValidationError("--size", "'" + a.size + "' is not a number (or NxD for workloads 5 and 7)");
    }
    const bool nxd = a.workload == 5 || a.workload == 7;
    if (s.a < (a.workload == 2 ? 1 : 2) || (nxd && s.b < 1) || (!nxd && x != std::string::npos))
        throw CLI::ValidationError("--size", "'" + a.size + "': workloads 5 and 7 take NxD (N >= 2), W2 B >= 1, the others n >= 2");
    if (a.workload == 2 && s.a > 64) throw CLI::ValidationError("--size", "workload 2 takes B (images) <= 64");
    return s;
}

tandem::Config config_for(const std::string& mode) {
    tandem::Config c = tandem::Config::from_environment();
    if (mode == "cpu") {
        c.device = "cpu";
    } else if (mode == "gpu") {
        // Forced GPU: a Vulkan device (TANDEM_DEVICE may name which, or several, or "all"), and every region on it
        // however small (placement keeps only views, long concatenations and short scans on the CPU).
        if (c.device.rfind("vulkan", 0) != 0 && c.device != "all") c.device = "vulkan";
        c.placement = "gpu";
    }  // auto: the runtime's own choice (TANDEM_DEVICE, default "auto")
    return c;
}

std::string device_in_use(const tandem::RuntimeInfo& info) {
    std::string in_use;  // every device in use, "; " between them
    for (const auto& d : info.devices)
        if (d.find("[in use") != std::string::npos) in_use += (in_use.empty() ? "" : "; ") + d;
    return in_use.empty() ? "none: " + info.devices_note : in_use;
}

json run_tandem(const Args& a, Size s, json& context) {
    tandem::Runtime rt(config_for(a.mode));
    const tandem::RuntimeInfo info = rt.info();
    context["tandem_version"] = info.version;
    context["tandem_cpu_isa"] = info.cpu_isa;
    context["tandem_cpu_threads"] = info.cpu_threads;
    context["device"] = device_in_use(info);
    context["placement"] = rt.config().placement;
    if (a.mode == "gpu" && context["device"].get<std::string>().rfind("none", 0) == 0)
        throw std::runtime_error("forced GPU mode but no Vulkan device in use: " + info.devices_note);
    tandem::seed(rt, 42);

    auto t0 = std::chrono::steady_clock::now();
    TandemWorkload w = tandem_workload(rt, a.workload, s, a.steps, a.iters);
    if (!w.inputs.empty()) rt.evaluate(w.inputs).get();
    json result = {{"setup_ms", ms_since(t0)}};

    std::vector<double> warm, samples;
    json per_run = json::array();
    double value = NAN;
    for (int r = 0, warmups = a.warmup; r < warmups + a.reps; ++r) {
        const tandem::Metrics before = rt.metrics();
        t0 = std::chrono::steady_clock::now();
        double build_ms = 0, value_ms = 0;  // the run's phases: the graph built, the value back
        {
            Array program = w.run();
            build_ms = ms_since(t0);
            const std::weak_ptr<tandem::detail::Node> node = program.node();
            {
                const tandem::Future<tandem::HostArray> f = program.gather();
                program = Array();
                value = f.get().at(0);
                value_ms = ms_since(t0);
            }
            release_run(rt, node);
        }
        const double ms = ms_since(t0);
        (r < warmups ? warm : samples).push_back(ms);
        if (r >= warmups) {
            json delta = metrics_delta(before, rt.metrics());
            delta["build_ms"] = build_ms;
            delta["gather_ms"] = value_ms - build_ms;
            delta["release_ms"] = ms - value_ms;
            per_run.push_back(std::move(delta));
        }
        if (r + 1 == warmups && keep_warming(a, warm)) ++warmups;
    }
    result["value"] = value;
    result["warmup_ms"] = warm;
    result["samples_ms"] = samples;
    result["tandem"] = per_run;
    return result;
}

json run_eigen(const Args& a, Size s, json& context) {
    context["eigen_version"] = std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                               std::to_string(EIGEN_MINOR_VERSION);
    context["eigen_simd"] = Eigen::SimdInstructionSetsInUse();
    context["openblas"] = openblas_get_config();
    context["openblas_threads"] = openblas_get_num_threads();
    auto t0 = std::chrono::steady_clock::now();
    const std::function<double()> program = eigen_workload(a.workload, s, a.steps, a.iters);
    json result = {{"setup_ms", ms_since(t0)}};
    std::vector<double> warm, samples;
    double value = NAN;
    for (int r = 0, warmups = a.warmup; r < warmups + a.reps; ++r) {
        t0 = std::chrono::steady_clock::now();
        value = program();
        (r < warmups ? warm : samples).push_back(ms_since(t0));
        if (r + 1 == warmups && keep_warming(a, warm)) ++warmups;
    }
    result["value"] = value;
    result["warmup_ms"] = warm;
    result["samples_ms"] = samples;
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    CLI::App app{"tandem-workloads: the benchmark issue's whole programs in Tandem and in Eigen + OpenBLAS"};
    app.add_option("--system", a.system, "tandem or eigen")->check(CLI::IsMember({"tandem", "eigen"}));
    app.add_option("--mode", a.mode, "Tandem's placement: cpu, gpu (forced) or auto")
        ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_option("--workload", a.workload, "1..8")->check(CLI::Range(1, 8));
    app.add_option("--size", a.size, "n (W1, W4, W6), B (W2), M (W3), NxD (W5, W7)")->required();
    app.add_option("--warmup", a.warmup, "untimed runs first")->check(CLI::Range(0, 100));
    app.add_option("--min-warmup-ms", a.min_warmup_ms, "more warm-up runs until those after the first took this long (GPU clocks)")
        ->check(CLI::Range(0.0, 600000.0));
    app.add_option("--reps", a.reps, "timed runs")->check(CLI::Range(1, 1000));
    app.add_option("--steps", a.steps, "W3's time steps T")->check(CLI::Range(1, 100000));
    app.add_option("--iters", a.iters, "W5's power-iteration steps")->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    json context = {{"kind", "context"}, {"system", a.system}, {"threads_available", std::thread::hardware_concurrency()}};
    try {
        const Size s = parse_size(a);
        json r = a.system == "tandem" ? run_tandem(a, s, context) : run_eigen(a, s, context);
        std::printf("%s\n", context.dump().c_str());
        r["kind"] = "result";
        r["system"] = a.system;
        if (a.system == "tandem") r["mode"] = a.mode;
        r["workload"] = a.workload;
        r["size"] = a.size;
        if (a.workload == 3) r["steps"] = a.steps;
        if (a.workload == 5) r["iters"] = a.iters;
        std::printf("%s\n", r.dump().c_str());
        return 0;
    } catch (const CLI::Error& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::printf("%s\n", context.dump().c_str());
        std::printf("%s\n", json{{"kind", "error"}, {"system", a.system}, {"workload", a.workload}, {"message", e.what()}}.dump().c_str());
        std::fprintf(stderr, "tandem-workloads: %s\n", e.what());
        return 1;
    }
}
