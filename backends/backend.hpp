// The contract every backend fills: execute one fused region. The scheduler decides where a
// region runs and makes its inputs resident there; the backend only computes.
#pragma once

#include <span>
#include <string_view>

#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail {

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string_view name() const noexcept = 0;
    /// Computes `region`. inputs[i] holds the elements of region.inputs[i]; outputs[j] is
    /// already allocated for region.outputs[j] (numel x element size). Throws a tandem::Error
    /// for a data-dependent failure (a NaN converted to logical); the outputs are then garbage
    /// and the caller discards them.
    virtual void execute(const Region& region, std::span<const Storage* const> inputs,
                         std::span<Storage* const> outputs) = 0;
};

}  // namespace tandem::detail
