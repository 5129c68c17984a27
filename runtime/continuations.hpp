// The runtime's continuation threads: where the `then` continuations of the futures it hands out
// run. Never on a device's completion thread or a CPU worker: a continuation may block (call
// get() on another value of the same runtime) or take long, and either would stall or deadlock
// the work it waits for. A continuation always gets a thread: when every thread is busy (blocked
// continuations included) the pool starts one more, so a continuation that waits for another
// one to run never waits forever.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tandem/future.hpp"

namespace tandem::detail {

class ContinuationPool : public std::enable_shared_from_this<ContinuationPool> {
public:
    ContinuationPool() = default;
    ~ContinuationPool() { stop(); }
    ContinuationPool(const ContinuationPool&) = delete;
    ContinuationPool& operator=(const ContinuationPool&) = delete;

    /// Runs what is still queued, then joins the threads (the runtime calls it on its way out;
    /// later posts run on the posting thread).
    void stop();
    /// Queues `k` for a continuation thread (runs it here once the pool has stopped).
    void post(std::function<void()> k);
    /// A post function for futures (tandem/future.hpp's continue_through); it holds the pool
    /// weakly and runs continuations on the calling thread once the pool is gone.
    Post poster();
    /// Threads started so far (they stay for the runtime's life: a burst of blocked
    /// continuations leaves that many behind, idle).
    std::size_t threads() const;

private:
    void work();  // a thread's loop; each thread holds the pool until stop() lets it end

    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> queue_;
    std::vector<std::thread> threads_;
    std::size_t idle_ = 0;
    bool stopping_ = false;
};

}  // namespace tandem::detail
