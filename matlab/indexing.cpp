#include "matlab/indexing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "matlab/errors.hpp"
#include "matlab/operators.hpp"

namespace tandem::matlab {

using tandem::Array;
using tandem::DType;
using Dims = std::vector<std::int64_t>;

Value colon_subscript() { return char_row(":"); }
bool is_colon(const Value& v) { return v.is_chars() && v.chars().data == ":"; }

namespace {

std::int64_t product(const Dims& d) {
    std::int64_t n = 1;
    for (auto x : d) n *= x;
    return n;
}

[[noreturn]] void not_positive(double x) {
    (void)x;
    throw MatlabError("Array indices must be positive integers or logical values.", "MATLAB:badsubscript");
}

/// A subscript's 0-based positions along an extent (the host computes them: a growth check, a
/// char array's or a cell's subscript, a deletion). `grow`: positions past the extent allowed.
std::vector<std::int64_t> positions(tandem::Runtime& rt, const Value& s, std::int64_t extent, bool grow, std::size_t which,
                                    std::size_t count) {
    std::vector<std::int64_t> out;
    if (is_colon(s)) {
        out.resize(static_cast<std::size_t>(extent));
        std::iota(out.begin(), out.end(), 0);
        return out;
    }
    if (s.is_num() && s.num().dtype == DType::logical) {
        const auto m = to_doubles(rt, s, "subscript");
        for (std::size_t i = 0; i < m.size(); ++i)
            if (m[i] != 0) {
                if (static_cast<std::int64_t>(i) >= extent && !grow)
                    throw MatlabError("The logical indices contain a true value outside of the array bounds.", "MATLAB:badsubscript");
                out.push_back(static_cast<std::int64_t>(i));
            }
        return out;
    }
    const auto v = to_doubles(rt, s, "subscript");
    out.reserve(v.size());
    for (double x : v) {
        if (!(x >= 1) || x != std::floor(x) || !std::isfinite(x)) not_positive(x);
        const auto p = static_cast<std::int64_t>(x) - 1;
        if (p >= extent && !grow) {
            if (count == 1)
                throw MatlabError("Index exceeds the number of array elements. Index must not exceed " + std::to_string(extent) + ".",
                                  "MATLAB:index:outOfBounds");
            throw MatlabError("Index in position " + std::to_string(which + 1) + " exceeds array bounds. Index must not exceed " +
                                  std::to_string(extent) + ".",
                              "MATLAB:index:outOfBounds");
        }
        out.push_back(p);
    }
    return out;
}

/// The dims of v seen through `count` subscripts: trailing dims fold into the last subscript's,
/// missing ones are 1.
Dims seen_dims(const Dims& d, std::size_t count) {
    Dims out(count, 1);
    for (std::size_t k = 0; k < d.size(); ++k) {
        if (k < count) out[k] = d[k];
        else out[count - 1] *= d[k];
    }
    return out;
}

tandem::Shape shape_of(const Dims& d) {
    std::vector<std::int64_t> v(d.begin(), d.end());
    while (v.size() < 2) v.push_back(1);
    return tandem::Shape(v);
}

/// Host containers (char arrays, cells): elements in column-major order, 2-D.
template <class T>
struct Grid {
    std::vector<T> data;
    std::int64_t rows = 0, cols = 0;
};

template <class T>
Grid<T> grid_index(tandem::Runtime& rt, const Grid<T>& g, const std::vector<Value>& subs) {
    Grid<T> r;
    if (subs.size() == 1) {
        const auto p = positions(rt, subs[0], g.rows * g.cols, false, 0, 1);
        for (auto k : p) r.data.push_back(g.data[static_cast<std::size_t>(k)]);
        const auto n = static_cast<std::int64_t>(p.size());
        if (is_colon(subs[0])) {
            r.rows = n;
            r.cols = 1;
        } else if (g.rows == 1 || (g.cols != 1 && dims(subs[0])[0] == 1)) {
            r.rows = 1;
            r.cols = n;
        } else {
            r.rows = n;
            r.cols = 1;
        }
        if (!is_colon(subs[0]) && g.rows != 1 && g.cols != 1) {
            const auto d = dims(subs[0]);
            if (d.size() == 2 && d[0] * d[1] == n) {
                r.rows = d[0];
                r.cols = d[1];
            }
        }
        return r;
    }
    if (subs.size() != 2) {
        for (std::size_t k = 2; k < subs.size(); ++k)
            if (!is_colon(subs[k]) && positions(rt, subs[k], 1, false, k, subs.size()) != std::vector<std::int64_t>{0})
                throw MatlabError("Index in position " + std::to_string(k + 1) + " exceeds array bounds. Index must not exceed 1.",
                                  "MATLAB:index:outOfBounds");
    }
    const auto pr = positions(rt, subs[0], g.rows, false, 0, subs.size());
    const auto pc = positions(rt, subs[1], g.cols, false, 1, subs.size());
    r.rows = static_cast<std::int64_t>(pr.size());
    r.cols = static_cast<std::int64_t>(pc.size());
    for (auto j : pc)
        for (auto i : pr) r.data.push_back(g.data[static_cast<std::size_t>(i + g.rows * j)]);
    return r;
}

template <class T>
void grid_grow(Grid<T>& g, std::int64_t rows, std::int64_t cols, const T& fill) {
    if (rows <= g.rows && cols <= g.cols) return;
    rows = std::max(rows, g.rows);
    cols = std::max(cols, g.cols);
    std::vector<T> d(static_cast<std::size_t>(rows * cols), fill);
    for (std::int64_t j = 0; j < g.cols; ++j)
        for (std::int64_t i = 0; i < g.rows; ++i) d[static_cast<std::size_t>(i + rows * j)] = g.data[static_cast<std::size_t>(i + g.rows * j)];
    g.data = std::move(d);
    g.rows = rows;
    g.cols = cols;
}

/// g(subs) = rhs (rhs one element, or as many as the subscripts choose).
template <class T>
void grid_assign(tandem::Runtime& rt, Grid<T>& g, const std::vector<Value>& subs, const Grid<T>& rhs, const T& fill) {
    std::vector<std::int64_t> targets;
    if (subs.size() == 1) {
        auto p = positions(rt, subs[0], g.rows * g.cols, true, 0, 1);
        const std::int64_t need = p.empty() ? 0 : *std::max_element(p.begin(), p.end()) + 1;
        if (need > g.rows * g.cols) {
            if (g.rows * g.cols == 0) grid_grow(g, 1, need, fill);
            else if (g.rows == 1) grid_grow(g, 1, need, fill);
            else if (g.cols == 1) grid_grow(g, need, 1, fill);
            else throw MatlabError("Attempt to grow array along ambiguous dimension.", "MATLAB:subsassigndimmismatch");
        }
        targets = std::move(p);
    } else {
        const std::int64_t rows = is_colon(subs[0]) && g.rows == 0 ? rhs.rows : g.rows;
        const std::int64_t cols = is_colon(subs[1]) && g.cols == 0 ? rhs.cols : g.cols;
        auto pr = positions(rt, subs[0], rows, true, 0, 2), pc = positions(rt, subs[1], cols, true, 1, 2);
        const std::int64_t nr = pr.empty() ? 0 : *std::max_element(pr.begin(), pr.end()) + 1;
        const std::int64_t nc = pc.empty() ? 0 : *std::max_element(pc.begin(), pc.end()) + 1;
        grid_grow(g, std::max(nr, rows), std::max(nc, cols), fill);
        for (auto j : pc)
            for (auto i : pr) targets.push_back(i + g.rows * j);
    }
    const std::size_t n = rhs.data.size();
    if (n != 1 && n != targets.size())
        throw MatlabError("Unable to perform assignment because the left and right sides have a different number of elements.",
                          "MATLAB:subsassignnumelmismatch");
    for (std::size_t k = 0; k < targets.size(); ++k) g.data[static_cast<std::size_t>(targets[k])] = rhs.data[n == 1 ? 0 : k];
}

/// The positions a deletion keeps along an extent.
std::vector<std::int64_t> kept(const std::vector<std::int64_t>& gone, std::int64_t extent) {
    std::vector<bool> drop(static_cast<std::size_t>(extent), false);
    for (auto p : gone) drop[static_cast<std::size_t>(p)] = true;
    std::vector<std::int64_t> keep;
    for (std::int64_t i = 0; i < extent; ++i)
        if (!drop[static_cast<std::size_t>(i)]) keep.push_back(i);
    return keep;
}

/// Which subscript of a deletion is not `:` (or not the whole extent); -1 for all colons.
int deletion_dim(tandem::Runtime& rt, const std::vector<Value>& subs, const Dims& d) {
    int which = -1;
    for (std::size_t k = 0; k < subs.size(); ++k) {
        if (is_colon(subs[k])) continue;
        const auto p = positions(rt, subs[k], d[k], false, k, subs.size());
        std::vector<std::int64_t> sorted = p;
        std::sort(sorted.begin(), sorted.end());
        sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
        if (static_cast<std::int64_t>(sorted.size()) == d[k]) continue;  // the whole extent: like ':'
        if (which >= 0) throw MatlabError("A null assignment can have only one non-colon index.", "MATLAB:nullAssignmentNonColon");
        which = static_cast<int>(k);
    }
    return which;
}

template <class T>
Grid<T> grid_delete(tandem::Runtime& rt, const Grid<T>& g, const std::vector<Value>& subs) {
    Grid<T> r;
    if (subs.size() == 1) {
        if (is_colon(subs[0])) return r;
        const auto keep = kept(positions(rt, subs[0], g.rows * g.cols, false, 0, 1), g.rows * g.cols);
        for (auto k : keep) r.data.push_back(g.data[static_cast<std::size_t>(k)]);
        const auto n = static_cast<std::int64_t>(keep.size());
        if (g.cols == 1 && g.rows != 1) {
            r.rows = n;
            r.cols = 1;
        } else {
            r.rows = 1;
            r.cols = n;
        }
        return r;
    }
    const Dims d = seen_dims({g.rows, g.cols}, subs.size());
    const int k = deletion_dim(rt, subs, d);
    if (k < 0) return r;
    const auto keep = kept(positions(rt, subs[static_cast<std::size_t>(k)], d[static_cast<std::size_t>(k)], false, static_cast<std::size_t>(k), subs.size()),
                           d[static_cast<std::size_t>(k)]);
    if (k == 0) {
        r.rows = static_cast<std::int64_t>(keep.size());
        r.cols = g.cols;
        for (std::int64_t j = 0; j < g.cols; ++j)
            for (auto i : keep) r.data.push_back(g.data[static_cast<std::size_t>(i + g.rows * j)]);
    } else {
        r.rows = g.rows;
        r.cols = static_cast<std::int64_t>(keep.size());
        for (auto j : keep)
            for (std::int64_t i = 0; i < g.rows; ++i) r.data.push_back(g.data[static_cast<std::size_t>(i + g.rows * j)]);
    }
    return r;
}

Grid<char> grid_of(const Chars& c) { return {std::vector<char>(c.data.begin(), c.data.end()), c.rows, c.cols}; }
Value chars_of(const Grid<char>& g) { return Chars{std::string(g.data.begin(), g.data.end()), g.rows, g.cols, false}; }
Grid<Value> grid_of(const Cell& c) { return {c.items, c.rows, c.cols}; }
Value cell_of(Grid<Value> g) {
    Cell c;
    c.items = std::move(g.data);
    c.rows = g.rows;
    c.cols = g.cols;
    return c;
}

bool is_null(const Value& v) { return v.is_num() && dims(v) == Dims{0, 0}; }

/// A position the host knows, as data (an input: a constant would be a region of its own, run
/// to make the index op's operand).
Array position_array(tandem::Runtime& rt, double p) { return rt.array(std::span<const double>(&p, 1), tandem::Shape{1, 1}); }

/// A subscript as Tandem's subscript array (numbers 1-based; masks logical).
Array subscript_array(tandem::Runtime& rt, const Value& s) {
    const Num n = to_num(rt, s, "subscript");
    if (n.host() && n.dtype != DType::logical) return position_array(rt, n.scalar);
    return to_array(rt, n);
}

/// Pads a numeric array with zeros up to `want` (as many dims as it has).
Array pad(tandem::Runtime& rt, Array a, const Dims& have, const Dims& want) {
    Dims cur = have;
    for (std::size_t k = 0; k < want.size(); ++k) {
        if (want[k] <= cur[k]) continue;
        Dims extra = cur;
        extra[k] = want[k] - cur[k];
        a = tandem::cat(static_cast<int>(k) + 1, {a, rt.zeros(shape_of(extra), a.dtype())});
        cur[k] = want[k];
    }
    return a;
}

Value numeric_delete(tandem::Runtime& rt, const Num& n, const Dims& d, const std::vector<Value>& subs) {
    Array a = to_array(rt, n);
    if (subs.size() == 1) {
        if (is_colon(subs[0])) return from_array(rt.zeros({0, 0}, n.dtype));
        const auto keep = kept(positions(rt, subs[0], product(d), false, 0, 1), product(d));
        std::vector<double> k1;
        for (auto k : keep) k1.push_back(static_cast<double>(k + 1));
        const bool column = d.size() == 2 && d[1] == 1 && d[0] != 1;
        const auto m = static_cast<std::int64_t>(k1.size());
        Array flat = tandem::reshape(a, tandem::Shape{product(d), 1});
        Array r = tandem::index(flat, rt.array(k1, tandem::Shape{m, 1}));
        return from_array(tandem::reshape(r, column ? tandem::Shape{m, 1} : tandem::Shape{1, m}));
    }
    const Dims sd = seen_dims(d, subs.size());
    const int k = deletion_dim(rt, subs, sd);
    if (k < 0) {
        Dims z = sd;
        z[0] = 0;
        return from_array(rt.zeros(shape_of(z), n.dtype));
    }
    const auto uk = static_cast<std::size_t>(k);
    const auto keep = kept(positions(rt, subs[uk], sd[uk], false, uk, subs.size()), sd[uk]);
    std::vector<double> k1;
    for (auto p : keep) k1.push_back(static_cast<double>(p + 1));
    Array r = tandem::reshape(a, shape_of(sd));
    r = tandem::index(r, k + 1, rt.array(k1, tandem::Shape{static_cast<std::int64_t>(k1.size()), 1}));
    return from_array(r);
}

}  // namespace

Value reshape_value(tandem::Runtime&, const Value& v, const Dims& d) {
    if (product(d) != numel(v))
        throw MatlabError("Number of elements must not change. Use [] as one of the size inputs to automatically calculate the "
                          "appropriate size for that dimension.",
                          "MATLAB:getReshapeDims:notSameNumel", "reshape");
    if (v.is_num()) {
        const Num& n = v.num();
        if (n.host()) return v;
        return from_array(tandem::reshape(n.array, shape_of(d)));
    }
    if (d.size() > 2) throw MatlabError("reshape: char arrays and cells are 2-D here.", "MATLAB:reshape");
    if (v.is_chars()) {
        Chars c = v.chars();
        c.rows = d[0];
        c.cols = d.size() > 1 ? d[1] : 1;
        return c;
    }
    if (v.is_cell()) {
        Cell c = v.cell();
        c.rows = d[0];
        c.cols = d.size() > 1 ? d[1] : 1;
        return c;
    }
    throw MatlabError("reshape: values of class " + class_name(v) + " cannot be reshaped.", "MATLAB:reshape");
}

Value paren_index(tandem::Runtime& rt, const Value& v, const std::vector<Value>& subs) {
    if (subs.empty()) return v;
    if (v.is_chars()) return chars_of(grid_index(rt, grid_of(v.chars()), subs));
    if (v.is_cell()) return cell_of(grid_index(rt, grid_of(v.cell()), subs));
    if (v.is_struct() || v.is_handle()) {
        // A scalar struct or handle indexed by 1s (s(1), s(1, 1)).
        for (std::size_t k = 0; k < subs.size(); ++k)
            if (!is_colon(subs[k]) && positions(rt, subs[k], 1, false, k, subs.size()) != std::vector<std::int64_t>{0})
                throw MatlabError("Index exceeds the number of array elements. Index must not exceed 1.", "MATLAB:index:outOfBounds");
        return v;
    }
    const Num& n = v.num();
    const Dims d = dims(v);
    const bool all_host = std::all_of(subs.begin(), subs.end(), [](const Value& s) { return s.is_num() && s.num().host(); });
    if (all_host && std::none_of(subs.begin(), subs.end(), [](const Value& s) { return s.num().dtype == DType::logical; })) {
        // Scalar subscripts, checked here: one element.
        const Dims sd = seen_dims(d, subs.size());
        std::int64_t linear = 0, stride = 1;
        for (std::size_t k = 0; k < subs.size(); ++k) {
            const double x = subs[k].num().scalar;
            if (!(x >= 1) || x != std::floor(x) || !std::isfinite(x)) not_positive(x);
            const auto p = static_cast<std::int64_t>(x) - 1;
            if (p >= sd[k]) {
                if (subs.size() == 1)
                    throw MatlabError("Index exceeds the number of array elements. Index must not exceed " + std::to_string(sd[k]) + ".",
                                      "MATLAB:index:outOfBounds");
                throw MatlabError("Index in position " + std::to_string(k + 1) + " exceeds array bounds. Index must not exceed " +
                                      std::to_string(sd[k]) + ".",
                                  "MATLAB:index:outOfBounds");
            }
            linear += p * stride;
            stride *= sd[k];
        }
        if (n.host()) return v;
        return from_array(tandem::reshape(tandem::index(tandem::reshape(n.array, tandem::Shape{product(d), 1}),
                                                        position_array(rt, static_cast<double>(linear + 1))),
                                          tandem::Shape{1, 1}));
    }
    Array a = to_array(rt, n);
    if (subs.size() == 1) {
        const Value& s = subs[0];
        if (is_colon(s)) return from_array(tandem::reshape(a, tandem::Shape{product(d), 1}));
        if (s.is_num() && s.num().dtype == DType::logical && s.num().host()) {
            if (s.num().scalar != 0) return paren_index(rt, v, {scalar(1)});
            return from_array(rt.zeros({0, 0}, n.dtype));
        }
        try {
            return from_array(tandem::index(a, subscript_array(rt, s)));
        } catch (const tandem::Error& e) {
            throw MatlabError(e.what(), "MATLAB:badsubscript");
        }
    }
    const Dims sd = seen_dims(d, subs.size());
    if (sd != d) a = tandem::reshape(a, shape_of(sd));
    for (std::size_t k = 0; k < subs.size(); ++k) {
        if (is_colon(subs[k])) continue;
        const Value& s = subs[k];
        if (s.is_num() && s.num().host()) (void)positions(rt, s, sd[k], false, k, subs.size());  // MATLAB's error, now
        try {
            a = tandem::index(a, static_cast<int>(k) + 1, subscript_array(rt, s));
        } catch (const tandem::Error& e) {
            throw MatlabError(e.what(), "MATLAB:badsubscript");
        }
    }
    return from_array(a);
}

std::vector<Value> brace_index(tandem::Runtime& rt, const Value& v, const std::vector<Value>& subs) {
    if (!v.is_cell()) {
        throw MatlabError("Brace indexing is not supported for variables of this type.", "MATLAB:cellRefFromNonCell");
    }
    if (subs.empty()) return v.cell().items;
    const Grid<Value> g = grid_index(rt, grid_of(v.cell()), subs);
    return g.data;
}

Value paren_assign(tandem::Runtime& rt, const Value* v, const std::vector<Value>& subs, const Value& rhs) {
    if (subs.empty()) return rhs;
    const bool deletion = is_null(rhs) && !(v && v->is_cell() && rhs.is_cell());
    // Cells and char arrays on the host.
    if ((v && v->is_cell()) || (!v && rhs.is_cell())) {
        Grid<Value> g = v ? grid_of(v->cell()) : Grid<Value>{};
        if (deletion) return cell_of(grid_delete(rt, g, subs));
        if (!rhs.is_cell())
            throw MatlabError("Conversion to cell from " + class_name(rhs) + " is not possible.", "MATLAB:invalidConversion");
        grid_assign(rt, g, subs, grid_of(rhs.cell()), Value(empty_matrix(rt)));
        return cell_of(std::move(g));
    }
    if ((v && v->is_chars()) || (!v && rhs.is_chars())) {
        Grid<char> g = v ? grid_of(v->chars()) : Grid<char>{};
        if (deletion) return chars_of(grid_delete(rt, g, subs));
        Grid<char> r;
        if (rhs.is_chars()) {
            r = grid_of(rhs.chars());
        } else {
            for (double x : to_doubles(rt, rhs, "assignment")) r.data.push_back(static_cast<char>(static_cast<int>(x)));
            r.rows = 1;
            r.cols = static_cast<std::int64_t>(r.data.size());
        }
        grid_assign(rt, g, subs, r, '\0');
        return chars_of(g);
    }
    if (v && (v->is_struct() || v->is_handle()))
        throw MatlabError("Indexed assignment into a value of class " + class_name(*v) + " is not supported.", "MATLAB:subsasgn");
    if (!rhs.is_num() && !rhs.is_chars())
        throw MatlabError("Conversion to double from " + class_name(rhs) + " is not possible.", "MATLAB:invalidConversion");
    const Num b = to_num(rt, rhs, "assignment");
    const DType t = v ? v->num().dtype : b.dtype;
    Num n = v ? v->num() : std::get<Num>(empty_matrix(rt, t).v);
    Dims d = dims(Value(n));
    if (deletion) {
        if (!v) throw MatlabError("A null assignment to an undefined variable.", "MATLAB:undefinedFunctionOrVariable");
        return numeric_delete(rt, n, d, subs);
    }
    const Dims bd = dims(rhs);
    const std::int64_t bn = product(bd);
    // The target's new size (growth), from the subscripts the host knows.
    const Dims sd = seen_dims(d, subs.size());
    Dims want = sd;
    std::int64_t selected = 1;
    std::vector<std::vector<std::int64_t>> pos(subs.size());
    bool mask = false;
    for (std::size_t k = 0; k < subs.size(); ++k) {
        const Value& s = subs[k];
        if (is_colon(s)) {
            if (sd[k] == 0 && subs.size() > 1) want[k] = bn == 1 ? 1 : (k < bd.size() ? bd[k] : 1);
            selected *= want[k];
            continue;
        }
        if (subs.size() == 1 && s.is_num() && s.num().dtype == DType::logical && !s.num().host()) {
            mask = true;
            continue;
        }
        pos[k] = positions(rt, s, sd[k], true, k, subs.size());
        const std::int64_t need = pos[k].empty() ? 0 : *std::max_element(pos[k].begin(), pos[k].end()) + 1;
        if (need > want[k]) want[k] = need;
        selected *= static_cast<std::int64_t>(pos[k].size());
    }
    if (!mask && bn != 1 && bn != selected)
        throw MatlabError("Unable to perform assignment because the left and right sides have a different number of elements.",
                          "MATLAB:subsassignnumelmismatch");
    Array a = to_array(rt, n);
    if (subs.size() == 1 && want[0] > sd[0]) {
        // Linear growth: a vector (or an empty or scalar value) grows along its length.
        const bool column = d.size() == 2 && d[1] == 1 && d[0] > 1;
        if (product(d) > 0 && !(d.size() == 2 && (d[0] == 1 || d[1] == 1)))
            throw MatlabError("Attempt to grow array along ambiguous dimension.", "MATLAB:subsassigndimmismatch");
        const Dims vd = column ? Dims{product(d), 1} : Dims{1, product(d)};
        a = tandem::reshape(a, shape_of(vd));
        d = column ? Dims{want[0], 1} : Dims{1, want[0]};
        a = pad(rt, a, vd, d);
    } else if (subs.size() > 1 && want != sd) {
        a = pad(rt, tandem::reshape(a, shape_of(sd)), sd, want);
        d = want;
    }
    if (b.dtype != DType::logical && a.dtype() == DType::logical) a = tandem::astype(a, b.dtype == DType::f32 ? DType::f32 : DType::f64);
    const tandem::Operand value = b.host() ? tandem::Operand(b.scalar) : tandem::Operand(b.array);
    auto column_of = [&](const Array& x) { return tandem::reshape(x, tandem::Shape{x.numel(), 1}); };
    Array r;
    try {
        if (subs.size() == 1) {
            const Value& s = subs[0];
            if (is_colon(s)) {
                if (b.host()) r = rt.fill(b.scalar, a.shape(), a.dtype());
                else r = tandem::reshape(as_type(rt, b, a.dtype()), a.shape());
            } else if (mask) {
                r = tandem::assign(a, subscript_array(rt, s), b.host() ? value : tandem::Operand(column_of(b.array)));
            } else {
                std::vector<double> p1;
                for (auto p : pos[0]) p1.push_back(static_cast<double>(p + 1));
                const Array I = rt.array(p1, tandem::Shape{static_cast<std::int64_t>(p1.size()), 1});
                const Array flat = tandem::reshape(a, tandem::Shape{a.numel(), 1});
                r = tandem::reshape(tandem::assign(flat, I, b.host() ? value : tandem::Operand(column_of(b.array))), a.shape());
            }
        } else {
            // Linear positions of the selection (column-major over the subscripts), then one assign.
            const Dims wd = seen_dims(d, subs.size());
            std::vector<double> lin{0};
            std::int64_t stride = 1;
            for (std::size_t k = 0; k < subs.size(); ++k) {
                std::vector<std::int64_t> pk = pos[k];
                if (is_colon(subs[k])) {
                    pk.resize(static_cast<std::size_t>(wd[k]));
                    std::iota(pk.begin(), pk.end(), 0);
                }
                std::vector<double> next;
                next.reserve(lin.size() * pk.size());
                for (auto p : pk)
                    for (double l : lin) next.push_back(l + static_cast<double>(p * stride));
                lin = std::move(next);
                stride *= wd[k];
            }
            for (double& l : lin) l += 1;
            const Array I = rt.array(lin, tandem::Shape{static_cast<std::int64_t>(lin.size()), 1});
            const tandem::Shape full = a.shape();
            const Array flat = tandem::reshape(a, tandem::Shape{a.numel(), 1});
            r = tandem::reshape(tandem::assign(flat, I, b.host() ? value : tandem::Operand(column_of(as_type(rt, b, a.dtype())))), full);
        }
    } catch (const tandem::ShapeError&) {
        throw MatlabError("Unable to perform assignment because the left and right sides have a different number of elements.",
                          "MATLAB:subsassignnumelmismatch");
    }
    return from_array(r);
}

Value brace_assign(tandem::Runtime& rt, const Value* v, const std::vector<Value>& subs, const Value& rhs) {
    if (v && !v->is_cell() && !is_null(*v))
        throw MatlabError("Unable to perform assignment because brace indexing is not supported for variables of this type.",
                          "MATLAB:cellAssToNonCell");
    Grid<Value> g = v && v->is_cell() ? grid_of(v->cell()) : Grid<Value>{};
    Grid<Value> one{{rhs}, 1, 1};
    grid_assign(rt, g, subs, one, Value(empty_matrix(rt)));
    return cell_of(std::move(g));
}

}  // namespace tandem::matlab
