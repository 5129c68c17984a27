#include "backends/cpu/program.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "graph/generators.hpp"
#include "tandem/error.hpp"

namespace tandem::detail::cpu {

namespace {

ElemType reg_type(DType t) noexcept { return t == DType::f32 ? ElemType::f32 : ElemType::f64; }
ElemType storage_type(DType t) noexcept {
    return t == DType::f64 ? ElemType::f64 : t == DType::f32 ? ElemType::f32 : ElemType::u8;
}
std::size_t elem_size(ElemType t) noexcept { return t == ElemType::f64 ? 8 : t == ElemType::f32 ? 4 : 1; }
std::size_t col(ElemType t) noexcept { return static_cast<std::size_t>(t); }

[[noreturn]] void nan_to_logical(OpKind op) {
    throw ValueError(std::string(op_info(op).name) +
                     ": NaN's cannot be converted to logicals (an operand of this logical op is NaN)");
}

}  // namespace

/// Builds the step list from the region, one instruction at a time.
class Program::Lowering {
public:
    Lowering(Program& p, const Region& r, std::span<const Storage* const> in, std::span<Storage* const> out,
             const KernelTable& k)
        : p_(p), r_(r), in_(in), out_(out), k_(k) {}

    /// A reduce region: every value in registers (or inputs, or scalars); the reduced ones are
    /// the sinks.
    void run_sinks() {
        value_slot_.resize(r_.program.size());
        for (std::size_t i = 0; i < r_.program.size(); ++i) value_slot_[i] = lower(r_.program[i], -1);
        for (const Reduction& red : r_.reductions) p_.sinks_.push_back(value_slot_[red.value]);
    }

    void run() {
        value_slot_.resize(r_.program.size());
        std::vector<int> output_of(r_.program.size(), -1);
        for (std::size_t j = 0; j < r_.outputs.size(); ++j) output_of[r_.outputs[j].value] = static_cast<int>(j);
        for (std::size_t i = 0; i < r_.program.size(); ++i) value_slot_[i] = lower(r_.program[i], output_of[i]);
        // Outputs not written in place by their instruction: convert (or copy, or fill) into them.
        for (std::size_t j = 0; j < r_.outputs.size(); ++j) {
            std::uint32_t target = output_slot(j);
            std::uint32_t v = value_slot_[r_.outputs[j].value];
            if (v == target) continue;
            const Slot& s = p_.slots_[v];
            Step st{};
            st.out = target;
            st.in[0] = v;
            st.op = r_.program[r_.outputs[j].value].op;
            if (s.kind == SlotKind::Scalar) {
                st.kind = StepKind::Fill;
                // Convert the scalar to the output's type now; Fill then copies bytes.
                st.in[0] = convert_now(v, p_.slots_[target].type);
            } else {
                st.kind = StepKind::Convert;
                ElemType to = p_.slots_[target].type;
                st.fn = streamed(j) && s.type == to
                            ? reinterpret_cast<const void*>(k_.stream_copy[col(to)])
                            : reinterpret_cast<const void*>(k_.convert[col(s.type)][col(to)]);
            }
            p_.steps_.push_back(st);
        }
    }

private:
    std::uint32_t add_slot(SlotKind kind, ElemType type, std::uint32_t index) {
        p_.slots_.push_back({kind, type, index});
        return static_cast<std::uint32_t>(p_.slots_.size() - 1);
    }
    std::uint32_t new_reg(ElemType t) { return add_slot(SlotKind::Reg, t, 0); }
    std::uint32_t new_cell(ElemType t, double v) {
        Cell c{};
        if (t == ElemType::f64) c.f64 = v;
        else if (t == ElemType::f32) c.f32 = static_cast<float>(v);
        else c.u8 = v != 0 ? 1 : 0;
        p_.cells_.push_back(c);
        return add_slot(SlotKind::Scalar, t, static_cast<std::uint32_t>(p_.cells_.size() - 1));
    }
    bool is_scalar(std::uint32_t s) const { return p_.slots_[s].kind == SlotKind::Scalar; }
    void* cell_ptr(std::uint32_t s) { return &p_.cells_[p_.slots_[s].index]; }
    double cell_value(std::uint32_t s) {
        const Cell& c = p_.cells_[p_.slots_[s].index];
        ElemType t = p_.slots_[s].type;
        return t == ElemType::f64 ? c.f64 : t == ElemType::f32 ? static_cast<double>(c.f32) : c.u8;
    }
    std::uint32_t convert_now(std::uint32_t s, ElemType to) {
        double v = cell_value(s);
        if (to == ElemType::u8) v = v != 0 ? 1.0 : 0.0;
        return new_cell(to, v);
    }

