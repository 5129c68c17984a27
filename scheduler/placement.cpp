#include "scheduler/placement.hpp"

#include "graph/kernel_call.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "graph/reduce_order.hpp"
#include "tandem/error.hpp"

namespace tandem::detail {

static_assert(BackendMemo::kSlots >= kMaxDevices, "a region keeps a backend memo for each device");

Placement::Placement(Backend& cpu, std::vector<Backend*> devices, PlacementMode mode, std::int64_t min_device_elements,
                     MachineProfile profile, std::vector<std::uint64_t> device_memory_budgets)
    : cpu_(&cpu), devices_(std::move(devices)), mode_(mode), min_device_elements_(min_device_elements),
      profile_(std::move(profile)), budgets_(std::move(device_memory_budgets)),
      enabled_(static_cast<std::uint32_t>((std::uint64_t{1} << devices_.size()) - 1)) {
    if (devices_.size() > kMaxDevices)
        throw ConfigError("at most " + std::to_string(kMaxDevices) + " devices, " + std::to_string(devices_.size()) +
                          " asked for");
    if (!devices_.empty() && profile_.devices.empty())
        throw std::invalid_argument("Placement: a device without a profile (MachineProfile::devices is empty)");
    while (profile_.devices.size() < devices_.size()) profile_.devices.push_back(profile_.devices.back());
    alike_.resize(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d)
        for (std::size_t e = 0; e < devices_.size(); ++e)
            if (e != d && !devices_[d]->identity().empty() && devices_[e]->identity() == devices_[d]->identity())
                alike_[d].push_back(e);
}

double Placement::model_s(const Region& r, int executor) const {
    return compute_seconds(r.cost, executor == kHost ? profile_.cpu : profile_.devices[static_cast<std::size_t>(executor)].rates);
}

double Placement::compute_s(const Region& r, int executor) const {
    const double s = model_s(r, executor);
    const PerformanceHistory* h =
        executor == kHost ? &profile_.cpu_history : &profile_.devices[static_cast<std::size_t>(executor)].history;
    const std::uint64_t sig = region_signature(r.cost, r.kind);
    if (executor != kHost && h->samples(sig) < PerformanceHistory::kMinSamples) {
        // Not run here often enough to correct the model: what an alike device (the same model
        // and driver) learned holds here too (two GPUs of one kind: the second would otherwise
        // be priced by the raw model and never get the work that would teach it; after one split
        // run of W1, the second GPU's one sample took the first's correction away, and the
        // region never split again).
        for (std::size_t d : alike_[static_cast<std::size_t>(executor)])
            if (profile_.devices[d].history.samples(sig) >= PerformanceHistory::kMinSamples) {
                h = &profile_.devices[d].history;
                break;
            }
    }
    if (h->size() == 0) return s;
    return s * h->correction(sig);
}

void Placement::learn(const Region& r, int executor, double observed_s) {
    ++learned_;
    PerformanceHistory& h =
        executor == kHost ? profile_.cpu_history : profile_.devices[static_cast<std::size_t>(executor)].history;
    h.observe(region_signature(r.cost, r.kind), model_s(r, executor), observed_s);
}

bool Placement::wants_sample(const Region& r, int executor) {
    PerformanceHistory& h =
        executor == kHost ? profile_.cpu_history : profile_.devices[static_cast<std::size_t>(executor)].history;
    return h.wants_sample(region_signature(r.cost, r.kind));
}

void Placement::learn_link(std::size_t device, bool up, std::int64_t bytes, double observed_s) {
    ++learned_;
    DeviceProfile& d = profile_.devices[device];
    const double model = up ? upload_seconds(bytes, d.link) : download_seconds(bytes, d.link);
    d.history.observe(link_signature(up, bytes), model, observed_s);
}

double Placement::upload_s(std::size_t device, std::int64_t bytes) const {
    const DeviceProfile& d = profile_.devices[device];
    return upload_seconds(bytes, d.link) * d.history.correction(link_signature(true, bytes));
}

double Placement::download_s(std::size_t device, std::int64_t bytes) const {
    const DeviceProfile& d = profile_.devices[device];
    return download_seconds(bytes, d.link) * d.history.correction(link_signature(false, bytes));
}

namespace {
/// The device an input not on the host comes from: the first that holds it (one that is nowhere
/// yet, device 0: its producer's side is not known here).
std::size_t holder(const InputSite& in) {
    return in.devices == 0 ? 0 : static_cast<std::size_t>(std::countr_zero(in.devices));
}
}  // namespace

Backend* Placement::faster_device(const Region& r) const {
    if (r.shape.numel() < min_device_elements_) return nullptr;
    Backend* best = nullptr;
    double best_s = compute_s(r, kHost);
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (!device_enabled(d)) continue;
        const double t = compute_s(r, static_cast<int>(d));
        if (t < best_s) best_s = t, best = devices_[d];
    }
    return best;
}

