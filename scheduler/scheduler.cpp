#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_set>

#include "runtime/memory.hpp"
#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

/// Post-order walk from the targets over the nodes that are neither computed nor in flight:
/// the inputs of a pending node come before it. Iterative, since graphs built in loops are deep.
std::vector<Node*> pending_nodes(const std::vector<std::shared_ptr<Node>>& targets) {
    std::vector<Node*> order;
    std::unordered_set<Node*> seen;
    std::vector<std::pair<Node*, std::size_t>> stack;
    auto wanted = [&](Node* n) { return !n->eval.done() && !n->eval.pending && seen.insert(n).second; };
    for (auto& t : targets) {
        if (!wanted(t.get())) continue;
        stack.emplace_back(t.get(), 0);
        while (!stack.empty()) {
            auto& [n, next] = stack.back();
            if (next < n->inputs.size()) {
                Node* child = n->inputs[next++].get();
                if (wanted(child)) stack.emplace_back(child, 0);
            } else {
                order.push_back(n);
                stack.pop_back();
            }
        }
    }
    return order;
}

}  // namespace

Scheduler::Scheduler(Placement placement, HostPool& pool, const SchedulerOptions& options)
    : placement_(std::move(placement)),
      pool_(pool),
      options_(options),
      workers_(options.threads) {}

Scheduler::~Scheduler() { wait_idle(); }

void Scheduler::wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return in_flight_ == 0; });
}

Future<std::vector<HostArray>> Scheduler::gather(const std::vector<std::shared_ptr<Node>>& targets) {
    Promise<std::vector<HostArray>> promise;
    auto result = promise.future();
    std::vector<std::shared_ptr<Job>> ready;
    Deferred after;
    {
        std::lock_guard lock(mutex_);
        std::vector<Node*> pending = pending_nodes(targets);
        if (!pending.empty()) {
            plans_.fetch_add(1, std::memory_order_relaxed);
            std::unordered_set<Node*> in_plan(pending.begin(), pending.end());
            std::vector<Node*> wanted;
            for (auto& t : targets)
                if (in_plan.count(t.get())) wanted.push_back(t.get());
            std::vector<Region> regions = fuse(pending, wanted, {options_.fuse});
            std::vector<std::shared_ptr<Job>> jobs;
            for (Region& r : regions) {
                auto job = std::make_shared<Job>();
                job->region = std::move(r);
                job->placement = placement_.place(job->region);
                job->completion = std::make_shared<Completion>();
                for (auto& out : job->region.outputs) out.node->eval.pending = job->completion;
                if (options_.log_graph)
                    std::fprintf(stderr, "[tandem graph] %s on %s\n", job->region.to_string().c_str(),
                                 std::string(job->placement.backend->name()).c_str());
                jobs.push_back(std::move(job));
                ++in_flight_;
            }
            // Wire dependencies only now that every region of the plan has its completion.
            for (auto& job : jobs) {
                for (auto& in : job->region.inputs) {
                    if (in->eval.done() || !in->eval.pending) continue;
                    ++job->waiting;
                    in->eval.pending->waiters.push_back([this, job](Deferred& d) {
                        if (--job->waiting == 0) d.push_back([this, job] { launch(job); });
                    });
                }
                if (job->waiting == 0) ready.push_back(job);
            }
        }
        // The futures: ready when every target is computed.
        struct Join {
            std::vector<std::shared_ptr<Node>> targets;
            std::size_t remaining = 0;
            Promise<std::vector<HostArray>> promise;
        };
        auto join = std::make_shared<Join>();
        join->targets = targets;
        join->promise = promise;
        auto resolve = [join](Deferred& d) {
            // Under the lock: read the values; resolve outside it (continuations run user code).
            std::exception_ptr error;
            std::vector<HostArray> values;
            for (auto& t : join->targets) {
                if (t->eval.error) {
                    error = t->eval.error;
                    break;
                }
                values.emplace_back(t->eval.value, t->shape, t->dtype);
            }
            // Hold no node past this point: once the future resolves, a node the user dropped must
            // be gone, or rebuilding the same expression would find it computed (sometimes).
            join->targets.clear();
            d.push_back([join, error, values = std::move(values)]() mutable {
                if (error) join->promise.set_error(error);
                else join->promise.set_value(std::move(values));
            });
        };
        std::unordered_set<Node*> counted;
        for (auto& t : targets) {
            if (t->eval.done() || !counted.insert(t.get()).second) continue;
            ++join->remaining;
            t->eval.pending->waiters.push_back([join, resolve](Deferred& d) {
                if (--join->remaining == 0) resolve(d);
            });
        }
        if (join->remaining == 0) resolve(after);
    }
    for (auto& f : after) f();
    for (auto& job : ready) launch(job);
    return result;
}

void Scheduler::launch(std::shared_ptr<Job> job) {
    workers_.enqueue([this, job = std::move(job)] { run(*job); });
}

