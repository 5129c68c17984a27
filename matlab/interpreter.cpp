#include "matlab/interpreter.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "graph/generators.hpp"
#include "matlab/indexing.hpp"
#include "matlab/operators.hpp"
#include "matlab/parser.hpp"

namespace tandem::matlab {

using tandem::DType;

namespace {

constexpr int kRecursionLimit = 500;

/// Control flow out of a loop or function, carried by the statement runner's result.
template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw MatlabError("Unable to open the file '" + path + "'.", "MATLAB:run:FileNotFound");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The names an anonymous function's body reads (its captured variables are among them).
void names_in(const Expr& e, std::set<std::string>& out) {
    std::visit(Overloaded{
                   [&](const Ident& x) { out.insert(x.name); },
                   [&](const Unary& x) { names_in(*x.operand, out); },
                   [&](const Binary& x) {
                       names_in(*x.lhs, out);
                       names_in(*x.rhs, out);
                   },
                   [&](const Postfix& x) { names_in(*x.operand, out); },
                   [&](const Range& x) {
                       names_in(*x.first, out);
                       if (x.step) names_in(*x.step, out);
                       names_in(*x.last, out);
                   },
                   [&](const Index& x) {
                       names_in(*x.base, out);
                       for (const auto& a : x.args) names_in(*a, out);
                   },
                   [&](const Field& x) {
                       names_in(*x.base, out);
                       if (x.dynamic) names_in(*x.dynamic, out);
                   },
                   [&](const Matrix& x) {
                       for (const auto& r : x.rows)
                           for (const auto& a : r) names_in(*a, out);
                   },
                   [&](const AnonFn& x) {
                       std::set<std::string> inner;
                       names_in(*x.body, inner);
                       for (const auto& p : x.params) inner.erase(p);
                       out.insert(inner.begin(), inner.end());
                   },
                   [](const auto&) {},
               },
               e.node);
}

Value error_struct(const MatlabError& e) {
    Struct s;
    s.fields.emplace_back("message", char_row(e.message()));
    s.fields.emplace_back("identifier", char_row(e.identifier()));
    Struct frame;
    frame.fields.emplace_back("file", char_row(e.stack().empty() ? "" : e.stack().front().file));
    frame.fields.emplace_back("name", char_row(e.stack().empty() ? "" : e.stack().front().function));
    frame.fields.emplace_back("line", scalar(e.stack().empty() ? 0 : e.stack().front().line));
    s.fields.emplace_back("stack", Value(std::move(frame)));
    return s;
}

}  // namespace

std::string MatlabError::report() const {
    std::string s;
    if (!using_.empty()) s += "Error using " + using_ + "\n";
    s += message_ + "\n";
    for (const Frame& f : stack_) {
        if (f.file.empty() && f.function.empty()) continue;
        std::string where = f.file;
        if (!f.function.empty()) {
            const std::string stem = std::filesystem::path(f.file).stem().string();
            if (f.file.empty()) where = f.function;
            else if (stem != f.function) where += ">" + f.function;
        }
        s += "Error in " + where + " (line " + std::to_string(f.line) + ")\n";
    }
    return s;
}

std::string SyntaxError::report_syntax() const {
    std::string s = "Error: ";
    if (!file_.empty()) s += "File: " + file_ + " ";
    s += "Line: " + std::to_string(line_) + " Column: " + std::to_string(column_) + "\n" + message() + "\n";
    return s;
}

Interpreter::Interpreter(tandem::Runtime& rt, std::ostream& out) : rt_(rt), out_(out) {
    frames_.push_back(Frame{});
    search_dirs_.push_back(std::filesystem::current_path().string());
}

/// A call's frame, on the stack for the call's duration (the unit whose local functions are
/// visible with it), popped however the call ends.
class Interpreter::CallScope {
public:
    CallScope(Interpreter& in, Frame frame, const std::string& unit) : in_(in), saved_(in.current_file_) {
        if (in.depth_ >= kRecursionLimit)
            throw MatlabError("Maximum recursion limit of " + std::to_string(kRecursionLimit) + " reached.", "MATLAB:recursionLimit");
        in.frames_.push_back(std::move(frame));
        ++in.depth_;
        if (!unit.empty()) in.current_file_ = unit;
    }
    ~CallScope() {
        in_.frames_.pop_back();
        --in_.depth_;
        in_.current_file_ = saved_;
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

private:
    Interpreter& in_;
    std::string saved_;
};

// ---- programs and functions ------------------------------------------------------------------

const Interpreter::Unit& Interpreter::load_unit(const std::string& path) {
    auto it = units_.find(path);
    if (it != units_.end()) return it->second;
    auto program = std::make_shared<const Program>(parse(read_file(path), path));
    Unit u;
    u.program = program;
    for (const auto& f : program->functions) {
        u.functions.emplace(f->name, f);
        unit_of_[f.get()] = path;
    }
    return units_.emplace(path, std::move(u)).first->second;
}

std::shared_ptr<const Function> Interpreter::find_function(const std::string& name) {
    // Local functions of the file running now, then NAME.m on the search path.
    if (auto u = units_.find(current_file_); u != units_.end()) {
        if (auto f = u->second.functions.find(name); f != u->second.functions.end()) return f->second;
    }
    const std::string& path = file_of(name);
    if (path.empty()) return nullptr;
    const Unit& u = load_unit(path);
    if (!u.program->function_file) return nullptr;  // a script: run by name (call_named)
    return u.program->functions.front();
}

const std::string& Interpreter::file_of(const std::string& name) {
    // Looked up once a name (a stat a call of a builtin in a loop cost more than the call).
    auto it = file_of_.find(name);
    if (it != file_of_.end()) return it->second;
    std::string found;
    for (const std::string& dir : search_dirs_) {
        const std::filesystem::path p = std::filesystem::path(dir) / (name + ".m");
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) {
            found = p.string();
            break;
        }
    }
    return file_of_.emplace(name, std::move(found)).first->second;
}

void Interpreter::run_file(const std::string& path, const std::vector<std::string>& args) {
    const std::string full = std::filesystem::absolute(path).string();
    const Unit& u = load_unit(full);
    const std::string dir = std::filesystem::path(full).parent_path().string();
    if (std::find(search_dirs_.begin(), search_dirs_.end(), dir) == search_dirs_.end()) {
        search_dirs_.insert(search_dirs_.begin(), dir);
        file_of_.clear();
    }
    const std::string saved = current_file_;
    current_file_ = full;
    frames_.back().file = path;
    try {
        if (u.program->function_file) {
            std::vector<Value> a;
            for (const auto& s : args) a.push_back(char_row(s));
            (void)call_function(*u.program->functions.front(), std::move(a), 0);  // (its outputs are not shown)
        } else {
            exec_block(u.program->statements);
        }
    } catch (MatlabError& e) {
        if (!u.program->function_file) e.add_frame({path, "", frames_.back().line});
        current_file_ = saved;
        throw;
    }
    current_file_ = saved;
}

void Interpreter::run_code(const std::string& code, const std::string& name) {
    auto program = std::make_shared<const Program>(parse(code, name));
    const std::string key = "<code>" + name + std::to_string(units_.size());
    Unit u;
    u.program = program;
    for (const auto& f : program->functions) {
        u.functions.emplace(f->name, f);
        unit_of_[f.get()] = key;
    }
    units_.emplace(key, std::move(u));
    const std::string saved = current_file_;
    current_file_ = key;
    try {
        exec_block(program->statements);
    } catch (MatlabError& e) {
        if (!name.empty()) e.add_frame({name, "", frames_.back().line});
        current_file_ = saved;
        throw;
    }
    current_file_ = saved;
}

std::vector<Value> Interpreter::call_function(const Function& f, std::vector<Value> args, int nargout) {
    const bool varargin = !f.params.empty() && f.params.back() == "varargin";
    const std::size_t fixed = f.params.size() - (varargin ? 1 : 0);
    if (args.size() > fixed && !varargin)
        throw MatlabError("Too many input arguments.", "MATLAB:TooManyInputs", f.name);
    const bool varargout = !f.outputs.empty() && f.outputs.back() == "varargout";
    if (nargout > static_cast<int>(f.outputs.size()) && !varargout)
        throw MatlabError("Too many output arguments.", "MATLAB:TooManyOutputs", f.name);
    Frame fr;
    fr.file = f.file;
    fr.function = f.name;
    fr.nargin = static_cast<int>(args.size());
    fr.nargout = nargout;
    for (std::size_t k = 0; k < args.size() && k < fixed; ++k)
        if (f.params[k] != "~") fr.vars[f.params[k]] = std::move(args[k]);
    if (varargin) {
        Cell rest;
        for (std::size_t k = fixed; k < args.size(); ++k) rest.items.push_back(std::move(args[k]));
        rest.rows = rest.items.empty() ? 0 : 1;
        rest.cols = static_cast<std::int64_t>(rest.items.size());
        fr.vars["varargin"] = std::move(rest);
    }
    auto unit = unit_of_.find(&f);
    const CallScope scope(*this, std::move(fr), unit == unit_of_.end() ? f.file : unit->second);
    std::vector<Value> out;
    try {
        exec_block(f.body);
        const Frame& done = frames_.back();
        const std::size_t want = static_cast<std::size_t>(std::max(nargout, 1));
        for (std::size_t k = 0; k < f.outputs.size() && out.size() < want; ++k) {
            if (varargout && k + 1 == f.outputs.size()) {
                auto it = done.vars.find("varargout");
                if (it != done.vars.end() && it->second.is_cell())
                    for (const Value& v : it->second.cell().items)
                        if (out.size() < want) out.push_back(v);
                break;
            }
            auto it = done.vars.find(f.outputs[k]);
            if (it == done.vars.end()) {
                if (static_cast<int>(k) < nargout)
                    throw MatlabError("Output argument \"" + f.outputs[k] + "\" (and possibly others) not assigned a value in the "
                                      "execution with \"" + f.name + "\" function.",
                                      "MATLAB:unassignedOutputs");
                break;
            }
            out.push_back(it->second);
        }
    } catch (MatlabError& e) {
        e.add_frame({f.file, f.name, frames_.back().line});
        throw;
    }
    return out;
}

std::vector<Value> Interpreter::call_named(const std::string& name, std::vector<Value> args, int nargout, const Where& at,
                                           BuiltinCache* cache) {
    if (cache && *cache) return call_builtin(name, *static_cast<const Builtin*>(*cache), args, nargout);
    if (auto f = find_function(name)) return call_function(*f, std::move(args), nargout);
    if (const std::string& path = file_of(name); !path.empty() && !load_unit(path).program->function_file) {  // a script by name
        if (!args.empty()) throw MatlabError("Attempt to execute SCRIPT " + name + " as a function.", "MATLAB:scriptNotAFunction");
        const std::string saved = current_file_;
        current_file_ = path;
        exec_block(load_unit(path).program->statements);
        current_file_ = saved;
        return {};
    }
    const auto& table = builtins();
    auto it = table.find(name);
    if (it == table.end()) undefined(name, at);
    if (cache) *cache = &it->second;
    return call_builtin(name, it->second, args, nargout);
}

std::vector<Value> Interpreter::call_builtin(const std::string& name, const Builtin& f, std::vector<Value>& args, int nargout) {
    try {
        return f(*this, args, nargout);
    } catch (MatlabError& e) {
        // The code's own error() names the function that raised it (none in a script).
        if (name == "error" || name == "assert") {
            if (frames_.size() > 1 && !frames_.back().function.empty()) e.set_using(frames_.back().function);
            throw;
        }
        e.set_using(name);
        throw;
    } catch (const tandem::Error& e) {
        throw MatlabError(e.what(), "MATLAB:" + name, name);
    }
}

std::vector<Value> Interpreter::call(const Value& fn, std::vector<Value> args, int nargout) {
    if (fn.is_chars()) return call_named(to_text(fn, "function name"), std::move(args), nargout, {});
    if (!fn.is_handle()) throw MatlabError("Expected a function handle, got a value of class " + class_name(fn) + ".", "MATLAB:invalidFunctionHandle");
    const Callable& c = *fn.handle().fn;
    if (!c.name.empty()) return call_named(c.name, std::move(args), nargout, {});
    if (args.size() > c.params.size()) throw MatlabError("Too many input arguments.", "MATLAB:TooManyInputs", c.text);
    Frame fr;
    fr.function = c.text;
    fr.file = c.file;
    for (const auto& [k, v] : c.captured) fr.vars[k] = v;
    for (std::size_t k = 0; k < args.size(); ++k)
        if (c.params[k] != "~") fr.vars[c.params[k]] = std::move(args[k]);
    const CallScope scope(*this, std::move(fr), c.file);
    return eval_multi(*c.body, nargout);
}

[[noreturn]] void Interpreter::undefined(const std::string& name, const Where& at) {
    (void)at;
    throw MatlabError("Unrecognized function or variable '" + name + "'.", "MATLAB:UndefinedFunction");
}

// ---- statements ------------------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_block(const Block& b) {
    for (const auto& s : b) {
        const Flow f = exec(*s);
        if (f != Flow::normal) return f;
    }
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
    frames_.back().line = s.at.line;
    try {
        return std::visit(
            Overloaded{
                [&](const ExprStmt& x) -> Flow {
                    if (const auto* id = std::get_if<Ident>(&x.expr->node)) {
                        auto& vars = frames_.back().vars;
                        if (auto it = vars.find(id->name); it != vars.end()) {
                            if (x.print) display(id->name, it->second);
                            return Flow::normal;
                        }
                    }
                    auto values = eval_multi(*x.expr, 0);
                    if (!values.empty()) {
                        frames_.back().vars["ans"] = values.front();
                        if (x.print) display("ans", values.front());
                    }
                    return Flow::normal;
                },
                [&](const Assign& x) -> Flow {
                    exec_assign(x, s);
                    return Flow::normal;
                },
                [&](const If& x) -> Flow {
                    for (const auto& [cond, body] : x.clauses)
                        if (is_true(rt_, eval(*cond), "if")) return exec_block(body);
                    return exec_block(x.otherwise);
                },
                [&](const For& x) -> Flow { return exec_for(x); },
                [&](const While& x) -> Flow {
                    while (is_true(rt_, eval(*x.cond), "while")) {
                        const Flow f = exec_block(x.body);
                        if (f == Flow::break_) break;
                        if (f == Flow::return_) return f;
                        frames_.back().line = s.at.line;
                    }
                    return Flow::normal;
                },
                [&](const Break&) -> Flow { return Flow::break_; },
                [&](const Continue&) -> Flow { return Flow::continue_; },
                [&](const Return&) -> Flow { return Flow::return_; },
                [&](const Switch& x) -> Flow {
                    const Value subject = eval(*x.subject);
                    auto matches = [&](const Value& c) {
                        if (subject.is_chars() || c.is_chars()) {
                            return subject.is_chars() && c.is_chars() && subject.chars().data == c.chars().data;
                        }
                        if (!subject.is_num() || !c.is_num()) return false;
                        if (!is_scalar(c) || !is_scalar(subject))
                            return is_empty(c) && is_empty(subject);
                        return to_scalar(rt_, subject, "switch") == to_scalar(rt_, c, "case");
                    };
                    for (const auto& [value, body] : x.cases) {
                        const Value c = eval(*value);
                        bool hit = false;
                        if (c.is_cell()) {
                            for (const Value& item : c.cell().items) hit = hit || matches(item);
                        } else {
                            hit = matches(c);
                        }
                        if (hit) return exec_block(body);
                    }
                    return exec_block(x.otherwise);
                },
                [&](const TryCatch& x) -> Flow {
                    const std::size_t frames = frames_.size();
                    const int depth = depth_;
                    const std::string file = current_file_;
                    try {
                        return exec_block(x.body);
                    } catch (MatlabError& e) {
                        frames_.resize(frames);
                        depth_ = depth;
                        current_file_ = file;
                        if (!x.ident.empty()) frames_.back().vars[x.ident] = error_struct(e);
                        return exec_block(x.handler);
                    }
                },
                [&](const Command& x) -> Flow {
                    std::vector<Value> args;
                    for (const auto& a : x.args) args.push_back(char_row(a));
                    call_named(x.name, std::move(args), 0, s.at);
                    return Flow::normal;
                },
                [&](const Global&) -> Flow {
                    throw MatlabError("Global and persistent variables are not supported by Tandem's interpreter: pass "
                                      "values as arguments.",
                                      "TANDEM:unsupported");
                },
            },
            s.node);
    } catch (MatlabError&) {
        throw;
    } catch (const tandem::Error& e) {
        // A Tandem error the front end did not word (an op's own check): MATLAB's form, its text.
        throw MatlabError(e.what(), "TANDEM:error");
    }
}

