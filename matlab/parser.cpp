// A recursive-descent parser over matlab/lexer.cpp's tokens. Operator precedence, lowest first
// (MATLAB's): || ; && ; | ; & ; < <= > >= == ~= ; : ; + - ; * / \ .* ./ .\ ; unary + - ~ ;
// ^ .^ (left to right; the exponent may carry a sign: 2^-1) ; postfix ' .' and subscripts.
#include <algorithm>
#include <optional>
#include <set>

#include "matlab/parser.hpp"

namespace tandem::matlab {

const char* op_name(BinaryOp op) {
    switch (op) {
        case BinaryOp::add: return "+";
        case BinaryOp::sub: return "-";
        case BinaryOp::mtimes: return "*";
        case BinaryOp::mrdivide: return "/";
        case BinaryOp::mldivide: return "\\";
        case BinaryOp::mpower: return "^";
        case BinaryOp::times: return ".*";
        case BinaryOp::rdivide: return "./";
        case BinaryOp::ldivide: return ".\\";
        case BinaryOp::power: return ".^";
        case BinaryOp::eq: return "==";
        case BinaryOp::ne: return "~=";
        case BinaryOp::lt: return "<";
        case BinaryOp::le: return "<=";
        case BinaryOp::gt: return ">";
        case BinaryOp::ge: return ">=";
        case BinaryOp::and_: return "&";
        case BinaryOp::or_: return "|";
        case BinaryOp::andand: return "&&";
        case BinaryOp::oror: return "||";
    }
    return "?";
}

const char* op_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::neg: return "-";
        case UnaryOp::plus: return "+";
        case UnaryOp::not_: return "~";
    }
    return "?";
}

namespace {

/// Words that take MATLAB's command syntax at the start of a statement (`format long`).
const std::set<std::string, std::less<>> kCommands = {"format", "clear", "clc", "close", "more", "clearvars", "rng",
                                                      "warning", "hold", "disp", "pkg"};

class Parser {
public:
    Parser(std::vector<Token> tokens, std::string_view source, const std::string& file)
        : t_(std::move(tokens)), src_(source), file_(file) {}

