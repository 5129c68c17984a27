// The 2-D heat equation's explicit step as a user kernel, written once in GLSL (for the GPU)
// and once in C++ (for the CPU executor): u_new = u + r * (the 5-point Laplacian of u) inside,
// the boundary held at its values. Shared by examples/heat_stencil.cpp and bench/heat.cpp.
#pragma once

#include <cstdint>

#include <tandem/tandem.hpp>

namespace heat {

/// The kernel's description: the names its GLSL body gives the accessors and the scalar, its
/// body, and what an item costs (6 flops; one element read and one written, the neighbours from
/// cache).
inline const tandem::Kernel& step_kernel() {
    static const tandem::Kernel k = tandem::Kernel("heat_step")
                                        .accessors({"u", "un"})
                                        .scalars({"r"})
                                        .glsl(R"(
uint i = item.x, j = item.y;
if (i == 0u || j == 0u || i + 1u == range.x || j + 1u == range.y) {
    un(i, j) = u(i, j);  // the boundary keeps its values
    return;
}
un(i, j) = u(i, j) + r * (u(i - 1u, j) + u(i + 1u, j) + u(i, j - 1u) + u(i, j + 1u) - 4.0 * u(i, j));
)")
                                        .cost(6, 16);
    return k;
}

/// One step: `next` from `now` (next's old contents are not needed: no_init).
inline tandem::Event step(tandem::Queue& q, tandem::Buffer& now, tandem::Buffer& next, double r) {
    return q.submit([&](tandem::Handler& h) {
        auto u = h.require<double>(now, tandem::access::read);
        auto un = h.require<double>(next, tandem::access::write, tandem::no_init);
        h.scalars({r});
        const std::int64_t m = now.shape()[0], n = now.shape()[1];
        h.parallel_for(tandem::Range(m, n), step_kernel(), [=](tandem::Item it) {
            const std::int64_t i = it[0], j = it[1];
            if (i == 0 || j == 0 || i + 1 == m || j + 1 == n) {
                un(i, j) = u(i, j);
                return;
            }
            un(i, j) = u(i, j) + r * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * u(i, j));
        });
    });
}

/// The starting field, made with array ops: a Gaussian bump inside, and a boundary held at
/// sin(pi x) along the top edge and 0 elsewhere.
inline tandem::Array initial_field(tandem::Runtime& rt, std::int64_t n) {
    using namespace tandem;
    Array x = rt.linspace(0, 1, n);                     // 1 x n
    Array xc = reshape(x, Shape{n, 1});                 // n x 1
    Array bump = exp(-50.0 * (power(xc - 0.5, 2) + power(x - 0.5, 2)));  // n x n by broadcasting
    Array edge = sin(3.141592653589793 * x);            // 1 x n: the first row's profile
    Array first_row = eq(reshape(rt.colon(1, static_cast<double>(n)), Shape{n, 1}), 1.0);  // n x 1 mask
    return bump * (1.0 - first_row) + first_row * edge;
}

}  // namespace heat
