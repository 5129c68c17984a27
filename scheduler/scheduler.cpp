#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <cstring>
#include <bit>
#include <chrono>
#include <functional>
#include <optional>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <thread>
#include <typeinfo>
#include <utility>

#include "graph/kernel_call.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/streaming.hpp"
#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

/// Post-order walk from the targets over the nodes that are neither computed nor in flight:
/// the inputs of a pending node come before it. Iterative, since graphs built in loops are deep.
/// Marks each node it returns with `mark` and its position (Node::pass_mark, pass_index).
/// A computed node for which `revive` returns true (its value was lost; revive reset it) is
/// computed again, from its recipe.
template <class Revive>
std::vector<Node*> pending_nodes(const std::vector<std::shared_ptr<Node>>& targets, std::uint64_t mark, Revive revive) {
    std::vector<Node*> order;
    std::vector<std::pair<Node*, std::size_t>> stack;
    constexpr std::size_t kVisiting = SIZE_MAX;
    auto wanted = [&](Node* n) {
        if (n->pass_mark == mark || state(*n).eval.pending || (state(*n).eval.done() && !revive(n))) return false;
        n->pass_mark = mark;
        n->pass_index = kVisiting;
        return true;
    };
    for (auto& t : targets) {
        if (!wanted(t.get())) continue;
        stack.emplace_back(t.get(), 0);
        while (!stack.empty()) {
            auto& [n, next] = stack.back();
            if (next < n->inputs.size()) {
                Node* child = n->inputs[next++].get();
                if (wanted(child)) stack.emplace_back(child, 0);
            } else {
                Node* done = n;
                done->pass_index = order.size();
                order.push_back(done);
                stack.pop_back();
                // A command group's other values come with it (their operands are done's).
                if (done->op == OpKind::Kernel)
                    for (const auto& w : done->call->outputs)
                        if (auto sibling = w.lock(); sibling && wanted(sibling.get())) {
                            sibling->pass_index = order.size();
                            order.push_back(sibling.get());
                        }
            }
        }
    }
    return order;
}


/// A user kernel with no C++ body: a device that refuses or fails it fails the group.
bool cpu_cannot_run(const Region& r) { return r.kind == RegionKind::kernel && !r.call->has_cpu(); }

/// Whether the scheduler can compute `n` again: it is no user data, and it kept its operands
/// (its recipe) or needs none.
bool recomputable(const Node& n) {
    if (n.op == OpKind::Input) return false;
    const OpGroup g = op_info(n.op).group;
    return !n.inputs.empty() || g == OpGroup::Leaf || g == OpGroup::Generator;
}

}  // namespace

void Scheduler::report_fallback(const std::string& cause, const std::string& message) {
    {
        std::lock_guard lock(reported_mutex_);
        if (!reported_.insert(cause).second) return;
    }
    std::fprintf(stderr, "%s (said once: later regions that fall back for this reason do so silently; "
                 "metrics().device_fallbacks counts them)\n", message.c_str());
}

Scheduler::Scheduler(NodeTable& nodes, Backend& cpu, std::vector<Backend*> devices, const SchedulerOptions& options)
    : nodes_(nodes),
      placement_(cpu, devices, options.placement, options.min_device_elements, options.profile,
                 options.device_memory_budgets),
      options_(options), fusion_cache_(options.fusion_cache),
      outstanding_{0.0, std::vector<double>(devices.size(), 0.0), std::vector<double>(devices.size(), 0.0)},
      device_jobs_(devices.size(), 0),
      device_written_(devices.size(), 0),
      run_ahead_full_(devices.size(), false),
      trace_(options.trace_file.empty() ? nullptr : std::make_shared<Trace>(options.trace_file)),
      workers_(options.threads) {
    placement_.set_exploration(options.learn && options.placement == PlacementMode::automatic);
    placement_.set_split(options.split);
    for (Backend* d : devices) {
        const std::size_t o = d->ordinal();
        submitters_.push_back(std::make_unique<SubmitThread>());
        residency_.push_back(std::make_unique<ResidencyTable>(
            o < options.device_memory_budgets.size() ? options.device_memory_budgets[o] : 0, o));
        if (!trace_ && !options.learn) continue;
        d->set_activity_sink([trace = trace_, inbox = options.learn ? link_inbox_ : nullptr,
                              device = d->ordinal()](const Activity& a) {
            if (trace) trace->activity(a);
            // An upload's cost: its host side (the staging copy, the submit) and its copy (when
            // the device times its copy queue). A download's: from the host's request to the
            // data, the wait for the device's queue included (a round trip).
            double seconds = -1;
            if (a.kind == Activity::Kind::upload && a.host_ms >= 0) seconds = 1e-3 * (a.host_ms + std::max(a.device_ms, 0.0));
            if (a.kind == Activity::Kind::download) seconds = std::chrono::duration<double>(a.end - a.start).count();
            if (inbox && seconds > 0) {
                std::lock_guard lock(inbox->mutex);
                if (inbox->samples.size() < 4096)
                    inbox->samples.push_back({device, a.kind == Activity::Kind::upload, static_cast<std::int64_t>(a.bytes), seconds});
            }
        });
    }
}

Scheduler::~Scheduler() {
    wait_idle();
    nodes_.release_lineage();  // before the backends go (a recipe computed again holds its value)
}

void Scheduler::learn_link() {
    std::vector<LinkInbox::Sample> samples;
    {
        std::lock_guard lock(link_inbox_->mutex);
        samples.swap(link_inbox_->samples);
    }
    std::lock_guard model(model_mutex_);
    for (const LinkInbox::Sample& s : samples) placement_.learn_link(s.device, s.up, s.bytes, s.seconds);
}

void Scheduler::charge(Job& job, double seconds, double link_seconds, Outstanding& on) {
    job.charged_s = seconds;
    job.charged_link = job.placement.link;
    job.charged_link_s = job.charged_link >= 0 ? link_seconds : 0.0;
    on.add(job, 1.0);
}

void Scheduler::add_outstanding(const Job& job) { outstanding_.add(job, 1.0); }

void Scheduler::Outstanding::add(const Job& job, double sign) {
    // (Taken back, a count never goes below 0: predictions are not exact sums.)
    auto apply = [sign](double& count, double seconds) { count = std::max(0.0, count + sign * seconds); };
    if (job.charged_link >= 0) apply(link[static_cast<std::size_t>(job.charged_link)], job.charged_link_s);
    if (job.charged_s == 0) return;
    if (job.placement.split) {  // a piece on each of its devices
        for (std::size_t d = 0; d < device.size(); ++d)
            if (job.placement.split >> d & 1u) apply(device[d], job.charged_s);
    } else {
        apply(job.placement.backend->on_host() ? cpu : device[job.placement.backend->ordinal()], job.charged_s);
    }
}

void Scheduler::discharge(Job& job) {
    if (job.placement.exploring) {
        const Backend& b = *job.placement.backend;
        std::lock_guard model(model_mutex_);
        placement_.explored(job.region, b.on_host() ? kHost : static_cast<int>(b.ordinal()));
        job.placement.exploring = false;
    }
    outstanding_.add(job, -1.0);
    job.charged_link = -1;
    job.charged_link_s = 0;
    job.charged_s = 0;
}

Backend* Scheduler::faster_device(const Region& r) const {
    std::lock_guard model(model_mutex_);
    return placement_.faster_device(r);
}

std::string Scheduler::placement_text() const {
    if (!placement_.device()) return "cpu (no device)";
    std::string budget;
    if (placement_.devices().size() > 1) budget = "; " + std::to_string(placement_.devices().size()) + " devices";
    // each device's budget ("each" when they are alike)
    bool alike = true;
    for (const auto& t : residency_) alike = alike && t->budget() == residency_[0]->budget();
    for (std::size_t d = 0; d < residency_.size() && residency_[d]->budget() > 0; ++d) {
        char text[96];
        std::snprintf(text, sizeof text, "%s%.2f GiB", d == 0 ? "; device memory budget " : ", ",
                      static_cast<double>(residency_[d]->budget()) / (1u << 30));
        budget += text;
        if (alike) {
            if (residency_.size() > 1) budget += " each";
            break;
        }
    }
    const MachineProfile& p = placement_.profile();
    switch (placement_.mode()) {
        case PlacementMode::cpu: return "cpu (forced: TANDEM_PLACEMENT=cpu)" + budget;
        case PlacementMode::device: return "gpu (forced: TANDEM_PLACEMENT=gpu)" + budget;
        case PlacementMode::automatic: break;
    }
    std::string rates = p.cpu.name;
    for (std::size_t d = 0; d < placement_.devices().size(); ++d) {
        const DeviceProfile& dp = placement_.device_profile(d);
        rates += "; device " + std::to_string(d) + " " + dp.rates.name + ": " + dp.source;
    }
    return "auto: earliest predicted finish; rates from " + p.source + " (" + rates + ")" + budget;
}

std::string Scheduler::executor_name(const PlacementDecision& d) const {
    std::string name(d.backend->name());
    if (d.backend->on_host() || placement_.devices().size() < 2) return name;
    if (!d.split) return name + ":" + std::to_string(d.backend->ordinal());
    const char* sep = ":";
    for (std::size_t o = 0; o < placement_.devices().size(); ++o)
        if (d.split >> o & 1u) name += sep + std::to_string(o), sep = "+";
    return name;
}

void Scheduler::wait_idle() {
    {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [&] { return in_flight_ == 0 && active_ == 0; });
    }
    // Idle means the dropped graphs are gone too, but for their lineage (NodeTable::release_buried:
    // recipes no build can find, which hold no data but inputs only they read, or their values
    // when computed again after a lost device).
    nodes_.release_buried();
}

// Counts a thread in active_ for its scope (see active_).
struct Scheduler::ActiveScope {
    Scheduler& s;
    explicit ActiveScope(Scheduler& sched) : s(sched) {
        std::lock_guard lock(s.mutex_);
        ++s.active_;
    }
    ~ActiveScope() {
        std::lock_guard lock(s.mutex_);
        if (--s.active_ == 0 && s.in_flight_ == 0) s.idle_.notify_all();
    }
    ActiveScope(const ActiveScope&) = delete;
    ActiveScope& operator=(const ActiveScope&) = delete;
};

