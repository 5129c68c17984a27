// MATLAB's display of values (`x =` then the values, format short or long), sprintf's formats,
// num2str and mat2str.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "matlab/interpreter.hpp"

namespace tandem::matlab {

using tandem::DType;

namespace {

std::string printf1(const char* fmt, double x) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, x);
    return buf;
}

std::string size_text(const std::vector<std::int64_t>& d) {
    std::string s;
    for (std::size_t k = 0; k < d.size(); ++k) s += (k ? "\xC3\x97" : "") + std::to_string(d[k]);  // U+00D7
    return s;
}

bool integral(double x) { return std::isfinite(x) && x == std::floor(x); }

std::string special(double x) {
    if (std::isnan(x)) return "NaN";
    return x > 0 ? "Inf" : "-Inf";
}

/// One number as the current format shows it alone (a scalar's display, a struct field).
std::string scalar_text(double x, DType t, DisplayFormat f) {
    if (t == DType::logical) return x != 0 ? "1" : "0";
    if (!std::isfinite(x)) return special(x);
    if (integral(x) && std::fabs(x) < 1e15) return printf1("%.0f", x);
    const double a = std::fabs(x);
    const bool long_ = f == DisplayFormat::long_;
    const int digits = long_ ? (t == DType::f32 ? 7 : 15) : 4;
    if (a >= 1e-3 && a < 1e5) {
        const int int_digits = a < 1 ? 1 : static_cast<int>(std::floor(std::log10(a))) + 1;
        const int decimals = long_ ? std::max(1, digits + 1 - int_digits) : 4;
        return printf1(("%." + std::to_string(decimals) + "f").c_str(), x);
    }
    return printf1(("%." + std::to_string(digits) + "e").c_str(), x);
}

/// A numeric matrix's lines (2-D page), MATLAB-like: integers right-aligned in a common width,
/// others with a common number of decimals, or a common scale factor.
std::string matrix_text(const std::vector<double>& v, std::int64_t rows, std::int64_t cols, DType t, DisplayFormat f) {
    std::vector<std::string> cells(v.size());
    std::string header;
    const bool long_ = f == DisplayFormat::long_;
    bool all_int = true;
    double amax = 0;
    for (double x : v) {
        if (std::isfinite(x)) {
            all_int = all_int && integral(x);
            amax = std::max(amax, std::fabs(x));
        }
    }
    if (t == DType::logical) {
        for (std::size_t k = 0; k < v.size(); ++k) cells[k] = v[k] != 0 ? "1" : "0";
    } else if (all_int && amax < 1e9) {
        for (std::size_t k = 0; k < v.size(); ++k) cells[k] = std::isfinite(v[k]) ? printf1("%.0f", v[k]) : special(v[k]);
    } else {
        double scale = 1;
        const int digits = long_ ? (t == DType::f32 ? 7 : 15) : 4;
        if (amax >= 1e5 || (amax < 1e-3 && amax > 0)) {
            const int e = static_cast<int>(std::floor(std::log10(amax)));
            scale = std::pow(10.0, e);
            header = printf1("   1.0e%+03.0f *\n\n", static_cast<double>(e));
        }
        const double m = amax / scale;
        const int int_digits = m < 1 ? 1 : static_cast<int>(std::floor(std::log10(m))) + 1;
        const int decimals = long_ ? std::max(1, digits + 1 - int_digits) : 4;
        const std::string fmt = "%." + std::to_string(decimals) + "f";
        for (std::size_t k = 0; k < v.size(); ++k)
            cells[k] = std::isfinite(v[k]) ? printf1(fmt.c_str(), v[k] / scale) : special(v[k]);
    }
    std::size_t width = 0;
    for (const auto& c : cells) width = std::max(width, c.size());
    // MATLAB's columns: logical 3 wide more than the digits, integers in 6 (3 spaces at least),
    // other numbers right-aligned in 10 (2 spaces at least).
    std::size_t field = width + 3;
    if (t != DType::logical) field = all_int ? std::max<std::size_t>(6, width + 3) : std::max<std::size_t>(10, width + 2);
    // Columns that fit in 80 characters a block.
    const auto per_block = std::max<std::int64_t>(1, static_cast<std::int64_t>(80 / field));
    std::ostringstream s;
    s << header;
    for (std::int64_t c0 = 0; c0 < cols; c0 += per_block) {
        const std::int64_t c1 = std::min(cols, c0 + per_block);
        if (cols > per_block) {
            if (c1 - c0 == 1) s << "  Column " << c0 + 1 << "\n\n";
            else s << "  Columns " << c0 + 1 << (c1 == cols ? " and " : " through ") << c1 << "\n\n";
        }
        for (std::int64_t i = 0; i < rows; ++i) {
            for (std::int64_t j = c0; j < c1; ++j) {
                const std::string& c = cells[static_cast<std::size_t>(i + rows * j)];
                s << std::string(field - c.size(), ' ') << c;
            }
            s << "\n";
        }
        if (c1 < cols) s << "\n";
    }
    return s.str();
}

