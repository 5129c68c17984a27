// Future<T>: the result of asynchronous work. Copyable (copies share one result, like
// std::shared_future), chainable without blocking a thread (then, when_all), and carrying
// any error thrown while the work ran.
//
//   tandem::Future<tandem::HostArray> f = y.gather();
//   auto total = f.then([](const tandem::HostArray& h) { return h.numel(); });
//   total.get();  // blocks; rethrows the error if y's computation failed
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/error.hpp"

namespace tandem {

template <class T> class Future;
template <class T> class Promise;

namespace detail {

/// Hands a continuation to the threads that should run it (the runtime's continuation threads).
using Post = std::function<void(std::function<void()>)>;

template <class T>
class SharedState {
public:
    /// Continuations registered before the result arrives run through `post` instead of on the
    /// thread that sets the result (a device's completion thread must never run user code).
    void set_post(Post post) {
        std::lock_guard lock(mutex_);
        post_ = std::move(post);
    }
    void set_value(T value) { finish([&] { value_.emplace(std::move(value)); }); }
    void set_error(std::exception_ptr e) { finish([&] { error_ = std::move(e); }); }

    bool ready() const {
        std::lock_guard lock(mutex_);
        return done_;
    }
    void wait() const {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return done_; });
    }
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> d) const {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, d, [&] { return done_; });
    }
    const T& get() const {
        wait();
        if (error_) std::rethrow_exception(error_);
        return *value_;
    }
    /// Runs `k` once the state is ready: now, on this thread, if it already is; otherwise on
    /// the thread that completes it, or through the state's post function if it has one.
    void on_ready(std::function<void()> k) {
        {
            std::lock_guard lock(mutex_);
            if (!done_) {
                continuations_.push_back(std::move(k));
                return;
            }
        }
        k();
    }
    std::exception_ptr error() const {
        std::lock_guard lock(mutex_);
        return error_;
    }

private:
    template <class Store>
    void finish(Store&& store) {
        std::vector<std::function<void()>> ks;
        Post post;
        {
            std::lock_guard lock(mutex_);
            if (done_) throw Error("tandem::Promise: result set twice");
            store();
            done_ = true;
            ks.swap(continuations_);
            if (!ks.empty()) post = post_;
        }
        cv_.notify_all();
        for (auto& k : ks) {
            if (post) post(std::move(k));
            else k();
        }
    }

    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    bool done_ = false;
    std::optional<T> value_;
    std::exception_ptr error_;
    std::vector<std::function<void()>> continuations_;
    Post post_;
};

template <class T>
Future<T> continue_through(const Future<T>& f, Post post);

}  // namespace detail

/// The producing side of a Future. Tandem's scheduler completes these; users rarely need one.
template <class T>
class Promise {
public:
    Promise() : state_(std::make_shared<detail::SharedState<T>>()) {}
    Future<T> future() const { return Future<T>(state_); }
    void set_value(T value) const { state_->set_value(std::move(value)); }
    void set_error(std::exception_ptr e) const { state_->set_error(std::move(e)); }

private:
    template <class U> friend Future<U> detail::continue_through(const Future<U>& f, detail::Post post);
    std::shared_ptr<detail::SharedState<T>> state_;
};

template <class T>
class Future {
public:
    using value_type = T;

    /// An invalid future (valid() == false); every other call on it throws tandem::Error.
    Future() = default;

