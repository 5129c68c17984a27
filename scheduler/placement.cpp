#include "scheduler/placement.hpp"

#include <algorithm>

namespace tandem::detail {

Placement::Placement(Backend& cpu, Backend* device, PlacementMode mode, std::int64_t min_device_elements,
                     MachineProfile profile, std::uint64_t device_memory_budget)
    : cpu_(&cpu), device_(device), mode_(mode), min_device_elements_(min_device_elements),
      profile_(std::move(profile)), device_memory_budget_(device_memory_budget) {}

double Placement::model_s(const Region& r, bool on_device) const {
    return compute_seconds(r.cost, on_device ? profile_.device : profile_.cpu);
}

double Placement::compute_s(const Region& r, bool on_device) const {
    const double s = model_s(r, on_device);
    if (profile_.history.size() == 0) return s;
    return s * profile_.history.correction(region_signature(r.cost, r.kind), on_device);
}

void Placement::learn(const Region& r, bool on_device, double observed_s) {
    ++learned_;
    profile_.history.observe(region_signature(r.cost, r.kind), on_device, model_s(r, on_device), observed_s);
}

PlacementDecision Placement::place(const PlacementQuery& q, double cpu_free_s, double device_free_s,
                                   double link_free_s) const {
    const Region& region = *q.region;
    const double cpu_compute = region.kind == RegionKind::view ? 0.0 : compute_s(region, false);
    PlacementDecision cpu{cpu_, ""};
    cpu.compute_s = cpu_compute;
    if (region.kind == RegionKind::view) return cpu.reason = "a view: shares its input's value", cpu;
    if (!device_ || !device_enabled_.load()) return cpu.reason = "cpu only", cpu;
    if (mode_ == PlacementMode::cpu) return cpu.reason = "placement forced to the CPU", cpu;
    if (region.shape.numel() < min_device_elements_) return cpu.reason = "small: below device_min_elements", cpu;
    // What the device kernels do badly whatever the model says (not priced yet).
    if (region.kind == RegionKind::concat &&
        region.reduce_extents().outer * static_cast<std::int64_t>(region.inputs.size()) > 4096)
        return cpu.reason = "a concatenation of many short runs (copy regions)", cpu;
    if (region.kind == RegionKind::scan) {
        // A device scan runs an invocation per line: few lines leave the GPU idle.
        const auto e = region.reduce_extents();
        const std::int64_t floor =
            mode_ == PlacementMode::device ? min_device_elements_ : std::max<std::int64_t>(min_device_elements_, 1 << 16);
        if (e.inner * e.outer * 64 < floor)
            return cpu.reason = "a scan of too few lines for the device", cpu;
    }
    if (device_memory_budget_ > 0) {
        // Everything a device region touches must be there at once.
        std::uint64_t working_set = 0;
        for (const InputSite& in : q.inputs) working_set += static_cast<std::uint64_t>(in.bytes);
        for (const Region::Output& o : region.outputs) working_set += o.node->bytes();
        if (working_set > device_memory_budget_)
            return cpu.reason = "its inputs and outputs exceed the device's memory budget", cpu;
    }
    PlacementDecision dev{device_, ""};
    dev.compute_s = compute_s(region, true);
    if (mode_ == PlacementMode::device) return dev.reason = "placement forced to the device", dev;

    // Earliest finish. The inputs are there when the last one exists, plus the transfers of
    // those with no copy on that side (one after another over the link); the host waits once
    // for the device's queue when it needs device data.
    const LinkProfile& link = profile_.link;
    double ready = 0, to_host = 0, to_device = 0;
    bool host_waits_for_device = false;
    std::int64_t bytes_on_host = 0, bytes_on_device = 0;
    for (const InputSite& in : q.inputs) {
        ready = std::max(ready, in.ready_s);
        if (!in.on_host) to_host += download_seconds(in.bytes, link);
        if (!in.on_device) to_device += upload_seconds(in.bytes, link);
        host_waits_for_device = host_waits_for_device || !in.on_host;
        if (in.on_host) bytes_on_host += in.bytes;
        if (in.on_device) bytes_on_device += in.bytes;
    }
    // Transfers queue behind those already placed on the link (one copy at a time).
    const double cpu_start =
        std::max(cpu_free_s, std::max(ready, to_host > 0 ? link_free_s : 0.0) + to_host + (host_waits_for_device ? link.sync_s : 0.0));
    // A device that runs on the host's cores (lavapipe) is free only when the CPU is too.
    const double device_free = device_->device_class() == DeviceClass::cpu_device ? std::max(device_free_s, cpu_free_s)
                                                                                   : device_free_s;
    const double dev_start = std::max(device_free, std::max(ready, to_device > 0 ? link_free_s : 0.0) + to_device);
    cpu.cpu_s = dev.cpu_s = cpu_start + cpu.compute_s;
    double device_finish = dev_start + dev.compute_s;
    if (q.bytes_to_host > 0) device_finish += link.sync_s + download_seconds(q.bytes_to_host, link);
    cpu.device_s = dev.device_s = device_finish;
    cpu.finish_s = cpu.cpu_s;
    dev.finish_s = dev.device_s;
    cpu.transfer_s = to_host;
    dev.transfer_s = to_device + (q.bytes_to_host > 0 ? download_seconds(q.bytes_to_host, link) : 0.0);

    // Within 10% of each other (counted from when the inputs exist, which delays both alike):
    // stay with the inputs (no flip-flopping along a chain).
    const double lo = std::min(cpu.cpu_s, dev.device_s) - ready, hi = std::max(cpu.cpu_s, dev.device_s) - ready;
    if (hi <= 1.1 * lo && bytes_on_host != bytes_on_device) {
        if (bytes_on_device > bytes_on_host) return dev.reason = "close call: where its inputs are (device)", dev;
        return cpu.reason = "close call: where its inputs are (host)", cpu;
    }
    if (dev.device_s < cpu.cpu_s) return dev.reason = "earliest predicted finish", dev;
    return cpu.reason = "earliest predicted finish", cpu;
}

}  // namespace tandem::detail
