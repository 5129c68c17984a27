// Region: how an input is walked (input_dims, shared by the CPU executor and the Vulkan kernels),
// and the region's text for logs and messages.
#include "graph/region.hpp"

#include <algorithm>
#include <sstream>

#include "graph/kernel_call.hpp"
#include "tandem/error.hpp"

namespace tandem::detail {

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

AxisMap lowest_in_period(AxisMap m, std::int64_t extent, std::int64_t n) {
    const std::int64_t lo = m.offset + std::min<std::int64_t>(0, m.step * (extent - 1));
    m.offset -= n * floor_div(lo, n);
    return m;
}

std::vector<InputDim> Region::input_dims(std::size_t k) const {
    std::vector<InputDim> dims;
    const Shape& in = inputs[k]->shape;
    const bool view = has_view(k);
    std::int64_t stride = 1;
    for (int d = 0; d < shape.ndims(); ++d) {
        InputDim dim;
        dim.extent = shape[d];
        const std::int64_t n = in[d];
        dim.stride = n == 1 ? 0 : stride;
        stride *= n;
        const AxisMap map = view && d < static_cast<int>(input_views[k].size()) ? input_views[k][static_cast<std::size_t>(d)] : AxisMap{};
        if (n > 1 && !(map.step == 1 && map.offset == 0 && n == dim.extent)) {
            // Mapped: the offset moved so that the lowest position read lies in [0, n).
            const AxisMap m = lowest_in_period(map, dim.extent, n);
            dim.n = n;
            dim.step = m.step;
            dim.offset = m.offset;
            const std::int64_t hi = dim.offset + std::max<std::int64_t>(0, m.step * (dim.extent - 1));
            dim.wrap = hi < n ? InputDim::Wrap::none : hi < 2 * n ? InputDim::Wrap::once : InputDim::Wrap::any;
            if (dim.extent == 1 && dim.offset == 0) continue;  // reads position 0: nothing to walk
            dims.push_back(dim);
            continue;
        }
        if (dim.extent == 1) continue;
        if (!dims.empty() && !dims.back().mapped()) {
            InputDim& prev = dims.back();
            if ((prev.stride == 0 && dim.stride == 0) || (prev.stride != 0 && dim.stride == prev.stride * prev.extent)) {
                prev.extent *= dim.extent;
                continue;
            }
        }
        dims.push_back(dim);
    }
    return dims;
}

const char* region_kind_name(RegionKind k) noexcept {
    switch (k) {
        case RegionKind::elementwise: return "elementwise";
        case RegionKind::reduce: return "reduce";
        case RegionKind::matmul: return "matmul";
        case RegionKind::view: return "view";
        case RegionKind::transpose: return "transpose";
        case RegionKind::permute: return "permute";
        case RegionKind::scan: return "scan";
        case RegionKind::concat: return "concat";
        case RegionKind::remap: return "remap";
        case RegionKind::gather: return "gather";
        case RegionKind::scatter: return "scatter";
        case RegionKind::find: return "find";
        case RegionKind::kernel: return "kernel";
    }
    return "?";
}

std::int64_t RegionCost::bytes_read() const noexcept {
    std::int64_t b = 0;
    for (auto x : input_bytes) b += x;
    return b;
}
std::int64_t RegionCost::bytes_written() const noexcept {
    std::int64_t b = 0;
    for (auto x : output_bytes) b += x;
    return b;
}

std::string RegionCost::to_string() const {
    static constexpr const char* kClass[kCostClasses] = {"none", "simple", "divide", "transcendental", "random"};
    std::ostringstream os;
    os << "reads " << bytes_read() << " B, writes " << bytes_written() << " B";
    for (std::size_t c = 1; c < kCostClasses; ++c)
        for (std::size_t t = 0; t < 2; ++t)
            if (ops[c][t]) os << "; " << ops[c][t] << " " << kClass[c] << (t ? " f32" : " f64");
    if (reduce_len) os << "; lines of " << reduce_len << " x " << reduce_lines;
    if (k) os << "; product " << m << " x " << n << " x " << k << " " << dtype_name(product_dtype);
    return os.str();
}

RegionCost summarize_cost(const Region& r) {
    RegionCost c;
    for (const auto& in : r.inputs) c.input_bytes.push_back(static_cast<std::int64_t>(in->bytes()));
    for (const auto& out : r.outputs) c.output_bytes.push_back(static_cast<std::int64_t>(out.node->bytes()));
    c.elements = r.shape.numel();
    auto count = [&](const std::vector<Instr>& program, std::int64_t times) {
        for (const Instr& ins : program)
            c.ops[static_cast<std::size_t>(op_info(ins.op).cost)][ins.compute == DType::f32 ? 1 : 0] += times;
    };
    switch (r.kind) {
        case RegionKind::elementwise: count(r.program, c.elements); break;
        case RegionKind::reduce: {
            count(r.program, c.elements);
            const auto e = r.reduce_extents();
            c.reduce_len = e.len;
            c.reduce_lines = e.inner * e.outer;
            for (const Reduction& red : r.reductions) {
                const DType t = r.program[red.value].compute;
                c.ops[static_cast<std::size_t>(CostClass::simple)][t == DType::f32 ? 1 : 0] += c.elements;
            }
            count(r.tail, c.reduce_lines);
            break;
        }
        case RegionKind::scan: {
            const auto e = r.reduce_extents();
            c.reduce_len = e.len;
            c.reduce_lines = e.inner * e.outer;
            c.ops[static_cast<std::size_t>(CostClass::simple)][r.inputs[0]->dtype == DType::f32 ? 1 : 0] += c.elements;
            break;
        }
        case RegionKind::matmul: {
            const Shape& a = r.inputs[0]->shape;
            c.m = r.shape[0];
            c.n = r.shape[1];
            c.k = r.trans_a ? a[0] : a[1];
            c.product_dtype = r.inputs[0]->dtype;
            c.product_precision = r.matmul_precision;
            break;
        }
        case RegionKind::view:
            c.output_bytes.assign(c.output_bytes.size(), 0);  // shares its input's value
            c.input_bytes.assign(c.input_bytes.size(), 0);
            break;
        case RegionKind::transpose:
        case RegionKind::permute:
        case RegionKind::concat:
        case RegionKind::remap:
        case RegionKind::gather:
        case RegionKind::scatter:
        case RegionKind::find: break;  // bytes only
        case RegionKind::kernel: {
            // The kernel's own account (Kernel::cost): its operations per item, and its bytes when
            // it gave them (else the buffers' bytes once each, as counted above).
            const KernelCall& k = *r.call;
            const auto items = static_cast<double>(k.items());
            const std::size_t single = std::any_of(k.accesses.begin(), k.accesses.end(),
                                                   [](const KernelAccess& a) { return a.dtype == DType::f32; }) ? 1 : 0;
            c.ops[static_cast<std::size_t>(CostClass::simple)][single] = static_cast<std::int64_t>(k.flops_per_item * items);
            c.elements = k.items();
            if (k.bytes_per_item >= 0) {
                // Half read, half written, spread evenly (what the model prices is the total).
                const double total = k.bytes_per_item * items;
                const double sides = c.input_bytes.empty() ? 1.0 : 2.0;
                for (auto* side : {&c.input_bytes, &c.output_bytes})
                    side->assign(side->size(), static_cast<std::int64_t>(total / sides / static_cast<double>(std::max<std::size_t>(1, side->size()))));
            }
            break;
        }
    }
    return c;
}

int Region::kernel_output(std::size_t slot) const noexcept {
    for (std::size_t j = 0; j < outputs.size(); ++j)
        if (static_cast<std::size_t>(outputs[j].node->attr[0]) == slot) return static_cast<int>(j);
    return -1;
}

Region Region::tail_region() const {
    Region e;
    e.shape = outputs.front().node->shape;
    for (std::size_t j = 0; j < reductions.size(); ++j) e.inputs.push_back(outputs[j].node);
    e.program = tail;
    e.outputs.assign(outputs.begin() + static_cast<std::ptrdiff_t>(reductions.size()), outputs.end());
    return e;
}

std::string Region::to_string() const {
    std::ostringstream os;
    os << region_kind_name(kind) << " region " << shape.to_string() << " (" << inputs.size() << " inputs, " << program.size() + tail.size()
       << " ops, " << outputs.size() << " outputs)\n";
    auto instruction = [&](const std::string& name, const Instr& ins, bool in_tail) {
        os << "  " << name << " = " << op_info(ins.op).name << "(";
        int arity = op_info(ins.op).arity;
        for (int k = 0; k < arity; ++k) {
            const Arg& a = ins.args[static_cast<std::size_t>(k)];
            if (k) os << ", ";
            if (in_tail && a.kind == Arg::Kind::Input) {
                os << "r" << a.index;  // reduction a.index's result
            } else if (in_tail && a.kind == Arg::Kind::Value) {
                os << "p" << a.index;
            } else if (a.kind == Arg::Kind::Input) {
                os << "in" << a.index << ":" << inputs[a.index]->shape.to_string();
                if (has_view(a.index)) {
                    // The folded remap: e.g. [k+255, k] for circshift(x, 1) of a 256 x n input.
                    os << "[";
                    const auto& v = input_views[a.index];
                    for (std::size_t d = 0; d < v.size(); ++d) {
                        if (d) os << ", ";
                        os << (v[d].step == 1 ? "" : v[d].step == -1 ? "-" : std::to_string(v[d].step) + "*") << "k";
                        if (v[d].offset) os << (v[d].offset > 0 ? "+" : "") << v[d].offset;
                    }
                    os << "]";
                }
            }
            else if (a.kind == Arg::Kind::Value)
                os << "v" << a.index;
            else
                os << a.scalar;
        }
        os << ") " << dtype_name(ins.dtype) << "\n";
    };
    for (std::size_t i = 0; i < program.size(); ++i) instruction("v" + std::to_string(i), program[i], false);
    if (!tail.empty()) os << "  then over the reduced shape (r<j>: reduction j):\n";
    for (std::size_t i = 0; i < tail.size(); ++i) instruction("p" + std::to_string(i), tail[i], true);
    os << "  outputs:";
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        const bool reduced = j < reductions.size();
        os << (reduced || !is_reduce() ? " v" : " p") << outputs[j].value;
        if (reduced) os << " reduced by " << op_info(reductions[j].op).name;
    }
    if (is_reduce()) os << (reduce_dim < 0 ? " over all elements" : " along dim " + std::to_string(reduce_dim + 1));
    os << "\n  cost: " << cost.to_string();
    return os.str();
}

