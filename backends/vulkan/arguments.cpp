// The argument layout of a region's kernel: how each input is read (access_for), the push
// constants and argument block of one dispatch (pack_arguments), the error header read back
// (check_error), and the scalar slots that codegen.cpp's kernels read them from. Layout:
// arguments.hpp.
#include "backends/vulkan/arguments.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/vulkan/codegen.hpp"
#include "graph/generators.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::vk {

namespace {

bool is_logical_rule(OpKind op) { return op_info(op).rule == TypeRule::Logical; }

void put(std::vector<std::byte>& out, const void* p, std::size_t n) {
    // resize + memcpy rather than insert(end, b, b + n): GCC 12 inlines the latter into
    // pack_arguments and reports a false -Wstringop-overflow.
    const std::size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
}
template <class T>
void put(std::vector<std::byte>& out, T v) {
    put(out, &v, sizeof v);
}

[[noreturn]] void nan_to_logical(OpKind op) {
    // The CPU executor's message, word for word.
    throw ValueError(std::string(op_info(op).name) +
                     ": NaN's cannot be converted to logicals (an operand of this logical op is NaN)");
}

}  // namespace

// ---- scalar slots (arguments.hpp) -----------------------------------------------------------
bool is_square(const Instr& ins) {
    // The CPU lowers x.^2 to x.*x (one correctly rounded product); so does the kernel.
    return ins.op == OpKind::Pow && ins.args[1].kind == Arg::Kind::Scalar && ins.args[1].scalar == 2.0;
}

ScalarPlan plan_scalars(const Region& r) {
    ScalarPlan p;
    p.slot.resize(r.program.size());
    auto add = [&](std::size_t i, int k, double v) {
        p.slot[i][static_cast<std::size_t>(k)] = static_cast<int>(p.values.size());
        p.values.push_back(v);
    };
    for (std::size_t i = 0; i < r.program.size(); ++i) {
        const Instr& ins = r.program[i];
        p.slot[i].fill(-1);
        switch (ins.op) {
            case OpKind::Constant: add(i, 0, ins.attr[0]); break;
            case OpKind::Linspace: {
                // The host computes the steps exactly as the CPU executor does (graph/generators.hpp).
                const double a = ins.attr[0], b = ins.attr[1];
                const auto count = static_cast<std::int64_t>(ins.attr[2]);
                const LinspaceSteps steps = linspace_steps(a, b, count);
                add(i, 0, a);
                add(i, 1, b);
                add(i, 2, steps.step);
                add(i, 3, static_cast<double>(count - 1));
                add(i, 4, steps.back);
                break;
            }
            case OpKind::Colon:
                add(i, 0, ins.attr[0]);
                add(i, 1, ins.attr[1]);
                add(i, 2, ins.attr[2]);
                break;
            case OpKind::RandU:
            case OpKind::RandN:  // seed's low and high 32 bits and the stream: exact as doubles
                add(i, 0, ins.attr[0]);
                add(i, 1, ins.attr[1]);
                add(i, 2, ins.attr[2]);
                break;
            default:
                for (int k = 0; k < op_info(ins.op).arity; ++k) {
                    const Arg& a = ins.args[static_cast<std::size_t>(k)];
                    if (a.kind == Arg::Kind::Scalar && !(k == 1 && is_square(ins))) add(i, k, a.scalar);
                }
        }
    }
    return p;
}

std::uint32_t push_slots(std::size_t scalars, std::uint32_t max_push_bytes) {
    const std::uint32_t room = max_push_bytes > 16 ? (max_push_bytes - 16) / 8 : 0;
    return static_cast<std::uint32_t>(std::min<std::size_t>(scalars, room));
}

