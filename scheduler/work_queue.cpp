#include "scheduler/work_queue.hpp"

#include <algorithm>

#if defined(TANDEM_TSAN)
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>
#else
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <condition_variable>
#include <mutex>
#endif

namespace tandem::detail {

#if defined(TANDEM_TSAN)

struct WorkQueue::Impl {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> jobs;
    bool stopping = false;
    std::vector<std::thread> threads;

    void work() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lock(mutex);
                wake.wait(lock, [&] { return stopping || !jobs.empty(); });
                if (jobs.empty()) return;
                job = std::move(jobs.front());
                jobs.pop_front();
            }
            job();
        }
    }
};

WorkQueue::WorkQueue(int threads) : impl_(std::make_unique<Impl>()) {
    for (int i = 0; i < std::max(threads, 1); ++i) impl_->threads.emplace_back([this] { impl_->work(); });
}

WorkQueue::~WorkQueue() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake.notify_all();
    for (auto& t : impl_->threads) t.join();
}

void WorkQueue::enqueue(std::function<void()> job) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->jobs.push_back(std::move(job));
    }
    impl_->wake.notify_one();
}

#else

struct WorkQueue::Impl {
    explicit Impl(int threads)
        // oneTBB sizes its worker pool for one master thread plus workers; this arena has no
        // master (user threads only enqueue), so allow one more thread, or a worker sits idle.
        : parallelism(tbb::global_control::max_allowed_parallelism,
                      std::max<std::size_t>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism),
                                            static_cast<std::size_t>(threads) + 1)),
          // No slot reserved for a master thread, for the same reason.
          arena(threads, 0) {}
    tbb::global_control parallelism;
    tbb::task_arena arena;
    // Jobs enqueued and not yet finished, their captures included: the destructor waits for
    // them, since destroying an arena does not wait for its tasks.
    std::mutex mutex;
    std::condition_variable idle;
    std::size_t pending = 0;
};

WorkQueue::WorkQueue(int threads) : impl_(std::make_unique<Impl>(std::max(threads, 1))) {}

WorkQueue::~WorkQueue() {
    std::unique_lock lock(impl_->mutex);
    impl_->idle.wait(lock, [&] { return impl_->pending == 0; });
}

void WorkQueue::enqueue(std::function<void()> job) {
    {
        std::lock_guard lock(impl_->mutex);
        ++impl_->pending;
    }
    // The task holds plain pointers only; the job and what it captured are released before the
    // task says it is done.
    auto* owned = new std::function<void()>(std::move(job));
    impl_->arena.enqueue([impl = impl_.get(), owned] {
        (*owned)();
        delete owned;
        std::lock_guard lock(impl->mutex);
        if (--impl->pending == 0) impl->idle.notify_all();
    });
}

#endif

}  // namespace tandem::detail
