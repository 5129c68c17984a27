// The builtin table's parts (matlab/builtins.cpp builds it; other files add theirs).
#pragma once

#include <string>
#include <unordered_map>

#include "matlab/interpreter.hpp"

namespace tandem::matlab {

/// sort, unique, median, diag (on the host), diff, meshgrid (graph ops): matlab/builtins_more.cpp.
void add_more_builtins(std::unordered_map<std::string, Builtin>& table);

}  // namespace tandem::matlab
