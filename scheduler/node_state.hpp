// What the scheduler keeps per graph node: its evaluation (its value's copies, its error, the
// completion it waits for), and what planning and lineage need. A Node holds it opaquely
// (Node::state, made on first use); graph/ never reads it. Guarded by the scheduler's mutex.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "graph/node.hpp"

namespace tandem::detail {

class Storage;
class Value;
struct Completion;

/// What the scheduler knows of a node's value.
struct Evaluation {
    /// The value's copies. Set when computed; for a region recorded on a device, already when
    /// recorded (its contents are then valid in that device's queue order only).
    std::shared_ptr<Value> value;
    std::exception_ptr error;              ///< set if its computation failed
    std::shared_ptr<Completion> pending;   ///< set until the region computing it has finished
    bool done() const noexcept { return !pending && (value || error); }
};

struct NodeState {
    Evaluation eval;
    long plan_refs = 0;  ///< references to it from the plan being made (which recipes it needs)
    /// Device regions on the longest chain its recipe would recompute (0: it has a host copy, or
    /// will). Set when it is planned; bounds how much graph lineage keeps.
    std::uint32_t lineage_depth = 0;
    /// Its operands' recipes, made when it is planned on a device: its inputs once it is
    /// computed there alone, else dropped. (Once computed, a node's operands are released, unless
    /// its value lives only on a device: then they are replaced by its recipe, nodes that hold no
    /// device data (NodeTable::make_recipe), from which the value is recomputed if that device
    /// is lost.)
    std::optional<std::vector<std::shared_ptr<Node>>> recipe;
    /// A device result only its own plan reads (no recipe, no host copy wanted): it lets go of
    /// its value once `plan_readers`, the plan's regions that read it, are done. It keeps its
    /// graph, so it is computed again should it ever be needed (as after a lost device).
    bool intermediate = false;
    std::uint32_t plan_readers = 0;
};

/// n's state, made on first use.
inline NodeState& state(Node& n) {
    if (!n.state) n.state.reset(new NodeState);
    return *n.state;
}
/// n's state as it is; a node the scheduler never touched has the empty one (nothing computed,
/// nothing pending).
inline const NodeState& state(const Node& n) noexcept {
    static const NodeState none;
    return n.state ? *n.state : none;
}

/// A fresh, materialised Input node holding `value` (with whichever copies it has).
std::shared_ptr<Node> make_input(NodeTable& nodes, DType dtype, const Shape& shape, std::shared_ptr<Value> value);
/// The same over host data.
std::shared_ptr<Node> make_input(NodeTable& nodes, DType dtype, const Shape& shape, std::shared_ptr<Storage> data);

}  // namespace tandem::detail
