// The CPU executor: runs a fused region block by block (numexpr-style), blocks in parallel on
// oneTBB in the caller's task arena.
#pragma once

#include <cstdint>

#include "backends/backend.hpp"
#include "backends/cpu/kernels.hpp"

namespace tandem::detail::cpu {

class CpuBackend final : public Backend {
public:
    CpuBackend(const KernelTable& kernels, std::int64_t block_elements, HostPool& pool)
        : kernels_(kernels), block_(block_elements), pool_(pool) {}
    std::string_view name() const noexcept override { return "cpu"; }
    bool on_host() const noexcept override { return true; }
    const char* isa() const noexcept { return kernels_.isa; }
    /// Runs the region now, on this thread (and the arena's), then calls done. Every input must
    /// have a host copy.
    void submit(Submission s) override;

private:
    void execute(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    void run_matmul(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    void run_transpose(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    void run_cat(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    void run_remap(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    /// A user kernel's C++ body over its range (backends/cpu/user_kernel.cpp).
    void run_kernel(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    void run_elementwise(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs);
    const KernelTable& kernels_;
    std::int64_t block_;
    HostPool& pool_;
};

}  // namespace tandem::detail::cpu