std::string brief(tandem::Runtime& rt, const Value& v);

std::string chars_brief(const Chars& c) {
    if (c.is_string) return "\"" + c.data + "\"";
    if (c.rows <= 1) return "'" + c.data + "'";
    return size_text({c.rows, c.cols}) + " char";
}

/// A value inside a cell or a struct field: short (`[1 2 3]`, `[3x3 double]`, `'text'`).
std::string brief(tandem::Runtime& rt, const Value& v) {
    const auto d = dims(v);
    switch (v.v.index()) {
        case 0: {
            const Num& n = v.num();
            const std::int64_t count = numel(v);
            if (count == 0) return d == std::vector<std::int64_t>{0, 0} ? "[]" : "[" + size_text(d) + " " + class_name(v) + "]";
            if (count == 1) {
                const double x = n.host() ? n.scalar : gather(rt, n).at(0);
                return scalar_text(x, n.dtype, DisplayFormat::short_);
            }
            if (d.size() == 2 && d[0] == 1 && count <= 10) {
                const auto h = to_doubles(rt, v, "display");
                std::string s = "[";
                for (std::size_t k = 0; k < h.size(); ++k) s += (k ? " " : "") + scalar_text(h[k], n.dtype, DisplayFormat::short_);
                return s + "]";
            }
            return "[" + size_text(d) + " " + class_name(v) + "]";
        }
        case 1: return chars_brief(v.chars());
        case 2: return "{" + size_text(d) + " cell}";
        case 3: return "[1\xC3\x97" "1 struct]";
        default: return v.handle().fn->name.empty() ? v.handle().fn->text : "@" + v.handle().fn->name;
    }
}

}  // namespace

