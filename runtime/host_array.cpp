#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/memory.hpp"
#include "tandem/error.hpp"
#include "tandem/host_array.hpp"

namespace tandem {

HostArray::HostArray() = default;

HostArray::HostArray(std::shared_ptr<const detail::Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype) {}

const void* HostArray::raw(DType expected, const char* type_name) const {
    if (dtype_ != expected)
        throw DTypeError(std::string("HostArray::data<") + type_name + ">(): the array is " +
                         std::string(dtype_name(dtype_)) + " " + shape_.to_string() + ", not " +
                         std::string(dtype_name(expected)));
    return storage_ ? storage_->data() : nullptr;
}

double HostArray::at(std::int64_t i) const {
    if (i < 0 || i >= numel())
        throw ValueError("HostArray::at: index " + std::to_string(i) + " is out of range for " + shape_.to_string() +
                         " (" + std::to_string(numel()) + " elements)");
    const void* p = storage_->data();
    switch (dtype_) {
        case DType::f64: return static_cast<const double*>(p)[i];
        case DType::f32: return static_cast<double>(static_cast<const float*>(p)[i]);
        case DType::logical: return static_cast<const std::uint8_t*>(p)[i];
    }
    return 0;
}

double HostArray::at(std::initializer_list<std::int64_t> subscripts) const {
    std::int64_t linear = 0, stride = 1;
    int d = 0;
    for (std::int64_t s : subscripts) {
        std::int64_t extent = shape_[d];
        if (s < 0 || s >= extent)
            throw ValueError("HostArray::at: subscript " + std::to_string(s) + " in dimension " + std::to_string(d + 1) +
                             " is out of range for " + shape_.to_string());
        linear += s * stride;
        stride *= extent;
        ++d;
    }
    return at(linear);
}

std::vector<double> HostArray::to_doubles() const {
    std::vector<double> v(static_cast<std::size_t>(numel()));
    for (std::int64_t i = 0; i < numel(); ++i) v[static_cast<std::size_t>(i)] = at(i);
    return v;
}

std::string HostArray::to_string(std::int64_t max_elements) const {
    std::ostringstream os;
    os << shape_.to_string() << " " << dtype_name(dtype_) << "\n";
    if (numel() == 0) return os.str() + "  (empty)\n";
    auto fmt = [&](double v) {
        char buf[32];
        if (dtype_ == DType::logical) std::snprintf(buf, sizeof buf, "%6d", static_cast<int>(v));
        else std::snprintf(buf, sizeof buf, "%12.5g", v);
        return std::string(buf);
    };
    // Pages of 2-D slices, as MATLAB prints N-D arrays: (:,:,k).
    const std::int64_t rows = shape_[0], cols = shape_[1], page = rows * cols;
    std::int64_t shown = 0;
    for (std::int64_t p = 0; p * page < numel(); ++p) {
        if (shape_.ndims() > 2) {
            os << "(:,:";
            std::int64_t rest = p;
            for (int d = 2; d < shape_.ndims(); ++d) {
                os << "," << (rest % shape_[d]) + 1;
                rest /= shape_[d];
            }
            os << ")\n";
        }
        for (std::int64_t r = 0; r < rows; ++r) {
            for (std::int64_t c = 0; c < cols; ++c) {
                if (shown++ >= max_elements) return os.str() + "  ...\n";
                os << fmt(at(p * page + c * rows + r));
            }
            os << "\n";
        }
    }
    return os.str();
}

}  // namespace tandem
