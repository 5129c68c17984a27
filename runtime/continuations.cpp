#include "runtime/continuations.hpp"

#include <cstdio>
#include <exception>

namespace tandem::detail {

void ContinuationPool::stop() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        threads.swap(threads_);
    }
    ready_.notify_all();
    for (auto& t : threads) {
        // A continuation may stop the pool (destroying its runtime): that thread cannot join
        // itself; it finds the pool stopping when it returns, and its reference keeps the
        // pool alive until then.
        if (t.get_id() == std::this_thread::get_id()) t.detach();
        else t.join();
    }
}

void ContinuationPool::post(std::function<void()> k) {
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            queue_.push_back(std::move(k));
            // Each queued continuation needs a thread of its own that is free now: one that is
            // blocked in another continuation cannot run it.
            if (queue_.size() > idle_) threads_.emplace_back([self = shared_from_this()] { self->work(); });
            else ready_.notify_one();
            return;
        }
    }
    k();
}

Post ContinuationPool::poster() {
    std::weak_ptr<ContinuationPool> weak = weak_from_this();
    return [weak](std::function<void()> k) {
        if (auto pool = weak.lock()) pool->post(std::move(k));
        else k();
    };
}

std::size_t ContinuationPool::threads() const {
    std::lock_guard lock(mutex_);
    return threads_.size();
}

void ContinuationPool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        ++idle_;
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) return;  // stopping, and nothing left to run
        std::function<void()> k = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        try {
            k();
        } catch (const std::exception& e) {
            // then() turns a continuation's exception into its future's error; nothing else
            // posted here throws. Keep the thread either way.
            std::fprintf(stderr, "[tandem] a continuation threw: %s\n", e.what());
        } catch (...) {
            std::fprintf(stderr, "[tandem] a continuation threw\n");
        }
        k = nullptr;  // destroy its captures before waiting again
        lock.lock();
    }
}

}  // namespace tandem::detail
