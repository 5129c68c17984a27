#include "scheduler/submit_thread.hpp"

#include <cstdio>
#include <exception>

namespace tandem::detail {

SubmitThread::SubmitThread() : thread_([this] { work(); }) {}

SubmitThread::~SubmitThread() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void SubmitThread::enqueue(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void SubmitThread::work() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping, and nothing left to run
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        try {
            job();
        } catch (const std::exception& e) {
            // The scheduler's recordings report their failures through their regions; keep the
            // thread whatever escapes.
            std::fprintf(stderr, "[tandem] a device submission threw: %s\n", e.what());
        } catch (...) {
            std::fprintf(stderr, "[tandem] a device submission threw\n");
        }
    }
}

}  // namespace tandem::detail
