// The scheduler's split regions: one region run on several devices at once, a piece on each
// (data parallelism; the pieces are streaming's, scheduler/streaming.hpp, cut by plan_split). A
// window output stays where each piece computed it, as the parts of a split value (Value::parts)
// that the next region split the same way reads in place; partials come back and finish on the
// host in the canonical order, so the bits are those of the whole region on one device.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "scheduler/errors.hpp"
#include "scheduler/piece_flight.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/streaming.hpp"

namespace tandem::detail {

void Scheduler::run_split(const JobPtr& job) {
    const Region& r = job->region;
    std::vector<std::shared_ptr<Value>> inputs;
    if (std::exception_ptr error = input_values(*job, inputs)) return complete(job, error, {}, false);
    job->started = std::chrono::steady_clock::now();
    auto on_cpu_instead = [&](const std::string& why) {
        run_on_cpu_instead(job, "split " + why, "[tandem] split region " + r.summary() + " runs on the CPU instead: " + why);
    };
    // A producer split the same way that went back to the CPU after it was recorded (and woke
    // this one) has no value until it is done there: so does this region, on the CPU.
    for (const auto& v : inputs)
        if (!v) return on_cpu_instead("an input it reads is computed again on the CPU");
    const StreamPlan& plan = job->placement.split_plan;
    const Backend* const devices_first = job->placement.backend;  // (its completion's, while a split)
    // Piece i runs on the i-th of the split's devices (the last takes the rest: a reduction's
    // tail), so that the parts of a value split by one region sit where the next one's pieces
    // run. A device lost since placement leaves its pieces to the others.
    std::vector<Backend*> devices;
    for (std::size_t d = 0; d < placement_.devices().size(); ++d)
        if ((job->placement.split >> d & 1u) && placement_.device_enabled(d)) devices.push_back(placement_.devices()[d]);
    if (devices.empty()) return on_cpu_instead("its devices are lost");
    const std::int64_t pieces = plan.pieces();
    auto device_index = [&](std::int64_t i) {
        return static_cast<std::size_t>(std::min<std::int64_t>(i, static_cast<std::int64_t>(devices.size()) - 1));
    };
    auto device_of = [&](std::int64_t i) -> Backend& { return *devices[device_index(i)]; };
    // staged[i][k]: piece i's window of input k, brought down alone (see below).
    std::vector<std::vector<std::shared_ptr<Storage>>> staged(static_cast<std::size_t>(pieces));
    try {
        // A window that its piece cannot read in place on its device (an input on another device,
        // or split another way) goes up from the host. An input whole on one device sends down
        // only the windows the other devices' pieces read (half of W1's 800 MB on two GPUs, not
        // all of it); any other comes down whole first, once.
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const Value& v = *inputs[k];
            if (v.host()) continue;
            std::vector<std::int64_t> elsewhere;  // pieces that cannot read their window in place
            bool windowed = true;
            for (std::int64_t i = 0; i < pieces; ++i) {
                const Backend& device = device_of(i);
                const auto w = piece_window(r, plan, i, k);
                windowed = windowed && w.has_value();
                if (!(w ? window_on(device, v, w->first, w->second) != nullptr : v.device(device.ordinal()) != nullptr))
                    elsewhere.push_back(i);
            }
            if (elsewhere.empty()) continue;
            const std::uint32_t on = v.device_mask();
            if (!windowed || on == 0) {  // read whole somewhere, or in parts another way
                ensure_host({inputs[k]});
                continue;
            }
            Backend* holder = placement_.devices()[static_cast<std::size_t>(std::countr_zero(on))];
            std::vector<std::shared_ptr<Value>> windows;
            for (std::int64_t i : elsewhere) {
                const auto w = piece_window(r, plan, i, k);
                auto copy = holder->window(v, w->first, w->second);
                if (!copy) {  // (not where a window can start): the whole value
                    windows.clear();
                    break;
                }
                auto window = std::make_shared<Value>(w->second);
                window->set_device(holder->ordinal(), std::move(copy));
                windows.push_back(std::move(window));
            }
            if (windows.empty()) {
                ensure_host({inputs[k]});
                continue;
            }
            for (std::size_t j = 0; j < elsewhere.size(); ++j) {
                holder->download(*windows[j]);
                auto& mine = staged[static_cast<std::size_t>(elsewhere[j])];
                mine.resize(inputs.size());
                mine[k] = windows[j]->host();
            }
        }
    } catch (const DeviceError& e) {
        if (recompute_inputs(job)) return;
        return on_cpu_instead(e.what());
    }
    // Each device's pieces are recorded and sent by a thread of their own, side by side: this
    // worker takes the device with the most pieces (it needs no waking), each other device's
    // submitting thread its own (queued behind what that device records already, in order).
    // Recorded one device after the other, a split's recording grew with its devices (W1 on two
    // H200s: 4 pieces and two flushes, 0.15 ms before the second GPU started).
    using Clock = std::chrono::steady_clock;
    struct DeviceRecording {
        Backend* device = nullptr;
        std::vector<std::int64_t> pieces;
        std::vector<std::unique_ptr<PieceFlight>> flights;  // those submitted, in piece order
        std::exception_ptr error;                            // what stopped it (nothing after it was sent)
        Clock::duration making{}, making_room{}, submitting{}, flushing{};  // the exec log's parts
    };
    std::vector<DeviceRecording> recordings(devices.size());
    for (std::size_t d = 0; d < devices.size(); ++d) recordings[d].device = devices[d];
    for (std::int64_t i = 0; i < pieces; ++i) recordings[device_index(i)].pieces.push_back(i);
    std::erase_if(recordings, [](const DeviceRecording& d) { return d.pieces.empty(); });
    auto record = [&](DeviceRecording& d) {
        Backend& device = *d.device;
        try {
            for (std::int64_t i : d.pieces) {
                const auto t0 = Clock::now();
                auto f = std::make_unique<PieceFlight>(make_piece(r, plan, i, inputs, device, nodes_, staged[static_cast<std::size_t>(i)]),
                                                       device, *residency_[device.ordinal()]);
                const auto t1 = Clock::now();
                evict(device, residency_[device.ordinal()]->make_room(f->bytes()));
                const auto t2 = Clock::now();
                // Partials come back (the host finishes them); windows stay, unless a reader wants
                // the whole value on the host.
                std::vector<bool> wanted(f->piece().outputs.size());
                for (std::size_t j = 0; j < wanted.size(); ++j) wanted[j] = plan.partials || job->wanted_on_host[j];
                f->submit(wanted);
                d.making += t1 - t0;
                d.making_room += t2 - t1;
                d.submitting += Clock::now() - t2;
                d.flights.push_back(std::move(f));
                split_pieces_.fetch_add(1, std::memory_order_relaxed);
                device_regions_each_[device.ordinal()].fetch_add(1, std::memory_order_relaxed);
            }
        } catch (...) {
            d.error = std::current_exception();
        }
        // Sent as soon as recorded, even after a failure: the pieces in flight must finish (they
        // are waited for, and read the windows).
        const auto t_flush = Clock::now();
        try {
            device.flush();
        } catch (...) {
            if (!d.error) d.error = std::current_exception();
        }
        d.flushing = Clock::now() - t_flush;
    };
    const auto t_inputs = Clock::now();
    {
        const auto mine = std::max_element(recordings.begin(), recordings.end(), [](const DeviceRecording& a, const DeviceRecording& b) {
            return a.pieces.size() < b.pieces.size();
        });
        // The others' recordings are short (tens of us): on GPUs they are watched for a while
        // before sleeping, as the pieces are (PieceFlight::wait), so that this worker does not
        // pay a wake-up between the last recording and the value's publication.
        struct Latch {
            std::mutex mutex;
            std::condition_variable cv;
            std::atomic<std::size_t> left{0};
        } others;
        others.left.store(recordings.size() - 1, std::memory_order_relaxed);
        for (auto it = recordings.begin(); it != recordings.end(); ++it) {
            if (it == mine) continue;
            DeviceRecording* d = &*it;
            // (This frame outlives the job: it waits below for every one, whatever happens.)
            submitters_[d->device->ordinal()]->enqueue([&record, &others, d] {
                record(*d);
                std::lock_guard lock(others.mutex);
                if (others.left.fetch_sub(1, std::memory_order_acq_rel) == 1) others.cv.notify_all();
            });
        }
        record(*mine);
        if (std::all_of(recordings.begin(), recordings.end(), [](const DeviceRecording& d) { return waiters_poll(*d.device); }))
            poll_for([&] { return others.left.load(std::memory_order_acquire) == 0; }, std::chrono::microseconds(500));
        // (The lock also keeps `others` alive until the last recording's thread lets go of it.)
        std::unique_lock lock(others.mutex);
        others.cv.wait(lock, [&] { return others.left.load(std::memory_order_acquire) == 0; });
    }
    const auto t_sent = Clock::now();
    // In piece order: each device's pieces follow one another, the devices in order.
    std::vector<std::unique_ptr<PieceFlight>> flights;
    std::exception_ptr recording_error;
    for (DeviceRecording& d : recordings) {
        for (auto& f : d.flights) flights.push_back(std::move(f));
        if (d.error && !recording_error) recording_error = d.error;
    }
    try {
        if (recording_error) std::rethrow_exception(recording_error);
        if (!plan.partials) {
            job->outputs.clear();
            // Windows: the results are the pieces' outputs, recorded (each has its device copy).
            // Published now, so that a region split the same way records its pieces behind
            // these in each device's queue, as a device region follows its producer.
            for (std::size_t j = 0; j < r.outputs.size(); ++j) {
                auto whole = std::make_shared<Value>(r.outputs[j].node->bytes());
                std::vector<ValuePart> parts;
                for (auto& f : flights) parts.push_back({f->piece().output_offsets[j], f->piece().outputs[j]});
                whole->set_parts(std::move(parts));
                job->outputs.push_back(std::move(whole));
            }
            Deferred after;
            publish_recorded(job, devices_first, after);
            drain(after);
        }
        std::exception_ptr first_error;
        for (auto& f : flights)
            if (std::exception_ptr e = f->wait(); e && !first_error) first_error = e;
        if (first_error) std::rethrow_exception(first_error);
        const auto t_done = std::chrono::steady_clock::now();
        if (plan.partials) {
            StreamResults results(r, plan, [&](std::size_t bytes, const std::string& what) {
                return options_.pool ? options_.pool->allocate(bytes, what) : Storage::adopt(std::vector<std::byte>(bytes));
            });
            for (auto& f : flights) results.add(f->piece());
            job->outputs = results.finish(placement_.cpu(), nodes_);
        } else {
            // Its pieces brought back what a reader wants on the host: a host copy, from theirs.
            for (std::size_t j = 0; j < r.outputs.size(); ++j)
                if (job->wanted_on_host[j]) ensure_host({job->outputs[j]});
        }
        if (options_.log_exec) {
            auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
            Clock::duration making{}, making_room{}, submitting{}, flushing{};  // summed over the threads; flushed: the longest
            for (const DeviceRecording& d : recordings) {
                making += d.making;
                making_room += d.making_room;
                submitting += d.submitting;
                flushing = std::max(flushing, d.flushing);
            }
            auto part = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
            std::fprintf(stderr, "[tandem exec] %s %s split in %lld pieces: recorded %.3f ms on %zu threads (inputs %.3f, pieces made %.3f, "
                                 "room %.3f, submitted %.3f, flushed %.3f), pieces done %.3f ms later, finished %.3f ms later\n",
                         r.shape.to_string().c_str(), r.summary().c_str(), static_cast<long long>(pieces),
                         ms(job->started, t_sent), recordings.size(), ms(job->started, t_inputs), part(making), part(making_room), part(submitting),
                         part(flushing), ms(t_sent, t_done), ms(t_done, Clock::now()));
        }
    } catch (...) {
        const std::exception_ptr e = std::current_exception();
        for (auto& f : flights) f->wait();  // wait for what is in flight: it reads the windows
        if (is_data_error(e) && r.outputs.size() == 1) return complete(job, e, {}, false);
        if (is_device_error(e))
            for (Backend* d : devices)
                if (d->lost()) placement_.disable_device(d->ordinal());
        // A data error among several outputs (which ones?), a lost device, no memory: the CPU.
        return on_cpu_instead(error_text(e));
    }
    // Recorded behind producers split the same way (their pieces ran first in each queue):
    // once they are done, one that failed, or went back to the CPU, leaves this computed from
    // garbage. Follow the input (its error), or run again on the CPU.
    {
        struct Wait {
            std::mutex mutex;
            std::condition_variable cv;
            int left = 0;
        };
        auto wait = std::make_shared<Wait>();
        {
            std::lock_guard lock(mutex_);
            for (auto& in : r.inputs)
                if (const auto& pending = state(*in).eval.pending) {
                    ++wait->left;
                    pending->on_done.push_back([wait](Deferred&) {
                        std::lock_guard l(wait->mutex);
                        --wait->left;
                        wait->cv.notify_all();
                    });
                }
        }
        {
            std::unique_lock l(wait->mutex);
            wait->cv.wait(l, [&] { return wait->left == 0; });
        }
        std::exception_ptr input_error;
        bool again = false;
        {
            std::lock_guard lock(mutex_);
            for (std::size_t k = 0; k < r.inputs.size(); ++k) {
                const Evaluation& e = state(*r.inputs[k]).eval;
                if (e.error) input_error = e.error;
                else if (e.value != inputs[k]) again = true;
            }
        }
        if (input_error) return complete(job, input_error, {}, false);
        if (again) return on_cpu_instead("an input it read was computed again on the CPU");
    }
    // An input that came whole and had windows moved to other devices keeps its windows as its
    // parts: the next region split the same way reads them in place (its readers' regret paid
    // for the move once).
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (inputs[k]->split()) continue;
        std::vector<ValuePart> parts;
        bool moved = false;
        for (auto& f : flights) {
            const auto w = piece_window(r, plan, static_cast<std::int64_t>(parts.size()), k);
            if (!w) break;
            const auto& window = f->piece().inputs[k];
            moved = moved || window->host() != nullptr;  // uploaded (the others are read in place)
            parts.push_back({w->first, window});
        }
        if (moved && parts.size() == flights.size()) inputs[k]->set_parts(std::move(parts));
    }
    if (options_.learn) {
        // Each piece's kernels, timed on its device, are a run of its share of the region there:
        // a GPU that only ever runs pieces learns the region's time too (it would be priced by
        // the raw model for good). A tail piece of a few elements says nothing.
        std::lock_guard model(model_mutex_);
        for (std::size_t i = 0; i < flights.size(); ++i) {
            const PieceFlight& f = *flights[i];
            const double share = static_cast<double>(f.piece().region.shape.numel()) / static_cast<double>(r.shape.numel());
            const int d = static_cast<int>(f.device().ordinal());
            if (f.kernel_s() > 0 && share > 0.25)
                placement_.learn(r, d, f.kernel_s() / share + placement_.device_profile(f.device().ordinal()).rates.launch_s);
        }
    }
    split_.fetch_add(1, std::memory_order_relaxed);
    device_regions_.fetch_add(1, std::memory_order_relaxed);
    complete(job, nullptr, {}, false);
}

}  // namespace tandem::detail
