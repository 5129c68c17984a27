// Quick start: lazy arrays, one fused pass, MATLAB semantics. Every printed value can be checked
// by hand (or in MATLAB/Octave with the same expressions).
//
//   x ─ sin ─ .^2 ─┐
//     └ cos ─ .^2 ─┴ + ─► y          (one fused region: y is 1 everywhere)
#include <cstdio>
#include <numbers>

#include <tandem/tandem.hpp>

int main() {
    tandem::Runtime rt;

    // x = linspace(0, pi, 5): 0, pi/4, pi/2, 3pi/4, pi
    tandem::Array x = rt.linspace(0, std::numbers::pi, 5);
    tandem::Array y = tandem::power(tandem::sin(x), 2) + tandem::power(tandem::cos(x), 2);
    std::printf("sin(x).^2 + cos(x).^2 (expect 1 1 1 1 1):\n%s\n", y.gather().get().to_string().c_str());

    // MATLAB rounding and remainders: round halves away from zero; mod takes the sign of b.
    tandem::Array v = rt.array(std::vector<double>{-2.5, -0.5, 0.5, 1.5, 2.5}, {1, 5});
    std::printf("round([-2.5 -0.5 0.5 1.5 2.5]) (expect -3 -1 1 2 3):\n%s\n",
                tandem::round(v).gather().get().to_string().c_str());
    std::printf("mod([-2.5 -0.5 0.5 1.5 2.5], 2) (expect 1.5 1.5 0.5 1.5 0.5):\n%s\n",
                tandem::mod(v, 2).gather().get().to_string().c_str());

    // Implicit expansion: a 3x1 column plus a 1x4 row is a 3x4 table; comparisons are logical.
    tandem::Array col = rt.colon(1, 3) * 10;             // 1x3: 10 20 30
    tandem::Array table = rt.colon(1, 4) + rt.array(std::vector<double>{10, 20, 30});
    std::printf("(1:4) + [10;20;30] (rows 11..14, 21..24, 31..34):\n%s\n", table.gather().get().to_string().c_str());
    std::printf("(10:10:30) > 15 (expect 0 1 1):\n%s\n", (col > 15).gather().get().to_string().c_str());

    // Errors come back as exceptions that say what was wrong.
    try {
        auto bad = rt.zeros({3, 4}) + rt.zeros({2, 4});
    } catch (const tandem::ShapeError& e) {
        std::printf("a 3x4 plus a 2x4 is refused: %s\n", e.what());
    }

    auto m = rt.metrics();
    std::printf("\nregions run: %llu, ops in them: %llu\n", static_cast<unsigned long long>(m.regions_executed),
                static_cast<unsigned long long>(m.ops_executed));
    return 0;
}