bool Scheduler::wire(const JobPtr& job) {
    job->waiting = 0;
    // A streamed region reads host copies: it waits for its inputs to be done, as a CPU one.
    // (So does a split one: its pieces read windows, on several devices.)
    const bool on_device = !job->placement.backend->on_host() && job->placement.stream_pieces == 0 && !job->placement.split;
    for (auto& in : job->region.inputs) {
        const std::shared_ptr<Completion>& c = state(*in).eval.pending;
        if (!c) continue;
        // Work on the same device may follow its producer in queue order (a split region, a
        // producer split over the same devices); anything else waits until the producer has
        // finished.
        bool same_queue = (on_device && c->backend == job->placement.backend && !c->parts) ||
                          (job->placement.split && c->parts == job->placement.split);
        if (same_queue && c->recorded) continue;
        ++job->waiting;
        auto wake = [this, job](Deferred& d) {
            if (--job->waiting == 0) d.push_back([this, job] { launch(job); });
        };
        if (same_queue) c->on_recorded.push_back(wake);
        else c->on_done.push_back(wake);
    }
    return job->waiting == 0;
}

bool Scheduler::lost(const Value& v) {
    if (v.host()) return false;
    const std::uint32_t mask = v.device_mask();
    bool readable = false;
    for (std::size_t d = 0; d < placement_.devices().size(); ++d) {
        if (!((mask >> d) & 1u)) continue;
        // A device found lost (by any of its operations) takes no more work either.
        if (placement_.devices()[d]->lost()) placement_.disable_device(d);
        readable |= placement_.device_enabled(d);
    }
    if (readable) return false;
    if (auto parts = v.parts()) {  // split: lost with any of its parts
        for (const ValuePart& p : *parts)
            if (lost(*p.value)) return true;
        return false;
    }
    return mask != 0;
}

Future<std::vector<HostArray>> Scheduler::gather(const std::vector<std::shared_ptr<Node>>& targets, bool to_host) {
    Promise<std::vector<HostArray>> promise;
    auto result = promise.future();
    for (const auto& t : targets) {  // asked for: a chain on it starts afresh
        t->depth.store(0, std::memory_order_relaxed);
        t->work.store(0, std::memory_order_relaxed);
    }
    gather_into(targets, to_host, promise, /*regathers=*/1);
    // The devices have the work; the caller is about to wait for it: the lineage of an earlier
    // graph goes now rather than between its value and the next program's first kernel.
    nodes_.release_lineage();
    return result;
}

bool Scheduler::start(const std::shared_ptr<Node>& head, bool held_too) {
    Deferred after;
    if (!plan({head}, /*to_host=*/false, after, [] {}, held_too ? Held::wanted : Held::refused)) return false;
    head->depth.store(0, std::memory_order_relaxed);  // a chain built on it counts from here
    head->work.store(0, std::memory_order_relaxed);
    head->continues_started.store(true, std::memory_order_relaxed);
    drain(after);
    return true;
}

std::vector<Future<std::monostate>> Scheduler::evaluate_groups(std::vector<std::vector<std::shared_ptr<Node>>> groups) {
    std::vector<std::shared_ptr<Node>> all;
    for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
    std::vector<Promise<std::monostate>> promises(groups.size());
    std::vector<Future<std::monostate>> futures;
    for (const auto& p : promises) futures.push_back(p.future());
    Deferred after;
    plan(all, false, after, [&] {
        for (std::size_t g = 0; g < groups.size(); ++g) {
            // Under the lock, read the outcome; outside it, resolve (continuations run user code).
            auto nodes = std::make_shared<std::vector<std::shared_ptr<Node>>>(groups[g]);
            when_done(groups[g], [nodes, promise = promises[g]](Deferred& d) {
                std::exception_ptr error;
                for (auto& n : *nodes)
                    if ((error = state(*n).eval.error)) break;
                d.push_back([nodes, promise, error] {
                    nodes->clear();  // (hold no node once resolved; not under the lock)
                    if (error) promise.set_error(error);
                    else promise.set_value(std::monostate{});
                });
            }, after);
        }
    });
    // Recording a long flush takes a while, and the device may finish its first regions
    // meanwhile: their results die with their readers, not with the flush.
    groups = {};
    all = {};
    drain(after);
    nodes_.release_lineage();  // (as gather's)
    return futures;
}

void Scheduler::when_done(const std::vector<std::shared_ptr<Node>>& nodes, std::function<void(Deferred&)> resolve,
                          Deferred& after) {
    auto remaining = std::make_shared<std::size_t>(0);
    auto once = std::make_shared<std::function<void(Deferred&)>>(std::move(resolve));
    std::unordered_set<Node*> counted;
    for (auto& n : nodes) {
        const Evaluation& e = state(*n).eval;
        if (e.done() || !e.pending || !counted.insert(n.get()).second) continue;
        ++*remaining;
        e.pending->on_done.push_back([remaining, once](Deferred& d) {
            if (--*remaining == 0) (*once)(d);
        });
    }
    if (*remaining == 0) (*once)(after);
}

Scheduler::PlanWalk Scheduler::walk_plan(const std::vector<std::shared_ptr<Node>>& targets, Held held) {
    PlanWalk w;
    w.started = std::chrono::steady_clock::now();
    w.mark = ++plan_mark_;
    std::uint64_t revived = 0;
    w.pending = pending_nodes(targets, w.mark, [&](Node* n) {
        // A value whose copies were all on lost devices: computed again from its recipe.
        Evaluation& e = state(*n).eval;
        if (!e.value || !recomputable(*n) || !lost(*e.value)) return false;
        e.value = nullptr;
        ++revived;
        return true;
    });
    if (revived > 0) {
        recomputed_.fetch_add(revived, std::memory_order_relaxed);
        report_fallback("lineage", "[tandem] values that lived only on a lost device are computed again on the "
                                   "CPU, from the operations that produced them");
    }
    for (auto& t : targets)
        if (t->pass_mark == w.mark && w.wanted_set.insert(t.get()).second) w.wanted.push_back(t.get());
    if (held != Held::ignored) {
        // References from the plan's own nodes are counted (the targets are wanted anyway); one
        // more holder is outside it. (A stencil's step started at an inner value: the step's
        // input, which the rest of the step reads, is such a value.)
        std::vector<long> refs(w.pending.size(), 0);
        for (Node* n : w.pending)
            for (const auto& in : n->inputs)
                if (in->pass_mark == w.mark) ++refs[in->pass_index];
        for (Node* n : w.pending) {
            // (A constant is an immediate of whatever reads it: held, it costs nothing.)
            if (n->op == OpKind::Constant || w.wanted_set.count(n) || n->weak_from_this().use_count() <= refs[n->pass_index])
                continue;
            if (held == Held::refused) {
                w.pending.clear();
                w.wanted.clear();
                w.wanted_set.clear();
                w.refused = true;
                return w;
            }
            w.wanted_set.insert(n);
            w.wanted.push_back(n);
        }
    }
    if (!w.pending.empty()) plans_.fetch_add(1, std::memory_order_relaxed);
    w.walked = std::chrono::steady_clock::now();
    return w;
}

template <class Then>
bool Scheduler::plan(const std::vector<std::shared_ptr<Node>>& targets, bool to_host, Deferred& after, Then then,
                     Held held) {
    // Planners take turns (each node is planned once, by one of them), but the scheduler's lock
    // is held only to read the graph's evaluation state and to install the plan: completions,
    // CPU workers and the devices' threads go on while it is fused and placed (nearly all of a
    // plan's host time). Fusion reads only the plan's own nodes and what never changes in the
    // others (op, type, shape, pass marks, which only planners write); placement reads the
    // state of earlier plans' values under the lock, a value at a time, and the model under
    // its own.
    std::lock_guard planning(plan_mutex_);
    const ActiveScope active(*this);
    PlanWalk walk;
    {
        std::lock_guard lock(mutex_);
        walk = walk_plan(targets, held);
    }
    if (walk.refused) return false;
    std::vector<JobPtr> jobs;
    if (!walk.pending.empty()) {
        std::vector<Region> regions = fusion_cache_.fuse(walk.pending, walk.wanted, walk.mark, {options_.fuse});
        walk.fused = std::chrono::steady_clock::now();
        jobs = place_regions(walk, std::move(regions), to_host);
        walk.placed = std::chrono::steady_clock::now();
        if (options_.plan_pause.count() > 0) std::this_thread::sleep_for(options_.plan_pause);
    }
    std::lock_guard lock(mutex_);
    if (!jobs.empty()) install_plan(walk, jobs, targets, after);
    then();
    return true;
}