// ---- input access and dispatch --------------------------------------------------------------
InputWalk walk_of(const std::vector<InputDim>& dims, std::int64_t input_elements) {
    bool narrow = input_elements < (std::int64_t{1} << 31);
    for (const InputDim& d : dims)
        if (d.mapped()) narrow &= d.offset + std::max<std::int64_t>(0, d.step * (d.extent - 1)) < (std::int64_t{1} << 32);
    InputWalk w;
    for (const InputDim& d : dims) {
        const char c = !d.mapped() ? 'p' : d.wrap == InputDim::Wrap::none ? 'n' : d.wrap == InputDim::Wrap::once ? 'o' : 'a';
        w += narrow && c != 'p' ? static_cast<char>(c - 'a' + 'A') : c;
    }
    return w;
}

std::uint64_t extent_divisor(std::int64_t d) {
    // An extent of 2^32 or more exceeds every 32-bit index: m = 0 and shifts of 32 in all give 0.
    if (d > 0xFFFFFFFFLL) return std::uint64_t{16} << 32 | std::uint64_t{16} << 40;
    if (d < 1) return 0;
    int l = 0;
    while ((std::uint64_t{1} << l) < static_cast<std::uint64_t>(d)) ++l;
    // 2^l - d < 2^(l-1) <= 2^31, so the numerator fits 63 bits; m < 2^32.
    const std::uint64_t num = ((std::uint64_t{1} << l) - static_cast<std::uint64_t>(d)) << 32;
    const std::uint64_t m = num / static_cast<std::uint64_t>(d) + 1;
    const std::uint64_t sh1 = l < 1 ? l : 1, sh2 = l > 1 ? l - 1 : 0;
    return (m & 0xFFFFFFFFu) | sh1 << 32 | sh2 << 40;
}

namespace {

std::vector<std::int64_t> extents_of(const std::vector<InputDim>& dims) {
    std::vector<std::int64_t> e;
    for (const InputDim& d : dims) e.push_back(d.extent);
    return e;
}

}  // namespace

void access_for(const Region& region, std::vector<InputAccess>& access, std::vector<InputWalk>& walks) {
    access.assign(region.inputs.size(), InputAccess::full);
    walks.assign(region.inputs.size(), {});
    const std::int64_t n = region.shape.numel();
    std::vector<std::pair<std::size_t, std::vector<std::int64_t>>> splits;  // (first input, its extents)
    for (std::size_t k = 0; k < region.inputs.size(); ++k) {
        const std::int64_t m = region.inputs[k]->shape.numel();
        if (m == 1) access[k] = InputAccess::scalar;
        else if (m != n || region.has_view(k)) {
            access[k] = InputAccess::strided;
            const std::vector<InputDim> dims = region.input_dims(k);
            walks[k] = walk_of(dims, m);
            std::vector<std::int64_t> extents = extents_of(dims);
            auto same = std::find_if(splits.begin(), splits.end(), [&](const auto& s) { return s.second == extents; });
            if (same != splits.end()) walks[k] += "@" + std::to_string(same->first);
            else splits.emplace_back(k, std::move(extents));
        }
    }
}

ReducePlan plan_reduce(const Region& region, std::uint64_t threads, std::uint64_t workgroup_size) {
    const auto [inner, len, outer] = region.reduce_extents();
    ReducePlan p;
    p.inner = static_cast<std::uint64_t>(inner);
    p.len = static_cast<std::uint64_t>(len);
    p.outer = static_cast<std::uint64_t>(outer);
    p.contiguous = inner == 1;
    p.chunks = static_cast<std::uint64_t>(reduce_chunks(len));
    p.lanes = static_cast<std::uint64_t>(reduce_lanes(len, !p.contiguous));
    if (!p.contiguous) {
        const std::uint64_t want = threads > 0 ? threads : kStridedThreads;
        const std::uint64_t slots_all = p.outputs() * p.chunks;
        p.per_invocation = std::min(kStridedLanes, p.lanes);
        while (p.per_invocation > 1 && slots_all * (p.lanes / p.per_invocation) < want) p.per_invocation /= 2;
    }
    p.whole_outputs = p.contiguous && p.chunks >= 2 && p.chunks * p.lanes <= workgroup_size &&
                      p.outputs() * p.chunks <= kWholeOutputsMost;
    return p;
}

