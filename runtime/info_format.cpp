// RuntimeInfo for people (`tandem info`) and for programs (`tandem info --json`).
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tandem/runtime.hpp"

namespace tandem {
namespace {

constexpr int kLabelWidth = 15;

std::string plural(std::int64_t n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

/// 32 KiB, 1 MiB, 23.5 GiB: whole numbers stay whole, others get one decimal.
std::string format_bytes(std::uint64_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    std::size_t unit = 0;
    std::uint64_t scale = 1;
    while (unit + 1 < std::size(units) && bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    std::ostringstream out;
    if (bytes % scale == 0) {
        out << bytes / scale;
    } else {
        out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / static_cast<double>(scale);
    }
    out << ' ' << units[unit];
    return out.str();
}

void line(std::ostringstream& out, std::string_view label, const std::string& text) {
    out << std::left << std::setw(kLabelWidth) << label << text << '\n';
}

std::string cpu_text(const CpuTopology& t) {
    std::string text = t.model.empty() ? "unknown model" : t.model;
    text += ": " + plural(t.packages, "package", "packages");
    text += ", " + plural(t.cores, "core", "cores") + " (" + std::to_string(t.allowed_cores) + " allowed)";
    text += ", " + plural(t.pus, "hardware thread", "hardware threads") + " (" + std::to_string(t.allowed_pus) +
            " allowed)";
    text += ", " + plural(t.numa_nodes, "NUMA node", "NUMA nodes");
    return text;
}

std::string caches_text(const CpuTopology& t) {
    std::string text;
    auto add = [&text](std::string_view name, std::uint64_t bytes) {
        if (bytes == 0) return;
        if (!text.empty()) text += ", ";
        text += std::string(name) + " " + format_bytes(bytes);
    };
    add("L1d", t.l1d_bytes);
    add("L2", t.l2_bytes);
    add("L3", t.l3_bytes);
    return text.empty() ? "unknown" : text;
}

}  // namespace

std::string to_text(const RuntimeInfo& info) {
    std::ostringstream out;
    out << "Tandem " << info.version;
    if (!info.build.empty()) out << " (" << info.build << ")";
    out << '\n';

    std::string executor = plural(info.cpu_threads, "thread", "threads");
    executor += ", block " + std::to_string(info.block_elements) + " elements";
    executor += info.fusion ? ", fusion on" : ", fusion off";
    if (!info.cpu_isa.empty()) executor += ", kernels " + info.cpu_isa;
    line(out, "CPU executor", executor);

    line(out, "CPU", cpu_text(info.topology));
    line(out, "Caches", caches_text(info.topology));
    line(out, "Memory", info.topology.memory_bytes > 0 ? format_bytes(info.topology.memory_bytes) : "unknown");

    if (info.devices.empty()) {
        line(out, "Devices", info.devices_note.empty() ? "none" : "none: " + info.devices_note);
    } else {
        for (std::size_t i = 0; i < info.devices.size(); ++i) line(out, i == 0 ? "Devices" : "", info.devices[i]);
        if (!info.devices_note.empty()) line(out, "", "in use: none: " + info.devices_note);
    }
    if (!info.pipeline_cache.empty()) line(out, "Pipelines", info.pipeline_cache);
    if (!info.placement.empty()) line(out, "Placement", info.placement);
    return out.str();
}

std::string to_json(const RuntimeInfo& info) {
    const CpuTopology& t = info.topology;
    const nlohmann::ordered_json doc = {  // ordered: keys in the order a reader expects
        {"version", info.version},
        {"build", info.build},
        {"cpu_isa", info.cpu_isa},
        {"cpu_threads", info.cpu_threads},
        {"block_elements", info.block_elements},
        {"fusion", info.fusion},
        {"topology",
         {
             {"model", t.model},
             {"packages", t.packages},
             {"numa_nodes", t.numa_nodes},
             {"cores", t.cores},
             {"pus", t.pus},
             {"allowed_cores", t.allowed_cores},
             {"allowed_pus", t.allowed_pus},
             {"l1d_bytes", t.l1d_bytes},
             {"l2_bytes", t.l2_bytes},
             {"l3_bytes", t.l3_bytes},
             {"memory_bytes", t.memory_bytes},
         }},
        {"devices", info.devices},
        {"devices_note", info.devices_note},
        {"pipeline_cache", info.pipeline_cache},
        {"placement", info.placement},
    };
    // A CPU model string from firmware is not guaranteed to be UTF-8; replace, never throw.
    return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace tandem
