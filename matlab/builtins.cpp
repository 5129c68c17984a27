// The interpreter's builtins: the C++ API under its MATLAB names, and MATLAB's own (disp,
// fprintf, class, error, tic/toc, gpuArray, ...). A builtin gets its arguments and the number of
// outputs asked; host scalars take a host path where the API would make a graph node for a
// single number (sqrt(2) in a scalar loop).
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <regex>

#include "graph/op_reference.hpp"
#include "matlab/builtins.hpp"
#include "matlab/indexing.hpp"
#include "matlab/interpreter.hpp"
#include "matlab/linear_solve.hpp"
#include "matlab/operators.hpp"

namespace tandem::matlab {

using tandem::Array;
using tandem::DType;
namespace reference = tandem::detail::reference;

namespace {


Array arr(Interpreter& I, const Value& v, const char* what) { return to_array(I.runtime(), to_num(I.runtime(), v, what)); }

bool host_scalar(const Value& v) { return v.is_num() && v.num().host(); }

/// A positive integer dimension argument.
int dim_of(Interpreter& I, const Value& v) {
    const double d = num1(I, v, "dim");
    if (!(d >= 1) || d != std::floor(d) || d > 64) fail("Dimension argument must be a positive integer scalar within indexing range.", "MATLAB:getdimarg:dimensionMustBePositiveInteger");
    return static_cast<int>(d);
}


DType dtype_named(const std::string& s) {
    if (s == "double") return DType::f64;
    if (s == "single") return DType::f32;
    if (s == "logical") return DType::logical;
    fail("Unsupported class '" + s + "' (double, single or logical).", "MATLAB:invalidClass");
}

/// What a sized constructor's arguments ask for.
struct SizeArgs {
    tandem::Shape shape;
    DType type;
    bool device;  ///< 'gpuArray', or 'like' a gpuArray: the result is one (tandem::to_device)
};

/// A constructor's array, a gpuArray when asked for.
Value made(Array a, bool device) { return from_array(device ? tandem::to_device(a) : std::move(a)); }

/// zeros(n), zeros(m, n, ...), zeros([m n ...]), with trailing class names ('single',
/// 'gpuArray') or 'like', x.
SizeArgs size_args(Interpreter& I, Args a, DType t = DType::f64) {
    bool device = false;
    if (a.size() >= 2 && is_text(a[a.size() - 2], "like")) {
        const Value& like = a.back();
        t = to_num(I.runtime(), like, "like").dtype;
        device = is_gpu_array(like);
        a.resize(a.size() - 2);
    }
    while (!a.empty() && a.back().is_chars()) {
        if (a.back().chars().data == "gpuArray") device = true;
        else t = dtype_named(a.back().chars().data);
        a.pop_back();
    }
    std::vector<std::int64_t> d;
    auto extent = [](double x) {
        if (std::isnan(x)) fail("Size inputs must be finite integers (NaN).", "MATLAB:NonIntegerInput");
        if (x != std::floor(x)) fail("Size inputs must be integers.", "MATLAB:NonIntegerInput");
        return static_cast<std::int64_t>(std::max(0.0, x));
    };
    if (a.empty()) d = {1, 1};
    else if (a.size() == 1) {
        const auto v = to_doubles(I.runtime(), a[0], "size");
        if (v.size() == 1) d = {extent(v[0]), extent(v[0])};
        else for (double x : v) d.push_back(extent(x));
    } else {
        for (const Value& v : a) d.push_back(extent(num1(I, v, "size")));
    }
    while (d.size() < 2) d.push_back(1);
    return {tandem::Shape(d), t, device};
}

Value result(Array a) { return from_array(std::move(a)); }

// ---- elementwise math: a host path for scalars, the API's op for arrays -----------------------

using HostFn = double (*)(double);
using ArrayFn = Array (*)(const Array&);

double fix_of(double x) { return std::trunc(x); }
double round_of(double x) { return std::round(x); }

Builtin unary_math(HostFn h, ArrayFn f, bool logical_result = false) {
    return [h, f, logical_result](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        const Num n = to_num(I.runtime(), a[0], "argument");
        if (n.host()) {
            const double r = h(n.scalar);
            if (logical_result) return {logical_scalar(r != 0)};
            return {scalar(r, n.dtype == DType::f32 ? DType::f32 : DType::f64)};
        }
        return {result(f(n.array))};
    };
}

/// `h`, `h32`: the op on two host scalars in double and in single (the executors' definitions,
/// graph/op_reference.hpp; no h32: computed in double, rounded).
Builtin binary_math(Array (*f)(const tandem::Operand&, const tandem::Operand&), double (*h)(double, double),
                    float (*h32)(float, float) = nullptr) {
    return [f, h, h32](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 2);
        const Num x = to_num(I.runtime(), a[0], "argument"), y = to_num(I.runtime(), a[1], "argument");
        const DType t = result_type(a[0], a[1]);
        if (x.host() && y.host()) {
            if (t == DType::f32 && h32) return {scalar(h32(static_cast<float>(x.scalar), static_cast<float>(y.scalar)), t)};
            return {scalar(h(x.scalar, y.scalar), t)};
        }
        try {
            const tandem::Operand ox = x.host() ? tandem::Operand(x.scalar) : tandem::Operand(x.array);
            const tandem::Operand oy = y.host() ? tandem::Operand(y.scalar) : tandem::Operand(y.array);
            Array r = f(ox, oy);
            if (r.dtype() != t && r.dtype() != DType::logical) r = tandem::astype(r, t);
            return {result(r)};
        } catch (const tandem::ShapeError&) {
            fail("Arrays have incompatible sizes for this operation.", "MATLAB:sizeDimensionsMustMatch");
        }
    };
}

// ---- reductions --------------------------------------------------------------------------------

using Reduce1 = Array (*)(const Array&, tandem::NanFlag);
using ReduceDim = Array (*)(const Array&, int, tandem::NanFlag);
using ReduceAll = Array (*)(const Array&, tandem::AllDims, tandem::NanFlag);

Builtin reduction(Reduce1 f, ReduceDim fd, ReduceAll fa, bool keeps_single, double empty_value) {
    return [=](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 4);
        tandem::NanFlag nan = tandem::NanFlag::includenan;
        while (a.size() > 1 && a.back().is_chars()) {
            const std::string flag = a.back().chars().data;
            if (flag == "omitnan") nan = tandem::NanFlag::omitnan;
            else if (flag == "includenan") nan = tandem::NanFlag::includenan;
            else if (flag == "all") break;
            else if (flag != "double" && flag != "native" && flag != "default") fail("Unknown option '" + flag + "'.");
            a.pop_back();
        }
        const Num n = to_num(I.runtime(), a[0], "argument");
        if (n.host() && a.size() == 1) {
            const double x = n.scalar;
            (void)empty_value;
            const double r = nan == tandem::NanFlag::omitnan && std::isnan(x) ? empty_value : x;
            return {scalar(r, keeps_single && n.dtype == DType::f32 ? DType::f32 : DType::f64)};
        }
        Array x = to_array(I.runtime(), n);
        if (a.size() == 1) return {result(f(x, nan))};
        if (is_text(a[1], "all")) return {result(fa(x, tandem::all_dims, nan))};
        return {result(fd(x, dim_of(I, a[1]), nan))};
    };
}