Region Region::slice(std::size_t j, std::vector<std::size_t>* input_index) const {
    if (!tail.empty()) throw Error("Region::slice of a region with a tail (a bug: fusion folds only what cannot fail)");
    std::vector<bool> need(program.size(), false);
    need[outputs[j].value] = true;
    for (std::size_t i = program.size(); i-- > 0;) {
        if (!need[i]) continue;
        for (int k = 0; k < op_info(program[i].op).arity; ++k) {
            const Arg& a = program[i].args[static_cast<std::size_t>(k)];
            if (a.kind == Arg::Kind::Value) need[a.index] = true;
        }
    }
    Region s;
    s.shape = shape;
    std::vector<std::uint32_t> value_map(program.size()), input_map(inputs.size(), UINT32_MAX);
    for (std::size_t i = 0; i < program.size(); ++i) {
        if (!need[i]) continue;
        Instr ins = program[i];
        for (int k = 0; k < op_info(ins.op).arity; ++k) {
            Arg& a = ins.args[static_cast<std::size_t>(k)];
            if (a.kind == Arg::Kind::Value) {
                a.index = value_map[a.index];
            } else if (a.kind == Arg::Kind::Input) {
                if (input_map[a.index] == UINT32_MAX) {
                    input_map[a.index] = static_cast<std::uint32_t>(s.inputs.size());
                    s.inputs.push_back(inputs[a.index]);
                    if (has_view(a.index)) {
                        s.input_views.resize(s.inputs.size());
                        s.input_views.back() = input_views[a.index];
                    }
                    if (input_index) input_index->push_back(a.index);
                }
                a.index = input_map[a.index];
            }
        }
        value_map[i] = static_cast<std::uint32_t>(s.program.size());
        s.program.push_back(ins);
    }
    s.outputs.push_back({value_map[outputs[j].value], outputs[j].node});
    if (is_reduce()) {
        s.kind = RegionKind::reduce;
        s.reductions.push_back({reductions[j].op, value_map[reductions[j].value]});
        s.reduce_dim = reduce_dim;
    }
    return s;
}

std::string Region::summary() const {
    std::string s;
    for (const Instr& ins : program) {
        if (!s.empty()) s += ",";
        s += op_info(ins.op).name;
    }
    for (const Reduction& red : reductions) s += std::string(",") + std::string(op_info(red.op).name);
    for (const Instr& ins : tail) s += std::string(",") + std::string(op_info(ins.op).name);
    const char* own = nullptr;
    switch (kind) {
        case RegionKind::elementwise:
        case RegionKind::reduce: break;
        case RegionKind::matmul: own = "mtimes"; break;
        case RegionKind::view: own = "reshape"; break;
        case RegionKind::transpose: own = "transpose"; break;
        case RegionKind::permute: own = "permute"; break;
        case RegionKind::scan: own = op_info(scan_op).name.data(); break;
        case RegionKind::concat: own = "cat"; break;
        case RegionKind::remap: own = "remap"; break;
        case RegionKind::gather: own = "subsref"; break;
        case RegionKind::scatter: own = "subsasgn"; break;
        case RegionKind::find: own = "find"; break;
        case RegionKind::kernel: own = call ? call->name.c_str() : "kernel"; break;
    }
    if (own) s += std::string(s.empty() ? "" : ",") + own;
    return s;
}

}  // namespace tandem::detail