PlacementDecision Placement::place(const PlacementQuery& q, double cpu_free_s, std::span<const double> device_free_s,
                                   std::span<const double> link_free_s) const {
    auto link_free = [&](std::size_t d) { return d < link_free_s.size() ? link_free_s[d] : 0.0; };
    const Region& region = *q.region;
    const double cpu_compute = region.kind == RegionKind::view ? 0.0 : compute_s(region, kHost);
    PlacementDecision cpu{cpu_, ""};
    cpu.compute_s = cpu_compute;
    if (region.kind == RegionKind::view) return cpu.reason = "a view: shares its input's value", cpu;
    // A user kernel runs where it has a body, and where its author asked it to (KernelPlacement).
    bool pinned_to_device = false;
    if (region.kind == RegionKind::kernel) {
        const KernelCall& k = *region.call;
        if (!k.has_glsl()) return cpu.reason = "a user kernel with a C++ body only", cpu;
        if (k.prefer == KernelPlacement::cpu && k.has_cpu()) return cpu.reason = "a user kernel that asks for the CPU", cpu;
        pinned_to_device = !k.has_cpu() || k.prefer == KernelPlacement::device;
    }
    if (devices_.empty() || enabled_.load() == 0) return cpu.reason = "cpu only", cpu;
    if (mode_ == PlacementMode::cpu && !pinned_to_device) return cpu.reason = "placement forced to the CPU", cpu;
    // Values asked for on a device (to_device: MATLAB's gpuArray) go there as such a kernel does,
    // whatever the model, the size floor or the exceptions below say, as long as a device can
    // take the region (forced CPU placement, above, wins).
    const char* pinned_reason = pinned_to_device ? "a user kernel for the device" : "asked for on the device (to_device, gpuArray)";
    pinned_to_device = pinned_to_device || std::any_of(region.outputs.begin(), region.outputs.end(),
                                                       [](const Region::Output& o) { return o.node->device_requested; });
    if (region.shape.numel() < min_device_elements_ && !pinned_to_device)
        return cpu.reason = "small: below device_min_elements", cpu;
    // What the device kernels do badly whatever the model says (not priced yet).
    if (region.kind == RegionKind::concat && !pinned_to_device &&
        region.reduce_extents().outer * static_cast<std::int64_t>(region.inputs.size()) > 4096)
        return cpu.reason = "a concatenation of many short runs (copy regions)", cpu;
    if (region.kind == RegionKind::scan && !pinned_to_device) {
        // A device scan runs an invocation per line: few lines leave the GPU idle.
        const auto e = region.reduce_extents();
        const std::int64_t floor =
            mode_ == PlacementMode::device ? min_device_elements_ : std::max<std::int64_t>(min_device_elements_, 1 << 16);
        if (e.inner * e.outer * 64 < floor)
            return cpu.reason = "a scan of too few lines for the device", cpu;
    }
    // Everything a device region touches must be there at once: one larger than a device's budget
    // goes to a device it fits; larger than every one's, it streams, or runs on the CPU.
    std::uint64_t working_set = 0;
    for (const InputSite& in : q.inputs) working_set += static_cast<std::uint64_t>(in.bytes);
    for (const Region::Output& o : region.outputs) working_set += o.node->bytes();
    auto fits = [&](std::size_t d) { return budget(d) == 0 || working_set <= budget(d); };
    bool fits_one = false;
    for (std::size_t d = 0; d < devices_.size(); ++d) fits_one = fits_one || (device_enabled(d) && fits(d));

    // Earliest finish. The inputs are there when the last one exists, plus the transfers of
    // those with no copy on that side (one after another over the link); the host waits once
    // for a device's queue when it needs device data (the longest round trip of those it waits
    // for). Between devices, data goes through the host. Each device has its own rates and link.
    double ready = 0, to_host = 0, host_sync = 0, from_links = 0;
    std::int64_t bytes_on_host = 0;
    for (const InputSite& in : q.inputs) {
        ready = std::max(ready, in.ready_s);
        if (!in.on_host) {
            to_host += download_s(holder(in), in.bytes);
            host_sync = std::max(host_sync, profile_.devices[holder(in)].link.sync_s);
            from_links = std::max(from_links, link_free(holder(in)));
            if (cpu.link < 0) cpu.link = static_cast<int>(holder(in));
        }
        if (in.on_host) bytes_on_host += in.bytes;
    }
    // Transfers queue behind those already placed on their links (one copy at a time on each).
    const double cpu_start = std::max(cpu_free_s, std::max(ready, to_host > 0 ? from_links : 0.0) + to_host + host_sync);
    cpu.cpu_s = cpu_start + cpu.compute_s;
    // Inputs only on devices, outputs read later in the plan: the chain goes on there, after
    // this region's results went back (no flip-flopping along a chain on the device).
    const bool inputs_on_devices_only = bytes_on_host == 0 && !q.inputs.empty();
    if (inputs_on_devices_only && q.bytes_to_consumers > 0) {
        const std::size_t there = holder(q.inputs.front());
        cpu.cpu_s += profile_.devices[there].link.sync_s + upload_s(there, q.bytes_to_consumers);
    }
    cpu.finish_s = cpu.cpu_s;
    cpu.transfer_s = to_host;

    if (!fits_one) return place_streamed(q, cpu, device_free_s, ready);

    PlacementDecision dev{nullptr, ""};
    std::int64_t bytes_on_dev = 0;
    double best_free = 0;        // the chosen device's free time
    double resident_finish = -1;  // the best device's finish had the host-only inputs been there
    double warm_finish = -1;      // the best device's finish had its kernel been built
    Backend* warm_device = nullptr;
    double dev_wait = 0;  // the chosen device's wait for its kernel
    double placed_finish = -1;  // the best device's finish had every input been there
    int placed_device = -1;
    std::vector<double> cold_warm_finish(devices_.size(), -1);  // a cold device's finish had it been warm
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (!device_enabled(d) || !fits(d)) continue;
        const LinkProfile& link = profile_.devices[d].link;
        const double device_compute = compute_s(region, static_cast<int>(d));
        double to_device = 0, from_others = 0, host_only_uploads = 0, others_sync = 0, links_free = link_free(d);
        std::int64_t here = 0, host_only_bytes = 0;
        for (const InputSite& in : q.inputs) {
            if (in.devices >> d & 1u) {
                here += in.bytes;
                continue;
            }
            const double up = upload_s(d, in.bytes);
            const bool host_only = in.on_host && in.devices == 0;
            // An upload its readers' losses have paid for already (ski rental): free to use, and
            // then on the device (a chain may go on there). So is a move from another device
            // (down and up, or only up from its host copy) that the readers kept waiting on a
            // busier device have paid for.
            if (in.on_host && in.paid_s() >= up) {
                here += in.bytes;
                continue;
            }
            if (!in.on_host && in.devices && in.paid_s() >= up + download_s(holder(in), in.bytes)) {
                here += in.bytes;
                continue;
            }
            to_device += up;
            if (host_only) host_only_uploads += up, host_only_bytes += in.bytes;
            if (!in.on_host) {  // on another device: down to the host first
                from_others += download_s(holder(in), in.bytes);
                others_sync = std::max(others_sync, profile_.devices[holder(in)].link.sync_s);
                links_free = std::max(links_free, link_free(holder(in)));
            }
        }
        // A device that runs on the host's cores (lavapipe) is free only when the CPU is too.
        const double free_s = d < device_free_s.size() ? device_free_s[d] : 0.0;
        const double device_free =
            devices_[d]->device_class() == DeviceClass::cpu_device ? std::max(free_s, cpu_free_s) : free_s;
        auto start_after = [&](double moved) {
            return std::max(device_free, std::max(ready, moved > 0 ? links_free : 0.0) + moved);
        };
        const double moved = from_others + others_sync + to_device;
        double tail = 0;  // after the compute: results the host or the plan's host side wants
        if (q.bytes_to_host > 0) tail += link.sync_s + download_s(d, q.bytes_to_host);
        // Had every input been here already: what keeping them on another device costs.
        const double placed = std::max(device_free, ready) + device_compute + tail;
        if (placed_finish < 0 || placed < placed_finish) placed_finish = placed, placed_device = static_cast<int>(d);
        // Inputs only on the host, outputs read later in the plan: the chain goes on on the host.
        // (Not had the host-only inputs been on the device: then it would go on there.)
        double consumers_back = 0;
        if (here == 0 && bytes_on_host > 0 && q.bytes_to_consumers > 0)
            consumers_back = link.sync_s + download_s(d, q.bytes_to_consumers);
        const double resident_tail = host_only_bytes > 0 ? tail : tail + consumers_back;
        tail += consumers_back;
        const double warm = start_after(moved) + device_compute + tail;
        // Its kernel builds on the host meanwhile (transfers go on): it starts after both. Asked
        // only where the device could win or be explored (the question may generate the kernel).
        const double wait = q.pipeline_wait_s && mode_ == PlacementMode::automatic && warm <= kExploreFactor * cpu.cpu_s
                                ? q.pipeline_wait_s(d)
                                : 0.0;
        const double finish = std::max(start_after(moved), wait) + device_compute + tail;
        // (Its kernel's build aside: that is paid once, and built ahead when the CPU takes it.)
        const double resident = start_after(moved - host_only_uploads) + device_compute + resident_tail;
        if (wait > 0 && (warm_finish < 0 || warm < warm_finish)) {
            warm_finish = warm;
            warm_device = devices_[d];
        }
        if (wait > 0) cold_warm_finish[d] = warm;
        if (resident_finish < 0 || resident < resident_finish) resident_finish = resident;
        // The earliest; on a tie (transfers decide both alike), the one holding more of the inputs,
        // then the one free sooner: independent work spreads over idle devices.
        const bool tie = dev.backend && finish == dev.finish_s;
        if (!dev.backend || finish < dev.finish_s ||
            (tie && (here > bytes_on_dev || (here == bytes_on_dev && device_free < best_free)))) {
            best_free = device_free;
            dev.backend = devices_[d];
            dev.finish_s = dev.device_s = finish;
            dev.transfer_s = from_others + to_device + (q.bytes_to_host > 0 ? download_s(d, q.bytes_to_host) : 0.0);
            dev.compute_s = device_compute;
            dev.link = static_cast<int>(d);
            bytes_on_dev = here;
            dev_wait = wait;
        }
    }
    // Several devices: the region in pieces, one on each, when that finishes sooner still (by
    // kSplitGain: a split costs a submission per device and, for partials, a round trip).
    std::uint32_t prepare_on = 0;  // cold devices that would have done better
    double split_regret = 0;       // split in place over the devices would have been sooner by this
    // Work of the plan that does not wait for this region fills the other devices meanwhile
    // (task parallelism, W8's pipelines): splitting would only delay it. An input that exists
    // only in parts would be assembled to be read whole, unless its readers paid for an upload
    // from its host copy (whole regret, below).
    auto only_in_parts = [&](const InputSite& in, std::size_t d) {
        return in.parts && !in.devices && !(in.on_host && in.paid_s() >= upload_s(d, in.bytes));
    };
    // `whole` on device `on` (its index), done by `finish`: the others idle less than the slack.
    auto others_filled = [&](std::size_t on, double finish, bool inputs_whole) {
        if (split_ == SplitMode::always || q.parallel_slack_s <= 0) return false;
        if (!inputs_whole)
            for (const InputSite& in : q.inputs)
                if (only_in_parts(in, on)) return false;
        double idle = 0;  // the other devices' time free before the region is done whole
        for (std::size_t d = 0; d < devices_.size(); ++d)
            if (device_enabled(d) && d != on) idle += std::max(0.0, finish - (d < device_free_s.size() ? device_free_s[d] : 0.0));
        return q.parallel_slack_s >= idle;
    };
    const bool may_split = enabled_devices() >= 2 && split_ != SplitMode::off;
    std::size_t whole_on = 0;  // dev's index among the devices
    while (may_split && whole_on + 1 < devices_.size() && devices_[whole_on] != dev.backend) ++whole_on;
    const bool filled = may_split && dev.backend && others_filled(whole_on, dev.finish_s, false);
    // Split only because an input is in parts (had every input been on the best device, the
    // others would be filled): the loss is regret towards the input whole there.
    const bool filled_had_whole = may_split && !filled && dev.backend && placed_device >= 0 &&
                                  others_filled(static_cast<std::size_t>(placed_device), placed_finish, true) &&
                                  std::any_of(q.inputs.begin(), q.inputs.end(), [&](const InputSite& in) {
                                      return in.on_host && only_in_parts(in, static_cast<std::size_t>(placed_device));
                                  });
    if (may_split && !filled) {
        PlacementDecision split = place_split(q, cpu_free_s, device_free_s, link_free_s, ready,
                                              dev.backend ? dev.finish_s : std::numeric_limits<double>::infinity());
        if (split.prepare_on && split.in_place_finish_s * kSplitGain < dev.finish_s) prepare_on |= split.prepare_on;
        // Not split only because the inputs are whole somewhere: the loss is regret towards
        // leaving them in parts over the devices (see place_split).
        if (split.backend && !(split.finish_s * kSplitGain < dev.finish_s) && split.in_place_finish_s * kSplitGain < dev.finish_s &&
            split.warm_finish_s > split.in_place_finish_s)  // (not split for its inputs, not only for a cold kernel)
            split_regret = dev.finish_s - split.in_place_finish_s * kSplitGain;
        if (split.backend && (!dev.backend || split_ == SplitMode::always || split.finish_s * kSplitGain < dev.finish_s)) {
            dev = split;
            dev_wait = 0;
            bytes_on_dev = 0;
            for (const InputSite& in : q.inputs)
                if (in.parts || in.devices) bytes_on_dev += in.bytes;
        }
    }
    if (!dev.backend) return cpu.reason = "no device it fits", cpu;
    for (std::size_t d = 0; d < devices_.size(); ++d)
        if (cold_warm_finish[d] >= 0 && cold_warm_finish[d] < dev.finish_s && devices_[d] != dev.backend) prepare_on |= 1u << d;
    dev.prepare_on = prepare_on;
    // Waiting on a busier device because the inputs live there: the readers' loss is regret
    // towards moving them to the device that would have finished sooner (ski rental, as for
    // uploads): once it pays for the move, the next reader goes there and they follow.
    if (!dev.split && placed_device >= 0 && devices_[static_cast<std::size_t>(placed_device)] != dev.backend &&
        placed_finish < dev.finish_s) {
        dev.regret_s = dev.finish_s - placed_finish;
        dev.regret_device = placed_device;
    }
    if (!dev.split && split_regret > dev.regret_s) {
        dev.regret_s = split_regret;
        dev.regret_device = kSplitRegret;
    }
    // Split for an input in parts while independent work would have filled the other devices:
    // its pieces take from that work what it would not have needed whole (W8's first pipeline,
    // its input left in parts by a split at set-up, split run after run: 4.5 pipelines on one
    // device, 3.5 on the other). Once that pays for the upload, it is read whole.
    if (dev.split && filled_had_whole && split_ != SplitMode::always) {
        const double whole = compute_s(region, placed_device);
        dev.regret_s = whole * (1.0 - 1.0 / static_cast<double>(std::popcount(dev.split)));
        dev.regret_device = kWholeRegret;
    }
    dev.cpu_s = cpu.cpu_s;
    cpu.device_s = dev.device_s;
    if (pinned_to_device) return dev.reason = pinned_reason, dev;
    if (mode_ == PlacementMode::device)
        return dev.reason = dev.split ? "placement forced to the devices: split over them" : "placement forced to the device", dev;
    if (resident_finish >= 0) cpu.regret_s = std::max(0.0, cpu.cpu_s - resident_finish);

    // A device that would have won, or come close (kExploreFactor), had its kernel been built:
    // if the CPU takes the region, the kernel builds in the background meanwhile, so that the next
    // time the device is priced warm (a build costs background time only; a kernel never built
    // would keep a region that is a close call off the device for good).
    if (warm_device && warm_finish <= kExploreFactor * cpu.cpu_s) cpu.warm_up = warm_device;
    // Readers later in the plan that will run on a device: what counts is when they can start
    // there. Run on the CPU, the results reach them after a round trip, and they start no sooner
    // than the device is free for them; run on that device, they follow it in order. For a
    // generator (no inputs) that decides it (W5's start vector, placed on the CPU beside a device
    // busy with X'X, finished first and gained nothing, its chain of 150 regions waiting on the
    // hop). A region with inputs that the CPU would finish first goes with its readers only on a
    // close call, and only where the device computes it far quicker (kReadersDeviceGain): then the
    // CPU's cores gain the readers nothing, and left free they feed the device (W5's var(X) on
    // every core, beside a device chain of 150 regions, stalled the host thread recording it).
    double cpu_seen = cpu.cpu_s;
    const bool generator = q.inputs.empty();
    bool for_consumers = q.bytes_to_consumers > 0 && q.consumers_device && dev.link >= 0 && !dev.split &&
                         mode_ == PlacementMode::automatic &&
                         (generator || (!(dev.device_s < cpu.cpu_s) && dev.compute_s * kReadersDeviceGain <= cpu.compute_s));
    if (for_consumers) {
        const int c = q.consumers_device();
        for_consumers = c == dev.link;
        if (for_consumers) {
            const auto d = static_cast<std::size_t>(c);
            const double free_d = d < device_free_s.size() ? device_free_s[d] : 0.0;
            // (Inputs only on devices: the CPU's finish counts the results' way back already.)
            const double back = inputs_on_devices_only ? 0.0 : profile_.devices[d].link.sync_s + upload_s(d, q.bytes_to_consumers);
            cpu_seen = std::max(cpu.cpu_s + back, free_d);
        }
    }
    // Within 10% of each other (counted from when the inputs exist, which delays both alike):
    // stay with the inputs (no flip-flopping along a chain), or, without any, go with the readers.
    const double lo = std::min(cpu_seen, dev.device_s) - ready, hi = std::max(cpu_seen, dev.device_s) - ready;
    bool on_device = dev.device_s < cpu_seen;
    const char* why = for_consumers && on_device ? "earliest start of its readers on the device" : "earliest predicted finish";
    if (hi <= 1.1 * lo && bytes_on_host != bytes_on_dev) {
        on_device = bytes_on_dev > bytes_on_host;
        why = on_device ? (for_consumers ? "close call for its readers: where its inputs are (device)" : "close call: where its inputs are (device)")
                        : "close call: where its inputs are (host)";
    } else if (hi <= 1.1 * lo && for_consumers) {
        on_device = true;
        why = "close call: where its readers' inputs are (device)";
    }
    // Exploration: the side that loses by the model, while its time for regions like this one is
    // not known and the winner's is, runs it now and then when predicted within kExploreFactor of
    // the winner: a model that is wrong about a side it never runs on would never learn otherwise.
    if (explore_) {
        const std::uint64_t sig = region_signature(region.cost, region.kind);
        const int d = dev.link;  // the chosen device
        const std::size_t cpu_runs = profile_.cpu_history.samples(sig);
        const std::size_t dev_runs = profile_.devices[static_cast<std::size_t>(d)].history.samples(sig);
        constexpr std::size_t known = PerformanceHistory::kMinSamples;
        const int loser = on_device ? kHost : d;
        const bool loser_unknown = on_device ? cpu_runs < known : dev_runs < known;
        const bool winner_known = on_device ? dev_runs >= known : cpu_runs >= known;
        // A device whose kernel is not built yet is explored once it is (meanwhile it builds).
        const bool loser_cold = !on_device && dev_wait > 0;
        const double loser_s = (on_device ? cpu.cpu_s : dev.device_s) - ready;
        const double winner_s = (on_device ? dev.device_s : cpu.cpu_s) - ready;
        const bool explore = loser_unknown && winner_known && loser_s <= kExploreFactor * winner_s;
        if (explore && !loser_cold && exploring_.insert(explore_key(sig, loser)).second) {
            PlacementDecision& e = on_device ? cpu : dev;
            e.exploring = true;
            ++exploring_started_;
            e.reason = on_device ? "exploring: its time on the CPU is not known yet"
                                 : "exploring: its time on the device is not known yet";
            return e;
        }
    }
    if (on_device) {
        if (dev.split && why == std::string_view("earliest predicted finish")) why = "earliest predicted finish: split over the devices";
        return dev.reason = why, dev;
    }
    if (cpu.warm_up) why = "earliest predicted finish: the device's kernel is not built yet (it builds meanwhile)";
    return cpu.reason = why, cpu;
}