void Scheduler::run(Job& job) {
    const Region& r = job.region;
    std::exception_ptr error;
    std::vector<std::shared_ptr<Storage>> inputs;
    {
        std::lock_guard lock(mutex_);
        for (auto& in : r.inputs) {
            if (in->eval.error) {
                error = in->eval.error;  // a failed input poisons what depends on it, nothing else
                break;
            }
            inputs.push_back(in->eval.value);
        }
    }
    std::vector<std::shared_ptr<Storage>> outputs;
    std::vector<std::exception_ptr> errors(r.outputs.size());
    auto t0 = std::chrono::steady_clock::now();
    const bool inputs_ok = !error;
    if (inputs_ok) error = execute(job.placement, r, inputs, outputs);
    if (error && inputs_ok && r.outputs.size() > 1) {
        outputs.resize(r.outputs.size());
        // A data-dependent failure (a NaN in a logical op) must poison only the outputs that
        // depend on it: run each output's own slice of the region to find out which.
        for (std::size_t j = 0; j < r.outputs.size(); ++j) {
            Region part = r.slice(j);
            std::vector<std::shared_ptr<Storage>> part_inputs, part_outputs;
            for (auto& in : part.inputs)
                for (std::size_t k = 0; k < r.inputs.size(); ++k)
                    if (r.inputs[k] == in) part_inputs.push_back(inputs[k]);
            errors[j] = execute(job.placement, part, part_inputs, part_outputs);
            if (!errors[j]) outputs[j] = part_outputs.front();
        }
        error = nullptr;
    } else if (error) {
        std::fill(errors.begin(), errors.end(), error);
    }
    if (options_.log_exec) {
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "[tandem exec] %s %s (%zu ops) on %s: %.3f ms%s\n", r.shape.to_string().c_str(),
                     r.summary().c_str(), r.program.size(), std::string(job.placement.backend->name()).c_str(), ms,
                     error ? " FAILED" : "");
    }
    for (auto& e : errors)
        if (e) error = e;
    if (error) failed_.fetch_add(1, std::memory_order_relaxed);
    else {
        regions_.fetch_add(1, std::memory_order_relaxed);
        ops_.fetch_add(r.program.size(), std::memory_order_relaxed);
        elements_.fetch_add(static_cast<std::uint64_t>(r.shape.numel()) * r.outputs.size(), std::memory_order_relaxed);
    }

    Deferred after;
    std::vector<std::shared_ptr<Node>> released;
    {
        std::lock_guard lock(mutex_);
        for (std::size_t j = 0; j < r.outputs.size(); ++j) {
            Node& n = *r.outputs[j].node;
            if (errors[j]) n.eval.error = errors[j];
            else n.eval.value = outputs[j];
            n.eval.pending.reset();
            // The graph above a computed value is never needed again; release it (outside the
            // lock, since that may free many nodes).
            for (auto& in : n.inputs) released.push_back(std::move(in));
            n.inputs.clear();
        }
        job.completion->done = true;
        for (auto& w : job.completion->waiters) w(after);
        job.completion->waiters.clear();
        // Likewise the job's own references, before any future resolves.
        for (auto& out : job.region.outputs) released.push_back(std::move(out.node));
        for (auto& in : job.region.inputs) released.push_back(std::move(in));
    }
    released.clear();
    for (auto& f : after) f();
    {
        std::lock_guard lock(mutex_);
        if (--in_flight_ == 0) idle_.notify_all();
    }
}

std::exception_ptr Scheduler::execute(const PlacementDecision& placement, const Region& r,
                                      const std::vector<std::shared_ptr<Storage>>& inputs,
                                      std::vector<std::shared_ptr<Storage>>& outputs) {
    try {
        outputs.clear();
        for (auto& out : r.outputs) {
            std::size_t bytes = static_cast<std::size_t>(out.node->shape.numel()) * dtype_size(out.node->dtype);
            outputs.push_back(pool_.allocate(bytes, out.node->label()));
        }
        std::vector<const Storage*> in_ptrs;
        for (auto& s : inputs) in_ptrs.push_back(s.get());
        std::vector<Storage*> out_ptrs;
        for (auto& s : outputs) out_ptrs.push_back(s.get());
        placement.backend->execute(r, in_ptrs, out_ptrs);
        return nullptr;
    } catch (...) {
        return std::current_exception();
    }
}

void Scheduler::add_metrics(Metrics& m) const {
    m.plans = plans_.load(std::memory_order_relaxed);
    m.regions_executed = regions_.load(std::memory_order_relaxed);
    m.regions_failed = failed_.load(std::memory_order_relaxed);
    m.ops_executed = ops_.load(std::memory_order_relaxed);
    m.elements_written = elements_.load(std::memory_order_relaxed);
}

}  // namespace tandem::detail
