// The argument layout of a region's kernel: how each input is read (access_for), the push
// constants and argument block of one dispatch (pack_arguments), the error header read back
// (check_error), and the scalar slots that codegen.cpp's kernels read them from. Layout:
// arguments.hpp.
#include "backends/vulkan/arguments.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/vulkan/codegen.hpp"
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
                // The host computes the step exactly as the CPU executor does (one division).
                const double a = ins.attr[0], b = ins.attr[1];
                const auto count = static_cast<std::int64_t>(ins.attr[2]);
                const double step = count > 1 ? (b - a) / static_cast<double>(count - 1) : 0.0;
                add(i, 0, a);
                add(i, 1, b);
                add(i, 2, step);
                add(i, 3, static_cast<double>(count - 1));
                break;
            }
            case OpKind::Colon:
                add(i, 0, ins.attr[0]);
                add(i, 1, ins.attr[1]);
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
std::vector<std::pair<std::int64_t, std::int64_t>> collapsed_dims(const Region& region, std::size_t k) {
    // As the CPU executor's Lowering::input: drop the region's singleton dimensions, merge
    // neighbours that are both expanded (stride 0) or contiguous with each other.
    std::vector<std::pair<std::int64_t, std::int64_t>> dims;
    const Shape& in = region.inputs[k]->shape;
    std::int64_t stride = 1;
    for (int d = 0; d < region.shape.ndims(); ++d) {
        const std::int64_t extent = region.shape[d];
        const std::int64_t s = in[d] == 1 ? 0 : stride;
        stride *= in[d];
        if (extent == 1) continue;
        if (!dims.empty()) {
            auto& [pe, ps] = dims.back();
            if ((ps == 0 && s == 0) || (ps != 0 && s == ps * pe)) {
                pe *= extent;
                continue;
            }
        }
        dims.emplace_back(extent, s);
    }
    return dims;
}

void access_for(const Region& region, std::vector<InputAccess>& access, std::vector<int>& strided_dims) {
    access.assign(region.inputs.size(), InputAccess::full);
    strided_dims.assign(region.inputs.size(), 0);
    const std::int64_t n = region.shape.numel();
    for (std::size_t k = 0; k < region.inputs.size(); ++k) {
        const std::int64_t m = region.inputs[k]->shape.numel();
        if (m == 1) access[k] = InputAccess::scalar;
        else if (m != n) {
            access[k] = InputAccess::strided;
            strided_dims[k] = static_cast<int>(collapsed_dims(region, k).size());
        }
    }
}

Launch pack_arguments(const Region& region, const Kernel& kernel, std::span<const std::uint64_t> inputs,
                      std::span<const std::uint64_t> outputs, std::uint64_t args_address,
                      std::uint32_t max_groups_x) {
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
    put(l.args, std::uint64_t{0});
    for (std::uint64_t a : inputs) put(l.args, a);
    for (std::uint64_t a : outputs) put(l.args, a);
    for (std::size_t k = 0; k < region.inputs.size(); ++k) {
        if (kernel.access[k] != InputAccess::strided) continue;
        auto dims = collapsed_dims(region, k);
        if (static_cast<int>(dims.size()) != kernel.strided_dims[k])
            throw DeviceError("vulkan codegen: a kernel launched for another input pattern");
        for (auto [e, s] : dims) {
            put(l.args, e);
            put(l.args, s);
        }
    }
    for (std::size_t s = npush; s < plan.values.size(); ++s) put(l.args, plan.values[s]);

    // The fast path covers vectors: ceil(count / V) of them (the last one the scalar tail).
    const std::uint64_t vw = std::max<std::uint32_t>(1, kernel.vector_width);
    if (vw > 1 && count > std::uint64_t{0xFFFFFFFFu})
        throw DeviceError("vulkan codegen: a contiguous (32-bit index) kernel launched for 2^32 elements or more");
    const std::uint64_t slots = (count + vw - 1) / vw;
    const std::uint64_t tile = std::uint64_t{kernel.workgroup_size} * (kernel.elements_per_thread / vw);
    const std::uint64_t groups = (slots + tile - 1) / tile;
    const std::uint64_t mx = std::max<std::uint32_t>(1, max_groups_x);
    if (groups <= mx) {
        l.groups_x = static_cast<std::uint32_t>(groups);
    } else {
        l.groups_x = static_cast<std::uint32_t>(mx);
        l.groups_y = static_cast<std::uint32_t>((groups + mx - 1) / mx);
    }
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