std::vector<Scheduler::JobPtr> Scheduler::place_regions(const PlanWalk& walk, std::vector<Region> regions, bool to_host) {
    const std::unordered_set<Node*>& wanted_set = walk.wanted_set;
    std::vector<JobPtr> jobs;
    std::unordered_map<const Node*, std::pair<Job*, std::size_t>> producer;
    // The work already placed on each executor and link (the plan's own is added as it goes;
    // what finishes meanwhile is taken back from the scheduler's count, not from this copy).
    Outstanding outstanding;
    {
        std::lock_guard lock(mutex_);
        outstanding = outstanding_;
    }
    // Placement's view of the plan: where each output will be and when (seconds from now).
    // The executors are free once the work placed on them is done; within the plan, a
    // region's inputs exist when their producers' predicted finish says.
    std::unordered_map<const Node*, InputSite> site;
    auto site_of = [&](const std::shared_ptr<Node>& in) {
        if (auto it = site.find(in.get()); it != site.end()) return it->second;
        InputSite s;
        s.bytes = static_cast<std::int64_t>(in->bytes());
        std::lock_guard lock(mutex_);  // a value of an earlier plan: its state moves on meanwhile
        const Evaluation& e = state(*in).eval;
        if (e.pending) {  // in flight from an earlier plan
            const Backend* b = e.pending->backend;
            s.on_host = b->on_host();
            if (e.pending->parts) s.parts = e.pending->parts;
            else if (!s.on_host) s.devices = 1u << b->ordinal();
            // On a device, it is there once the device's queue reaches it: at most when the work
            // placed there drains (the last of a loop's steps: exactly then). A reader elsewhere
            // starts no sooner (a plan sent while a loop's earlier steps run on the GPU put steps
            // on the CPU, which then waited for them and for the copy down).
            if (!s.on_host && !e.pending->parts && b->ordinal() < outstanding.device.size())
                s.ready_s = outstanding.device[b->ordinal()];
            // In parts over several devices: once the last of them gets there. (Ready at once, a
            // split chain's next piece looked free to read whole on one device: its parts moved
            // during work that produces them, and W3's loop, started in pieces, had its last
            // piece assembled on the host.)
            for (std::size_t d = 0; d < outstanding.device.size(); ++d)
                if (e.pending->parts >> d & 1u) s.ready_s = std::max(s.ready_s, outstanding.device[d]);
        } else if (e.value) {
            s.on_host = e.value->host() != nullptr;
            s.devices = e.value->device_mask();
            if (e.value->split()) s.parts = e.value->part_mask();
            s.regret_s = e.value->upload_regret_s;
        }
        return s;
    };
    // What later regions of the plan read (placement prices sending it to them).
    std::unordered_set<const Node*> read_in_plan;
    for (const Region& r : regions)
        for (const auto& in : r.inputs) read_in_plan.insert(in.get());
    // Which regions of the plan read each node, for the split (it asks of every region).
    const bool splitting = placement_.enabled_devices() >= 2 && options_.split != SplitMode::off;
    std::unordered_map<const Node*, std::vector<std::size_t>> readers;
    std::vector<const Job*> job_of(regions.size(), nullptr);  // the placed regions' jobs
    std::vector<const Region*> region_at(regions.size());     // each region, where it is now (moved into its job)
    for (std::size_t i = 0; i < regions.size(); ++i) region_at[i] = &regions[i];
    // f(q) for each region q of the plan that reads `value`, made by region `maker`. Placement
    // asks this of few regions: in a plan of a few hundred they are found among the regions after
    // the maker (the plan is in topological order), which costs less than a map of every read
    // (W5); a larger plan (or one that may split, which asks of every region) builds the map once.
    constexpr std::size_t kScannedPlan = 256;
    const bool mapped = splitting || regions.size() > kScannedPlan;
    bool readers_built = false;
    auto build_readers = [&] {
        if (std::exchange(readers_built, true)) return;
        for (std::size_t i = 0; i < regions.size(); ++i)
            for (const auto& in : region_at[i]->inputs) readers[in.get()].push_back(i);
    };
    if (splitting) build_readers();
    auto for_each_reader = [&](const Node* value, std::size_t maker, auto&& f) {
        if (mapped) {
            build_readers();
            if (auto it = readers.find(value); it != readers.end())
                for (std::size_t q : it->second)
                    if (q > maker) f(q);
            return;
        }
        for (std::size_t q = maker + 1; q < regions.size(); ++q)
            for (const auto& in : region_at[q]->inputs)
                if (in.get() == value) {
                    f(q);
                    break;
                }
    };
    // With several devices: which regions' results may be left split over them (every
    // reader in the plan, through views, may be split as well: it can be, and its own
    // results come back whole, or are read only by regions that may be split in turn).
    // Regions come in order, readers after what they read: decided from the last.
    std::vector<bool> readers_split(regions.size(), true);
    // Extents of vectors that some region of the plan reads as something else (a reshape into
    // images, a broadcast against a matrix, a matrix read as a vector): their regions are not
    // cut on second-level blocks (plan_split's vector_blocks), which such a reader's pieces
    // would not match, so that every region of such an extent is cut the same way.
    std::unordered_set<std::int64_t> mixed_extents;
    std::vector<double> slack;  // per region, when splitting (PlacementQuery::parallel_slack_s)
    auto vector_blocks = [&](const Region& r) { return !mixed_extents.count(r.shape.numel()); };
    if (splitting) {
        const auto devices = static_cast<std::int64_t>(placement_.enabled_devices());
        for (const Region& r : regions) {
            const Shape& domain = r.kind == RegionKind::view ? r.outputs[0].node->shape : r.shape;  // a reshape's: its result
            for (const auto& in : r.inputs) {
                const std::int64_t n = in->shape.numel();
                if (n > 1 && (!is_vector(in->shape) || !is_vector(domain) || domain.numel() != n)) mixed_extents.insert(n);
            }
        }
        std::vector<std::optional<StreamPlan>> plans(regions.size());  // of those that may split
        std::function<bool(const Node*)> all_split = [&](const Node* n) {
            auto it = readers.find(n);
            if (it == readers.end()) return true;
            for (std::size_t q : it->second) {
                const Region& reader = regions[q];
                if (reader.kind == RegionKind::view) {
                    if (!all_split(reader.outputs[0].node.get())) return false;
                    continue;
                }
                if (!plans[q]) return false;
                // Split, but reading it whole (broadcast along the cut, a product's A): assembled.
                for (std::size_t k = 0; k < reader.inputs.size(); ++k)
                    if (reader.inputs[k].get() == n && !piece_window(reader, *plans[q], 0, k)) return false;
            }
            return true;
        };
        // Each region's parallel slack (PlacementQuery::parallel_slack_s): the device work of the
        // later regions that do not depend on it. A plan of at most kSlackRegions regions (its
        // dependents as bit sets: n^2 / 64 words); a larger one is taken to have none.
        constexpr std::size_t kSlackRegions = 256;
        if (regions.size() > 1 && regions.size() <= kSlackRegions) {
            const std::size_t n = regions.size(), words = (n + 63) / 64;
            std::vector<double> cost(n, 0.0);
            {
                std::lock_guard model(model_mutex_);
                for (std::size_t j = 0; j < n; ++j)
                    if (regions[j].kind != RegionKind::view) cost[j] = placement_.compute_s(regions[j], 0);
            }
            std::vector<std::uint64_t> dependents(n * words, 0);
            slack.assign(n, 0.0);
            for (std::size_t i = n; i-- > 0;) {
                std::uint64_t* mine = &dependents[i * words];
                for (const auto& o : regions[i].outputs)
                    if (auto it = readers.find(o.node.get()); it != readers.end())
                        for (std::size_t q : it->second) {
                            if (q <= i) continue;
                            mine[q / 64] |= std::uint64_t{1} << (q % 64);
                            for (std::size_t w = 0; w < words; ++w) mine[w] |= dependents[q * words + w];
                        }
                for (std::size_t j = i + 1; j < n; ++j)
                    if (!(mine[j / 64] >> (j % 64) & 1u)) slack[i] += cost[j];
            }
        }
        for (std::size_t i = regions.size(); i-- > 0;) {
            for (const auto& o : regions[i].outputs) readers_split[i] = readers_split[i] && all_split(o.node.get());
            if (regions[i].kind == RegionKind::view) continue;
            auto plan = plan_split(regions[i], devices, vector_blocks(regions[i]));
            if (plan && (plan->partials || readers_split[i])) plans[i] = std::move(plan);
        }
    }
    // Whether a region after region `index` reads `value` (for an upload's worth: see InputSite).
    auto read_after = [&](const Node* value, std::size_t index) {
        bool found = false;
        for_each_reader(value, index, [&](std::size_t) { found = true; });
        return found;
    };
    // Where the regions reading a region's outputs (through views) will run: the device of
    // those placed already, else the one device holding every other input of theirs placed so
    // far (-1: none, or the host for one of them).
    auto consumers_device = [&](const Region& r, std::size_t index) {
        std::uint32_t common = ~0u;
        bool known = false, host = false;
        std::function<void(const Node*, std::size_t, int)> visit = [&](const Node* value, std::size_t maker, int depth) {
            if (depth > 4) return;
            for_each_reader(value, maker, [&](std::size_t q) {
                const Job* placed = job_of[q];
                const Region& reader = *region_at[q];
                if (reader.kind == RegionKind::view) return visit(reader.outputs[0].node.get(), q, depth + 1);
                if (placed) {
                    const PlacementDecision& d = placed->placement;
                    host = host || d.backend->on_host() || d.split || d.stream_pieces > 0;
                    if (!d.backend->on_host()) common &= 1u << d.backend->ordinal();
                    known = true;
                    return;
                }
                for (const auto& in : reader.inputs) {
                    if (in.get() == value) continue;
                    InputSite s;
                    if (auto it = site.find(in.get()); it != site.end()) s = it->second;
                    else if (in->pass_mark == walk.mark) continue;  // of this plan: its producer is not placed yet
                    else s = site_of(in);
                    host = host || s.devices == 0;
                    common &= s.devices;
                    known = true;
                }
            });
        };
        for (const auto& o : r.outputs) visit(o.node.get(), index, 0);
        return known && !host && common != 0 ? std::countr_zero(common) : -1;
    };
    bool cold_diverted = false;  // a region sent to the CPU because a device's kernel was cold
    std::size_t region_index = 0;
    for (Region& r : regions) {
        const bool region_readers_split = readers_split[region_index++];
        auto job = std::make_shared<Job>();
        job->region = std::move(r);
        region_at[region_index - 1] = &job->region;
        PlacementQuery query;
        query.region = &job->region;
        query.readers_split = region_readers_split;
        query.vector_blocks = vector_blocks(job->region);
        if (!slack.empty()) query.parallel_slack_s = slack[region_index - 1];
        for (auto& in : job->region.inputs) query.inputs.push_back(site_of(in));
        for (std::size_t k = 0; k < query.inputs.size(); ++k)
            if (query.inputs[k].regret_plan_s > 0) query.inputs[k].read_later = read_after(job->region.inputs[k].get(), region_index - 1);
        for (std::size_t j = 0; j < job->region.outputs.size(); ++j) {
            Node* out = job->region.outputs[j].node.get();
            if (to_host && wanted_set.count(out)) query.bytes_to_host += static_cast<std::int64_t>(out->bytes());
            if (read_in_plan.count(out)) query.bytes_to_consumers += static_cast<std::int64_t>(out->bytes());
        }
        if (query.bytes_to_consumers > 0)
            query.consumers_device = [&, index = region_index - 1] { return consumers_device(job->region, index); };
        // A device's kernel not built yet costs its build (tens of milliseconds): the CPU may
        // finish first, while the kernel builds in the background for the next time.
        if (job->region.kind != RegionKind::view)
            query.pipeline_wait_s = [&](std::size_t d) { return placement_.devices()[d]->pipeline_wait_s(job->region); };
        {
            std::lock_guard model(model_mutex_);
            job->placement = placement_.place(query, outstanding.cpu, outstanding.device, outstanding.link);
        }
        if (job->placement.warm_up) {
            job->placement.warm_up->prepare(job->region);
            cold_diverted = true;
        }
        for (std::size_t d = 0; d < placement_.devices().size(); ++d)
            if (job->placement.prepare_on >> d & 1u) placement_.devices()[d]->prepare(job->region);
        if (job->region.kind == RegionKind::view && !query.inputs[0].on_host && query.inputs[0].devices != 0) {
            // A view of a device value stays with it: as a CPU job it would wait for the
            // device to finish and make its producer download (a sync per power step).
            job->placement = {placement_.devices()[static_cast<std::size_t>(std::countr_zero(query.inputs[0].devices))],
                              "a view of a device value"};
        }
        // Its results stay on the device (a streamed region's come back to the host, as a
        // split one's partials do; a split one's windows stay on its devices, in parts).
        const bool resident = job->placement.resident();
        const std::uint32_t split = job->placement.split;
        if (job->placement.regret_s > 0) {
            // Kept on the host (or a busier device) only because its inputs were: their move
            // draws nearer.
            const int towards = job->placement.regret_device;
            std::lock_guard lock(mutex_);
            for (std::size_t k = 0; k < job->region.inputs.size(); ++k) {
                const auto& in = job->region.inputs[k];
                const Evaluation& e = state(*in).eval;
                const std::uint32_t on = query.inputs[k].devices;
                const bool moves = towards == kSplitRegret ? query.inputs[k].parts == 0
                                   : towards == kWholeRegret ? query.inputs[k].parts != 0 && on == 0 && query.inputs[k].on_host
                                   : towards < 0       ? on == 0
                                                       : on != 0 && !(on >> towards & 1u);
                if (!e.pending && e.value && moves) {
                    e.value->upload_regret_s += job->placement.regret_s;
                    query.inputs[k].regret_s = e.value->upload_regret_s;  // for later readers of the plan
                    query.inputs[k].regret_plan_s += job->placement.regret_s;
                }
            }
        }
        if (job->region.kind == RegionKind::view) {
            site[job->region.outputs[0].node.get()] = query.inputs[0];  // the same copies
        } else {
            charge(*job, job->placement.compute_s, job->placement.transfer_s, outstanding);
            // Its inputs now have (or will have) a copy on its side: later regions of the
            // plan that read them need no transfer of their own.
            for (std::size_t k = 0; k < job->region.inputs.size(); ++k) {
                InputSite moved = query.inputs[k];
                if (split) {  // its pieces read windows: one that was not on each device came through the host
                    if ((split & ~(moved.parts | moved.devices)) != 0) moved.on_host = true;
                } else if (resident) {
                    moved.devices |= 1u << job->placement.backend->ordinal();
                } else {
                    moved.on_host = true;
                }
                site[job->region.inputs[k].get()] = moved;
            }
            for (auto& o : job->region.outputs) {
                InputSite s;
                s.bytes = static_cast<std::int64_t>(o.node->bytes());
                s.on_host = !resident;
                s.devices = resident && !split ? 1u << job->placement.backend->ordinal() : 0u;
                s.parts = resident ? split : 0u;
                s.ready_s = job->placement.finish_s;
                site[o.node.get()] = s;
            }
        }
        if (options_.log_placement) {
            const RegionCost& c = job->region.cost;
            const PlacementDecision& d = job->placement;
            char predicted[160] = "";
            if (d.cpu_s >= 0 && d.device_s >= 0)
                std::snprintf(predicted, sizeof predicted, "; finish cpu %.3f ms, device %.3f ms", 1e3 * d.cpu_s,
                              1e3 * d.device_s);
            if (d.regret_s > 0) {
                // What keeping its inputs where they are cost, towards moving them.
                const std::string towards = d.regret_device == kSplitRegret   ? "in parts over the devices"
                                            : d.regret_device == kWholeRegret ? "whole on a device"
                                            : d.regret_device >= 0 ? "device " + std::to_string(d.regret_device)
                                                                   : "a device";
                const std::size_t used = std::strlen(predicted);
                std::snprintf(predicted + used, sizeof predicted - used, "; regret %.3f ms (%s)", 1e3 * d.regret_s, towards.c_str());
            }
            std::fprintf(stderr, "[tandem placement] %s %s %s: reads %.3g MB, writes %.3g MB%s -> %s (%s)\n",
                         region_kind_name(job->region.kind), job->region.shape.to_string().c_str(),
                         job->region.summary().c_str(), static_cast<double>(c.bytes_read()) / 1e6,
                         static_cast<double>(c.bytes_written()) / 1e6, predicted,
                         executor_name(d).c_str(), d.reason);
        }
        job->completion = std::make_shared<Completion>();
        job->completion->backend = resident || !split ? job->placement.backend : &placement_.cpu();
        job->completion->parts = resident ? split : 0u;
        job->wanted_on_host.assign(job->region.outputs.size(), false);
        for (std::size_t j = 0; j < job->region.outputs.size(); ++j) {
            Node* n = job->region.outputs[j].node.get();
            producer[n] = {job.get(), j};
            if (to_host && wanted_set.count(n)) job->wanted_on_host[j] = true;
        }
        if (options_.log_graph)
            std::fprintf(stderr, "[tandem graph] %s on %s (%s)\n", job->region.to_string().c_str(),
                         executor_name(job->placement).c_str(), job->placement.reason);
        job_of[region_index - 1] = job.get();
        jobs.push_back(std::move(job));
    }
    if (cold_diverted) {
        // A region went to the CPU only because its kernel was cold: the regions after it then
        // find their inputs on the host and stay too, their kernels never built, and a chain
        // would move to the device a region a run. The kernels of the plan's host regions that
        // a device computes faster build in the background instead: the next run is priced warm.
        for (const auto& job : jobs)
            if (job->placement.backend->on_host() && !job->placement.warm_up)
                if (Backend* d = faster_device(job->region)) d->prepare(job->region);
    }
    // A device output that a region of this plan reads elsewhere (on the CPU, or on
    // another device, through the host) comes back in the same submission, instead of in
    // a blocking download later.
    for (auto& job : jobs) {
        for (auto& in : job->region.inputs) {
            auto it = producer.find(in.get());
            // Through views (they copy nothing) to the region that computes the value.
            while (it != producer.end() && it->second.first->region.kind == RegionKind::view &&
                   !it->second.first->placement.backend->on_host())
                it = producer.find(it->second.first->region.inputs[0].get());
            if (it == producer.end()) continue;
            const PlacementDecision& made = it->second.first->placement;
            const PlacementDecision& reads = job->placement;
            const Backend* from = made.backend;
            // A split value is read in place by a region split the same way; any other reader
            // has it assembled on the host. A device value read by a split region goes to the
            // pieces on the other devices through the host.
            const bool elsewhere =
                made.split ? made.resident() && reads.split != made.split
                           : !from->on_host() && (from != reads.backend || reads.stream_pieces > 0 ||
                                                  (reads.split && reads.split != 1u << from->ordinal()));
            if (elsewhere && job->region.kind != RegionKind::view) it->second.first->wanted_on_host[it->second.second] = true;
        }
    }
    return jobs;
}

