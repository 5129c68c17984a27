// A command group as the graph holds it (tandem/kernel.hpp builds it): what the Kernel nodes of
// one group compute, shared by them and by the region fusion makes of them. Immutable once made,
// except for the bindings, which the CPU executor fills while the C++ body runs.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/dtype.hpp"
#include "tandem/kernel.hpp"
#include "tandem/shape.hpp"

namespace tandem::detail {

struct Node;

/// One accessor of a group, in the order the group required them.
struct KernelAccess {
    std::string buffer;   ///< the buffer's name, for messages
    DType dtype = DType::f64;
    Shape shape;          ///< the buffer's
    AccessMode mode = AccessMode::read;
    bool no_init = false;
    /// The operand (a position among the Kernel nodes' inputs) holding the version it reads: for
    /// read, and read_write without no_init; else -1.
    int input = -1;
    /// Its slot among the group's outputs (the written versions, in accessor order): for write and
    /// read_write; else -1.
    int output = -1;
    bool reads() const noexcept { return input >= 0; }
    bool writes() const noexcept { return output >= 0; }
};

struct KernelCall {
    std::string name;      ///< the kernel's, or "parallel_for" / "host_task"
    std::string glsl;      ///< its GLSL body ("": none)
    std::vector<std::string> accessor_names, scalar_names;
    bool scalars_f32 = false;
    std::vector<double> scalars;
    /// The C++ body over items [first, last) of the range (empty: none).
    std::function<void(std::int64_t, std::int64_t)> cpu;
    bool host_task = false;  ///< the C++ body runs once, on one thread (items [0, 1))
    std::array<std::int64_t, 3> range{1, 1, 1};
    int range_dims = 1;
    std::vector<KernelAccess> accesses;
    std::size_t written = 0;  ///< outputs 0..written-1 are the written versions; slot `written` is the token
    double flops_per_item = 0, bytes_per_item = -1;
    KernelPlacement prefer = KernelPlacement::any;
    /// Identifies the call's structure for fusion's cache (the kernel's signature, the range, the
    /// accesses): two calls alike in it fuse alike.
    std::uint64_t structure = 0;
    /// Accessor k's elements while the C++ body runs (stable addresses: accessors point here;
    /// null for a group without accessors).
    std::shared_ptr<std::deque<KernelBinding>> bindings;
    /// Its Kernel nodes (the written versions, then the token), set as they are made, before any
    /// other thread sees them: a plan that reaches one of them computes them all (one run of the
    /// group, whichever of its values was asked for first).
    mutable std::vector<std::weak_ptr<Node>> outputs;
    /// Held while the C++ body runs: the bindings are one run's at a time.
    mutable std::mutex run_mutex;

    std::int64_t items() const noexcept { return range[0] * range[1] * range[2]; }
    bool has_glsl() const noexcept { return !glsl.empty(); }
    bool has_cpu() const noexcept { return static_cast<bool>(cpu); }
    /// "kernel 'heat' over 512x512" for messages.
    std::string label() const;
};

}  // namespace tandem::detail
