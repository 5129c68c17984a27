// Block kernels of the CPU executor: tight loops over n elements of one block, compiled once per
// instruction set (kernels_<isa>.cpp) and picked at run time from the CPU's features.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/op_table.hpp"

namespace tandem::detail::cpu {

/// Scalar-operand pattern of a binary/ternary kernel call: bit k set = operand k is one value
/// (pointer to a single element) rather than n elements.
using UnaryFn = void (*)(std::size_t n, const void* a, void* out);
using BinaryFn = void (*)(std::size_t n, const void* a, const void* b, unsigned scalars, void* out);
using WhereFn = void (*)(std::size_t n, const void* c, const void* a, const void* b, unsigned scalars, void* out);
using AnyNanFn = bool (*)(std::size_t n, const void* a);
/// Element conversion; index [from][to] with 0 = f64, 1 = f32, 2 = logical (uint8). To logical
/// means "nonzero".
using ConvertFn = void (*)(std::size_t n, const void* in, void* out);
/// Elements first .. first + n - 1 of a random stream (backends/cpu/philox.hpp's fill_*).
using RandomFn = void (*)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n, void* out);

struct KernelTable {
    const char* isa;
    UnaryFn unary[kOpCount][2];    ///< [op][0 = f64, 1 = f32]; null where the op is not unary
    BinaryFn binary[kOpCount][2];
    WhereFn where[2];
    AnyNanFn any_nan[2];
    ConvertFn convert[3][3];
    /// Copies with non-temporal stores ([0 = f64, 1 = f32]): for outputs far larger than the
    /// caches, writing around them saves the read of each line that an ordinary store costs.
    ConvertFn stream_copy[2];
    /// rand and randn ([0 = f64, 1 = f32]), compiled for this ISA (randn f32 vectorises).
    RandomFn rand[2], randn[2];
};

const KernelTable* kernels_baseline();
const KernelTable* kernels_avx2();    ///< null when the CPU lacks AVX2+FMA
const KernelTable* kernels_avx512();  ///< null when the CPU lacks AVX-512 F/DQ/VL/BW

/// The best table for this CPU, capped at `limit` ("auto", "baseline", "avx2", "avx512"):
/// Config::cpu_isa, so that tests and users can run a lesser instruction set.
const KernelTable& select_kernels(std::string_view limit);

}  // namespace tandem::detail::cpu
