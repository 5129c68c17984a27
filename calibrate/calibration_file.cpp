#include "calibrate/calibration_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

using json = nlohmann::json;
constexpr const char* kFormat = "tandem calibration";
constexpr const char* kClassNames[kCostClasses] = {"none", "simple", "divide", "transcendental", "random"};

json profile_json(const ExecutorProfile& p) {
    json ops = json::object();
    for (std::size_t c = 1; c < kCostClasses; ++c) ops[kClassNames[c]] = {p.ops_per_s[c][0], p.ops_per_s[c][1]};
    return {{"name", p.name},
            {"launch_s", p.launch_s},
            {"bytes_per_s", p.bytes_per_s},
            {"ops_per_s", ops},
            {"flops_per_s", {p.flops_per_s[0], p.flops_per_s[1]}}};
}

/// A rate the model divides by: finite and positive.
double rate(const json& j, const std::string& where) {
    if (!j.is_number()) throw std::runtime_error(where + " is not a number");
    const double v = j.get<double>();
    if (!std::isfinite(v) || v <= 0) throw std::runtime_error(where + " = " + j.dump() + ": expected a positive rate");
    return v;
}

ExecutorProfile profile_from(const json& j, const std::string& where) {
    ExecutorProfile p;
    p.name = j.at("name").get<std::string>();
    p.launch_s = j.at("launch_s").get<double>();
    if (!std::isfinite(p.launch_s) || p.launch_s < 0) throw std::runtime_error(where + ".launch_s must be >= 0");
    p.bytes_per_s = rate(j.at("bytes_per_s"), where + ".bytes_per_s");
    for (std::size_t c = 1; c < kCostClasses; ++c) {
        const json& pair = j.at("ops_per_s").at(kClassNames[c]);
        for (std::size_t t = 0; t < 2; ++t)
            p.ops_per_s[c][t] = rate(pair.at(t), where + ".ops_per_s." + kClassNames[c]);
    }
    for (std::size_t t = 0; t < 2; ++t) p.flops_per_s[t] = rate(j.at("flops_per_s").at(t), where + ".flops_per_s");
    return p;
}

std::string iso_utc(std::int64_t unix_s) {
    const std::time_t t = static_cast<std::time_t>(unix_s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
}

std::string age_text(std::int64_t created_unix_s) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
    const std::int64_t s = std::max<std::int64_t>(0, now - created_unix_s);
    if (s < 3600) return std::to_string(s / 60) + " min old";
    if (s < 2 * 86400) return std::to_string(s / 3600) + " h old";
    return std::to_string(s / 86400) + " days old";
}

/// One message per process and path: runtimes are created often (tests create hundreds).
void report_once(const std::string& path, const std::string& message) {
    static std::mutex mutex;
    static std::set<std::string> said;
    std::lock_guard lock(mutex);
    if (said.insert(path).second) std::fprintf(stderr, "[tandem] %s\n", message.c_str());
}

}  // namespace

std::string MachineKey::to_string() const { return cpu + ", " + std::to_string(cpu_threads) + " threads"; }

MachineKey machine_key(const CpuTopology& topology, int cpu_threads) {
    return {topology.model.empty() ? "unknown CPU" : topology.model, cpu_threads};
}

std::string default_calibration_path() {
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/tandem/calibration.json";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/tandem/calibration.json";
    return "";
}