Interpreter::Flow Interpreter::exec_for(const For& f) {
    auto body = [&](Value v) -> Flow {
        assign_to(f.var, std::move(v));
        return exec_block(f.body);
    };
    // A range of host scalars runs without making the array (1:1e6 is a million doubles).
    if (const auto* r = std::get_if<Range>(&f.range->node)) {
        const Value a = eval(*r->first), b = eval(*r->last);
        const Value s = r->step ? eval(*r->step) : scalar(1);
        if (a.is_num() && a.num().host() && b.is_num() && b.num().host() && s.is_num() && s.num().host() &&
            result_type(a, b) == DType::f64 && s.num().dtype != DType::f32) {
            const double x0 = a.num().scalar, step = s.num().scalar, x1 = b.num().scalar;
            if (std::isnan(x0) || std::isnan(step) || std::isnan(x1)) throw MatlabError("NaN in a for loop's range.", "MATLAB:colon");
            const double count = tandem::detail::colon_count(x0, step, x1);
            if (!std::isfinite(count) || count > tandem::detail::kColonMaxCount) throw MatlabError("A for loop's range has too many elements.", "MATLAB:colon");
            const auto n = static_cast<std::int64_t>(count);
            for (std::int64_t k = 0; k < n; ++k) {
                const Flow fl = body(scalar(tandem::detail::colon_value(x0, step, x1, k)));
                if (fl == Flow::break_) break;
                if (fl == Flow::return_) return fl;
            }
            return Flow::normal;
        }
    }
    const Value v = eval(*f.range);
    const auto d = dims(v);
    // One pass a column (of the dims after the first, together): zeros(0, 3) runs 3 times, as in MATLAB.
    const std::int64_t rows = d[0];
    std::int64_t cols = 1;
    for (std::size_t k = 1; k < d.size(); ++k) cols *= d[k];
    if (cols == 0 || (rows == 0 && dims(v) == std::vector<std::int64_t>{0, 0})) return Flow::normal;
    if (v.is_cell()) {
        for (std::int64_t j = 0; j < cols; ++j) {
            Cell c;
            c.rows = rows;
            c.cols = 1;
            for (std::int64_t i = 0; i < rows; ++i) c.items.push_back(v.cell().items[static_cast<std::size_t>(i + rows * j)]);
            const Flow fl = body(std::move(c));
            if (fl == Flow::break_) break;
            if (fl == Flow::return_) return fl;
        }
        return Flow::normal;
    }
    if (v.is_struct() || v.is_handle()) {
        const Flow fl = body(v);
        return fl == Flow::return_ ? fl : Flow::normal;
    }
    if (v.is_chars()) {
        for (std::int64_t j = 0; j < cols; ++j) {
            std::string col;
            for (std::int64_t i = 0; i < rows; ++i) col += v.chars().data[static_cast<std::size_t>(i + rows * j)];
            const Flow fl = body(Chars{col, rows, 1, false});
            if (fl == Flow::break_) break;
            if (fl == Flow::return_) return fl;
        }
        return Flow::normal;
    }
    // Numbers: the host iterates over the gathered columns.
    const Num& n = v.num();
    if (n.host()) {
        const Flow fl = body(v);
        return fl == Flow::return_ ? fl : Flow::normal;
    }
    const tandem::HostArray h = gather(rt_, n);
    const auto values = h.to_doubles();
    for (std::int64_t j = 0; j < cols; ++j) {
        Value col;
        if (rows == 1) {
            col = scalar(values[static_cast<std::size_t>(j)], n.dtype);
        } else {
            std::vector<double> c(values.begin() + j * rows, values.begin() + (j + 1) * rows);
            tandem::Array a = rt_.array(c, tandem::Shape{rows, 1});
            col = from_array(n.dtype == DType::f64 ? a : tandem::astype(a, n.dtype));
        }
        const Flow fl = body(std::move(col));
        if (fl == Flow::break_) break;
        if (fl == Flow::return_) return fl;
    }
    return Flow::normal;
}