std::string display_text(tandem::Runtime& rt, const Value& v, DisplayFormat f) {
    const auto d = dims(v);
    std::ostringstream s;
    switch (v.v.index()) {
        case 0: {
            const Num& n = v.num();
            const std::int64_t count = numel(v);
            if (count == 0) {
                if (d == std::vector<std::int64_t>{0, 0}) return "     []\n";
                return "  " + size_text(d) + " empty " + class_name(v) + (n.dtype == DType::logical ? " array\n" : " matrix\n");
            }
            std::vector<double> h = n.host() ? std::vector<double>{n.scalar} : gather(rt, n).to_doubles();
            std::string prefix = n.dtype == DType::logical ? "  logical\n\n" : "";
            if (count == 1) {
                // MATLAB's columns: an integer right-aligned in 6, other numbers after 4 spaces.
                const std::string t = scalar_text(h[0], n.dtype, f);
                std::size_t pad = 3;  // e-notation, logical
                if (integral(h[0]) || !std::isfinite(h[0])) pad = t.size() < 3 ? 6 - t.size() : 3;
                else if (t.find('e') == std::string::npos) pad = t.size() <= 7 ? 10 - t.size() : 3;
                if (n.dtype == DType::logical) pad = 3;
                return prefix + std::string(pad, ' ') + t + "\n";
            }
            if (d.size() <= 2) return prefix + matrix_text(h, d[0], d[1], n.dtype, f);
            // Pages of an N-D array, named by their trailing subscripts.
            const std::int64_t page = d[0] * d[1];
            const std::int64_t pages = count / page;
            std::string out = prefix;
            for (std::int64_t p = 0; p < pages; ++p) {
                std::string name = "(:,:";
                std::int64_t rest = p;
                for (std::size_t k = 2; k < d.size(); ++k) {
                    name += "," + std::to_string(rest % d[k] + 1);
                    rest /= d[k];
                }
                out += "ans" + name + ") =\n\n";
                std::vector<double> pg(h.begin() + p * page, h.begin() + (p + 1) * page);
                out += matrix_text(pg, d[0], d[1], n.dtype, f) + (p + 1 < pages ? "\n" : "");
            }
            return out;
        }
        case 1: {
            const Chars& c = v.chars();
            if (c.is_string) return "    \"" + c.data + "\"\n";
            if (c.rows * c.cols == 0) return "  " + size_text({c.rows, c.cols}) + " empty char array\n";
            for (std::int64_t i = 0; i < c.rows; ++i) {
                std::string row;
                for (std::int64_t j = 0; j < c.cols; ++j) row += c.data[static_cast<std::size_t>(i + c.rows * j)];
                s << "    '" << row << "'\n";
            }
            return s.str();
        }
        case 2: {
            const Cell& c = v.cell();
            if (c.items.empty()) return "  " + size_text(d) + " empty cell array\n";
            s << "  " << size_text(d) << " cell array\n\n";
            for (std::int64_t i = 0; i < c.rows; ++i) {
                for (std::int64_t j = 0; j < c.cols; ++j) s << "    {" << brief(rt, c.items[static_cast<std::size_t>(i + c.rows * j)]) << "}";
                s << "\n";
            }
            return s.str();
        }
        case 3: {
            const Struct& st = v.strukt();
            if (st.fields.empty()) return "  struct with no fields.\n";
            std::size_t width = 0;
            for (const auto& [k, _] : st.fields) width = std::max(width, k.size());
            s << "  struct with fields:\n\n";
            for (const auto& [k, x] : st.fields) s << std::string(4 + width - k.size(), ' ') << k << ": " << brief(rt, x) << "\n";
            return s.str();
        }
        default: {
            const Callable& c = *v.handle().fn;
            return "  function_handle with value:\n\n    " + (c.name.empty() ? c.text : "@" + c.name) + "\n";
        }
    }
}

// ---- sprintf ---------------------------------------------------------------------------------

namespace {

struct Item {
    bool text = false;
    std::string s;
    double x = 0;
};

std::vector<Item> items_of(tandem::Runtime& rt, const std::vector<Value>& args) {
    std::vector<Item> out;
    for (const Value& a : args) {
        if (a.is_chars()) {
            out.push_back({true, a.chars().data, 0});
        } else if (a.is_num()) {
            for (double x : to_doubles(rt, a, "sprintf")) out.push_back({false, "", x});
        } else if (a.is_cell()) {
            throw MatlabError("Function is not defined for 'cell' inputs.", "MATLAB:sprintf:InvalidInputType");
        } else {
            throw MatlabError("Function is not defined for '" + class_name(a) + "' inputs.", "MATLAB:sprintf:InvalidInputType");
        }
    }
    return out;
}

/// The escapes sprintf's format understands (\n \t \\ \a \r \f \b \v \xNN \NNN) and %%.
std::string unescape(const std::string& f) {
    std::string out;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '\\' || i + 1 == f.size()) {
            out += f[i];
            continue;
        }
        const char c = f[++i];
        switch (c) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case '\\': out += '\\'; break;
            case 'x': {
                std::size_t j = i + 1;
                int v = 0;
                while (j < f.size() && j < i + 3 && std::isxdigit(static_cast<unsigned char>(f[j]))) v = v * 16 + std::stoi(std::string(1, f[j++]), nullptr, 16);
                out += static_cast<char>(v);
                i = j - 1;
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    std::size_t j = i;
                    int v = 0;
                    while (j < f.size() && j < i + 3 && f[j] >= '0' && f[j] <= '7') v = v * 8 + (f[j++] - '0');
                    out += static_cast<char>(v);
                    i = j - 1;
                } else {
                    out += '\\';
                    out += c;
                }
        }
    }
    return out;
}

