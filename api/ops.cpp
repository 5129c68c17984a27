// The elementwise ops of the public API: each checks its operands (runtime, shape, type) and
// returns a hash-consed node. No op computes anything.
#include <cmath>
#include <string>

#include "runtime/runtime_impl.hpp"
#include "tandem/error.hpp"
#include "tandem/ops.hpp"

namespace tandem {

namespace {

using detail::Node;
using detail::OpKind;
using detail::op_info;

detail::RuntimeImpl& common_runtime(std::initializer_list<const Operand*> ops, OpKind op) {
    detail::RuntimeImpl* rt = nullptr;
    for (const Operand* o : ops) {
        if (!o->is_array()) continue;
        detail::RuntimeImpl& r = detail::runtime_of(o->array());
        if (rt && rt != &r) throw ValueError(std::string(op_info(op).name) + ": operands belong to different runtimes");
        rt = &r;
    }
    if (!rt) rt = &default_runtime().impl();
    return *rt;
}

std::shared_ptr<Node> node_of(detail::RuntimeImpl& rt, const Operand& o) {
    if (o.is_array()) return o.array().node();
    // A plain number is a MATLAB double scalar.
    return rt.nodes().make(OpKind::Constant, DType::f64, Shape::scalar(), {}, {o.scalar(), 0, 0});
}

Array make(OpKind op, std::initializer_list<const Operand*> operands, DType cast_target = DType::f64) {
    detail::RuntimeImpl& rt = common_runtime(operands, op);
    std::vector<std::shared_ptr<Node>> inputs;
    inputs.reserve(operands.size());
    DType types[3] = {DType::f64, DType::f64, DType::f64};
    for (const Operand* o : operands) {
        inputs.push_back(node_of(rt, *o));
        types[inputs.size() - 1] = inputs.back()->dtype;
    }
    // Equal shapes (the common case) need no broadcast and no copy here.
    const Shape* shape = &inputs[0]->shape;
    Shape broadcast;
    for (std::size_t k = 1; k < inputs.size(); ++k) {
        if (inputs[k]->shape == *shape) continue;
        broadcast = broadcast_shapes(*shape, inputs[k]->shape, op_info(op).name);
        shape = &broadcast;
    }
    DType dtype = detail::result_dtype(op, types, cast_target);
    return Array(rt.nodes().make(op, dtype, *shape, std::move(inputs)));
}

Array unary(OpKind op, const Array& a) {
    Operand x(a);
    detail::runtime_of(a);
    return make(op, {&x});
}

}  // namespace

Array operator+(const Operand& a, const Operand& b) { return make(OpKind::Add, {&a, &b}); }
Array operator-(const Operand& a, const Operand& b) { return make(OpKind::Sub, {&a, &b}); }
Array operator*(const Operand& a, const Operand& b) { return make(OpKind::Mul, {&a, &b}); }
Array operator/(const Operand& a, const Operand& b) { return make(OpKind::Div, {&a, &b}); }
Array operator-(const Array& a) { return unary(OpKind::Neg, a); }
Array plus(const Operand& a, const Operand& b) { return a + b; }
Array minus(const Operand& a, const Operand& b) { return a - b; }
Array times(const Operand& a, const Operand& b) { return a * b; }
Array rdivide(const Operand& a, const Operand& b) { return a / b; }
Array ldivide(const Operand& a, const Operand& b) {
    // Checked under its own name and in the user's order; computed as b ./ a.
    auto shape = [](const Operand& o) { return o.is_array() ? o.array().shape() : Shape::scalar(); };
    broadcast_shapes(shape(a), shape(b), "ldivide");
    return b / a;
}
Array power(const Operand& a, const Operand& b) { return make(OpKind::Pow, {&a, &b}); }
Array uminus(const Array& a) { return -a; }

Array operator==(const Operand& a, const Operand& b) { return make(OpKind::Eq, {&a, &b}); }
Array operator!=(const Operand& a, const Operand& b) { return make(OpKind::Ne, {&a, &b}); }
Array operator<(const Operand& a, const Operand& b) { return make(OpKind::Lt, {&a, &b}); }
Array operator<=(const Operand& a, const Operand& b) { return make(OpKind::Le, {&a, &b}); }
Array operator>(const Operand& a, const Operand& b) { return make(OpKind::Gt, {&a, &b}); }
Array operator>=(const Operand& a, const Operand& b) { return make(OpKind::Ge, {&a, &b}); }
Array eq(const Operand& a, const Operand& b) { return a == b; }
Array ne(const Operand& a, const Operand& b) { return a != b; }
Array lt(const Operand& a, const Operand& b) { return a < b; }
Array le(const Operand& a, const Operand& b) { return a <= b; }
Array gt(const Operand& a, const Operand& b) { return a > b; }
Array ge(const Operand& a, const Operand& b) { return a >= b; }

Array operator&(const Operand& a, const Operand& b) { return make(OpKind::And, {&a, &b}); }
Array operator|(const Operand& a, const Operand& b) { return make(OpKind::Or, {&a, &b}); }
Array operator!(const Array& a) { return unary(OpKind::Not, a); }
Array operator~(const Array& a) { return unary(OpKind::Not, a); }
Array logical_and(const Operand& a, const Operand& b) { return a & b; }
Array logical_or(const Operand& a, const Operand& b) { return a | b; }
Array logical_xor(const Operand& a, const Operand& b) { return make(OpKind::Xor, {&a, &b}); }
Array logical_not(const Array& a) { return !a; }

Array abs(const Array& a) { return unary(OpKind::Abs, a); }
Array sqrt(const Array& a) { return unary(OpKind::Sqrt, a); }
Array exp(const Array& a) { return unary(OpKind::Exp, a); }
Array log(const Array& a) { return unary(OpKind::Log, a); }
Array log2(const Array& a) { return unary(OpKind::Log2, a); }
Array log10(const Array& a) { return unary(OpKind::Log10, a); }
Array log1p(const Array& a) { return unary(OpKind::Log1p, a); }
Array expm1(const Array& a) { return unary(OpKind::Expm1, a); }
Array sin(const Array& a) { return unary(OpKind::Sin, a); }
Array cos(const Array& a) { return unary(OpKind::Cos, a); }
Array tan(const Array& a) { return unary(OpKind::Tan, a); }
Array asin(const Array& a) { return unary(OpKind::Asin, a); }
Array acos(const Array& a) { return unary(OpKind::Acos, a); }
Array atan(const Array& a) { return unary(OpKind::Atan, a); }
Array sinh(const Array& a) { return unary(OpKind::Sinh, a); }
Array cosh(const Array& a) { return unary(OpKind::Cosh, a); }
Array tanh(const Array& a) { return unary(OpKind::Tanh, a); }
Array floor(const Array& a) { return unary(OpKind::Floor, a); }
Array ceil(const Array& a) { return unary(OpKind::Ceil, a); }
Array round(const Array& a) { return unary(OpKind::Round, a); }
Array fix(const Array& a) { return unary(OpKind::Fix, a); }
Array sign(const Array& a) { return unary(OpKind::Sign, a); }
Array isnan(const Array& a) { return unary(OpKind::IsNan, a); }
Array isinf(const Array& a) { return unary(OpKind::IsInf, a); }
Array isfinite(const Array& a) { return unary(OpKind::IsFinite, a); }

Array atan2(const Operand& y, const Operand& x) { return make(OpKind::Atan2, {&y, &x}); }
Array hypot(const Operand& a, const Operand& b) { return make(OpKind::Hypot, {&a, &b}); }
Array mod(const Operand& a, const Operand& b) { return make(OpKind::Mod, {&a, &b}); }
Array rem(const Operand& a, const Operand& b) { return make(OpKind::Rem, {&a, &b}); }
Array min(const Operand& a, const Operand& b) { return make(OpKind::Min, {&a, &b}); }
Array max(const Operand& a, const Operand& b) { return make(OpKind::Max, {&a, &b}); }

Array where(const Operand& cond, const Operand& a, const Operand& b) { return make(OpKind::Where, {&cond, &a, &b}); }

Array astype(const Array& a, DType t) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (t != DType::f64 && t != DType::f32 && t != DType::logical)
        throw DTypeError("cast: unknown element type code " + std::to_string(static_cast<int>(t)) +
                         " (expected f64, f32 or logical)");
    if (a.dtype() == t) return a;
    return Array(rt.nodes().make(OpKind::Cast, t, a.shape(), {a.node()}, {static_cast<double>(t), 0, 0}));
}
Array single(const Array& a) { return astype(a, DType::f32); }
Array as_double(const Array& a) { return astype(a, DType::f64); }
Array logical(const Array& a) { return astype(a, DType::logical); }

}  // namespace tandem
