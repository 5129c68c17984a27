// The MATLAB front end: the parser (every construct, and every error path on malformed input,
// with its line and column), and the interpreter's semantics on the CPU executor: display,
// indexing and growth, deletion, `end`, control flow, functions, handles, cells, structs,
// errors worded as MATLAB's with file and line. The values against GNU Octave are the
// conformance suite's (tests/matlab/conformance.py); the Vulkan path is test_matlab_vulkan.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "matlab/interpreter.hpp"
#include "matlab/parser.hpp"
#include "vulkan_runtime.hpp"  // (tvk::cpu_config: the CPU executor, plans verified)

namespace mt = tandem::matlab;

namespace {

struct Session {
    tandem::Runtime rt{tvk::cpu_config()};
    std::ostringstream out;
    mt::Interpreter in{rt, out};
    std::string run(const std::string& code) {
        out.str("");
        in.run_code(code);
        return out.str();
    }
    /// The report of the error the code raises ("" when it raises none).
    std::string error(const std::string& code) {
        try {
            in.run_code(code, "snippet.m");
        } catch (const mt::SyntaxError& e) {
            return e.report_syntax();
        } catch (const mt::MatlabError& e) {
            return e.report();
        }
        return "";
    }
};

std::string run(const std::string& code) {
    Session s;
    return s.run(code);
}

/// The syntax error of `code`: "line:column message".
std::string syntax_error(const std::string& code) {
    try {
        (void)mt::parse(code, "f.m");
    } catch (const mt::SyntaxError& e) {
        return std::to_string(e.line()) + ":" + std::to_string(e.column()) + " " + e.message();
    }
    return "";
}

}  // namespace

// ---- lexer and parser ------------------------------------------------------------------------

TEST(MatlabParser, WhitespaceInsideBracketsSeparatesElements) {
    EXPECT_EQ(run("disp(numel([1 -2]))"), "     2\n");
    EXPECT_EQ(run("disp(numel([1 - 2]))"), "     1\n");
    EXPECT_EQ(run("disp(numel([1 -2 + 3]))"), "     2\n");
    EXPECT_EQ(run("a = [1 2]; disp(numel([a' a']))"), "     4\n");
    EXPECT_EQ(run("a = 3; disp([a (1)])"), "     3     1\n");
    EXPECT_EQ(run("x = [1, 2\n3, 4]; disp(size(x))"), "     2     2\n");
    EXPECT_EQ(run("x = {@(t) t + 1, 2}; disp(numel(x))"), "     2\n");
    EXPECT_EQ(run("s = ['ab' 'cd']; disp(s)"), "abcd\n");
}

TEST(MatlabParser, PrecedenceIsMatlabs) {
    EXPECT_EQ(run("fprintf('%g\\n', -2^2)"), "-4\n");
    EXPECT_EQ(run("fprintf('%g\\n', 2^-1)"), "0.5\n");
    EXPECT_EQ(run("fprintf('%g\\n', 2^3^2)"), "64\n");  // left to right
    EXPECT_EQ(run("fprintf('%g ', 1:3 + 1); fprintf('\\n')"), "1 2 3 4 \n");
    EXPECT_EQ(run("fprintf('%g\\n', ~1 == 0)"), "1\n");
    EXPECT_EQ(run("fprintf('%g\\n', 1 | 0 & 0)"), "1\n");
    EXPECT_EQ(run("a = [1 2]'; fprintf('%g\\n', a' * a)"), "5\n");
    EXPECT_EQ(run("fprintf('%g\\n', [1 2 3]')"), "1\n2\n3\n");
}

TEST(MatlabParser, CommentsContinuationAndCommands) {
    EXPECT_EQ(run("x = 1; % a comment\n%{\nx = 2;\n%}\ny = x + ...\n  1;\ndisp(y)"), "     2\n");
    EXPECT_EQ(run("format long\nx = pi"), "x =\n\n   3.141592653589793\n\n");
    EXPECT_EQ(run("x = 'it''s'; disp(x)"), "it's\n");
    EXPECT_EQ(run("x = \"say \"\"hi\"\"\"; disp(x); disp(class(x))"), "say \"hi\"\nstring\n");
}

