// MATLAB's subscripts on values: A(i), A(i, j, ...), A(:), masks, `end`; indexed assignment that
// grows arrays as MATLAB does (zeros fill the new elements) and deletion (`A(idx) = []`); cells'
// braces. Numbers go through Tandem's index/assign ops (lazy); char arrays and cells are indexed
// on the host. A subscript the host knows is checked at once (MATLAB's error, at the statement);
// one computed by the graph is checked when it runs.
#pragma once

#include <vector>

#include "matlab/value.hpp"

namespace tandem::matlab {

/// The subscript `:` (a char ':' subscript means the same in MATLAB).
Value colon_subscript();
bool is_colon(const Value& v);

/// v(subs).
Value paren_index(tandem::Runtime& rt, const Value& v, const std::vector<Value>& subs);
/// v{subs}: the cells' contents (a comma-separated list).
std::vector<Value> brace_index(tandem::Runtime& rt, const Value& v, const std::vector<Value>& subs);
/// v(subs) = rhs (v may be null: an undefined variable), deletion when rhs is [].
Value paren_assign(tandem::Runtime& rt, const Value* v, const std::vector<Value>& subs, const Value& rhs);
/// v{subs} = rhs (v null or [] makes a cell).
Value brace_assign(tandem::Runtime& rt, const Value* v, const std::vector<Value>& subs, const Value& rhs);
/// Reshape a value to dims (numbers, chars, cells).
Value reshape_value(tandem::Runtime& rt, const Value& v, const std::vector<std::int64_t>& d);

}  // namespace tandem::matlab