    std::uint32_t output_slot(std::size_t j) {
        auto it = output_slots_.find(j);
        if (it != output_slots_.end()) return it->second;
        const Node& n = *r_.outputs[j].node;
        ElemType t = storage_type(n.dtype);
        p_.bases_.push_back({static_cast<std::byte*>(out_[j]->data()), elem_size(t)});
        std::uint32_t s = add_slot(SlotKind::OutputDirect, t, static_cast<std::uint32_t>(p_.bases_.size() - 1));
        output_slots_.emplace(j, s);
        return s;
    }

    /// The slot for an instruction's result of type t: its output array when it is one of
    /// matching type (written in place) and small enough to stay in cache, else a register (a
    /// large output is then streamed from the register, see kStreamBytes).
    bool streamed(std::size_t j) const {
        const Node& n = *r_.outputs[j].node;
        ElemType t = storage_type(n.dtype);
        return t != ElemType::u8 && static_cast<std::size_t>(n.shape.numel()) * elem_size(t) >= kStreamBytes;
    }

    std::uint32_t result_slot(int output, ElemType t) {
        if (output >= 0 && !streamed(static_cast<std::size_t>(output))) {
            std::uint32_t s = output_slot(static_cast<std::size_t>(output));
            if (p_.slots_[s].type == t) return s;
        }
        return new_reg(t);
    }

    ElemType own_type(const Arg& a) const {
        if (a.kind == Arg::Kind::Value) return p_.slots_[value_slot_[a.index]].type;
        return reg_type(a.dtype);
    }

    std::uint32_t convert(std::uint32_t s, ElemType to) {
        if (p_.slots_[s].type == to) return s;
        if (is_scalar(s)) return convert_now(s, to);
        auto key = std::make_pair(s, to);
        if (auto it = converted_.find(key); it != converted_.end()) return it->second;
        Step st{};
        st.kind = StepKind::Convert;
        st.fn = reinterpret_cast<const void*>(k_.convert[col(p_.slots_[s].type)][col(to)]);
        st.in[0] = s;
        st.out = new_reg(to);
        p_.steps_.push_back(st);
        converted_.emplace(key, st.out);
        return st.out;
    }

    std::uint32_t input(std::uint32_t k, ElemType t) {
        auto key = std::make_pair(k, t);
        if (auto it = inputs_.find(key); it != inputs_.end()) return it->second;
        const Node& node = *r_.inputs[k];
        const Storage& st = *in_[k];
        ElemType src = storage_type(node.dtype);
        std::uint32_t slot;
        if (node.shape.numel() == 1) {
            double v = src == ElemType::f64   ? *static_cast<const double*>(st.data())
                       : src == ElemType::f32 ? static_cast<double>(*static_cast<const float*>(st.data()))
                                              : *static_cast<const std::uint8_t*>(st.data());
            slot = new_cell(t, v);
        } else if (node.shape.numel() == p_.numel_ && src == t && !r_.has_view(k)) {
            p_.bases_.push_back({static_cast<std::byte*>(const_cast<void*>(st.data())), elem_size(t)});
            slot = add_slot(SlotKind::InputDirect, t, static_cast<std::uint32_t>(p_.bases_.size() - 1));
        } else {
            // Walked through collapsed dimensions, so the gather copies long runs.
            Load load{st.data(), src, r_.input_dims(k)};
            p_.loads_.push_back(std::move(load));
            Step step{};
            step.kind = StepKind::Load;
            step.aux = static_cast<std::uint32_t>(p_.loads_.size() - 1);
            step.out = new_reg(t);
            p_.steps_.push_back(step);
            slot = step.out;
        }
        inputs_.emplace(key, slot);
        return slot;
    }