Out minmax(Interpreter& I, Args& a, int nargout, bool is_max) {
    need(a, 1, 3);
    const char* name = is_max ? "max" : "min";
    if (a.size() == 2 && !(a[1].is_num() && is_empty(a[1]) && dims(a[1]) == std::vector<std::int64_t>{0, 0})) {
        return binary_math(is_max ? static_cast<Array (*)(const tandem::Operand&, const tandem::Operand&)>(tandem::max)
                                  : static_cast<Array (*)(const tandem::Operand&, const tandem::Operand&)>(tandem::min),
                           is_max ? reference::max<double> : reference::min<double>)(I, a, 1);
    }
    const Num n = to_num(I.runtime(), a[0], name);
    if (n.host() && a.size() == 1) {
        if (nargout >= 2) return {a[0], scalar(1)};
        return {a[0]};
    }
    Array x = to_array(I.runtime(), n);
    const bool has_dim = a.size() == 3;
    if (has_dim && is_text(a[2], "all")) return {result(is_max ? tandem::max(x, tandem::all_dims) : tandem::min(x, tandem::all_dims))};
    const int dim = has_dim ? dim_of(I, a[2]) : 0;
    if (nargout >= 2) {
        const tandem::ValueIndex vi = has_dim ? (is_max ? tandem::max_index(x, dim) : tandem::min_index(x, dim))
                                              : (is_max ? tandem::max_index(x) : tandem::min_index(x));
        return {result(vi.value), result(vi.index)};
    }
    if (has_dim) return {result(is_max ? tandem::max(x, tandem::Empty{}, dim) : tandem::min(x, tandem::Empty{}, dim))};
    return {result(is_max ? tandem::max(x) : tandem::min(x))};
}

// ---- comparison of whole values ------------------------------------------------------------

bool equal_values(Interpreter& I, const Value& x, const Value& y) {
    if (x.v.index() != y.v.index()) {
        const bool numlike = (x.is_num() || x.is_chars()) && (y.is_num() || y.is_chars());
        if (!numlike) return false;
    }
    if (dims(x) != dims(y)) return false;
    if (x.is_cell()) {
        for (std::size_t k = 0; k < x.cell().items.size(); ++k)
            if (!equal_values(I, x.cell().items[k], y.cell().items[k])) return false;
        return true;
    }
    if (x.is_struct()) {
        const auto& a = x.strukt().fields;
        const auto& b = y.strukt();
        if (a.size() != b.fields.size()) return false;
        for (const auto& [k, v] : a) {
            const Value* w = b.find(k);
            if (!w || !equal_values(I, v, *w)) return false;
        }
        return true;
    }
    if (x.is_handle()) return x.handle().fn == y.handle().fn;
    const auto a = to_doubles(I.runtime(), x, "isequal"), b = to_doubles(I.runtime(), y, "isequal");
    return a == b;  // NaN is not equal to NaN, as in MATLAB
}

Value size_value(Interpreter& I, const std::vector<std::int64_t>& d) {
    std::vector<double> v(d.begin(), d.end());
    return from_array(I.runtime().array(v, tandem::Shape{1, static_cast<std::int64_t>(v.size())}));
}