TEST(MatlabParser, MalformedInputNamesLineAndColumn) {
    // Every error path of the lexer and the parser.
    EXPECT_EQ(syntax_error("x = [1 2"), "1:5 '[' is not closed");
    EXPECT_EQ(syntax_error("x = (1 + 2\n"), "1:5 a line ends inside parentheses (continue it with '...')");
    EXPECT_EQ(syntax_error("x = 1)"), "1:6 ')' closes nothing (no '(' is open)");
    EXPECT_EQ(syntax_error("x = 'abc"), "1:5 a char array is not closed by a quote (') before the end of the line");
    EXPECT_EQ(syntax_error("x = \"abc"), "1:5 a string is not closed by a double quote (\") before the end of the line");
    EXPECT_EQ(syntax_error("%{\nx = 1"), "1:1 the block comment '%{' is not closed by a line '%}'");
    EXPECT_EQ(syntax_error("x = 3i"), "1:5 complex numbers are not supported (the literal '3i')");
    EXPECT_EQ(syntax_error("x = 3x"), "1:5 a number runs into a name: '3x'");
    EXPECT_EQ(syntax_error("if x ~= 1 y = 2 end $"), "1:21 the character '$' is not valid MATLAB here");
    EXPECT_EQ(syntax_error("x != 1"), "1:3 '!=' is not MATLAB: use '~='");
    EXPECT_EQ(syntax_error("!ls"), "1:1 '!' is not MATLAB: use '~' for not");
    EXPECT_EQ(syntax_error("if x\n y = 1\n"), "3:1 'if' on line 1 is not closed by 'end' (found the end of the input)");
    EXPECT_EQ(syntax_error("for = 3\nend"), "1:5 expected 'for variable = values'");
    EXPECT_EQ(syntax_error("end"), "1:1 'end' does not close an 'if', 'for', 'while', 'switch', 'try' or 'function' here");
    EXPECT_EQ(syntax_error("x = 1 2"), "1:7 unexpected '2' after a complete statement (a missing operator or ','?)");
    EXPECT_EQ(syntax_error("x = [1, , 2]"), "1:9 expected an element before ','");
    EXPECT_EQ(syntax_error("x = f(1,)"), "1:9 expected an argument after ','");
    EXPECT_EQ(syntax_error("x = f(1 2)"), "1:9 expected ',' or ')', found '2'");
    EXPECT_EQ(syntax_error("x = 1 +"), "1:8 expected an expression, found the end of the input");
    EXPECT_EQ(syntax_error("x = :"), "1:5 a bare ':' is a subscript only (A(:), A(:, k))");
    EXPECT_EQ(syntax_error("x = else"), "1:5 the keyword 'else' cannot start an expression");
    EXPECT_EQ(syntax_error("x = s."), "1:7 expected a field name after '.', found the end of the input");
    EXPECT_EQ(syntax_error("x = @(a b) a"), "1:9 expected ',' or ')' in an anonymous function's parameters");
    EXPECT_EQ(syntax_error("x = @"), "1:6 expected a function name after '@', found the end of the input");
    EXPECT_EQ(syntax_error("x = s.(1"), "1:7 '(' is not closed");
    EXPECT_EQ(syntax_error("x = s.(1 2)"), "1:10 expected ')' after a dynamic field name, found '2'");
    EXPECT_EQ(syntax_error("function f(a b)\nend"), "1:14 expected ',' or ')' in the parameter list, found 'b'");
    EXPECT_EQ(syntax_error("function [a] = \nend"), "1:16 expected the function's name, found the end of the line");
    EXPECT_EQ(syntax_error("function f\nend\nx = 1"), "3:1 statements after a function in a function file must be inside a function");
    EXPECT_EQ(syntax_error("x = 1;\nfunction f\nend\ny = 2"), "4:1 a script's statements must come before its local functions");
    EXPECT_EQ(syntax_error("global"), "1:7 expected a variable name after 'global'");
    EXPECT_EQ(syntax_error("function [1] = f\nend"), "1:11 expected an output name, found '1'");
    EXPECT_EQ(syntax_error("function [a] f\nend"), "1:14 expected '=' after the function's outputs, found 'f'");
    EXPECT_EQ(syntax_error("function f(1)\nend"), "1:12 expected a parameter name, found '1'");
    EXPECT_EQ(syntax_error("x = @(1) 2"), "1:7 expected a parameter name, found '1'");
    EXPECT_EQ(syntax_error("x = s.1"), "1:6 unexpected '.1' after a complete statement (a missing operator or ','?)");
    EXPECT_EQ(syntax_error("switch x\ncase 1\n"), "3:1 'switch' on line 1 is not closed by 'end' (found the end of the input)");
    EXPECT_EQ(syntax_error("try\nx = 1;\ncatch\n"), "4:1 'try' on line 1 is not closed by 'end' (found the end of the input)");
    EXPECT_EQ(syntax_error("while 1\n"), "2:1 'while' on line 1 is not closed by 'end' (found the end of the input)");
    EXPECT_EQ(syntax_error("x = (1"), "1:5 '(' is not closed");
    EXPECT_EQ(syntax_error("x = [1 2]]"), "1:10 ']' closes nothing (no '[' is open)");
    EXPECT_EQ(syntax_error("elseif"), "1:1 'elseif' is not valid here");
    EXPECT_EQ(syntax_error("x = [1 ; 2 3)"), "1:13 ')' does not match the '[' open since line 1, column 5");
    EXPECT_EQ(syntax_error("x(1 = 2)"), "1:5 expected ',' or ')', found '='");
    EXPECT_EQ(syntax_error("x = " + std::string(300, '(') + "1" + std::string(300, ')')), "1:205 expressions or blocks nested more than 200 deep");
    EXPECT_EQ(syntax_error("x = " + std::string(300, '-') + "1"), "1:204 expressions or blocks nested more than 200 deep");
}

