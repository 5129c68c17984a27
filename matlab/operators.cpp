#include "matlab/operators.hpp"

#include <cmath>
#include <limits>

#include "graph/generators.hpp"
#include "matlab/errors.hpp"
#include "matlab/linear_solve.hpp"

namespace tandem::matlab {

using tandem::Array;
using tandem::DType;

namespace {

bool is_single(const Value& v) { return v.is_num() && v.num().dtype == DType::f32; }

double host_binary(BinaryOp op, double x, double y) {
    switch (op) {
        case BinaryOp::add: return x + y;
        case BinaryOp::sub: return x - y;
        case BinaryOp::mtimes: case BinaryOp::times: return x * y;
        case BinaryOp::mrdivide: case BinaryOp::rdivide: return x / y;
        case BinaryOp::mldivide: case BinaryOp::ldivide: return y / x;
        case BinaryOp::mpower: case BinaryOp::power: return std::pow(x, y);
        case BinaryOp::eq: return x == y;
        case BinaryOp::ne: return x != y;
        case BinaryOp::lt: return x < y;
        case BinaryOp::le: return x <= y;
        case BinaryOp::gt: return x > y;
        case BinaryOp::ge: return x >= y;
        case BinaryOp::and_: case BinaryOp::andand: return (x != 0) && (y != 0);
        case BinaryOp::or_: case BinaryOp::oror: return (x != 0) || (y != 0);
    }
    return 0;
}

bool is_comparison(BinaryOp op) {
    return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le || op == BinaryOp::gt ||
           op == BinaryOp::ge;
}
bool is_logical_op(BinaryOp op) {
    return op == BinaryOp::and_ || op == BinaryOp::or_ || op == BinaryOp::andand || op == BinaryOp::oror;
}

[[noreturn]] void incompatible(BinaryOp op) {
    throw MatlabError("Arrays have incompatible sizes for this operation.", "MATLAB:sizeDimensionsMustMatch", op_name(op));
}

Array elementwise(BinaryOp op, const tandem::Operand& a, const tandem::Operand& b) {
    switch (op) {
        case BinaryOp::add: return tandem::plus(a, b);
        case BinaryOp::sub: return tandem::minus(a, b);
        case BinaryOp::mtimes: case BinaryOp::times: return tandem::times(a, b);
        case BinaryOp::mrdivide: case BinaryOp::rdivide: return tandem::rdivide(a, b);
        case BinaryOp::mldivide: case BinaryOp::ldivide: return tandem::ldivide(a, b);
        case BinaryOp::mpower: case BinaryOp::power: return tandem::power(a, b);
        case BinaryOp::eq: return tandem::eq(a, b);
        case BinaryOp::ne: return tandem::ne(a, b);
        case BinaryOp::lt: return tandem::lt(a, b);
        case BinaryOp::le: return tandem::le(a, b);
        case BinaryOp::gt: return tandem::gt(a, b);
        case BinaryOp::ge: return tandem::ge(a, b);
        case BinaryOp::and_: case BinaryOp::andand: return tandem::logical_and(a, b);
        case BinaryOp::or_: case BinaryOp::oror: return tandem::logical_or(a, b);
    }
    throw MatlabError("internal: an unknown operator");
}

bool is_2d(const Value& v) { return dims(v).size() == 2; }

/// Matrix power A^p of a square matrix and an integer p (repeated squaring; p < 0 inverts).
Value matrix_power(tandem::Runtime& rt, const Value& a, double p) {
    const auto d = dims(a);
    if (d.size() != 2 || d[0] != d[1])
        throw MatlabError("Incorrect dimensions for raising a matrix to a power. Check that the matrix is square and the "
                          "power is a scalar. To operate on each element of the matrix individually, use POWER (.^) for "
                          "elementwise power.",
                          "MATLAB:mpower:notScalarAndSquareMatrix", "^");
    if (p != std::floor(p) || !std::isfinite(p))
        throw MatlabError("Non-integer powers of a matrix are not supported (they need complex results).",
                          "MATLAB:mpower:notInteger", "^");
    Value base = a;
    if (p < 0) {
        base = solve(rt, a, from_array(eye(rt, d[0], to_num(rt, a, "^").dtype)), "^");
        p = -p;
    }
    Array result = eye(rt, d[0], to_num(rt, base, "^").dtype);
    Array x = to_array(rt, to_num(rt, base, "^"));
    auto e = static_cast<std::uint64_t>(p);
    bool first = true;
    while (e) {
        if (e & 1u) {
            result = first ? x : tandem::matmul(result, x);
            first = false;
        }
        e >>= 1u;
        if (e) x = tandem::matmul(x, x);
    }
    return from_array(result);
}

}  // namespace

DType result_type(const Value& a, const Value& b) { return is_single(a) || is_single(b) ? DType::f32 : DType::f64; }

Array as_type(tandem::Runtime& rt, const Num& n, DType t) {
    Array a = to_array(rt, n);
    return a.dtype() == t ? a : tandem::astype(a, t);
}

Value binary(tandem::Runtime& rt, BinaryOp op, const Value& a, const Value& b) {
    if (!(a.is_num() || a.is_chars()) || !(b.is_num() || b.is_chars()) || (a.is_chars() && a.chars().is_string) ||
        (b.is_chars() && b.chars().is_string)) {
        const Value& bad = (a.is_num() || (a.is_chars() && !a.chars().is_string)) ? b : a;
        throw MatlabError(std::string("Operator '") + op_name(op) + "' is not supported for operands of type '" +
                              class_name(bad) + "'.",
                          "MATLAB:UndefinedFunction", op_name(op));
    }
    const Num x = to_num(rt, a, op_name(op)), y = to_num(rt, b, op_name(op));
    const DType t = result_type(a, b);
    if (x.host() && y.host()) {
        if (is_logical_op(op) && (std::isnan(x.scalar) || std::isnan(y.scalar)))
            throw MatlabError("NaN's cannot be converted to logicals.", "MATLAB:nologicalnan", op_name(op));
        const double r = host_binary(op, x.scalar, y.scalar);
        if (is_comparison(op) || is_logical_op(op)) return logical_scalar(r != 0);
        return scalar(r, t);
    }
    // Matrix operators of two non-scalars.
    const bool xs = is_scalar(a), ys = is_scalar(b);
    try {
        if (op == BinaryOp::mtimes && !xs && !ys) {
            const auto da = dims(a), db = dims(b);
            if (da.size() != 2 || db.size() != 2 || da[1] != db[0])
                throw MatlabError("Incorrect dimensions for matrix multiplication. Check that the number of columns in the "
                                  "first matrix matches the number of rows in the second matrix. To operate on each "
                                  "element of the matrix individually, use TIMES (.*) for elementwise multiplication.",
                                  "MATLAB:innerdim", "*");
            return from_array(tandem::matmul(as_type(rt, x, t), as_type(rt, y, t)));
        }
        if (op == BinaryOp::mldivide && !xs) return solve(rt, a, b, "\\");
        if (op == BinaryOp::mrdivide && !ys) return transpose(rt, solve(rt, transpose(rt, b), transpose(rt, a), "/"));
        if (op == BinaryOp::mpower && !(xs && ys)) {
            if (!ys || !is_2d(a)) matrix_power(rt, a, std::numeric_limits<double>::quiet_NaN());  // its error
            return matrix_power(rt, a, to_scalar(rt, b, "^"));
        }
        // Elementwise: a host scalar stays a scalar operand (it folds into the kernel).
        // (A double array meets a single: it computes in single, as MATLAB's result is single.)
        auto operand = [&](const Num& n) -> tandem::Operand {
            if (n.host()) return n.scalar;
            return n.dtype == DType::f64 && t == DType::f32 ? tandem::single(n.array) : n.array;
        };
        Array r = elementwise(op, operand(x), operand(y));
        if (!is_comparison(op) && !is_logical_op(op) && r.dtype() != t) r = tandem::astype(r, t);
        return from_array(r);
    } catch (const tandem::ShapeError&) {
        incompatible(op);
    }
}

Value unary(tandem::Runtime& rt, UnaryOp op, const Value& a) {
    if (op == UnaryOp::plus && a.is_num()) return a;
    const Num x = to_num(rt, a, op_name(op));
    if (x.host()) {
        switch (op) {
            case UnaryOp::neg: return scalar(-x.scalar, x.dtype == DType::logical ? DType::f64 : x.dtype);
            case UnaryOp::plus: return scalar(x.scalar, x.dtype == DType::logical ? DType::f64 : x.dtype);
            case UnaryOp::not_:
                if (std::isnan(x.scalar)) throw MatlabError("NaN's cannot be converted to logicals.", "MATLAB:nologicalnan", "~");
                return logical_scalar(x.scalar == 0);
        }
    }
    switch (op) {
        case UnaryOp::neg: {
            Array r = x.dtype == DType::logical ? tandem::as_double(x.array) : x.array;
            return from_array(tandem::uminus(r));
        }
        case UnaryOp::plus: return from_array(x.dtype == DType::logical ? tandem::as_double(x.array) : x.array);
        case UnaryOp::not_: return from_array(tandem::logical_not(x.array));
    }
    return a;
}

Value transpose(tandem::Runtime& rt, const Value& a) {
    if (a.is_num()) {
        const Num& n = a.num();
        if (n.host()) return a;
        if (dims(a).size() > 2) throw MatlabError("Transpose on ND array is not defined. Use PERMUTE instead.", "MATLAB:transpose:NDArray", "transpose");
        return from_array(tandem::transpose(n.array));
    }
    if (a.is_chars()) {
        const Chars& c = a.chars();
        Chars t{std::string(c.data.size(), ' '), c.cols, c.rows, c.is_string};
        for (std::int64_t i = 0; i < c.rows; ++i)
            for (std::int64_t j = 0; j < c.cols; ++j)
                t.data[static_cast<std::size_t>(j + c.cols * i)] = c.data[static_cast<std::size_t>(i + c.rows * j)];
        return t;
    }
    if (a.is_cell()) {
        const Cell& c = a.cell();
        Cell t;
        t.rows = c.cols;
        t.cols = c.rows;
        t.items.resize(c.items.size());
        for (std::int64_t i = 0; i < c.rows; ++i)
            for (std::int64_t j = 0; j < c.cols; ++j)
                t.items[static_cast<std::size_t>(j + c.cols * i)] = c.items[static_cast<std::size_t>(i + c.rows * j)];
        return t;
    }
    (void)rt;
    throw MatlabError("Transpose is not defined for values of class " + class_name(a) + ".", "MATLAB:UndefinedFunction", "transpose");
}

Value range(tandem::Runtime& rt, const Value& first, const Value* step, const Value& last) {
    auto one = [&](const Value& v) {
        if (v.is_num() && v.num().host()) return v.num().scalar;
        const auto d = to_doubles(rt, v, ":");
        if (d.empty()) return std::numeric_limits<double>::quiet_NaN();  // an empty operand: an empty range
        return d[0];
    };
    const double a = one(first), s = step ? one(*step) : 1.0, b = one(last);
    const DType t = result_type(first, last) == DType::f32 || (step && is_single(*step)) ? DType::f32 : DType::f64;
    if (std::isnan(a) || std::isnan(s) || std::isnan(b)) {
        if (is_empty(first) || is_empty(last) || (step && is_empty(*step))) return from_array(rt.zeros({1, 0}, t));
        throw MatlabError("NaN in a colon expression's operands.", "MATLAB:colon:nonFiniteEndpoint", ":");
    }
    try {
        Array r = rt.colon(a, s, b);
        return from_array(t == DType::f32 ? tandem::single(r) : r);
    } catch (const tandem::ValueError& e) {
        throw MatlabError(std::string("Maximum variable size allowed is exceeded (") + e.what() + ").", "MATLAB:array:SizeLimitExceeded", ":");
    }
}

namespace {

Value concat_chars(const std::vector<Value>& items, int dim) {
    Chars out;
    out.rows = 0;
    out.cols = 0;
    std::vector<std::string> rows;
    for (const Value& v : items) {
        std::string text;
        std::int64_t r = 1, c = 0;
        if (v.is_chars()) {
            text = v.chars().data;
            r = v.chars().rows;
            c = v.chars().cols;
        } else {
            const Num& n = v.num();
            if (!n.host()) throw MatlabError("internal: a numeric array in a char concatenation must be gathered first");
            text = std::string(1, static_cast<char>(static_cast<int>(n.scalar)));
            c = 1;
        }
        if (r * c == 0) continue;
        if (dim == 2) {
            if (out.cols == 0) out.rows = r;
            else if (r != out.rows) throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
            out.data += text;  // column-major: appending columns appends their data
            out.cols += c;
        } else {
            if (out.rows == 0) out.cols = c;
            else if (c != out.cols)
                throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
            // Interleave: rebuild column-major data with the new rows under the old.
            std::string merged(static_cast<std::size_t>((out.rows + r) * c), ' ');
            for (std::int64_t j = 0; j < c; ++j) {
                for (std::int64_t i = 0; i < out.rows; ++i)
                    merged[static_cast<std::size_t>(i + (out.rows + r) * j)] = out.data[static_cast<std::size_t>(i + out.rows * j)];
                for (std::int64_t i = 0; i < r; ++i)
                    merged[static_cast<std::size_t>(out.rows + i + (out.rows + r) * j)] = text[static_cast<std::size_t>(i + r * j)];
            }
            out.data = std::move(merged);
            out.rows += r;
        }
    }
    if (out.rows == 0 && out.cols == 0) {
        out.rows = 0;
    }
    return out;
}

}  // namespace

Value concatenate(tandem::Runtime& rt, const std::vector<Value>& items, int dim) {
    if (items.size() == 1) return items[0];
    bool any_cell = false, any_chars = false, any_single = false, all_logical = true, all_host = true;
    for (const Value& v : items) {
        if (v.is_struct() || v.is_handle())
            throw MatlabError("Concatenation of values of class " + class_name(v) + " is not supported.", "MATLAB:concatenation");
        any_cell = any_cell || v.is_cell();
        any_chars = any_chars || v.is_chars();
        if (v.is_num()) {
            any_single = any_single || v.num().dtype == DType::f32;
            all_logical = all_logical && v.num().dtype == DType::logical;
            all_host = all_host && v.num().host();
        } else {
            all_logical = false;
        }
    }
    if (any_cell) {
        Cell out;
        for (const Value& v : items) {
            Cell c;
            if (v.is_cell()) {
                c = v.cell();
            } else {
                c.rows = c.cols = 1;
                c.items.push_back(v);
            }
            if (c.items.empty()) continue;
            if (out.items.empty()) {
                out = c;
                continue;
            }
            if (dim == 2) {
                if (c.rows != out.rows) throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
                out.items.insert(out.items.end(), c.items.begin(), c.items.end());
                out.cols += c.cols;
            } else {
                if (c.cols != out.cols) throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
                std::vector<Value> merged;
                for (std::int64_t j = 0; j < out.cols; ++j) {
                    for (std::int64_t i = 0; i < out.rows; ++i) merged.push_back(out.items[static_cast<std::size_t>(i + out.rows * j)]);
                    for (std::int64_t i = 0; i < c.rows; ++i) merged.push_back(c.items[static_cast<std::size_t>(i + c.rows * j)]);
                }
                out.items = std::move(merged);
                out.rows += c.rows;
            }
        }
        return out;
    }
    if (any_chars) {
        std::vector<Value> gathered;
        for (const Value& v : items) {
            if (v.is_num() && !v.num().host()) {
                const auto d = to_doubles(rt, v, "concatenation");
                const auto sz = dims(v);
                std::string s;
                for (double x : d) s += static_cast<char>(static_cast<int>(x));
                gathered.push_back(Chars{s, sz[0], sz[1], false});
            } else {
                gathered.push_back(v);
            }
        }
        return concat_chars(gathered, dim);
    }
    const DType t = any_single ? DType::f32 : all_logical ? DType::logical : DType::f64;
    if (all_host) {
        std::vector<double> data;
        for (const Value& v : items) data.push_back(v.num().scalar);
        const auto n = static_cast<std::int64_t>(data.size());
        const tandem::Shape shape = dim == 2 ? tandem::Shape{1, n} : tandem::Shape{n, 1};
        Array a = rt.array(data, shape);
        return from_array(t == DType::f64 ? a : tandem::astype(a, t));
    }
    std::vector<Array> arrays;
    for (const Value& v : items) {
        if (dims(v) == std::vector<std::int64_t>{0, 0}) continue;  // [] is skipped
        arrays.push_back(as_type(rt, v.num(), t));
    }
    if (arrays.empty()) return empty_matrix(rt, t);
    if (arrays.size() == 1) return from_array(arrays[0]);
    try {
        return from_array(dim == 2 ? tandem::horzcat(arrays) : tandem::vertcat(arrays));
    } catch (const tandem::ShapeError&) {
        throw MatlabError("Dimensions of arrays being concatenated are not consistent.", "MATLAB:catenate:dimensionMismatch");
    }
}

}  // namespace tandem::matlab
