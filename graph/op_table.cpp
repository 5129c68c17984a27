#include "graph/op_table.hpp"

#include <array>

namespace tandem::detail {

namespace {

using G = OpGroup;
using R = TypeRule;
using C = CostClass;

constexpr std::array<OpInfo, kOpCount> kOps = {{
#define TANDEM_OP(E, name, group, arity, rule, cost) {name, G::group, arity, R::rule, C::cost},
#define TANDEM_UNARY(E, name, rule, cost, ...) {name, G::Unary, 1, R::rule, C::cost},
#define TANDEM_BINARY(E, name, rule, cost, ...) {name, G::Binary, 2, R::rule, C::cost},
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY
}};

}  // namespace

const OpInfo& op_info(OpKind op) noexcept { return kOps[static_cast<std::size_t>(op)]; }

DType compute_dtype(OpKind op, const DType* operands) noexcept {
    const OpInfo& info = op_info(op);
    // where's condition does not decide the arithmetic type.
    int first = info.group == OpGroup::Ternary ? 1 : 0;
    DType t = DType::f64;
    for (int i = first; i < info.arity; ++i)
        if (operands[i] == DType::f32) t = DType::f32;
    return t;
}

DType result_dtype(OpKind op, const DType* operands, DType cast_target) noexcept {
    switch (op_info(op).rule) {
        case TypeRule::Arithmetic: return compute_dtype(op, operands);
        case TypeRule::Predicate:
        case TypeRule::Logical: return DType::logical;
        case TypeRule::Select:
            if (operands[1] == DType::logical && operands[2] == DType::logical) return DType::logical;
            return compute_dtype(op, operands);
        case TypeRule::Cast: return cast_target;
        case TypeRule::Reduction:
            if (op == OpKind::Any || op == OpKind::All) return DType::logical;
            if (op == OpKind::ArgMax || op == OpKind::ArgMin) return DType::f64;
            return operands[0] == DType::f32 ? DType::f32 : DType::f64;
        case TypeRule::Leaf: break;
    }
    return DType::f64;
}

}  // namespace tandem::detail
