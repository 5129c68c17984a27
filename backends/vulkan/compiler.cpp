// GLSL -> SPIR-V through glslang's C++ API. glslang's process-wide state (InitializeProcess) is
// set up once; each call then uses its own TShader/TProgram, which glslang allows concurrently.
#include "backends/vulkan/compiler.hpp"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

namespace tandem::detail::vk {

namespace {

void initialize_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        glslang::InitializeProcess();
        // Left initialised for the life of the process: FinalizeProcess at exit would race with
        // compiles still running on other threads during static destruction.
    });
}

/// glslang's log with the source lines it names ("ERROR: 0:123: ..."), each shown with its
/// number, and the first lines of the source when the log names none.
std::string describe(const std::string& stage, const std::string& log, const std::string& glsl) {
    std::vector<std::string> lines;
    {
        std::istringstream in(glsl);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
    }
    std::set<std::size_t> named;
    static const std::regex where(R"((?:ERROR|WARNING): [0-9]+:([0-9]+):)");
    for (std::sregex_iterator it(log.begin(), log.end(), where), end; it != end; ++it) {
        const auto n = static_cast<std::size_t>(std::strtoul((*it)[1].str().c_str(), nullptr, 10));
        if (n >= 1 && n <= lines.size()) named.insert(n);
    }
    std::ostringstream m;
    m << "GLSL compile failed (" << stage << "):\n" << log;
    if (!named.empty()) {
        m << "offending source lines:\n";
        for (std::size_t n : named) m << "  " << n << ": " << lines[n - 1] << '\n';
    } else {
        m << "source (first lines):\n";
        for (std::size_t n = 0; n < lines.size() && n < 20; ++n) m << "  " << n + 1 << ": " << lines[n] << '\n';
    }
    return m.str();
}

// Decorates every floating-point add, subtract, multiply, divide and negate NoContraction, as if
// each were `precise`: the driver may then neither fuse a*b+c into an fma nor reorder, so the
// kernel rounds each operation as the CPU's translation of the same source does. Decorations go
// after the module's last existing annotation (generated kernels always have some: bindings,
// the `precise` temporaries), where SPIR-V's layout rules put them.
void forbid_contraction(std::vector<std::uint32_t>& spirv) {
    constexpr std::uint32_t kOpDecorate = 71, kOpFunction = 54, kNoContraction = 42;
    auto is_annotation = [](std::uint32_t op) { return (op >= 71 && op <= 75) || op == 332 || op == 5632 || op == 5633; };
    auto is_float_arith = [](std::uint32_t op) {
        return op == 127 /*FNegate*/ || op == 129 /*FAdd*/ || op == 131 /*FSub*/ || op == 133 /*FMul*/ ||
               op == 136 /*FDiv*/ || op == 142 /*VectorTimesScalar*/;
    };
    std::size_t insert_at = 0;
    std::vector<bool> decorated;
    std::vector<std::uint32_t> targets;
    bool in_functions = false;
    for (std::size_t i = 5; i < spirv.size();) {
        const std::uint32_t words = spirv[i] >> 16, op = spirv[i] & 0xFFFFu;
        if (words == 0 || i + words > spirv.size()) throw ShaderCompileError("malformed SPIR-V from glslang");
        if (op == kOpFunction) in_functions = true;
        if (!in_functions && is_annotation(op)) insert_at = i + words;
        if (op == kOpDecorate && words >= 3 && spirv[i + 2] == kNoContraction) {
            if (decorated.size() <= spirv[i + 1]) decorated.resize(spirv[i + 1] + 1, false);
            decorated[spirv[i + 1]] = true;
        }
        if (in_functions && is_float_arith(op) && words >= 3) targets.push_back(spirv[i + 2]);
        i += words;
    }
    if (insert_at == 0) throw ShaderCompileError("SPIR-V without annotations: cannot forbid contraction");
    std::vector<std::uint32_t> added;
    for (std::uint32_t id : targets) {
        if (id < decorated.size() && decorated[id]) continue;
        added.insert(added.end(), {(3u << 16) | kOpDecorate, id, kNoContraction});
    }
    spirv.insert(spirv.begin() + static_cast<std::ptrdiff_t>(insert_at), added.begin(), added.end());
}

// Adds a float-controls capability and its execution mode for the given widths to the entry point
// (core in SPIR-V 1.4+), after the module's existing capabilities and execution modes.
void add_float_control(std::vector<std::uint32_t>& spirv, std::uint32_t capability, std::uint32_t mode_id,
                       std::initializer_list<std::uint32_t> widths) {
    constexpr std::uint32_t kOpCapability = 17, kOpEntryPoint = 15, kOpExecutionMode = 16;
    std::size_t after_caps = 0, after_modes = 0;
    std::uint32_t entry = 0;
    for (std::size_t i = 5; i < spirv.size();) {
        const std::uint32_t words = spirv[i] >> 16, op = spirv[i] & 0xFFFFu;
        if (words == 0 || i + words > spirv.size()) throw ShaderCompileError("malformed SPIR-V from glslang");
        if (op == kOpCapability) after_caps = i + words;
        if (op == kOpEntryPoint) { entry = spirv[i + 2]; after_modes = i + words; }
        if (op == kOpExecutionMode) after_modes = i + words;
        i += words;
    }
    if (after_caps == 0 || entry == 0) throw ShaderCompileError("SPIR-V without capabilities or entry point");
    // The later position first, so that the earlier one stays valid.
    std::vector<std::uint32_t> modes;
    for (std::uint32_t w : widths) modes.insert(modes.end(), {(4u << 16) | kOpExecutionMode, entry, mode_id, w});
    spirv.insert(spirv.begin() + static_cast<std::ptrdiff_t>(after_modes), modes.begin(), modes.end());
    const std::uint32_t cap[] = {(2u << 16) | kOpCapability, capability};
    spirv.insert(spirv.begin() + static_cast<std::ptrdiff_t>(after_caps), std::begin(cap), std::end(cap));
}

}  // namespace

std::vector<std::uint32_t> compile_compute_shader(const std::string& glsl) {
    initialize_once();
    glslang::TShader shader(EShLangCompute);
    const char* text = glsl.c_str();
    const int length = static_cast<int>(glsl.size());
    shader.setStringsWithLengths(&text, &length, 1);
    shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
    shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
    shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
    shader.setEntryPoint("main");
    const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
    if (!shader.parse(GetDefaultResources(), 450, false, messages))
        throw ShaderCompileError(describe("parse", shader.getInfoLog(), glsl));

    glslang::TProgram program;
    program.addShader(&shader);
    if (!program.link(messages)) throw ShaderCompileError(describe("link", program.getInfoLog(), glsl));

    std::vector<std::uint32_t> spirv;
    spv::SpvBuildLogger logger;
    glslang::SpvOptions options;
    options.generateDebugInfo = false;
    options.disableOptimizer = true;  // the driver optimises; glslang's optimiser needs SPIRV-Tools
    options.validate = false;
    glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
    if (spirv.empty()) throw ShaderCompileError(describe("SPIR-V generation", logger.getAllMessages(), glsl));
    if (glsl.find(kExactArithmeticMarker) != std::string::npos) forbid_contraction(spirv);
    // DenormPreserve (capability 4464, mode 4459); SignedZeroInfNanPreserve (4466, 4461).
    if (glsl.find(kPreserveF32DenormalsMarker) != std::string::npos) add_float_control(spirv, 4464, 4459, {32});
    if (glsl.find(kPreserveSignedZerosMarker) != std::string::npos) add_float_control(spirv, 4466, 4461, {32, 64});
    return spirv;
}

}  // namespace tandem::detail::vk