namespace {

json link_json(const LinkProfile& l) {
    return {{"upload_bytes_per_s", l.upload_bytes_per_s},
            {"download_bytes_per_s", l.download_bytes_per_s},
            {"latency_s", l.latency_s},
            {"sync_s", l.sync_s}};
}

LinkProfile link_from(const json& l, const std::string& where) {
    LinkProfile p;
    p.upload_bytes_per_s = rate(l.at("upload_bytes_per_s"), where + ".upload_bytes_per_s");
    p.download_bytes_per_s = rate(l.at("download_bytes_per_s"), where + ".download_bytes_per_s");
    p.latency_s = l.at("latency_s").get<double>();
    p.sync_s = l.at("sync_s").get<double>();
    if (!(p.latency_s >= 0) || !(p.sync_s >= 0)) throw std::runtime_error(where + ".latency_s and .sync_s must be >= 0");
    return p;
}

/// What runs taught the model since: observed / predicted time per region (or transfer) signature.
json history_json(const PerformanceHistory& h) {
    json out = json::array();
    for (const auto& e : h.entries()) {
        char sig[24];
        std::snprintf(sig, sizeof sig, "%016llx", static_cast<unsigned long long>(e.signature));
        out.push_back({{"signature", sig}, {"ratios", e.ratios}});
    }
    return out;
}

PerformanceHistory history_from(const json& h, const std::string& where) {
    PerformanceHistory out;
    if (h.is_null()) return out;
    for (const json& e : h) {
        PerformanceHistory::Entry entry;
        const std::string sig = e.at("signature").get<std::string>();
        std::size_t used = 0;
        entry.signature = std::stoull(sig, &used, 16);
        if (used != sig.size()) throw std::runtime_error(where + ": signature '" + sig + "' is not hexadecimal");
        entry.ratios = e.at("ratios").get<std::vector<double>>();
        for (double r : entry.ratios)
            if (!(r > 0) || !std::isfinite(r)) throw std::runtime_error(where + ": a ratio must be a positive number");
        out.add(entry);
    }
    return out;
}

}  // namespace

std::string to_json(const Calibration& c) {
    json devices = json::array();
    for (const DeviceProfile& d : c.profile.devices)
        devices.push_back({{"identity", d.identity},
                           {"rates", profile_json(d.rates)},
                           {"link", link_json(d.link)},
                           {"history", history_json(d.history)}});
    const json doc = {{"format", kFormat},
                      {"version", kCalibrationVersion},
                      {"created_unix_s", c.created_unix_s},
                      {"created", iso_utc(c.created_unix_s)},
                      {"machine", {{"cpu", c.machine.cpu}, {"cpu_threads", c.machine.cpu_threads}}},
                      {"cpu", profile_json(c.profile.cpu)},
                      {"cpu_history", history_json(c.profile.cpu_history)},
                      {"devices", std::move(devices)}};
    return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Calibration calibration_from_json(const std::string& text, const std::string& what) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        throw ConfigError("calibration file " + what + " is not valid JSON (" + e.what() + ")");
    }
    try {
        if (!doc.is_object() || doc.value("format", "") != kFormat)
            throw std::runtime_error("not a Tandem calibration (no \"format\": \"" + std::string(kFormat) + "\")");
        const int version = doc.at("version").get<int>();
        if (version != kCalibrationVersion)
            throw std::runtime_error("version " + std::to_string(version) + ", this Tandem reads version " +
                                     std::to_string(kCalibrationVersion) + " (run `tandem calibrate` again)");
        Calibration c;
        c.created_unix_s = doc.at("created_unix_s").get<std::int64_t>();
        const json& m = doc.at("machine");
        c.machine = {m.at("cpu").get<std::string>(), m.at("cpu_threads").get<int>()};
        c.profile.cpu = profile_from(doc.at("cpu"), "cpu");
        c.profile.cpu_history = history_from(doc.value("cpu_history", json()), "cpu_history");
        std::set<std::string> seen;
        const json& devices = doc.at("devices");
        if (!devices.is_array()) throw std::runtime_error("devices is not a list");
        for (std::size_t i = 0; i < devices.size(); ++i) {
            const json& d = devices[i];
            const std::string where = "devices[" + std::to_string(i) + "]";
            DeviceProfile p;
            p.identity = d.at("identity").get<std::string>();
            if (p.identity.empty() || !seen.insert(p.identity).second)
                throw std::runtime_error(where + ".identity is empty or repeated");
            p.rates = profile_from(d.at("rates"), where + ".rates");
            p.link = link_from(d.at("link"), where + ".link");
            p.history = history_from(d.value("history", json()), where + ".history");
            p.source = "calibrated";
            c.profile.devices.push_back(std::move(p));
        }
        return c;
    } catch (const ConfigError&) {
        throw;
    } catch (const std::exception& e) {
        throw ConfigError("calibration file " + what + ": " + e.what());
    }
}

