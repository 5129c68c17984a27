// The interpreter's builtins for text, errors, time, the workspace and MATLAB's GPU arrays
// (disp, fprintf, sprintf, num2str, strcmp, error, warning, assert, tic/toc, format, clear, exist,
// gpuArray, gather, gpuDevice, existsOnGPU).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <regex>

#include "matlab/builtins.hpp"

namespace tandem::matlab {

using tandem::DType;

namespace {

std::string gpu_line(Interpreter& I) {
    for (const auto& d : I.runtime().info().devices)
        if (d.find("[in use") != std::string::npos) return d;
    return "";
}

void print_out(Interpreter& I, int fid, const std::string& s) {
    if (fid == 2) std::cerr << s;
    else I.out() << s;
}

}  // namespace

void add_system_builtins(std::unordered_map<std::string, Builtin>& t) {
    // Text.
    t["disp"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        const Value& v = a[0];
        if (v.is_chars()) {
            const Chars& c = v.chars();
            if (c.is_string) {
                I.out() << c.data << "\n";
                return {};
            }
            for (std::int64_t i = 0; i < c.rows; ++i) {
                std::string row;
                for (std::int64_t j = 0; j < c.cols; ++j) row += c.data[static_cast<std::size_t>(i + c.rows * j)];
                I.out() << row << "\n";
            }
            return {};
        }
        if (v.is_num() && is_empty(v)) return {};
        std::string text = display_text(I.runtime(), v, I.format());
        const std::string header = "  logical\n\n";  // display's, not disp's
        if (text.rfind(header, 0) == 0) text = text.substr(header.size());
        I.out() << text;
        return {};
    };
    t["display"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        I.display("ans", a[0]);
        return {};
    };
    t["fprintf"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        int fid = 1;
        std::size_t first = 0;
        if (a[0].is_num()) {
            fid = static_cast<int>(num1(I, a[0], "fileID"));
            if (fid != 1 && fid != 2) fail("fprintf: only the screen (1) and standard error (2) can be written here.", "MATLAB:fprintf:InvalidFid");
            first = 1;
            if (a.size() < 2) fail("Not enough input arguments.", "MATLAB:minrhs");
        }
        const std::string text = format_text(I.runtime(), text_arg(a[first], "format"), Args(a.begin() + static_cast<std::ptrdiff_t>(first) + 1, a.end()));
        print_out(I, fid, text);
        return {};
    };
    t["sprintf"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        return {text_value(format_text(I.runtime(), text_arg(a[0], "format"), Args(a.begin() + 1, a.end())))};
    };
    t["num2str"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 2);
        if (a.size() == 2 && a[1].is_num())
            return {text_value(format_text(I.runtime(), "%." + std::to_string(static_cast<int>(num1(I, a[1], "precision"))) + "g", {a[0]}))};
        return {text_value(num2str(I.runtime(), a[0], a.size() == 2 ? text_arg(a[1], "format") : ""))};
    };
    t["int2str"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        const Num n = to_num(I.runtime(), a[0], "int2str");
        const Value rounded = n.host() ? scalar(std::round(n.scalar), n.dtype) : from_array(tandem::round(n.array));
        return {text_value(num2str(I.runtime(), rounded))};
    };
    t["mat2str"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 2);
        return {text_value(mat2str(I.runtime(), a[0], a.size() == 2 ? static_cast<int>(num1(I, a[1], "precision")) : 15))};
    };
    t["str2double"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        if (!a[0].is_chars()) return {scalar(std::numeric_limits<double>::quiet_NaN())};
        const std::string s = a[0].chars().data;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        std::string rest(end);
        rest.erase(std::remove_if(rest.begin(), rest.end(), [](unsigned char c) { return std::isspace(c); }), rest.end());
        return {scalar(end == s.c_str() || !rest.empty() ? std::numeric_limits<double>::quiet_NaN() : v)};
    };
    t["strcmp"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 2, 2);
        return {logical_scalar(a[0].is_chars() && a[1].is_chars() && a[0].chars().data == a[1].chars().data &&
                               dims(a[0]) == dims(a[1]))};
    };
    t["strcmpi"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 2, 2);
        if (!a[0].is_chars() || !a[1].is_chars()) return {logical_scalar(false)};
        std::string x = a[0].chars().data, y = a[1].chars().data;
        std::transform(x.begin(), x.end(), x.begin(), ::tolower);
        std::transform(y.begin(), y.end(), y.begin(), ::tolower);
        return {logical_scalar(x == y)};
    };
    t["upper"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        Chars c = a[0].chars();
        std::transform(c.data.begin(), c.data.end(), c.data.begin(), ::toupper);
        return {Value(std::move(c))};
    };
    t["lower"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        Chars c = a[0].chars();
        std::transform(c.data.begin(), c.data.end(), c.data.begin(), ::tolower);
        return {Value(std::move(c))};
    };
    t["strtrim"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        std::string s = text_arg(a[0], "text");
        const auto b = s.find_first_not_of(" \t\n\r\f\v");
        const auto e = s.find_last_not_of(" \t\n\r\f\v");
        return {text_value(b == std::string::npos ? "" : s.substr(b, e - b + 1))};
    };
    t["strcat"] = [](Interpreter&, Args& a, int) -> Out {
        std::string s;
        for (const Value& v : a) {
            std::string x = text_arg(v, "text");
            if (!v.chars().is_string) x.erase(x.find_last_not_of(" \t") + 1);  // char arrays lose trailing blanks
            s += x;
        }
        return {text_value(s)};
    };
    t["blanks"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {text_value(std::string(static_cast<std::size_t>(std::max(0.0, num1(I, a[0], "n"))), ' '))};
    };

    // Control, errors, time.
    t["error"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        if (a[0].is_struct()) {
            const Value* m = a[0].strukt().find("message");
            const Value* id = a[0].strukt().find("identifier");
            throw MatlabError(m ? text_arg(*m, "message") : "", id ? text_arg(*id, "identifier") : "");
        }
        const std::string first = text_arg(a[0], "message");
        // error('id:part', fmt, ...): an identifier when the first argument looks like one and more follow.
        const bool has_id = a.size() >= 2 && first.find(':') != std::string::npos && first.find(' ') == std::string::npos;
        if (has_id) throw MatlabError(format_text(I.runtime(), text_arg(a[1], "message"), Args(a.begin() + 2, a.end())), first);
        if (a.size() == 1) throw MatlabError(first, "");
        throw MatlabError(format_text(I.runtime(), first, Args(a.begin() + 1, a.end())), "");
    };
    t["warning"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        const std::string first = text_arg(a[0], "message");
        if (first == "off" || first == "on" || first == "query") return {};
        const bool has_id = a.size() >= 2 && first.find(':') != std::string::npos && first.find(' ') == std::string::npos;
        const std::string text = has_id ? format_text(I.runtime(), text_arg(a[1], "message"), Args(a.begin() + 2, a.end()))
                                        : a.size() == 1 ? first : format_text(I.runtime(), first, Args(a.begin() + 1, a.end()));
        I.out().flush();
        std::cerr << "Warning: " << text << "\n";
        return {};
    };
    t["assert"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1024);
        if (is_true(I.runtime(), a[0], "assert")) return {};
        if (a.size() == 1) throw MatlabError("Assertion failed.", "MATLAB:assertion:failed");
        const std::string first = text_arg(a[1], "message");
        const bool has_id = a.size() >= 3 && first.find(':') != std::string::npos && first.find(' ') == std::string::npos;
        if (has_id) throw MatlabError(format_text(I.runtime(), text_arg(a[2], "message"), Args(a.begin() + 3, a.end())), first);
        throw MatlabError(format_text(I.runtime(), first, Args(a.begin() + 2, a.end())), "MATLAB:assertion:failed");
    };
    t["tic"] = [](Interpreter& I, Args& a, int nargout) -> Out {
        need(a, 0, 0);
        const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        I.tic_start() = now;
        if (nargout > 0) return {scalar(now * 1e6)};
        return {};
    };
    t["toc"] = [](Interpreter& I, Args& a, int nargout) -> Out {
        need(a, 0, 1);
        const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        const double start = a.empty() ? I.tic_start() : num1(I, a[0], "tic value") / 1e6;
        const double elapsed = now - start;
        if (nargout > 0) return {scalar(elapsed)};
        char buf[64];
        std::snprintf(buf, sizeof buf, "Elapsed time is %.6f seconds.\n", elapsed);
        I.out() << buf;
        return {};
    };
    t["format"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 0, 2);
        const std::string f = a.empty() ? "short" : text_arg(a[0], "format");
        if (f == "short" || f == "default") I.set_format(DisplayFormat::short_);
        else if (f == "long") I.set_format(DisplayFormat::long_);
        else if (f != "compact" && f != "loose") fail("format: supported are short and long.", "TANDEM:unsupported");
        return {};
    };
    t["clc"] = t["close"] = t["more"] = t["drawnow"] = [](Interpreter&, Args&, int) -> Out { return {}; };
    t["clear"] = t["clearvars"] = [](Interpreter& I, Args& a, int) -> Out {
        if (a.empty() || is_text(a[0], "all") || is_text(a[0], "variables")) {
            I.variables().clear();
            return {};
        }
        for (const Value& v : a) I.variables().erase(text_arg(v, "variable name"));
        return {};
    };
    t["exist"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 2);
        const std::string name = text_arg(a[0], "name");
        if (I.variables().count(name)) return {scalar(1)};
        if (builtins().count(name)) return {scalar(5)};
        return {scalar(0)};
    };

    // GPU arrays (MATLAB's gpuArray API). For semantics no-ops: a gpuArray is an array of its
    // class (class() says 'double'; isa(x, 'gpuArray') and existsOnGPU say what it is) whose
    // regions, and those of everything computed from it, run and stay on a device
    // (tandem::to_device); without a device (or with TANDEM_PLACEMENT=cpu) it is placed as any.
    t["gpuArray"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        if (!a[0].is_num()) fail("gpuArray: only numeric and logical arrays can go to the GPU.", "parallel:gpu:array:InvalidData");
        const Num& n = a[0].num();
        const tandem::Array g = tandem::to_device(n.host() ? I.runtime().scalar(n.scalar, n.dtype) : n.array);
        I.runtime().evaluate({g});  // copied to the device now (asynchronously), as MATLAB does
        return {from_array(g)};
    };
    t["gather"] = [](Interpreter& I, Args& a, int) -> Out {
        // The value computed and brought to the host (a sync point, as in MATLAB): a scalar
        // becomes a host scalar; a gpuArray becomes plain data again (placed as any value);
        // any other array keeps its node (now with a host copy).
        need(a, 1, 1);
        if (!a[0].is_num() || a[0].num().host()) return {a[0]};
        const tandem::HostArray h = a[0].num().array.gather().get();
        if (h.numel() == 1) return {scalar(h.at(0), h.dtype())};
        if (is_gpu_array(a[0])) return {from_array(I.runtime().array(h))};
        return {a[0]};
    };
    t["existsOnGPU"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 1, 1);
        return {logical_scalar(is_gpu_array(a[0]) && !gpu_line(I).empty())};
    };
    t["isgpuarray"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        return {logical_scalar(is_gpu_array(a[0]))};
    };
    t["classUnderlying"] = [](Interpreter&, Args& a, int) -> Out {
        need(a, 1, 1);
        return {text_value(class_name(a[0]))};
    };
    t["underlyingType"] = t["classUnderlying"];
    t["gpuDevice"] = [](Interpreter& I, Args& a, int) -> Out {
        need(a, 0, 1);
        const std::string line = gpu_line(I);
        if (line.empty()) fail("No supported GPU device was found: " + I.runtime().info().devices_note, "parallel:gpu:device:CouldNotLoadDriver");
        Struct s;
        const auto sp = line.find(' ');
        const std::string id = line.substr(0, sp);
        const auto colon = id.find(':');
        s.fields.emplace_back("device_id", scalar(colon == std::string::npos ? 1 : std::stod(id.substr(colon + 1)) + 1));
        std::string name = line.substr(sp + 1);
        if (const auto paren = name.find(" ("); paren != std::string::npos) name = name.substr(0, paren);
        s.fields.emplace_back("name", text_value(name));
        std::smatch m;
        std::string vendor;
        if (std::regex_search(line, m, std::regex("vendor ([^,\\]]+)"))) vendor = m[1];
        s.fields.emplace_back("vendor", text_value(vendor));
        double bytes = 0;
        if (std::regex_search(line, m, std::regex("([0-9]+) MiB"))) bytes = std::stod(m[1]) * 1048576.0;
        s.fields.emplace_back("memory_bytes", scalar(bytes));
        s.fields.emplace_back("backend", text_value("vulkan"));
        return {Value(std::move(s))};
    };
}

}  // namespace tandem::matlab
