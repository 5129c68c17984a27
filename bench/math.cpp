// The CPU executor's elementary functions, one at a time: ns per element of each kernel of the
// CPU's kernel table (every instruction set this CPU has), one thread, over inputs in the ranges
// programs use (a block of 16384 elements, in L1/L2, best of --reps), beside glibc's scalar
// function in the same loop shape (its double function for both types). What bit identity with the
// GPU costs, and what a fast path buys.
//
//   tandem-math-bench [--reps R] [--elements N] [--filter NAME]
//
// Prints one JSON line per function, type and instruction set:
//   {"fn":"tanh","dtype":"f64","isa":"avx512","ns":..., "glibc_ns":...}
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels.hpp"
#include "graph/op_reference.hpp"

namespace {

using tandem::detail::OpKind;
using tandem::detail::cpu::KernelTable;

struct Case {
    const char* name;
    OpKind op;
    double lo, hi;                   // inputs drawn uniformly from [lo, hi] (the second operand too)
    double (*ref)(double);           // glibc (one argument): the op's reference column
    double (*ref2)(double, double);  // glibc (two arguments)
};

/// The inputs each elementary function is timed on: the ranges programs use.
struct Range {
    const char* name;
    double lo, hi;
};
constexpr Range kRanges[] = {
    {"exp", -20, 20},   {"expm1", -5, 5},   {"log", 1e-3, 1e3}, {"log2", 1e-3, 1e3}, {"log10", 1e-3, 1e3},
    {"log1p", -0.9, 10}, {"sin", -10, 10},  {"cos", -10, 10},   {"tan", -10, 10},    {"asin", -1, 1},
    {"acos", -1, 1},    {"atan", -10, 10},  {"sinh", -5, 5},    {"cosh", -5, 5},     {"tanh", -5, 5},
    {"power", 0.1, 4},  {"atan2", -10, 10}, {"hypot", -10, 10},
};

/// Every elementary function of the op table (graph/ops.def's transcendental rows), with its range.
std::vector<Case> cases() {
    std::vector<Case> out;
    auto add = [&](const char* name, OpKind op, double (*ref)(double), double (*ref2)(double, double)) {
        const auto* r = std::find_if(std::begin(kRanges), std::end(kRanges),
                                     [&](const Range& x) { return std::string(x.name) == name; });
        if (r == std::end(kRanges))
            throw std::logic_error(std::string("tandem-math-bench: no input range for ") + name + " (add it to kRanges)");
        out.push_back({name, op, r->lo, r->hi, ref, ref2});
    };
#define TANDEM_OP(...)
#define TANDEM_UNARY(E, name, rule, cost, accuracy, api, reference, glsl, cpu)                       \
    if (tandem::detail::CostClass::cost == tandem::detail::CostClass::transcendental)                  \
        add(name, OpKind::E, [](double a) { using T [[maybe_unused]] = double; return static_cast<double>(reference); }, nullptr);
#define TANDEM_BINARY(E, name, rule, cost, accuracy, api, reference, glsl, cpu)                      \
    if (tandem::detail::CostClass::cost == tandem::detail::CostClass::transcendental)                  \
        add(name, OpKind::E, nullptr, [](double a, double b) { using T [[maybe_unused]] = double; return static_cast<double>(reference); });
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY
    return out;
}

template <class F>
double best_ns(int reps, std::size_t n, F&& f) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n));
    }
    return best;
}

template <class T>
void run(const Case& c, const KernelTable& table, int dt, int reps, std::size_t n) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> dist(c.lo, c.hi);
    std::vector<T> a(n), b(n), out(n), ref(n);
    for (auto& v : a) v = static_cast<T>(dist(rng));
    for (auto& v : b) v = static_cast<T>(dist(rng));
    const auto op = static_cast<std::size_t>(c.op);
    double ns = 0;
    if (c.ref) {
        const auto fn = table.unary[op][dt];
        ns = best_ns(reps, n, [&] { fn(n, a.data(), out.data()); });
    } else {
        const auto fn = table.binary[op][dt];
        ns = best_ns(reps, n, [&] { fn(n, a.data(), b.data(), 0u, out.data()); });
    }
    const double glibc = best_ns(reps, n, [&] {
        for (std::size_t i = 0; i < n; ++i)
            ref[i] = static_cast<T>(c.ref ? c.ref(static_cast<double>(a[i]))
                                          : c.ref2(static_cast<double>(a[i]), static_cast<double>(b[i])));
    });
    nlohmann::json j{{"fn", c.name}, {"dtype", dt == 0 ? "f64" : "f32"}, {"isa", table.isa},
                     {"ns", std::round(ns * 100) / 100}, {"glibc_ns", std::round(glibc * 100) / 100}};
    std::cout << j.dump() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ns per element of the CPU executor's elementary functions", "tandem-math-bench"};
    int reps = 20;
    std::size_t elements = 16384;
    std::string filter, isa_filter;
    app.add_option("--reps", reps, "timed runs of each kernel (the best is kept)")->check(CLI::Range(1, 100000));
    app.add_option("--elements", elements, "elements per run")->check(CLI::Range(1, 1 << 26));
    app.add_option("--filter", filter, "only functions whose name contains this");
    app.add_option("--isa", isa_filter, "only this instruction set")
        ->check(CLI::IsMember({"baseline", "avx2", "avx512"}));
    CLI11_PARSE(app, argc, argv);
    namespace cpu = tandem::detail::cpu;
    std::vector<const KernelTable*> tables{cpu::kernels_baseline(), cpu::kernels_avx2(), cpu::kernels_avx512()};
    int rows = 0;
    for (const Case& c : cases()) {
        if (!filter.empty() && std::string(c.name).find(filter) == std::string::npos) continue;
        for (const KernelTable* t : tables) {
            if (!t || (!isa_filter.empty() && isa_filter != t->isa)) continue;
            run<double>(c, *t, 0, reps, elements);
            run<float>(c, *t, 1, reps, elements);
            ++rows;
        }
    }
    if (rows == 0) {
        std::cerr << "tandem-math-bench: nothing to time: no function matches --filter '" << filter
                  << "', or this CPU lacks --isa " << isa_filter << "\n";
        return 2;
    }
    return 0;
}
