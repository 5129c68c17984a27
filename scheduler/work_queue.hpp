// Where the scheduler's jobs run: a oneTBB task arena sized from hwloc. A job may itself use
// tbb::parallel_for, which then runs on the same arena's threads.
//
// ThreadSanitizer builds use a small std::thread pool instead: Debian's oneTBB is not
// instrumented, so TSan cannot see the synchronisation inside its task objects and reports each
// handoff as a race. The scheduler above this class is the same code in both builds.
#pragma once

#include <functional>
#include <memory>

namespace tandem::detail {

class WorkQueue {
public:
    explicit WorkQueue(int threads);
    /// Waits for the jobs enqueued to finish (their captures released).
    ~WorkQueue();
    WorkQueue(const WorkQueue&) = delete;
    WorkQueue& operator=(const WorkQueue&) = delete;

    /// Runs `job` on a worker, some time later; never blocks.
    void enqueue(std::function<void()> job);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::detail