TEST(MatlabParser, ASyntaxErrorAnywhereRunsNothing) {
    Session s;
    const std::string report = s.error("disp(1)\nx = [1 2\n");
    EXPECT_EQ(s.out.str(), "") << "nothing of the file ran";
    EXPECT_NE(report.find("Line: 2 Column: 5"), std::string::npos) << report;
}

// ---- display -----------------------------------------------------------------------------------

TEST(MatlabDisplay, ValuesAsMatlabLaysThemOut) {
    EXPECT_EQ(run("x = 5"), "x =\n\n     5\n\n");
    EXPECT_EQ(run("x = -3.5"), "x =\n\n   -3.5000\n\n");
    EXPECT_EQ(run("x = 123456.7"), "x =\n\n   1.2346e+05\n\n");
    EXPECT_EQ(run("x = [1 2; 3 4]"), "x =\n\n     1     2\n     3     4\n\n");
    EXPECT_EQ(run("x = [1.5 NaN -Inf]"), "x =\n\n    1.5000       NaN      -Inf\n\n");
    EXPECT_EQ(run("x = [100.5 2]"), "x =\n\n  100.5000    2.0000\n\n");
    EXPECT_EQ(run("x = true"), "x =\n\n  logical\n\n   1\n\n");
    EXPECT_EQ(run("x = [1 2] > 1"), "x =\n\n  logical\n\n   0   1\n\n");
    EXPECT_EQ(run("x = 'hi'"), "x =\n\n    'hi'\n\n");
    EXPECT_EQ(run("x = []"), "x =\n\n     []\n\n");
    EXPECT_EQ(run("x = zeros(0, 3)"), "x =\n\n  0\xC3\x97" "3 empty double matrix\n\n");
    EXPECT_EQ(run("s.a = 1; s.bb = 'x'; s"), "s =\n\n  struct with fields:\n\n     a: 1\n    bb: 'x'\n\n");
    EXPECT_EQ(run("f = @(x) x + 1"), "f =\n\n  function_handle with value:\n\n    @(x) x + 1\n\n");
    EXPECT_EQ(run("3 + 4"), "ans =\n\n     7\n\n");
    EXPECT_EQ(run("x = 3;"), "");
}

