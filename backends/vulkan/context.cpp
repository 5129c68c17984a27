#include "backends/vulkan/context.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

namespace tandem::detail::vk {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr std::size_t kKeptTexts = 32;
constexpr VkBufferUsageFlags kHeapUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                          VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                          VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;

std::string version_string(std::uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

/// Loads libvulkan once per process; returns the instance version the loader offers (>= 1.2).
std::uint32_t load_vulkan() {
    static const VkResult loaded = volkInitialize();
    if (loaded != VK_SUCCESS) throw DeviceError("no Vulkan loader (libvulkan.so.1) found");
    const std::uint32_t version = volkGetInstanceVersion();
    if (version < VK_API_VERSION_1_2)
        throw DeviceError("the Vulkan loader offers version " + version_string(version) + "; Tandem needs 1.2");
    return version;
}

/// volk's global entry points, loaded once from the first instance. The loader hands out its
/// trampolines (which dispatch on the handle), so they serve every later instance and device
/// too; reloading per Context would race with threads already calling them. Extension entry
/// points that the loader enables per instance (debug utils) are fetched per instance instead.
void load_entry_points(VkInstance instance) {
    static std::once_flag once;
    std::call_once(once, [instance] { volkLoadInstance(instance); });
}

struct InstanceDeleter {
    void operator()(VkInstance instance) const noexcept {
        if (instance != VK_NULL_HANDLE && vkDestroyInstance != nullptr) vkDestroyInstance(instance, nullptr);
    }
};
using InstanceOwner = std::unique_ptr<std::remove_pointer_t<VkInstance>, InstanceDeleter>;

std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
    std::uint32_t n = 0;
    check(vkEnumerateInstanceExtensionProperties(layer, &n, nullptr), "vkEnumerateInstanceExtensionProperties");
    std::vector<VkExtensionProperties> out(n);
    check(vkEnumerateInstanceExtensionProperties(layer, &n, out.data()), "vkEnumerateInstanceExtensionProperties",
          {VK_INCOMPLETE});
    out.resize(n);
    return out;
}

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
    return std::any_of(list.begin(), list.end(),
                       [name](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

bool has_layer(const char* name) {
    std::uint32_t n = 0;
    check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties");
    std::vector<VkLayerProperties> layers(n);
    check(vkEnumerateInstanceLayerProperties(&n, layers.data()), "vkEnumerateInstanceLayerProperties",
          {VK_INCOMPLETE});
    layers.resize(n);
    return std::any_of(layers.begin(), layers.end(),
                       [name](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

/// Creates an instance; with `messenger` (validation on), the layer with synchronization
/// validation, and the messenger chained so vkCreateInstance/vkDestroyInstance report too.
InstanceOwner make_instance(std::uint32_t api, const VkDebugUtilsMessengerCreateInfoEXT* messenger) {
    std::vector<const char*> extensions, layers;
    const auto available = instance_extensions(nullptr);
    VkInstanceCreateFlags flags = 0;
    // Lists portability (MoltenVK) devices too; harmless elsewhere.
    if (has_extension(available, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{};
    features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    const void* next = nullptr;
    if (messenger != nullptr) {
        if (!has_layer(kValidationLayer))
            throw DeviceError("validation requested but VK_LAYER_KHRONOS_validation is not installed");
        const auto from_layer = instance_extensions(kValidationLayer);
        for (const char* ext : {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME}) {
            if (!has_extension(available, ext) && !has_extension(from_layer, ext))
                throw DeviceError(std::string("validation requested but ") + ext + " is not available");
            extensions.push_back(ext);
        }
        layers.push_back(kValidationLayer);
        features.pNext = messenger;
        next = &features;
    }
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "tandem";
    app.pEngineName = "tandem";
    app.apiVersion = api;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pNext = next;
    info.flags = flags;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VkInstance instance = VK_NULL_HANDLE;
    const VkResult r = vkCreateInstance(&info, nullptr, &instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)  // what the loader says when no driver is installed
        throw DeviceError("no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
    check(r, "vkCreateInstance");
    load_entry_points(instance);
    return InstanceOwner(instance);
}

std::string vendor_name(std::uint32_t id) {
    const char* name = "unknown";
    switch (id) {
        case 0x10de: name = "NVIDIA"; break;
        case 0x1002: name = "AMD"; break;
        case 0x8086: name = "Intel"; break;
        case 0x10005: name = "Mesa"; break;
        case 0x13b5: name = "ARM"; break;
        case 0x5143: name = "Qualcomm"; break;
        case 0x106b: name = "Apple"; break;
        default: break;
    }
    char hex[16];
    auto [end, ec] = std::to_chars(hex, hex + sizeof hex, id, 16);
    (void)ec;
    return std::string(name) + " (0x" + std::string(hex, end) + ")";
}

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
    }
}

std::vector<VkQueueFamilyProperties> queue_families(VkPhysicalDevice physical) {
    std::uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> out(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, out.data());
    out.resize(n);
    return out;
}

/// The compute family: the first with compute and timestamps, else the first with compute.
std::optional<std::uint32_t> pick_compute_family(const std::vector<VkQueueFamilyProperties>& families) {
    std::optional<std::uint32_t> any;
    for (std::uint32_t i = 0; i < families.size(); ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
        if (families[i].timestampValidBits > 0) return i;
        if (!any) any = i;
    }
    return any;
}

/// A transfer-only family (its own DMA engine), if the device has one.
std::optional<std::uint32_t> pick_transfer_family(const std::vector<VkQueueFamilyProperties>& families) {
    for (std::uint32_t i = 0; i < families.size(); ++i) {
        const VkQueueFlags f = families[i].queueFlags;
        if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) &&
            families[i].queueCount > 0)
            return i;
    }
    return std::nullopt;
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice physical) {
    std::uint32_t n = 0;
    check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
    std::vector<VkExtensionProperties> out(n);
    check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, out.data()), "vkEnumerateDeviceExtensionProperties",
          {VK_INCOMPLETE});
    out.resize(n);
    return out;
}

const char* component_name(VkComponentTypeNV t) {
    switch (t) {
        case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
        case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
        case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
        case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
        case VK_COMPONENT_TYPE_SINT16_NV: return "s16";
        case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
        case VK_COMPONENT_TYPE_SINT64_NV: return "s64";
        case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
        case VK_COMPONENT_TYPE_UINT16_NV: return "u16";
        case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
        case VK_COMPONENT_TYPE_UINT64_NV: return "u64";
        default: return "other";
    }
}

/// VK_NV_cooperative_matrix: the shapes the driver lists and the f16 one the tensor-core GEMM
/// takes (DeviceDescription::coopmat_f16), when the extension, its feature, shaderFloat16, the
/// Vulkan memory model (GL_NV_cooperative_matrix's SPIR-V needs it) and 32-wide subgroups are all there.
void describe_cooperative_matrix(VkPhysicalDevice physical, DeviceDescription& d) {
    if (!has_extension(device_extensions(physical), VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return;
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV == nullptr) {
        d.coopmat_note = "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV not loaded";
        return;
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    VkPhysicalDeviceFeatures2 f2{};
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &features;
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    VkPhysicalDeviceCooperativeMatrixPropertiesNV props{};
    props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &props;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    std::uint32_t n = 0;
    check(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(physical, &n, nullptr),
          "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    std::vector<VkCooperativeMatrixPropertiesNV> shapes(n);
    for (auto& s : shapes) s.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    check(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(physical, &n, shapes.data()),
          "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", {VK_INCOMPLETE});
    shapes.resize(n);
    DeviceDescription::CoopmatShape best;
    auto rank = [](const DeviceDescription::CoopmatShape& s) {
        return s.m == 16 && s.n == 16 && s.k == 16 ? 3 : s.m == 16 && s.n == 8 && s.k == 16 ? 2 : s.m == 16 && s.n == 8 && s.k == 8 ? 1 : 0;
    };
    for (const auto& s : shapes) {
        if (s.scope != VK_SCOPE_SUBGROUP_NV) continue;
        d.cooperative_matrix_shapes.push_back(std::to_string(s.MSize) + "x" + std::to_string(s.NSize) + "x" +
                                              std::to_string(s.KSize) + " " + component_name(s.AType) + "*" +
                                              component_name(s.BType) + "+" + component_name(s.CType) + "=" +
                                              component_name(s.DType));
        const DeviceDescription::CoopmatShape c{s.MSize, s.NSize, s.KSize};
        if (s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV && rank(c) > rank(best))
            best = c;
    }
    if (!features.cooperativeMatrix) d.coopmat_note = "cooperativeMatrix feature off";
    else if (!(props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) d.coopmat_note = "not in compute shaders";
    else if (best.m == 0) d.coopmat_note = "no 16x16x16, 16x8x16 or 16x8x8 f16*f16+f32=f32 shape";
    else if (!d.shader_float16) d.coopmat_note = "no shaderFloat16";
    else if (!d.vulkan_memory_model || !d.vulkan_memory_model_device_scope)
        d.coopmat_note = "no vulkanMemoryModel with Device scope";
    else if (d.subgroup_size != 32) d.coopmat_note = "subgroups of " + std::to_string(d.subgroup_size) + " (the kernel assumes 32)";
    else d.coopmat_f16 = best;
}

DeviceDescription describe(VkPhysicalDevice physical, std::uint32_t index) {
    DeviceDescription d;
    d.index = index;
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(physical, &props);
    d.name = props.deviceName;
    d.vendor = vendor_name(props.vendorID);
    d.type = type_name(props.deviceType);
    d.api_version = version_string(props.apiVersion);
    d.driver_version = props.driverVersion;
    std::memcpy(d.pipeline_cache_uuid, props.pipelineCacheUUID, sizeof d.pipeline_cache_uuid);
    d.shared_memory_bytes = props.limits.maxComputeSharedMemorySize;
    d.max_storage_buffer_range = props.limits.maxStorageBufferRange;
    d.max_push_constants = props.limits.maxPushConstantsSize;
    d.max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;

    const bool v12 = props.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceFeatures core{};
    if (v12) {
        // Structures of a version the device lacks may not be chained: only 1.2 devices get here.
        VkPhysicalDeviceFloatControlsProperties floats{};
        floats.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
        VkPhysicalDeviceDriverProperties driver{};
        driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
        driver.pNext = &floats;
        VkPhysicalDeviceSubgroupProperties subgroup{};
        subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
        subgroup.pNext = &driver;
        VkPhysicalDeviceProperties2 props2{};
        props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        props2.pNext = &subgroup;
        vkGetPhysicalDeviceProperties2(physical, &props2);
        d.subgroup_size = subgroup.subgroupSize;
        d.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
        d.driver = std::string(driver.driverName) + " " + driver.driverInfo;
        d.denorm_preserve_f32 = floats.shaderDenormPreserveFloat32;
        d.signed_zero_preserve = floats.shaderSignedZeroInfNanPreserveFloat32 && floats.shaderSignedZeroInfNanPreserveFloat64;

        VkPhysicalDeviceVulkan12Features f12{};
        f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
        VkPhysicalDeviceFeatures2 f2{};
        f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
        f2.pNext = &f12;
        vkGetPhysicalDeviceFeatures2(physical, &f2);
        core = f2.features;
        d.buffer_device_address = f12.bufferDeviceAddress;
        d.timeline_semaphore = f12.timelineSemaphore;
        d.storage_8bit = f12.storageBuffer8BitAccess;
        d.host_query_reset = f12.hostQueryReset;
        d.shader_float16 = f12.shaderFloat16;
        d.vulkan_memory_model = f12.vulkanMemoryModel;
        d.vulkan_memory_model_device_scope = f12.vulkanMemoryModelDeviceScope;
        describe_cooperative_matrix(physical, d);
    } else {
        vkGetPhysicalDeviceFeatures(physical, &core);
        d.driver = "driver version " + std::to_string(props.driverVersion);
    }
    d.float64 = core.shaderFloat64;
    d.fma_fused = props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    d.int64 = core.shaderInt64;

    VkPhysicalDeviceMemoryProperties memory{};
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    for (std::uint32_t i = 0; i < memory.memoryHeapCount; ++i)
        d.heaps.push_back({memory.memoryHeaps[i].size, (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});

    const auto families = queue_families(physical);
    for (std::uint32_t i = 0; i < families.size(); ++i) {
        const VkQueueFlags f = families[i].queueFlags;
        d.queue_families.push_back({i, families[i].queueCount, (f & VK_QUEUE_GRAPHICS_BIT) != 0,
                                    (f & VK_QUEUE_COMPUTE_BIT) != 0, (f & VK_QUEUE_TRANSFER_BIT) != 0});
    }
    const auto compute = pick_compute_family(families);
    if (compute && families[*compute].timestampValidBits > 0) {
        d.timestamp_period_ns = props.limits.timestampPeriod;
        d.timestamp_valid_bits = families[*compute].timestampValidBits;
    }
    if (compute) {
        const std::uint32_t transfer = pick_transfer_family(families).value_or(*compute);
        if (props.limits.timestampPeriod > 0) d.transfer_timestamp_bits = families[transfer].timestampValidBits;
    }

    std::vector<std::string> missing;
    if (!v12) missing.push_back("Vulkan " + d.api_version + " (Tandem needs 1.2)");
    if (!compute) missing.push_back("no compute queue");
    if (!d.float64) missing.push_back("no shaderFloat64");
    if (!d.int64) missing.push_back("no shaderInt64");
    if (!d.buffer_device_address) missing.push_back("no bufferDeviceAddress");
    if (!d.timeline_semaphore) missing.push_back("no timelineSemaphore");
    if (!d.storage_8bit) missing.push_back("no storageBuffer8BitAccess");
    for (const auto& m : missing) d.unusable_reason += (d.unusable_reason.empty() ? "" : ", ") + m;
    return d;
}

struct Seen {
    std::vector<VkPhysicalDevice> handles;
    std::vector<DeviceDescription> descriptions;
};

Seen describe_all(VkInstance instance) {
    std::uint32_t n = 0;
    check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
    Seen seen;
    seen.handles.resize(n);
    check(vkEnumeratePhysicalDevices(instance, &n, seen.handles.data()), "vkEnumeratePhysicalDevices",
          {VK_INCOMPLETE});
    seen.handles.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) seen.descriptions.push_back(describe(seen.handles[i], i));
    // Device groups (Vulkan 1.1): a device's peers, by their index above.
    std::uint32_t groups = 0;
    check(vkEnumeratePhysicalDeviceGroups(instance, &groups, nullptr), "vkEnumeratePhysicalDeviceGroups");
    std::vector<VkPhysicalDeviceGroupProperties> props(groups, {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GROUP_PROPERTIES, nullptr, 0, {}, VK_FALSE});
    check(vkEnumeratePhysicalDeviceGroups(instance, &groups, props.data()), "vkEnumeratePhysicalDeviceGroups", {VK_INCOMPLETE});
    props.resize(groups);
    auto index_of = [&](VkPhysicalDevice h) -> std::optional<std::uint32_t> {
        for (std::uint32_t i = 0; i < n; ++i)
            if (seen.handles[i] == h) return i;
        return std::nullopt;
    };
    for (const auto& g : props)
        for (std::uint32_t a = 0; a < g.physicalDeviceCount; ++a)
            if (auto i = index_of(g.physicalDevices[a]))
                for (std::uint32_t b = 0; b < g.physicalDeviceCount; ++b)
                    if (auto j = index_of(g.physicalDevices[b]); j && b != a) seen.descriptions[*i].group_peers.push_back(*j);
    return seen;
}

std::string device_list(const std::vector<DeviceDescription>& devices) {
    if (devices.empty()) return "none";
    std::string out;
    for (const auto& d : devices) {
        out += (out.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " (" + d.type + ")";
        if (!d.unusable_reason.empty()) out += " unusable: " + d.unusable_reason;
    }
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// TANDEM_DEVICE parsed: the best device, one index, or a name substring (lower case).
struct Request {
    std::optional<std::uint32_t> index;
    std::optional<std::string> name;
};

Request parse_request(const std::string& spec) {
    if (spec == "auto" || spec == "vulkan") return {};
    const std::string prefix = "vulkan:";
    if (spec.size() > prefix.size() && spec.compare(0, prefix.size(), prefix) == 0) {
        const std::string rest = spec.substr(prefix.size());
        std::uint32_t index = 0;
        auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
        if (ec == std::errc() && end == rest.data() + rest.size()) return {index, std::nullopt};
        return {std::nullopt, lower(rest)};
    }
    throw ConfigError("TANDEM_DEVICE='" + spec +
                      "' is not a device: use auto, cpu, vulkan, vulkan:<index> or vulkan:<name substring>");
}

/// The index (into `devices`) the request names; throws DeviceError when none fits.
std::uint32_t select(const Request& request, const std::string& spec, const std::vector<DeviceDescription>& devices) {
    if (devices.empty()) throw DeviceError("no Vulkan device found (the Vulkan loader lists none)");
    std::vector<std::uint32_t> candidates;
    for (const auto& d : devices) {
        if (request.index && d.index != *request.index) continue;
        if (request.name && lower(d.name).find(*request.name) == std::string::npos) continue;
        candidates.push_back(d.index);
    }
    if (candidates.empty())
        throw DeviceError("TANDEM_DEVICE=" + spec + " matches no Vulkan device; devices seen: " + device_list(devices));
    std::optional<std::uint32_t> best;
    for (std::uint32_t i : candidates) {
        if (!devices[i].unusable_reason.empty()) continue;
        if (!best || devices[i].preference() > devices[*best].preference()) best = i;
    }
    if (!best) {
        if (candidates.size() == 1) {
            const auto& d = devices[candidates.front()];
            throw DeviceError("Vulkan device " + std::to_string(d.index) + " (" + d.name +
                              ") cannot run Tandem: " + d.unusable_reason);
        }
        throw DeviceError("no usable Vulkan device for TANDEM_DEVICE=" + spec + "; devices seen: " +
                          device_list(devices));
    }
    return *best;
}

/// The memory type allowed by `allowed` with all of `required`, scored by `weights` (flag,
/// weight) pairs; ties go to the larger heap, then the lower index.
std::optional<std::uint32_t> pick_memory_type(const VkPhysicalDeviceMemoryProperties& memory, std::uint32_t allowed,
                                              VkMemoryPropertyFlags required,
                                              std::initializer_list<std::pair<VkMemoryPropertyFlags, int>> weights) {
    constexpr VkMemoryPropertyFlags never = VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT;
    std::optional<std::uint32_t> best;
    int best_score = 0;
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        const VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
        if (!(allowed & (1u << i)) || (f & required) != required || (f & never)) continue;
        int score = 0;
        for (const auto& [flag, weight] : weights)
            if (f & flag) score += weight;
        const auto heap = [&](std::uint32_t t) { return memory.memoryHeaps[memory.memoryTypes[t].heapIndex].size; };
        if (!best || score > best_score || (score == best_score && heap(i) > heap(*best))) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

}  // namespace

std::string coopmat_text(const DeviceDescription& d) {
    if (d.cooperative_matrix_shapes.empty() && d.coopmat_note.empty()) return "";
    std::string out = ", tensor cores: ";
    if (d.coopmat_f16.m != 0)
        out += "f16 matmul " + std::to_string(d.coopmat_f16.m) + "x" + std::to_string(d.coopmat_f16.n) + "x" +
               std::to_string(d.coopmat_f16.k);
    else
        out += "off (" + d.coopmat_note + ")";
    out += " (VK_NV_cooperative_matrix:";
    for (std::size_t i = 0; i < d.cooperative_matrix_shapes.size(); ++i)
        out += (i == 0 ? " " : ", ") + d.cooperative_matrix_shapes[i];
    return out + ")";
}

int DeviceDescription::preference() const noexcept {
    if (type == "discrete") return 4;
    if (type == "integrated") return 3;
    if (type == "virtual") return 2;
    if (type == "cpu") return 1;
    return 0;
}

std::vector<DeviceDescription> Context::enumerate(std::string* why) {
    try {
        // One instance for enumeration, kept for the life of the process: destroying the last
        // instance unloads the driver, and Mesa's unload leaks a little (LeakSanitizer reports
        // it, unattributed, in every program that ever enumerated).
        static const VkInstance instance = make_instance(load_vulkan(), nullptr).release();
        auto seen = describe_all(instance);
        if (seen.descriptions.empty() && why != nullptr) *why = "no Vulkan device found (the Vulkan loader lists none)";
        return std::move(seen.descriptions);
    } catch (const std::exception& e) {
        if (why != nullptr) *why = e.what();
        return {};
    }
}

std::unique_ptr<Context> Context::create(const ContextOptions& options) {
    const Request request = parse_request(options.device);
    const std::uint32_t api = load_vulkan();
    std::unique_ptr<Context> context(new Context);
    Context& c = *context;

    VkDebugUtilsMessengerCreateInfoEXT messenger{};
    messenger.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    messenger.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger.pfnUserCallback = &Context::on_message;
    messenger.pUserData = &c;
    c.instance_ = make_instance(api, options.validation ? &messenger : nullptr).release();
    if (options.validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(c.instance_, "vkCreateDebugUtilsMessengerEXT"));
        c.destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(c.instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (create == nullptr || c.destroy_messenger_ == nullptr)
            throw DeviceError("validation requested but vkCreateDebugUtilsMessengerEXT is missing");
        check(create(c.instance_, &messenger, nullptr, &c.messenger_), "vkCreateDebugUtilsMessengerEXT");
    }

    Seen seen = describe_all(c.instance_);
    const std::uint32_t chosen = select(request, options.device, seen.descriptions);
    c.physical_ = seen.handles[chosen];
    c.description_ = std::move(seen.descriptions[chosen]);
    c.open_device();
    return context;
}

void Context::open_device() {
    const auto families = queue_families(physical_);
    compute_family_ = *pick_compute_family(families);  // the device is usable: it has one
    transfer_family_ = pick_transfer_family(families).value_or(compute_family_);

    const float priority = 1.0f;
    std::vector<VkDeviceQueueCreateInfo> queues;
    for (std::uint32_t family : {compute_family_, transfer_family_}) {
        if (!queues.empty() && family == compute_family_) break;
        VkDeviceQueueCreateInfo q{};
        q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        q.queueFamilyIndex = family;
        q.queueCount = 1;
        q.pQueuePriorities = &priority;
        queues.push_back(q);
    }

    VkPhysicalDeviceVulkan12Features f12{};
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    f12.bufferDeviceAddress = VK_TRUE;
    f12.timelineSemaphore = VK_TRUE;
    f12.storageBuffer8BitAccess = VK_TRUE;
    f12.hostQueryReset = description_.host_query_reset ? VK_TRUE : VK_FALSE;
    // The tensor-core GEMM (gemm_coopmat.hpp), only where describe() found all it needs.
    const bool coopmat = description_.coopmat_f16.m != 0;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_features{};
    coopmat_features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    coopmat_features.cooperativeMatrix = VK_TRUE;
    if (coopmat) {
        f12.shaderFloat16 = VK_TRUE;
        f12.vulkanMemoryModel = VK_TRUE;
        // With the memory model on, Device-scope synchronization (the error flags' atomics of the
        // generated kernels) is valid only with this feature too.
        f12.vulkanMemoryModelDeviceScope = VK_TRUE;
        f12.pNext = &coopmat_features;
    }
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &f12;
    features.features.shaderFloat64 = VK_TRUE;
    features.features.shaderInt64 = VK_TRUE;

    // A portability (MoltenVK) device must have its subset extension enabled.
    std::vector<const char*> extensions;
    std::uint32_t n = 0;
    check(vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
    std::vector<VkExtensionProperties> available(n);
    check(vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, available.data()),
          "vkEnumerateDeviceExtensionProperties", {VK_INCOMPLETE});
    available.resize(n);
    if (has_extension(available, "VK_KHR_portability_subset")) extensions.push_back("VK_KHR_portability_subset");
    if (coopmat) extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    // The driver's estimate of the memory this process may use (the residency budget's default).
    const bool memory_budget = has_extension(available, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

    VkDeviceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    info.pNext = &features;
    info.queueCreateInfoCount = static_cast<std::uint32_t>(queues.size());
    info.pQueueCreateInfos = queues.data();
    info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, compute_family_, 0, &compute_queue_);
    vkGetDeviceQueue(device_, transfer_family_, 0, &transfer_queue_);

    // Only the types a heap block's buffer (memory.cpp makes them alike) may live in are candidates.
    const std::uint32_t both[] = {compute_family_, transfer_family_};
    VkBufferCreateInfo probe_info{};
    probe_info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    probe_info.size = 256;
    probe_info.usage = kHeapUsage;
    probe_info.sharingMode = has_transfer_queue() ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE;
    probe_info.queueFamilyIndexCount = has_transfer_queue() ? 2 : 0;
    probe_info.pQueueFamilyIndices = both;
    VkBuffer raw = VK_NULL_HANDLE;
    check(vkCreateBuffer(device_, &probe_info, nullptr, &raw), "vkCreateBuffer");
    const Buffer probe(device_, raw);
    VkMemoryRequirements requirements{};
    vkGetBufferMemoryRequirements(device_, probe.get(), &requirements);

    VkPhysicalDeviceMemoryProperties memory{};
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory);
    const std::uint32_t allowed = requirements.memoryTypeBits;
    constexpr VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                    visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                    coherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                    cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    // Device arrays: plain VRAM rather than the small BAR window. Uploads: system memory the
    // copy engine reads. Readbacks: cached (uncached host reads crawl), coherent if possible.
    const auto local_type = pick_memory_type(memory, allowed, local, {{visible, -1}});
    const auto upload = pick_memory_type(memory, allowed, visible | coherent, {{local, -1}, {cached, -1}});
    const auto readback = pick_memory_type(memory, allowed, visible, {{cached, 4}, {coherent, 2}, {local, -1}});
    if (!local_type || !upload || !readback)
        throw DeviceError("Vulkan device " + description_.name + " offers no " +
                          (!local_type ? "device-local" : !upload ? "host-visible coherent" : "host-visible") +
                          " memory type for storage buffers");
    device_local_type_ = *local_type;
    upload_type_ = *upload;
    readback_type_ = *readback;
    const VkMemoryPropertyFlags readback_flags = memory.memoryTypes[readback_type_].propertyFlags;
    readback_cached_ = (readback_flags & cached) != 0;
    readback_coherent_ = (readback_flags & coherent) != 0;

    const std::uint32_t heap = memory.memoryTypes[device_local_type_].heapIndex;
    device_heap_bytes_ = memory.memoryHeaps[heap].size;
    if (memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
        budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
        VkPhysicalDeviceMemoryProperties2 props{};
        props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
        props.pNext = &budget;
        vkGetPhysicalDeviceMemoryProperties2(physical_, &props);
        device_heap_budget_ = std::min<std::uint64_t>(budget.heapBudget[heap], device_heap_bytes_);
    }
}

Context::~Context() {
    if (device_ != VK_NULL_HANDLE) {
        vkDeviceWaitIdle(device_);  // a lost device cannot be waited for; destroy it all the same
        vkDestroyDevice(device_, nullptr);
    }
    if (messenger_ != VK_NULL_HANDLE) destroy_messenger_(instance_, messenger_, nullptr);
    InstanceDeleter()(instance_);
}

std::vector<std::string> Context::validation_texts() const {
    std::lock_guard lock(texts_mutex_);
    return validation_texts_;
}

VkBool32 VKAPI_PTR Context::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                       VkDebugUtilsMessageTypeFlagsEXT,
                                       const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    const char* id = data->pMessageIdName != nullptr ? data->pMessageIdName : "";
    // The layer's own report of its settings is not a finding.
    if (std::strstr(id, "status-message") != nullptr || std::strstr(id, "debug-build-warning") != nullptr)
        return VK_FALSE;
    auto& c = *static_cast<Context*>(user);
    c.validation_count_.fetch_add(1);
    std::lock_guard lock(c.texts_mutex_);
    if (c.validation_texts_.size() < kKeptTexts) {
        const char* level = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning";
        c.validation_texts_.push_back(std::string(level) + " [" + id + "] " +
                                      (data->pMessage != nullptr ? data->pMessage : ""));
    }
    return VK_FALSE;
}

}  // namespace tandem::detail::vk