    Program run() {
        Program p;
        p.file = file_;
        skip_separators();
        p.function_file = is_kw("function");
        while (!at(Tok::end_of_input)) {
            if (is_kw("function")) {
                p.functions.push_back(parse_function());
            } else {
                if (!p.functions.empty() && !p.function_file)
                    fail("a script's statements must come before its local functions", peek());
                if (p.function_file) fail("statements after a function in a function file must be inside a function", peek());
                parse_statement_into(p.statements);
            }
            skip_separators();
        }
        return p;
    }

private:
    // ---- tokens ------------------------------------------------------------------------------
    const Token& peek(std::size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
    bool at(Tok k) const { return peek().kind == k; }
    bool is_op(const char* op, std::size_t k = 0) const { return peek(k).kind == Tok::op && peek(k).text == op; }
    bool is_kw(const char* kw) const { return peek().kind == Tok::keyword && peek().text == kw; }
    const Token& next() { return t_[std::min(pos_++, t_.size() - 1)]; }
    Where where(const Token& t) const { return {t.line, t.column}; }

    [[noreturn]] void fail(const std::string& what, const Token& at) const {
        throw SyntaxError(what, file_, at.line, at.column);
    }
    std::string describe(const Token& t) const {
        switch (t.kind) {
            case Tok::end_of_input: return "the end of the input";
            case Tok::newline: return "the end of the line";
            case Tok::string: return "the char array '" + t.text + "'";
            case Tok::dq_string: return "the string \"" + t.text + "\"";
            default: return "'" + t.text + "'";
        }
    }
    void expect_op(const char* op, const char* context) {
        if (!is_op(op)) fail(std::string("expected '") + op + "' " + context + ", found " + describe(peek()), peek());
        next();
    }
    std::string expect_ident(const char* what) {
        if (!at(Tok::ident)) fail(std::string("expected ") + what + ", found " + describe(peek()), peek());
        return next().text;
    }
    void skip_separators() {
        while (at(Tok::newline) || at(Tok::semicolon) || at(Tok::comma)) next();
    }
    void skip_newlines() {
        while (at(Tok::newline)) next();
    }

    template <class N>
    ExprPtr make(N node, const Token& at) const {
        return std::make_shared<const Expr>(Expr{std::move(node), where(at)});
    }
    template <class N>
    std::shared_ptr<const Stmt> stmt(N node, const Token& at) const {
        return std::make_shared<const Stmt>(Stmt{std::move(node), where(at)});
    }

    // ---- statements --------------------------------------------------------------------------
    /// Statements up to one of `stops` (keywords, not consumed) or the end of the input.
    Block parse_block(std::initializer_list<const char*> stops) {
        Nested guard(*this);
        Block b;
        for (;;) {
            skip_separators();
            if (at(Tok::end_of_input)) return b;
            if (peek().kind == Tok::keyword)
                for (const char* s : stops)
                    if (peek().text == s) return b;
            if (is_kw("function")) return b;  // the next function of a file without `end`s
            parse_statement_into(b);
        }
    }

    /// Whether the statement ended with ';' (consumed, with one ',' or newline).
    bool statement_end() {
        if (at(Tok::semicolon)) {
            next();
            return false;
        }
        if (at(Tok::comma) || at(Tok::newline)) {
            next();
            return true;
        }
        if (at(Tok::end_of_input)) return true;
        if (peek().kind == Tok::keyword) return true;  // `if x, y = 1, end`
        fail("unexpected " + describe(peek()) + " after a complete statement (a missing operator or ','?)", peek());
    }

    void parse_statement_into(Block& b) {
        const Token& first = peek();
        if (first.kind == Tok::keyword) {
            const std::string kw = first.text;
            if (kw == "if") return b.push_back(parse_if());
            if (kw == "for" || kw == "parfor") return b.push_back(parse_for());
            if (kw == "while") return b.push_back(parse_while());
            if (kw == "switch") return b.push_back(parse_switch());
            if (kw == "try") return b.push_back(parse_try());
            if (kw == "break" || kw == "continue" || kw == "return") {
                next();
                statement_end();
                if (kw == "break") return b.push_back(stmt(Break{}, first));
                if (kw == "continue") return b.push_back(stmt(Continue{}, first));
                return b.push_back(stmt(Return{}, first));
            }
            if (kw == "global" || kw == "persistent") {
                next();
                Global g;
                while (at(Tok::ident)) g.names.push_back(next().text);
                if (g.names.empty()) fail("expected a variable name after '" + kw + "'", peek());
                statement_end();
                return b.push_back(stmt(std::move(g), first));
            }
            if (kw == "end") fail("'end' does not close an 'if', 'for', 'while', 'switch', 'try' or 'function' here", first);
            fail("'" + kw + "' is not valid here", first);
        }
        // Command syntax: `format long`, `clear all`, `rng default`.
        if (first.kind == Tok::ident && kCommands.count(first.text) && peek(1).space_before &&
            (peek(1).kind == Tok::ident || peek(1).kind == Tok::number) && !is_op("=", 2) && !is_op("(", 2)) {
            next();
            Command c{first.text, {}};
            while (at(Tok::ident) || at(Tok::number)) c.args.push_back(next().text);
            statement_end();
            return b.push_back(stmt(std::move(c), first));
        }
        if (first.kind == Tok::ident && (peek(1).kind == Tok::newline || peek(1).kind == Tok::semicolon ||
                                         peek(1).kind == Tok::comma || peek(1).kind == Tok::end_of_input) &&
            kCommands.count(first.text) && first.text != "disp") {
            next();
            const bool print = statement_end();
            (void)print;
            return b.push_back(stmt(Command{first.text, {}}, first));
        }
        // An assignment: `x = ...`, `x(i).f{2} = ...`, `[a, ~, c] = ...`.
        const std::size_t save = pos_;
        if (auto targets = try_targets()) {
            next();  // '='
            ExprPtr value = parse_expr();
            const bool print = statement_end();
            const bool multi = t_[save].kind == Tok::op && t_[save].text == "[";
            return b.push_back(stmt(Assign{std::move(*targets), value, print, multi}, first));
        }
        pos_ = save;
        ExprPtr e = parse_expr();
        const bool print = statement_end();
        b.push_back(stmt(ExprStmt{e, print}, first));
    }

    /// Assignment targets followed by '=' (not '=='), or nothing (the position is then anywhere).
    std::optional<std::vector<LValue>> try_targets() {
        std::vector<LValue> out;
        if (is_op("[")) {
            next();
            for (;;) {
                if (is_op("]")) break;
                if (is_op("~")) {
                    LValue l;
                    l.tilde = true;
                    l.at = where(next());
                    out.push_back(std::move(l));
                } else {
                    auto l = try_lvalue();
                    if (!l) return std::nullopt;
                    out.push_back(std::move(*l));
                }
                if (at(Tok::comma)) next();
                else if (!is_op("]")) return std::nullopt;
            }
            next();
            if (out.empty()) return std::nullopt;
        } else {
            auto l = try_lvalue();
            if (!l) return std::nullopt;
            out.push_back(std::move(*l));
        }
        if (!is_op("=")) return std::nullopt;
        return out;
    }

    std::optional<LValue> try_lvalue() {
        if (!at(Tok::ident)) return std::nullopt;
        LValue l;
        l.at = where(peek());
        l.name = next().text;
        try {
            for (;;) {
                if (is_op("(") || is_op("{")) {
                    const bool brace = is_op("{");
                    next();
                    LValue::Step s{brace ? LValue::Step::brace : LValue::Step::paren, parse_args(brace ? "}" : ")"), {}, nullptr};
                    l.steps.push_back(std::move(s));
                } else if (is_op(".") && !peek().space_before) {
                    next();
                    LValue::Step s{LValue::Step::field, {}, {}, nullptr};
                    if (is_op("(")) {
                        next();
                        s.dynamic = parse_expr();
                        expect_op(")", "after a dynamic field name");
                    } else {
                        s.name = expect_ident("a field name after '.'");
                    }
                    l.steps.push_back(std::move(s));
                } else {
                    break;
                }
            }
        } catch (const SyntaxError&) {
            return std::nullopt;  // not a target: parsed again as an expression (which reports it)
        }
        return l;
    }

    std::shared_ptr<const Stmt> parse_if() {
        const Token& first = next();
        If s;
        ExprPtr cond = parse_expr();
        Block body = parse_block({"elseif", "else", "end"});
        s.clauses.emplace_back(cond, std::move(body));
        for (;;) {
            if (is_kw("elseif")) {
                next();
                ExprPtr c = parse_expr();
                s.clauses.emplace_back(c, parse_block({"elseif", "else", "end"}));
            } else if (is_kw("else")) {
                next();
                s.otherwise = parse_block({"end"});
            } else {
                break;
            }
        }
        close_end("if", first);
        return stmt(std::move(s), first);
    }

    void close_end(const char* what, const Token& opened) {
        if (!is_kw("end"))
            fail(std::string("'") + what + "' on line " + std::to_string(opened.line) + " is not closed by 'end' (found " +
                     describe(peek()) + ")",
                 peek());
        next();
        statement_end();
    }

    std::shared_ptr<const Stmt> parse_for() {
        const Token& first = next();
        const bool paren = is_op("(");
        if (paren) next();
        auto var = try_lvalue();
        if (!var || !is_op("=")) fail("expected 'for variable = values'", peek());
        next();
        ExprPtr range = parse_expr();
        if (paren) expect_op(")", "after the for loop's values");
        Block body = parse_block({"end"});
        close_end("for", first);
        return stmt(For{std::move(*var), range, std::move(body)}, first);
    }

    std::shared_ptr<const Stmt> parse_while() {
        const Token& first = next();
        ExprPtr cond = parse_expr();
        Block body = parse_block({"end"});
        close_end("while", first);
        return stmt(While{cond, std::move(body)}, first);
    }

    std::shared_ptr<const Stmt> parse_switch() {
        const Token& first = next();
        Switch s;
        s.subject = parse_expr();
        skip_separators();
        while (is_kw("case")) {
            next();
            ExprPtr v = parse_expr();
            s.cases.emplace_back(v, parse_block({"case", "otherwise", "end"}));
        }
        if (is_kw("otherwise")) {
            next();
            s.otherwise = parse_block({"end"});
        }
        close_end("switch", first);
        return stmt(std::move(s), first);
    }

    std::shared_ptr<const Stmt> parse_try() {
        const Token& first = next();
        TryCatch s;
        s.body = parse_block({"catch", "end"});
        if (is_kw("catch")) {
            const Token& c = next();
            // `catch err` names the error when the name is on the catch line.
            if (at(Tok::ident) && peek().line == c.line) s.ident = next().text;
            s.handler = parse_block({"end"});
        }
        close_end("try", first);
        return stmt(std::move(s), first);
    }

    std::shared_ptr<const Function> parse_function() {
        const Token& first = next();
        auto f = std::make_shared<Function>();
        f->file = file_;
        f->at = where(first);
        // `function [a, b] = name(...)`, `function a = name(...)`, `function name(...)`.
        if (is_op("[")) {
            next();
            while (!is_op("]")) {
                f->outputs.push_back(expect_ident("an output name"));
                if (at(Tok::comma)) next();
            }
            next();
            expect_op("=", "after the function's outputs");
            f->name = expect_ident("the function's name");
        } else {
            std::string a = expect_ident("the function's name");
            if (is_op("=")) {
                next();
                f->outputs.push_back(a);
                f->name = expect_ident("the function's name");
            } else {
                f->name = a;
            }
        }
        if (is_op("(")) {
            next();
            while (!is_op(")")) {
                if (is_op("~")) {
                    next();
                    f->params.push_back("~");
                } else {
                    f->params.push_back(expect_ident("a parameter name"));
                }
                if (at(Tok::comma)) next();
                else if (!is_op(")")) fail("expected ',' or ')' in the parameter list, found " + describe(peek()), peek());
            }
            next();
        }
        f->body = parse_block({"end"});
        if (is_kw("end")) {
            next();
            if (!at(Tok::end_of_input)) statement_end();
        }
        return f;
    }

    // ---- expressions -------------------------------------------------------------------------
    std::vector<ExprPtr> parse_args(const char* close) {
        std::vector<ExprPtr> args;
        ++index_depth_;
        while (!is_op(close)) {
            if (is_op(":") && (at_arg_end(1, close))) {
                args.push_back(make(ColonAll{}, next()));
            } else {
                args.push_back(parse_expr());
            }
            if (at(Tok::comma)) {
                next();
                if (is_op(close)) fail("expected an argument after ','", peek());
            } else if (!is_op(close)) {
                fail(std::string("expected ',' or '") + close + "', found " + describe(peek()), peek());
            }
        }
        --index_depth_;
        next();
        return args;
    }
    bool at_arg_end(std::size_t k, const char* close) const { return peek(k).kind == Tok::comma || is_op(close, k); }

    /// Nesting deeper than this is refused (a stack overflow on hostile input otherwise).
    static constexpr int kMaxDepth = 200;
    struct Nested {
        Parser& p;
        explicit Nested(Parser& parser) : p(parser) {
            if (++p.depth_ > kMaxDepth) p.fail("expressions or blocks nested more than 200 deep", p.peek());
        }
        ~Nested() { --p.depth_; }
        Nested(const Nested&) = delete;
        Nested& operator=(const Nested&) = delete;
    };

    ExprPtr parse_expr() {
        Nested guard(*this);
        return parse_binary(0);
    }

    ExprPtr parse_binary(int level) {
        static const std::vector<std::vector<std::pair<std::string, BinaryOp>>> levels = {
            {{"||", BinaryOp::oror}},
            {{"&&", BinaryOp::andand}},
            {{"|", BinaryOp::or_}},
            {{"&", BinaryOp::and_}},
            {{"==", BinaryOp::eq}, {"~=", BinaryOp::ne}, {"<", BinaryOp::lt}, {"<=", BinaryOp::le}, {">", BinaryOp::gt}, {">=", BinaryOp::ge}},
        };
        if (level == static_cast<int>(levels.size())) return parse_range();
        ExprPtr lhs = parse_binary(level + 1);
        for (;;) {
            const Token& t = peek();
            if (t.kind != Tok::op) return lhs;
            const auto& ops = levels[static_cast<std::size_t>(level)];
            auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == t.text; });
            if (it == ops.end()) return lhs;
            next();
            ExprPtr rhs = parse_binary(level + 1);
            lhs = make(Binary{it->second, lhs, rhs}, t);
        }
    }
    ExprPtr parse_range() {
        const Token& first = peek();
        ExprPtr a = parse_additive();
        if (!is_op(":")) return a;
        next();
        ExprPtr b = parse_additive();
        if (is_op(":")) {
            next();
            ExprPtr c = parse_additive();
            return make(Range{a, b, c}, first);
        }
        return make(Range{a, nullptr, b}, first);
    }

