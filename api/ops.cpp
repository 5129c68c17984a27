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

// The public function of each elementwise row of graph/ops.def.
#define TANDEM_OP(...)
#define TANDEM_UNARY(E, name, rule, cost, accuracy, api, ...) \
    Array api(const Array& a) { return unary(OpKind::E, a); }
#define TANDEM_BINARY(E, name, rule, cost, accuracy, api, ...) \
    Array api(const Operand& a, const Operand& b) { return make(OpKind::E, {&a, &b}); }
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY

Array operator+(const Operand& a, const Operand& b) { return make(OpKind::Add, {&a, &b}); }
Array operator-(const Operand& a, const Operand& b) { return make(OpKind::Sub, {&a, &b}); }
Array operator*(const Operand& a, const Operand& b) { return make(OpKind::Mul, {&a, &b}); }
Array operator/(const Operand& a, const Operand& b) { return make(OpKind::Div, {&a, &b}); }
Array operator-(const Array& a) { return unary(OpKind::Neg, a); }
Array ldivide(const Operand& a, const Operand& b) {
    // Checked under its own name and in the user's order; computed as b ./ a.
    auto shape = [](const Operand& o) { return o.is_array() ? o.array().shape() : Shape::scalar(); };
    broadcast_shapes(shape(a), shape(b), "ldivide");
    return b / a;
}

Array operator==(const Operand& a, const Operand& b) { return make(OpKind::Eq, {&a, &b}); }
Array operator!=(const Operand& a, const Operand& b) { return make(OpKind::Ne, {&a, &b}); }
Array operator<(const Operand& a, const Operand& b) { return make(OpKind::Lt, {&a, &b}); }
Array operator<=(const Operand& a, const Operand& b) { return make(OpKind::Le, {&a, &b}); }
Array operator>(const Operand& a, const Operand& b) { return make(OpKind::Gt, {&a, &b}); }
Array operator>=(const Operand& a, const Operand& b) { return make(OpKind::Ge, {&a, &b}); }

Array operator&(const Operand& a, const Operand& b) { return make(OpKind::And, {&a, &b}); }
Array operator|(const Operand& a, const Operand& b) { return make(OpKind::Or, {&a, &b}); }
Array operator!(const Array& a) { return unary(OpKind::Not, a); }
Array operator~(const Array& a) { return unary(OpKind::Not, a); }

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

Array to_device(const Array& a) {
    detail::RuntimeImpl& rt = detail::runtime_of(a);
    if (a.device_requested()) return a;
    // A copy of its own (a cast to its own type, which astype never makes; attr[1] marks it):
    // the request is the new node's, not a's readers'. Fused into its readers, it costs nothing;
    // computed alone, it is the upload MATLAB's gpuArray makes.
    return Array(rt.nodes().make(OpKind::Cast, a.dtype(), a.shape(), {a.node()},
                                 {static_cast<double>(a.dtype()), 1, 0}, /*device_requested=*/true));
}
Array as_double(const Array& a) { return astype(a, DType::f64); }
Array logical(const Array& a) { return astype(a, DType::logical); }

}  // namespace tandem
