// A device's submitting thread: where the scheduler records the regions whose recording would
// block (a kernel still being built, inputs that must come from another device first), so that
// the thread that launched them -- a user's gather, a device's completion thread, a CPU worker
// -- never waits for a compile or a copy. Recordings that cannot block are made where they are
// launched (no hand-off on the path of a short program; AdaptiveCpp's instant submission is the
// model). It also records a split region's pieces for its device while the region's worker
// records another device's (scheduler/split_run.cpp). One thread per device, first in, first out.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tandem::detail {

class SubmitThread {
public:
    SubmitThread();
    /// Runs what is queued, then joins the thread.
    ~SubmitThread();
    SubmitThread(const SubmitThread&) = delete;
    SubmitThread& operator=(const SubmitThread&) = delete;

    /// Runs `job` on the thread, after those queued before it; never blocks.
    void enqueue(std::function<void()> job);
    /// True on the thread itself (a recording it makes may launch the next one in place).
    bool on_this_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

private:
    void work();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::thread thread_;  // last: started once the rest exists
};

}  // namespace tandem::detail
