// Region: how an input is walked (input_dims, shared by the CPU executor and the Vulkan kernels),
// and the region's text for logs and messages.
#include "graph/region.hpp"

#include <algorithm>
#include <sstream>

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
    os << "region " << shape.to_string() << " (" << inputs.size() << " inputs, " << program.size() + tail.size()
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
    const char* own = matmul ? "mtimes" : transpose ? "transpose" : alias ? "reshape" : cat ? "cat" : remap ? "remap" : nullptr;
    if (!permutation.empty()) own = "permute";
    if (indexing != Indexing::none)
        own = indexing == Indexing::gather ? "subsref" : indexing == Indexing::scatter ? "subsasgn" : "find";
    if (scan) own = op_info(scan_op).name.data();
    if (own) s += std::string(s.empty() ? "" : ",") + own;
    return s;
}

}  // namespace tandem::detail
