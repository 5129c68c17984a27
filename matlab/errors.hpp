// Errors of the MATLAB front end, worded as MATLAB words them: `Error using +` / `Arrays have
// incompatible sizes for this operation.` / `Error in foo.m (line 12)`.
#pragma once

#include <string>
#include <vector>

#include "tandem/error.hpp"

namespace tandem::matlab {

/// An error raised while running MATLAB code (by the code's `error`, a builtin, an operator or
/// the interpreter). `what()` is the message alone; `report()` the whole text MATLAB prints.
class MatlabError : public tandem::Error {
public:
    explicit MatlabError(std::string message, std::string identifier = {}, std::string using_name = {})
        : tandem::Error(message), message_(std::move(message)), identifier_(std::move(identifier)),
          using_(std::move(using_name)) {}
    const std::string& message() const noexcept { return message_; }
    const std::string& identifier() const noexcept { return identifier_; }
    /// The function or operator it names (`Error using mtimes`), or "".
    const std::string& using_name() const noexcept { return using_; }
    void set_using(const std::string& name) {
        if (using_.empty()) using_ = name;
    }
    /// Where it happened, innermost first: ("foo.m", 12), or ("", line) for a snippet.
    struct Frame {
        std::string file, function;
        int line = 0;
    };
    const std::vector<Frame>& stack() const noexcept { return stack_; }
    void add_frame(Frame f) { stack_.push_back(std::move(f)); }
    /// The text MATLAB prints for it, ending with a newline.
    std::string report() const;

private:
    std::string message_, identifier_, using_;
    std::vector<Frame> stack_;
};

/// Code that does not parse: nothing of the file runs.
class SyntaxError : public MatlabError {
public:
    SyntaxError(std::string message, std::string file, int line, int column)
        : MatlabError(std::move(message), "MATLAB:syntaxError"), file_(std::move(file)), line_(line), column_(column) {}
    const std::string& file() const noexcept { return file_; }
    int line() const noexcept { return line_; }
    int column() const noexcept { return column_; }
    std::string report_syntax() const;

private:
    std::string file_;
    int line_, column_;
};

}  // namespace tandem::matlab