    std::uint32_t arg(const Arg& a, ElemType t) {
        switch (a.kind) {
            case Arg::Kind::Scalar: return new_cell(t, a.scalar);
            case Arg::Kind::Value: return convert(value_slot_[a.index], t);
            case Arg::Kind::Input: return input(a.index, t);
        }
        return 0;
    }

    void check_nan(std::uint32_t s, OpKind op) {
        if (is_scalar(s)) {
            if (cell_value(s) != cell_value(s)) nan_to_logical(op);
            return;
        }
        Step st{};
        st.kind = StepKind::CheckNan;
        st.op = op;
        st.in[0] = s;
        st.fn = reinterpret_cast<const void*>(k_.any_nan[col(p_.slots_[s].type)]);
        p_.steps_.push_back(st);
    }

    /// Emits (or, for all-scalar operands, evaluates at once) one kernel call.
    std::uint32_t call(StepKind kind, OpKind op, const void* fn, std::initializer_list<std::uint32_t> args,
                       ElemType t, int output) {
        Step st{};
        st.kind = kind;
        st.op = op;
        st.fn = fn;
        unsigned bit = 0;
        bool all_scalar = true;
        for (std::uint32_t a : args) {
            st.in[bit] = a;
            if (is_scalar(a)) st.scalars |= 1u << bit;
            else all_scalar = false;
            ++bit;
        }
        if (all_scalar) {
            std::uint32_t out = new_cell(t, 0.0);
            void* o = cell_ptr(out);
            void* x = cell_ptr(st.in[0]);
            if (kind == StepKind::Unary) reinterpret_cast<UnaryFn>(fn)(1, x, o);
            else if (kind == StepKind::Binary) reinterpret_cast<BinaryFn>(fn)(1, x, cell_ptr(st.in[1]), 0, o);
            else reinterpret_cast<WhereFn>(fn)(1, x, cell_ptr(st.in[1]), cell_ptr(st.in[2]), 0, o);
            return out;
        }
        st.out = result_slot(output, t);
        p_.steps_.push_back(st);
        return st.out;
    }

    const void* binary_fn(OpKind op, ElemType t) const {
        return reinterpret_cast<const void*>(k_.binary[static_cast<std::size_t>(op)][col(t)]);
    }
    /// 1 where nonzero, 0 where zero, in type t (after the NaN check).
    std::uint32_t truth(std::uint32_t s, OpKind op, int output) {
        ElemType t = p_.slots_[s].type;
        return call(StepKind::Binary, op, binary_fn(OpKind::Ne, t), {s, new_cell(t, 0.0)}, t, output);
    }

