// GLSL -> SPIR-V in-process through glslang's C++ API (its first call builds symbol tables,
// ~45 ms; later small shaders take ~0.3 ms).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/error.hpp"

namespace tandem::detail::vk {

/// A shader that glslang rejects; what() holds glslang's log and the first lines of the source.
class ShaderCompileError : public DeviceError {
public:
    using DeviceError::DeviceError;
};

/// A line that makes every floating-point operation of a kernel round on its own (SPIR-V
/// NoContraction on each, as if all were `precise`): generated kernels carry it, so that they give
/// the bits of the CPU's translation of the same GLSL. Hand-written kernels (GEMM) leave it out.
inline constexpr const char* kExactArithmeticMarker = "#define TANDEM_EXACT_ARITHMETIC 1\n";

/// A line that makes a kernel keep fp32 subnormals (SPIR-V DenormPreserve 32, a Vulkan 1.2 float
/// control): only for a device whose shaderDenormPreserveFloat32 is true.
inline constexpr const char* kPreserveF32DenormalsMarker = "#define TANDEM_PRESERVE_F32_DENORMALS 1\n";

/// A line that makes a kernel keep signed zeros, infinities and NaN in 32- and 64-bit float
/// operations (SignedZeroInfNanPreserve): only for a device that supports it for both widths.
inline constexpr const char* kPreserveSignedZerosMarker = "#define TANDEM_PRESERVE_SIGNED_ZEROS 1\n";

/// Compiles a compute shader for Vulkan 1.2 / SPIR-V 1.5 (see kExactArithmeticMarker). Thread-safe.
std::vector<std::uint32_t> compile_compute_shader(const std::string& glsl);

}  // namespace tandem::detail::vk
