// Regions built by hand for the code-generation tests: inputs, instructions (types as fusion
// sets them), outputs; and the kernel generate() writes for one.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "backends/vulkan/codegen.hpp"
#include "graph/region.hpp"

namespace tandem::detail::vk {

/// Builds a region by hand: inputs, instructions (types as fusion sets them), outputs.
struct Builder {
    Region r;
    explicit Builder(Shape s) { r.shape = std::move(s); }
    Arg input(DType t, Shape s) {
        r.inputs.push_back(std::make_shared<Node>(OpKind::Input, t, std::move(s)));
        Arg a;
        a.kind = Arg::Kind::Input;
        a.index = static_cast<std::uint32_t>(r.inputs.size() - 1);
        a.dtype = t;
        return a;
    }
    static Arg scalar(double v, DType t = DType::f64) {
        Arg a;
        a.kind = Arg::Kind::Scalar;
        a.scalar = t == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v;
        a.dtype = t;
        return a;
    }
    Arg value(std::uint32_t v) const {
        Arg a;
        a.kind = Arg::Kind::Value;
        a.index = v;
        a.dtype = r.program[v].dtype;
        return a;
    }
    std::uint32_t op(OpKind k, std::vector<Arg> args, DType cast_target = DType::f64, std::array<double, 3> attr = {}) {
        Instr ins{k, DType::f64, DType::f64, {}, attr};
        DType types[3] = {DType::f64, DType::f64, DType::f64};
        for (std::size_t i = 0; i < args.size(); ++i) {
            ins.args[i] = args[i];
            types[i] = args[i].dtype;
        }
        if (op_info(k).group == OpGroup::Leaf || op_info(k).group == OpGroup::Generator) {
            ins.dtype = k == OpKind::Constant ? cast_target : DType::f64;
            ins.compute = ins.dtype == DType::f32 ? DType::f32 : DType::f64;
        } else {
            ins.dtype = result_dtype(k, types, cast_target);
            ins.compute = compute_dtype(k, types);
        }
        r.program.push_back(ins);
        return static_cast<std::uint32_t>(r.program.size() - 1);
    }
    void out(std::uint32_t v, std::optional<DType> t = std::nullopt) {
        r.outputs.push_back({v, std::make_shared<Node>(r.program[v].op, t.value_or(r.program[v].dtype), r.shape)});
    }
};

inline Kernel kernel_for(const Region& r, CodegenOptions o = {}) {
    std::vector<InputAccess> access;
    std::vector<InputWalk> walks;
    access_for(r, access, walks);
    return generate(r, access, walks, o);
}

}  // namespace tandem::detail::vk
