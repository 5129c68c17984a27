#include "scheduler/trace.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

namespace tandem::detail {

Trace::Trace(std::string path) : path_(std::move(path)), origin_(std::chrono::steady_clock::now()) {
    static std::atomic<std::uint64_t> ids{0};
    id_ = ++ids;
}

void Trace::region(const std::string& name, std::chrono::steady_clock::time_point start, int device) {
    const auto now = std::chrono::steady_clock::now();
    // A lane per thread that runs regions: CPU workers; each device's completions share its lane.
    thread_local std::map<std::uint64_t, int> lanes;  // by id: a later trace may reuse this address
    std::lock_guard lock(mutex_);
    int lane = device >= 0 ? device_lane(device) : 0;
    devices_seen_ = std::max(devices_seen_, device + 1);
    if (device < 0) {
        auto [it, fresh] = lanes.try_emplace(id_, 0);
        if (fresh) it->second = next_lane_++;
        lane = it->second;
    }
    events_.push_back({name, lane, std::chrono::duration<double, std::micro>(start - origin_).count(),
                       std::chrono::duration<double, std::micro>(now - start).count()});
}

void Trace::activity(const Activity& a) {
    Event e;
    switch (a.kind) {
        case Activity::Kind::upload: e.name = "upload"; break;
        case Activity::Kind::download: e.name = "download"; break;
        case Activity::Kind::compile: e.name = a.from_disk ? "kernel from the disk cache" : "kernel compile"; break;
    }
    e.lane = a.kind == Activity::Kind::compile ? kCompileLane : kTransferLane;
    e.start_us = std::chrono::duration<double, std::micro>(a.start - origin_).count();
    e.duration_us = std::chrono::duration<double, std::micro>(a.end - a.start).count();
    e.bytes = a.bytes;
    e.device_ms = a.device_ms;
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(e));
}

Trace::~Trace() {
    using json = nlohmann::json;
    json events = json::array();
    std::lock_guard lock(mutex_);
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", 0}, {"name", "thread_name"}, {"args", {{"name", "device queue"}}}});
    for (int d = 1; d < devices_seen_; ++d)
        events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", device_lane(d)}, {"name", "thread_name"},
                          {"args", {{"name", "device " + std::to_string(d) + " queue"}}}});
    for (int l = 1; l < next_lane_; ++l)
        events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", l}, {"name", "thread_name"},
                          {"args", {{"name", "cpu worker " + std::to_string(l)}}}});
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", kTransferLane}, {"name", "thread_name"}, {"args", {{"name", "transfers"}}}});
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", kCompileLane}, {"name", "thread_name"}, {"args", {{"name", "kernel builds"}}}});
    for (const Event& e : events_) {
        json x = {{"ph", "X"}, {"pid", 1}, {"tid", e.lane}, {"name", e.name}, {"ts", e.start_us}, {"dur", e.duration_us}};
        if (e.lane == kTransferLane) {
            x["args"] = {{"bytes", e.bytes}};
            if (e.device_ms >= 0) x["args"]["device_ms"] = e.device_ms;
        }
        events.push_back(std::move(x));
    }
    std::ofstream out(path_, std::ios::trunc);
    out << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(0, ' ', false, json::error_handler_t::replace) << '\n';
    if (!out.flush()) std::fprintf(stderr, "[tandem] TANDEM_TRACE=%s: cannot write the trace\n", path_.c_str());
}

}  // namespace tandem::detail
