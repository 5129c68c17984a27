// The builtin table's parts (matlab/builtins.cpp builds it; other files add theirs).
#pragma once

#include <string>
#include <unordered_map>

#include "matlab/interpreter.hpp"

namespace tandem::matlab {

/// A builtin's arguments and results.
using Args = std::vector<Value>;
using Out = std::vector<Value>;

/// A builtin's argument errors, as MATLAB words them.
[[noreturn]] inline void fail(const std::string& message, const std::string& id = "MATLAB:invalidInput") {
    throw MatlabError(message, id);
}
inline void need(const Args& a, std::size_t lo, std::size_t hi) {
    if (a.size() < lo) fail("Not enough input arguments.", "MATLAB:minrhs");
    if (a.size() > hi) fail("Too many input arguments.", "MATLAB:TooManyInputs");
}
/// Whether an argument is the char array `s` (an option: 'all', 'descend', 'like').
inline bool is_text(const Value& v, const char* s) { return v.is_chars() && v.chars().data == s; }

/// A char row's text (an error naming `what` otherwise), a char row, one real scalar.
inline std::string text_arg(const Value& v, const char* what) { return to_text(v, what); }
inline Value text_value(const std::string& s) { return char_row(s); }
inline double num1(Interpreter& I, const Value& v, const char* what) { return to_scalar(I.runtime(), v, what); }

/// sort, unique, median, diag (on the host), diff, meshgrid (graph ops): matlab/builtins_more.cpp.
void add_more_builtins(std::unordered_map<std::string, Builtin>& table);
/// Text, errors, time, the workspace, gpuArray and friends: matlab/builtins_system.cpp.
void add_system_builtins(std::unordered_map<std::string, Builtin>& table);

}  // namespace tandem::matlab
