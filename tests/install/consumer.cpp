#include <cstdio>

#include <tandem/tandem.hpp>

int main() {
    tandem::Runtime rt;
    double v = (tandem::sqrt(rt.fill(9.0, {2, 2})) + 1.0).gather().get().at(3);
    std::printf("consumer: %g\n", v);
    return v == 4.0 ? 0 : 1;
}