/// Text in a numeric conversion's width and flags (`%5d` of Inf is `  Inf`).
std::string text_as(const std::string& spec, const std::string& text) {
    std::string w = spec.substr(0, spec.size() - 1);
    if (const auto dot = w.find('.'); dot != std::string::npos) w = w.substr(0, dot);
    std::vector<char> buf(text.size() + 256);
    std::snprintf(buf.data(), buf.size(), (w + "s").c_str(), text.c_str());
    return buf.data();
}

std::string number_as(const std::string& spec, char conv, double x) {
    // A value %d cannot show (not an integer) is shown as %e, as MATLAB does (flags and width kept).
    std::string s = spec;
    if ((conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x' || conv == 'X' || conv == 'o' || conv == 'c') && !integral(x)) {
        if (!std::isfinite(x)) return text_as(spec, special(x));
        s.back() = 'e';
        return printf1(s.c_str(), x);
    }
    if (conv == 'd' || conv == 'i' || conv == 'u') {
        s.back() = 'l';
        s += 'd';
        char buf[128];
        std::snprintf(buf, sizeof buf, s.c_str(), static_cast<long long>(x));
        return buf;
    }
    if (conv == 'x' || conv == 'X' || conv == 'o') {
        s.back() = 'l';
        s += 'l';
        s += conv;
        char buf[128];
        std::snprintf(buf, sizeof buf, s.c_str(), static_cast<unsigned long long>(static_cast<long long>(x)));
        return buf;
    }
    if (!std::isfinite(x) && (conv == 'f' || conv == 'e' || conv == 'g' || conv == 'E' || conv == 'G')) return text_as(spec, special(x));
    return printf1(s.c_str(), x);
}

}  // namespace

std::string format_text(tandem::Runtime& rt, const std::string& format, const std::vector<Value>& args) {
    const std::string f = unescape(format);
    std::vector<Item> items = items_of(rt, args);
    // A char argument spread over numeric conversions: its characters one by one.
    std::string out;
    std::size_t next = 0;
    std::size_t char_pos = 0;  // inside a text item consumed by %d/%c one char at a time
    bool first_pass = true;
    for (;;) {
        bool consumed = false;
        for (std::size_t i = 0; i < f.size(); ++i) {
            if (f[i] != '%') {
                out += f[i];
                continue;
            }
            if (i + 1 < f.size() && f[i + 1] == '%') {
                out += '%';
                ++i;
                continue;
            }
            std::size_t j = i + 1;
            while (j < f.size() && std::string("-+ #0").find(f[j]) != std::string::npos) ++j;
            while (j < f.size() && (std::isdigit(static_cast<unsigned char>(f[j])) || f[j] == '.' || f[j] == '*')) ++j;
            while (j < f.size() && (f[j] == 'l' || f[j] == 'h')) ++j;
            if (j >= f.size()) {
                out += f.substr(i);
                break;
            }
            const char conv = f[j];
            std::string spec = f.substr(i, j - i);
            spec.erase(std::remove(spec.begin(), spec.end(), 'l'), spec.end());
            spec.erase(std::remove(spec.begin(), spec.end(), 'h'), spec.end());
            spec += conv;
            i = j;
            if (next >= items.size()) {
                if (!first_pass || !items.empty()) goto done;  // the data ran out: stop here
                // No data at all: conversions print nothing, the text around them prints once.
                continue;
            }
            consumed = true;
            Item& it = items[next];
            if (conv == 's') {
                if (it.text) {
                    const std::string rest = it.s.substr(char_pos);
                    std::vector<char> buf(rest.size() + 256);
                    std::snprintf(buf.data(), buf.size(), spec.c_str(), rest.c_str());
                    out += buf.data();
                    ++next;
                    char_pos = 0;
                } else {
                    // A number through %s: MATLAB prints an integer as the character of that
                    // code and any other number as %e.
                    const double x = it.x;
                    std::string t = integral(x) ? std::string(1, static_cast<char>(static_cast<int>(x))) : printf1("%e", x);
                    if (!std::isfinite(x)) t = special(x);
                    std::vector<char> buf(t.size() + 256);
                    std::snprintf(buf.data(), buf.size(), spec.c_str(), t.c_str());
                    out += buf.data();
                    ++next;
                }
                continue;
            }
            double x;
            if (it.text) {
                if (it.s.empty()) {
                    ++next;
                    char_pos = 0;
                    continue;
                }
                x = static_cast<unsigned char>(it.s[char_pos]);
                if (++char_pos >= it.s.size()) {
                    ++next;
                    char_pos = 0;
                }
            } else {
                x = it.x;
                ++next;
            }
            if (conv == 'c') {
                out += integral(x) ? std::string(1, static_cast<char>(static_cast<int>(x))) : number_as(spec.substr(0, spec.size() - 1) + "e", 'e', x);
                continue;
            }
            if (std::string("dfeEgGiuxXo").find(conv) == std::string::npos)
                throw MatlabError(std::string("Invalid format specifier '%") + conv + "'.", "MATLAB:sprintf:invalidFormat");
            out += number_as(spec, conv, x);
        }
        first_pass = false;
        if (next >= items.size() || !consumed) break;
    }
done:
    return out;
}

