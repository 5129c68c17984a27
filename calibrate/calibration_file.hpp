// The calibration file: the cost model's rates measured on this machine by `tandem calibrate`,
// as versioned JSON keyed by the machine (the CPU model and the executor's threads), with one entry
// per device measured, keyed by the device's identity (name, driver and pipeline-cache UUID). The
// runtime loads it at start: the CPU's rates when the CPU key matches, each open device's rates from
// the entry of its identity (a device without one keeps the built-in defaults). A file that is
// missing, corrupt, of another version or of another CPU is reported (once per process and path)
// and the built-in defaults are used instead, until `tandem calibrate` writes a good one.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "scheduler/cost_model.hpp"
#include "tandem/runtime.hpp"

namespace tandem::detail {

/// 2: one entry per device (version 1 had one device and one history).
inline constexpr int kCalibrationVersion = 2;

/// What a calibration's CPU rates are valid for; its devices' entries carry their own identities.
struct MachineKey {
    std::string cpu;        ///< CPU model
    int cpu_threads = 0;    ///< the CPU executor's threads
    friend bool operator==(const MachineKey&, const MachineKey&) = default;
    std::string to_string() const;
};

/// This machine's key: the CPU's model (hwloc's) and the executor's threads.
MachineKey machine_key(const CpuTopology& topology, int cpu_threads);

struct Calibration {
    MachineKey machine;
    /// The CPU's rates and history, and one entry per device measured (identity set; no two
    /// alike). source and file are not stored.
    MachineProfile profile;
    std::int64_t created_unix_s = 0;
};

/// Where a calibration lives when Config::calibration_file (TANDEM_CALIBRATION) names none:
/// $XDG_CONFIG_HOME/tandem/calibration.json, else
/// ~/.config/tandem/calibration.json ("" when none of them can be formed).
std::string default_calibration_path();

std::string to_json(const Calibration& c);
/// Throws ConfigError naming `what` (the file) and the problem.
Calibration calibration_from_json(const std::string& text, const std::string& what);

/// Writes atomically (a temporary file renamed over it), creating the directory.
void write_calibration(const Calibration& c, const std::string& path);
/// Throws the ConfigError write_calibration would, before any measuring: the directory cannot be
/// made or a file cannot be written there.
void check_writable(const std::string& path);

/// The profile for `machine`: from the file at `path` when it is good and for this CPU, with its
/// source and age in profile.source; each of `defaults.devices` (identities set) takes the file's
/// entry of its identity, or keeps its defaults (its source says why). Else `defaults`, with the
/// reason in profile.source (and, for a file that exists but cannot be used, one message on stderr).
MachineProfile load_profile(const std::string& path, const MachineKey& machine, MachineProfile defaults);

/// Replaces the histories in the calibration file at `path` (when it is still a good one for
/// `machine`) with `learned`'s: the CPU's, and each device entry's from the device of its identity.
/// What a runtime learned, for the next one. A failure is reported once on stderr, never thrown (it
/// runs as a runtime goes away).
void save_history(const std::string& path, const MachineKey& machine, const MachineProfile& learned);

}  // namespace tandem::detail
