// The scheduler's streamed regions (scheduler/streaming.hpp): a region larger than its
// device's memory budget, run there piece by piece from a worker thread.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "scheduler/errors.hpp"
#include "scheduler/piece_flight.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/streaming.hpp"

namespace tandem::detail {

void Scheduler::run_streamed(const JobPtr& job) {
    const Region& r = job->region;
    std::vector<std::shared_ptr<Value>> inputs;
    if (std::exception_ptr error = input_values(*job, inputs)) return complete(job, error, {}, false);
    job->started = std::chrono::steady_clock::now();
    Backend& device = *job->placement.backend;
    auto on_cpu_instead = [&](const std::string& why) {
        run_on_cpu_instead(job, "stream " + why, "[tandem] streamed region " + r.summary() + " runs on the CPU instead: " + why);
    };
    ResidencyTable& table = *residency_[device.ordinal()];
    const std::size_t here = device.ordinal();
    // Pieces share what the budget leaves beside the inputs read in place (two in flight).
    std::uint64_t in_place = 0;
    for (auto& v : inputs)
        if (v->device(here)) in_place += v->bytes();
    const std::uint64_t budget = table.budget();
    auto plan = plan_stream(r, std::min(budget / kStreamPieceShare, budget > in_place ? (budget - in_place) / 2 : 0));
    if (!plan) plan = plan_stream(r, budget / kStreamPieceShare);  // over the budget by what is read in place
    if (!plan) return on_cpu_instead("no piece fits the device's memory budget");
    try {
        // The pieces read windows of each input's copy on this device, in place, or of its host
        // copy: one comes down only when it is on neither (or its windows cannot be read in place).
        for (std::size_t k = 0; k < inputs.size(); ++k)
            if (!inputs[k]->host() && (!inputs[k]->device(here) || !windows_aligned(r, *plan, k))) ensure_host({inputs[k]});
    } catch (const DeviceError& e) {
        if (recompute_inputs(job)) return;
        return on_cpu_instead(e.what());
    }
    // What the windows share stays on the device until the last piece is done.
    std::vector<std::shared_ptr<Value>> held;
    for (auto& v : inputs)
        if (v->device(here)) {
            table.pin(v);
            held.push_back(v);
        }
    struct Unpin {
        ResidencyTable& table;
        std::vector<std::shared_ptr<Value>>& values;
        ~Unpin() {
            for (auto& v : values) table.unpin(*v);
        }
    } unpin_held{table, held};
    std::optional<StreamResults> results;  // made in the try below: allocating may fail
    std::deque<std::unique_ptr<PieceFlight>> flights;
    auto harvest = [&](PieceFlight& f) {
        if (std::exception_ptr e = f.wait()) std::rethrow_exception(e);
        results->add(f.piece());
    };
    try {
        results.emplace(r, *plan, [&](std::size_t bytes, const std::string& what) {
            return options_.pool ? options_.pool->allocate(bytes, what) : Storage::adopt(std::vector<std::byte>(bytes));
        });
        const std::int64_t pieces = plan->pieces();
        for (std::int64_t p = 0; p < pieces; ++p) {
            auto f = std::make_unique<PieceFlight>(make_piece(r, *plan, p, inputs, device, nodes_), device, table);
            evict(device, table.make_room(f->bytes()));
            f->submit(std::vector<bool>(f->piece().outputs.size(), true));
            device.flush();
            flights.push_back(std::move(f));
            pieces_.fetch_add(1, std::memory_order_relaxed);
            // Two in flight: one piece's copies overlap the other's compute.
            if (flights.size() == 2) {
                harvest(*flights.front());
                flights.pop_front();
            }
        }
        while (!flights.empty()) {
            harvest(*flights.front());
            flights.pop_front();
        }
        // Partials: the canonical order's later levels and the tail, on the host.
        job->outputs = results->finish(placement_.cpu(), nodes_);
    } catch (...) {
        const std::exception_ptr e = std::current_exception();
        for (auto& f : flights) f->wait();  // wait for what is in flight: it reads the windows
        if (is_data_error(e) && r.outputs.size() == 1) return complete(job, e, {}, false);
        if (is_device_error(e)) placement_.disable_device(device.ordinal());
        // A data error among several outputs (which ones?), a lost device, no memory: the CPU.
        return on_cpu_instead(error_text(e));
    }
    streamed_.fetch_add(1, std::memory_order_relaxed);
    complete(job, nullptr, {}, false);
}

}  // namespace tandem::detail