std::vector<std::uint64_t> ReducePlan::levels() const {
    std::vector<std::uint64_t> l;
    if (whole_outputs) return l;
    for (std::uint64_t n = chunks; n > 1; n = static_cast<std::uint64_t>(reduce_chunks(static_cast<std::int64_t>(n))))
        l.push_back(n);
    return l;
}

std::uint64_t reduce_partial_bytes(const Region& region, const Kernel& kernel) {
    if (!region.is_reduce()) return 0;
    const ReducePlan p = plan_reduce(region, kernel.reduction_threads, kernel.workgroup_size);
    std::uint64_t records = 0;
    for (std::uint64_t n : p.levels()) records += n;
    return 16 * region.reductions.size() * p.outputs() * records;
}

void split_groups(std::uint64_t groups, std::uint32_t max_groups_x, std::uint32_t& x, std::uint32_t& y) {
    const std::uint64_t mx = std::max<std::uint32_t>(1, max_groups_x);
    if (groups <= mx) {
        x = static_cast<std::uint32_t>(groups);
        y = 1;
    } else {
        // as square as the limit allows: x * y - groups < y workgroups with nothing to do (x = mx
        // would leave up to mx - 1: 65531 of 327675 for 2^18 groups)
        y = static_cast<std::uint32_t>((groups + mx - 1) / mx);
        x = static_cast<std::uint32_t>((groups + y - 1) / y);
    }
}