// ---- semantics ---------------------------------------------------------------------------------

TEST(MatlabSemantics, IndexingGrowthAndDeletion) {
    EXPECT_EQ(run("x = []; x(3) = 5; fprintf('%g ', x); disp(size(x))"), "0 0 5      1     3\n");
    EXPECT_EQ(run("A = [1 2; 3 4]; A(2, 4) = 1; disp(A)"), "     1     2     0     0\n     3     4     0     1\n");
    EXPECT_EQ(run("x = (1:5)'; x(7) = 1; disp(size(x))"), "     7     1\n");
    EXPECT_EQ(run("x = 1:5; x([2 4]) = []; fprintf('%g ', x)"), "1 3 5 ");
    EXPECT_EQ(run("A = [1 2 3; 4 5 6]; A(:, 2) = []; disp(A)"), "     1     3\n     4     6\n");
    EXPECT_EQ(run("A = [1 2 3; 4 5 6]; A(1, :) = []; disp(A)"), "     4     5     6\n");
    EXPECT_EQ(run("x = 1:6; x(x > 3) = 0; fprintf('%g ', x)"), "1 2 3 0 0 0 ");
    EXPECT_EQ(run("x = 1:6; fprintf('%g ', x(logical([1 0 1 0 0 1])))"), "1 3 6 ");
    EXPECT_EQ(run("A = reshape(1:6, 2, 3); fprintf('%g ', A(:, end)); fprintf('%g ', A(end))"), "5 6 6 ");
    EXPECT_EQ(run("x = 1:4; x(end + 1) = 9; fprintf('%g ', x(end - 1:end))"), "4 9 ");
    EXPECT_EQ(run("A = zeros(2); A(:) = 1:4; disp(A)"), "     1     3\n     2     4\n");
    EXPECT_EQ(run("A = eye(3); A(2, :) = [7 8 9]; disp(A(2, :))"), "     7     8     9\n");
    EXPECT_EQ(run("A = reshape(1:8, 2, 2, 2); fprintf('%g ', A(2, 2, 2), A(:, :, 1))"), "8 1 2 3 4 ");
    EXPECT_EQ(run("A = reshape(1:8, 2, 2, 2); fprintf('%g ', A(2, 3))"), "6 ");  // trailing dims fold
    EXPECT_EQ(run("s = 'hello'; s(1) = 'J'; disp(s(end:-1:1))"), "olleJ\n");
    EXPECT_EQ(run("c = {1, 'a'}; c{4} = 3; disp(size(c)); disp(class(c{3}))"), "     1     4\ndouble\n");
    EXPECT_EQ(run("c = {1, 2, 3}; c(2) = []; disp(numel(c))"), "     2\n");
}

TEST(MatlabSemantics, IndexErrorsAreMatlabs) {
    Session s;
    EXPECT_EQ(s.error("x = 1:3; y = x(4);"),
              "Index exceeds the number of array elements. Index must not exceed 3.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = 1:3;\ny = x(0);"), "Array indices must be positive integers or logical values.\nError in snippet.m (line 2)\n");
    EXPECT_EQ(s.error("A = ones(2); A(3, 1)"), "Index in position 1 exceeds array bounds. Index must not exceed 2.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = 1:3; x(1.5)"), "Array indices must be positive integers or logical values.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("A = ones(2); A(5) = 1;"), "Attempt to grow array along ambiguous dimension.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = 1:3; x([1 2]) = [1 2 3];"),
              "Unable to perform assignment because the left and right sides have a different number of elements.\n"
              "Error in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("A = ones(2, 3); A(1, 2, 1, 1) = [];"), "A null assignment can have only one non-colon index.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("A = ones(3); A(1, 2) = [];"), "A null assignment can have only one non-colon index.\nError in snippet.m (line 1)\n");
}

