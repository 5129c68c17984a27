#include "cli/matlab_commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>

#include <readline/history.h>
#include <readline/readline.h>

#include "matlab/interpreter.hpp"
#include "matlab/parser.hpp"
#include "tandem/config.hpp"
#include "tandem/runtime.hpp"

namespace {

/// Runs `body` with the interpreter, reporting MATLAB's way: 0, or 1 after an error.
template <class F>
int guarded(tandem::matlab::Interpreter& in, F&& body) {
    try {
        body();
        std::cout.flush();
        return 0;
    } catch (const tandem::matlab::SyntaxError& e) {
        std::cout.flush();
        std::cerr << e.report_syntax();
    } catch (const tandem::matlab::MatlabError& e) {
        std::cout.flush();
        std::cerr << e.report();
    }
    (void)in;
    return 1;
}

/// A run whose device work drew messages from the Vulkan validation layer (TANDEM_VULKAN_VALIDATION=1)
/// fails: the tests run the conformance suite that way.
int checked(tandem::Runtime& rt, int status) {
    rt.wait_idle();
    const auto messages = rt.metrics().validation_messages;
    if (messages == 0) return status;
    std::cerr << "tandem: the Vulkan validation layer reported " << messages << " problem(s) (see above)\n";
    return 1;
}

}  // namespace

int run_matlab_file(const std::string& path, const std::vector<std::string>& args) {
    if (!std::filesystem::is_regular_file(path)) {
        std::cerr << "tandem run: no file '" << path << "'\n";
        return 2;
    }
    tandem::Runtime rt{tandem::Config::from_environment()};
    tandem::matlab::Interpreter in(rt, std::cout);
    return checked(rt, guarded(in, [&] { in.run_file(path, args); }));
}

int run_matlab_eval(const std::string& code) {
    tandem::Runtime rt{tandem::Config::from_environment()};
    tandem::matlab::Interpreter in(rt, std::cout);
    return checked(rt, guarded(in, [&] { in.run_code(code); }));
}

int run_matlab_prompt() {
    tandem::Runtime rt{tandem::Config::from_environment()};
    tandem::matlab::Interpreter in(rt, std::cout);
    if (!isatty(STDIN_FILENO)) {
        const std::string code((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        return checked(rt, guarded(in, [&] { in.run_code(code); }));
    }
    const char* home = std::getenv("HOME");
    const std::string history = home ? std::string(home) + "/.tandem_history" : "";
    if (!history.empty()) read_history(history.c_str());
    std::cout << "Tandem " << rt.info().version << " (MATLAB language; exit or quit to leave)\n";
    std::string pending;  // lines of a statement that continues (an open block or '...')
    for (;;) {
        char* raw = readline(pending.empty() ? ">> " : "   ");
        if (!raw) break;  // end of input
        const std::string line(raw);
        std::free(raw);
        if (pending.empty() && (line == "exit" || line == "quit")) break;
        if (!line.empty()) add_history(line.c_str());
        pending += line + "\n";
        // An incomplete block (`for k = 1:3` without its `end`) waits for more lines.
        try {
            (void)tandem::matlab::parse(pending, "");
        } catch (const tandem::matlab::SyntaxError& e) {
            const std::string what = e.message();
            if (what.find("is not closed") != std::string::npos) continue;
        }
        const std::string code = pending;
        pending.clear();
        guarded(in, [&] { in.run_code(code); });
    }
    if (!history.empty()) write_history(history.c_str());
    return 0;
}