void Scheduler::install_plan(const PlanWalk& walk, const std::vector<JobPtr>& jobs,
                             const std::vector<std::shared_ptr<Node>>& targets, Deferred& after) {
    for (const JobPtr& job : jobs) {
        if (job->region.kind != RegionKind::view) add_outstanding(*job);
        const bool resident = job->placement.resident();
        // Device-only results keep their recipe (complete()); past kLineageCheckpoint
        // device regions on a chain, a result also comes back to the host with its
        // batch, so that what lineage keeps stays bounded in a long loop. A large result
        // comes back less often: at most kCheckpointBytesPerRegion of download a region of
        // the chain (a heat step's 128 MiB field every 1024 steps cost 8 us a step on the
        // H100: the batch waits for its download, and the device's queue ran dry meanwhile).
        std::uint32_t depth = 0;
        if (resident) {
            for (const auto& in : job->region.inputs) {
                const NodeState& st = state(*in);
                const bool on_host = !st.eval.pending && st.eval.value && st.eval.value->host();
                depth = std::max(depth, on_host ? 0u : st.lineage_depth);
            }
            if (job->region.kind != RegionKind::view) ++depth;
        }
        std::uint64_t bytes = 0;
        for (const auto& o : job->region.outputs) bytes = std::max<std::uint64_t>(bytes, o.node->bytes());
        const std::uint64_t every = std::max<std::uint64_t>(kLineageCheckpoint, bytes / kCheckpointBytesPerRegion);
        const bool checkpoint = depth >= every && job->region.kind != RegionKind::view;
        if (checkpoint) checkpoints_.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t j = 0; j < job->region.outputs.size(); ++j) {
            Node* n = job->region.outputs[j].node.get();
            NodeState& st = state(*n);
            st.eval.pending = job->completion;
            st.lineage_depth = checkpoint ? 0 : depth;
            if (checkpoint) job->wanted_on_host[j] = true;
        }
        ++in_flight_;
    }
    make_recipes(jobs, walk.pending, targets, walk.mark);
    for (auto& job : jobs)
        if (wire(job)) after.push_back([this, job] { launch(job); });
    if (options_.log_exec) {
        // Host time of planning, before any region runs: the pending walk, fusion, placement,
        // and the jobs' installation and wiring (under the scheduler's lock).
        auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        std::fprintf(stderr, "[tandem exec] plan of %zu nodes -> %zu regions: walk %.3f ms, fuse %.3f ms, "
                     "place %.3f ms, install %.3f ms\n",
                     walk.pending.size(), jobs.size(), ms(walk.started, walk.walked), ms(walk.walked, walk.fused),
                     ms(walk.fused, walk.placed), ms(walk.placed, std::chrono::steady_clock::now()));
    }
}

