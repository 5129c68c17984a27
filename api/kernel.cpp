// Buffers, command groups and queues (tandem/kernel.hpp) over the task graph: a buffer is the
// Kernel or Input node of its current version; a command group becomes Kernel nodes that read the
// versions it reads and are the versions it writes (and its completion token), so the graph's
// edges are its dependencies; a queue hands groups to the scheduler in batches.
#include "tandem/kernel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "graph/kernel_call.hpp"
#include "runtime/runtime_impl.hpp"

namespace tandem {

namespace detail {

struct BufferState {
    std::weak_ptr<RuntimeImpl> runtime;
    const RuntimeImpl* owner = nullptr;  // for telling runtimes apart (never dereferenced)
    Shape shape;
    DType dtype = DType::f64;
    std::string name;
    std::mutex mutex;
    std::shared_ptr<Node> current;  // its contents now; null until something writes it
    int host_writers = 0;           // writing host accessors alive
};

struct EventState {
    std::weak_ptr<QueueState> queue;
    std::shared_ptr<Node> token;              // what depends_on reads
    std::vector<std::shared_ptr<Node>> nodes;  // what the group computes, until it is sent
    std::mutex mutex;
    std::condition_variable sent_cv;
    Future<std::monostate> future;  // valid once sent to the scheduler
    std::exception_ptr error;       // a failure to send it (its runtime gone)
    bool future_has_error() const {
        try {
            future.get();
            return false;
        } catch (...) {
            return true;
        }
    }
};

struct QueueState : std::enable_shared_from_this<QueueState> {
    std::weak_ptr<RuntimeImpl> runtime;
    std::shared_ptr<BackgroundGate> gate;  // held across a flush (runtime/runtime_impl.hpp)
    const RuntimeImpl* owner = nullptr;
    QueueOptions options;
    std::mutex mutex;
    std::mutex flush_mutex;  // held by a flush, from taking the pending groups to planning them
    std::vector<std::shared_ptr<EventState>> pending;  // submitted, not sent yet
    bool flush_posted = false;
    std::shared_ptr<Node> last_token;                    // in order: what the next group follows
    std::vector<std::shared_ptr<EventState>> unwaited;  // for wait(): sent, not known to be done
    /// Sends the pending groups to the scheduler: one plan for all of them, then a future per group
    /// (a group's failure is its own).
    void flush();
};

struct HandlerState {
    std::shared_ptr<QueueState> queue;
    struct Request {
        std::shared_ptr<BufferState> buffer;
        AccessMode mode;
        bool no_init;
        int dtype_code;  // what the C++ body expects (-1: nothing)
    };
    std::vector<Request> requests;
    std::shared_ptr<std::deque<KernelBinding>> bindings;  // made at the first require (most groups of a loop have some; an empty one none)
    std::vector<std::shared_ptr<EventState>> depends;
    std::vector<double> scalars;
    bool has_work = false;
    Range range{1};
    const Kernel* kernel = nullptr;
    std::function<void(std::int64_t, std::int64_t)> cpu;
    bool host_task = false;
    int work_calls = 0;
};

struct HostAccessState {
    std::shared_ptr<BufferState> buffer;
    std::shared_ptr<RuntimeImpl> runtime;
    HostArray read;                    // a reading accessor's elements
    std::shared_ptr<Storage> written;  // a writing accessor's: the buffer's next version
    void* data = nullptr;
    std::int64_t count = 0, rows = 0;
};

}  // namespace detail

using detail::BufferState;
using detail::EventState;
using detail::HandlerState;
using detail::KernelCall;
using detail::Node;
using detail::QueueState;
using detail::BackgroundGate;
using detail::RuntimeImpl;

namespace {

std::uint64_t fnv(std::uint64_t h, const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
template <class T>
std::uint64_t fnv_value(std::uint64_t h, const T& v) {
    return fnv(h, &v, sizeof v);
}
std::uint64_t fnv_text(std::uint64_t h, const std::string& s) { return fnv(fnv_value(h, s.size()), s.data(), s.size()); }

std::string range_text(const Range& r) {
    std::string s = std::to_string(r.extent[0]);
    for (int d = 1; d < r.dims; ++d) s += "x" + std::to_string(r.extent[static_cast<std::size_t>(d)]);
    return s;
}

std::shared_ptr<RuntimeImpl> alive(const std::weak_ptr<RuntimeImpl>& rt, const std::string& what) {
    auto p = rt.lock();
    if (!p) throw KernelError(what + ": its runtime is gone (destroyed before it)");
    return p;
}

std::shared_ptr<BufferState> make_buffer(const std::weak_ptr<RuntimeImpl>& rt, const Shape& shape, DType dtype,
                                         std::string name) {
    static std::atomic<std::uint64_t> unnamed{0};
    auto s = std::make_shared<BufferState>();
    s->runtime = rt;
    s->owner = rt.lock().get();
    s->shape = shape;
    s->dtype = dtype;
    s->name = name.empty() ? "buffer #" + std::to_string(++unnamed) : std::move(name);
    return s;
}

std::string buffer_text(const BufferState& b) {
    return "buffer '" + b.name + "' (" + b.shape.to_string() + " " + std::string(dtype_name(b.dtype)) + ")";
}

}  // namespace

// ---- Buffer -----------------------------------------------------------------------------------------

Buffer::Buffer(Runtime& rt, const Shape& shape, DType dtype, std::string name)
    : state_(make_buffer(rt.weak_impl(), shape, dtype, std::move(name))) {}

Buffer::Buffer(Runtime& rt, std::span<const double> data, const Shape& shape, std::string name)
    : Buffer(rt.array(data, shape), std::move(name)) {}
Buffer::Buffer(Runtime& rt, std::span<const float> data, const Shape& shape, std::string name)
    : Buffer(rt.array(data, shape), std::move(name)) {}
Buffer::Buffer(Runtime& rt, std::vector<double>&& data, const Shape& shape, std::string name)
    : Buffer(rt.adopt(std::move(data), shape), std::move(name)) {}
Buffer::Buffer(Runtime& rt, std::vector<float>&& data, const Shape& shape, std::string name)
    : Buffer(rt.adopt(std::move(data), shape), std::move(name)) {}

Buffer::Buffer(const Array& a, std::string name) {
    if (!a.valid()) throw Error("tandem::Buffer: made from a null tandem::Array");
    state_ = make_buffer(a.runtime().weak_impl(), a.shape(), a.dtype(), std::move(name));
    state_->current = a.node();
}

Array Buffer::array() const {
    alive(state_->runtime, buffer_text(*state_));
    std::lock_guard lock(state_->mutex);
    if (!state_->current) throw KernelError(buffer_text(*state_) + " is read before anything wrote it");
    return Array(state_->current);
}

void Buffer::assign(const Array& a) {
    if (!a.valid()) throw Error("tandem::Buffer::assign: a null tandem::Array");
    if (&detail::runtime_of(a) != state_->owner) throw KernelError(buffer_text(*state_) + ": assigned an array of another runtime");
    if (a.shape() != state_->shape || a.dtype() != state_->dtype)
        throw ShapeError(buffer_text(*state_) + ": assigned a " + a.shape().to_string() + " " + std::string(dtype_name(a.dtype())) + " array");
    std::lock_guard lock(state_->mutex);
    if (state_->host_writers > 0) throw KernelError(buffer_text(*state_) + ": assigned while a host accessor writes it");
    state_->current = a.node();
}

const Shape& Buffer::shape() const { return state_->shape; }
DType Buffer::dtype() const { return state_->dtype; }
const std::string& Buffer::name() const { return state_->name; }

// ---- Kernel -----------------------------------------------------------------------------------------

Kernel::Kernel(std::string name) : name_(std::move(name)) {
    if (name_.empty()) throw KernelError("tandem::Kernel: a kernel needs a name (for messages and traces)");
    resign();
}
Kernel& Kernel::glsl(std::string body) { return glsl_ = std::move(body), resign(), *this; }
Kernel& Kernel::accessors(std::vector<std::string> names) { return accessor_names_ = std::move(names), resign(), *this; }
Kernel& Kernel::scalars(std::vector<std::string> names) {
    return scalar_names_ = std::move(names), scalars_f32_ = false, resign(), *this;
}
Kernel& Kernel::scalars_f32(std::vector<std::string> names) {
    return scalar_names_ = std::move(names), scalars_f32_ = true, resign(), *this;
}
Kernel& Kernel::cost(double flops_per_item, double bytes_per_item) {
    if (!(flops_per_item >= 0)) throw KernelError("kernel '" + name_ + "': cost: flops per item must be >= 0");
    return flops_ = flops_per_item, bytes_ = bytes_per_item < 0 ? -1 : bytes_per_item, resign(), *this;
}
Kernel& Kernel::prefer(KernelPlacement where) { return prefer_ = where, resign(), *this; }

void Kernel::resign() {
    std::uint64_t h = 0xcbf29ce484222325ull;
    h = fnv_text(fnv_text(h, name_), glsl_);
    for (const auto& n : accessor_names_) h = fnv_text(h, n);
    for (const auto& n : scalar_names_) h = fnv_text(h, n);
    h = fnv_value(fnv_value(fnv_value(fnv_value(h, scalars_f32_), flops_), bytes_), prefer_);
    signature_ = h;
}

// ---- Event ------------------------------------------------------------------------------------------

Future<std::monostate> Event::future() const {
    if (!state_) throw Error("tandem::Event: an empty event (default-constructed)");
    {
        std::lock_guard lock(state_->mutex);
        if (state_->future.valid()) return state_->future;
        if (state_->error) std::rethrow_exception(state_->error);
    }
    if (auto q = state_->queue.lock()) q->flush();  // sends it (or another thread is sending it now)
    std::unique_lock lock(state_->mutex);
    state_->sent_cv.wait(lock, [&] { return state_->future.valid() || state_->error; });
    if (state_->error) std::rethrow_exception(state_->error);
    return state_->future;
}

void Event::wait() const { future().get(); }
bool Event::ready() const {
    if (!state_) return false;
    std::lock_guard lock(state_->mutex);
    return state_->future.valid() && state_->future.ready();
}

// ---- Handler ----------------------------------------------------------------------------------------

detail::KernelBinding* Handler::add_access(Buffer& buffer, AccessMode mode, bool skip_old, int dtype_code,
                                           std::array<std::int64_t, 3>& extents, std::size_t& index) {
    if (!buffer.state()) throw Error("tandem::Handler::require: a moved-from tandem::Buffer");
    const Shape& shape = buffer.shape();
    extents = {1, 1, 1};
    for (int d = 0; d < shape.ndims(); ++d) extents[static_cast<std::size_t>(std::min(d, 2))] *= shape[d];
    index = s_->requests.size();
    s_->requests.push_back({buffer.state(), mode, skip_old, dtype_code});
    if (!s_->bindings) s_->bindings = std::make_shared<std::deque<detail::KernelBinding>>();
    return &s_->bindings->emplace_back();
}

void Handler::depends_on(const Event& e) {
    if (!e.valid()) throw Error("tandem::Handler::depends_on: an empty event");
    s_->depends.push_back(e.state());
}
void Handler::depends_on(const std::vector<Event>& events) {
    for (const Event& e : events) depends_on(e);
}
void Handler::scalars(std::vector<double> values) { s_->scalars = std::move(values); }

void Handler::set_work(Range range, const Kernel* kernel, ChunkBody cpu, bool host_task) {
    ++s_->work_calls;
    s_->has_work = true;
    s_->range = range;
    s_->kernel = kernel;
    s_->cpu = std::move(cpu);
    s_->host_task = host_task;
}

// ---- Queue ------------------------------------------------------------------------------------------

Queue::Queue(Runtime& rt, QueueOptions options) : state_(std::make_shared<QueueState>()) {
    state_->runtime = rt.weak_impl();
    state_->owner = &rt.impl();
    state_->gate = rt.impl().gate();
    state_->options = options;
}

Queue::~Queue() {
    try {
        state_->flush();
    } catch (...) {
        // (a destructor does not throw: the groups' events carry their errors)
    }
}

std::shared_ptr<HandlerState> Queue::begin() {
    auto h = std::make_shared<HandlerState>();
    h->queue = state_;
    return h;
}

namespace {

/// The group as the graph holds it, checked: what a kernel and its buffers must agree on.
std::shared_ptr<KernelCall> make_call(const HandlerState& h, const RuntimeImpl& rt) {
    auto call = std::make_shared<KernelCall>();
    const Kernel* k = h.kernel;
    call->name = k ? k->name() : h.host_task ? "host_task" : h.has_work ? "parallel_for" : "empty command group";
    const std::string who = k ? "kernel '" + call->name + "'" : call->name;
    if (h.work_calls > 1) throw KernelError(who + ": a command group does one parallel_for or host_task (this one did " +
                                            std::to_string(h.work_calls) + ")");
    const Range& r = h.range;
    for (int d = 0; d < r.dims; ++d)
        if (r.extent[static_cast<std::size_t>(d)] < 0) throw KernelError(who + ": a negative extent in its range " + range_text(r));
    call->range = r.extent;
    call->range_dims = r.dims;
    call->cpu = h.cpu;
    call->host_task = h.host_task || !h.has_work;
    if (!h.has_work) call->cpu = [](std::int64_t, std::int64_t) {};  // only dependencies: a no-op on the CPU
    if (k) {
        call->glsl = k->glsl_body();
        call->accessor_names = k->accessor_names();
        call->scalar_names = k->scalar_names();
        call->scalars_f32 = k->scalars_are_f32();
        call->flops_per_item = k->flops_per_item();
        call->bytes_per_item = k->bytes_per_item();
        call->prefer = k->preference();
    }
    call->scalars = h.scalars;
    call->bindings = h.bindings;
    if (call->has_glsl()) {
        if (call->accessor_names.size() != h.requests.size())
            throw KernelError(who + ": its GLSL body names " + std::to_string(call->accessor_names.size()) +
                              " accessors (Kernel::accessors) and the group requires " + std::to_string(h.requests.size()) + " buffers");
        if (call->scalar_names.size() != call->scalars.size())
            throw KernelError(who + ": its GLSL body names " + std::to_string(call->scalar_names.size()) +
                              " scalars (Kernel::scalars) and the group gives " + std::to_string(call->scalars.size()) +
                              " (Handler::scalars)");
        if (rt.devices().empty() && !call->has_cpu())
            throw KernelError(who + " has only a GLSL body and this runtime has no device (" +
                              (rt.device_note().empty() ? std::string("TANDEM_DEVICE=cpu") : rt.device_note()) + ")");
        if (!call->has_cpu() && static_cast<std::uint64_t>(r.size()) >= (1ull << 32))
            throw KernelError(who + ": a range of 2^32 items or more (" + range_text(r) + ") for a GLSL-only kernel");
    }
    for (std::size_t a = 0; a < h.requests.size(); ++a) {
        const auto& req = h.requests[a];
        const BufferState& b = *req.buffer;
        if (req.dtype_code >= 0 && static_cast<DType>(req.dtype_code) != b.dtype)
            throw KernelError(who + ": accessor " + std::to_string(a) + " of " + buffer_text(b) + " is for " +
                              std::string(dtype_name(static_cast<DType>(req.dtype_code))) + " elements");
        for (std::size_t o = 0; o < a; ++o)
            if (h.requests[o].buffer == req.buffer)
                throw KernelError(who + " requires " + buffer_text(b) + " twice: one accessor per buffer (read_write to read and write it)");
        if (req.mode != AccessMode::read && static_cast<std::uint64_t>(b.shape.numel()) < static_cast<std::uint64_t>(r.size()))
            throw KernelError(who + ": its range " + range_text(r) + " (" + std::to_string(r.size()) + " items) is larger than " +
                              buffer_text(b) + ", which it writes");
        if (call->has_glsl() && !call->has_cpu() && static_cast<std::uint64_t>(b.shape.numel()) >= (1ull << 32))
            throw KernelError(who + ": " + buffer_text(b) + " has 2^32 elements or more (GLSL indices are 32-bit)");
        detail::KernelAccess acc;
        acc.buffer = b.name;
        acc.dtype = b.dtype;
        acc.shape = b.shape;
        acc.mode = req.mode;
        acc.no_init = req.no_init;
        call->accesses.push_back(std::move(acc));
    }
    // Its structure: what fusion's cache and the device's kernel cache key on.
    std::uint64_t s = fnv_value(0xcbf29ce484222325ull, k ? k->signature() : 0);
    s = fnv_text(s, call->name);
    s = fnv_value(fnv_value(fnv_value(s, call->range), call->range_dims), call->has_cpu());
    s = fnv_value(fnv_value(s, call->host_task), call->scalars.size());
    for (const auto& acc : call->accesses) {
        s = fnv_value(fnv_value(fnv_value(s, acc.dtype), acc.mode), acc.no_init);
        for (int d = 0; d < acc.shape.ndims(); ++d) s = fnv_value(s, acc.shape[d]);
    }
    call->structure = s;
    return call;
}

}  // namespace

Event Queue::end(std::shared_ptr<HandlerState> h) {
    auto rt = alive(state_->runtime, "tandem::Queue::submit");
    auto call = make_call(*h, *rt);
    const std::string who = call->label();
    for (const auto& req : h->requests)
        if (req.buffer->owner != state_->owner || !req.buffer->runtime.lock())
            throw KernelError(who + ": " + buffer_text(*req.buffer) +
                              (req.buffer->runtime.lock() ? " belongs to another runtime" : " belongs to a runtime that is gone"));
    // The buffers' versions are read and replaced at once for the whole group (in a fixed order:
    // groups submitted from several threads never see half of another's writes).
    std::vector<BufferState*> order;
    for (const auto& req : h->requests) order.push_back(req.buffer.get());
    std::sort(order.begin(), order.end());
    std::vector<std::unique_lock<std::mutex>> locks;
    for (BufferState* b : order) locks.emplace_back(b->mutex);
    std::vector<std::shared_ptr<Node>> inputs;
    std::size_t written = 0;
    for (std::size_t a = 0; a < h->requests.size(); ++a) {
        const auto& req = h->requests[a];
        BufferState& b = *req.buffer;
        detail::KernelAccess& acc = call->accesses[a];
        if (b.host_writers > 0) throw KernelError(who + ": " + buffer_text(b) + " is being written by a host accessor");
        const bool reads = req.mode == AccessMode::read || (req.mode == AccessMode::read_write && !req.no_init);
        if (reads) {
            if (!b.current) throw KernelError(who + " reads " + buffer_text(b) + " before anything wrote it");
            acc.input = static_cast<int>(inputs.size());
            inputs.push_back(b.current);
        }
        if (req.mode != AccessMode::read) acc.output = static_cast<int>(written++);
    }
    call->written = written;
    for (const auto& e : h->depends)
        if (e->token) inputs.push_back(e->token);
    // In order: the group follows the last one and becomes the last at once (threads submitting
    // to one in-order queue make one chain).
    std::unique_lock queue_lock(state_->mutex, std::defer_lock);
    if (state_->options.in_order) {
        queue_lock.lock();
        if (state_->last_token) inputs.push_back(state_->last_token);
    }
    std::shared_ptr<const KernelCall> shared = call;
    auto ev = std::make_shared<EventState>();
    ev->queue = state_;
    std::vector<std::shared_ptr<Node>> outputs;
    for (std::size_t a = 0; a < call->accesses.size(); ++a) {
        const detail::KernelAccess& acc = call->accesses[a];
        if (!acc.writes()) continue;
        auto n = rt->nodes().make_kernel(shared, static_cast<std::size_t>(acc.output), acc.dtype, acc.shape, inputs);
        h->requests[a].buffer->current = n;
        outputs.push_back(std::move(n));
    }
    ev->token = rt->nodes().make_kernel(shared, written, DType::logical, Shape{1, 1}, inputs);
    outputs.push_back(ev->token);
    for (const auto& n : outputs) call->outputs.push_back(n);
    ev->nodes = std::move(outputs);
    locks.clear();
    if (!queue_lock.owns_lock()) queue_lock.lock();
    if (state_->options.in_order) state_->last_token = ev->token;
    state_->pending.push_back(ev);
    const bool post = !std::exchange(state_->flush_posted, true);
    queue_lock.unlock();
    // Sent in the background (a group commit: what is pending when the thread gets to it).
    if (post) rt->continuations().post([q = std::weak_ptr<QueueState>(state_)] {
        if (auto s = q.lock()) s->flush();
    });
    return Event(ev);
}

void QueueState::flush() {
    // One flush at a time: the groups are planned in the order they were submitted.
    std::lock_guard sending(flush_mutex);
    std::vector<std::shared_ptr<EventState>> groups;
    {
        std::lock_guard lock(mutex);
        groups.swap(pending);
        flush_posted = false;
    }
    if (groups.empty()) return;
    // The runtime is held only inside the gate: its owner waits for us before letting go of it.
    const bool entered = gate->enter();
    struct Leave {
        BackgroundGate* gate;
        std::shared_ptr<RuntimeImpl>* rt;
        ~Leave() {
            rt->reset();  // (first: never the last reference)
            if (gate) gate->leave();
        }
    };
    std::shared_ptr<RuntimeImpl> rt = entered ? runtime.lock() : nullptr;
    Leave leave{entered ? gate.get() : nullptr, &rt};
    auto settle = [&](const std::shared_ptr<EventState>& e, Future<std::monostate> f, std::exception_ptr error) {
        {
            std::lock_guard lock(e->mutex);
            e->future = std::move(f);
            e->error = error;
            e->nodes.clear();
        }
        e->sent_cv.notify_all();
    };
    if (!rt) {
        auto gone = std::make_exception_ptr(KernelError("tandem::Queue: its runtime is gone; the command group never ran"));
        for (auto& e : groups) settle(e, {}, gone);
        return;
    }
    // The scheduler takes the groups' nodes: held here until the plan's regions are recorded,
    // every result of a long flush would stay alive (with its device memory) until the last.
    std::vector<std::vector<std::shared_ptr<Node>>> nodes;
    for (auto& e : groups) {
        std::lock_guard l(e->mutex);
        nodes.push_back(std::move(e->nodes));
        e->nodes.clear();
    }
    std::vector<Future<std::monostate>> done = rt->scheduler().evaluate_groups(std::move(nodes));  // one plan
    for (std::size_t k = 0; k < groups.size(); ++k)
        settle(groups[k], detail::continue_through(done[k], rt->continuations().poster()), nullptr);
    std::lock_guard lock(mutex);
    // wait() needs only those not known to be done well.
    std::erase_if(unwaited, [](const std::shared_ptr<EventState>& e) {
        std::lock_guard l(e->mutex);
        return e->future.valid() && e->future.ready() && !e->future_has_error();
    });
    unwaited.insert(unwaited.end(), groups.begin(), groups.end());
}

void Queue::flush() { state_->flush(); }

void Queue::wait() {
    state_->flush();
    std::vector<std::shared_ptr<EventState>> events;
    {
        std::lock_guard lock(state_->mutex);
        events.swap(state_->unwaited);
    }
    std::exception_ptr first;
    for (auto& e : events) {
        try {
            Event(e).wait();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    if (first) std::rethrow_exception(first);
}

// ---- host accessors ---------------------------------------------------------------------------------

namespace detail {

std::shared_ptr<HostAccessState> host_open(Buffer& b, AccessMode mode, int dtype_code) {
    auto s = std::make_shared<HostAccessState>();
    s->buffer = b.state();
    BufferState& bs = *s->buffer;
    s->runtime = alive(bs.runtime, "tandem::HostAccessor of " + buffer_text(bs));
    if (static_cast<DType>(dtype_code) != bs.dtype)
        throw KernelError("tandem::HostAccessor of " + buffer_text(bs) + ": for " + std::string(dtype_name(static_cast<DType>(dtype_code))) + " elements");
    s->count = bs.shape.numel();
    s->rows = bs.shape.ndims() > 0 ? bs.shape[0] : 1;
    std::shared_ptr<Node> current;
    {
        std::lock_guard lock(bs.mutex);
        if (bs.host_writers > 0) throw KernelError("tandem::HostAccessor of " + buffer_text(bs) + ": a writing host accessor of it is alive");
        current = bs.current;
    }
    const bool reads = mode != AccessMode::write;
    if (reads && !current) throw KernelError("tandem::HostAccessor of " + buffer_text(bs) + ": read before anything wrote it");
    if (reads) s->read = Array(current).gather().get();  // waits for the groups that write it
    if (mode == AccessMode::read) {
        s->data = const_cast<void*>(static_cast<const void*>(s->read.storage() ? s->read.storage()->data() : nullptr));
        return s;
    }
    const std::size_t bytes = static_cast<std::size_t>(s->count) * dtype_size(bs.dtype);
    s->written = s->runtime->pool().allocate(bytes, "host accessor of " + bs.name);
    if (reads && bytes > 0) std::memcpy(s->written->data(), s->read.storage()->data(), bytes);
    s->read = HostArray();
    s->data = s->written->data();
    std::lock_guard lock(bs.mutex);
    ++bs.host_writers;
    return s;
}

void host_close(HostAccessState& s) noexcept {
    if (!s.written) return;
    BufferState& bs = *s.buffer;
    std::shared_ptr<Node> next;
    try {
        next = s.runtime->input(bs.dtype, bs.shape, std::move(s.written));
    } catch (...) {
        // (out of memory for a node: the buffer keeps its last version)
    }
    std::lock_guard lock(bs.mutex);
    --bs.host_writers;
    if (next) bs.current = std::move(next);
}

void* host_elements(const HostAccessState& s) noexcept { return s.data; }
std::int64_t host_count(const HostAccessState& s) noexcept { return s.count; }
std::int64_t host_rows(const HostAccessState& s) noexcept { return s.rows; }

}  // namespace detail

}  // namespace tandem

namespace tandem::detail {

std::string KernelCall::label() const {
    std::string r = std::to_string(range[0]);
    for (int d = 1; d < range_dims; ++d) r += "x" + std::to_string(range[static_cast<std::size_t>(d)]);
    return (host_task ? name : "kernel '" + name + "'") + " over " + r;
}

}  // namespace tandem::detail
