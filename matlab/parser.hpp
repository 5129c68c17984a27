// MATLAB source to a syntax tree (matlab/ast.hpp). A file that does not parse anywhere throws
// SyntaxError naming the line and column, and none of it runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "matlab/ast.hpp"
#include "matlab/errors.hpp"

namespace tandem::matlab {

enum class Tok {
    number, string, dq_string, ident, keyword, op, newline, semicolon, comma, end_of_input
};

struct Token {
    Tok kind;
    std::string text;  ///< the identifier, keyword, operator, or the string's contents
    double number = 0;
    int line = 0, column = 0;
    bool space_before = false;  ///< whitespace between it and the previous token
};

/// The tokens of `source`; `file` names it in errors. Inside brackets, whitespace that separates
/// two elements (`[1 -2]`, `[a' b']`) becomes a comma, a newline a semicolon.
std::vector<Token> tokenize(std::string_view source, const std::string& file = "");

/// Parses a script or function file (or a snippet for `tandem eval`).
Program parse(std::string_view source, const std::string& file = "");

}  // namespace tandem::matlab