TEST(MatlabSemantics, OperatorsFollowMatlab) {
    EXPECT_EQ(run("fprintf('%g ', [1 2 3] + [10; 20])"), "11 21 12 22 13 23 ");  // implicit expansion
    EXPECT_EQ(run("fprintf('%g ', [1 2; 3 4] * [1; 1])"), "3 7 ");
    EXPECT_EQ(run("fprintf('%g ', [4 -2; 1 1] \\ [2; 3])"), "1.33333 1.66667 ");
    EXPECT_EQ(run("fprintf('%g ', [1 2] / [1 2; 3 4])"), "1 0 ");
    EXPECT_EQ(run("fprintf('%g ', [1 1; 1 0]^5)"), "8 5 5 3 ");
    EXPECT_EQ(run("a = [1 2; 3 4]; b = [5 6; 7 8]; fprintf('%g ', a' * b, a * b', [1; 2]' * [3; 4], 2' * a)"),
              "26 38 30 44 17 39 23 53 11 2 6 4 8 ");  // transposed operands read in place
    EXPECT_EQ(run("disp(class(single(1) + 1)); disp(class(true + true)); disp(class([1 2] > 1))"), "single\ndouble\nlogical\n");
    EXPECT_EQ(run("fprintf('%g %g %g ', round(2.5), round(-2.5), fix(-2.5))"), "3 -3 -2 ");
    EXPECT_EQ(run("fprintf('%g %g ', mod(-7, 3), rem(-7, 3)); fprintf('%g ', mod(0.3, 0.1))"), "2 -1 0 ");
    EXPECT_EQ(run("fprintf('%g ', NaN == NaN, max([1 NaN 3]), sum([1 NaN]))"), "0 3 NaN ");
    // A host scalar computes what the executors compute (graph/op_reference.hpp), single included.
    EXPECT_EQ(run("a = single(5.3); b = single(0.7); fprintf('%.9g %.9g', mod(a, b), rem(-a, b))"),
              run("a = single(5.3); b = single(0.7); m = mod([a a], b); r = rem(-[a a], b); fprintf('%.9g %.9g', m(1), r(1))"));
    EXPECT_EQ(run("x = 0; if x ~= 0 && 1/x > 1, disp('no'), else, disp('short-circuit'), end"), "short-circuit\n");
    EXPECT_EQ(run("fprintf('%g ', 'a' + 1, ['ab'] == 'ab')"), "98 1 1 ");
    Session s;
    EXPECT_EQ(s.error("[1 2 3] + [1 2]"), "Error using +\nArrays have incompatible sizes for this operation.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = [1 2 3]' * [1 2]';"),
              "Error using *\nIncorrect dimensions for matrix multiplication. Check that the number of columns in the first "
              "matrix matches the number of rows in the second matrix. To operate on each element of the matrix individually, "
              "use TIMES (.*) for elementwise multiplication.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = {1} + 1;"),
              "Error using +\nOperator '+' is not supported for operands of type 'cell'.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("if [1 NaN], end"), "NaN's cannot be converted to logicals.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = [1 2] || 1;"),
              "Error using ||\nOperands to the || and && operators must be convertible to logical scalar values.\n"
              "Error in snippet.m (line 1)\n");
}

TEST(MatlabSemantics, ControlFlow) {
    EXPECT_EQ(run("s = 0; for k = 1:10, if mod(k, 2), continue, end, if k > 8, break, end, s = s + k; end, disp(s)"), "    20\n");
    EXPECT_EQ(run("for c = [1 2; 3 4], fprintf('%g,', c); fprintf(';'); end"), "1,3,;2,4,;");
    EXPECT_EQ(run("for k = [], disp('never'), end, for k = 5:-2:1, fprintf('%g ', k); end"), "5 3 1 ");
    EXPECT_EQ(run("k = 0; while true, k = k + 1; if k >= 3, break; end, end, disp(k)"), "     3\n");
    EXPECT_EQ(run("x = 'b'; switch x, case {'a', 'b'}, disp('ab'), otherwise, disp('other'), end"), "ab\n");
    EXPECT_EQ(run("x = 3; switch x, case 1, disp(1), case 3, disp('three'), end"), "three\n");
    EXPECT_EQ(run("try, error('my:id', 'bad %d', 7); catch e, disp(e.message); disp(e.identifier); end"), "bad 7\nmy:id\n");
    EXPECT_EQ(run("try, x = [1 2](3); catch, disp('caught'), end"), "caught\n");
    EXPECT_EQ(run("for k = 1:3, end, disp(k)"), "     3\n");
}