Value make_struct(Args& a) {
    if (a.size() % 2) fail("Field and value input arguments must come in pairs.", "MATLAB:struct:FieldValuePairs");
    Struct s;
    for (std::size_t k = 0; k < a.size(); k += 2) {
        const std::string name = text_arg(a[k], "a field name");
        Value v = a[k + 1];
        // struct('a', {x}) takes the cell's element (a 1x1 cell gives a 1x1 struct).
        if (v.is_cell() && v.cell().items.size() == 1) v = v.cell().items[0];
        else if (v.is_cell()) fail("Struct arrays (a cell of several values) are not supported.", "TANDEM:unsupported");
        if (Value* f = s.find(name)) *f = v;
        else s.fields.emplace_back(name, v);
    }
    return s;
}

Out apply_fun(Interpreter& I, Args& a, int nargout, bool cells) {
    // arrayfun / cellfun: the function over each element; 'UniformOutput', false gives cells.
    need(a, 2, 16);
    bool uniform = true;
    if (a.size() >= 4 && is_text(a[a.size() - 2], "UniformOutput")) {
        uniform = is_true(I.runtime(), a.back(), "UniformOutput");
        a.resize(a.size() - 2);
    }
    const Value fn = a[0];
    const std::size_t inputs = a.size() - 1;
    const std::int64_t n = numel(a[1]);
    for (std::size_t k = 2; k < a.size(); ++k)
        if (numel(a[k]) != n) fail("All of the input arguments must be of the same size and shape.", "MATLAB:arrayfun:ArgumentSizeMismatch");
    const int outs = std::max(nargout, 1);
    std::vector<std::vector<Value>> results(static_cast<std::size_t>(outs));
    std::vector<std::vector<double>> hosts(inputs);
    for (std::size_t k = 0; k < inputs; ++k)
        if (!cells || !a[k + 1].is_cell()) {
            if (cells) fail("cellfun: input " + std::to_string(k + 2) + " must be a cell array.", "MATLAB:cellfun:NotACell");
            hosts[k] = a[k + 1].is_num() ? to_doubles(I.runtime(), a[k + 1], "arrayfun") : std::vector<double>{};
        }
    for (std::int64_t i = 0; i < n; ++i) {
        Args call_args;
        for (std::size_t k = 0; k < inputs; ++k) {
            const Value& src = a[k + 1];
            if (src.is_cell()) call_args.push_back(src.cell().items[static_cast<std::size_t>(i)]);
            else if (src.is_num()) call_args.push_back(scalar(hosts[k][static_cast<std::size_t>(i)], src.num().dtype));
            else call_args.push_back(paren_index(I.runtime(), src, {scalar(static_cast<double>(i + 1))}));
        }
        Out r = I.call(fn, std::move(call_args), outs);
        if (static_cast<int>(r.size()) < outs) fail("The function returned fewer outputs than asked for.", "MATLAB:arrayfun:TooFewOutputs");
        for (int o = 0; o < outs; ++o) results[static_cast<std::size_t>(o)].push_back(r[static_cast<std::size_t>(o)]);
    }
    const auto d = dims(a[1]);
    Out out;
    for (int o = 0; o < outs; ++o) {
        auto& rs = results[static_cast<std::size_t>(o)];
        if (!uniform) {
            Cell c;
            c.items = rs;
            c.rows = d[0];
            c.cols = n / std::max<std::int64_t>(1, d[0]);
            out.push_back(std::move(c));
            continue;
        }
        std::vector<double> v;
        DType t = DType::f64;
        bool logical = !rs.empty();
        for (const Value& r : rs) {
            if (!is_scalar(r) || !(r.is_num()))
                fail("Non-scalar in Uniform output, at index " + std::to_string(v.size() + 1) + ". Set 'UniformOutput' to false.",
                     "MATLAB:arrayfun:NotAScalarOutput");
            v.push_back(to_scalar(I.runtime(), r, "output"));
            if (r.num().dtype == DType::f32) t = DType::f32;
            logical = logical && r.num().dtype == DType::logical;
        }
        if (logical) t = DType::logical;
        if (v.size() == 1) {
            out.push_back(scalar(v[0], t));
            continue;
        }
        Array r = I.runtime().array(v, tandem::Shape{d[0], n / std::max<std::int64_t>(1, d[0])});
        out.push_back(result(t == DType::f64 ? r : tandem::astype(r, t)));
    }
    return out;
}

