// The pipeline cache: memory, then SPIR-V on disk, then glslang. On disk every file carries a
// small header (magic, format version, hashes, a checksum of its payload), so that a truncated,
// garbled or foreign file is recognised, reported once and rebuilt rather than handed to the
// driver. Files are written to a temporary name and renamed, so a reader never sees half a file.
#include "backends/vulkan/pipeline_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "backends/vulkan/compiler.hpp"

namespace tandem::detail::vk {

std::uint64_t stable_hash(const void* data, std::size_t bytes, std::uint64_t seed) {
    // FNV-1a 64: simple, stable across compilers, platforms and runs (std::hash is none of these).
    std::uint64_t h = seed;
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

namespace {

namespace fs = std::filesystem;

constexpr char kSpvMagic[8] = {'T', 'D', 'M', 'S', 'P', 'I', 'R', 'V'};
constexpr char kBlobMagic[8] = {'T', 'D', 'M', 'P', 'C', 'A', 'C', 'H'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr const char* kBlobName = "pipeline_cache.bin";

/// Header of a <hash>.spv file; the SPIR-V words follow.
struct SpvHeader {
    char magic[8];
    std::uint32_t version;
    std::uint32_t push_bytes;
    std::uint64_t key_hash;     ///< of the kernel's key and source: a file for another kernel is caught
    std::uint64_t device_hash;  ///< of the device's pipelineCacheUUID and driver version
    std::uint64_t words;
    std::uint64_t checksum;     ///< of the SPIR-V bytes
};
/// Header of the VkPipelineCache blob file; the driver's blob follows.
struct BlobHeader {
    char magic[8];
    std::uint32_t version;
    std::uint32_t reserved;
    std::uint64_t bytes;
    std::uint64_t checksum;
};

template <class T>
std::uint64_t hash_of(const T& v, std::uint64_t seed) {
    return stable_hash(&v, sizeof v, seed);
}
std::uint64_t hash_str(const std::string& s, std::uint64_t seed) { return stable_hash(s.data(), s.size(), seed); }

std::string hex(std::uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::optional<std::vector<char>> read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return std::nullopt;
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return std::nullopt;
    return data;
}

/// Writes `parts` to `path` through a temporary file in the same directory and a rename.
/// Returns "" or what went wrong.
std::string write_atomically(const fs::path& path, std::initializer_list<std::pair<const void*, std::size_t>> parts) {
    static std::atomic<std::uint64_t> counter{0};
    const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot create " + tmp.string() + ": " + std::strerror(errno);
    std::string error;
    for (auto [data, n] : parts) {
        const char* p = static_cast<const char*>(data);
        while (n > 0 && error.empty()) {
            const ssize_t w = ::write(fd, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) error = "cannot write " + tmp.string() + ": " + std::strerror(w < 0 ? errno : ENOSPC);
            else {
                p += w;
                n -= static_cast<std::size_t>(w);
            }
        }
    }
    if (::close(fd) != 0 && error.empty()) error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
    if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
        error = "cannot rename " + tmp.string() + " to " + path.string() + ": " + std::strerror(errno);
    if (!error.empty()) ::unlink(tmp.c_str());
    return error;
}

}  // namespace

struct PipelineCache::Impl {
    struct Entry {
        ComputePipeline pipeline;
        std::uint64_t key_hash = 0;
    };

    const Context& ctx;
    std::string dir;  // "" when the disk cache is off
    std::function<void(const std::string&)> report;
    std::uint64_t device_hash = 0;
    VkPhysicalDeviceProperties props{};

    mutable std::mutex mutex;  // guards everything below
    std::unordered_map<std::uint64_t, std::unique_ptr<Entry>> entries;
    /// Builds under way, by hash: a second thread that needs the same kernel waits for the first
    /// (a kernel built ahead of time in the background and needed by a recording meanwhile).
    std::unordered_map<std::uint64_t, std::shared_future<void>> building;
    std::unordered_map<std::uint32_t, VkPipelineLayout> layouts;  // by push-constant bytes
    PipelineCacheStats stats;
    std::uint64_t warmed = 0;
    bool disk_writable = true;
    VkPipelineCache vk_cache = VK_NULL_HANDLE;

    std::mutex report_mutex;
    std::set<std::string> reported;

    std::thread warm;
    PipelineCache::BuildObserver observer;  // set before the first get()
    std::atomic<bool> stopping{false};

    Impl(const Context& c, std::string d, std::function<void(const std::string&)> r)
        : ctx(c), dir(std::move(d)), report(std::move(r)) {
        const DeviceDescription& desc = ctx.description();
        device_hash = stable_hash(desc.pipeline_cache_uuid, sizeof desc.pipeline_cache_uuid);
        device_hash = hash_of(desc.driver_version, device_hash);
        vkGetPhysicalDeviceProperties(ctx.physical(), &props);
        if (!dir.empty()) {
            std::error_code ec;
            fs::create_directories(dir, ec);
            if (ec || !fs::is_directory(dir, ec)) {
                problem("dir", "pipeline cache: cannot use directory " + dir + " (" +
                                   (ec ? ec.message() : std::string("not a directory")) +
                                   "); pipelines are cached in memory only");
                dir.clear();
            }
        }
        stats.directory = dir;
        create_vk_cache();
    }

    ~Impl() {
        stopping = true;
        if (warm.joinable()) warm.join();
        save_vk_cache();
        VkDevice dev = ctx.device();
        for (auto& [h, e] : entries) vkDestroyPipeline(dev, e->pipeline.pipeline, nullptr);
        for (auto& [b, l] : layouts) vkDestroyPipelineLayout(dev, l, nullptr);
        if (vk_cache != VK_NULL_HANDLE) vkDestroyPipelineCache(dev, vk_cache, nullptr);
    }

    /// Reports `message` once per `what` (a problem kind and file).
    void problem(const std::string& what, const std::string& message) {
        std::lock_guard lock(report_mutex);
        if (!reported.insert(what).second) return;
        if (report) report(message);
    }
    void write_failed(const std::string& error) {
        {
            std::lock_guard lock(mutex);
            disk_writable = false;
        }
        problem("write", "pipeline cache: " + error + "; pipelines are cached in memory only from now on");
    }
    bool writable() {
        std::lock_guard lock(mutex);
        return !dir.empty() && disk_writable;
    }

    // ---- the VkPipelineCache blob -------------------------------------------------------
    void create_vk_cache() {
        std::vector<char> blob;
        if (!dir.empty()) {
            const fs::path p = fs::path(dir) / kBlobName;
            std::error_code ec;
            if (fs::exists(p, ec)) {
                auto data = read_file(p);
                std::string why;
                BlobHeader h{};
                if (!data) why = "unreadable";
                else if (data->size() < sizeof h) why = "truncated";
                else {
                    std::memcpy(&h, data->data(), sizeof h);
                    const char* payload = data->data() + sizeof h;
                    if (std::memcmp(h.magic, kBlobMagic, 8) != 0 || h.version != kFormatVersion) why = "not a Tandem pipeline cache";
                    else if (h.bytes != data->size() - sizeof h) why = "truncated";
                    else if (h.checksum != stable_hash(payload, h.bytes)) why = "corrupt (checksum)";
                    else if (!matches_device(payload, h.bytes)) why = "made by another device or driver";
                    else blob.assign(payload, payload + h.bytes);
                }
                if (!why.empty())
                    problem("blob", "pipeline cache: ignoring " + p.string() + ": " + why + "; it will be rebuilt");
            }
        }
        VkPipelineCacheCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
        info.initialDataSize = blob.size();
        info.pInitialData = blob.empty() ? nullptr : blob.data();
        if (vkCreatePipelineCache(ctx.device(), &info, nullptr, &vk_cache) != VK_SUCCESS) {
            // A driver that rejects the blob: start empty rather than fail.
            info.initialDataSize = 0;
            info.pInitialData = nullptr;
            check(vkCreatePipelineCache(ctx.device(), &info, nullptr, &vk_cache), "vkCreatePipelineCache");
        }
    }
    bool matches_device(const char* data, std::size_t bytes) const {
        VkPipelineCacheHeaderVersionOne h{};
        if (bytes < sizeof h) return false;
        std::memcpy(&h, data, sizeof h);
        return h.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && h.vendorID == props.vendorID &&
               h.deviceID == props.deviceID &&
               std::memcmp(h.pipelineCacheUUID, props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
    }
    void save_vk_cache() {
        if (vk_cache == VK_NULL_HANDLE || !writable()) return;
        std::size_t size = 0;
        if (vkGetPipelineCacheData(ctx.device(), vk_cache, &size, nullptr) != VK_SUCCESS || size == 0) return;
        std::vector<char> blob(size);
        if (vkGetPipelineCacheData(ctx.device(), vk_cache, &size, blob.data()) != VK_SUCCESS) return;
        blob.resize(size);
        BlobHeader h{};
        std::memcpy(h.magic, kBlobMagic, 8);
        h.version = kFormatVersion;
        h.bytes = size;
        h.checksum = stable_hash(blob.data(), size);
        std::string error = write_atomically(fs::path(dir) / kBlobName, {{&h, sizeof h}, {blob.data(), size}});
        if (!error.empty()) write_failed(error);
    }

    // ---- pipelines ----------------------------------------------------------------------
    VkPipelineLayout layout_for(std::uint32_t push_bytes) {
        std::lock_guard lock(mutex);
        if (auto it = layouts.find(push_bytes); it != layouts.end()) return it->second;
        VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
        VkPipelineLayoutCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        info.pushConstantRangeCount = push_bytes ? 1 : 0;
        info.pPushConstantRanges = &range;
        VkPipelineLayout l = VK_NULL_HANDLE;
        check(vkCreatePipelineLayout(ctx.device(), &info, nullptr, &l), "vkCreatePipelineLayout");
        layouts.emplace(push_bytes, l);
        return l;
    }

    ComputePipeline create(const std::vector<std::uint32_t>& spirv, std::uint32_t push_bytes) {
        VkShaderModuleCreateInfo mi{};
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = spirv.size() * 4;
        mi.pCode = spirv.data();
        VkShaderModule module = VK_NULL_HANDLE;
        check(vkCreateShaderModule(ctx.device(), &mi, nullptr, &module), "vkCreateShaderModule");
        ShaderModule owned(ctx.device(), module);
        ComputePipeline p;
        p.layout = layout_for(push_bytes);
        p.push_bytes = push_bytes;
        VkComputePipelineCreateInfo ci{};
        ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module;
        ci.stage.pName = "main";
        ci.layout = p.layout;
        check(vkCreateComputePipelines(ctx.device(), vk_cache, 1, &ci, nullptr, &p.pipeline),
              "vkCreateComputePipelines");
        return p;
    }

    /// The SPIR-V of a valid <hash>.spv file, or nothing (with the problem reported).
    std::optional<std::vector<std::uint32_t>> load_spv(const fs::path& p, std::optional<std::uint64_t> key_hash,
                                                       SpvHeader& h) {
        std::error_code ec;
        if (!fs::exists(p, ec)) return std::nullopt;
        auto data = read_file(p);
        std::string why;
        if (!data) why = "unreadable";
        else if (data->size() < sizeof h) why = "truncated";
        else {
            std::memcpy(&h, data->data(), sizeof h);
            const std::size_t payload = data->size() - sizeof h;
            if (std::memcmp(h.magic, kSpvMagic, 8) != 0 || h.version != kFormatVersion) why = "not a Tandem SPIR-V file";
            else if (h.device_hash != device_hash) why = "made for another device or driver";
            else if (key_hash && h.key_hash != *key_hash) why = "holds another kernel";
            else if (h.words * 4 != payload || h.words == 0) why = "truncated";
            else if (h.checksum != stable_hash(data->data() + sizeof h, payload)) why = "corrupt (checksum)";
            else {
                std::vector<std::uint32_t> words(h.words);
                std::memcpy(words.data(), data->data() + sizeof h, payload);
                if (words[0] != 0x07230203u) why = "not SPIR-V";
                else return words;
            }
        }
        problem("spv:" + p.string(), "pipeline cache: ignoring " + p.string() + ": " + why + "; it will be rebuilt");
        return std::nullopt;
    }

    void store_spv(const fs::path& p, const std::vector<std::uint32_t>& spirv, std::uint64_t key_hash,
                   std::uint32_t push_bytes) {
        if (!writable()) return;
        SpvHeader h{};
        std::memcpy(h.magic, kSpvMagic, 8);
        h.version = kFormatVersion;
        h.push_bytes = push_bytes;
        h.key_hash = key_hash;
        h.device_hash = device_hash;
        h.words = spirv.size();
        h.checksum = stable_hash(spirv.data(), spirv.size() * 4);
        std::string error = write_atomically(p, {{&h, sizeof h}, {spirv.data(), spirv.size() * 4}});
        if (!error.empty()) write_failed(error);
    }

    /// Inserts a new pipeline unless another thread got there first (then ours is destroyed).
    const ComputePipeline& insert(std::uint64_t hash, ComputePipeline p, std::uint64_t key_hash) {
        std::lock_guard lock(mutex);
        auto [it, fresh] = entries.try_emplace(hash);
        if (!fresh && it->second->key_hash == key_hash) {
            vkDestroyPipeline(ctx.device(), p.pipeline, nullptr);
            return it->second->pipeline;
        }
        if (!fresh) vkDestroyPipeline(ctx.device(), it->second->pipeline.pipeline, nullptr);
        it->second = std::make_unique<Entry>(Entry{p, key_hash});
        return it->second->pipeline;
    }

    /// The entry's hash (the file's name) and the hash of the kernel's own text.
    std::pair<std::uint64_t, std::uint64_t> hashes(const Kernel& k) const {
        const std::uint64_t key_hash = hash_str(k.glsl, hash_str(k.key + '\0', 0x54444d4b45590001ull));
        std::uint64_t hash = hash_str(k.key + '\0' + k.glsl, device_hash);
        hash = hash_of(k.workgroup_size, hash);
        hash = hash_of(k.elements_per_thread, hash);
        hash = hash_of(k.push_bytes, hash);
        return {hash, key_hash};
    }

    bool cached(const Kernel& k) {
        const auto [hash, key_hash] = hashes(k);
        {
            std::lock_guard lock(mutex);
            if (auto it = entries.find(hash); it != entries.end() && it->second->key_hash == key_hash) return true;
        }
        std::error_code ec;
        return !dir.empty() && fs::exists(fs::path(dir) / (hex(hash) + ".spv"), ec);
    }

    const ComputePipeline& get(const Kernel& k) {
        const auto [hash, key_hash] = hashes(k);
        std::promise<void> mine;
        for (;;) {
            std::shared_future<void> other;
            {
                std::lock_guard lock(mutex);
                if (auto it = entries.find(hash); it != entries.end()) {
                    if (it->second->key_hash == key_hash) {
                        ++stats.hits;
                        return it->second->pipeline;
                    }
                    // A warmed-up file whose kernel is not this one: rebuilt below.
                }
                auto b = building.find(hash);
                if (b == building.end()) {
                    building.emplace(hash, mine.get_future().share());
                    break;
                }
                other = b->second;
            }
            other.wait();  // then found built, or (its build failed) built here
        }
        struct Done {  // whatever happens, the waiters go on
            Impl& self;
            std::uint64_t hash;
            std::promise<void>& promise;
            ~Done() {
                {
                    std::lock_guard lock(self.mutex);
                    self.building.erase(hash);
                }
                promise.set_value();
            }
        } done{*this, hash, mine};
        const auto start = std::chrono::steady_clock::now();
        const fs::path file = dir.empty() ? fs::path() : fs::path(dir) / (hex(hash) + ".spv");
        std::optional<std::vector<std::uint32_t>> spirv;
        SpvHeader h{};
        if (!file.empty()) spirv = load_spv(file, key_hash, h);
        const bool from_disk = spirv.has_value() && h.push_bytes == k.push_bytes;
        if (!from_disk) spirv = compile_compute_shader(k.glsl);
        ComputePipeline p = create(*spirv, k.push_bytes);
        if (!from_disk && !file.empty()) store_spv(file, *spirv, key_hash, k.push_bytes);
        const auto end = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(end - start).count();
        {
            std::lock_guard lock(mutex);
            ++(from_disk ? stats.disk_hits : stats.misses);
            stats.compile_ms += ms;
        }
        if (observer) observer(start, end, from_disk);
        return insert(hash, p, key_hash);
    }

    void warm_up_run(std::string directory) {
        std::error_code ec;
        for (fs::directory_iterator it(directory, ec), end; !ec && it != end && !stopping; it.increment(ec)) {
            const fs::path p = it->path();
            if (p.extension() != ".spv") continue;
            const std::string stem = p.stem().string();
            if (stem.size() != 16) continue;
            const std::uint64_t hash = std::strtoull(stem.c_str(), nullptr, 16);
            {
                std::lock_guard lock(mutex);
                if (entries.count(hash)) continue;
            }
            SpvHeader h{};
            auto spirv = load_spv(p, std::nullopt, h);
            if (!spirv) continue;
            try {
                ComputePipeline pl = create(*spirv, h.push_bytes);
                insert(hash, pl, h.key_hash);
                std::lock_guard lock(mutex);
                ++warmed;
            } catch (const Error& e) {
                problem("warm:" + p.string(), "pipeline cache: warm-up of " + p.string() + " failed: " + e.what());
            }
        }
    }
};

PipelineCache::PipelineCache(const Context& context, std::string directory,
                             std::function<void(const std::string&)> report)
    : impl_(std::make_unique<Impl>(context, std::move(directory), std::move(report))) {}

PipelineCache::~PipelineCache() = default;

const ComputePipeline& PipelineCache::get(const Kernel& kernel) { return impl_->get(kernel); }

bool PipelineCache::cached(const Kernel& kernel) const { return impl_->cached(kernel); }

void PipelineCache::set_build_observer(BuildObserver observer) { impl_->observer = std::move(observer); }

void PipelineCache::warm_up() {
    if (impl_->dir.empty() || impl_->warm.joinable()) return;
    impl_->warm = std::thread([this, d = impl_->dir] { impl_->warm_up_run(d); });
}

PipelineCacheStats PipelineCache::stats() const {
    std::lock_guard lock(impl_->mutex);
    PipelineCacheStats s = impl_->stats;
    s.warmed = impl_->warmed;
    return s;
}

void PipelineCache::wait_warm_up() {
    if (impl_->warm.joinable()) impl_->warm.join();
}

std::string PipelineCache::default_directory() {
    if (const char* d = std::getenv("TANDEM_PIPELINE_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "tandem").string();
    if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "tandem").string();
    return "";
}

}  // namespace tandem::detail::vk