void Scheduler::make_recipes(const std::vector<JobPtr>& jobs, const std::vector<Node*>& pending,
                             const std::vector<std::shared_ptr<Node>>& targets, std::uint64_t mark) {
    // Device results that may outlive the plan keep recipes (complete()): made now, while
    // the plan's nodes are in this thread's cache (at completion they are not). One that only
    // this plan references (an intermediate: every reference to it is counted below) dies
    // once its readers are done and needs none; a recipe that reaches it copies its region.
    auto resident = [](const JobPtr& job) { return job->placement.resident(); };
    if (std::none_of(jobs.begin(), jobs.end(), resident)) return;  // a CPU plan: nothing to count
    for (Node* n : pending) state(*n).plan_refs = 0;
    auto count = [&](const std::shared_ptr<Node>& n) {
        if (n->pass_mark == mark) ++state(*n).plan_refs;
    };
    for (Node* n : pending)
        for (const auto& in : n->inputs) count(in);
    for (const auto& job : jobs) {
        for (const auto& in : job->region.inputs) count(in);
        for (const auto& o : job->region.outputs) count(o.node);
    }
    for (const auto& t : targets) count(t);
    // The plan's regions that read each of its results (an intermediate lets go of its value
    // once they are done: release_intermediates).
    for (const auto& job : jobs)
        for (const auto& o : job->region.outputs) {
            state(*o.node).plan_readers = 0;
            state(*o.node).intermediate = false;
        }
    // (A view counts and never lets go: its result is its input's value itself.)
    for (const auto& job : jobs)
        for (const auto& in : job->region.inputs)
            if (in->pass_mark == mark) ++state(*in).plan_readers;
    // (A target is wanted whole, never let go of: a queue's flush has a target a group's value.)
    std::unordered_set<const Node*> target_set;
    for (const auto& t : targets) target_set.insert(t.get());
    RecipeMemo memo(mark, pending.size());
    for (auto& job : jobs) {
        for (std::size_t j = 0; j < job->region.outputs.size(); ++j) {
            Node& o = *job->region.outputs[j].node;
            auto outlives = [&] { return o.shared_from_this().use_count() - 1 > state(o).plan_refs; };
            state(o).recipe.reset();
            if (!resident(job) || job->wanted_on_host[j]) continue;
            // An intermediate leaves the index (built again later, it is a new node); counted
            // again after, in case a builder found it in the index meanwhile.
            if (!outlives()) nodes_.forget(o);
            if (outlives()) {
                const bool small = o.bytes() <= kHostCopyInsteadOfRecipe;
                memo.budget = small ? memo.made + kRecipeCopyLimit : SIZE_MAX;
                auto recipe = recipe_inputs(o, job->region, memo);
                if (memo.made > memo.budget) {  // a long copy for a small value: its download instead
                    job->wanted_on_host[j] = true;
                    state(o).lineage_depth = 0;
                } else {
                    state(o).recipe = std::move(recipe);
                }
                memo.budget = SIZE_MAX;
            }
            else if (!target_set.count(&o)) state(o).intermediate = job->region.kind != RegionKind::view;
        }
    }
}

void Scheduler::release_intermediates(const Region& r) {
    // A loop of device regions planned at once (a fused program's chain) would otherwise hold
    // every step's result until the last is done: an intermediate keeps its graph for recovery,
    // and with it its value. The node lets go of its value (computed again, from its graph,
    // should anything ever need it); a view sharing the value keeps it.
    auto drop = [](NodeState& st) {
        if (st.intermediate && st.plan_readers == 0 && !st.eval.pending) st.eval.value.reset();
    };
    // Its own results first: a batch's completions may come in any order, the readers' first.
    for (const auto& o : r.outputs) drop(state(*o.node));
    if (r.kind == RegionKind::view) return;  // (counted as a reader for good)
    for (const auto& in : r.inputs) {
        NodeState& st = state(*in);
        if (st.plan_readers > 0 && --st.plan_readers == 0) drop(st);
    }
}

void Scheduler::gather_into(const std::vector<std::shared_ptr<Node>>& targets, bool to_host,
                            Promise<std::vector<HostArray>> promise, int regathers) {
    Deferred after;
    plan(targets, to_host, after, [&] {
        // The future: ready when every target is computed, with host copies.
        struct Join {
            std::vector<std::shared_ptr<Node>> targets;
            Promise<std::vector<HostArray>> promise;
        };
        auto join = std::make_shared<Join>();
        join->targets = targets;
        join->promise = promise;
        auto resolve = [this, join, to_host, regathers](Deferred& d) {
            // Under the lock, read the values; outside it, download what lives only on a device
            // and resolve (continuations run user code).
            std::exception_ptr error;
            std::vector<std::shared_ptr<Value>> values;
            std::vector<std::pair<Shape, DType>> meta;
            for (auto& t : join->targets) {
                if (state(*t).eval.error) {
                    error = state(*t).eval.error;
                    break;
                }
                values.push_back(state(*t).eval.value);
                meta.emplace_back(t->shape, t->dtype);
            }
            d.push_back([this, join, error, to_host, regathers, values = std::move(values), meta = std::move(meta)] {
                // Hold no node once the future resolves: a node the user dropped must be gone,
                // or rebuilding the same expression would find it computed (sometimes).
                std::vector<std::shared_ptr<Node>> nodes = std::move(join->targets);
                join->targets.clear();
                if (error) {
                    nodes.clear();
                    return join->promise.set_error(error);
                }
                try {
                    if (!to_host) {
                        nodes.clear();
                        return join->promise.set_value(std::vector<HostArray>(values.size()));
                    }
                    ensure_host(values);
                    std::vector<HostArray> out;
                    for (std::size_t i = 0; i < values.size(); ++i)
                        out.emplace_back(values[i]->host(), meta[i].first, meta[i].second);
                    nodes.clear();
                    join->promise.set_value(std::move(out));
                } catch (const DeviceError&) {
                    // A device was lost since the targets were computed there: compute again what
                    // lived only there (the plan finds those values lost).
                    if (regathers > 0) return gather_into(nodes, to_host, join->promise, regathers - 1);
                    nodes.clear();
                    join->promise.set_error(std::current_exception());
                } catch (...) {
                    nodes.clear();
                    join->promise.set_error(std::current_exception());
                }
            });
        };
        when_done(targets, std::move(resolve), after);
    });
    drain(after);
}

namespace {
/// Bit d: this thread recorded a region on device d since the drain it is in began (the batch
/// it recorded into is its to send).
thread_local std::uint32_t devices_recorded = 0;
}  // namespace

void Scheduler::drain(Deferred& after) {
    // Only what this drain recorded is sent. A completion that records nothing no longer sends
    // the batch another thread is filling: it did so at every batch done, and when that thread
    // records slower than the device runs (a chain of small regions whose head came from a CPU
    // job), each batch sent held a region or two, each a submission and a completion contending
    // with the recording: W5's chain of 150 regions took 3-9 ms to record instead of 1. (An idle
    // device is still fed: the backend sends a batch early when it finds the device idle.)
    if (after.empty()) return;
    // The actions may finish the last work in flight; the flush after them still uses the scheduler.
    const ActiveScope active(*this);
    struct Scope {
        std::uint32_t outer = std::exchange(devices_recorded, 0u);
        ~Scope() { devices_recorded |= outer; }
    } scope;
    // Actions may defer more actions (a recorded device region lets the next one record).
    for (std::size_t i = 0; i < after.size(); ++i) {
        auto f = std::move(after[i]);
        f();
    }
    after.clear();
    flush_devices(std::exchange(devices_recorded, 0u));
}

void Scheduler::flush_devices(std::uint32_t mask) {
    for (Backend* device : placement_.devices())
        if (mask >> device->ordinal() & 1u) device->flush();
}

