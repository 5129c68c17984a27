// Asynchrony: gathers return futures at once; continuations chain without blocking a thread;
// when_all joins several; errors of a computation arrive through its future.
//
//   a ─ exp ─► fa ──┐
//   b ─ sqrt ─► fb ─┴ when_all ─► sum of both first elements
#include <cstdio>

#include <tandem/tandem.hpp>

int main() {
    tandem::Runtime rt;
    tandem::Array a = rt.fill(1.0, {1000, 1000});
    tandem::Array b = rt.fill(16.0, {1000, 1000});

    tandem::Future<tandem::HostArray> fa = tandem::exp(a).gather();   // returns at once
    tandem::Future<tandem::HostArray> fb = tandem::sqrt(b).gather();
    auto both = tandem::when_all(std::vector{fa, fb}).then([](const std::vector<tandem::HostArray>& v) {
        return v[0].at(0) + v[1].at(0);  // e + 4
    });
    std::printf("exp(1) + sqrt(16) = %.6f (expect 6.718282)\n", both.get());

    // A data-dependent failure: logical ops refuse NaN (as MATLAB does). Only this value fails.
    tandem::Array nan_in = rt.array(std::vector<double>{1, std::numeric_limits<double>::quiet_NaN()}, {1, 2});
    auto failed = (nan_in & true).gather();
    try {
        failed.get();
    } catch (const tandem::ValueError& e) {
        std::printf("as expected, the logical op failed: %s\n", e.what());
    }
    std::printf("the runtime is still usable: 2 + 2 = %g\n", (rt.scalar(2) + 2).gather().get().at(0));
    return 0;
}