std::unordered_map<std::string, Builtin> make_table() {
    std::unordered_map<std::string, Builtin> t;

    // Constants (and their sized forms).
    auto constant = [](double v) -> Builtin {
        return [v](Interpreter& I, Args& a, int) -> Out {
            if (a.empty()) return {scalar(v)};
            auto [shape, type, device] = size_args(I, a);
            return {made(I.runtime().fill(v, shape, type), device)};
        };
    };
    t["pi"] = constant(M_PI);
    t["Inf"] = t["inf"] = constant(std::numeric_limits<double>::infinity());
    t["NaN"] = t["nan"] = constant(std::numeric_limits<double>::quiet_NaN());
    t["e"] = constant(M_E);
    t["realmax"] = [](Interpreter&, Args& a, int) -> Out {
        return {a.empty() || !is_text(a[0], "single") ? scalar(std::numeric_limits<double>::max()) : scalar(std::numeric_limits<float>::max(), DType::f32)};
    };
    t["realmin"] = [](Interpreter&, Args& a, int) -> Out {
        return {a.empty() || !is_text(a[0], "single") ? scalar(std::numeric_limits<double>::min()) : scalar(std::numeric_limits<float>::min(), DType::f32)};
    };
    t["flintmax"] = [](Interpreter&, Args& a, int) -> Out {
        return {a.empty() || !is_text(a[0], "single") ? scalar(9007199254740992.0) : scalar(16777216.0, DType::f32)};
    };
    t["eps"] = [](Interpreter& I, Args& a, int) -> Out {
        if (a.empty()) return {scalar(std::numeric_limits<double>::epsilon())};
        if (is_text(a[0], "single")) return {scalar(std::numeric_limits<float>::epsilon(), DType::f32)};
        if (is_text(a[0], "double")) return {scalar(std::numeric_limits<double>::epsilon())};
        const Num n = to_num(I.runtime(), a[0], "eps");
        auto spacing = [&](double x) {
            x = std::fabs(x);
            if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
            if (n.dtype == DType::f32) {
                const float f = static_cast<float>(x);
                return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity()) - f);
            }
            return std::nextafter(x, std::numeric_limits<double>::infinity()) - x;
        };
        if (n.host()) return {scalar(spacing(n.scalar), n.dtype)};
        fail("eps of an array is not supported (pass a scalar).", "TANDEM:unsupported");
    };
    t["true"] = [](Interpreter& I, Args& a, int) -> Out {
        if (a.empty()) return {logical_scalar(true)};
        auto [shape, type, device] = size_args(I, a);
        (void)type;
        return {made(I.runtime().fill(1, shape, DType::logical), device)};
    };
    t["false"] = [](Interpreter& I, Args& a, int) -> Out {
        if (a.empty()) return {logical_scalar(false)};
        auto [shape, type, device] = size_args(I, a);
        (void)type;
        return {made(I.runtime().fill(0, shape, DType::logical), device)};
    };

    // Construction.
    t["zeros"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        if (shape.numel() == 1 && !device) return {scalar(0, type)};
        return {made(I.runtime().zeros(shape, type), device)};
    };
    t["ones"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        if (shape.numel() == 1 && !device) return {scalar(1, type)};
        return {made(I.runtime().ones(shape, type), device)};
    };
    t["eye"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        if (shape.ndims() > 2) fail("N-dimensional arrays are not supported by eye.", "MATLAB:eye:NDArrays");
        return {made(eye(I.runtime(), shape[0], shape[1], type), device)};
    };
    t["rand"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        return {made(tandem::rand(I.runtime(), shape, type), device)};
    };
    t["randn"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        return {made(tandem::randn(I.runtime(), shape, type), device)};
    };
    t["randi"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 8);
        const auto range = to_doubles(I.runtime(), a[0], "randi");
        Args rest(a.begin() + 1, a.end());
        auto [shape, type, device] = size_args(I, rest);
        (void)type;
        if (range.size() == 2) return {made(tandem::randi(I.runtime(), static_cast<std::int64_t>(range[0]), static_cast<std::int64_t>(range[1]), shape), device)};
        return {made(tandem::randi(I.runtime(), static_cast<std::int64_t>(range.at(0)), shape), device)};
    };
    t["rng"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 0, 2);
        double seed = 0;
        if (!a.empty() && a[0].is_num()) seed = num1(I, a[0], "seed");
        else if (!a.empty() && !is_text(a[0], "default"))
            fail("rng: only rng(seed) and rng default are supported (Tandem's generator is Philox).", "TANDEM:unsupported");
        if (seed < 0 || seed != std::floor(seed)) fail("The seed must be a nonnegative integer.", "MATLAB:rng:badSeed");
        tandem::seed(I.runtime(), static_cast<std::uint64_t>(seed));
        return {};
    };
    t["linspace"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 3);
        const double n = a.size() == 3 ? std::floor(num1(I, a[2], "n")) : 100;
        return {result(I.runtime().linspace(num1(I, a[0], "a"), num1(I, a[1], "b"), static_cast<std::int64_t>(std::max(n, 1.0))))};
    };
    t["colon"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 3);
        if (a.size() == 2) return {range(I.runtime(), a[0], nullptr, a[1])};
        return {range(I.runtime(), a[0], &a[1], a[2])};
    };
    t["cell"] = [](Interpreter& I, Args& a, int) -> Out {
        auto [shape, type, device] = size_args(I, a);
        (void)type, (void)device;
        Cell c;
        c.rows = shape[0];
        c.cols = shape.numel() / std::max<std::int64_t>(1, shape[0]);
        c.items.assign(static_cast<std::size_t>(shape.numel()), Value(empty_matrix(I.runtime())));
        return {Value(std::move(c))};
    };
    t["struct"] = [](Interpreter&, Args& a, int) -> Out { return {make_struct(a)}; };

    // Shape.
    t["size"] = [](Interpreter& I, Args& a, int nargout) -> Out {
        need(a, 1, 2);
        const auto d = dims(a[0]);
        if (a.size() == 2) {
            const int k = dim_of(I, a[1]);
            return {scalar(static_cast<double>(k <= static_cast<int>(d.size()) ? d[static_cast<std::size_t>(k - 1)] : 1))};
        }
        if (nargout <= 1) return {size_value(I, d)};
        Out out;
        for (int k = 0; k < nargout; ++k) {
            std::int64_t v = k < static_cast<int>(d.size()) ? d[static_cast<std::size_t>(k)] : 1;
            if (k == nargout - 1)
                for (std::size_t j = static_cast<std::size_t>(nargout); j < d.size(); ++j) v *= d[j];
            out.push_back(scalar(static_cast<double>(v)));
        }
        return out;
    };
    t["numel"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        return {scalar(static_cast<double>(numel(a[0])))};
    };
    t["ndims"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        return {scalar(static_cast<double>(dims(a[0]).size()))};
    };
    t["length"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        const auto d = dims(a[0]);
        std::int64_t m = 0;
        for (auto x : d) m = std::max(m, x);
        return {scalar(numel(a[0]) == 0 ? 0.0 : static_cast<double>(m))};
    };
    auto shape_test = [](bool (*p)(const std::vector<std::int64_t>&)) -> Builtin {
        return [p](Interpreter&, Args& a, int) -> Out {
            need(a, 1, 1);
            return {logical_scalar(p(dims(a[0])))};
        };
    };
    t["isempty"] = shape_test([](const std::vector<std::int64_t>& d) { return std::find(d.begin(), d.end(), 0) != d.end(); });
    t["isscalar"] = shape_test([](const std::vector<std::int64_t>& d) { return d.size() == 2 && d[0] == 1 && d[1] == 1; });
    t["isvector"] = shape_test([](const std::vector<std::int64_t>& d) { return d.size() == 2 && (d[0] == 1 || d[1] == 1) && d[0] * d[1] >= 1; });
    t["isrow"] = shape_test([](const std::vector<std::int64_t>& d) { return d.size() == 2 && d[0] == 1; });
    t["iscolumn"] = shape_test([](const std::vector<std::int64_t>& d) { return d.size() == 2 && d[1] == 1; });
    t["ismatrix"] = shape_test([](const std::vector<std::int64_t>& d) { return d.size() == 2; });
    t["reshape"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 16);
        std::vector<std::int64_t> d;
        int unknown = -1;
        if (a.size() == 2) {
            for (double x : to_doubles(I.runtime(), a[1], "size")) d.push_back(static_cast<std::int64_t>(x));
        } else {
            for (std::size_t k = 1; k < a.size(); ++k) {
                if (a[k].is_num() && is_empty(a[k])) {
                    if (unknown >= 0) fail("Size can only have one unknown dimension.", "MATLAB:getReshapeDims:unknownDim");
                    unknown = static_cast<int>(d.size());
                    d.push_back(1);
                } else {
                    d.push_back(static_cast<std::int64_t>(num1(I, a[k], "size")));
                }
            }
        }
        if (unknown >= 0) {
            std::int64_t known = 1;
            for (std::size_t k = 0; k < d.size(); ++k)
                if (static_cast<int>(k) != unknown) known *= d[k];
            if (known == 0 || numel(a[0]) % known) fail("Size is not divisible by the product of known dimensions.", "MATLAB:getReshapeDims:notDivisible");
            d[static_cast<std::size_t>(unknown)] = numel(a[0]) / known;
        }
        return {reshape_value(I.runtime(), a[0], d)};
    };
    t["repmat"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 8);
        std::vector<std::int64_t> copies;
        if (a.size() == 2) {
            const auto v = to_doubles(I.runtime(), a[1], "repmat");
            for (double x : v) copies.push_back(static_cast<std::int64_t>(x));
            if (copies.size() == 1) copies.push_back(copies[0]);
        } else {
            for (std::size_t k = 1; k < a.size(); ++k) copies.push_back(static_cast<std::int64_t>(num1(I, a[k], "repmat")));
        }
        return {result(tandem::repmat(arr(I, a[0], "repmat"), copies))};
    };
    t["permute"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 2);
        std::vector<int> order;
        for (double x : to_doubles(I.runtime(), a[1], "permute")) order.push_back(static_cast<int>(x));
        return {result(tandem::permute(arr(I, a[0], "permute"), order))};
    };
    t["cat"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        const int d = dim_of(I, a[0]);
        Args rest(a.begin() + 1, a.end());
        if (d <= 2) return {concatenate(I.runtime(), rest, d)};
        std::vector<Array> arrays;
        for (const Value& v : rest) arrays.push_back(arr(I, v, "cat"));
        return {result(tandem::cat(d, arrays))};
    };
    t["horzcat"] = [](Interpreter& I, Args& a, int) -> Out { return {a.empty() ? empty_matrix(I.runtime()) : concatenate(I.runtime(), a, 2)}; };
    t["vertcat"] = [](Interpreter& I, Args& a, int) -> Out { return {a.empty() ? empty_matrix(I.runtime()) : concatenate(I.runtime(), a, 1)}; };
    t["transpose"] = t["ctranspose"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {transpose(I.runtime(), a[0])};
    };
    t["flip"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 2);
        if (host_scalar(a[0])) return {a[0]};
        if (a.size() == 2) return {result(tandem::flip(arr(I, a[0], "flip"), dim_of(I, a[1])))};
        return {result(tandem::flip(arr(I, a[0], "flip")))};
    };
    t["fliplr"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {host_scalar(a[0]) ? a[0] : result(tandem::flip(arr(I, a[0], "fliplr"), 2))};
    };
    t["flipud"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {host_scalar(a[0]) ? a[0] : result(tandem::flip(arr(I, a[0], "flipud"), 1))};
    };
    t["circshift"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 3);
        const auto k = static_cast<std::int64_t>(num1(I, a[1], "shift"));
        if (host_scalar(a[0])) return {a[0]};
        if (a.size() == 3) return {result(tandem::circshift(arr(I, a[0], "circshift"), k, dim_of(I, a[2])))};
        return {result(tandem::circshift(arr(I, a[0], "circshift"), k))};
    };

    // Elementwise math.
    t["abs"] = unary_math([](double x) { return std::fabs(x); }, tandem::abs);
    t["sqrt"] = unary_math([](double x) { return std::sqrt(x); }, tandem::sqrt);
    t["exp"] = unary_math([](double x) { return std::exp(x); }, tandem::exp);
    t["log"] = unary_math([](double x) { return std::log(x); }, tandem::log);
    t["log2"] = unary_math([](double x) { return std::log2(x); }, tandem::log2);
    t["log10"] = unary_math([](double x) { return std::log10(x); }, tandem::log10);
    t["log1p"] = unary_math([](double x) { return std::log1p(x); }, tandem::log1p);
    t["expm1"] = unary_math([](double x) { return std::expm1(x); }, tandem::expm1);
    t["sin"] = unary_math([](double x) { return std::sin(x); }, tandem::sin);
    t["cos"] = unary_math([](double x) { return std::cos(x); }, tandem::cos);
    t["tan"] = unary_math([](double x) { return std::tan(x); }, tandem::tan);
    t["asin"] = unary_math([](double x) { return std::asin(x); }, tandem::asin);
    t["acos"] = unary_math([](double x) { return std::acos(x); }, tandem::acos);
    t["atan"] = unary_math([](double x) { return std::atan(x); }, tandem::atan);
    t["sinh"] = unary_math([](double x) { return std::sinh(x); }, tandem::sinh);
    t["cosh"] = unary_math([](double x) { return std::cosh(x); }, tandem::cosh);
    t["tanh"] = unary_math([](double x) { return std::tanh(x); }, tandem::tanh);
    t["floor"] = unary_math([](double x) { return std::floor(x); }, tandem::floor);
    t["ceil"] = unary_math([](double x) { return std::ceil(x); }, tandem::ceil);
    t["round"] = unary_math(round_of, tandem::round);
    t["fix"] = unary_math(fix_of, tandem::fix);
    t["sign"] = unary_math(reference::sign<double>, tandem::sign);
    t["isnan"] = unary_math([](double x) { return std::isnan(x) ? 1.0 : 0.0; }, tandem::isnan, true);
    t["isinf"] = unary_math([](double x) { return std::isinf(x) ? 1.0 : 0.0; }, tandem::isinf, true);
    t["isfinite"] = unary_math([](double x) { return std::isfinite(x) ? 1.0 : 0.0; }, tandem::isfinite, true);
    t["atan2"] = binary_math(tandem::atan2, [](double y, double x) { return std::atan2(y, x); });
    t["hypot"] = binary_math(tandem::hypot, [](double x, double y) { return std::hypot(x, y); });
    t["mod"] = binary_math(tandem::mod, reference::mod<double>, reference::mod<float>);
    t["rem"] = binary_math(tandem::rem, reference::rem<double>, reference::rem<float>);
    t["power"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::power, a[0], a[1])}; };
    t["mpower"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::mpower, a[0], a[1])}; };
    t["times"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::times, a[0], a[1])}; };
    t["mtimes"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::mtimes, a[0], a[1])}; };
    t["plus"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::add, a[0], a[1])}; };
    t["minus"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::sub, a[0], a[1])}; };
    t["rdivide"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::rdivide, a[0], a[1])}; };
    t["ldivide"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::ldivide, a[0], a[1])}; };
    t["mrdivide"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::mrdivide, a[0], a[1])}; };
    t["mldivide"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::mldivide, a[0], a[1])}; };
    t["eq"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::eq, a[0], a[1])}; };
    t["ne"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::ne, a[0], a[1])}; };
    t["lt"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::lt, a[0], a[1])}; };
    t["le"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::le, a[0], a[1])}; };
    t["gt"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::gt, a[0], a[1])}; };
    t["ge"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::ge, a[0], a[1])}; };
    t["and"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::and_, a[0], a[1])}; };
    t["or"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 2, 2); return {binary(I.runtime(), BinaryOp::or_, a[0], a[1])}; };
    t["not"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 1, 1); return {unary(I.runtime(), UnaryOp::not_, a[0])}; };
    t["uminus"] = [](Interpreter& I, Args& a, int) -> Out { need(a, 1, 1); return {unary(I.runtime(), UnaryOp::neg, a[0])}; };
    t["xor"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 2);
        if (host_scalar(a[0]) && host_scalar(a[1])) return {logical_scalar((a[0].num().scalar != 0) != (a[1].num().scalar != 0))};
        return {result(tandem::logical_xor(arr(I, a[0], "xor"), arr(I, a[1], "xor")))};
    };

    // Reductions.
    t["sum"] = reduction(tandem::sum, tandem::sum, tandem::sum, true, 0.0);
    t["prod"] = reduction(tandem::prod, tandem::prod, tandem::prod, true, 1.0);
    t["mean"] = reduction(tandem::mean, tandem::mean, tandem::mean, true, std::numeric_limits<double>::quiet_NaN());
    t["max"] = [](Interpreter& I, Args& a, int nargout) { return minmax(I, a, nargout, true); };
    t["min"] = [](Interpreter& I, Args& a, int nargout) { return minmax(I, a, nargout, false); };
    auto anyall = [](bool any) -> Builtin {
        return [any](Interpreter& I, Args& a, int) -> Out {
            need(a, 1, 2);
            if (host_scalar(a[0]) && a.size() == 1) return {logical_scalar(a[0].num().scalar != 0)};
            Array x = arr(I, a[0], any ? "any" : "all");
            if (a.size() == 2 && is_text(a[1], "all")) return {result(any ? tandem::any(x, tandem::all_dims) : tandem::all(x, tandem::all_dims))};
            if (a.size() == 2) return {result(any ? tandem::any(x, dim_of(I, a[1])) : tandem::all(x, dim_of(I, a[1])))};
            return {result(any ? tandem::any(x) : tandem::all(x))};
        };
    };
    t["any"] = anyall(true);
    t["all"] = anyall(false);
    auto scan = [](Array (*f)(const Array&), Array (*fd)(const Array&, int)) -> Builtin {
        return [f, fd](Interpreter& I, Args& a, int) -> Out {
            need(a, 1, 2);
            if (host_scalar(a[0])) return {scalar(a[0].num().scalar, a[0].num().dtype == DType::f32 ? DType::f32 : DType::f64)};
            if (a.size() == 2) return {result(fd(arr(I, a[0], "cumulative"), dim_of(I, a[1])))};
            return {result(f(arr(I, a[0], "cumulative")))};
        };
    };
    t["cumsum"] = scan(tandem::cumsum, tandem::cumsum);
    t["cumprod"] = scan(tandem::cumprod, tandem::cumprod);
    t["cummax"] = scan(tandem::cummax, tandem::cummax);
    t["cummin"] = scan(tandem::cummin, tandem::cummin);
    auto varstd = [](bool is_std) -> Builtin {
        return [is_std](Interpreter& I, Args& a, int) -> Out {
            need(a, 1, 3);
            Array x = arr(I, a[0], is_std ? "std" : "var");
            int w = 0;
            if (a.size() >= 2 && !is_empty(a[1])) w = static_cast<int>(num1(I, a[1], "w"));
            if (a.size() == 3) {
                if (is_text(a[2], "all")) return {result(is_std ? tandem::stdev(x, w, tandem::all_dims) : tandem::var(x, w, tandem::all_dims))};
                return {result(is_std ? tandem::stdev(x, w, dim_of(I, a[2])) : tandem::var(x, w, dim_of(I, a[2])))};
            }
            return {result(is_std ? tandem::stdev(x, w) : tandem::var(x, w))};
        };
    };
    t["var"] = varstd(false);
    t["std"] = varstd(true);
    t["nnz"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {result(tandem::nnz(arr(I, a[0], "nnz")))};
    };
    t["find"] = [](Interpreter& I, Args& a, int nargout) -> Out {
        need(a, 1, 1);
        if (nargout > 1) fail("find with several outputs ([i, j] = find(x)) is not supported yet.", "TANDEM:unsupported");
        return {result(tandem::find(arr(I, a[0], "find")))};
    };
    t["dot"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 2);
        return {result(tandem::dot(arr(I, a[0], "dot"), arr(I, a[1], "dot")))};
    };
    t["norm"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 2);
        double p = 2;
        if (a.size() == 2) p = is_text(a[1], "inf") || is_text(a[1], "Inf") ? std::numeric_limits<double>::infinity()
                                : is_text(a[1], "fro") ? 2 : num1(I, a[1], "p");
        const auto d = dims(a[0]);
        const bool vector = d.size() == 2 && (d[0] == 1 || d[1] == 1);
        Array x = arr(I, a[0], "norm");
        if (vector) return {result(tandem::norm(x, p))};
        if (a.size() == 2 && is_text(a[1], "fro")) return {result(tandem::norm(tandem::column(x), 2))};
        if (d.size() != 2) fail("Input must be 2-D.", "MATLAB:norm:inputMustBe2D");
        // Matrices: the largest column sum (1), row sum (Inf) of |A|, or singular value (2).
        if (numel(a[0]) == 0) return {scalar(0)};
        if (p == 1) return {result(tandem::max(tandem::sum(tandem::abs(x), 1), tandem::all_dims))};
        if (std::isinf(p) && p > 0) return {result(tandem::max(tandem::sum(tandem::abs(x), 2), tandem::all_dims))};
        if (p == 2) return {scalar(matrix_2norm(I.runtime(), a[0]))};
        fail("Only p = 1, 2, Inf or 'fro' are supported for matrices.", "MATLAB:norm:unknownNorm");
    };
    t["inv"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        const auto d = dims(a[0]);
        if (d.size() != 2 || d[0] != d[1]) fail("Matrix must be square.", "MATLAB:square");
        return {solve(I.runtime(), a[0], from_array(eye(I.runtime(), d[0], result_type(a[0], a[0]))), "inv")};
    };
    t["det"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {scalar(determinant(I.runtime(), a[0]))};
    };

    // Types.
    auto cast = [](DType to) -> Builtin {
        return [to](Interpreter& I, Args& a, int) -> Out {
            need(a, 1, 1);
            if (to == DType::logical && a[0].is_num()) {
                const Num& n = a[0].num();
                if (n.host()) {
                    if (std::isnan(n.scalar)) fail("NaN's cannot be converted to logicals.", "MATLAB:nologicalnan");
                    return {logical_scalar(n.scalar != 0)};
                }
                return {result(tandem::logical(n.array))};
            }
            const Num n = to_num(I.runtime(), a[0], "conversion");
            if (n.host()) return {scalar(n.scalar, to)};
            return {result(n.dtype == to ? n.array : tandem::astype(n.array, to))};
        };
    };
    t["double"] = cast(DType::f64);
    t["single"] = cast(DType::f32);
    t["logical"] = cast(DType::logical);
    t["class"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        return {text_value(class_name(a[0]))};
    };
    t["isa"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 2, 2);
        const std::string c = class_name(a[0]), want = text_arg(a[1], "class name");
        const bool numeric = c == "double" || c == "single";
        if (want == "gpuArray") return {logical_scalar(is_gpu_array(a[0]))};
        return {logical_scalar(c == want || (want == "numeric" && numeric) || (want == "float" && numeric))};
    };
    auto class_test = [](bool (*p)(const Value&)) -> Builtin {
        return [p](Interpreter&, Args& a, int) -> Out {
            need(a, 1, 1);
            return {logical_scalar(p(a[0]))};
        };
    };
    t["isnumeric"] = class_test([](const Value& v) { return v.is_num() && v.num().dtype != DType::logical; });
    t["isfloat"] = t["isnumeric"];
    t["isreal"] = class_test([](const Value& v) { return v.is_num() || v.is_chars(); });
    t["islogical"] = class_test([](const Value& v) { return v.is_num() && v.num().dtype == DType::logical; });
    t["ischar"] = class_test([](const Value& v) { return v.is_chars() && !v.chars().is_string; });
    t["isstring"] = class_test([](const Value& v) { return v.is_chars() && v.chars().is_string; });
    t["iscell"] = class_test([](const Value& v) { return v.is_cell(); });
    t["isstruct"] = class_test([](const Value& v) { return v.is_struct(); });
    t["is_function_handle"] = class_test([](const Value& v) { return v.is_handle(); });
    t["isequal"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 2, 64);
        for (std::size_t k = 1; k < a.size(); ++k)
            if (!equal_values(I, a[0], a[k])) return {logical_scalar(false)};
        return {logical_scalar(true)};
    };

    // Structs and cells.
    t["fieldnames"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        if (!a[0].is_struct()) fail("Invalid input argument of type '" + class_name(a[0]) + "'. Input must be a structure.", "MATLAB:fieldnames:InvalidInput");
        Cell c;
        for (const auto& [k, _] : a[0].strukt().fields) c.items.push_back(text_value(k));
        c.rows = static_cast<std::int64_t>(c.items.size());
        c.cols = 1;
        return {Value(std::move(c))};
    };
    t["isfield"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 2, 2);
        if (!a[0].is_struct()) return {logical_scalar(false)};
        return {logical_scalar(a[0].strukt().find(text_arg(a[1], "field name")) != nullptr)};
    };
    t["rmfield"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 2, 2);
        if (!a[0].is_struct()) fail("rmfield: the first argument must be a struct.", "MATLAB:rmfield:InvalidInput");
        Struct s = a[0].strukt();
        const std::string name = text_arg(a[1], "field name");
        auto it = std::find_if(s.fields.begin(), s.fields.end(), [&](const auto& f) { return f.first == name; });
        if (it == s.fields.end()) fail("A field named '" + name + "' doesn't exist.", "MATLAB:rmfield:InvalidFieldname");
        s.fields.erase(it);
        return {Value(std::move(s))};
    };
    t["cellfun"] = [](Interpreter& I, Args& a, int nargout) { return apply_fun(I, a, nargout, true); };
    t["arrayfun"] = [](Interpreter& I, Args& a, int nargout) { return apply_fun(I, a, nargout, false); };
    t["feval"] = [](Interpreter& I, Args& a, int nargout) -> Out {
        need(a, 1, 1024);
        const Value fn = a[0];
        return I.call(fn, Args(a.begin() + 1, a.end()), nargout);
    };
    t["func2str"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        if (!a[0].is_handle()) fail("Input must be a function handle.", "MATLAB:func2str:InputNotFunctionHandle");
        const Callable& c = *a[0].handle().fn;
        return {text_value(c.name.empty() ? c.text : c.name)};
    };
    t["str2func"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        const std::string s = text_arg(a[0], "function name");
        if (!s.empty() && s[0] == '@') {
            I.run_code("__str2func__ = " + s + ";");
            Value v = I.variables()["__str2func__"];
            I.variables().erase("__str2func__");
            return {v};
        }
        auto c = std::make_shared<Callable>();
        c->name = s;
        c->text = s;
        return {Value(Handle{std::move(c)})};
    };
    t["nargin"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 0, 0);
        return {scalar(I.nargin())};
    };
    t["nargout"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 0, 0);
        return {scalar(I.nargout())};
    };

    add_system_builtins(t);
    add_more_builtins(t);
    return t;
}

}  // namespace

const std::unordered_map<std::string, Builtin>& builtins() {
    static const std::unordered_map<std::string, Builtin> table = make_table();
    return table;
}

}  // namespace tandem::matlab
