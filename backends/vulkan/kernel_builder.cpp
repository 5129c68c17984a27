// The kernel builder (see kernel_builder.hpp).
#include "backends/vulkan/kernel_builder.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>


namespace tandem::detail::vk {

/// What decides the generated kernel: the ops and types of the program, where each argument
/// comes from, how each input is read, and whether 32-bit indices suffice. Not the sizes and not
/// the scalar values: those are arguments. Far cheaper to form than the GLSL itself.
/// `reduce_variant`: 0 for a contiguous reduce kernel (1024: one finishing whole outputs), else
/// the strided plan's lanes an invocation.
std::string signature(const Region& r, const std::vector<InputAccess>& access, const std::vector<InputWalk>& walks,
                      std::uint64_t reduce_variant) {
    std::string s;
    s.reserve(16 * r.program.size() + 8 * r.inputs.size() + 16);
    auto put = [&](std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(r.shape.numel() < (std::int64_t{1} << 31));
    for (auto& in : r.inputs) put(static_cast<std::uint64_t>(in->dtype));
    for (std::size_t k = 0; k < access.size(); ++k) {
        put(static_cast<std::uint64_t>(access[k]) << 32 | walk_letters(walks[k]).size());
        s += walks[k];
    }
    auto instructions = [&](const std::vector<Instr>& program, std::uint64_t tag) {
        for (const Instr& ins : program) {
            put(static_cast<std::uint64_t>(ins.op) | static_cast<std::uint64_t>(ins.dtype) << 8 |
                static_cast<std::uint64_t>(ins.compute) << 16 | tag << 32);
            for (int k = 0; k < op_info(ins.op).arity; ++k) {
                const Arg& a = ins.args[static_cast<std::size_t>(k)];
                put(static_cast<std::uint64_t>(a.kind) | static_cast<std::uint64_t>(a.dtype) << 8 |
                    static_cast<std::uint64_t>(a.kind == Arg::Kind::Scalar ? 0 : a.index) << 16);
            }
        }
    };
    instructions(r.program, 0);
    for (auto& o : r.outputs) put(o.value | static_cast<std::uint64_t>(o.node->dtype) << 32);
    if (r.is_reduce()) {
        put(0x5245445543450000ull | reduce_variant);
        for (const Reduction& red : r.reductions) put(static_cast<std::uint64_t>(red.op) << 32 | red.value);
        instructions(r.tail, 0x7A11);  // tagged: the tail's instructions are never the program's
    }
    return s;
}

namespace {

std::string fixed_slot_key(const std::string& key) { return std::string("\x01fixed:") + key; }
/// A split reduction's second pass, built ahead as a task of its own.
std::string combine_key(const std::string& signature) { return "combine " + signature; }

/// The second pass of a split reduction, as a kernel of its own.
Kernel combine_kernel(const Kernel& k) {
    Kernel second = k;
    second.glsl = k.combine_glsl;
    second.key = k.combine_key;
    return second;
}

}  // namespace

KernelBuilder::KernelBuilder(PipelineCache& pipelines, const CodegenOptions& codegen, double expected_build_s,
                             double expected_load_s, double expected_fixed_s)
    : pipelines_(pipelines),
      codegen_(codegen),
      expected_build_s_(expected_build_s),
      expected_load_s_(expected_load_s),
      expected_fixed_s_(expected_fixed_s),
      max_threads_(std::clamp<std::size_t>(std::thread::hardware_concurrency() / 4, 1, 4)) {}

KernelBuilder::~KernelBuilder() { stop(); }

void KernelBuilder::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
    std::lock_guard lock(mutex_);
    queue_.clear();  // not begun: a recording that needs one builds it itself
}

KernelBuilder::Slot& KernelBuilder::slot(const std::string& sig, const Region& r, const std::vector<InputAccess>& access,
                                         const std::vector<InputWalk>& walks, bool& fresh) {
    fresh = false;
    {
        std::lock_guard lock(mutex_);
        if (auto it = slots_.find(sig); it != slots_.end()) return *it->second;
    }
    // Generated outside the lock (tens of microseconds); a thread that raced us keeps its own.
    auto s = std::make_unique<Slot>();
    s->entry.kernel = generate(r, access, walks, codegen_);
    s->entry.pipeline = s->promise.get_future().share();
    s->cached = pipelines_.cached(s->entry.kernel);
    s->combine_cached = !s->entry.kernel.combine_glsl.empty() && pipelines_.cached(combine_kernel(s->entry.kernel));
    std::lock_guard lock(mutex_);
    auto [it, inserted] = slots_.try_emplace(sig, std::move(s));
    fresh = inserted;
    return *it->second;
}

void KernelBuilder::build(Slot& s) {
    const auto t0 = std::chrono::steady_clock::now();
    if (extra_build_time_.count() > 0) std::this_thread::sleep_for(extra_build_time_);  // a slow driver (tests)
    if (s.fixed) {
        try {
            s.fixed();
        } catch (const std::exception&) {
            // The recording that needs it builds it again, and fails then.
        }
        s.promise.set_value(nullptr);
    } else {
        try {
            s.promise.set_value(&pipelines_.get(s.entry.kernel));
        } catch (...) {
            s.promise.set_exception(std::current_exception());
            return;
        }
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(mutex_);
    double& expected = s.fixed ? expected_fixed_s_ : s.cached ? expected_load_s_ : expected_build_s_;
    expected = 0.75 * expected + 0.25 * took;  // recent builds count most
}

std::shared_ptr<const KernelBuilder::Form> KernelBuilder::form(const Region& r, std::vector<InputAccess> access,
                                                               std::vector<InputWalk> walks, std::uint64_t reduce_variant) {
    forms_.fetch_add(1, std::memory_order_relaxed);
    auto f = std::make_shared<Form>();
    f->signature = signature(r, access, walks, reduce_variant);
    bool fresh = false;
    f->slot = &slot(f->signature, r, access, walks, fresh);
    f->access = std::move(access);
    f->walks = std::move(walks);
    f->reduce_variant = reduce_variant;
    return f;
}

KernelBuilder::Entry& KernelBuilder::get(const Form& f) {
    Slot& s = *f.slot;
    bool mine = false;
    {
        std::lock_guard lock(mutex_);
        if (!s.started_set) {
            // Queued ahead of time but not begun (or dropped by stop()): built here rather than
            // behind the queue.
            if (auto it = std::find(queue_.begin(), queue_.end(), &s); it != queue_.end()) queue_.erase(it);
            mine = true;
        }
        if (mine) {
            s.started = std::chrono::steady_clock::now();
            s.started_set = true;
        }
    }
    if (mine) build(s);  // (a split reduction's combine pass: when first needed)
    s.entry.pipeline.get();  // waits for a build under way; throws what it threw
    return s.entry;
}

KernelBuilder::Entry* KernelBuilder::get_if_built(const Region& r, const Form& f) {
    Slot& s = *f.slot;
    if (s.entry.pipeline.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
    if (!s.entry.combine.load() && reduce_partial_bytes(r, s.entry.kernel) > 0) return nullptr;
    return &s.entry;
}

const ComputePipeline& KernelBuilder::combine(Entry& e) {
    // Built once, outside the builder's lock: a compile takes long (1.6 s seen on the H100), and
    // placement asks the builder about other kernels meanwhile.
    std::call_once(e.combine_once, [&] { e.combine.store(&pipelines_.get(combine_kernel(e.kernel))); });
    return *e.combine.load();
}

double KernelBuilder::wait_s(const Region& r, const Form& f) {
    const Slot& s = *f.slot;
    const std::string& sig = f.signature;
    // A split reduction also waits for its second pass (when not built with it).
    const bool combine_cold = !s.entry.combine.load() && reduce_partial_bytes(r, s.entry.kernel) > 0;
    std::lock_guard lock(mutex_);
    const double combine_s =
        combine_cold ? task_wait_s(combine_key(sig), s.combine_cached ? expected_load_s_ : expected_build_s_) : 0.0;
    if (s.entry.pipeline.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return combine_s;
    if (!s.started_set) return queued_s(s, expected_s(s)) + combine_s;  // not begun
    return remaining_s(s, expected_s(s)) + combine_s;
}

void KernelBuilder::prepare(const Region& r, const Form& f) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
    }
    Slot& s = *f.slot;
    const std::string& sig = f.signature;
    {
        std::lock_guard lock(mutex_);
        // Not stopped meanwhile (then built when first recorded), begun or queued already.
        if (!stopping_ && !s.started_set && std::find(queue_.begin(), queue_.end(), &s) == queue_.end()) {
            prepared_.fetch_add(1, std::memory_order_relaxed);
            queue_.push_back(&s);
            start_thread_locked();
        }
    }
    cv_.notify_one();
    // A reduction this large is split: its second pass too, a kernel of its own, after it.
    if (reduce_partial_bytes(r, s.entry.kernel) > 0 && !s.entry.combine.load())
        prepare_fixed(combine_key(sig), [this, &s] { combine(s.entry); });
}

void KernelBuilder::start_thread_locked() {
    // Builds run side by side (glslang and the driver compile concurrently): a program's kernels
    // are ready sooner than one at a time (the NVIDIA driver takes 0.1-0.5 s for some).
    if (threads_.size() < max_threads_ && queue_.size() > idle_threads_)
        threads_.emplace_back([this] { run(); });
}

double KernelBuilder::queued_s(const Slot& s, double expected) const {
    // Behind the builds queued before it, which the threads take in turn.
    const auto it = std::find(queue_.begin(), queue_.end(), &s);
    if (it == queue_.end()) return expected;  // never prepared: the recording builds it
    const auto ahead = static_cast<double>(it - queue_.begin());
    return expected * (1.0 + std::floor(ahead / static_cast<double>(std::max<std::size_t>(1, max_threads_))));
}

double KernelBuilder::remaining_s(const Slot& s, double expected) {
    // A build that has run past what builds took so far is taken to need as long again: an
    // expectation too low (the first builds on a driver slower to compile) would otherwise
    // send a recording to wait behind it (1.3 s seen on the H200).
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
    return std::max(expected - elapsed, elapsed);
}

double KernelBuilder::task_wait_s(const std::string& key, double expected) const {
    auto it = slots_.find(fixed_slot_key(key));
    if (it == slots_.end()) return expected;
    if (!it->second->started_set) return queued_s(*it->second, expected);
    const Slot& s = *it->second;
    if (s.entry.pipeline.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return 0.0;
    return remaining_s(s, expected);
}

double KernelBuilder::fixed_wait_s(const std::string& key) const {
    std::lock_guard lock(mutex_);
    return task_wait_s(key, expected_fixed_s_);
}

void KernelBuilder::prepare_fixed(const std::string& key, std::function<void()> build) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        auto [it, fresh] = slots_.try_emplace(fixed_slot_key(key));
        if (!fresh) return;
        it->second = std::make_unique<Slot>();
        Slot& s = *it->second;
        s.fixed = std::move(build);
        s.entry.pipeline = s.promise.get_future().share();
        prepared_.fetch_add(1, std::memory_order_relaxed);
        queue_.push_back(&s);
        start_thread_locked();
    }
    cv_.notify_one();
}

double KernelBuilder::expected_build_s() const {
    std::lock_guard lock(mutex_);
    return expected_build_s_;
}

void KernelBuilder::run() {
    for (;;) {
        Slot* s = nullptr;
        {
            std::unique_lock lock(mutex_);
            ++idle_threads_;
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            --idle_threads_;
            if (stopping_) return;
            s = queue_.front();
            queue_.pop_front();
            s->started = std::chrono::steady_clock::now();
            s->started_set = true;
            ++building_;
        }
        build(*s);
        {
            std::lock_guard lock(mutex_);
            --building_;
        }
        idle_cv_.notify_all();
    }
}

bool KernelBuilder::finish(std::chrono::milliseconds budget) {
    std::unique_lock lock(mutex_);
    return idle_cv_.wait_for(lock, budget, [&] { return queue_.empty() && building_ == 0; });
}

}  // namespace tandem::detail::vk
