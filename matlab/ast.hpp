// The MATLAB front end's syntax tree: expressions and statements as closed variants (one
// dispatch each, in the interpreter), each node with the line and column it starts at, which
// error messages name.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tandem::matlab {

struct Where {
    int line = 0, column = 0;
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;
struct Stmt;
using Block = std::vector<std::shared_ptr<const Stmt>>;

enum class BinaryOp {
    add, sub, mtimes, mrdivide, mldivide, mpower, times, rdivide, ldivide, power,
    eq, ne, lt, le, gt, ge, and_, or_, andand, oror
};
enum class UnaryOp { neg, plus, not_ };
enum class PostfixOp { ctranspose, transpose };

/// The MATLAB name of an operator (`Error using +`).
const char* op_name(BinaryOp op);
const char* op_name(UnaryOp op);

struct NumberLit { double value; };
struct StringLit { std::string text; bool double_quoted; };
/// What a name called as a function resolved to, when a builtin (the interpreter's Builtin):
/// set at its first call and kept, as a call site's name goes on meaning the same builtin while
/// no variable takes it (asked first each time; local functions and files on the path are
/// settled once a name).
using BuiltinCache = const void*;
struct Ident { std::string name; mutable BuiltinCache builtin = nullptr; };
struct ColonAll {};   ///< a bare `:` subscript
struct EndKw {};      ///< `end` inside a subscript
struct Unary { UnaryOp op; ExprPtr operand; };
struct Binary { BinaryOp op; ExprPtr lhs, rhs; };
struct Postfix { PostfixOp op; ExprPtr operand; };
struct Range { ExprPtr first, step, last; };  ///< step may be null
/// `base(args)` (a call or an index: decided when evaluated) or `base{args}`.
struct Index { ExprPtr base; std::vector<ExprPtr> args; bool brace; mutable BuiltinCache builtin = nullptr; };
/// `base.name`, or `base.(expr)` (dynamic: name empty).
struct Field { ExprPtr base; std::string name; ExprPtr dynamic; };
/// `[a b; c d]` or `{a b; c d}`: rows of elements.
struct Matrix { std::vector<std::vector<ExprPtr>> rows; bool cell; };
struct AnonFn { std::vector<std::string> params; ExprPtr body; std::string text; };
struct FuncRef { std::string name; };  ///< `@name`

struct Expr {
    std::variant<NumberLit, StringLit, Ident, ColonAll, EndKw, Unary, Binary, Postfix, Range, Index, Field, Matrix,
                 AnonFn, FuncRef>
        node;
    Where at;
};

/// The target of an assignment: a variable and a chain of subscripts and fields.
struct LValue {
    struct Step {
        enum Kind { paren, brace, field } kind;
        std::vector<ExprPtr> args;  ///< paren, brace
        std::string name;           ///< field (empty: dynamic)
        ExprPtr dynamic;            ///< field: `.(expr)`
    };
    std::string name;
    std::vector<Step> steps;
    bool tilde = false;  ///< `~` in [~, i] = max(x): the output is dropped
    Where at;
};

struct ExprStmt { ExprPtr expr; bool print; };
struct Assign { std::vector<LValue> targets; ExprPtr value; bool print; bool multi; };
struct If { std::vector<std::pair<ExprPtr, Block>> clauses; Block otherwise; };
struct For { LValue var; ExprPtr range; Block body; };
struct While { ExprPtr cond; Block body; };
struct Break {};
struct Continue {};
struct Return {};
struct Switch { ExprPtr subject; std::vector<std::pair<ExprPtr, Block>> cases; Block otherwise; };
struct TryCatch { Block body; std::string ident; Block handler; };
struct Command { std::string name; std::vector<std::string> args; };  ///< `format long`
struct Global { std::vector<std::string> names; };

struct Stmt {
    std::variant<ExprStmt, Assign, If, For, While, Break, Continue, Return, Switch, TryCatch, Command, Global> node;
    Where at;
};

struct Function {
    std::string name;
    std::vector<std::string> params, outputs;  ///< `varargin` / `varargout` last, when present
    Block body;
    std::string file;
    Where at;
};

/// A parsed file or snippet: its statements (a script) and its functions (the first one is the
/// file's own function when the file starts with `function`).
struct Program {
    Block statements;
    std::vector<std::shared_ptr<const Function>> functions;
    bool function_file = false;
    std::string file;  ///< as error messages name it
};

}  // namespace tandem::matlab
