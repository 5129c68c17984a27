#include "runtime/runtime_impl.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include "runtime/topology.hpp"
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
SchedulerOptions scheduler_options(const Config& c, int threads) {
    SchedulerOptions o;
    o.threads = threads;
    o.fuse = c.fusion;
    o.log_graph = c.log.find("graph") != std::string::npos;
    o.log_exec = c.log.find("exec") != std::string::npos;
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
      scheduler_(std::make_unique<Scheduler>(*cpu_, nullptr, 0, scheduler_options(config_, threads_))) {}

std::shared_ptr<Node> RuntimeImpl::input(DType dtype, const Shape& shape, std::shared_ptr<Storage> storage) {
    return nodes_.make_input(dtype, shape, std::move(storage));
}

RuntimeImpl& runtime_of(const Array& a) {
    if (!a.valid()) throw Error("use of a null tandem::Array (default-constructed or moved from)");
    return *a.node()->runtime;
}

}  // namespace detail

using detail::RuntimeImpl;

Runtime::Runtime() : Runtime(Config::from_environment()) {}
Runtime::Runtime(Config config) : impl_(std::make_shared<RuntimeImpl>(*this, std::move(config))) {}
Runtime::~Runtime() { impl_->scheduler().wait_idle(); }

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
    std::int64_t n = 0;
    if (step != 0 && !((step > 0 && a > b) || (step < 0 && a < b))) {
        double count = std::floor((b - a) / step * (1 + 4 * std::numeric_limits<double>::epsilon())) + 1;
        if (!std::isfinite(count) || count > 9.0e15)
            throw ValueError("colon: the range " + std::to_string(a) + ":" + std::to_string(step) + ":" +
                             std::to_string(b) + " has too many elements");
        n = static_cast<std::int64_t>(count);
    }
    return Array(impl_->nodes().make(detail::OpKind::Colon, DType::f64, Shape{1, n}, {}, {a, step, 0}));
}

Future<std::vector<HostArray>> Runtime::gather(const std::vector<Array>& values) {
    std::vector<std::shared_ptr<detail::Node>> nodes;
    nodes.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (!values[i].valid()) throw Error("gather: value " + std::to_string(i) + " is a null tandem::Array");
        if (values[i].node()->runtime != impl_.get())
            throw ValueError("gather: value " + std::to_string(i) + " belongs to another runtime");
        nodes.push_back(values[i].node());
    }
    return impl_->scheduler().gather(nodes);
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
    i.devices_note = "this build has no GPU backend yet (the Vulkan backend is the next milestone); all work runs on the CPU";
    return i;
}

Metrics Runtime::metrics() const {
    Metrics m;
    impl_->scheduler().add_metrics(m);
    auto s = impl_->pool().stats();
    m.host_bytes_allocated = s.bytes_allocated;
    m.host_pool_hits = s.hits;
    return m;
}

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

Future<HostArray> Array::gather() const {
    return runtime().gather({*this}).then([](const std::vector<HostArray>& v) { return v.front(); });
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
            if (n->eval.pending) os << " [in flight]";
            else if (n->eval.value) os << " [computed]";
            else if (n->eval.error) os << " [failed]";
            if (!seen.insert(n).second) {
                os << " (see above)\n";
                continue;
            }
            os << "\n";
            for (auto it = n->inputs.rbegin(); it != n->inputs.rend(); ++it) stack.emplace_back(it->get(), depth + 1);
        }
        return os.str();
    });
}

}  // namespace tandem
