// HostArray: an immutable array in host memory, what a gather delivers. Copies share the
// same elements (cheap); nothing can change them.
#pragma once

#include "tandem/export.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/dtype.hpp"
#include "tandem/shape.hpp"

namespace tandem {

namespace detail {
class Storage;
}

class TANDEM_API HostArray {
public:
    /// An empty 0x0 double array.
    HostArray();
    HostArray(std::shared_ptr<const detail::Storage> storage, Shape shape, DType dtype);

    const Shape& shape() const noexcept { return shape_; }
    DType dtype() const noexcept { return dtype_; }
    std::int64_t numel() const noexcept { return shape_.numel(); }

    /// The elements in column-major order. T must match dtype(): double for f64, float for
    /// f32, std::uint8_t for logical; otherwise DTypeError.
    template <class T> const T* data() const;
    template <class T> std::span<const T> span() const { return {data<T>(), static_cast<std::size_t>(numel())}; }

    /// Element at a 0-based linear (column-major) index, converted to double.
    /// Out of range: ValueError naming the index and numel().
    double at(std::int64_t linear_index) const;
    /// Element at 0-based subscripts (missing trailing subscripts are 0).
    double at(std::initializer_list<std::int64_t> subscripts) const;
    /// All elements converted to double.
    std::vector<double> to_doubles() const;

    /// MATLAB-like display: the class, the size and (up to a limit) the values.
    std::string to_string(std::int64_t max_elements = 200) const;

    /// The storage shared with the runtime (internal).
    const std::shared_ptr<const detail::Storage>& storage() const noexcept { return storage_; }

private:
    const void* raw(DType expected, const char* type_name) const;
    std::shared_ptr<const detail::Storage> storage_;
    Shape shape_;
    DType dtype_ = DType::f64;
};

template <> inline const double* HostArray::data<double>() const { return static_cast<const double*>(raw(DType::f64, "double")); }
template <> inline const float* HostArray::data<float>() const { return static_cast<const float*>(raw(DType::f32, "float")); }
template <> inline const std::uint8_t* HostArray::data<std::uint8_t>() const {
    return static_cast<const std::uint8_t*>(raw(DType::logical, "std::uint8_t"));
}

}  // namespace tandem
