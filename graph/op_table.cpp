#include "graph/op_table.hpp"

#include <array>

namespace tandem::detail {

namespace {

using G = OpGroup;
using R = TypeRule;

constexpr std::array<OpInfo, kOpCount> kOps = {{
    {"input", G::Leaf, 0, R::Leaf, false},
    {"fill", G::Leaf, 0, R::Leaf, false},
    {"linspace", G::Generator, 0, R::Leaf, false},
    {"colon", G::Generator, 0, R::Leaf, false},
    {"rand", G::Generator, 0, R::Leaf, false},
    {"randn", G::Generator, 0, R::Leaf, true},
    {"uminus", G::Unary, 1, R::Arithmetic, false},
    {"abs", G::Unary, 1, R::Arithmetic, false},
    {"sqrt", G::Unary, 1, R::Arithmetic, false},
    {"exp", G::Unary, 1, R::Arithmetic, true},
    {"log", G::Unary, 1, R::Arithmetic, true},
    {"log2", G::Unary, 1, R::Arithmetic, true},
    {"log10", G::Unary, 1, R::Arithmetic, true},
    {"log1p", G::Unary, 1, R::Arithmetic, true},
    {"expm1", G::Unary, 1, R::Arithmetic, true},
    {"sin", G::Unary, 1, R::Arithmetic, true},
    {"cos", G::Unary, 1, R::Arithmetic, true},
    {"tan", G::Unary, 1, R::Arithmetic, true},
    {"asin", G::Unary, 1, R::Arithmetic, true},
    {"acos", G::Unary, 1, R::Arithmetic, true},
    {"atan", G::Unary, 1, R::Arithmetic, true},
    {"sinh", G::Unary, 1, R::Arithmetic, true},
    {"cosh", G::Unary, 1, R::Arithmetic, true},
    {"tanh", G::Unary, 1, R::Arithmetic, true},
    {"floor", G::Unary, 1, R::Arithmetic, false},
    {"ceil", G::Unary, 1, R::Arithmetic, false},
    {"round", G::Unary, 1, R::Arithmetic, false},
    {"fix", G::Unary, 1, R::Arithmetic, false},
    {"sign", G::Unary, 1, R::Arithmetic, false},
    {"isnan", G::Unary, 1, R::Predicate, false},
    {"isinf", G::Unary, 1, R::Predicate, false},
    {"isfinite", G::Unary, 1, R::Predicate, false},
    {"not", G::Unary, 1, R::Logical, false},
    {"cast", G::Unary, 1, R::Cast, false},
    {"plus", G::Binary, 2, R::Arithmetic, false},
    {"minus", G::Binary, 2, R::Arithmetic, false},
    {"times", G::Binary, 2, R::Arithmetic, false},
    {"rdivide", G::Binary, 2, R::Arithmetic, false},
    {"power", G::Binary, 2, R::Arithmetic, true},
    {"atan2", G::Binary, 2, R::Arithmetic, true},
    {"hypot", G::Binary, 2, R::Arithmetic, true},
    {"mod", G::Binary, 2, R::Arithmetic, false},
    {"rem", G::Binary, 2, R::Arithmetic, false},
    {"min", G::Binary, 2, R::Arithmetic, false},
    {"max", G::Binary, 2, R::Arithmetic, false},
    {"eq", G::Binary, 2, R::Predicate, false},
    {"ne", G::Binary, 2, R::Predicate, false},
    {"lt", G::Binary, 2, R::Predicate, false},
    {"le", G::Binary, 2, R::Predicate, false},
    {"gt", G::Binary, 2, R::Predicate, false},
    {"ge", G::Binary, 2, R::Predicate, false},
    {"and", G::Binary, 2, R::Logical, false},
    {"or", G::Binary, 2, R::Logical, false},
    {"xor", G::Binary, 2, R::Logical, false},
    {"where", G::Ternary, 3, R::Select, false},
    {"sum", G::Reduce, 1, R::Reduction, false},
    {"prod", G::Reduce, 1, R::Reduction, false},
    {"max", G::Reduce, 1, R::Reduction, false},
    {"min", G::Reduce, 1, R::Reduction, false},
    {"max (index)", G::Reduce, 1, R::Reduction, false},
    {"min (index)", G::Reduce, 1, R::Reduction, false},
    {"any", G::Reduce, 1, R::Reduction, false},
    {"all", G::Reduce, 1, R::Reduction, false},
    {"mtimes", G::Contract, 2, R::Arithmetic, false},
    {"reshape", G::View, 1, R::Arithmetic, false},
    {"transpose", G::View, 1, R::Arithmetic, false},
    {"cumsum", G::Scan, 1, R::Arithmetic, false},
    {"cumprod", G::Scan, 1, R::Arithmetic, false},
    {"cummax", G::Scan, 1, R::Arithmetic, false},
    {"cummin", G::Scan, 1, R::Arithmetic, false},
    {"cat", G::View, 2, R::Arithmetic, false},
    {"remap", G::View, 1, R::Arithmetic, false},
    {"subsref", G::View, 2, R::Leaf, false},
    {"subsasgn", G::View, 3, R::Leaf, false},
    {"find", G::View, 1, R::Leaf, false},
    {"permute", G::View, 1, R::Arithmetic, false},
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