void Interpreter::exec_assign(const Assign& a, const Stmt& s) {
    (void)s;
    std::vector<Value> values;
    const int want = static_cast<int>(a.targets.size());
    if (a.multi || want > 1) {
        values = eval_multi(*a.value, want);
        if (static_cast<int>(values.size()) < want) {
            // Only the outputs not assigned are an error (a function may return fewer when asked).
            bool needed = false;
            for (std::size_t k = values.size(); k < a.targets.size(); ++k) needed = needed || !a.targets[k].tilde;
            if (needed) throw MatlabError("Too many output arguments.", "MATLAB:TooManyOutputs");
        }
    } else {
        values = eval_multi(*a.value, 1);
        if (values.empty()) throw MatlabError("The expression on the right-hand side does not return a value.", "MATLAB:noValue");
        values.resize(1);
    }
    for (std::size_t k = 0; k < a.targets.size() && k < values.size(); ++k) {
        const LValue& t = a.targets[k];
        if (t.tilde) continue;
        assign_to(t, std::move(values[k]));
        if (a.print) display(t.name, frames_.back().vars[t.name]);
    }
}

void Interpreter::assign_to(const LValue& target, Value v) {
    auto& vars = frames_.back().vars;
    if (target.steps.empty()) {
        vars[target.name] = std::move(v);
        return;
    }
    // The chain x.f(2).g{3} = v, from the innermost step out: each level updated and put back.
    std::function<Value(const Value*, std::size_t)> update = [&](const Value* cur, std::size_t i) -> Value {
        const LValue::Step& step = target.steps[i];
        const bool last = i + 1 == target.steps.size();
        if (step.kind == LValue::Step::field) {
            std::string name = step.name;
            if (step.dynamic) name = to_text(eval(*step.dynamic), "a dynamic field name");
            Struct st;
            if (cur && cur->is_struct()) st = cur->strukt();
            else if (cur && !(cur->is_num() && is_empty(*cur)))
                throw MatlabError("Unable to perform assignment because dot indexing is not supported for variables of this type.",
                                  "MATLAB:dotAssignNonStruct");
            Value* field = st.find(name);
            Value next = last ? std::move(v) : update(field, i + 1);
            if (field) *field = std::move(next);
            else st.fields.emplace_back(name, std::move(next));
            return st;
        }
        const Value* subject = cur;
        Value placeholder;
        std::vector<Value> subs;
        if (subject) {
            subs = eval_args(step.args, subject);
        } else {
            placeholder = empty_matrix(rt_);
            subs = eval_args(step.args, &placeholder);
        }
        if (step.kind == LValue::Step::brace) {
            if (last) return brace_assign(rt_, cur, subs, v);
            std::vector<Value> inner = cur && cur->is_cell() ? brace_index(rt_, *cur, subs) : std::vector<Value>{};
            Value next = update(inner.size() == 1 ? &inner[0] : nullptr, i + 1);
            return brace_assign(rt_, cur, subs, next);
        }
        if (last) return paren_assign(rt_, cur, subs, v);
        // x(k).f = ...: a 1x1 struct (or a cell's element by parentheses) indexed by 1.
        if (cur && cur->is_struct()) {
            (void)paren_index(rt_, *cur, subs);
            return update(cur, i + 1);
        }
        if (!cur) return update(nullptr, i + 1);
        throw MatlabError("Unable to perform this indexed assignment (parentheses, then more subscripts).", "MATLAB:subsasgn");
    };
    auto it = vars.find(target.name);
    Value updated = update(it == vars.end() ? nullptr : &it->second, 0);
    vars[target.name] = std::move(updated);
}

