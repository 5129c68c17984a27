#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "tandem/config.hpp"
#include "tandem/error.hpp"

namespace tandem {

namespace {

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

std::int64_t parse_int(const char* name, const char* text, std::int64_t lo, std::int64_t hi) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi)
        throw ConfigError(std::string(name) + "='" + text + "': expected a whole number from " + std::to_string(lo) +
                          " to " + std::to_string(hi));
    return v;
}

}  // namespace

Config Config::from_environment() {
    Config c;
    if (const char* v = env("TANDEM_CPU_THREADS")) c.cpu_threads = static_cast<int>(parse_int("TANDEM_CPU_THREADS", v, 0, 4096));
    if (const char* v = env("TANDEM_BLOCK_ELEMENTS"))
        c.block_elements = parse_int("TANDEM_BLOCK_ELEMENTS", v, 64, 1 << 20);
    if (const char* v = env("TANDEM_FUSION")) c.fusion = parse_int("TANDEM_FUSION", v, 0, 1) != 0;
    if (const char* v = env("TANDEM_HOST_POOL_MB"))
        c.host_pool_bytes = static_cast<std::size_t>(parse_int("TANDEM_HOST_POOL_MB", v, 0, std::int64_t{1} << 30)) << 20;
    if (const char* v = env("TANDEM_CPU_ISA")) {
        c.cpu_isa = v;
        if (c.cpu_isa != "auto" && c.cpu_isa != "avx512" && c.cpu_isa != "avx2" && c.cpu_isa != "baseline")
            throw ConfigError(std::string("TANDEM_CPU_ISA='") + v + "': expected auto, avx512, avx2 or baseline");
    }
    if (const char* v = env("TANDEM_LOG")) c.log = v;
    if (const char* v = env("TANDEM_TRACE")) c.trace_file = v;
    if (const char* v = env("TANDEM_REGION_RECORDS"))
        c.region_records = parse_int("TANDEM_REGION_RECORDS", v, 0, std::int64_t{1} << 24);
    if (const char* v = env("TANDEM_DEVICE")) c.device = v;
    if (const char* v = env("TANDEM_PLACEMENT")) c.placement = v;
    if (const char* v = env("TANDEM_SPLIT")) c.split = v;
    if (const char* v = env("TANDEM_PLAN_CACHE")) c.plan_cache = v;
    if (const char* v = env("TANDEM_CALIBRATION")) c.calibration_file = v;
    if (const char* v = env("TANDEM_PLACEMENT_LEARNING"))
        c.placement_learning = parse_int("TANDEM_PLACEMENT_LEARNING", v, 0, 1) != 0;
    if (const char* v = env("TANDEM_DEVICE_MIN_ELEMENTS"))
        c.device_min_elements = parse_int("TANDEM_DEVICE_MIN_ELEMENTS", v, 0, std::int64_t{1} << 62);
    if (const char* v = env("TANDEM_DEVICE_MEMORY_LIMIT")) c.device_memory_limit = v;
    if (const char* v = env("TANDEM_VULKAN_VALIDATION")) c.vulkan_validation = parse_int("TANDEM_VULKAN_VALIDATION", v, 0, 1) != 0;
    if (const char* v = env("TANDEM_PIPELINE_CACHE_DIR")) c.pipeline_cache_dir = v;
    if (const char* v = env("TANDEM_REDUCTION_WG")) {
        c.reduction_workgroup = static_cast<std::uint32_t>(parse_int("TANDEM_REDUCTION_WG", v, 32, 1024));
        if ((c.reduction_workgroup & (c.reduction_workgroup - 1)) != 0)
            throw ConfigError(std::string("TANDEM_REDUCTION_WG='") + v + "': expected a power of two from 32 to 1024");
    }
    if (const char* v = env("TANDEM_REDUCTION_THREADS"))
        c.reduction_threads = parse_int("TANDEM_REDUCTION_THREADS", v, 1, std::int64_t{1} << 40);
    if (const char* v = env("TANDEM_F32_SUBNORMALS")) c.f32_subnormals = v;
    if (const char* v = env("TANDEM_VULKAN_SUBGROUPS")) c.vulkan_subgroups = parse_int("TANDEM_VULKAN_SUBGROUPS", v, 0, 1) != 0;
    if (const char* v = env("TANDEM_START_DEPTH")) c.start_depth = parse_int("TANDEM_START_DEPTH", v, 0, 1 << 30);
    if (const char* v = env("TANDEM_VULKAN_LOOPS")) c.vulkan_loops = parse_int("TANDEM_VULKAN_LOOPS", v, 0, 1) != 0;
    if (const char* v = env("TANDEM_TIME_KERNELS")) c.time_kernels = parse_int("TANDEM_TIME_KERNELS", v, 0, 1) != 0;
    c.validate();
    return c;
}

