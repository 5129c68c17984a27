#include "graph/repeat.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace tandem::detail {

namespace {

bool squares(const Instr& ins) {
    return ins.op == OpKind::Pow && ins.args[1].kind == Arg::Kind::Scalar && ins.args[1].scalar == 2.0;
}

/// What an instruction is, apart from where its value operands point and its scalar values
/// (copies of a step differ only there): the run search compares these, the check that follows
/// looks at the operands.
std::size_t shape_hash(const Instr& ins) {
    std::size_t h = std::hash<int>{}(static_cast<int>(ins.op));
    auto mix = [&h](std::size_t v) { h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); };
    mix(static_cast<std::size_t>(ins.dtype));
    mix(static_cast<std::size_t>(ins.compute));
    const OpInfo& info = op_info(ins.op);
    for (int k = 0; k < info.arity; ++k) {
        const Arg& a = ins.args[static_cast<std::size_t>(k)];
        mix(static_cast<std::size_t>(a.kind) * 8 + static_cast<std::size_t>(a.dtype));
        if (a.kind == Arg::Kind::Input) mix(a.index);
    }
    mix(squares(ins) ? 1 : 0);
    // A cast's target is an attribute; generators' parameters and constants travel as scalars.
    if (info.group != OpGroup::Generator && info.group != OpGroup::Leaf)
        for (double v : ins.attr) mix(std::hash<double>{}(v));
    return h;
}

bool same_shape(const Instr& a, const Instr& b) {
    if (a.op != b.op || a.dtype != b.dtype || a.compute != b.compute || squares(a) != squares(b)) return false;
    const OpInfo& info = op_info(a.op);
    for (int k = 0; k < info.arity; ++k) {
        const Arg &x = a.args[static_cast<std::size_t>(k)], &y = b.args[static_cast<std::size_t>(k)];
        if (x.kind != y.kind || x.dtype != y.dtype) return false;
        if (x.kind == Arg::Kind::Input && x.index != y.index) return false;
    }
    if (info.group != OpGroup::Generator && info.group != OpGroup::Leaf && a.attr != b.attr) return false;
    return true;
}

/// Copies whose value operands follow the rules of Repeat, from copy 1 on: the number of copies
/// (at least 2) of the run at begin/period, or 0.
std::uint32_t checked_count(const Region& r, std::uint32_t begin, std::uint32_t period, std::uint32_t count) {
    const auto& prog = r.program;
    const std::uint32_t first = begin + period;  // copy 1, the template
    // Copy 1 may read anything before it (copy 0's values become the loop's carried values);
    // copy 0 need only have the same shape, so that carried values have one type.
    for (std::uint32_t j = 0; j < period; ++j)
        if (!same_shape(prog[first + j], prog[begin + j])) return 0;
    for (std::uint32_t t = 2; t < count; ++t)
        for (std::uint32_t j = 0; j < period; ++j) {
            const Instr &cur = prog[begin + t * period + j], &prev = prog[begin + (t - 1) * period + j];
            bool ok = same_shape(cur, prog[first + j]);
            for (int k = 0; ok && k < op_info(cur.op).arity; ++k) {
                const Arg &a = cur.args[static_cast<std::size_t>(k)], &b = prev.args[static_cast<std::size_t>(k)];
                if (a.kind != Arg::Kind::Value) continue;
                ok = (b.index < begin && a.index == b.index) || (b.index >= begin && a.index == b.index + period);
            }
            if (!ok) return t;
        }
    return count;
}

/// Shrinks the run until nothing after it (instructions, outputs, reductions) reads a value of a
/// copy other than the last: 0 when fewer than 2 copies remain.
std::uint32_t readable_count(const Region& r, std::uint32_t begin, std::uint32_t period, std::uint32_t count) {
    for (;;) {
        if (count < 2) return 0;
        const std::uint32_t lo = begin + period, hi = begin + period * (count - 1);  // copies 1 .. count - 2
        std::uint32_t worst = UINT32_MAX;
        auto see = [&](std::uint32_t v) {
            if (v >= lo && v < hi) worst = std::min(worst, v);
        };
        for (std::size_t i = begin + std::size_t{period} * count; i < r.program.size(); ++i) {
            const Instr& ins = r.program[i];
            for (int k = 0; k < op_info(ins.op).arity; ++k)
                if (ins.args[static_cast<std::size_t>(k)].kind == Arg::Kind::Value) see(ins.args[static_cast<std::size_t>(k)].index);
        }
        for (const auto& o : r.outputs) see(o.value);
        for (const auto& red : r.reductions) see(red.value);
        if (worst == UINT32_MAX) return count;
        count = (worst - begin) / period + 1;  // the copy holding it becomes the last
    }
}

}  // namespace

std::optional<Repeat> find_repeat(const Region& region, std::uint32_t min_count, std::uint32_t min_saved) {
    const auto n = static_cast<std::uint32_t>(region.program.size());
    min_count = std::max<std::uint32_t>(min_count, 3);
    if (n < min_count) return std::nullopt;
    std::vector<std::size_t> sig(n);
    for (std::uint32_t i = 0; i < n; ++i) sig[i] = shape_hash(region.program[i]);
    std::optional<Repeat> best;
    // A step longer than this is rare in programs written as loops, and the search is O(n * period).
    const std::uint32_t max_period = std::min<std::uint32_t>(n / min_count, 1024);
    for (std::uint32_t period = 1; period <= max_period; ++period) {
        std::uint32_t i = 0;
        while (i + period < n) {
            if (sig[i] != sig[i + period]) {
                ++i;
                continue;
            }
            std::uint32_t run = 0;  // sig[q] == sig[q + period] for q in [i, i + run)
            while (i + run + period < n && sig[i + run] == sig[i + run + period]) ++run;
            const std::uint32_t copies = (run + period) / period;
            // Every phase of the run is a candidate start (what comes before a step may look like
            // its tail); later phases stop once they cannot save more than the best run found.
            for (std::uint32_t phase = 0; phase < period && copies >= min_count; ++phase) {
                const std::uint32_t begin = i + phase, avail = (run + period - phase) / period;
                if (avail < min_count || (best && period * (avail - 2) <= best->saved())) break;
                std::uint32_t count = checked_count(region, begin, period, avail);
                count = readable_count(region, begin, period, count);
                if (count >= min_count && period * (count - 2) >= min_saved && (!best || period * (count - 2) > best->saved()))
                    best = Repeat{begin, period, count};
            }
            i += run + 1;
        }
    }
    return best;
}

}  // namespace tandem::detail