std::string num2str(tandem::Runtime& rt, const Value& v, const std::string& format) {
    if (v.is_chars()) return v.chars().data;
    const auto x = to_doubles(rt, v, "num2str");
    const auto d = dims(v);
    if (!format.empty()) return format_text(rt, format, {v});
    if (x.size() == 1) {
        const double a = x[0];
        if (integral(a) || !std::isfinite(a)) return std::isfinite(a) ? printf1("%.0f", a) : special(a);
        const int sig = std::max(static_cast<int>(std::floor(std::log10(std::fabs(a)))) + 5, 5);
        return printf1(("%." + std::to_string(std::min(sig, 16)) + "g").c_str(), a);
    }
    // Rows of columns separated by two spaces, right-aligned.
    std::vector<std::string> cells;
    std::size_t width = 0;
    bool all_int = std::all_of(x.begin(), x.end(), [](double a) { return integral(a) || !std::isfinite(a); });
    for (double a : x) {
        cells.push_back(!std::isfinite(a) ? special(a) : all_int ? printf1("%.0f", a) : printf1("%.4f", a));
        width = std::max(width, cells.back().size());
    }
    const std::int64_t rows = d[0], cols = static_cast<std::int64_t>(x.size()) / std::max<std::int64_t>(1, rows);
    std::string out;
    for (std::int64_t i = 0; i < rows; ++i) {
        if (i) out += "\n";
        std::string line;
        for (std::int64_t j = 0; j < cols; ++j) {
            const std::string& c = cells[static_cast<std::size_t>(i + rows * j)];
            line += std::string(width + (j ? 2 : 0) - c.size(), ' ') + c;
        }
        out += line;
    }
    return out;
}

std::string mat2str(tandem::Runtime& rt, const Value& v, int precision) {
    if (v.is_chars()) return "'" + v.chars().data + "'";
    const auto x = to_doubles(rt, v, "mat2str");
    const auto d = dims(v);
    if (d.size() > 2) throw MatlabError("Input matrix must be 2-D.", "MATLAB:mat2str:TwoDInput");
    const bool logical = v.is_num() && v.num().dtype == DType::logical;
    auto one = [&](double a) {
        if (logical) return std::string(a != 0 ? "true" : "false");
        if (!std::isfinite(a)) return special(a);
        return printf1(("%." + std::to_string(precision) + "g").c_str(), a);
    };
    if (x.size() == 1) return one(x[0]);
    std::string s = "[";
    for (std::int64_t i = 0; i < d[0]; ++i) {
        if (i) s += ";";
        for (std::int64_t j = 0; j < d[1]; ++j) s += (j ? " " : "") + one(x[static_cast<std::size_t>(i + d[0] * j)]);
    }
    return s + "]";
}

}  // namespace tandem::matlab