void Scheduler::ensure_host(const std::vector<std::shared_ptr<Value>>& values) {
    for (auto& v : values) {
        if (v->host()) continue;
        const auto split = v->device_mask() == 0 ? v->parts() : nullptr;
        if (split) {
            // Its parts come down (each from its device), into one host copy.
            std::vector<std::shared_ptr<Value>> parts;
            for (const ValuePart& p : *split) parts.push_back(p.value);
            ensure_host(parts);
            auto whole = options_.pool ? options_.pool->allocate(v->bytes(), "a split value, assembled")
                                       : Storage::adopt(std::vector<std::byte>(v->bytes()));
            for (const ValuePart& p : *split)
                if (p.value->bytes() > 0)
                    std::memcpy(static_cast<std::byte*>(whole->data()) + p.offset, p.value->host()->data(), p.value->bytes());
            v->set_host(std::move(whole));
            assembled_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        const std::uint32_t mask = v->device_mask();
        if (mask == 0) throw Error("scheduler: a value has neither a host nor a device copy (bug)");
        placement_.devices()[static_cast<std::size_t>(std::countr_zero(mask))]->download(*v);
    }
}

void Scheduler::launch(const JobPtr& job) {
    if (job->placement.backend->on_host()) {
        workers_.enqueue([this, job] { run_on_host(job); });
    } else if (job->placement.stream_pieces > 0) {
        workers_.enqueue([this, job] { run_streamed(job); });
    } else if (job->placement.split) {
        workers_.enqueue([this, job] { run_split(job); });
    } else if (job->region.kind == RegionKind::view) {
        record_view(job);
    } else {
        record_on_device(job);
    }
}

void Scheduler::publish_recorded(const JobPtr& job, const Backend* recorded_on, Deferred& after) {
    std::lock_guard lock(mutex_);
    // Once submit() lets go of the backend's recording lock, any thread's flush (a completion
    // draining, a CPU worker, a download) or submit() itself (a full batch) may send the batch,
    // and the completion thread may finish the region and run complete() before we get here:
    // complete() has then published the outputs, woken every waiter and moved r.outputs[j].node
    // out (null), or requeued the region on the CPU (whose worker now owns job->outputs).
    // Nothing is left to publish then.
    Completion& c = *job->completion;
    if (c.recorded || c.backend != recorded_on) return;
    const Region& r = job->region;
    for (std::size_t j = 0; j < r.outputs.size(); ++j) state(*r.outputs[j].node).eval.value = job->outputs[j];
    c.recorded = true;
    for (auto& w : c.on_recorded) w(after);
    c.on_recorded.clear();
}

void Scheduler::record_view(const JobPtr& job) {
    // Recorded at once (its input's value is published: the producer recorded, or is done), so
    // that consumers on the device record behind it; done when the producer is.
    Deferred after;
    {
        std::lock_guard lock(mutex_);
        Node& in = *job->region.inputs[0];
        Completion& c = *job->completion;
        if (!state(in).eval.error && state(in).eval.value) {
            state(*job->region.outputs[0].node).eval.value = state(in).eval.value;
            c.recorded = true;
            for (auto& w : c.on_recorded) w(after);
            c.on_recorded.clear();
        }
        if (state(in).eval.pending) state(in).eval.pending->on_done.push_back([this, job](Deferred& d) { d.push_back([this, job] { finish_view(job); }); });
        else after.push_back([this, job] { finish_view(job); });
    }
    for (std::size_t i = 0; i < after.size(); ++i) {
        auto f = std::move(after[i]);
        f();
    }
}

void Scheduler::finish_view(const JobPtr& job) {
    std::exception_ptr error;
    {
        std::lock_guard lock(mutex_);
        const Node& in = *job->region.inputs[0];
        error = state(in).eval.error;
        job->outputs = {state(in).eval.value};  // the producer's final value (it may have run again on the CPU)
    }
    complete(job, error, {}, false);
}

std::exception_ptr Scheduler::input_values(const Job& job, std::vector<std::shared_ptr<Value>>& values) {
    std::lock_guard lock(mutex_);
    for (auto& in : job.region.inputs) {
        if (state(*in).eval.error) return state(*in).eval.error;  // a failed input poisons what depends on it, nothing else
        values.push_back(state(*in).eval.value);
    }
    return nullptr;
}

bool Scheduler::waits_again(const JobPtr& job, std::vector<std::shared_ptr<Value>>& values) {
    if (std::all_of(values.begin(), values.end(), [](const auto& v) { return v != nullptr; })) return false;
    std::lock_guard lock(mutex_);
    if (!wire(job)) return true;  // relaunched by the producer's completion
    values.clear();  // done meanwhile: its value is published again
    for (auto& in : job->region.inputs) values.push_back(state(*in).eval.value);
    for (auto& v : values)
        if (!v) throw Error("scheduler: a region's input has no value and nothing computes it (bug)");
    return false;
}

void Scheduler::run_on_cpu_instead(const JobPtr& job, const std::string& cause, const std::string& message) {
    if (!cpu_cannot_run(job->region)) report_fallback(cause, message);  // (else the error is its result's)
    Deferred after;
    {
        std::lock_guard lock(mutex_);
        requeue_on_host(job, after);
    }
    drain(after);
}

bool Scheduler::recompute_inputs(const JobPtr& job) {
    std::vector<std::shared_ptr<Node>> again;
    {
        std::lock_guard lock(mutex_);
        for (const auto& in : job->region.inputs)
            if (state(*in).eval.value && !state(*in).eval.pending && lost(*state(*in).eval.value)) again.push_back(in);
    }
    if (again.empty()) return false;
    Deferred after;
    bool replanned = false;
    plan(again, false, after, [&] {
        // (Planned by this plan, or by another since the look above.)
        for (const auto& in : again) replanned |= state(*in).eval.pending != nullptr;
        if (replanned && wire(job)) after.push_back([this, job] { launch(job); });
    });
    drain(after);
    return replanned;  // false: nothing to compute them from
}

void Scheduler::run_on_host(const JobPtr& job) {
    const Region& r = job->region;
    std::vector<std::shared_ptr<Value>> inputs;
    std::exception_ptr error = input_values(*job, inputs);
    if (r.kind == RegionKind::view) {
        // A view: the output is its input's value (wherever its copies live); nothing runs.
        if (!error) job->outputs = {inputs.at(0)};
        return complete(job, error, {}, false);
    }
    if (cpu_cannot_run(r)) {
        // A GLSL-only kernel the device refused or failed: its error is the group's.
        if (!error) error = job->device_error;
        if (!error)
            error = std::make_exception_ptr(Error(r.call->label() + " has only a GLSL body, and no device can run it now"));
        return complete(job, error, {}, false);
    }
    auto t0 = std::chrono::steady_clock::now();
    job->started = t0;
    std::vector<std::exception_ptr> per_output(r.outputs.size());
    if (!error) {
        try {
            ensure_host(inputs);
        } catch (const DeviceError&) {
            // An input lived only on a device that is lost: it is computed again first.
            if (recompute_inputs(job)) return;
            error = std::current_exception();
        } catch (...) {
            error = std::current_exception();
        }
    }
    auto run = [&](const Region& region, const std::vector<std::shared_ptr<Value>>& in,
                   std::vector<std::shared_ptr<Value>>& out) {
        out.clear();
        for (auto& o : region.outputs) out.push_back(std::make_shared<Value>(o.node->bytes()));
        std::exception_ptr e;
        placement_.cpu().submit({&region, in, out, {}, [&](std::exception_ptr x) { e = x; }, {}});
        return e;
    };
    const auto t_compute = std::chrono::steady_clock::now();  // after the downloads it waited for
    if (!error) {
        error = run(r, inputs, job->outputs);
        if (error && r.outputs.size() > 1 && is_data_error(error) && r.kind != RegionKind::kernel) {
            // A data-dependent failure (a NaN in a logical op) must poison only the outputs that
            // depend on it: run each output's own slice of the region to find out which.
            for (std::size_t j = 0; j < r.outputs.size(); ++j) {
                std::vector<std::size_t> from;
                Region part = r.slice(j, &from);
                std::vector<std::shared_ptr<Value>> part_in, part_out;
                for (std::size_t k : from) part_in.push_back(inputs[k]);
                per_output[j] = run(part, part_in, part_out);
                if (!per_output[j]) job->outputs[j] = part_out.front();
            }
            error = nullptr;
        }
    }
    if (!error) job->observed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compute).count();
    if (options_.log_exec) {
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "[tandem exec] %s %s (%zu ops) on cpu: %.3f ms%s\n", r.shape.to_string().c_str(),
                     r.summary().c_str(), r.program.size(), ms, error ? " FAILED" : "");
    }
    complete(job, error, std::move(per_output), false);
}