TEST(MatlabSemantics, FunctionsHandlesCellsAndStructs) {
    EXPECT_EQ(run("a = 2; f = @(x) a * x; a = 5; disp(f(3))"), "     6\n");
    EXPECT_EQ(run("f = @(x, y) x + y; g = @(h) h(1, 2); disp(g(f))"), "     3\n");
    EXPECT_EQ(run("f = @sin; fprintf('%g ', f(0), feval(@cos, 0), feval('abs', -2))"), "0 1 2 ");
    EXPECT_EQ(run("[m, i] = max([3 9 2]); fprintf('%g %g ', m, i); [~, j] = min([3 9 2]); disp(j)"), "9 2      3\n");
    EXPECT_EQ(run("[r, c] = size(ones(2, 3, 4)); fprintf('%g %g ', r, c)"), "2 12 ");
    EXPECT_EQ(run("s.a.b = 3; s.c = {1, 'x'}; fprintf('%g ', s.a.b, s.c{1}); disp(isfield(s, 'c'))"), "3 1    1\n");
    EXPECT_EQ(run("s = struct('n', 1, 'v', [1 2]); s.v(3) = 7; fprintf('%g ', s.v)"), "1 2 7 ");
    EXPECT_EQ(run("c = {1, 2, 3}; fprintf('%g ', c{:}); x = [c{:}]; disp(size(x))"), "1 2 3      1     3\n");
    EXPECT_EQ(run("c = cellfun(@(x) x * 2, {1, 2}); fprintf('%g ', c); d = arrayfun(@(x) x^2, 1:3); fprintf('%g ', d)"),
              "2 4 1 4 9 ");
    EXPECT_EQ(run("disp(func2str(@(x) x + 1))"), "@(x) x + 1\n");
    // Local functions with several outputs and nargin.
    EXPECT_EQ(run("[a, b] = two(3); fprintf('%g %g ', a, b); fprintf('%g', two(1));\n"
                  "function [s, p] = two(x, y)\n  if nargin < 2, y = 10; end\n  s = x + y;\n  p = x * y;\nend\n"),
              "13 30 11");
    EXPECT_EQ(run("disp(fact(5))\nfunction r = fact(n)\n  if n <= 1\n    r = 1;\n    return\n  end\n  r = n * fact(n - 1);\nend\n"),
              "   120\n");
}

TEST(MatlabSemantics, SortUniqueMedianDiagDiffMeshgrid) {
    EXPECT_EQ(run("[s, i] = sort([3 NaN 1 1]); fprintf('%g ', s, i)"), "1 1 3 NaN 3 4 1 2 ");
    EXPECT_EQ(run("fprintf('%g ', sort([3 NaN 1], 'descend'))"), "NaN 3 1 ");
    EXPECT_EQ(run("[u, i, j] = unique([3 1 NaN 3 NaN]); fprintf('%g ', u, i, j)"), "1 3 NaN NaN 2 1 3 5 2 1 3 2 4 ");
    EXPECT_EQ(run("fprintf('%g ', median([4 1 3 2]), median([1 5; 3 2; 8 4]))"), "2.5 3 4 ");
    EXPECT_EQ(run("fprintf('%g ', diag([1 2]), diag([1 2; 3 4], 1))"), "1 0 0 2 2 ");
    EXPECT_EQ(run("fprintf('%g ', diff([1 4 9 16], 2), size(diff(5)), size(diff([1; 2], 1, 2)))"), "2 2 0 0 2 0 ");
    EXPECT_EQ(run("[X, Y] = meshgrid(1:2, 5:7); fprintf('%g ', X, Y)"), "1 1 1 2 2 2 5 6 7 5 6 7 ");
    Session s;
    EXPECT_EQ(s.error("sort({1})"), "Error using sort\nsort: the input must be numeric or logical (got cell).\nError in snippet.m (line 1)\n");
}

