// The MATLAB interpreter: runs scripts, function files and snippets on a Tandem runtime.
// Statements build Tandem's lazy graph (whole statements and loops of array code fuse and are
// placed by the scheduler); the host gathers only where MATLAB needs a value there: display,
// fprintf, a condition, a subscript or a loop bound.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "matlab/ast.hpp"
#include "matlab/errors.hpp"
#include "matlab/value.hpp"

namespace tandem::matlab {

class Interpreter;

/// A builtin: its arguments and how many outputs the caller wants (0 for a statement).
using Builtin = std::function<std::vector<Value>(Interpreter&, std::vector<Value>& args, int nargout)>;

/// The builtins by name (matlab/builtins.cpp).
const std::unordered_map<std::string, Builtin>& builtins();

enum class DisplayFormat { short_, long_ };

class Interpreter {
public:
    /// `out`: where display, disp and fprintf write.
    Interpreter(tandem::Runtime& rt, std::ostream& out);

    /// Runs a script or function file (a function file's function is called with `args` as
    /// char arguments, as MATLAB's command line passes them).
    void run_file(const std::string& path, const std::vector<std::string>& args = {});
    /// Runs code in the base workspace (`tandem eval`, the prompt); `name` is what errors call it.
    void run_code(const std::string& code, const std::string& name = "");

    tandem::Runtime& runtime() noexcept { return rt_; }
    std::ostream& out() noexcept { return out_; }
    DisplayFormat format() const noexcept { return format_; }
    void set_format(DisplayFormat f) noexcept { format_ = f; }

    /// Calls a function value or a function by name with `nargout` outputs.
    std::vector<Value> call(const Value& fn, std::vector<Value> args, int nargout);
    /// `cache`: the call site's (Ident::builtin, Index::builtin): a builtin found is kept there,
    /// and one kept there is called without looking the name up again.
    std::vector<Value> call_named(const std::string& name, std::vector<Value> args, int nargout, const Where& at,
                                  BuiltinCache* cache = nullptr);

    /// `x = ...` display (MATLAB's layout, the current format).
    void display(const std::string& name, const Value& v);

    /// nargin and nargout of the function running now (the base workspace: 0).
    int nargin() const noexcept { return frames_.back().nargin; }
    int nargout() const noexcept { return frames_.back().nargout; }
    /// tic's start, for toc.
    double& tic_start() noexcept { return tic_; }
    /// Variables of the current workspace (for `who`, `exist`, `clear`).
    std::unordered_map<std::string, Value>& variables() { return frames_.back().vars; }

private:
    /// A builtin's call: its MATLAB errors name it, the API's become MATLAB errors.
    std::vector<Value> call_builtin(const std::string& name, const Builtin& f, std::vector<Value>& args, int nargout);
    struct Frame {
        std::unordered_map<std::string, Value> vars;
        std::string file, function;
        int line = 0;
        int nargin = 0, nargout = 0;
    };
    enum class Flow { normal, break_, continue_, return_ };
    class CallScope;
    /// A program's functions, by file.
    struct Unit {
        std::shared_ptr<const Program> program;
        std::map<std::string, std::shared_ptr<const Function>> functions;
    };

    Flow exec_block(const Block& b);
    Flow exec(const Stmt& s);
    void exec_assign(const Assign& a, const Stmt& s);
    Flow exec_for(const For& f);

    Value eval(const Expr& e);
    /// An expression that may give several values (a call, c{:}, s.f of a cs-list), `nargout` asked.
    std::vector<Value> eval_multi(const Expr& e, int nargout);
    /// Arguments of a call or subscript, c{:} expanded; `end` resolves against `subject`.
    std::vector<Value> eval_args(const std::vector<ExprPtr>& args, const Value* subject);
    Value eval_matrix(const Matrix& m);
    /// The values of a row of a [] or {} literal (c{:} gives each of its elements).
    std::vector<Value> row_items(const std::vector<ExprPtr>& row);
    /// op(a) * op(b) as one product that reads a transposed operand in place, when both are arrays.
    std::optional<Value> transposed_product(const Value& a, bool ta, const Value& b, bool tb);
    Value make_anonymous(const AnonFn& f);

    std::vector<Value> call_function(const Function& f, std::vector<Value> args, int nargout);
    std::shared_ptr<const Function> find_function(const std::string& name);
    /// NAME.m on the search path ("" when none), cached.
    const std::string& file_of(const std::string& name);
    const Unit& load_unit(const std::string& path);

    void assign_to(const LValue& target, Value v);

    [[noreturn]] void undefined(const std::string& name, const Where& at);

    tandem::Runtime& rt_;
    std::ostream& out_;
    DisplayFormat format_ = DisplayFormat::short_;
    std::vector<Frame> frames_;
    std::map<std::string, Unit> units_;  // by path
    std::string current_file_;           // the unit whose local functions are visible
    std::unordered_map<const Function*, std::string> unit_of_;
    std::vector<std::string> search_dirs_;
    std::unordered_map<std::string, std::string> file_of_;
    /// The value `end` stands for in the subscript being evaluated: (subject, position, count).
    struct EndContext {
        const Value* subject;
        std::size_t position, count;
    };
    std::vector<EndContext> end_;
    double tic_ = 0;
    int depth_ = 0;
};

/// Text of a value as MATLAB's display shows it (without the `x =` line).
std::string display_text(tandem::Runtime& rt, const Value& v, DisplayFormat f);
/// MATLAB's sprintf: the format applied to the arguments' elements, cycling the format.
std::string format_text(tandem::Runtime& rt, const std::string& format, const std::vector<Value>& args);
/// num2str's and mat2str's text.
std::string num2str(tandem::Runtime& rt, const Value& v, const std::string& format = "");
std::string mat2str(tandem::Runtime& rt, const Value& v, int precision = 15);

}  // namespace tandem::matlab
