// Calibration: micro-benchmarks that measure the rates of the placement cost model on this
// machine (the CPU executor, the device, the link between them) and write them where every
// runtime started later reads them (`tandem calibrate` on the command line).
#pragma once

#include <functional>
#include <string>

#include "tandem/config.hpp"
#include "tandem/export.hpp"

namespace tandem {

struct CalibrateOptions {
    /// Fewer and smaller measurements (seconds, not minutes; the rates are rougher).
    bool quick = false;
    /// Where to write: "" = Config::calibration_file (TANDEM_CALIBRATION through
    /// Config::from_environment), else $XDG_CONFIG_HOME/tandem/calibration.json, else
    /// ~/.config/tandem/calibration.json.
    std::string output;
    /// Called after each measurement with the fraction done and what was measured.
    std::function<void(double, const std::string&)> progress;
};

struct CalibrationResult {
    std::string path;        ///< the file written
    std::string machine;     ///< what it is valid for
    std::string rates;       ///< the measured rates, a line each
    std::string crossovers;  ///< from which size the device wins, per kind of work, a line each
    double seconds = 0;      ///< how long it took
};

/// Measures this machine with `config`'s CPU settings and device, writes the calibration file
/// and returns what it found. Throws tandem::Error (a ConfigError for a file that cannot be
/// written).
TANDEM_API CalibrationResult calibrate(const Config& config, const CalibrateOptions& options = {});

}  // namespace tandem