TEST(MatlabSemantics, ErrorsNameTheFileTheFunctionAndTheLine) {
    const auto dir = std::filesystem::temp_directory_path() / "tandem-matlab-test";
    std::filesystem::create_directories(dir);
    {
        std::ofstream f(dir / "outer.m");
        f << "x = 1;\ny = inner(x);\n";
        std::ofstream g(dir / "inner.m");
        g << "function y = inner(x)\n  y = x + 1;\n  y = y + [1 2] * [3 4];\nend\n";
    }
    Session s;
    std::string report;
    try {
        s.in.run_file((dir / "outer.m").string());
    } catch (const mt::MatlabError& e) {
        report = e.report();
    }
    EXPECT_NE(report.find("Error using *\nIncorrect dimensions for matrix multiplication."), std::string::npos) << report;
    EXPECT_NE(report.find("inner.m (line 3)"), std::string::npos) << report;
    EXPECT_NE(report.find("outer.m (line 2)"), std::string::npos) << report;
    EXPECT_EQ(s.error("y = undefined_thing + 1;"), "Unrecognized function or variable 'undefined_thing'.\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("error('plain message')"), "plain message\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("x = zeros(2, 'int8');"), "Error using zeros\nUnsupported class 'int8' (double, single or logical).\nError in snippet.m (line 1)\n");
    EXPECT_EQ(s.error("f = @(x) x; f(1, 2)"), "Error using @(x) x\nToo many input arguments.\nError in snippet.m (line 1)\n");
    std::filesystem::remove_all(dir);
}

TEST(MatlabSemantics, TextFormatting) {
    EXPECT_EQ(run("fprintf('%d|%5.2f|%s|%c|%e\\n', 42, pi, 'abc', 'z', 1e-3)"), "42| 3.14|abc|z|1.000000e-03\n");
    EXPECT_EQ(run("fprintf('%d\\n', [1 2 3])"), "1\n2\n3\n");
    EXPECT_EQ(run("fprintf('%d %s\\n', 1, 'a', 2, 'b')"), "1 a\n2 b\n");
    EXPECT_EQ(run("fprintf('%d\\n', 1.5)"), "1.500000e+00\n");
    EXPECT_EQ(run("fprintf('no args %%\\n')"), "no args %\n");
    EXPECT_EQ(run("disp(sprintf('%g, ', [1 2]))"), "1, 2, \n");
    EXPECT_EQ(run("disp(num2str(pi)); disp(num2str(42)); disp(mat2str([1 2; 3 4.5]))"), "3.1416\n42\n[1 2;3 4.5]\n");
    EXPECT_EQ(run("disp(['x = ' num2str(3)])"), "x = 3\n");
    EXPECT_EQ(run("fprintf('%d %d\\n', Inf, -Inf); fprintf('%f\\n', NaN)"), "Inf -Inf\nNaN\n");
}

TEST(MatlabSemantics, GpuArraysWithoutADevice) {
    // On the CPU alone a gpuArray is still one (isa, isgpuarray, 'like'), of its underlying class,
    // not on a GPU; its values are its operand's, and gather gives them back as plain data.
    EXPECT_EQ(run("x = gpuArray([1 -0 NaN Inf]); y = x * 2;"
                  "fprintf('%d %d %d %d %s %s\\n', isa(y, 'gpuArray'), isgpuarray(y), existsOnGPU(y), isa(y, 'double'), class(y), classUnderlying(y));"
                  "z = gather(y); fprintf('%d %d|', isa(z, 'gpuArray'), isa([1 2], 'gpuArray')); fprintf('%g ', z);"),
              "1 1 0 1 double double\n0 0|2 -0 NaN Inf ");
    EXPECT_EQ(run("s = gpuArray(single(3)); fprintf('%d %s %g\\n', isgpuarray(s), classUnderlying(s), s / 2);"
                  "g = gather(s); fprintf('%d %s\\n', isgpuarray(g), class(g));"),
              "1 single 1.5\n0 single\n");
    // Constructors: 'gpuArray' as a class name, and 'like' a gpuArray.
    EXPECT_EQ(run("a = zeros(2, 3, 'gpuArray'); b = ones(2, 'single', 'gpuArray'); c = rand(3, 'like', b); d = zeros(1, 'gpuArray');"
                  "e = eye(2, 'like', [1 2]); f = true(2, 'gpuArray');"
                  "fprintf('%d %d %d %d %d %d\\n', isgpuarray(a), isgpuarray(b), isgpuarray(c), isgpuarray(d), isgpuarray(e), isgpuarray(f));"
                  "fprintf('%s %s %g %g\\n', class(b), class(c), sum(a(:)), d);"),
              "1 1 1 1 0 1\nsingle single 0 0\n");
    Session s;
    EXPECT_NE(s.error("gpuArray({1})").find("only numeric and logical arrays"), std::string::npos);
    EXPECT_NE(s.error("gpuDevice()").find("No supported GPU device"), std::string::npos);
}

