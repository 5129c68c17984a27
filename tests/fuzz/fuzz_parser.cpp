// libFuzzer target for the MATLAB lexer and parser: any input either parses or throws
// SyntaxError; anything else (a crash, another exception, a sanitizer report) is a bug.
// Built and run by scripts/test with clang (-fsanitize=fuzzer,address,undefined) for a bounded time.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "matlab/parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    try {
        const tandem::matlab::Program p = tandem::matlab::parse(source, "fuzz.m");
        (void)p;
    } catch (const tandem::matlab::SyntaxError& e) {
        if (e.line() < 1 || e.column() < 1) std::abort();  // every error names a place
    }
    return 0;
}