void Placement::explored(const Region& r, int executor) {
    exploring_.erase(explore_key(region_signature(r.cost, r.kind), executor));
}

PlacementDecision Placement::place_split(const PlacementQuery& q, double cpu_free_s, std::span<const double> device_free_s,
                                         std::span<const double> link_free_s, double ready, double beat_s) const {
    const Region& r = *q.region;
    std::vector<std::size_t> ds;
    std::uint64_t working_set = 0;
    for (const InputSite& in : q.inputs) working_set += static_cast<std::uint64_t>(in.bytes);
    for (const Region::Output& o : r.outputs) working_set += o.node->bytes();
    for (std::size_t d = 0; d < devices_.size(); ++d)
        if (device_enabled(d)) ds.push_back(d);
    PlacementDecision split{nullptr, ""};
    std::optional<StreamPlan> plan = plan_split(r, static_cast<std::int64_t>(ds.size()), q.vector_blocks);
    if (!plan || (!plan->partials && !q.readers_split)) return split;
    // Each device's share of the domain (the last piece may be shorter: priced as the others).
    const double share = std::min(1.0, static_cast<double>(plan->per_piece) / static_cast<double>(plan->extent));
    for (std::size_t d : ds)
        if (budget(d) > 0 && static_cast<double>(working_set) * share > static_cast<double>(budget(d))) return split;
    double finish = 0, warm_finish = 0, in_place_finish = 0, transfers = 0, compute = 0;
    std::vector<double> starts, rests;  // per device: when its piece could start, and what it then takes
    for (std::size_t d : ds) {
        double moved = 0, links_free = d < link_free_s.size() ? link_free_s[d] : 0.0;
        for (std::size_t k = 0; k < q.inputs.size(); ++k) {
            const InputSite& in = q.inputs[k];
            if ((in.devices >> d & 1u) || (in.parts >> d & 1u)) continue;  // read in place
            const bool windowed = piece_window(r, *plan, 0, k).has_value();
            const auto bytes = static_cast<std::int64_t>(windowed ? static_cast<double>(in.bytes) * share : static_cast<double>(in.bytes));
            double move = upload_s(d, bytes);
            const std::size_t from = in.devices ? holder(in) : static_cast<std::size_t>(std::countr_zero(in.parts | 1u));
            // (A value whole on a device sends down only the windows read elsewhere.)
            if (!in.on_host) move += download_s(from, in.devices && windowed ? bytes : in.bytes) + profile_.devices[from].link.sync_s;
            // Windows its readers' losses paid for already (ski rental): moved once, they stay
            // as the value's parts, read in place from then on.
            if (windowed && in.paid_s() >= move) continue;
            moved += move;
            if (!in.on_host && from < link_free_s.size()) links_free = std::max(links_free, link_free_s[from]);
        }
        const double whole = compute_s(r, static_cast<int>(d)), launch = profile_.devices[d].rates.launch_s;
        const double piece = launch + std::max(0.0, whole - launch) * share;
        const double free_s = d < device_free_s.size() ? device_free_s[d] : 0.0;
        const double device_free =
            devices_[d]->device_class() == DeviceClass::cpu_device ? std::max(free_s, cpu_free_s) : free_s;
        const double start = std::max(device_free, std::max(ready, moved > 0 ? links_free : 0.0) + moved);
        double tail = 0;
        const LinkProfile& link = profile_.devices[d].link;
        if (plan->partials) {
            // The partials come back and finish on the host; a reader later in the plan (taken
            // to go on on the device) waits for the results to go up again.
            tail = link.sync_s + download_s(d, 8 * plan->rows * (plan->per_piece / kReduceChunk + 1));
            if (q.bytes_to_consumers > 0) tail += link.sync_s + upload_s(d, q.bytes_to_consumers);
        }
        else if (q.bytes_to_host > 0)
            tail = link.sync_s + download_s(d, static_cast<std::int64_t>(static_cast<double>(q.bytes_to_host) * share));
        starts.push_back(start);
        rests.push_back(piece + tail);
        warm_finish = std::max(warm_finish, start + piece + tail);
        in_place_finish = std::max(in_place_finish, std::max(device_free, ready) + piece + tail);  // (and warm)
        transfers += moved;
        compute = std::max(compute, piece);
    }
    // Its kernels not built yet on a device: the piece there waits for them. Asked only when the
    // split could win (the question may generate the kernel), as for a single device.
    finish = warm_finish;
    const bool could_win = split_ == SplitMode::always || in_place_finish * kSplitGain < beat_s;
    if (q.pipeline_wait_s && mode_ == PlacementMode::automatic && could_win) {
        finish = 0;
        for (std::size_t i = 0; i < ds.size(); ++i) {
            const double wait = q.pipeline_wait_s(ds[i]);
            if (wait > 0) split.prepare_on |= 1u << ds[i];
            finish = std::max(finish, std::max(starts[i], wait) + rests[i]);
        }
    }
    split.backend = devices_[ds.front()];
    for (std::size_t d : ds) split.split |= 1u << d;
    split.split_plan = *plan;
    split.finish_s = split.device_s = finish;
    split.warm_finish_s = warm_finish;
    split.in_place_finish_s = in_place_finish;
    split.compute_s = compute;
    split.transfer_s = transfers;
    split.link = static_cast<int>(ds.front());
    return split;
}