// ---- expressions -----------------------------------------------------------------------------

Value Interpreter::eval(const Expr& e) {
    // One value: the expressions that always give one are evaluated here, without a list.
    if (const auto* n = std::get_if<NumberLit>(&e.node)) return scalar(n->value);
    if (const auto* x = std::get_if<Ident>(&e.node)) {
        auto& vars = frames_.back().vars;
        if (auto it = vars.find(x->name); it != vars.end()) return it->second;
    } else if (const auto* u = std::get_if<Unary>(&e.node)) {
        return unary(rt_, u->op, eval(*u->operand));
    } else if (const auto* b = std::get_if<Binary>(&e.node)) {
        if (b->op == BinaryOp::andand || b->op == BinaryOp::oror) {
            auto truth = [&](const Value& v) {
                if (!is_scalar(v) && !is_empty(v))
                    throw MatlabError("Operands to the || and && operators must be convertible to logical scalar values.",
                                      "MATLAB:nonLogicalConditional", op_name(b->op));
                return is_true(rt_, v, op_name(b->op));
            };
            const bool l = truth(eval(*b->lhs));
            if (b->op == BinaryOp::andand && !l) return logical_scalar(false);
            if (b->op == BinaryOp::oror && l) return logical_scalar(true);
            return logical_scalar(truth(eval(*b->rhs)));
        }
        if (b->op == BinaryOp::mtimes) {
            // A' * B and A * B': the product reads the transposed operand in place (a vector's
            // transpose is a reshape, which the product could not see through).
            const auto* tl = std::get_if<Postfix>(&b->lhs->node);
            const auto* tr = std::get_if<Postfix>(&b->rhs->node);
            if (tl || tr) {
                const Value l = eval(tl ? *tl->operand : *b->lhs);
                const Value r = eval(tr ? *tr->operand : *b->rhs);
                if (auto product = transposed_product(l, tl != nullptr, r, tr != nullptr)) return *product;
                return binary(rt_, b->op, tl ? transpose(rt_, l) : l, tr ? transpose(rt_, r) : r);
            }
        }
        const Value l = eval(*b->lhs);
        const Value r = eval(*b->rhs);
        return binary(rt_, b->op, l, r);
    } else if (const auto* p = std::get_if<Postfix>(&e.node)) {
        return transpose(rt_, eval(*p->operand));
    } else if (const auto* r = std::get_if<Range>(&e.node)) {
        const Value a = eval(*r->first);
        const Value st = r->step ? eval(*r->step) : Value{};
        const Value z = eval(*r->last);
        return range(rt_, a, r->step ? &st : nullptr, z);
    } else if (const auto* m = std::get_if<Matrix>(&e.node)) {
        return eval_matrix(*m);
    }
    auto values = eval_multi(e, 1);
    if (values.empty()) {
        if (std::holds_alternative<Index>(e.node) && std::get<Index>(e.node).brace)
            throw MatlabError("Brace indexing produced no results (an empty cell's contents).", "MATLAB:index:expected_one_output");
        throw MatlabError("The expression does not return a value (a function with no outputs?).", "MATLAB:noValue");
    }
    return std::move(values.front());
}

