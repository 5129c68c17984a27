// MATLAB's operators on values: host scalars computed on the host (MATLAB's class rules: single
// wins over double, logical and char compute as double), everything else as Tandem ops (lazy).
// Errors are worded as MATLAB's (`Error using +` / `Arrays have incompatible sizes ...`).
#pragma once

#include <vector>

#include "matlab/value.hpp"

namespace tandem::matlab {

Value binary(tandem::Runtime& rt, BinaryOp op, const Value& a, const Value& b);
Value unary(tandem::Runtime& rt, UnaryOp op, const Value& a);
Value transpose(tandem::Runtime& rt, const Value& a);
/// first:step:last (step 1 when null).
Value range(tandem::Runtime& rt, const Value& first, const Value* step, const Value& last);
/// [a, b, ...] (dim 2) or [a; b; ...] (dim 1) of numbers, logicals, chars or cells; 0x0 elements
/// are skipped, as MATLAB skips them.
Value concatenate(tandem::Runtime& rt, const std::vector<Value>& items, int dim);
/// The Tandem array of a Num in `t` (a cast where its type differs).
tandem::Array as_type(tandem::Runtime& rt, const Num& n, tandem::DType t);
/// The class of a result of two operands (single wins; logical and char compute as double).
tandem::DType result_type(const Value& a, const Value& b);

}  // namespace tandem::matlab
