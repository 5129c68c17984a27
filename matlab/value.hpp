// The values of the MATLAB front end. Numbers and logicals are Tandem arrays (lazy: statements
// build the graph, and whole loops of array code fuse) or, for scalars the host computes alone,
// plain doubles: a scalar loop (`s = s + i*0.5`) runs at the host's speed without a graph.
// Char arrays, cells, structs and function handles live on the host.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "matlab/ast.hpp"
#include "tandem/tandem.hpp"

namespace tandem::matlab {

struct Value;

/// A double, single or logical: a host scalar, or a Tandem array.
struct Num {
    tandem::Array array;  ///< valid unless a host scalar
    double scalar = 0;    ///< the host scalar (a single's value is a float's)
    tandem::DType dtype = tandem::DType::f64;
    bool host() const noexcept { return !array.valid(); }
};

/// A char array (rows x cols, column-major), or a string scalar ("..."): `text` row by row for a
/// single row.
struct Chars {
    std::string data;
    std::int64_t rows = 1, cols = 0;
    bool is_string = false;
};

struct Cell {
    std::vector<Value> items;  ///< column-major
    std::int64_t rows = 0, cols = 0;
};

/// A 1x1 struct: its fields in the order they were made.
struct Struct {
    std::vector<std::pair<std::string, Value>> fields;
    const Value* find(const std::string& name) const;
    Value* find(const std::string& name);
};

struct Callable {
    std::string name;  ///< a named function (`@sin`), or empty for an anonymous one
    std::vector<std::string> params;
    ExprPtr body;
    std::map<std::string, Value> captured;  ///< the variables the body names, when it was made
    std::string text;                       ///< `@(x) x.^2`
    std::string file;                       ///< where it was written (its local functions are visible)
};

struct Handle {
    std::shared_ptr<const Callable> fn;
};

struct Value {
    std::variant<Num, Chars, Cell, Struct, Handle> v;

    Value() : v(Num{}) {}
    Value(Num n) : v(std::move(n)) {}        // NOLINT
    Value(Chars c) : v(std::move(c)) {}      // NOLINT
    Value(Cell c) : v(std::move(c)) {}       // NOLINT
    Value(Struct s) : v(std::move(s)) {}     // NOLINT
    Value(Handle h) : v(std::move(h)) {}     // NOLINT

    bool is_num() const { return std::holds_alternative<Num>(v); }
    bool is_chars() const { return std::holds_alternative<Chars>(v); }
    bool is_cell() const { return std::holds_alternative<Cell>(v); }
    bool is_struct() const { return std::holds_alternative<Struct>(v); }
    bool is_handle() const { return std::holds_alternative<Handle>(v); }
    const Num& num() const { return std::get<Num>(v); }
    const Chars& chars() const { return std::get<Chars>(v); }
    const Cell& cell() const { return std::get<Cell>(v); }
    Cell& cell() { return std::get<Cell>(v); }
    const Struct& strukt() const { return std::get<Struct>(v); }
    Struct& strukt() { return std::get<Struct>(v); }
    const Handle& handle() const { return std::get<Handle>(v); }
};

// ---- construction and inspection -------------------------------------------------------------

Value scalar(double v, tandem::DType t = tandem::DType::f64);
Value logical_scalar(bool b);
Value char_row(const std::string& s);
/// The 0x0 double `[]`.
Value empty_matrix(tandem::Runtime& rt, tandem::DType t = tandem::DType::f64);
Value from_array(tandem::Array a);

/// MATLAB's class name: double, single, logical, char, string, cell, struct, function_handle.
std::string class_name(const Value& v);
/// A gpuArray (made by gpuArray, or computed from one): an array asked to live on a device.
bool is_gpu_array(const Value& v);
/// The dimensions (at least two).
std::vector<std::int64_t> dims(const Value& v);
std::int64_t numel(const Value& v);
bool is_empty(const Value& v);
bool is_scalar(const Value& v);

/// A Num as a Tandem array (a host scalar made one), on `rt`.
tandem::Array to_array(tandem::Runtime& rt, const Num& n);
/// A number, logical or char array as a Num (chars are their codes, as doubles); else MatlabError
/// naming `what`.
Num to_num(tandem::Runtime& rt, const Value& v, const char* what);
/// The elements as doubles (gathered: the host needs them).
std::vector<double> to_doubles(tandem::Runtime& rt, const Value& v, const char* what);
/// One real scalar (an error naming `what` otherwise).
double to_scalar(tandem::Runtime& rt, const Value& v, const char* what);
/// A char row as text (an error naming `what` otherwise).
std::string to_text(const Value& v, const char* what);
/// MATLAB's truth of a condition: nonempty and every element nonzero (NaN is an error).
bool is_true(tandem::Runtime& rt, const Value& v, const char* what);
/// The value with its data on the host (numbers gathered into host form).
tandem::HostArray gather(tandem::Runtime& rt, const Num& n);

}  // namespace tandem::matlab