void Scheduler::record_on_device(const JobPtr& job) {
    const ActiveScope active(*this);  // its batch may complete (and the job with it) before this returns
    const Region& r = job->region;
    std::vector<std::shared_ptr<Value>> inputs;
    if (std::exception_ptr error = input_values(*job, inputs)) return complete(job, error, {}, false);
    if (waits_again(job, inputs)) return;
    Backend* const device = job->placement.backend;
    const std::size_t ordinal = device->ordinal();
    // Only the device's submitting thread waits for what a recording may wait for: a kernel
    // being built (the backend refuses it to any other thread), an input to bring from another
    // device through the host.
    const bool may_wait = submitters_[ordinal]->on_this_thread();
    if (!may_wait)
        for (auto& v : inputs)
            if (!v->host() && !v->device(ordinal)) return hand_off(job);
    job->outputs.clear();
    for (auto& o : r.outputs) job->outputs.push_back(std::make_shared<Value>(o.node->bytes()));
    std::unique_ptr<bool[]> wanted(new bool[job->wanted_on_host.size()]);
    for (std::size_t j = 0; j < job->wanted_on_host.size(); ++j) wanted[j] = job->wanted_on_host[j];
    const auto t0 = std::chrono::steady_clock::now();
    job->started = t0;
    // Refused before anything was recorded (no device memory, a shader that does not compile, an
    // input that could not be brought over): the region runs on the CPU instead, and the log says so.
    auto run_on_cpu_instead = [&](const std::exception& e) {
        job->device_error = std::current_exception();  // (called in the catch blocks below)
        this->run_on_cpu_instead(job, typeid(e).name(),
                                 "[tandem] " + std::string(device->name()) + " region " + r.summary() +
                                     " runs on the CPU instead: " + e.what());
    };
    ResidencyTable& table = *residency_[ordinal];
    std::uint64_t need = 0;  // what it adds to the device: the inputs it uploads, its outputs
    try {
        // An input that lives only on another device comes through the host.
        for (auto& v : inputs)
            if (!v->host() && !v->device(ordinal)) ensure_host({v});
        for (auto& v : inputs)
            if (!v->device(ordinal)) need += v->bytes();
        for (auto& v : job->outputs) need += v->bytes();
        evict(*device, table.make_room(need));
    } catch (const std::exception& e) {
        return run_on_cpu_instead(e);
    }
    {
        std::lock_guard lock(mutex_);
        // Still no room: the copies work in flight uses fill the budget. It records once some of
        // that work completes (a completion relaunches it).
        if (table.budget() > 0 && table.resident_bytes() + need > table.budget() && device_jobs_[ordinal] > 0) {
            memory_waiters_.push_back(job);
            budget_waits_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        // Nor does the host record far ahead of the device: what work in flight writes is memory
        // the device holds until it completes (a loop of 1000 steps recorded at once would hold
        // 1000 results). Past kRunAhead of its budget, it records as work completes.
        std::uint64_t written = 0;
        for (auto& v : job->outputs) written += v->bytes();
        const std::uint64_t base = table.budget() > 0 ? table.budget() : device->memory_budget();
        const std::uint64_t ahead = std::clamp<std::uint64_t>(base / kRunAhead, kMinRunAheadBytes, kMaxRunAheadBytes);
        // Once full, it waits until the device is a quarter of the way through what was
        // recorded, then records the next quarter at once: a batch of several regions, not one a
        // completion (each submission costs the device ~16 us on an H100), while three quarters
        // are still queued (at half, a heat step at 4096 found the queue empty: completions come
        // a batch at a time, and the host's answer took 0.12-0.15 ms).
        if (device_jobs_[ordinal] > 0 && (device_written_[ordinal] + written > ahead ||
                                          (run_ahead_full_[ordinal] && device_written_[ordinal] > ahead / 4 * 3))) {
            run_ahead_full_[ordinal] = true;
            memory_waiters_.push_back(job);
            run_ahead_waits_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        run_ahead_full_[ordinal] = false;
        job->written_bytes = written;
        device_written_[ordinal] += written;
        ++device_jobs_[ordinal];
    }
    // Counted in the device's budget from now, and never evicted until it completes.
    job->pinned = inputs;
    job->pinned.insert(job->pinned.end(), job->outputs.begin(), job->outputs.end());
    for (auto& v : job->pinned) table.pin(v);
    // The device times the kernels of the runs the model samples, or of all when their records
    // are kept (timestamps cost the GPU time).
    bool timed = options_.region_records > 0;
    if (!timed && options_.learn) {
        std::lock_guard model(model_mutex_);
        timed = placement_.wants_sample(r, static_cast<int>(ordinal));
    }
    std::function<void(double)> measured;
    if (timed) measured = [job](double seconds) { job->observed_s = seconds; };
    const auto t_submit = options_.log_exec ? std::chrono::steady_clock::now() : t0;  // (for the log only)
    try {
        device->submit({&r, inputs, job->outputs, {wanted.get(), job->wanted_on_host.size()},
                        [this, job](std::exception_ptr e) { complete(job, e, {}, true); }, std::move(measured),
                        /*refuse_cold=*/!may_wait});
    } catch (const KernelNotReady&) {
        unpin(*job);
        return hand_off(job);
    } catch (const std::exception& e) {
        // Out of memory anyway, it tries again once room is made.
        unpin(*job);
        const bool out_of_memory = dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
        if (out_of_memory && retry_after_oom(job)) return;
        return run_on_cpu_instead(e);
    }
    device_regions_.fetch_add(1, std::memory_order_relaxed);
    device_regions_each_[ordinal].fetch_add(1, std::memory_order_relaxed);
    devices_recorded |= 1u << ordinal;
    if (options_.log_exec) {
        // The host's share: compiling (a cold pipeline), allocating and recording; the GPU's time
        // is TANDEM_LOG=gpu's.
        // (its inputs brought over and room made, then the device's own recording: a cold kernel
        // built, or a batch in the way)
        auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(stderr, "[tandem exec] %s %s (%zu ops) recorded for %s: %.3f ms (inputs and room %.3f, submitted %.3f)\n",
                     r.shape.to_string().c_str(), r.summary().c_str(), r.program.size(), executor_name(job->placement).c_str(),
                     ms(t0, now), ms(t0, t_submit), ms(t_submit, now));
    }
    Deferred after;
    publish_recorded(job, device, after);
    // Consumers on the same device record now, into the same batch; drain flushes it.
    for (std::size_t i = 0; i < after.size(); ++i) {
        auto f = std::move(after[i]);
        f();
    }
}

void Scheduler::hand_off(const JobPtr& job) {
    Backend* const device = job->placement.backend;
    handed_off_.fetch_add(1, std::memory_order_relaxed);
    // Its kernel starts building now, on the builder's threads: the submitting thread may be
    // waiting for another's, and a plan of cold kernels builds them side by side.
    device->prepare(job->region);
    // In flight until it completes, so the scheduler waits for it; sent once recorded (the
    // regions it lets record behind it on this thread go in the same batch).
    submitters_[device->ordinal()]->enqueue([this, job, device] {
        const ActiveScope active(*this);
        record_on_device(job);
        device->flush();
    });
}

void Scheduler::evict(Backend& device, const std::vector<std::shared_ptr<Value>>& victims) {
    ResidencyTable& table = *residency_[device.ordinal()];
    for (auto& v : victims) {
        const bool only_copy = !v->host();
        if (only_copy) device.download(*v);  // done: nothing in flight uses it
        v->set_device(device.ordinal(), nullptr);  // its memory returns once the last batch that read it is done
        // Parts a split region left on a whole value hold windows of the copy just dropped: they
        // go too (the value has a host copy now), or they would keep its memory.
        if (v->split() && v->host()) v->clear_parts();
        table.note_eviction(v->bytes(), only_copy);
    }
}

void Scheduler::unpin(Job& job) {
    if (job.pinned.empty()) return;
    const std::size_t ordinal = job.placement.backend->ordinal();
    for (auto& v : job.pinned) residency_[ordinal]->unpin(*v);
    job.pinned.clear();
    std::lock_guard lock(mutex_);
    --device_jobs_[ordinal];
    device_written_[ordinal] -= std::exchange(job.written_bytes, 0);
}

bool Scheduler::retry_after_oom(const JobPtr& job) {
    constexpr int kMaxRetries = 8;
    if (job->memory_retries++ >= kMaxRetries) return false;
    Backend& device = *job->placement.backend;
    std::vector<std::shared_ptr<Value>> victims;
    try {
        victims = residency_[device.ordinal()]->evict_all();
        evict(device, victims);
    } catch (const std::exception&) {
        return false;  // a write-back failed: the device is in no state to try again
    }
    memory_retries_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        // Memory held by work in flight comes back when it completes: wait for that.
        if (device_jobs_[device.ordinal()] > 0) {
            memory_waiters_.push_back(job);
            return true;
        }
    }
    if (victims.empty()) return false;  // nothing in flight, nothing to evict: it cannot fit
    launch(job);
    return true;
}

void Scheduler::requeue_on_host(const JobPtr& job, Deferred& after) {
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    discharge(*job);
    job->placement = {&placement_.cpu(), "fallback from the device"};  // (stream_pieces 0)
    job->fell_back = true;
    {
        std::lock_guard model(model_mutex_);
        job->placement.compute_s = placement_.compute_s(job->region, kHost);
    }
    charge(*job, job->placement.compute_s, 0.0, outstanding_);
    job->completion->backend = job->placement.backend;
    job->completion->parts = 0;  // (no reader split the same way records behind it any more)
    for (auto& out : job->region.outputs) {
        NodeState& st = state(*out.node);
        st.eval.value = nullptr;
        st.lineage_depth = 0;
        st.recipe.reset();  // computed on the host now
    }
    std::fill(job->wanted_on_host.begin(), job->wanted_on_host.end(), true);
    if (wire(job)) after.push_back([this, job] { launch(job); });
}

std::vector<std::shared_ptr<Node>> Scheduler::recipe_inputs(const Node& n, const Region& region, RecipeMemo& memo) {
    std::vector<std::shared_ptr<Node>> recipe;
    recipe.reserve(n.inputs.size());
    for (const auto& in : n.inputs) recipe.push_back(recipe_of(in.get(), region, memo));
    return recipe;
}

std::shared_ptr<Node> Scheduler::recipe_leaf(Node& n, const Region& region) {
    for (const auto& o : region.outputs)
        if (o.node.get() == &n) return nullptr;  // its own output: made of its operands' recipes
    const Evaluation& e = state(n).eval;
    // Planned: its recipe; one of this plan without (an intermediate), made of its operands'
    // (its region is still whole); an earlier plan's without (on the CPU), itself.
    if (e.pending) {
        if (state(n).recipe) return nodes_.make_recipe(n, *state(n).recipe);
        return n.pass_mark == plan_mark_ ? nullptr : n.shared_from_this();
    }
    if (e.error) return n.shared_from_this();
    if (!e.value) return nullptr;  // inside the region: made of its operands' recipes
    if (auto host = e.value->host()) return make_input(nodes_, n.dtype, n.shape, std::move(host));
    // Only on a device: its own recipe (its inputs since it completed), without its data.
    return recomputable(n) ? nodes_.make_recipe(n, n.inputs) : n.shared_from_this();
}

std::shared_ptr<Node> Scheduler::recipe_of(Node* root, const Region& region, RecipeMemo& memo) {
    // Post-order (iterative: a fused region may be a long chain): a node's recipe is made once
    // its operands' are.
    std::vector<std::pair<Node*, std::size_t>> stack;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
        if (memo.made > memo.budget) return nullptr;
        auto& [n, next] = stack.back();
        if (next == 0) {
            if (memo.find(n)) {
                stack.pop_back();
                continue;
            }
            if (auto leaf = recipe_leaf(*n, region)) {
                memo.put(n, std::move(leaf));
                stack.pop_back();
                continue;
            }
        }
        if (next < n->inputs.size()) {
            Node* child = n->inputs[next++].get();
            if (!memo.find(child)) stack.emplace_back(child, 0);
            continue;
        }
        std::vector<std::shared_ptr<Node>> inputs;
        inputs.reserve(n->inputs.size());
        for (const auto& in : n->inputs) inputs.push_back(*memo.find(in.get()));
        Node* done = n;
        stack.pop_back();
        memo.put(done, nodes_.make_recipe(*done, std::move(inputs)));
        ++memo.made;
    }
    return *memo.find(root);
}