std::uint64_t Config::device_memory_limit_bytes(std::uint64_t device_bytes) const {
    const std::string& t = device_memory_limit;
    if (t.empty() || t == "auto") return 0;
    auto bad = [&] {
        return ConfigError("device memory limit (TANDEM_DEVICE_MEMORY_LIMIT / Config::device_memory_limit) = '" + t +
                           "': expected auto, a size in bytes with an optional K, M, G or T suffix (\"512M\"), or a "
                           "share of the device's memory from 1% to 100% (\"50%\")");
    };
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (errno || end == t.c_str() || !(v > 0)) throw bad();
    std::string unit(end);
    if (unit == "%") {
        if (v < 1 || v > 100) throw bad();
        return static_cast<std::uint64_t>(static_cast<double>(device_bytes) * v / 100);
    }
    if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
    if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();  // "MiB"
    double scale = 1;
    if (unit.size() == 1) {
        const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
        const std::string units = "KMGT";
        const auto at = units.find(c);
        if (at == std::string::npos) throw bad();
        scale = std::ldexp(1.0, 10 * static_cast<int>(at + 1));
    } else if (!unit.empty()) {
        throw bad();
    }
    const double bytes = v * scale;
    if (bytes < 1 || bytes > 1e19) throw bad();
    return static_cast<std::uint64_t>(bytes);
}

