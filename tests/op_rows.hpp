// graph/ops.def's elementwise rows as the tests use them: each op's public function, its type rule,
// cost class and accuracy, and its reference. The op tests of every executor iterate over these
// rows, so a new row is tested everywhere without touching a test; a test keeps its own list only
// for what is not an op (operator spellings, ldivide, casts, composites).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/op_reference.hpp"
#include "graph/op_table.hpp"
#include "reference.hpp"
#include "tandem/tandem.hpp"

namespace trows {

using tandem::Array;
using tandem::Operand;
using tandem::detail::CostClass;
using tandem::detail::OpKind;
using tandem::detail::TypeRule;

struct Row {
    std::string name;
    OpKind op;
    int arity;
    TypeRule rule;
    CostClass cost;
    tref::Acc acc;
    /// The op applied through its public function (operands: arity of them).
    std::function<Array(const std::vector<Operand>&)> make;
    double (*ref_f64)(double, double);  ///< the reference column in double (b unused for unary ops)
    float (*ref_f32)(float, float);     ///< ... and in single

    /// A truth value (stored as logical 1 or 0).
    bool logical_result() const { return rule == TypeRule::Predicate || rule == TypeRule::Logical; }
    bool transcendental() const { return cost == CostClass::transcendental; }
    /// The expected value of operands already rounded to the compute type (single or not): an op
    /// held to exact bits is computed in that type (they are all exact or correctly rounded there, mod's
    /// fix-up included); an elementary function in double (the most accurate answer), to be rounded
    /// to the result's type by the caller.
    double ref(double a, double b, bool single) const {
        if (single && acc != tref::Acc::ulp)
            return static_cast<double>(ref_f32(static_cast<float>(a), static_cast<float>(b)));
        return ref_f64(a, b);
    }
};

namespace detail {
template <class V> inline double truth(V v) {
    if constexpr (std::is_same_v<V, bool>) return v ? 1.0 : 0.0;
    else return static_cast<double>(v);
}
}  // namespace detail

/// Every row of ops.def's TANDEM_UNARY and TANDEM_BINARY, in the table's order.
inline const std::vector<Row>& elementwise_rows() {
    static const std::vector<Row> rows = [] {
        std::vector<Row> v;
        // (the reference expressions are written in a and b of type T; unused b is fine for unary ops)
#define TANDEM_OP(...)
#define TANDEM_UNARY(E, name, rule, cost, accuracy, api, reference, glsl, cpu)                                    \
    v.push_back(Row{name, OpKind::E, 1, TypeRule::rule, CostClass::cost, tref::Acc::accuracy,                    \
                    [](const std::vector<Operand>& x) { return tandem::api(x.at(0).array()); },                          \
                    [](double a, double) { using T [[maybe_unused]] = double; return static_cast<double>(detail::truth(reference)); }, \
                    [](float a, float) { using T [[maybe_unused]] = float; return static_cast<float>(detail::truth(reference)); }});
#define TANDEM_BINARY(E, name, rule, cost, accuracy, api, reference, glsl, cpu)                                   \
    v.push_back(Row{name, OpKind::E, 2, TypeRule::rule, CostClass::cost, tref::Acc::accuracy,                    \
                    [](const std::vector<Operand>& x) { return tandem::api(x.at(0), x.at(1)); },                         \
                    [](double a, double b) { using T [[maybe_unused]] = double; return static_cast<double>(detail::truth(reference)); }, \
                    [](float a, float b) { using T [[maybe_unused]] = float; return static_cast<float>(detail::truth(reference)); }});
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY
        return v;
    }();
    return rows;
}

/// The rows of one arity.
inline std::vector<Row> rows_of_arity(int arity) {
    std::vector<Row> out;
    for (const Row& r : elementwise_rows())
        if (r.arity == arity) out.push_back(r);
    return out;
}

/// The names of the rows of one arity that `keep` accepts, in the table's order.
template <class Keep> std::vector<std::string> names(int arity, Keep keep) {
    std::vector<std::string> out;
    for (const Row& r : elementwise_rows())
        if (r.arity == arity && keep(r)) out.push_back(r.name);
    return out;
}

/// The row of `op`, or null (not an elementwise row).
inline const Row* find(OpKind op) {
    for (const Row& r : elementwise_rows())
        if (r.op == op) return &r;
    return nullptr;
}

/// The row named `name` (a test's own aliases are not rows); throws if there is none.
inline const Row& row(const std::string& name) {
    for (const Row& r : elementwise_rows())
        if (r.name == name) return r;
    throw std::logic_error("ops.def has no elementwise row " + name);
}

}  // namespace trows