    std::uint32_t lower(const Instr& ins, int output) {
        const OpInfo& info = op_info(ins.op);
        ElemType t = reg_type(ins.compute);
        switch (info.group) {
            case OpGroup::Leaf:  // a wanted constant
                return new_cell(reg_type(ins.dtype == DType::f32 ? DType::f32 : DType::f64), ins.attr[0]);
            case OpGroup::Generator: {
                Step st{};
                st.kind = ins.op == OpKind::Linspace ? StepKind::Linspace
                          : ins.op == OpKind::Colon  ? StepKind::Colon
                          : ins.op == OpKind::RandU  ? StepKind::RandU
                                                     : StepKind::RandN;
                st.op = ins.op;
                std::copy(ins.attr.begin(), ins.attr.end(), st.attr);
                // Random numbers are made in their own type (single ones are not rounded doubles).
                const bool rng = ins.op == OpKind::RandU || ins.op == OpKind::RandN;
                st.out = result_slot(output, rng && ins.dtype == DType::f32 ? ElemType::f32 : ElemType::f64);
                if (rng) {
                    const int c = ins.dtype == DType::f32 ? 1 : 0;
                    st.fn = reinterpret_cast<const void*>(ins.op == OpKind::RandU ? k_.rand[c] : k_.randn[c]);
                }
                p_.steps_.push_back(st);
                return st.out;
            }
            case OpGroup::Unary: {
                if (ins.op == OpKind::Cast) {
                    if (ins.dtype != DType::logical) return arg(ins.args[0], reg_type(ins.dtype));
                    std::uint32_t s = arg(ins.args[0], own_type(ins.args[0]));
                    check_nan(s, ins.op);
                    return truth(s, ins.op, -1);
                }
                std::uint32_t a = arg(ins.args[0], t);
                if (info.rule == TypeRule::Logical) check_nan(a, ins.op);
                const void* fn = reinterpret_cast<const void*>(k_.unary[static_cast<std::size_t>(ins.op)][col(t)]);
                return call(StepKind::Unary, ins.op, fn, {a}, t, ins.dtype == DType::logical ? -1 : output);
            }
            case OpGroup::Binary: {
                std::uint32_t a = arg(ins.args[0], t);
                // x.^2 is x.*x, bit for bit (one correctly rounded product), and far cheaper.
                if (ins.op == OpKind::Pow && ins.args[1].kind == Arg::Kind::Scalar && ins.args[1].scalar == 2.0)
                    return call(StepKind::Binary, OpKind::Mul, binary_fn(OpKind::Mul, t), {a, a}, t, output);
                std::uint32_t b = arg(ins.args[1], t);
                if (info.rule == TypeRule::Logical) {
                    check_nan(a, ins.op);
                    check_nan(b, ins.op);
                }
                return call(StepKind::Binary, ins.op, binary_fn(ins.op, t), {a, b}, t,
                            ins.dtype == DType::logical ? -1 : output);
            }
            case OpGroup::Ternary: {
                ElemType tc = own_type(ins.args[0]);
                std::uint32_t c = arg(ins.args[0], tc);
                check_nan(c, ins.op);
                if (ins.args[0].dtype != DType::logical) c = truth(c, ins.op, -1);
                c = convert(c, t);
                std::uint32_t a = arg(ins.args[1], t);
                std::uint32_t b = arg(ins.args[2], t);
                const void* fn = reinterpret_cast<const void*>(k_.where[col(t)]);
                return call(StepKind::Where, ins.op, fn, {c, a, b}, t, ins.dtype == DType::logical ? -1 : output);
            }
            case OpGroup::Reduce:    // never an instruction: a region's reductions follow its program
            case OpGroup::Contract:  // a region of its own
            case OpGroup::View:
            case OpGroup::Scan:
            case OpGroup::User:
                break;
        }
        throw Error(std::string("cpu executor: ") + std::string(info.name) + " inside a region's program (fusion bug)");
        return 0;
    }