void Config::validate() const {
    (void)device_memory_limit_bytes(1);
    if (region_records < 0 || region_records > (std::int64_t{1} << 24))
        throw ConfigError("Config::region_records = " + std::to_string(region_records) + ": expected 0 to 16777216");
    if (cpu_threads < 0 || cpu_threads > 4096)
        throw ConfigError("Config::cpu_threads = " + std::to_string(cpu_threads) + ": expected 0 (auto) to 4096");
    if (block_elements < 64 || block_elements > (1 << 20) || block_elements % 16 != 0)
        throw ConfigError("Config::block_elements = " + std::to_string(block_elements) +
                          ": expected a multiple of 16 from 64 to 1048576");
    if (cpu_isa != "auto" && cpu_isa != "avx512" && cpu_isa != "avx2" && cpu_isa != "baseline")
        throw ConfigError("Config::cpu_isa = '" + cpu_isa + "': expected auto, avx512, avx2 or baseline");
    // One device, or a comma-separated list of Vulkan devices (the same one twice: two queues).
    bool device_ok = device == "auto" || device == "all" || device == "cpu";
    if (!device_ok) {
        std::size_t count = 0, at = 0;
        device_ok = true;
        for (;;) {
            const std::size_t comma = device.find(',', at);
            const std::string part = device.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            // After the first, "1" is short for "vulkan:1" (vulkan:0,1).
            const bool shorthand = count > 0 && !part.empty() && part.rfind("vulkan", 0) != 0 && part != "auto" &&
                                   part != "all" && part != "cpu";
            device_ok = device_ok && (shorthand || part == "vulkan" || (part.rfind("vulkan:", 0) == 0 && part.size() > 7));
            ++count;
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        device_ok = device_ok && count <= 8;
    }
    if (!device_ok)
        throw ConfigError("device (TANDEM_DEVICE / Config::device) = '" + device +
                          "': expected auto (every GPU of the best kind), all (every GPU), cpu, vulkan, vulkan:<index>, "
                          "vulkan:<name substring>, or up to 8 of the vulkan ones separated by commas (vulkan:0,1)");
    if (start_depth < 0)
        throw ConfigError("start_depth (TANDEM_START_DEPTH / Config::start_depth) = " + std::to_string(start_depth) +
                          ": expected 0 (off) or a depth of at least 1");
    if (split != "auto" && split != "always" && split != "off")
        throw ConfigError("split (TANDEM_SPLIT / Config::split) = '" + split + "': expected auto, always or off");
    if (plan_cache != "on" && plan_cache != "off" && plan_cache != "verify")
        throw ConfigError("plan_cache (TANDEM_PLAN_CACHE / Config::plan_cache) = '" + plan_cache +
                          "': expected on, off or verify");
    if (placement != "auto" && placement != "cpu" && placement != "gpu")
        throw ConfigError("placement (TANDEM_PLACEMENT / Config::placement) = '" + placement +
                          "': expected auto, cpu or gpu");
    if (device_min_elements < 0)
        throw ConfigError("Config::device_min_elements = " + std::to_string(device_min_elements) + ": must be >= 0");
    if (reduction_workgroup != 0 &&
        (reduction_workgroup < 32 || reduction_workgroup > 1024 || (reduction_workgroup & (reduction_workgroup - 1)) != 0))
        throw ConfigError("Config::reduction_workgroup (TANDEM_REDUCTION_WG) = " + std::to_string(reduction_workgroup) +
                          ": expected 0 (the device's default) or a power of two from 32 to 1024");
    if (f32_subnormals != "exact" && f32_subnormals != "device")
        throw ConfigError("f32_subnormals (TANDEM_F32_SUBNORMALS / Config::f32_subnormals) = '" + f32_subnormals +
                          "': expected exact or device");
    if (reduction_threads < 0)
        throw ConfigError("Config::reduction_threads (TANDEM_REDUCTION_THREADS) = " + std::to_string(reduction_threads) +
                          ": expected 0 (the default) or a positive count");
    // "<fault>@<d>": only the device at position d of the list (0-7) has it.
    const std::size_t at_sign = test_fault.find('@');
    if (at_sign != std::string::npos &&
        (at_sign + 2 != test_fault.size() || test_fault[at_sign + 1] < '0' || test_fault[at_sign + 1] > '7'))
        throw ConfigError("Config::test_fault = '" + test_fault + "': expected <fault>@<device 0-7>");
    const std::string fault = test_fault.substr(0, at_sign);
    const bool lost_later = fault == "device_lost_later" ||
                            (fault.rfind("device_lost_later:", 0) == 0 && fault.size() > 18 && fault.size() < 24 &&
                             fault.find_first_not_of("0123456789", 18) == std::string::npos &&
                             std::stoi(fault.substr(18)) > 0);
    if (!fault.empty() && fault != "compile" && fault != "oom" && fault != "oom_later" &&
        fault != "device_lost" && !lost_later && fault != "device_lost_in_download" &&
        fault != "submit_failed" && fault != "slow_compile" && fault != "slow_plan")
        throw ConfigError("Config::test_fault = '" + test_fault +
                          "': expected compile, oom, oom_later, device_lost, device_lost_later[:N], device_lost_in_download, "
                          "submit_failed, slow_compile or slow_plan");
    std::string rest = log;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string topic = rest.substr(0, comma);
        if (topic != "graph" && topic != "exec" && topic != "gpu" && topic != "placement" && !topic.empty())
            throw ConfigError("log topic '" + topic +
                              "' (TANDEM_LOG / Config::log): expected graph, exec, gpu or placement");
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
}

}  // namespace tandem