void Scheduler::complete(const JobPtr& job, std::exception_ptr error, std::vector<std::exception_ptr> per_output,
                         bool from_device) {
    const Region& r = job->region;
    per_output.resize(r.outputs.size());
    Deferred after;
    std::vector<std::shared_ptr<Node>> released;
    bool requeue = false;
    if (from_device) unpin(*job);
    if (options_.learn) {
        // The model learns how long regions like this one take there (a device region's kernels
        // are timed on the device; its dispatch cost is the model's own), under the model's lock
        // only: the scheduler's lock is taken per region by the threads recording device work.
        learn_link();
        if (!error && job->observed_s > 0) {
            const Backend& b = *job->placement.backend;
            const int executor = b.on_host() ? kHost : static_cast<int>(b.ordinal());
            std::lock_guard model(model_mutex_);
            placement_.learn(r, executor,
                             job->observed_s + (b.on_host() ? 0.0 : placement_.device_profile(b.ordinal()).rates.launch_s));
        }
    }
    if (trace_ && r.kind != RegionKind::view && job->started != std::chrono::steady_clock::time_point{}) {
        std::string name = std::string(region_kind_name(r.kind)) + " " + r.shape.to_string() + " " + r.summary();
        if (name.size() > 120) name = name.substr(0, 117) + "...";
        trace_->region(name, job->started,
                       job->placement.backend->on_host() ? -1 : static_cast<int>(job->placement.backend->ordinal()));
    }
    {
        std::lock_guard lock(mutex_);
        ++active_;  // this call, until its end: a requeued region may finish before it does
        // Memory this job held may be free now: what ran out of it tries again.
        if (from_device)
            for (auto& waiter : std::exchange(memory_waiters_, {})) after.push_back([this, waiter] { launch(waiter); });
        if (from_device) {
            // Recorded after an input that has since failed or gone back to the CPU: its
            // result was computed from garbage. Follow the input.
            for (auto& in : r.inputs) {
                const Evaluation& ie = state(*in).eval;
                if (ie.error) error = ie.error;
                else if (ie.pending && !error) requeue = true;
            }
            if (error && !is_data_error(error) && !requeue) {
                // The device failed: this region runs again on the CPU (its inputs' host copies
                // are downloaded or recomputed first), and after a lost device no more work goes
                // there.
                if (is_device_error(error)) placement_.disable_device(job->placement.backend->ordinal());
                requeue = true;
            }
            if (error && is_data_error(error) && r.outputs.size() > 1 && r.kind != RegionKind::kernel) requeue = true;
            if (requeue && error) job->device_error = error;
        }
        if (options_.log_placement && r.kind != RegionKind::view && job->charged_s > 0) {
            // The prediction against what happened: a CPU region's run, a device region's time
            // from its recording to its completion (its batch's wait included).
            const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - job->started).count();
            std::fprintf(stderr, "[tandem placement] done %s %s on %s: predicted %.3f ms, %s %.3f ms%s\n",
                         region_kind_name(r.kind), r.shape.to_string().c_str(),
                         executor_name(job->placement).c_str(), 1e3 * job->charged_s,
                         job->placement.backend->on_host() ? "ran" : "recorded to done", 1e3 * took,
                         error ? " (failed)" : "");
        }
        discharge(*job);
        if (requeue) {
            const char* why = !error                 ? " after an input was recomputed"
                              : is_data_error(error) ? " to find which of its outputs the data error concerns"
                                                     : " after a device error";
            if (!cpu_cannot_run(r))
                report_fallback(why, "[tandem] device region " + r.summary() + " runs again on the CPU" + why +
                                     (error && !is_data_error(error) ? ": " + error_text(error) : std::string()));
            requeue_on_host(job, after);
        } else {
            if (options_.region_records > 0 && r.kind != RegionKind::view) record(*job, error != nullptr);
            if (error) failed_.fetch_add(1, std::memory_order_relaxed);
            else if (r.kind != RegionKind::view) {  // a view computes and writes nothing
                regions_.fetch_add(1, std::memory_order_relaxed);
                ops_.fetch_add(r.program.size(), std::memory_order_relaxed);
                std::uint64_t written = 0;
                for (auto& o : r.outputs) written += static_cast<std::uint64_t>(o.node->shape.numel());
                elements_.fetch_add(written, std::memory_order_relaxed);
            }
            // The graph above a computed value is not needed again: it is released (outside the
            // lock, since that may free many nodes; after the futures resolve). A value that
            // lives only on a device keeps the recipe made when it was planned instead, to be
            // computed again should that device be lost.
            for (std::size_t j = 0; j < r.outputs.size(); ++j) {
                Node& n = *r.outputs[j].node;
                NodeState& st = state(n);
                std::exception_ptr e = error ? error : per_output[j];
                if (e) {
                    st.eval.error = e;
                    st.eval.value = nullptr;
                } else {
                    st.eval.value = job->outputs[j];
                }
                st.eval.pending.reset();
                const bool device_only = !e && !job->outputs[j]->host();
                // An intermediate of its plan (no recipe: nothing but the plan reads it) that lives
                // only on the device keeps its graph until its readers are done with it: a reader
                // sent back to the CPU after the device is lost computes it again from there. It
                // dies with its last reader, and the graph with it.
                if (!device_only || st.recipe) {
                    for (auto& in : n.inputs) released.push_back(std::move(in));
                    n.inputs.clear();
                }
                if (device_only && st.recipe) n.inputs = std::move(*st.recipe);
                else if (st.recipe) for (auto& in : *st.recipe) released.push_back(std::move(in));
                st.recipe.reset();
            }
            Completion& c = *job->completion;
            c.recorded = true;
            for (auto& w : c.on_recorded) w(after);
            for (auto& w : c.on_done) w(after);
            c.on_recorded.clear();
            c.on_done.clear();
            release_intermediates(r);
            // Likewise the job's own references, before any future resolves (its values live
            // on in the nodes that own them: one let go above dies now, not with the batch).
            for (auto& out : job->region.outputs) released.push_back(std::move(out.node));
            for (auto& in : job->region.inputs) released.push_back(std::move(in));
            job->outputs.clear();
        }
    }
    // Resolve first; the graph is freed by the next build, or soon (NodeTable::bury).
    nodes_.bury(released);
    drain(after);
    std::lock_guard lock(mutex_);
    --active_;
    if (!requeue) --in_flight_;  // a requeued region is still in flight
    if (in_flight_ == 0 && active_ == 0) idle_.notify_all();
}

void Scheduler::record(const Job& job, bool failed) {
    const Region& r = job.region;
    const PlacementDecision& d = job.placement;
    RegionRecord rec;
    rec.kind = region_kind_name(r.kind);
    rec.shape = r.shape.to_string();
    rec.ops = r.summary();
    rec.executor = executor_name(d);
    rec.reason = d.reason;
    rec.predicted_cpu_ms = d.cpu_s >= 0 ? 1e3 * d.cpu_s : -1;
    rec.predicted_device_ms = d.device_s >= 0 ? 1e3 * d.device_s : -1;
    rec.predicted_ms = 1e3 * d.compute_s;
    rec.compute_ms = job.observed_s > 0 ? 1e3 * job.observed_s : -1;
    if (job.started != std::chrono::steady_clock::time_point{})
        rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - job.started).count();
    rec.bytes_read = static_cast<std::uint64_t>(r.cost.bytes_read());
    rec.bytes_written = static_cast<std::uint64_t>(r.cost.bytes_written());
    rec.failed = failed;
    rec.fell_back = job.fell_back;
    records_.push_back(std::move(rec));
    if (records_.size() > options_.region_records) records_.pop_front();
}

std::vector<RegionRecord> Scheduler::region_records() const {
    std::lock_guard lock(mutex_);
    return {records_.begin(), records_.end()};
}

std::shared_ptr<Node> Scheduler::pending_operand(const Node& n, std::size_t k) const {
    std::lock_guard lock(mutex_);
    return k >= n.inputs.size() || state(n).eval.done() ? nullptr : n.inputs[k];
}

std::pair<MachineProfile, std::uint64_t> Scheduler::learned() const {
    std::lock_guard model(model_mutex_);
    return {placement_.profile(), placement_.runs_learned()};
}

void Scheduler::add_metrics(Metrics& m) const {
    m.plans = plans_.load(std::memory_order_relaxed);
    m.plans_fused_from_cache = fusion_cache_.hits();
    m.regions_executed = regions_.load(std::memory_order_relaxed);
    m.regions_failed = failed_.load(std::memory_order_relaxed);
    m.ops_executed = ops_.load(std::memory_order_relaxed);
    m.elements_written = elements_.load(std::memory_order_relaxed);
    m.device_regions = device_regions_.load(std::memory_order_relaxed);
    for (std::size_t d = 0; d < placement_.devices().size(); ++d)
        m.device_regions_each.push_back(device_regions_each_[d].load(std::memory_order_relaxed));
    m.device_fallbacks = fallbacks_.load(std::memory_order_relaxed);
    m.memory_retries = memory_retries_.load(std::memory_order_relaxed);
    m.budget_waits = budget_waits_.load(std::memory_order_relaxed);
    m.run_ahead_waits = run_ahead_waits_.load(std::memory_order_relaxed);
    m.values_recomputed = recomputed_.load(std::memory_order_relaxed);
    m.lineage_checkpoints = checkpoints_.load(std::memory_order_relaxed);
    m.streamed_regions = streamed_.load(std::memory_order_relaxed);
    m.streamed_pieces = pieces_.load(std::memory_order_relaxed);
    m.split_regions = split_.load(std::memory_order_relaxed);
    m.split_pieces = split_pieces_.load(std::memory_order_relaxed);
    m.split_values_assembled = assembled_.load(std::memory_order_relaxed);
    m.recordings_handed_off = handed_off_.load(std::memory_order_relaxed);
    {
        std::lock_guard model(model_mutex_);
        m.runs_learned = placement_.runs_learned();
        m.explorations = placement_.explorations();
    }
    for (const auto& table : residency_) {  // summed over the devices (the peak: the highest)
        const ResidencyCounters c = table->counters();
        m.device_memory_budget = std::max(m.device_memory_budget, table->budget());
        m.device_peak_resident_bytes = std::max(m.device_peak_resident_bytes, c.peak_resident_bytes);
        m.evictions += c.evictions;
        m.write_backs += c.write_backs;
        m.evicted_bytes += c.evicted_bytes;
        m.written_back_bytes += c.written_back_bytes;
    }
}

}  // namespace tandem::detail