std::optional<Value> Interpreter::transposed_product(const Value& a, bool ta, const Value& b, bool tb) {
    if (!a.is_num() || !b.is_num() || a.num().host() || b.num().host() || is_scalar(a) || is_scalar(b)) return std::nullopt;
    const auto da = dims(a), db = dims(b);
    if (da.size() != 2 || db.size() != 2) return std::nullopt;
    const std::int64_t inner_a = ta ? da[0] : da[1], inner_b = tb ? db[1] : db[0];
    if (inner_a != inner_b) return std::nullopt;  // binary() words the error
    const DType t = result_type(a, b);
    return from_array(tandem::matmul(as_type(rt_, a.num(), t), as_type(rt_, b.num(), t),
                                     {.transpose_a = ta, .transpose_b = tb}));
}

std::vector<Value> Interpreter::eval_args(const std::vector<ExprPtr>& args, const Value* subject) {
    std::vector<Value> out;
    for (std::size_t k = 0; k < args.size(); ++k) {
        const Expr& a = *args[k];
        if (std::holds_alternative<ColonAll>(a.node)) {
            out.push_back(colon_subscript());
            continue;
        }
        if (subject) end_.push_back({subject, k, args.size()});
        try {
            if (const auto* ix = std::get_if<Index>(&a.node); ix && ix->brace) {
                auto list = eval_multi(a, -1);  // c{:} as arguments: each its own
                for (auto& v : list) out.push_back(std::move(v));
            } else {
                out.push_back(eval(a));
            }
        } catch (...) {
            if (subject) end_.pop_back();
            throw;
        }
        if (subject) end_.pop_back();
    }
    return out;
}