    bool valid() const noexcept { return state_ != nullptr; }
    /// True once a value or an error is there; never blocks.
    bool ready() const { return checked().ready(); }
    void wait() const { checked().wait(); }
    /// Waits at most `d`; returns ready().
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> d) const {
        return checked().wait_for(d);
    }
    /// Blocks until ready, then returns the value or rethrows the error.
    const T& get() const { return checked().get(); }

    /// A future of f(value), run without blocking any thread once this one is ready: on one of
    /// the runtime's continuation threads for a future the runtime returned (f may block, even
    /// on other values of the runtime), on the thread that completes it for a plain Promise's,
    /// and at once on this thread if this future is ready already. An error here skips f and passes on; an exception thrown by
    /// f becomes the new future's error. If f returns a Future<U>, the result is Future<U>;
    /// if it returns void, Future<std::monostate>.
    template <class F>
    auto then(F f) const {
        using R = std::invoke_result_t<F, const T&>;
        if constexpr (is_future<R>::value) {
            using U = typename R::value_type;
            Promise<U> p;
            auto s = state_;
            checked().on_ready([s, p, f = std::move(f)]() mutable {
                if (auto e = s->error()) return p.set_error(e);
                try {
                    R inner = f(s->get());
                    inner.forward_to(p);
                } catch (...) {
                    p.set_error(std::current_exception());
                }
            });
            return p.future();
        } else {
            using V = std::conditional_t<std::is_void_v<R>, std::monostate, R>;
            return then_value<V>(std::move(f));
        }
    }

private:
    template <class U> friend class Future;
    template <class U> friend class Promise;
    template <class U> friend Future<std::vector<U>> when_all(std::vector<Future<U>> futures);
    template <class U> friend Future<U> detail::continue_through(const Future<U>& f, detail::Post post);

    template <class X> struct is_future : std::false_type {};
    template <class X> struct is_future<Future<X>> : std::true_type {};

    template <class V, class F>
    Future<V> then_value(F f) const {
        Promise<V> p;
        auto s = state_;
        checked().on_ready([s, p, f = std::move(f)]() mutable {
            if (auto e = s->error()) return p.set_error(e);
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<F, const T&>>) {
                    f(s->get());
                    p.set_value(V{});
                } else {
                    p.set_value(f(s->get()));
                }
            } catch (...) {
                p.set_error(std::current_exception());
            }
        });
        return p.future();
    }

    /// Hands this future's value or error to `p` once it is there.
    void forward_to(const Promise<T>& p) const {
        auto s = state_;
        checked().on_ready([s, p] {
            if (auto e = s->error()) return p.set_error(e);
            p.set_value(s->get());
        });
    }

    explicit Future(std::shared_ptr<detail::SharedState<T>> s) : state_(std::move(s)) {}
    detail::SharedState<T>& checked() const {
        if (!state_) throw Error("tandem::Future: this future is not valid (default-constructed)");
        return *state_;
    }
    std::shared_ptr<detail::SharedState<T>> state_;
};

namespace detail {
/// `f`'s result in a future whose continuations run through `post` rather than on the thread
/// that completes `f` (the runtime hands its futures to users this way).
template <class T>
Future<T> continue_through(const Future<T>& f, Post post) {
    Promise<T> p;
    p.state_->set_post(std::move(post));
    f.forward_to(p);
    return p.future();
}
}  // namespace detail

/// A future that is already ready with `value`.
template <class T>
Future<T> make_ready_future(T value) {
    Promise<T> p;
    p.set_value(std::move(value));
    return p.future();
}

/// A future of all the values, in order, ready when every input is; the first error (in
/// input order) among the inputs becomes its error. Blocks no thread.
template <class T>
Future<std::vector<T>> when_all(std::vector<Future<T>> futures) {
    Promise<std::vector<T>> p;
    if (futures.empty()) {
        p.set_value({});
        return p.future();
    }
    for (auto& f : futures) f.checked();
    struct Join {
        std::vector<Future<T>> inputs;
        std::mutex mutex;
        std::size_t remaining;
    };
    auto join = std::make_shared<Join>();
    join->inputs = std::move(futures);
    join->remaining = join->inputs.size();
    for (auto& f : join->inputs) {
        f.state_->on_ready([join, p] {
            {
                std::lock_guard lock(join->mutex);
                if (--join->remaining != 0) return;
            }
            std::vector<T> values;
            values.reserve(join->inputs.size());
            for (auto& in : join->inputs) {
                if (auto e = in.state_->error()) return p.set_error(e);
                values.push_back(in.state_->get());
            }
            p.set_value(std::move(values));
        });
    }
    return p.future();
}

}  // namespace tandem
