// Array: a lazy N-D array. Every op on Arrays returns a new Array at once, naming a value in
// the runtime's task graph; nothing is computed until a gather needs it.
//
//   tandem::Runtime rt;
//   tandem::Array x = rt.linspace(0, 1, 1000000);
//   tandem::Array y = tandem::exp(-x * x) + 1.0;       // builds a graph, no work yet
//   tandem::HostArray h = y.gather().get();            // one fused pass over x
#pragma once

#include "tandem/export.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include "tandem/dtype.hpp"
#include "tandem/error.hpp"
#include "tandem/future.hpp"
#include "tandem/host_array.hpp"
#include "tandem/shape.hpp"

namespace tandem {

class Runtime;

namespace detail {
struct Node;
}

class TANDEM_API Array {
public:
    /// A null handle; any use other than valid() or assignment throws tandem::Error.
    Array() = default;
    explicit Array(std::shared_ptr<detail::Node> node) : node_(std::move(node)) {}

    bool valid() const noexcept { return node_ != nullptr; }
    const Shape& shape() const;
    DType dtype() const;
    std::int64_t numel() const { return shape().numel(); }
    int ndims() const { return shape().ndims(); }
    /// MATLAB's size(A, d) with a 0-based d.
    std::int64_t size(int d) const { return shape()[d]; }
    /// Made by to_device (MATLAB's gpuArray), or computed from such a value: its regions run on a
    /// device (tandem/ops.hpp).
    bool device_requested() const;

    /// Starts the computation of this value (if it has not started) and returns a future of
    /// its elements in host memory. Never blocks. Errors of the computation (of this value or
    /// of anything it depends on) arrive through the future.
    Future<HostArray> gather() const;

    /// The runtime that owns this value.
    Runtime& runtime() const;

    /// The graph below this value, one node a line (for debugging and logs).
    std::string describe() const;

    const std::shared_ptr<detail::Node>& node() const noexcept { return node_; }

private:
    std::shared_ptr<detail::Node> node_;
};

/// An operand of an elementwise op: an Array or a plain number (a double scalar that takes the
/// other operand's runtime). Lets `x + 1.0`, `2 * x` and `tandem::max(x, 0)` read naturally.
class Operand {
public:
    Operand(const Array& a) : array_(a) {  // NOLINT: implicit by design
        if (!a.valid()) throw Error("use of a null tandem::Array as an operand (default-constructed or moved from)");
    }
    Operand(double v) : scalar_(v) {}       // NOLINT: implicit by design
    Operand(int v) : scalar_(v) {}          // NOLINT: implicit by design
    bool is_array() const noexcept { return array_.valid(); }
    const Array& array() const noexcept { return array_; }
    double scalar() const noexcept { return scalar_; }

private:
    Array array_;
    double scalar_ = 0.0;
};

}  // namespace tandem