std::vector<Value> Interpreter::eval_multi(const Expr& e, int nargout) {
    return std::visit(
        Overloaded{
            [&](const NumberLit& x) -> std::vector<Value> { return {scalar(x.value)}; },
            [&](const StringLit& x) -> std::vector<Value> {
                Chars c{x.text, 1, static_cast<std::int64_t>(x.text.size()), x.double_quoted};
                if (!x.double_quoted && x.text.empty()) c.rows = 0;
                return {Value(std::move(c))};
            },
            [&](const Ident& x) -> std::vector<Value> {
                auto& vars = frames_.back().vars;
                if (auto it = vars.find(x.name); it != vars.end()) return {it->second};
                return call_named(x.name, {}, nargout, e.at, &x.builtin);
            },
            [&](const ColonAll&) -> std::vector<Value> {
                throw MatlabError("A bare ':' is a subscript only.", "MATLAB:colon");
            },
            [&](const EndKw&) -> std::vector<Value> {
                if (end_.empty()) throw MatlabError("'end' is a subscript only here.", "MATLAB:end");
                const EndContext& c = end_.back();
                if (c.count == 1) return {scalar(static_cast<double>(numel(*c.subject)))};
                const auto d = dims(*c.subject);
                std::vector<std::int64_t> seen(c.count, 1);
                for (std::size_t k = 0; k < d.size(); ++k) {
                    if (k < c.count) seen[k] = d[k];
                    else seen[c.count - 1] *= d[k];
                }
                return {scalar(static_cast<double>(seen[c.position]))};
            },
            // (one value each: eval's)
            [&](const Unary&) -> std::vector<Value> { return {eval(e)}; },
            [&](const Binary&) -> std::vector<Value> { return {eval(e)}; },
            [&](const Postfix&) -> std::vector<Value> { return {eval(e)}; },
            [&](const Range&) -> std::vector<Value> { return {eval(e)}; },
            [&](const Index& x) -> std::vector<Value> {
                // name(args): a variable's subscripts, or a call.
                if (const auto* id = std::get_if<Ident>(&x.base->node)) {
                    auto& vars = frames_.back().vars;
                    auto it = vars.find(id->name);
                    if (it == vars.end()) {
                        if (x.brace) undefined(id->name, e.at);
                        return call_named(id->name, eval_args(x.args, nullptr), nargout, e.at, &x.builtin);
                    }
                    const Value subject = it->second;  // (a copy: the arguments may assign)
                    if (subject.is_handle() && !x.brace) return call(subject, eval_args(x.args, nullptr), nargout);
                    auto subs = eval_args(x.args, &subject);
                    if (x.brace) return brace_index(rt_, subject, subs);
                    return {paren_index(rt_, subject, subs)};
                }
                const Value subject = eval(*x.base);
                if (subject.is_handle() && !x.brace) return call(subject, eval_args(x.args, nullptr), nargout);
                auto subs = eval_args(x.args, &subject);
                if (x.brace) return brace_index(rt_, subject, subs);
                return {paren_index(rt_, subject, subs)};
            },
            [&](const Field& x) -> std::vector<Value> {
                const Value base = eval(*x.base);
                const std::string name = x.dynamic ? to_text(eval(*x.dynamic), "a dynamic field name") : x.name;
                if (!base.is_struct())
                    throw MatlabError("Dot indexing is not supported for variables of this type.", "MATLAB:structRefFromNonStruct");
                const Value* f = base.strukt().find(name);
                if (!f) throw MatlabError("Unrecognized field name \"" + name + "\".", "MATLAB:nonExistentField");
                return {*f};
            },
            [&](const Matrix&) -> std::vector<Value> { return {eval(e)}; },
            [&](const AnonFn& x) -> std::vector<Value> { return {make_anonymous(x)}; },
            [&](const FuncRef& x) -> std::vector<Value> {
                auto c = std::make_shared<Callable>();
                c->name = x.name;
                c->text = x.name;
                c->file = current_file_;
                return {Value(Handle{std::move(c)})};
            },
        },
        e.node);
}