Launch pack_arguments(const Region& region, const Kernel& kernel, std::span<const std::uint64_t> inputs,
                      std::span<const std::uint64_t> outputs, std::uint64_t args_address,
                      std::uint32_t max_groups_x, std::uint64_t partials) {
    // Scalar operands of logical ops are checked here, before any work, as the CPU lowering does.
    for (const Instr& ins : region.program) {
        const bool logical = is_logical_rule(ins.op) || ins.op == OpKind::Where ||
                             (ins.op == OpKind::Cast && ins.dtype == DType::logical);
        if (!logical) continue;
        const int checked = ins.op == OpKind::Where ? 1 : op_info(ins.op).arity;
        for (int k = 0; k < checked; ++k) {
            const Arg& a = ins.args[static_cast<std::size_t>(k)];
            if (a.kind == Arg::Kind::Scalar && std::isnan(a.scalar)) nan_to_logical(ins.op);
        }
    }
    const ScalarPlan plan = plan_scalars(region);
    const std::uint32_t npush = (kernel.push_bytes - 16) / 8;
    const auto count = static_cast<std::uint64_t>(region.shape.numel());

    Launch l;
    put(l.push, args_address);
    put(l.push, count);
    for (std::uint32_t s = 0; s < npush; ++s) put(l.push, plan.values[s]);

    put(l.args, std::uint32_t{0});
    put(l.args, std::uint32_t{0xFFFFFFFFu});
    put(l.args, static_cast<std::uint64_t>(region.index_base));
    for (std::uint64_t a : inputs) put(l.args, a);
    for (std::uint64_t a : outputs) put(l.args, a);
    for (std::size_t k = 0; k < region.inputs.size(); ++k) {
        if (kernel.access[k] != InputAccess::strided) continue;
        const std::vector<InputDim> dims = region.input_dims(k);
        const int shares = walk_shares(kernel.walks[k]);
        if (walk_of(dims, region.inputs[k]->shape.numel()) != walk_letters(kernel.walks[k]) ||
            (shares >= 0 && extents_of(dims) != extents_of(region.input_dims(static_cast<std::size_t>(shares)))))
            throw DeviceError("vulkan codegen: a kernel launched for another input pattern");
        for (const InputDim& d : dims) {
            put(l.args, d.extent);
            put(l.args, d.stride);
            put(l.args, extent_divisor(d.extent));
            put(l.args, d.n);
            put(l.args, d.mapped() ? d.step : 0);
            put(l.args, d.mapped() ? d.offset : 0);
        }
    }
    for (std::size_t s = npush; s < plan.values.size(); ++s) put(l.args, plan.values[s]);

    if (region.is_reduce()) {
        const ReducePlan rp = plan_reduce(region, kernel.reduction_threads, kernel.workgroup_size);
        for (std::uint64_t v : {rp.inner, rp.len, rp.outer, rp.chunks, rp.lanes, partials, rp.per_invocation}) put(l.args, v);
        if (!region.tail.empty()) {
            // The tail's own block after the region's: it reads the stored results, writes its outputs.
            if (!kernel.tail || kernel.tail_args_offset != l.args.size())
                throw DeviceError("vulkan codegen: a reduce kernel without its tail's layout (bug)");
            const std::size_t nred = region.reductions.size();
            const Launch t = pack_arguments(region.tail_region(), *kernel.tail, outputs.first(nred), outputs.subspan(nred),
                                            args_address + l.args.size(), max_groups_x);
            l.args.insert(l.args.end(), t.args.begin(), t.args.end());
        }
        const std::uint64_t outs = rp.outputs();
        if (outs == 0) return l;  // no outputs (max/min of an empty dimension): nothing to write
        const std::vector<std::uint64_t> levels = rp.levels();
        if (!levels.empty() && partials == 0) throw DeviceError("vulkan: a two-pass reduction without its partials (bug)");
        const std::uint64_t wg = kernel.workgroup_size;
        // A slot (a chunk) per `lanes` invocations (strided first pass: lanes / per_invocation).
        auto groups_for = [&](std::uint64_t items, std::uint64_t slots) { return (items + slots - 1) / slots; };
        if (rp.whole_outputs) split_groups(groups_for(outs, rp.outputs_per_group(wg)), max_groups_x, l.groups_x, l.groups_y);
        else split_groups(groups_for(outs * rp.chunks, rp.slots(wg)), max_groups_x, l.groups_x, l.groups_y);
        for (std::uint64_t n : levels) {
            const auto next = static_cast<std::uint64_t>(reduce_chunks(static_cast<std::int64_t>(n)));
            std::uint32_t x = 0, y = 1;
            split_groups(groups_for(outs * next, wg / static_cast<std::uint64_t>(reduce_lanes(static_cast<std::int64_t>(n)))),
                         max_groups_x, x, y);
            l.combines.emplace_back(x, y);
        }
        return l;
    }

    // The fast path covers vectors: ceil(count / V) of them (the last one the scalar tail).
    const std::uint64_t vw = std::max<std::uint32_t>(1, kernel.vector_width);
    if (vw > 1 && count > std::uint64_t{0xFFFFFFFFu})
        throw DeviceError("vulkan codegen: a contiguous (32-bit index) kernel launched for 2^32 elements or more");
    const std::uint64_t slots = (count + vw - 1) / vw;
    const std::uint64_t tile = std::uint64_t{kernel.workgroup_size} * (kernel.elements_per_thread / vw);
    split_groups((slots + tile - 1) / tile, max_groups_x, l.groups_x, l.groups_y);
    return l;
}

void check_error(const Region& region, const void* args) {
    std::uint32_t flag = 0, instr = 0;
    std::memcpy(&flag, static_cast<const std::byte*>(args) + kErrorFlagOffset, 4);
    std::memcpy(&instr, static_cast<const std::byte*>(args) + kErrorInstrOffset, 4);
    if ((flag & kErrorNanToLogical) == 0) return;
    nan_to_logical(instr < region.program.size() ? region.program[instr].op : OpKind::Cast);
}

}  // namespace tandem::detail::vk
