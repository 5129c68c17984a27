// Repeated steps in a region's program: a program built by a loop in the user's code (a time
// step, an iteration of a solver) is the same block of instructions over and over, each copy
// reading the copy before it. Backends that compile the program (the Vulkan code generator) turn
// such a run into a loop, so that compile time grows with the step, not with the step count.
#pragma once

#include <cstdint>
#include <optional>

#include "graph/region.hpp"

namespace tandem::detail {

/// A run of `count` copies of a block of `period` instructions starting at `begin`: copy t is
/// program[begin + t * period, begin + (t + 1) * period). Guarantees, for every copy t >= 1:
///  - instruction j of copy t has the op, types, arguments' kinds and types, input indices and
///    attributes (except generators' parameters, which are scalar operands) of instruction j of
///    copy 1, and `x.^2` where copy 1 squares (the only value-dependent lowering);
///  - each of its value operands is either a value of copy t - 1 or t (the same position as in
///    copy 1, shifted by period per copy) or one value from before the run (the same for every copy);
///  - values of copies 1 .. count - 2 are read only by the next copy: instructions after the
///    run, outputs and reductions read values from before copy 1 or of the last copy;
///  - carried position j (a value of copy t - 1 read by copy t, or of the last copy read after
///    the run) has the same type in copy 0 as in copy 1.
/// Copy 0 is free (only its types matter): a backend computes it straight, then copies 1 ..
/// count - 1 as iterations of a loop over copy 1's code.
struct Repeat {
    std::uint32_t begin = 0, period = 0, count = 0;
    std::uint32_t end() const noexcept { return begin + period * count; }
    /// The instructions a loop saves: every copy but the template (copy 1) and copy 0.
    std::uint32_t saved() const noexcept { return period * (count - 2); }
};

/// The run that saves the most instructions, if one saves at least `min_saved` with at least
/// `min_count` copies.
std::optional<Repeat> find_repeat(const Region& region, std::uint32_t min_count = 4, std::uint32_t min_saved = 24);

}  // namespace tandem::detail