namespace {
/// `path`'s directory, made if missing (a ConfigError naming the file if it cannot be).
void make_directory_of(const std::string& path) {
    const std::filesystem::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) throw ConfigError("calibration file " + path + ": cannot create its directory (" + ec.message() + ")");
}
}  // namespace

void write_calibration(const Calibration& c, const std::string& path) {
    namespace fs = std::filesystem;
    make_directory_of(path);
    const fs::path tmp = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << to_json(c);
        if (!out.flush()) throw ConfigError("calibration file " + path + ": cannot write " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw ConfigError("calibration file " + path + ": cannot replace it (" + ec.message() + ")");
    }
}

void check_writable(const std::string& path) {
    make_directory_of(path);
    const std::string probe = path + ".probe" + std::to_string(::getpid());
    {
        std::ofstream out(probe, std::ios::binary | std::ios::trunc);
        if (!out) throw ConfigError("calibration file " + path + ": cannot write in its directory");
    }
    std::error_code ec;
    std::filesystem::remove(probe, ec);
}

MachineProfile load_profile(const std::string& path, const MachineKey& machine, MachineProfile defaults) {
    const std::string no_file = "built-in defaults (no calibration: run `tandem calibrate`)";
    if (path.empty() || path == "none") {
        defaults.source = path == "none" ? "built-in defaults (TANDEM_CALIBRATION=none)" : no_file;
        return defaults;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        defaults.source = no_file;
        return defaults;
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
        Calibration c = calibration_from_json(text.str(), path);
        if (!(c.machine == machine))
            throw ConfigError("calibration file " + path + " was measured on another machine (" + c.machine.to_string() +
                              "; this is " + machine.to_string() + ")");
        MachineProfile p = std::move(defaults);
        p.cpu = c.profile.cpu;
        p.cpu_history = c.profile.cpu_history;
        for (DeviceProfile& d : p.devices) {
            auto it = std::find_if(c.profile.devices.begin(), c.profile.devices.end(),
                                   [&](const DeviceProfile& e) { return e.identity == d.identity; });
            if (it == c.profile.devices.end()) {
                d.source = "built-in defaults (not in the calibration: `tandem calibrate` with this device measures it)";
                continue;
            }
            d.rates = it->rates;
            d.link = it->link;
            d.history = it->history;
            d.source = "calibrated";
        }
        p.source = "calibration " + path + " (" + iso_utc(c.created_unix_s) + ", " + age_text(c.created_unix_s) + ")";
        if (p.history_size() > 0) p.source += ", refined by " + std::to_string(p.history_size()) + " kinds of run";
        p.file = path;
        return p;
    } catch (const ConfigError& e) {
        report_once(path, std::string(e.what()) + "; using the built-in defaults (`tandem calibrate` writes a new one)");
        defaults.source = "built-in defaults (the calibration file cannot be used: " + std::string(e.what()) + ")";
        return defaults;
    }
}

void save_history(const std::string& path, const MachineKey& machine, const MachineProfile& learned) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;  // removed meanwhile: nothing to refine
    std::stringstream text;
    text << in.rdbuf();
    in.close();
    try {
        Calibration c = calibration_from_json(text.str(), path);
        if (!(c.machine == machine)) return;  // replaced by another machine's meanwhile
        c.profile.cpu_history = learned.cpu_history;
        // A device opened twice (two logical devices) learned twice: the first one's is kept.
        for (DeviceProfile& e : c.profile.devices) {
            auto it = std::find_if(learned.devices.begin(), learned.devices.end(),
                                   [&](const DeviceProfile& d) { return d.identity == e.identity; });
            if (it != learned.devices.end()) e.history = it->history;
        }
        write_calibration(c, path);
    } catch (const ConfigError& e) {
        report_once(path + " (history)", std::string(e.what()) + "; what this run learned is not kept");
    }
}

}  // namespace tandem::detail