std::vector<Value> Interpreter::row_items(const std::vector<ExprPtr>& row) {
    std::vector<Value> items;
    for (const auto& e : row) {
        if (const auto* ix = std::get_if<Index>(&e->node); ix && ix->brace) {
            for (auto& v : eval_multi(*e, -1)) items.push_back(std::move(v));  // c{:} gives its elements
        } else {
            items.push_back(eval(*e));
        }
    }
    return items;
}

Value Interpreter::eval_matrix(const Matrix& m) {
    if (m.cell) {
        Cell c;
        std::vector<std::vector<Value>> rows;
        for (const auto& row : m.rows) {
            std::vector<Value> items = row_items(row);
            if (!rows.empty() && items.size() != rows.front().size())
                throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
            rows.push_back(std::move(items));
        }
        c.rows = static_cast<std::int64_t>(rows.size());
        c.cols = rows.empty() ? 0 : static_cast<std::int64_t>(rows.front().size());
        for (std::int64_t j = 0; j < c.cols; ++j)
            for (std::int64_t i = 0; i < c.rows; ++i) c.items.push_back(rows[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
        return c;
    }
    std::vector<std::vector<Value>> items;
    for (const auto& row : m.rows) {
        items.push_back(row_items(row));
        if (items.back().empty()) items.pop_back();
    }
    if (items.empty()) return empty_matrix(rt_);
    // A literal of host scalars ([4 1 0; 1 3 1]): one array of their values, not a concatenation
    // for the graph to run. The class as concatenate's: single wins, all logical stay logical.
    bool scalars = items.size() > 1, any_single = false, all_logical = true;
    for (const auto& row : items) {
        scalars = scalars && row.size() == items.front().size();
        for (const Value& v : row) {
            scalars = scalars && v.is_num() && v.num().host();
            if (!scalars) break;
            any_single = any_single || v.num().dtype == DType::f32;
            all_logical = all_logical && v.num().dtype == DType::logical;
        }
    }
    if (scalars) {
        const std::size_t rows = items.size(), cols = items.front().size();
        std::vector<double> data(rows * cols);
        for (std::size_t j = 0; j < cols; ++j)
            for (std::size_t i = 0; i < rows; ++i) data[i + rows * j] = items[i][j].num().scalar;
        const Array a = rt_.adopt(std::move(data), tandem::Shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
        const DType t = any_single ? DType::f32 : all_logical ? DType::logical : DType::f64;
        return from_array(t == DType::f64 ? a : tandem::astype(a, t));
    }
    std::vector<Value> rows;
    for (auto& row : items) rows.push_back(concatenate(rt_, row, 2));
    return concatenate(rt_, rows, 1);
}

Value Interpreter::make_anonymous(const AnonFn& f) {
    auto c = std::make_shared<Callable>();
    c->params = f.params;
    c->body = f.body;
    c->text = f.text;
    c->file = current_file_;
    std::set<std::string> names;
    names_in(*f.body, names);
    for (const auto& p : f.params) names.erase(p);
    const auto& vars = frames_.back().vars;
    for (const auto& n : names)
        if (auto it = vars.find(n); it != vars.end()) c->captured.emplace(n, it->second);
    return Handle{std::move(c)};
}

void Interpreter::display(const std::string& name, const Value& v) {
    out_ << name << " =\n\n" << display_text(rt_, v, format_) << "\n";
}

}  // namespace tandem::matlab