    ExprPtr parse_additive() {
        ExprPtr lhs = parse_multiplicative();
        while (is_op("+") || is_op("-")) {
            const Token& t = next();
            ExprPtr rhs = parse_multiplicative();
            lhs = make(Binary{t.text == "+" ? BinaryOp::add : BinaryOp::sub, lhs, rhs}, t);
        }
        return lhs;
    }

    ExprPtr parse_multiplicative() {
        ExprPtr lhs = parse_unary();
        for (;;) {
            BinaryOp op;
            if (is_op("*")) op = BinaryOp::mtimes;
            else if (is_op("/")) op = BinaryOp::mrdivide;
            else if (is_op("\\")) op = BinaryOp::mldivide;
            else if (is_op(".*")) op = BinaryOp::times;
            else if (is_op("./")) op = BinaryOp::rdivide;
            else if (is_op(".\\")) op = BinaryOp::ldivide;
            else return lhs;
            const Token& t = next();
            ExprPtr rhs = parse_unary();
            lhs = make(Binary{op, lhs, rhs}, t);
        }
    }

    ExprPtr parse_unary() {
        if (is_op("-") || is_op("+") || is_op("~")) {
            Nested guard(*this);
            const Token& t = next();
            ExprPtr e = parse_unary();
            const UnaryOp op = t.text == "-" ? UnaryOp::neg : t.text == "+" ? UnaryOp::plus : UnaryOp::not_;
            return make(Unary{op, e}, t);
        }
        return parse_power();
    }

