#include "graph/op_table.hpp"

#include <array>

namespace tandem::detail {

namespace {

using G = OpGroup;
using R = TypeRule;
using C = CostClass;

constexpr std::array<OpInfo, kOpCount> kOps = {{
    {"input", G::Leaf, 0, R::Leaf, C::none},
    {"fill", G::Leaf, 0, R::Leaf, C::none},
    {"linspace", G::Generator, 0, R::Leaf, C::simple},
    {"colon", G::Generator, 0, R::Leaf, C::simple},
    {"rand", G::Generator, 0, R::Leaf, C::random},
    {"randn", G::Generator, 0, R::Leaf, C::random},
    {"uminus", G::Unary, 1, R::Arithmetic, C::simple},
    {"abs", G::Unary, 1, R::Arithmetic, C::simple},
    {"sqrt", G::Unary, 1, R::Arithmetic, C::divide},
    {"exp", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"log", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"log2", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"log10", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"log1p", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"expm1", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"sin", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"cos", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"tan", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"asin", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"acos", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"atan", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"sinh", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"cosh", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"tanh", G::Unary, 1, R::Arithmetic, C::transcendental},
    {"floor", G::Unary, 1, R::Arithmetic, C::simple},
    {"ceil", G::Unary, 1, R::Arithmetic, C::simple},
    {"round", G::Unary, 1, R::Arithmetic, C::simple},
    {"fix", G::Unary, 1, R::Arithmetic, C::simple},
    {"sign", G::Unary, 1, R::Arithmetic, C::simple},
    {"isnan", G::Unary, 1, R::Predicate, C::simple},
    {"isinf", G::Unary, 1, R::Predicate, C::simple},
    {"isfinite", G::Unary, 1, R::Predicate, C::simple},
    {"not", G::Unary, 1, R::Logical, C::simple},
    {"cast", G::Unary, 1, R::Cast, C::simple},
    {"plus", G::Binary, 2, R::Arithmetic, C::simple},
    {"minus", G::Binary, 2, R::Arithmetic, C::simple},
    {"times", G::Binary, 2, R::Arithmetic, C::simple},
    {"rdivide", G::Binary, 2, R::Arithmetic, C::divide},
    {"power", G::Binary, 2, R::Arithmetic, C::transcendental},
    {"atan2", G::Binary, 2, R::Arithmetic, C::transcendental},
    {"hypot", G::Binary, 2, R::Arithmetic, C::transcendental},
    {"mod", G::Binary, 2, R::Arithmetic, C::divide},
    {"rem", G::Binary, 2, R::Arithmetic, C::divide},
    {"min", G::Binary, 2, R::Arithmetic, C::simple},
    {"max", G::Binary, 2, R::Arithmetic, C::simple},
    {"eq", G::Binary, 2, R::Predicate, C::simple},
    {"ne", G::Binary, 2, R::Predicate, C::simple},
    {"lt", G::Binary, 2, R::Predicate, C::simple},
    {"le", G::Binary, 2, R::Predicate, C::simple},
    {"gt", G::Binary, 2, R::Predicate, C::simple},
    {"ge", G::Binary, 2, R::Predicate, C::simple},
    {"and", G::Binary, 2, R::Logical, C::simple},
    {"or", G::Binary, 2, R::Logical, C::simple},
    {"xor", G::Binary, 2, R::Logical, C::simple},
    {"where", G::Ternary, 3, R::Select, C::simple},
    {"sum", G::Reduce, 1, R::Reduction, C::simple},
    {"prod", G::Reduce, 1, R::Reduction, C::simple},
    {"max", G::Reduce, 1, R::Reduction, C::simple},
    {"min", G::Reduce, 1, R::Reduction, C::simple},
    {"max (index)", G::Reduce, 1, R::Reduction, C::simple},
    {"min (index)", G::Reduce, 1, R::Reduction, C::simple},
    {"any", G::Reduce, 1, R::Reduction, C::simple},
    {"all", G::Reduce, 1, R::Reduction, C::simple},
    {"mtimes", G::Contract, 2, R::Arithmetic, C::none},
    {"reshape", G::View, 1, R::Arithmetic, C::none},
    {"transpose", G::View, 1, R::Arithmetic, C::none},
    {"cumsum", G::Scan, 1, R::Arithmetic, C::simple},
    {"cumprod", G::Scan, 1, R::Arithmetic, C::simple},
    {"cummax", G::Scan, 1, R::Arithmetic, C::simple},
    {"cummin", G::Scan, 1, R::Arithmetic, C::simple},
    {"cat", G::View, 2, R::Arithmetic, C::none},
    {"remap", G::View, 1, R::Arithmetic, C::none},
    {"subsref", G::View, 2, R::Leaf, C::none},
    {"subsasgn", G::View, 3, R::Leaf, C::none},
    {"find", G::View, 1, R::Leaf, C::none},
    {"permute", G::View, 1, R::Arithmetic, C::none},
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
