#include "runtime/runtime_impl.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include "calibrate/calibration_file.hpp"
#include "graph/generators.hpp"
#include "runtime/topology.hpp"
#if TANDEM_WITH_VULKAN
#include "backends/vulkan/vulkan_backend.hpp"
#endif
#include "tandem/error.hpp"

#ifndef TANDEM_VERSION
#define TANDEM_VERSION "unknown"
#endif
#ifndef TANDEM_BUILD_INFO
#define TANDEM_BUILD_INFO "unknown"
#endif

namespace tandem {
namespace detail {

namespace {
int threads_for(const Config& c, const CpuTopology& t) {
    return c.cpu_threads > 0 ? c.cpu_threads : default_cpu_threads(t);
}
std::size_t pool_limit(const Config& c, const CpuTopology& t) {
    if (c.host_pool_bytes != SIZE_MAX) return c.host_pool_bytes;
    return t.memory_bytes ? static_cast<std::size_t>(t.memory_bytes / 8) : std::size_t{1} << 30;
}
SchedulerOptions scheduler_options(const Config& c, int threads, const std::vector<Backend*>& devices,
                                   const CpuTopology& topology, HostPool& pool) {
    SchedulerOptions o;
    o.pool = &pool;
    const Backend* device = devices.empty() ? nullptr : devices.front();
    std::vector<DeviceClass> classes;
    for (const Backend* d : devices) classes.push_back(d->device_class());
    o.profile = default_machine_profile(threads, classes);
    for (std::size_t d = 0; d < devices.size(); ++d) {
        o.profile.devices[d].identity = devices[d]->identity();
        o.profile.devices[d].rates.name = std::string(devices[d]->name()) + ":" +
                                          std::to_string(devices[d]->system_index()) + " (" +
                                          o.profile.devices[d].rates.name + ")";
    }
    // The measured rates, where they matter: a device open and placement left to the model.
    if (device && c.placement == "auto")
        o.profile = load_profile(c.calibration_file.empty() ? default_calibration_path() : c.calibration_file,
                                 machine_key(topology, threads), std::move(o.profile));
    for (const Backend* d : devices) {  // TANDEM_DEVICE_MEMORY_LIMIT (a share applies to each device's own)
        const std::uint64_t limit = c.device_memory_limit_bytes(d->memory_bytes());
        o.device_memory_budgets.push_back(limit ? limit : d->memory_budget());
    }
    o.threads = threads;
    o.fuse = c.fusion;
    o.log_graph = c.log.find("graph") != std::string::npos;
    o.log_exec = c.log.find("exec") != std::string::npos;
    o.log_placement = c.log.find("placement") != std::string::npos;
    o.trace_file = c.trace_file;
    o.region_records = static_cast<std::size_t>(c.region_records);
    o.placement = c.placement == "cpu"   ? PlacementMode::cpu
                  : c.placement == "gpu" ? PlacementMode::device
                                         : PlacementMode::automatic;
    o.min_device_elements = c.device_min_elements;
    o.fusion_cache = c.plan_cache == "off"      ? FusionCache::Mode::off
                     : c.plan_cache == "verify" ? FusionCache::Mode::verify
                                                : FusionCache::Mode::on;
    o.split = c.split == "always" ? SplitMode::always : c.split == "off" ? SplitMode::off : SplitMode::automatic;
    if (c.test_fault == "slow_plan") o.plan_pause = std::chrono::milliseconds(2000);
    o.learn = c.placement_learning && o.placement == PlacementMode::automatic && device != nullptr;
    return o;
}
}  // namespace

RuntimeImpl::RuntimeImpl(Runtime& owner, Config config)
    : owner_(owner),
      config_((config.validate(), std::move(config))),
      topology_(detect_topology()),
      threads_(threads_for(config_, topology_)),
      nodes_(this),
      pool_(std::make_shared<HostPool>(pool_limit(config_, topology_), topology_.memory_bytes)),
      cpu_(std::make_unique<cpu::CpuBackend>(cpu::select_kernels(config_.cpu_isa), config_.block_elements, *pool_)),
      devices_(open_devices()),
      scheduler_(std::make_unique<Scheduler>(nodes_, *cpu_, devices(), scheduler_options(config_, threads_, devices(), topology_, *pool_))) {
    // A deep pending chain computes while the program builds on it: a loop's first steps run
    // while its later ones are built and planned. Left where it is computed, as evaluate() does.
    if (config_.start_depth > 0)
        nodes_.start_chains_at(static_cast<std::uint32_t>(config_.start_depth),
                               [this](const std::shared_ptr<Node>& n, bool held_too) { return scheduler_->start(n, held_too); });
}

std::vector<Backend*> RuntimeImpl::devices() const {
    std::vector<Backend*> out;
    for (const auto& d : devices_) out.push_back(d.get());
    return out;
}

std::vector<std::unique_ptr<Backend>> RuntimeImpl::open_devices() {
    std::vector<std::unique_ptr<Backend>> out;
    for (const std::string& request : device_requests()) {
        if (auto d = open_device(request, out.size())) {
            d->set_ordinal(out.size());
            out.push_back(std::move(d));
        }
    }
    return out;
}

#if TANDEM_WITH_VULKAN
const std::vector<vk::DeviceDescription>& vulkan_devices(std::string* why);
#endif

std::vector<std::string> RuntimeImpl::device_requests() {
    // Config::validate checked the list. "vulkan:0,1" is short for "vulkan:0,vulkan:1".
    std::vector<std::string> requests;
    std::size_t at = 0;
    for (;;) {
        const std::size_t comma = config_.device.find(',', at);
        std::string part = config_.device.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        if (part != "auto" && part != "all" && part != "cpu" && part.rfind("vulkan", 0) != 0) part = "vulkan:" + part;
        requests.push_back(std::move(part));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    if (requests.size() != 1 || (requests[0] != "auto" && requests[0] != "all")) return requests;
#if TANDEM_WITH_VULKAN
    // "auto": every usable GPU of the best kind (two discrete GPUs: both; an integrated one beside
    // them: not); "all": every usable GPU. A Vulkan driver that runs on the CPU (lavapipe) is
    // slower than the CPU executor: neither uses it.
    const bool automatic = requests[0] == "auto";
    std::string why;
    const auto& devices = vulkan_devices(&why);
    const vk::DeviceDescription* best = nullptr;
    for (auto& d : devices)
        if (d.unusable_reason.empty() && (!best || d.preference() > best->preference())) best = &d;
    requests.clear();
    if (!best) {
        device_note_ = devices.empty() ? "no Vulkan device: " + why : "no usable Vulkan device";
        return requests;
    }
    if (best->type == "cpu") {
        device_note_ = "only a CPU-based Vulkan device (" + best->name +
                       "); the CPU executor is faster (TANDEM_DEVICE=vulkan uses it anyway)";
        return requests;
    }
    for (auto& d : devices)
        if (d.unusable_reason.empty() && d.type != "cpu" && (!automatic || d.type == best->type) &&
            requests.size() < kMaxDevices)
            requests.push_back((automatic ? "auto:" : "all:") + std::to_string(d.index));
    return requests;
#else
    return requests;
#endif
}

RuntimeImpl::~RuntimeImpl() {
    scheduler_->wait_idle();
    for (auto& d : devices_) d->quiesce();  // no kernel builds reporting to a scheduler that is gone
    auto [learned, runs] = scheduler_->learned();
    if (runs > 0 && config_.placement_learning && !scheduler_->calibration_file().empty())
        save_history(scheduler_->calibration_file(), machine_key(topology_, threads_), learned);
}

#if TANDEM_WITH_VULKAN
/// The Vulkan devices of this machine, enumerated once per process (an instance costs tens of
/// milliseconds, and the set of devices does not change under a running process).
const std::vector<vk::DeviceDescription>& vulkan_devices(std::string* why) {
    static std::string reason;
    static const std::vector<vk::DeviceDescription> devices = vk::Context::enumerate(&reason);
    if (why) *why = reason;
    return devices;
}
#endif

std::unique_ptr<Backend> RuntimeImpl::open_device(const std::string& request, std::size_t ordinal) {
    if (request == "cpu") {
        device_note_ = "TANDEM_DEVICE=cpu: all work runs on the CPU";
        return nullptr;
    }
#if TANDEM_WITH_VULKAN
    // "auto:<index>" and "all:<index>": a device device_requests() chose (a failure to open one
    // leaves a note, not an error).
    const bool automatic = request.rfind("auto:", 0) == 0 || request.rfind("all:", 0) == 0;
    try {
        vk::VulkanOptions o;
        o.context.device = automatic ? "vulkan:" + request.substr(request.find(':') + 1) : request;
        o.context.validation = config_.vulkan_validation;
        o.pipeline_cache_dir = config_.pipeline_cache_dir == "none"  ? std::string()
                               : config_.pipeline_cache_dir.empty() ? vk::PipelineCache::default_directory()
                                                                     : config_.pipeline_cache_dir;
        // A fault for one device ("device_lost@1") goes to that one alone.
        const std::size_t at_sign = config_.test_fault.find('@');
        if (at_sign == std::string::npos) o.test_fault = config_.test_fault;
        else if (std::to_string(ordinal) == config_.test_fault.substr(at_sign + 1)) o.test_fault = config_.test_fault.substr(0, at_sign);
        o.reduction_workgroup = config_.reduction_workgroup;
        o.reduction_threads = static_cast<std::uint64_t>(config_.reduction_threads);
        o.subgroups = config_.vulkan_subgroups;
        o.exact_f32_subnormals = config_.f32_subnormals == "exact";
        o.loops = config_.vulkan_loops;
        o.time_kernels = config_.time_kernels;
        o.log_gpu = config_.log.find("gpu") != std::string::npos;
        o.pool = pool_.get();
        return vk::VulkanBackend::create(o);
    } catch (const ConfigError&) {
        throw;
    } catch (const std::exception& e) {
        if (!automatic) throw;
        device_note_ = e.what();
        return nullptr;
    }
#else
    (void)ordinal;
    if (request != "auto" && request != "all")
        throw DeviceError("device '" + request + "': this build of Tandem has no Vulkan backend");
    device_note_ = "this build has no Vulkan backend (configured with TANDEM_WITH_VULKAN=OFF)";
    return nullptr;
#endif
}

std::shared_ptr<Node> RuntimeImpl::input(DType dtype, const Shape& shape, std::shared_ptr<Storage> storage) {
    return make_input(nodes_, dtype, shape, std::move(storage));
}

RuntimeImpl& runtime_of(const Array& a) {
    if (!a.valid()) throw Error("use of a null tandem::Array (default-constructed or moved from)");
    return *a.node()->runtime;
}

}  // namespace detail

using detail::RuntimeImpl;

Runtime::Runtime() : Runtime(Config::from_environment()) {}
Runtime::Runtime(Config config) : impl_(std::make_shared<RuntimeImpl>(*this, std::move(config))) {}
Runtime::~Runtime() {
    impl_->gate()->close_and_wait();  // (a queue's flush in the background is done with it)
    impl_->scheduler().wait_idle();
}

namespace {

void check_count(std::size_t n, const Shape& shape, const char* what) {
    if (static_cast<std::int64_t>(n) != shape.numel())
        throw ShapeError(std::string(what) + ": " + std::to_string(n) + " elements given for shape " +
                         shape.to_string() + " (" + std::to_string(shape.numel()) + " elements)");
}

template <class T>
Array copy_in(RuntimeImpl& rt, std::span<const T> data, const Shape& shape, DType dtype, const char* what) {
    check_count(data.size(), shape, what);
    auto storage = rt.pool().allocate(data.size_bytes(), std::string(what) + " " + shape.to_string());
    if (!data.empty()) std::memcpy(storage->data(), data.data(), data.size_bytes());
    return Array(rt.input(dtype, shape, std::move(storage)));
}

}  // namespace

Array Runtime::array(std::span<const double> data, const Shape& shape) {
    return copy_in(*impl_, data, shape, DType::f64, "array");
}
Array Runtime::array(std::span<const float> data, const Shape& shape) {
    return copy_in(*impl_, data, shape, DType::f32, "array");
}
Array Runtime::logical_array(std::span<const std::uint8_t> data, const Shape& shape) {
    check_count(data.size(), shape, "logical_array");
    auto storage = impl_->pool().allocate(data.size(), "logical_array " + shape.to_string());
    auto* out = static_cast<std::uint8_t*>(storage->data());
    for (std::size_t i = 0; i < data.size(); ++i) out[i] = data[i] != 0;
    return Array(impl_->input(DType::logical, shape, std::move(storage)));
}
Array Runtime::array(const HostArray& h) {
    if (!h.storage() && h.numel() > 0) throw ValueError("array: the HostArray has no elements (evaluate() gives placeholders)");
    auto storage = h.storage() ? std::const_pointer_cast<detail::Storage>(h.storage())
                               : impl_->pool().allocate(0, "array " + h.shape().to_string());
    return Array(impl_->input(h.dtype(), h.shape(), std::move(storage)));
}
Array Runtime::adopt(std::vector<double>&& data, const Shape& shape) {
    check_count(data.size(), shape, "adopt");
    return Array(impl_->input(DType::f64, shape, detail::Storage::adopt(std::move(data))));
}
Array Runtime::adopt(std::vector<float>&& data, const Shape& shape) {
    check_count(data.size(), shape, "adopt");
    return Array(impl_->input(DType::f32, shape, detail::Storage::adopt(std::move(data))));
}

Array Runtime::fill(double value, const Shape& shape, DType dtype) {
    if (dtype != DType::f64 && dtype != DType::f32 && dtype != DType::logical)
        throw DTypeError("fill: unknown element type code " + std::to_string(static_cast<int>(dtype)) +
                         " (expected f64, f32 or logical)");
    if (dtype == DType::logical) {
        if (std::isnan(value)) throw ValueError("fill: NaN's cannot be converted to logicals");
        value = value != 0 ? 1.0 : 0.0;
    } else if (dtype == DType::f32) {
        value = static_cast<double>(static_cast<float>(value));
    }
    return Array(impl_->nodes().make(detail::OpKind::Constant, dtype, shape, {}, {value, 0, 0}));
}
Array Runtime::scalar(double value, DType dtype) { return fill(value, Shape::scalar(), dtype); }
Array Runtime::zeros(const Shape& shape, DType dtype) { return fill(0.0, shape, dtype); }
Array Runtime::ones(const Shape& shape, DType dtype) { return fill(1.0, shape, dtype); }

Array Runtime::linspace(double a, double b, std::int64_t n) {
    if (!std::isfinite(a) || !std::isfinite(b))
        throw ValueError("linspace: the end points must be finite (got " + std::to_string(a) + " and " +
                         std::to_string(b) + ")");
    n = std::max<std::int64_t>(n, 0);
    if (n == 1) return fill(b, Shape{1, 1});
    return Array(impl_->nodes().make(detail::OpKind::Linspace, DType::f64, Shape{1, n}, {},
                                     {a, b, static_cast<double>(n)}));
}

Array Runtime::colon(double a, double step, double b) {
    if (std::isnan(a) || std::isnan(step) || std::isnan(b))
        throw ValueError("colon: NaN in a:step:b");
    const double count = detail::colon_count(a, step, b);
    if (!std::isfinite(count) || count > detail::kColonMaxCount)
        throw ValueError("colon: the range " + std::to_string(a) + ":" + std::to_string(step) + ":" + std::to_string(b) +
                         " has too many elements");
    const auto n = static_cast<std::int64_t>(count);
    return Array(impl_->nodes().make(detail::OpKind::Colon, DType::f64, Shape{1, n}, {}, {a, step, b}));
}

namespace {
std::vector<std::shared_ptr<detail::Node>> nodes_of(const std::vector<Array>& values, detail::RuntimeImpl* rt,
                                                    const char* what) {
    std::vector<std::shared_ptr<detail::Node>> nodes;
    nodes.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (!values[i].valid())
            throw Error(std::string(what) + ": value " + std::to_string(i) + " is a null tandem::Array");
        if (values[i].node()->runtime != rt)
            throw ValueError(std::string(what) + ": value " + std::to_string(i) + " belongs to another runtime");
        nodes.push_back(values[i].node());
    }
    return nodes;
}
}  // namespace

// The futures handed to users run their continuations on the runtime's continuation threads
// (runtime/continuations.hpp); the runtime's own continuations below stay on the completing
// thread, where they cost no thread hop.
Future<std::vector<HostArray>> Runtime::gather(const std::vector<Array>& values) {
    return detail::continue_through(impl_->scheduler().gather(nodes_of(values, impl_.get(), "gather"), true),
                                    impl_->continuations().poster());
}

Future<std::monostate> Runtime::evaluate(const std::vector<Array>& values) {
    return detail::continue_through(
        impl_->scheduler().gather(nodes_of(values, impl_.get(), "evaluate"), false).then(
            [](const std::vector<HostArray>&) { return std::monostate{}; }),
        impl_->continuations().poster());
}

void Runtime::wait_idle() { impl_->scheduler().wait_idle(); }

RuntimeInfo Runtime::info() const {
    RuntimeInfo i;
    i.version = TANDEM_VERSION;
    i.build = TANDEM_BUILD_INFO;
    i.cpu_isa = impl_->cpu_isa();
    i.cpu_threads = impl_->threads();
    i.block_elements = impl_->config().block_elements;
    i.fusion = impl_->config().fusion;
    i.topology = impl_->topology();
    i.placement = impl_->scheduler().placement_text();
#if TANDEM_WITH_VULKAN
    std::string why;
    for (const auto& d : detail::vulkan_devices(&why)) {
        std::string line = "vulkan:" + std::to_string(d.index) + " " + d.name + " (" + d.vendor + ", " + d.type +
                           ") driver " + d.driver + ", Vulkan " + d.api_version;
        std::uint64_t local = 0;
        for (auto& h : d.heaps)
            if (h.device_local) local += h.bytes;
        line += ", " + std::to_string(local >> 20) + " MiB device-local, subgroup " + std::to_string(d.subgroup_size) +
                ", shared memory " + std::to_string(d.shared_memory_bytes >> 10) + " KiB, float64 " +
                (d.float64 ? "yes" : "no") + ", fp32 subnormals kept on request " + (d.denorm_preserve_f32 ? "yes" : "no") +
                ", signed zeros kept on request " + (d.signed_zero_preserve ? "yes" : "no") +
                (d.fma_fused ? ", fma fused" : ", fma may round twice (GEMM emulates the fused one: exact, slower)") +
                detail::vk::coopmat_text(d) + ", queue families";
        for (auto& q : d.queue_families)
            line += " " + std::to_string(q.count) + "x" + (q.graphics ? "G" : "") + (q.compute ? "C" : "") +
                    (q.transfer ? "T" : "");
        // Peer memory between devices needs them in one device group; else copies go through the host.
        if (d.group_peers.empty()) {
            line += ", device group: its own";
        } else {
            line += ", device group with";
            for (std::uint32_t p : d.group_peers) line += " vulkan:" + std::to_string(p);
        }
        if (!d.unusable_reason.empty()) line += " [unusable: " + d.unusable_reason + "]";
        int opened = 0;  // a device listed twice is in use twice (two logical devices)
        for (auto* b : impl_->devices())
            if (b->system_index() == static_cast<int>(d.index)) ++opened;
        if (opened == 1) line += " [in use]";
        if (opened > 1) line += " [in use x" + std::to_string(opened) + "]";
        i.devices.push_back(line);
    }
    // each device's kernel cache, named by its device when there are several
    const auto& devices = impl_->devices();
    for (auto* b : devices) {
        const std::string text = b->kernel_cache_text();
        if (text.empty()) continue;
        if (!i.pipeline_cache.empty()) i.pipeline_cache += "; ";
        if (devices.size() > 1) i.pipeline_cache += "vulkan:" + std::to_string(b->system_index()) + " ";
        i.pipeline_cache += text;
    }
#endif
    i.devices_note = impl_->device_note();
    return i;
}

Metrics Runtime::metrics() const {
    Metrics m;
    impl_->scheduler().add_metrics(m);
    auto s = impl_->pool().stats();
    m.host_bytes_allocated = s.bytes_allocated;
    m.host_pool_hits = s.hits;
    for (auto* device : impl_->devices()) device->add_metrics(m);
    return m;
}

std::vector<RegionRecord> Runtime::region_records() const { return impl_->scheduler().region_records(); }

const Config& Runtime::config() const { return impl_->config(); }

Runtime& default_runtime() {
    static Runtime rt;
    return rt;
}

Array zeros(const Shape& shape, DType dtype) { return default_runtime().zeros(shape, dtype); }
Array ones(const Shape& shape, DType dtype) { return default_runtime().ones(shape, dtype); }
Array fill(double value, const Shape& shape, DType dtype) { return default_runtime().fill(value, shape, dtype); }
Array linspace(double a, double b, std::int64_t n) { return default_runtime().linspace(a, b, n); }
Array colon(double a, double b) { return default_runtime().colon(a, b); }
Array colon(double a, double step, double b) { return default_runtime().colon(a, step, b); }

// ---- Array ------------------------------------------------------------------------------

const Shape& Array::shape() const { return (detail::runtime_of(*this), node_->shape); }
DType Array::dtype() const { return (detail::runtime_of(*this), node_->dtype); }
Runtime& Array::runtime() const { return detail::runtime_of(*this).owner(); }
bool Array::device_requested() const { return (detail::runtime_of(*this), node_->device_requested); }

Future<HostArray> Array::gather() const {
    detail::RuntimeImpl& rt = detail::runtime_of(*this);
    return detail::continue_through(
        rt.scheduler().gather({node_}, true).then([](const std::vector<HostArray>& v) { return v.front(); }),
        rt.continuations().poster());
}

std::string Array::describe() const {
    detail::RuntimeImpl& rt = detail::runtime_of(*this);
    return rt.scheduler().locked([&] {
        std::ostringstream os;
        std::unordered_set<const detail::Node*> seen;
        std::vector<std::pair<const detail::Node*, int>> stack{{node_.get(), 0}};
        while (!stack.empty()) {
            auto [n, depth] = stack.back();
            stack.pop_back();
            os << std::string(static_cast<std::size_t>(depth) * 2, ' ') << "#" << n->id << " " << n->label();
            if (state(*n).eval.pending) os << " [in flight]";
            else if (state(*n).eval.value) os << " [computed]";
            else if (state(*n).eval.error) os << " [failed]";
            if (!seen.insert(n).second) {
                os << " (see above)\n";
                continue;
            }
            os << "\n";
            if (state(*n).eval.done()) continue;  // what a computed value keeps is its recipe, not the user's graph
            for (auto it = n->inputs.rbegin(); it != n->inputs.rend(); ++it) stack.emplace_back(it->get(), depth + 1);
        }
        return os.str();
    });
}

}  // namespace tandem
