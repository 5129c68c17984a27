// The CPU executor: runs a fused region block by block (numexpr-style), blocks in parallel on
// oneTBB in the caller's task arena.
#pragma once

#include <cstdint>

#include "backends/backend.hpp"
#include "backends/cpu/kernels.hpp"

namespace tandem::detail::cpu {

class CpuBackend final : public Backend {
public:
    CpuBackend(const KernelTable& kernels, std::int64_t block_elements)
        : kernels_(kernels), block_(block_elements) {}
    std::string_view name() const noexcept override { return "cpu"; }
    const char* isa() const noexcept { return kernels_.isa; }
    void execute(const Region& region, std::span<const Storage* const> inputs,
                 std::span<Storage* const> outputs) override;

private:
    const KernelTable& kernels_;
    std::int64_t block_;
};

}  // namespace tandem::detail::cpu