    Program& p_;
    const Region& r_;
    std::span<const Storage* const> in_;
    std::span<Storage* const> out_;
    const KernelTable& k_;
    std::vector<std::uint32_t> value_slot_;
    std::map<std::size_t, std::uint32_t> output_slots_;
    std::map<std::pair<std::uint32_t, ElemType>, std::uint32_t> converted_, inputs_;
};

Program::Program(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs,
                 const KernelTable& kernels, std::int64_t block_elements)
    : numel_(region.shape.numel()), index_base_(region.index_base), block_(static_cast<std::size_t>(block_elements)) {
    Lowering(*this, region, inputs, outputs, kernels).run();
    allocate_registers();
}

Program::Program(const Region& region, std::span<const Storage* const> inputs, const KernelTable& kernels,
                 std::int64_t block_elements, Sinks)
    : numel_(region.shape.numel()), index_base_(region.index_base), block_(static_cast<std::size_t>(block_elements)) {
    Lowering(*this, region, inputs, {}, kernels).run_sinks();
    allocate_registers();
}

Program::SinkView Program::sink(std::size_t j, std::int64_t start, const std::byte* scratch) const {
    const Slot& slot = slots_[sinks_[j]];
    switch (slot.kind) {
        case SlotKind::Reg: return {slot.type, scratch + static_cast<std::size_t>(slot.index) * block_ * 8, false};
        case SlotKind::InputDirect:
        case SlotKind::OutputDirect:
            return {slot.type, bases_[slot.index].ptr + static_cast<std::size_t>(start) * bases_[slot.index].elem, false};
        case SlotKind::Scalar: return {slot.type, &cells_[slot.index], true};
    }
    return {slot.type, nullptr, true};
}

void Program::allocate_registers() {
    // Linear scan over the straight-line step list: a register is free after its last read.
    auto reads = [](const Step& st) -> unsigned {
        switch (st.kind) {
            case StepKind::Where: return 3;
            case StepKind::Binary: return 2;
            case StepKind::Unary:
            case StepKind::Convert:
            case StepKind::CheckNan:
            case StepKind::Fill: return 1;
            default: return 0;
        }
    };
    std::vector<std::int64_t> last_use(slots_.size(), -1);
    for (std::size_t i = 0; i < steps_.size(); ++i)
        for (unsigned k = 0; k < reads(steps_[i]); ++k) last_use[steps_[i].in[k]] = static_cast<std::int64_t>(i);
    // Reduced values are read after the block's last step.
    for (std::uint32_t s : sinks_) last_use[s] = static_cast<std::int64_t>(steps_.size());
    std::vector<std::uint32_t> free_regs;
    std::vector<bool> assigned(slots_.size(), false);
    std::uint32_t count = 0;
    auto take = [&]() -> std::uint32_t {
        if (free_regs.empty()) return count++;
        std::uint32_t r = free_regs.back();
        free_regs.pop_back();
        return r;
    };
    auto release_dying = [&](const Step& st, std::size_t i) {
        for (unsigned k = 0; k < reads(st); ++k) {
            std::uint32_t s = st.in[k];
            bool dup = false;
            for (unsigned j = 0; j < k; ++j) dup |= st.in[j] == s;
            if (!dup && slots_[s].kind == SlotKind::Reg && last_use[s] == static_cast<std::int64_t>(i))
                free_regs.push_back(slots_[s].index);
        }
    };
    for (std::size_t i = 0; i < steps_.size(); ++i) {
        Step& st = steps_[i];
        bool writes = st.kind != StepKind::CheckNan;
        bool defines = writes && slots_[st.out].kind == SlotKind::Reg && !assigned[st.out];
        // A conversion between sizes cannot run in place; same-size elementwise ops can.
        bool in_place_ok = st.kind != StepKind::Convert;
        if (in_place_ok) release_dying(st, i);
        if (defines) {
            slots_[st.out].index = take();
            assigned[st.out] = true;
            if (last_use[st.out] < static_cast<std::int64_t>(i)) free_regs.push_back(slots_[st.out].index);
        }
        if (!in_place_ok) release_dying(st, i);
    }
    registers_ = count;
}

namespace {

template <class S, class D>
inline D cast_elem(S v) {
    if constexpr (sizeof(D) == 1) return v != S(0) ? D(1) : D(0);
    else return static_cast<D>(v);
}

/// Position of mapped dimension `d` at index k (InputDim: step * k + offset >= 0, mod n).
inline std::int64_t mapped_position(const InputDim& d, std::int64_t k) {
    const std::int64_t v = d.step * k + d.offset;
    return d.wrap == InputDim::Wrap::none ? v : d.wrap == InputDim::Wrap::once ? (v >= d.n ? v - d.n : v) : v % d.n;
}

inline std::int64_t position(const InputDim& d, std::int64_t k) { return d.mapped() ? mapped_position(d, k) : k; }

/// Elements [start, start + n) of the region's walk over an input (Region::input_dims), converted.
template <class S, class D>
void gather_typed(const S* base, const std::vector<InputDim>& dims, std::int64_t start, std::size_t n, D* out) {
    constexpr int kMax = 64;
    std::int64_t idx[kMax];
    std::int64_t part[kMax];  // each outer dimension's share of the offset
    std::int64_t outer = 0, rest = start;
    const int nd = static_cast<int>(dims.size());
    if (nd == 0) {  // every dimension reads one position: one element, repeated
        const D v = cast_elem<S, D>(base[0]);
        for (std::size_t i = 0; i < n; ++i) out[i] = v;
        return;
    }
    for (int d = 0; d < nd; ++d) {
        const InputDim& dim = dims[static_cast<std::size_t>(d)];
        idx[d] = rest % dim.extent;
        rest /= dim.extent;
        part[d] = position(dim, idx[d]) * dim.stride;
        if (d > 0) outer += part[d];
    }
    const InputDim& d0 = dims[0];
    const std::int64_t s0 = d0.stride;
    // Mapped innermost dimension: the position advances by step mod n (a wrap is one subtraction).
    const std::int64_t step0 = d0.mapped() ? ((d0.step % d0.n) + d0.n) % d0.n : 1;
    std::size_t done = 0;
    while (done < n) {
        const std::size_t run = std::min<std::size_t>(static_cast<std::size_t>(d0.extent - idx[0]), n - done);
        D* dst = out + done;
        if (!d0.mapped()) {
            const S* src = base + outer + idx[0] * s0;
            if (s0 == 1)
                for (std::size_t i = 0; i < run; ++i) dst[i] = cast_elem<S, D>(src[i]);
            else if (s0 == 0) {
                const D v = cast_elem<S, D>(src[0]);
                for (std::size_t i = 0; i < run; ++i) dst[i] = v;
            } else
                for (std::size_t i = 0; i < run; ++i) dst[i] = cast_elem<S, D>(src[static_cast<std::int64_t>(i) * s0]);
        } else if (step0 == 1 && s0 == 1) {
            // A shifted run: at most a few contiguous pieces, split where the position wraps.
            std::int64_t p = mapped_position(d0, idx[0]);
            for (std::size_t i = 0; i < run;) {
                const std::size_t piece = std::min<std::size_t>(run - i, static_cast<std::size_t>(d0.n - p));
                const S* src = base + outer + p;
                for (std::size_t q = 0; q < piece; ++q) dst[i + q] = cast_elem<S, D>(src[q]);
                i += piece;
                p = 0;
            }
        } else {
            std::int64_t p = mapped_position(d0, idx[0]);
            for (std::size_t i = 0; i < run; ++i) {
                dst[i] = cast_elem<S, D>(base[outer + p * s0]);
                p += step0;
                if (p >= d0.n) p -= d0.n;
            }
        }
        done += run;
        idx[0] += static_cast<std::int64_t>(run);
        // Carry into the outer dimensions; their shares of the offset are recomputed as they move.
        for (int d = 0; d + 1 < nd && idx[d] == dims[static_cast<std::size_t>(d)].extent; ++d) {
            idx[d] = 0;
            ++idx[d + 1];
            const InputDim& next = dims[static_cast<std::size_t>(d) + 1];
            if (d > 0) {
                outer -= part[d];
                part[d] = position(dims[static_cast<std::size_t>(d)], 0) * dims[static_cast<std::size_t>(d)].stride;
                outer += part[d];
            }
            outer -= part[d + 1];
            part[d + 1] = idx[d + 1] < next.extent ? position(next, idx[d + 1]) * next.stride : 0;
            outer += part[d + 1];
        }
    }
}

template <class S>
void gather_from(const S* base, const std::vector<InputDim>& dims, std::int64_t start,
                 std::size_t n, ElemType to, void* out) {
    switch (to) {
        case ElemType::f64: return gather_typed(base, dims, start, n, static_cast<double*>(out));
        case ElemType::f32: return gather_typed(base, dims, start, n, static_cast<float*>(out));
        case ElemType::u8: return gather_typed(base, dims, start, n, static_cast<std::uint8_t*>(out));
    }
}

}  // namespace

void Program::gather(const Load& load, std::int64_t start, std::size_t n, ElemType to, void* out) const {
    switch (load.src) {
        case ElemType::f64: return gather_from(static_cast<const double*>(load.base), load.dims, start, n, to, out);
        case ElemType::f32: return gather_from(static_cast<const float*>(load.base), load.dims, start, n, to, out);
        case ElemType::u8:
            return gather_from(static_cast<const std::uint8_t*>(load.base), load.dims, start, n, to, out);
    }
}

void Program::run_block(std::int64_t start, std::size_t n, std::byte* scratch) const {
    thread_local std::vector<void*> ptr;
    ptr.resize(slots_.size());
    for (std::size_t s = 0; s < slots_.size(); ++s) {
        const Slot& slot = slots_[s];
        switch (slot.kind) {
            case SlotKind::Reg: ptr[s] = scratch + static_cast<std::size_t>(slot.index) * block_ * 8; break;
            case SlotKind::InputDirect:
            case SlotKind::OutputDirect:
                ptr[s] = bases_[slot.index].ptr + static_cast<std::size_t>(start) * bases_[slot.index].elem;
                break;
            case SlotKind::Scalar: ptr[s] = const_cast<Cell*>(&cells_[slot.index]); break;
        }
    }
    for (const Step& st : steps_) {
        switch (st.kind) {
            case StepKind::Unary: reinterpret_cast<UnaryFn>(st.fn)(n, ptr[st.in[0]], ptr[st.out]); break;
            case StepKind::Binary:
                reinterpret_cast<BinaryFn>(st.fn)(n, ptr[st.in[0]], ptr[st.in[1]], st.scalars, ptr[st.out]);
                break;
            case StepKind::Where:
                reinterpret_cast<WhereFn>(st.fn)(n, ptr[st.in[0]], ptr[st.in[1]], ptr[st.in[2]], st.scalars,
                                                 ptr[st.out]);
                break;
            case StepKind::Convert: reinterpret_cast<ConvertFn>(st.fn)(n, ptr[st.in[0]], ptr[st.out]); break;
            case StepKind::CheckNan:
                if (reinterpret_cast<AnyNanFn>(st.fn)(n, ptr[st.in[0]])) nan_to_logical(st.op);
                break;
            case StepKind::Load: gather(loads_[st.aux], start, n, slots_[st.out].type, ptr[st.out]); break;
            case StepKind::Linspace: {  // graph/generators.hpp
                auto* o = static_cast<double*>(ptr[st.out]);
                const double a = st.attr[0], b = st.attr[1];
                const auto count = static_cast<std::int64_t>(st.attr[2]);
                const LinspaceSteps steps = linspace_steps(a, b, count);
                for (std::size_t i = 0; i < n; ++i)
                    o[i] = linspace_value(a, b, count, steps, index_base_ + start + static_cast<std::int64_t>(i));
                break;
            }
            case StepKind::RandU:
            case StepKind::RandN: {
                const std::uint64_t seed = static_cast<std::uint64_t>(st.attr[0]) | static_cast<std::uint64_t>(st.attr[1]) << 32;
                const auto stream = static_cast<std::uint64_t>(st.attr[2]);
                const auto first = static_cast<std::uint64_t>(index_base_ + start);
                reinterpret_cast<RandomFn>(st.fn)(seed, stream, first, n, ptr[st.out]);
                break;
            }
            case StepKind::Colon: {
                auto* o = static_cast<double*>(ptr[st.out]);
                for (std::size_t i = 0; i < n; ++i)
                    o[i] = colon_value(st.attr[0], st.attr[1], st.attr[2], index_base_ + start + static_cast<std::int64_t>(i));
                break;
            }
            case StepKind::Fill: {
                std::size_t size = elem_size(slots_[st.out].type);
                auto* o = static_cast<std::byte*>(ptr[st.out]);
                if (size == 8) {
                    double v;
                    std::memcpy(&v, ptr[st.in[0]], 8);
                    std::fill_n(reinterpret_cast<double*>(o), n, v);
                } else if (size == 4) {
                    float v;
                    std::memcpy(&v, ptr[st.in[0]], 4);
                    std::fill_n(reinterpret_cast<float*>(o), n, v);
                } else {
                    std::memset(o, *static_cast<const std::uint8_t*>(ptr[st.in[0]]), n);
                }
                break;
            }
        }
    }
}

}  // namespace tandem::detail::cpu
