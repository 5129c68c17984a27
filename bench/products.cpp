// Matrix products over every GPU: C = A * B (and an epilogue) on one device and split by blocks
// of C's columns over several (issue 13), with the same bits. The operands are made on the
// devices by the runtime (rand), so the timed runs move nothing through the host but the
// result's checksum.
//
//   tandem-products --n 8192 [--k K] [--dtype f64|f32] [--reps 5]
//
// Run it under TANDEM_DEVICE=vulkan:0 and =all (bench/multi_gpu.sh does for the workloads).
// One JSON line: median ms of the timed runs, TFLOP/s, the checksum (sum of C), and what the
// runtime did (regions split, the devices' regions).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include <tandem/tandem.hpp>

int main(int argc, char** argv) {
    CLI::App app{"Matrix products on one GPU or split over several", "tandem-products"};
    std::int64_t n = 8192, k = 0;
    std::string dtype = "f64";
    int reps = 5;
    app.add_option("--n", n, "C is n x n")->check(CLI::Range(2LL, 1LL << 17));
    app.add_option("--k", k, "the inner dimension (default n)")->check(CLI::Range(0LL, 1LL << 20));
    app.add_option("--dtype", dtype, "f64 or f32")->check(CLI::IsMember({"f64", "f32"}));
    app.add_option("--reps", reps, "timed runs")->check(CLI::Range(1, 1000));
    CLI11_PARSE(app, argc, argv);
    if (k == 0) k = n;
    try {
        tandem::Config c = tandem::Config::from_environment();
        if (c.placement == "auto" && std::getenv("TANDEM_PLACEMENT") == nullptr) c.placement = "gpu";
        tandem::Runtime rt(c);
        tandem::seed(rt, 1);
        const tandem::DType t = dtype == "f64" ? tandem::DType::f64 : tandem::DType::f32;
        tandem::Array A = tandem::astype(tandem::rand(rt, {n, k}) - 0.5, t), B = tandem::astype(tandem::rand(rt, {k, n}) - 0.5, t);
        rt.evaluate({A, B}).get();
        auto run = [&] { return tandem::sum(tandem::matmul(A, B) * 2.0, tandem::all_dims).gather().get().at(0); };
        double value = run();  // kernels built, memory pooled
        const tandem::Metrics m0 = rt.metrics();
        std::vector<double> ms;
        for (int r = 0; r < reps; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            const double v = run();
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            if (!(v == value || (v != v && value != value))) throw std::runtime_error("the product's sum changed between runs");
        }
        const tandem::Metrics m1 = rt.metrics();
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        const double median = sorted[sorted.size() / 2];
        std::vector<std::uint64_t> each;
        for (std::size_t d = 0; d < m1.device_regions_each.size(); ++d)
            each.push_back(m1.device_regions_each[d] - (d < m0.device_regions_each.size() ? m0.device_regions_each[d] : 0));
        nlohmann::json j = {{"bench", "products"}, {"n", n}, {"k", k}, {"dtype", dtype}, {"devices", m1.device_regions_each.size()},
                            {"median_ms", median}, {"samples_ms", ms}, {"tflops", 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(k) / (median * 1e-3) / 1e12},
                            {"checksum", value}, {"split_regions", m1.split_regions - m0.split_regions},
                            {"device_regions_each", each}, {"upload_bytes", m1.upload_bytes - m0.upload_bytes},
                            {"download_bytes", m1.download_bytes - m0.download_bytes}};
        std::cout << j.dump() << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "tandem-products: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
