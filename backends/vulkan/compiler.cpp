// GLSL -> SPIR-V through glslang's C++ API. glslang's process-wide state (InitializeProcess) is
// set up once; each call then uses its own TShader/TProgram, which glslang allows concurrently.
#include "backends/vulkan/compiler.hpp"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <cstdlib>
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
    return spirv;
}

}  // namespace tandem::detail::vk
