// MATLAB's tokens. What makes MATLAB's lexing context-dependent is handled here, so that the
// parser sees a plain grammar: inside [] and {} whitespace between two elements is a comma
// (`[1 -2]` has two elements, `[1 - 2]` one) and a newline a semicolon; a quote is a transpose
// after an operand (`a'`) and starts a char array elsewhere (`[a 'x']`); `%{ ... %}` on lines of
// their own is a block comment; `...` continues a line.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>

#include "matlab/parser.hpp"

namespace tandem::matlab {
namespace {

const std::set<std::string, std::less<>> kKeywords = {
    "if", "elseif", "else", "end", "for", "parfor", "while", "break", "continue", "return", "switch", "case",
    "otherwise", "try", "catch", "function", "global", "persistent"};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
public:
    Lexer(std::string_view s, const std::string& file) : s_(s), file_(file) {}

    std::vector<Token> run() {
        while (i_ < s_.size()) {
            if (at_line_start_ && block_comment_line()) continue;
            at_line_start_ = false;
            const char c = s_[i_];
            if (c == ' ' || c == '\t' || c == '\r') {
                space_ = true;
                ++i_;
                continue;
            }
            if (c == '.' && s_.substr(i_, 3) == "...") {  // continuation: the rest of the line is a comment
                while (i_ < s_.size() && s_[i_] != '\n') ++i_;
                if (i_ < s_.size()) newline_consumed();
                space_ = true;
                continue;
            }
            if (c == '%') {
                while (i_ < s_.size() && s_[i_] != '\n') ++i_;
                continue;
            }
            if (c == '\n') {
                newline();
                continue;
            }
            lex_token();
        }
        if (!brackets_.empty()) {
            const Open& o = brackets_.back();
            fail(std::string("'") + o.c + "' is not closed", o.line, o.column);
        }
        push(Tok::end_of_input, "", line_, column());
        return std::move(out_);
    }

private:
    struct Open {
        char c;
        int line, column;
        bool anon_params;  // `@(x, y)`: its `)` does not end an operand
    };

    [[noreturn]] void fail(const std::string& what, int line, int col) { throw SyntaxError(what, file_, line, col); }
    int column() const { return static_cast<int>(i_ - line_start_) + 1; }
    bool in_matrix() const { return !brackets_.empty() && brackets_.back().c != '('; }

    /// A line holding only `%{` (or `%}`) opens (closes) a block comment; lines inside are skipped.
    bool block_comment_line() {
        auto line_text = [&](std::size_t from) {
            std::size_t e = s_.find('\n', from);
            if (e == std::string_view::npos) e = s_.size();
            std::string_view t = s_.substr(from, e - from);
            while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
            return std::make_pair(t, e);
        };
        auto [t, e] = line_text(i_);
        if (t != "%{") return false;
        const int open_line = line_;
        int depth = 0;
        for (;;) {
            auto [u, end] = line_text(i_);
            if (u == "%{") ++depth;
            else if (u == "%}") --depth;
            i_ = end;
            if (depth == 0) break;
            if (i_ >= s_.size()) fail("the block comment '%{' is not closed by a line '%}'", open_line, 1);
            newline_consumed();
        }
        return true;  // the newline after `%}` is lexed as usual
    }

    void newline_consumed() {
        ++i_;
        ++line_;
        line_start_ = i_;
        at_line_start_ = true;
    }

    void newline() {
        if (!brackets_.empty()) {
            if (brackets_.back().c == '(') {
                fail("a line ends inside parentheses (continue it with '...')", brackets_.back().line, brackets_.back().column);
            }
            // A row ends (a repeated separator is harmless: the parser skips empty rows).
            push(Tok::semicolon, ";", line_, column());
        } else {
            push(Tok::newline, "\n", line_, column());
        }
        newline_consumed();
        space_ = false;
    }

    bool prev_ends_operand() const {
        if (out_.empty()) return false;
        const Token& t = out_.back();
        switch (t.kind) {
            case Tok::number: case Tok::string: case Tok::dq_string: case Tok::ident: return true;
            case Tok::keyword: return t.text == "end";
            case Tok::op:
                if (last_closed_anon_) return false;
                return t.text == ")" || t.text == "]" || t.text == "}" || t.text == "'" || t.text == ".'";
            default: return false;
        }
    }

    /// Inside brackets, whitespace before the start of an operand that follows an operand
    /// separates two elements.
    void maybe_separate(bool starts_operand) {
        if (in_matrix() && space_ && starts_operand && prev_ends_operand()) push(Tok::comma, ",", line_, column());
    }

    void push(Tok k, std::string text, int line, int col, double number = 0) {
        Token t;
        t.kind = k;
        t.text = std::move(text);
        t.number = number;
        t.line = line;
        t.column = col;
        t.space_before = space_;
        out_.push_back(std::move(t));
        space_ = false;
        last_closed_anon_ = false;
    }

