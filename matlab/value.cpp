#include "matlab/value.hpp"

#include <cmath>

#include "matlab/errors.hpp"

namespace tandem::matlab {

using tandem::DType;

const Value* Struct::find(const std::string& name) const {
    for (const auto& [k, v] : fields)
        if (k == name) return &v;
    return nullptr;
}
Value* Struct::find(const std::string& name) {
    for (auto& [k, v] : fields)
        if (k == name) return &v;
    return nullptr;
}

Value scalar(double v, DType t) {
    Num n;
    n.dtype = t;
    n.scalar = t == DType::f32 ? static_cast<double>(static_cast<float>(v)) : t == DType::logical ? (v != 0 ? 1.0 : 0.0) : v;
    return n;
}
Value logical_scalar(bool b) { return scalar(b ? 1.0 : 0.0, DType::logical); }
Value char_row(const std::string& s) { return Chars{s, 1, static_cast<std::int64_t>(s.size()), false}; }

Value empty_matrix(tandem::Runtime& rt, DType t) {
    Num n;
    n.dtype = t;
    n.array = rt.zeros(tandem::Shape{0, 0}, t);
    return n;
}

Value from_array(tandem::Array a) {
    Num n;
    n.dtype = a.dtype();
    n.array = std::move(a);
    return n;
}

std::string class_name(const Value& v) {
    switch (v.v.index()) {
        case 0:
            switch (v.num().dtype) {
                case DType::f64: return "double";
                case DType::f32: return "single";
                case DType::logical: return "logical";
            }
            return "double";
        case 1: return v.chars().is_string ? "string" : "char";
        case 2: return "cell";
        case 3: return "struct";
        default: return "function_handle";
    }
}

bool is_gpu_array(const Value& v) { return v.is_num() && !v.num().host() && v.num().array.device_requested(); }

std::vector<std::int64_t> dims(const Value& v) {
    switch (v.v.index()) {
        case 0: {
            const Num& n = v.num();
            if (n.host()) return {1, 1};
            const tandem::Shape& s = n.array.shape();
            std::vector<std::int64_t> d;
            for (int k = 0; k < s.ndims(); ++k) d.push_back(s[k]);
            while (d.size() < 2) d.push_back(1);
            while (d.size() > 2 && d.back() == 1) d.pop_back();
            return d;
        }
        case 1: return v.chars().is_string ? std::vector<std::int64_t>{1, 1} : std::vector<std::int64_t>{v.chars().rows, v.chars().cols};
        case 2: return {v.cell().rows, v.cell().cols};
        default: return {1, 1};
    }
}

std::int64_t numel(const Value& v) {
    // (Without dims' vector: operators ask this of every operand.)
    switch (v.v.index()) {
        case 0: return v.num().host() ? 1 : v.num().array.numel();
        case 1: return v.chars().is_string ? 1 : v.chars().rows * v.chars().cols;
        case 2: return v.cell().rows * v.cell().cols;
        default: return 1;
    }
}
bool is_empty(const Value& v) { return numel(v) == 0; }
bool is_scalar(const Value& v) { return numel(v) == 1; }

tandem::Array to_array(tandem::Runtime& rt, const Num& n) {
    if (!n.host()) return n.array;
    return rt.scalar(n.scalar, n.dtype);
}

Num to_num(tandem::Runtime& rt, const Value& v, const char* what) {
    if (v.is_num()) return v.num();
    if (v.is_chars() && !v.chars().is_string) {
        const Chars& c = v.chars();
        if (c.data.size() == 1) return std::get<Num>(scalar(static_cast<unsigned char>(c.data[0])).v);
        std::vector<double> codes;
        codes.reserve(c.data.size());
        for (char ch : c.data) codes.push_back(static_cast<unsigned char>(ch));
        Num n;
        n.array = rt.array(codes, tandem::Shape{c.rows, c.cols});
        return n;
    }
    throw MatlabError(std::string(what) + ": expected a number, got a value of class " + class_name(v) + ".",
                      "MATLAB:invalidType");
}

tandem::HostArray gather(tandem::Runtime& rt, const Num& n) {
    return to_array(rt, n).gather().get();
}

std::vector<double> to_doubles(tandem::Runtime& rt, const Value& v, const char* what) {
    const Num n = to_num(rt, v, what);
    if (n.host()) return {n.scalar};
    return gather(rt, n).to_doubles();
}

double to_scalar(tandem::Runtime& rt, const Value& v, const char* what) {
    if (v.is_num() && v.num().host()) return v.num().scalar;
    const auto d = to_doubles(rt, v, what);
    if (d.size() != 1)
        throw MatlabError(std::string(what) + " must be a scalar (it has " + std::to_string(d.size()) + " elements).",
                          "MATLAB:expectedScalar");
    return d[0];
}

std::string to_text(const Value& v, const char* what) {
    if (v.is_chars() && v.chars().rows <= 1) return v.chars().data;
    throw MatlabError(std::string(what) + " must be a character vector or string scalar.", "MATLAB:invalidInput");
}

bool is_true(tandem::Runtime& rt, const Value& v, const char* what) {
    if (v.is_num() && v.num().host()) {
        const double x = v.num().scalar;
        if (std::isnan(x)) throw MatlabError("NaN's cannot be converted to logicals.", "MATLAB:nologicalnan");
        return x != 0;
    }
    if (v.is_cell() || v.is_struct() || v.is_handle())
        throw MatlabError(std::string("Conversion to logical from ") + class_name(v) + " is not possible (" + what + ").",
                          "MATLAB:invalidConversion");
    const auto d = to_doubles(rt, v, what);
    if (d.empty()) return false;
    for (double x : d) {
        if (std::isnan(x)) throw MatlabError("NaN's cannot be converted to logicals.", "MATLAB:nologicalnan");
        if (x == 0) return false;
    }
    return true;
}

}  // namespace tandem::matlab