TEST(MatlabSemantics, AReductionOfXColonIsXsOwn) {
    // sum(x(:)) reduces x whole, fused with what makes x (no reshape between): the same bits as
    // sum(x, 'all'), one region fewer.
    Session s;
    const std::string code = "x = gather(sin(reshape(1:30000, 100, 30, 10)) / 3);";
    s.run(code);
    const auto before = s.rt.metrics();
    const std::string a = s.run("y = exp(x); fprintf('%.17g %.17g %.17g\\n', sum(y(:)), mean(y(:)), max(y(:)))");
    const auto regions_colon = s.rt.metrics().regions_executed - before.regions_executed;
    const auto mid = s.rt.metrics();
    const std::string b = s.run("y = exp(x); fprintf('%.17g %.17g %.17g\\n', sum(y, 'all'), mean(y, 'all'), max(y, [], 'all'))");
    EXPECT_EQ(a, b);
    EXPECT_EQ(regions_colon, s.rt.metrics().regions_executed - mid.regions_executed);
}

TEST(MatlabSemantics, AScalarLoopStaysOnTheHost) {
    // A loop of scalars makes no graph: the runtime plans nothing until the result is printed.
    Session s;
    const auto before = s.rt.metrics();
    EXPECT_EQ(s.run("t = 0; for i = 1:20000, t = t + i * 0.5; end\nfprintf('%.17g\\n', t)"), "100005000\n");
    EXPECT_EQ(s.rt.metrics().plans, before.plans);
}

TEST(MatlabSemantics, ALiteralOfScalarsIsOneArrayOfTheirValues) {
    // [4 1; 1 3] is data, not a concatenation for the graph to run; the class as concatenation's.
    Session s;
    const auto before = s.rt.metrics();
    EXPECT_EQ(s.run("A = [4 -0 1; 1 3 NaN]; fprintf('%g ', A); fprintf('%s %s %s|', class(A), class([true false; false true]), class([single(1) 2; 3 4]));"
                    "fprintf('%d ', size([1 2; 3 4; 5 6]));"),
              "4 1 -0 3 1 NaN double logical single|3 2 ");
    EXPECT_EQ(s.rt.metrics().regions_executed, before.regions_executed);
    EXPECT_NE(s.error("x = [1 2; 3]").find("Dimensions of arrays being concatenated are not consistent."), std::string::npos);
    EXPECT_EQ(s.run("x = [1 2; [3 4]]; y = [[1; 2] [3; 4]]; fprintf('%g ', x, y);"), "1 3 2 4 1 2 3 4 ");
}

TEST(MatlabSemantics, ALoopOfArrayCodeIsOneFusedProgram) {
    // A loop whose body is array code builds the graph; the gather at the end runs it fused.
    Session s;
    const auto before = s.rt.metrics();
    EXPECT_EQ(s.run("x = ones(1000, 1); for k = 1:50, x = x * 1.01 + 0.5; end\nfprintf('%.6f\\n', sum(x))"),
              s.run("y = 1; for k = 1:50, y = y * 1.01 + 0.5; end\nfprintf('%.6f\\n', 1000 * y)"));
    const auto after = s.rt.metrics();
    EXPECT_LE(after.regions_executed - before.regions_executed, 3u) << "the 50 steps fused (and the sum)";
}