    ExprPtr parse_power() {
        ExprPtr base = parse_postfix();
        while (is_op("^") || is_op(".^")) {
            const Token& t = next();
            // The exponent: a postfix expression, or a signed one (2^-1, 2^~0).
            ExprPtr exponent;
            if (is_op("-") || is_op("+") || is_op("~")) {
                const Token& s = next();
                ExprPtr e = parse_power_operand();
                exponent = make(Unary{s.text == "-" ? UnaryOp::neg : s.text == "+" ? UnaryOp::plus : UnaryOp::not_, e}, s);
            } else {
                exponent = parse_postfix();
            }
            base = make(Binary{t.text == "^" ? BinaryOp::mpower : BinaryOp::power, base, exponent}, t);
        }
        return base;
    }
    ExprPtr parse_power_operand() {
        if (is_op("-") || is_op("+") || is_op("~")) {
            Nested guard(*this);
            const Token& s = next();
            ExprPtr e = parse_power_operand();
            return make(Unary{s.text == "-" ? UnaryOp::neg : s.text == "+" ? UnaryOp::plus : UnaryOp::not_, e}, s);
        }
        return parse_postfix();
    }

    ExprPtr parse_postfix() {
        ExprPtr e = parse_primary();
        for (;;) {
            const Token& t = peek();
            if (t.kind != Tok::op) return e;
            if (t.text == "'" || t.text == ".'") {
                next();
                e = make(Postfix{t.text == "'" ? PostfixOp::ctranspose : PostfixOp::transpose, e}, t);
            } else if (t.text == "(" || t.text == "{") {  // (the lexer split `[a (1)]` in two already)
                next();
                const bool brace = t.text == "{";
                e = make(Index{e, parse_args(brace ? "}" : ")"), brace}, t);
            } else if (t.text == "." && !t.space_before) {
                next();
                if (is_op("(")) {
                    next();
                    ExprPtr d = parse_expr();
                    expect_op(")", "after a dynamic field name");
                    e = make(Field{e, "", d}, t);
                } else {
                    e = make(Field{e, expect_ident("a field name after '.'"), nullptr}, t);
                }
            } else {
                return e;
            }
        }
    }
    ExprPtr parse_primary() {
        const Token& t = peek();
        switch (t.kind) {
            case Tok::number: next(); return make(NumberLit{t.number}, t);
            case Tok::string: next(); return make(StringLit{t.text, false}, t);
            case Tok::dq_string: next(); return make(StringLit{t.text, true}, t);
            case Tok::ident: next(); return make(Ident{t.text}, t);
            case Tok::keyword:
                if (t.text == "end" && index_depth_ > 0) {
                    next();
                    return make(EndKw{}, t);
                }
                fail("the keyword '" + t.text + "' cannot start an expression", t);
            case Tok::op: break;
            default: fail("expected an expression, found " + describe(t), t);
        }
        if (t.text == "(") {
            next();
            const int saved = index_depth_;
            ExprPtr e = parse_expr();
            index_depth_ = saved;
            expect_op(")", "to close '('");
            return e;
        }
        if (t.text == "[" || t.text == "{") return parse_matrix();
        if (t.text == "@") {
            next();
            if (is_op("(")) {
                next();
                AnonFn f;
                while (!is_op(")")) {
                    if (is_op("~")) {
                        next();
                        f.params.push_back("~");
                    } else {
                        f.params.push_back(expect_ident("a parameter name"));
                    }
                    if (at(Tok::comma)) next();
                    else if (!is_op(")")) fail("expected ',' or ')' in an anonymous function's parameters", peek());
                }
                next();
                const int saved = index_depth_;
                index_depth_ = 0;
                const std::size_t from = pos_;
                f.body = parse_expr();
                index_depth_ = saved;
                f.text = source_text(t, from);
                return make(std::move(f), t);
            }
            return make(FuncRef{expect_ident("a function name after '@'")}, t);
        }
        if (t.text == ":") fail("a bare ':' is a subscript only (A(:), A(:, k))", t);
        fail("expected an expression, found " + describe(t), t);
    }