    void lex_token() {
        const char c = s_[i_];
        const char n = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
        const int col = column();
        if (digit(c) || (c == '.' && digit(n))) {
            maybe_separate(true);
            return lex_number();
        }
        if (ident_start(c)) {
            maybe_separate(true);
            std::size_t b = i_;
            while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
            std::string word(s_.substr(b, i_ - b));
            const bool keyword = kKeywords.count(word) > 0;
            push(keyword ? Tok::keyword : Tok::ident, std::move(word), line_, col);
            return;
        }
        if (c == '"') {
            maybe_separate(true);
            return lex_string('"');
        }
        if (c == '\'') {
            // A transpose right after an operand (not after whitespace inside brackets).
            if (prev_ends_operand() && !(in_matrix() && space_)) {
                ++i_;
                push(Tok::op, "'", line_, col);
                return;
            }
            maybe_separate(true);
            return lex_string('\'');
        }
        static const char* const kTwo[] = {".*", "./", ".\\", ".^", ".'", "==", "~=", "<=", ">=", "&&", "||", "!="};
        for (const char* op : kTwo) {
            if (s_.substr(i_, 2) == op) {
                if (op[0] == '!') fail("'!=' is not MATLAB: use '~='", line_, col);
                maybe_separate(false);
                i_ += 2;
                push(Tok::op, op, line_, col);
                return;
            }
        }
        switch (c) {
            case '(': case '[': case '{': {
                maybe_separate(true);
                const bool anon = c == '(' && !out_.empty() && out_.back().kind == Tok::op && out_.back().text == "@";
                brackets_.push_back({c, line_, col, anon});
                ++i_;
                push(Tok::op, std::string(1, c), line_, col);
                return;
            }
            case ')': case ']': case '}': {
                const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
                if (brackets_.empty()) fail(std::string("'") + c + "' closes nothing (no '" + want + "' is open)", line_, col);
                if (brackets_.back().c != want) {
                    const Open& o = brackets_.back();
                    fail(std::string("'") + c + "' does not match the '" + o.c + "' open since line " + std::to_string(o.line) +
                             ", column " + std::to_string(o.column),
                         line_, col);
                }
                const bool anon = brackets_.back().anon_params;
                brackets_.pop_back();
                ++i_;
                push(Tok::op, std::string(1, c), line_, col);
                last_closed_anon_ = anon;
                return;
            }
            case ',': ++i_; push(Tok::comma, ",", line_, col); return;
            case ';': ++i_; push(Tok::semicolon, ";", line_, col); return;
            case '+': case '-': {
                // `[1 -2]`: a sign right before its operand, after whitespace, starts an element.
                const bool sign = n != ' ' && n != '\t' && n != '=' && n != '\n';
                maybe_separate(sign);
                ++i_;
                push(Tok::op, std::string(1, c), line_, col);
                return;
            }
            case '~': case '@':
                maybe_separate(c == '@' || n != '=');
                ++i_;
                push(Tok::op, std::string(1, c), line_, col);
                return;
            case '*': case '/': case '\\': case '^': case '<': case '>': case '&': case '|': case '=': case ':': case '.':
                ++i_;
                push(Tok::op, std::string(1, c), line_, col);
                return;
            case '!': fail("'!' is not MATLAB: use '~' for not", line_, col);
            default: break;
        }
        fail(std::string("the character '") + c + "' is not valid MATLAB here", line_, col);
    }

    void lex_number() {
        const int col = column();
        std::size_t b = i_;
        while (i_ < s_.size() && digit(s_[i_])) ++i_;
        if (i_ < s_.size() && s_[i_] == '.') {
            const char n = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
            // `1.*x`, `1./x`, `1.^x`, `1.'`: the dot belongs to the operator.
            if (n != '*' && n != '/' && n != '\\' && n != '^' && n != '\'') {
                ++i_;
                while (i_ < s_.size() && digit(s_[i_])) ++i_;
            }
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == 'd' || s_[i_] == 'D')) {
            std::size_t j = i_ + 1;
            if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
            if (j < s_.size() && digit(s_[j])) {
                i_ = j;
                while (i_ < s_.size() && digit(s_[i_])) ++i_;
            }
        }
        std::string text(s_.substr(b, i_ - b));
        for (char& ch : text)
            if (ch == 'd' || ch == 'D') ch = 'e';
        if (i_ < s_.size() && (s_[i_] == 'i' || s_[i_] == 'j') && !(i_ + 1 < s_.size() && ident_char(s_[i_ + 1])))
            fail("complex numbers are not supported (the literal '" + text + s_[i_] + "')", line_, col);
        if (i_ < s_.size() && ident_start(s_[i_])) fail("a number runs into a name: '" + text + s_[i_] + "'", line_, col);
        const double v = std::strtod(text.c_str(), nullptr);
        push(Tok::number, text, line_, col, v);
    }

    void lex_string(char quote) {
        const int col = column();
        const int line = line_;
        ++i_;
        std::string text;
        for (;;) {
            if (i_ >= s_.size() || s_[i_] == '\n')
                fail(quote == '\'' ? "a char array is not closed by a quote (') before the end of the line"
                                   : "a string is not closed by a double quote (\") before the end of the line",
                     line, col);
            if (s_[i_] == quote) {
                if (i_ + 1 < s_.size() && s_[i_ + 1] == quote) {  // '' inside '...'
                    text += quote;
                    i_ += 2;
                    continue;
                }
                ++i_;
                break;
            }
            text += s_[i_++];
        }
        push(quote == '\'' ? Tok::string : Tok::dq_string, std::move(text), line, col);
    }

    std::string_view s_;
    const std::string& file_;
    std::size_t i_ = 0, line_start_ = 0;
    int line_ = 1;
    bool space_ = false, at_line_start_ = true, last_closed_anon_ = false;
    std::vector<Open> brackets_;
    std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& file) { return Lexer(source, file).run(); }

}  // namespace tandem::matlab