PlacementDecision Placement::place_streamed(const PlacementQuery& q, PlacementDecision cpu,
                                            std::span<const double> device_free_s, double ready) const {
    // An input on the device is read there in place; one on the host goes up in windows; one
    // on neither comes down first. Every output comes back (partials: a few bytes). Pieces
    // overlap their copies with the compute of others: the longer of the two, plus a round trip
    // per piece.
    PlacementDecision dev{nullptr, "too large for the device's memory budget: streamed in pieces"};
    std::optional<StreamPlan> stream;
    for (std::size_t d = 0; d < devices_.size() && !dev.backend; ++d) {
        if (!device_enabled(d)) continue;
        // In pieces of a share of this device's budget (the run plans its own from its table).
        stream = plan_stream(*q.region, budget(d) / kStreamPieceShare);
        if (!stream) return cpu.reason = "its inputs and outputs exceed the device's memory budget (it cannot stream)", cpu;
        const LinkProfile& link = profile_.devices[d].link;
        const double device_compute = compute_s(*q.region, static_cast<int>(d));
        double moved = 0;
        for (const InputSite& in : q.inputs)
            if (!(in.devices >> d & 1u))
                moved += upload_s(d, in.bytes) + (in.on_host ? 0.0 : download_s(holder(in), in.bytes));
        if (!stream->partials)
            for (const Region::Output& o : q.region->outputs) moved += download_s(d, static_cast<std::int64_t>(o.node->bytes()));
        dev.transfer_s = moved;
        const double free_s = d < device_free_s.size() ? device_free_s[d] : 0.0;
        dev.backend = devices_[d];
        dev.finish_s = dev.device_s = std::max(free_s, ready) + std::max(device_compute, moved) +
                                      static_cast<double>(stream->pieces()) * link.sync_s;
        dev.compute_s = device_compute;
        dev.link = static_cast<int>(d);
    }
    if (!dev.backend) return cpu.reason = "cpu only", cpu;
    dev.cpu_s = cpu.cpu_s;
    dev.stream_pieces = stream->pieces();
    cpu.device_s = dev.device_s;
    if (mode_ == PlacementMode::device || dev.device_s < cpu.cpu_s) return dev;
    return cpu.reason = "earliest predicted finish (streaming it through the device is slower)", cpu;
}

}  // namespace tandem::detail
