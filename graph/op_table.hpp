// The closed set of graph ops, as data. Passes ask a row's group ("is it elementwise?"),
// never list ops; a new op is a row here plus a kernel in each backend's table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tandem/dtype.hpp"

namespace tandem::detail {

enum class OpKind : std::uint8_t {
    // leaves
    Input,     ///< materialised data
    Constant,  ///< one value repeated over a shape (attr[0])
    Linspace,  ///< 1 x n: attr = {a, b, n}
    Colon,     ///< 1 x n: attr = {a, step}
    RandU,     ///< uniform on (0, 1), Philox: attr = {seed low 32 bits, seed high 32 bits, stream}
    RandN,     ///< standard normal, Philox: the same attributes
    // unary elementwise
    Neg, Abs, Sqrt, Exp, Log, Log2, Log10, Log1p, Expm1, Sin, Cos, Tan, Asin, Acos, Atan,
    Sinh, Cosh, Tanh, Floor, Ceil, Round, Fix, Sign, IsNan, IsInf, IsFinite, Not, Cast,
    // binary elementwise
    Add, Sub, Mul, Div, Pow, Atan2, Hypot, Mod, Rem, Min, Max,
    Eq, Ne, Lt, Le, Gt, Ge, And, Or, Xor,
    // ternary elementwise
    Where,
    // reductions along one dimension (attr[0], 0-based) or over all elements (attr[0] = -1)
    Sum, Prod, MaxOf, MinOf, ArgMax, ArgMin, Any, All,
    // matrix product: attr = {transpose A, transpose B} (0 or 1)
    MatMul,
    // the same elements in another shape (column-major order kept): no work, the value is shared
    Reshape,
    // 2-D transpose (MATLAB .', and ' for real arrays)
    Transpose,
    // cumulative along a dimension (attr[0], 0-based): the same shape
    CumSum, CumProd, CumMax, CumMin,
    // concatenation of the inputs (any number) along a dimension (attr[0], 0-based)
    Cat,
    // one dimension (attr[0]) remapped: out(..., k, ...) = in(..., (attr[1] * k + attr[2]) mod n, ...)
    // with n the input's extent there (flip, circshift, repmat, ranges)
    Remap,
    // indexing by data (tandem/indexing.hpp); attr[0] = the dimension (0-based) or -1 (linear)
    Gather,   ///< inputs {a, I}: a(I) (linear) or a(:, I, :) along attr[0]
    Scatter,  ///< inputs {a, I, b}: a with a(I) = b (or a(:, I, :) = b); last write wins
    Find,     ///< inputs {mask}: the 1-based linear positions of its true elements, in order
    // N-D permute: output dimension d < attr[1] is input dimension ((attr[0] >> 4 d) & 15), 0-based
    Permute,
    Count_
};
inline constexpr std::size_t kOpCount = static_cast<std::size_t>(OpKind::Count_);

enum class OpGroup : std::uint8_t { Leaf, Generator, Unary, Binary, Ternary, Reduce, Contract, View, Scan };

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
/// (transpose, cat, remap, gather, scatter, find), a scan.
inline bool own_region(OpKind op) noexcept {
    const OpGroup g = op_info(op).group;
    return g == OpGroup::Contract || g == OpGroup::View || g == OpGroup::Scan;
}

/// The reduction of all elements (attr[0] of a Reduce node).
inline constexpr double kReduceAll = -1.0;

/// The result type of `op` applied to operands of the given types (arity of them).
DType result_dtype(OpKind op, const DType* operands, DType cast_target = DType::f64) noexcept;

/// The type an op computes in: f32 if any (non-condition) operand is single, else f64.
DType compute_dtype(OpKind op, const DType* operands) noexcept;

}  // namespace tandem::detail
