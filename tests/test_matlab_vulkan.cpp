// The MATLAB front end on the Vulkan device (lavapipe in CI, the validation layer on): every
// region of these programs runs on the device, and each prints what it prints on the CPU
// executor (a number's every digit through %.17g where both executors compute the same bits; the
// device's own transcendental math within a stated number of digits).
#include <gtest/gtest.h>

#include <sstream>

#include "matlab/interpreter.hpp"
#include "vulkan_runtime.hpp"

namespace mt = tandem::matlab;

namespace {

std::string run_on(tandem::Runtime& rt, const std::string& code) {
    std::ostringstream out;
    mt::Interpreter in(rt, out);
    in.run_code(code);
    return out.str();
}

struct Program {
    const char* name;
    const char* code;
};

// Programs whose every value is exact on both executors (the canonical order of sums, IEEE
// arithmetic): the same text to the last digit.
const Program kExact[] = {
    {"implicit expansion and reductions",
     "A = reshape(1:12, 3, 4) / 7; B = A - mean(A); fprintf('%.17g\\n', sum(B .^ 2), max(A, [], 2), cumsum(A(:, 1)));"},
    {"indexing, growth and deletion",
     "x = (1:10)' * 0.1; x(x > 0.55) = -1; x(12) = 3; x([1 3]) = []; fprintf('%.17g\\n', x, numel(x));"},
    {"a loop of array code (one fused program)",
     "x = linspace(0, 1, 1001)'; for k = 1:40, x = x * 0.99 + 0.01 * x .^ 2; end\nfprintf('%.17g\\n', sum(x), x(end));"},
    {"logical masks and find",
     "v = mod(1:20, 7) / 3; m = v > 1; fprintf('%.17g\\n', find(m), sum(v(m)), nnz(m), any(v > 2), all(v >= 0));"},
    {"products and solves",
     "A = [4 1 0; 1 3 1; 0 1 2]; b = [1; 2; 3]; x = A \\ b; C = A * A'; fprintf('%.17g\\n', A * x - b, C(2, 3));"},
    {"NaN, Inf and -0 through the device",
     "v = [1 NaN -Inf 0 -0 Inf]; fprintf('%.17g\\n', max(v), min(v), sum(isnan(v)), 1 ./ v(5), mean(v([1 4 5])));"},
    {"reductions of x(:)",
     "x = reshape(1:600, 10, 6, 10) / 7 - 40; fprintf('%.17g\\n', sum(x(:) .^ 2), mean(x(:)), max(x(:)), prod(x(1:20)'));"},
    {"single precision",
     "x = single(1:100) / 3; fprintf('%.9g\\n', sum(x), x(7) * 2, class(x));"},
};

}  // namespace

TEST(MatlabOnVulkan, ProgramsPrintWhatTheyPrintOnTheCpu) {
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    for (const Program& p : kExact) {
        SCOPED_TRACE(p.name);
        const auto before = gpu->metrics();
        const std::string on_gpu = run_on(*gpu, p.code);
        const auto after = gpu->metrics();
        EXPECT_GT(after.device_regions, before.device_regions) << "the program ran on the device";
        EXPECT_EQ(on_gpu, run_on(cpu, p.code));
    }
    tvk::expect_device_clean(*gpu);
}

TEST(MatlabOnVulkan, TheDevicesMathWithinItsDigits) {
    // sin and exp are the device's own (GLSL's, or Tandem's for double): 12 digits agree.
    auto gpu = tvk::open_gpu();
    tandem::Runtime cpu(tvk::cpu_config());
    const char* code = "x = linspace(-3, 3, 301); y = sin(x) .* exp(-x .^ 2 / 2) + [0.5 0.25]'; fprintf('%.12g\\n', sum(y(:)), y(2, 17));";
    EXPECT_EQ(run_on(*gpu, code), run_on(cpu, code));
    tvk::expect_device_clean(*gpu);
}

TEST(MatlabOnVulkan, GpuArrayAndGatherKeepTheValues) {
    auto gpu = tvk::open_gpu();
    const std::string out = run_on(*gpu,
                                   "x = gpuArray([1 2 3 4]); y = gather(x * 2); fprintf('%g ', y); disp(existsOnGPU(x));"
                                   "d = gpuDevice(); disp(d.backend); disp(d.device_id);");
    EXPECT_EQ(out, "2 4 6 8    1\nvulkan\n     1\n");
    tvk::expect_device_clean(*gpu);
}

TEST(MatlabOnVulkan, AGpuArraysWorkRunsOnTheDeviceWhateverItsSize) {
    // Automatic placement would keep arrays this small on the CPU: a gpuArray's regions, and
    // those computing from it, go to the device; the same code without gpuArray, and what follows
    // a gather, stays on the CPU; both print the CPU's digits.
    auto gpu = tvk::open_gpu(tvk::small_on_cpu_config());
    tandem::Runtime cpu(tvk::cpu_config());
    const char* body = "y = cumsum((x / 7) .^ 2 - [0.5; 0.25], 2); m = max(y, [], 1); fprintf('%.17g\\n', y(2, :), m, sum(y(:)));";
    const std::string plain = std::string("x = reshape([1 2 3 4 5 6 7 8 9 10 11 12], 2, 6); ") + body;
    const std::string on_gpu = std::string("x = gpuArray(reshape([1 2 3 4 5 6 7 8 9 10 11 12], 2, 6)); ") + body;
    const std::string want = run_on(cpu, plain);
    // The regions run since `from` (records are kept in order): "executor shape ops" each.
    auto runs_since = [&](std::size_t from) {
        gpu->wait_idle();
        std::vector<std::string> r;
        const auto records = gpu->region_records();
        for (std::size_t k = from; k < records.size(); ++k)
            r.push_back(records[k].executor + " " + records[k].shape + " " + records[k].ops);
        return r;
    };
    std::size_t from = gpu->region_records().size();
    EXPECT_EQ(run_on(*gpu, on_gpu), want);
    auto runs = runs_since(from);
    EXPECT_GE(runs.size(), 5u);
    for (const auto& r : runs) EXPECT_EQ(r.rfind("vulkan ", 0), 0u) << r;
    from = gpu->region_records().size();
    EXPECT_EQ(run_on(*gpu, plain), want);
    for (const auto& r : runs_since(from)) EXPECT_EQ(r.rfind("cpu ", 0), 0u) << r << ": without gpuArray, the CPU's";
    from = gpu->region_records().size();
    EXPECT_EQ(run_on(*gpu, "x = gather(gpuArray(reshape([1 2 3 4 5 6 7 8 9 10 11 12], 2, 6))); " + std::string(body)), want);
    runs = runs_since(from);
    ASSERT_GE(runs.size(), 2u);
    EXPECT_EQ(runs.front().rfind("vulkan ", 0), 0u) << runs.front() << ": the gpuArray";
    for (std::size_t k = 1; k < runs.size(); ++k) EXPECT_EQ(runs[k].rfind("cpu ", 0), 0u) << runs[k] << ": after gather";
    tvk::expect_device_clean(*gpu);
}
