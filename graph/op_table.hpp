// The closed set of graph ops, as data (the rows of graph/ops.def). Passes ask a row's group ("is it
// elementwise?"), never list ops; a new elementwise op is a row of ops.def with its two lowerings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tandem/dtype.hpp"

namespace tandem::detail {

/// The graph's ops: the rows of graph/ops.def, in its order (each row's comment says what the
/// op's attributes mean).
enum class OpKind : std::uint8_t {
#define TANDEM_OP(E, ...) E,
#define TANDEM_UNARY(E, ...) E,
#define TANDEM_BINARY(E, ...) E,
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY
    Count_
};
inline constexpr std::size_t kOpCount = static_cast<std::size_t>(OpKind::Count_);

enum class OpGroup : std::uint8_t { Leaf, Generator, Unary, Binary, Ternary, Reduce, Contract, View, Scan, User };

/// How an op's result type follows from its operands'.
enum class TypeRule : std::uint8_t {
    Arithmetic,  ///< single if any operand is single, else double (logical counts as double)
    Predicate,   ///< logical result, computed in the operands' arithmetic type
    Logical,     ///< logical result; a NaN operand is an error
    Select,      ///< where(c, a, b): a and b's combined type (logical if both are)
    Cast,        ///< the type named by the op's attribute
    Leaf,        ///< given at creation
    Reduction,   ///< sum/prod/max/min: the operand's arithmetic type; argmax/argmin: double; any/all: logical
};

/// What an element of an op costs, for the cost model (RegionCost counts ops by class).
enum class CostClass : std::uint8_t {
    none,            ///< no arithmetic: leaves, views, rearrangements (their bytes are their cost)
    simple,          ///< a few instructions: + - * min max compare select abs round, reduction steps
    divide,          ///< a division or square root (a long sequence on GPUs, in double above all)
    transcendental,  ///< an elementary function: exp, log, sin, pow, ... (tens of operations)
    random,          ///< a Philox block and its transform to the distribution
};
inline constexpr std::size_t kCostClasses = 5;

struct OpInfo {
    std::string_view name;  ///< MATLAB's function name, used in messages
    OpGroup group;
    int arity;
    TypeRule rule;
    CostClass cost;
};

const OpInfo& op_info(OpKind op) noexcept;

/// Costs far more than a memory access: fusion recomputes at most one of these.
inline bool is_transcendental(OpKind op) noexcept { return op_info(op).cost == CostClass::transcendental; }

inline bool is_elementwise(OpKind op) noexcept {
    OpGroup g = op_info(op).group;
    return g == OpGroup::Unary || g == OpGroup::Binary || g == OpGroup::Ternary || g == OpGroup::Generator;
}

inline bool is_reduction(OpKind op) noexcept { return op_info(op).group == OpGroup::Reduce; }
/// Ops that are a region of their own: a matrix product, a view or other rearrangement
/// (transpose, cat, remap, gather, scatter, find), a scan, a user kernel.
inline bool own_region(OpKind op) noexcept {
    const OpGroup g = op_info(op).group;
    return g == OpGroup::Contract || g == OpGroup::View || g == OpGroup::Scan || g == OpGroup::User;
}

/// The reduction of all elements (attr[0] of a Reduce node).
inline constexpr double kReduceAll = -1.0;

/// The result type of `op` applied to operands of the given types (arity of them).
DType result_dtype(OpKind op, const DType* operands, DType cast_target = DType::f64) noexcept;

/// The type an op computes in: f32 if any (non-condition) operand is single, else f64.
DType compute_dtype(OpKind op, const DType* operands) noexcept;

}  // namespace tandem::detail
