// A fused region lowered for the CPU block interpreter: a list of steps over slots, each slot
// being a register of one block (thread-local scratch that stays in cache), a window straight
// into an input or output array (no copy on the contiguous fast path), or a scalar.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/cpu/kernels.hpp"
#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail::cpu {

/// Element type of a slot: also the index into KernelTable's [type] columns.
enum class ElemType : std::uint8_t { f64 = 0, f32 = 1, u8 = 2 };

class Program {
public:
    /// Lowers `region` for arrays `inputs` -> `outputs`. Data-dependent errors found while
    /// lowering (a NaN scalar converted to logical) are thrown here.
    Program(const Region& region, std::span<const Storage* const> inputs, std::span<Storage* const> outputs,
            const KernelTable& kernels, std::int64_t block_elements);
    /// For a reduce region: lowers its program with no outputs; after run_block, sink(j) is the
    /// block of the value reductions[j] reduces (kept alive to the end of the block).
    struct Sinks {};
    Program(const Region& region, std::span<const Storage* const> inputs, const KernelTable& kernels,
            std::int64_t block_elements, Sinks);

    /// Outputs of at least this many bytes are written with non-temporal stores.
    static constexpr std::size_t kStreamBytes = std::size_t{16} << 20;

    std::int64_t numel() const noexcept { return numel_; }
    /// Bytes of scratch one thread needs to run blocks.
    std::size_t scratch_bytes() const noexcept { return registers_ * block_ * 8; }
    /// Computes elements [start, start + n) of every output; n <= block_elements.
    void run_block(std::int64_t start, std::size_t n, std::byte* scratch) const;
    std::size_t steps() const noexcept { return steps_.size(); }

    /// A reduced value's elements [start, start + n) after run_block(start, n, scratch): typed
    /// data, or one scalar standing for every element.
    struct SinkView {
        ElemType type;
        const void* data;
        bool scalar;
    };
    SinkView sink(std::size_t j, std::int64_t start, const std::byte* scratch) const;

private:
    enum class SlotKind : std::uint8_t { Reg, InputDirect, OutputDirect, Scalar };
    struct Slot {
        SlotKind kind;
        ElemType type;
        std::uint32_t index;  // physical register, base pointer or scalar cell
    };
    enum class StepKind : std::uint8_t { Unary, Binary, Where, Convert, CheckNan, Load, Linspace, Colon, RandU, RandN, Fill };
    struct Step {
        StepKind kind;
        OpKind op;                 // for messages
        unsigned scalars = 0;
        std::uint32_t out = 0;
        std::uint32_t in[3] = {0, 0, 0};
        const void* fn = nullptr;
        std::uint32_t aux = 0;     // index into loads_ (Load)
        double attr[3] = {0, 0, 0};
    };
    struct Load {
        const void* base;
        ElemType src;
        std::vector<InputDim> dims;  // Region::input_dims
    };
    union Cell {
        double f64;
        float f32;
        std::uint8_t u8;
    };
    struct Base {
        std::byte* ptr;
        std::size_t elem;
    };

    class Lowering;
    void allocate_registers();
    void gather(const Load& load, std::int64_t start, std::size_t n, ElemType to, void* out) const;

    std::int64_t numel_ = 0;
    std::int64_t index_base_ = 0;  // Region::index_base: generators number elements from here
    std::size_t block_ = 0;
    std::size_t registers_ = 0;
    std::vector<Slot> slots_;
    std::vector<Step> steps_;
    std::vector<Load> loads_;
    std::vector<Cell> cells_;
    std::vector<Base> bases_;
    std::vector<std::uint32_t> sinks_;  // slots of the reduced values (reduce regions)
};

}  // namespace tandem::detail::cpu