    /// `@(x) body` as written: from the '@' to the last token of the body.
    std::string source_text(const Token& at_sign, std::size_t body_from) const {
        (void)body_from;
        const Token& last = t_[pos_ - 1];
        const std::size_t b = offset_of(at_sign), e = offset_of(last) + token_length(last);
        return std::string(src_.substr(b, e > b ? e - b : 0));
    }
    std::size_t offset_of(const Token& t) const {
        std::size_t off = 0;
        int line = 1;
        while (line < t.line && off < src_.size()) {
            if (src_[off] == '\n') ++line;
            ++off;
        }
        return off + static_cast<std::size_t>(t.column - 1);
    }
    std::size_t token_length(const Token& t) const {
        if (t.kind == Tok::string || t.kind == Tok::dq_string) {
            std::size_t quotes = 2;
            for (char c : t.text)
                if (c == (t.kind == Tok::string ? '\'' : '"')) ++quotes;
            return t.text.size() + quotes;
        }
        return t.text.size();
    }

    ExprPtr parse_matrix() {
        const Token& open = next();
        const bool cell = open.text == "{";
        const char* close = cell ? "}" : "]";
        Matrix m{{}, cell};
        std::vector<ExprPtr> row;
        const int saved = index_depth_;
        for (;;) {
            if (is_op(close)) {
                next();
                break;
            }
            if (at(Tok::semicolon) || at(Tok::newline)) {
                next();
                if (!row.empty()) m.rows.push_back(std::move(row));
                row.clear();
                continue;
            }
            if (at(Tok::comma)) {
                if (row.empty()) fail("expected an element before ','", peek());
                next();
                if (at(Tok::comma)) fail("expected an element before ','", peek());
                continue;
            }
            if (at(Tok::end_of_input)) fail(std::string("'") + open.text + "' is not closed", open);
            row.push_back(parse_expr());
            if (!(at(Tok::comma) || at(Tok::semicolon) || at(Tok::newline) || is_op(close)))
                fail(std::string("expected ',', ';' or '") + close + "' between elements, found " + describe(peek()), peek());
        }
        if (!row.empty()) m.rows.push_back(std::move(row));
        index_depth_ = saved;
        return make(std::move(m), open);
    }

    std::vector<Token> t_;
    std::string_view src_;
    const std::string& file_;
    std::size_t pos_ = 0;
    int index_depth_ = 0;
    int depth_ = 0;
};

}  // namespace

Program parse(std::string_view source, const std::string& file) {
    return Parser(tokenize(source, file), source, file).run();
}

}  // namespace tandem::matlab
