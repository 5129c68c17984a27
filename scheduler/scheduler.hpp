// The scheduler: turns a gather into a plan (the pending part of the graph, fused into regions),
// places each region, and runs regions as their inputs become ready, without blocking the
// caller. Many threads may gather at once; a value is computed once however many ask for it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/fusion.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/work_queue.hpp"
#include "tandem/future.hpp"
#include "tandem/host_array.hpp"
#include "tandem/runtime.hpp"

namespace tandem::detail {

/// Things to do once the scheduler's lock is released (start jobs, resolve futures).
using Deferred = std::vector<std::function<void()>>;

/// Completes when a region's outputs are computed (or failed). Guarded by the scheduler lock.
struct Completion {
    bool done = false;
    std::vector<std::function<void(Deferred&)>> waiters;  ///< run under the lock when done
};

struct SchedulerOptions {
    int threads = 1;
    bool fuse = true;
    bool log_graph = false;
    bool log_exec = false;
};

class Scheduler {
public:
    Scheduler(Placement placement, HostPool& pool, const SchedulerOptions& options);
    /// Waits for the work in flight.
    ~Scheduler();

    Future<std::vector<HostArray>> gather(const std::vector<std::shared_ptr<Node>>& targets);
    void wait_idle();
    /// Runs f under the scheduler's lock (reading Node::inputs or Node::eval safely).
    template <class F>
    auto locked(F f) {
        std::lock_guard lock(mutex_);
        return f();
    }
    void add_metrics(Metrics& m) const;

private:
    struct Job {
        Region region;
        PlacementDecision placement;
        std::shared_ptr<Completion> completion;
        std::size_t waiting = 0;  // inputs still in flight
    };
    void launch(std::shared_ptr<Job> job);
    void run(Job& job);
    /// Allocates `outputs` and runs `r` on the placed backend; returns the error, if any.
    std::exception_ptr execute(const PlacementDecision& placement, const Region& r,
                               const std::vector<std::shared_ptr<Storage>>& inputs,
                               std::vector<std::shared_ptr<Storage>>& outputs);

    Placement placement_;
    HostPool& pool_;
    SchedulerOptions options_;
    std::mutex mutex_;
    std::condition_variable idle_;
    std::size_t in_flight_ = 0;
    WorkQueue workers_;  // last: its threads stop before the rest is destroyed
    std::atomic<std::uint64_t> plans_{0}, regions_{0}, failed_{0}, ops_{0}, elements_{0};
};

}  // namespace tandem::detail
