// `tandem`: the command-line tool. Exit codes: 0 success, 1 a Tandem error while running
// (e.g. a bad TANDEM_* variable), 2 a command line that does not parse.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/matlab_commands.hpp"
#include "tandem/calibration.hpp"
#include "tandem/config.hpp"
#include "tandem/error.hpp"
#include "tandem/runtime.hpp"

// TANDEM_VERSION is defined for the library only; --version must not need a Runtime.
#ifndef TANDEM_VERSION
#define TANDEM_VERSION "0.1.0"
#endif

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int run_info(bool json) {
    tandem::Runtime rt{tandem::Config::from_environment()};
    const tandem::RuntimeInfo info = rt.info();
    if (json) {
        std::cout << tandem::to_json(info) << '\n';
    } else {
        std::cout << tandem::to_text(info);  // already ends with a newline
    }
    return 0;
}

int run_calibrate(bool quick, const std::string& output) {
    tandem::CalibrateOptions o;
    o.quick = quick;
    o.output = output;
    o.progress = [](double done, const std::string& what) {
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(done * kWidth + 0.5);
        std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
                  << std::string(static_cast<std::size_t>(kWidth - filled), ' ') << "] " << static_cast<int>(done * 100 + 0.5)
                  << "% " << what << std::string(20, ' ') << std::flush;
    };
    tandem::CalibrationResult r;
    try {
        r = tandem::calibrate(tandem::Config::from_environment(), o);
    } catch (...) {
        std::cerr << '\n';  // end the progress line before the message
        throw;
    }
    std::cerr << '\n';
    std::cout << "Calibrated in " << static_cast<int>(r.seconds + 0.5) << " s for " << r.machine << "\n" << r.rates;
    if (!r.crossovers.empty()) std::cout << "Placement (auto) by the measured rates:\n" << r.crossovers;
    std::cout << "Written to " << r.path << " (every runtime on this machine reads it at start)\n";
    return 0;
}

/// CLI11 checks for the missing subcommand before it looks at leftover words, so `tandem bogus`
/// and `tandem --bogus` would both say "A subcommand is required"; name the word instead.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
    const std::vector<std::string> leftover = app.remaining();
    if (leftover.empty() || !app.get_subcommands().empty()) return e.what();
    if (leftover.front().rfind('-', 0) != 0) return "Unknown subcommand: " + leftover.front();
    return CLI::ExtrasError(leftover).what();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Tandem: lazy, fused array programs on the CPU and GPUs.", "tandem"};
    app.set_version_flag("--version", "tandem " TANDEM_VERSION, "Print the version and exit");
    app.require_subcommand(0, 1);  // none: the MATLAB prompt

    bool json = false;
    CLI::App* info = app.add_subcommand("info", "Show the runtime's settings, the CPU and the devices");
    info->add_flag("--json", json, "Print a JSON document instead of text");

    bool quick = false;
    std::string output;
    CLI::App* calibrate = app.add_subcommand(
        "calibrate", "Measure this machine for the placement cost model and save it (TANDEM_CALIBRATION or "
                     "$XDG_CONFIG_HOME/tandem/calibration.json)");
    calibrate->add_flag("--quick", quick, "Fewer, smaller measurements (seconds instead of a minute)");
    calibrate->add_option("--output", output, "Write the calibration to this file instead");

    std::string script;
    std::vector<std::string> script_args;
    CLI::App* run = app.add_subcommand("run", "Run a MATLAB script or function file (args go to a function file's function)");
    run->add_option("file", script, "The .m file")->required();
    run->add_option("args", script_args, "Arguments, as char arrays");
    std::string code;
    CLI::App* eval = app.add_subcommand("eval", "Run MATLAB code given on the command line");
    eval->add_option("code", code, "The code, e.g. 'x = 1:3; disp(sum(x))'")->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {  // --help, --help-all, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // CLI11's own exit codes vary by error kind; a usage error is always 2 here.
        std::cerr << "tandem: " << usage_message(app, e) << "\nRun 'tandem --help' for usage.\n";
        return kExitUsage;
    }

    try {
        if (info->parsed()) return run_info(json);
        if (calibrate->parsed()) return run_calibrate(quick, output);
        if (run->parsed()) return run_matlab_file(script, script_args);
        if (eval->parsed()) return run_matlab_eval(code);
        return run_matlab_prompt();
    } catch (const tandem::Error& e) {
        std::cerr << "tandem: " << e.what() << '\n';
        return kExitError;
    } catch (const std::exception& e) {
        std::cerr << "tandem: internal error: " << e.what() << '\n';
        return kExitError;
    }
    return 0;
}
