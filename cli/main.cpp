// `tandem`: the command-line tool. Exit codes: 0 success, 1 a Tandem error while running
// (e.g. a bad TANDEM_* variable), 2 a command line that does not parse.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

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
    app.require_subcommand(1);

    bool json = false;
    CLI::App* info = app.add_subcommand("info", "Show the runtime's settings, the CPU and the devices");
    info->add_flag("--json", json, "Print a JSON document instead of text");

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
    } catch (const tandem::Error& e) {
        std::cerr << "tandem: " << e.what() << '\n';
        return kExitError;
    } catch (const std::exception& e) {
        std::cerr << "tandem: internal error: " << e.what() << '\n';
        return kExitError;
    }
    return 0;
}
