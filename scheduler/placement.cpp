#include "scheduler/placement.hpp"

#include "tandem/error.hpp"

namespace tandem::detail {

Placement::Placement(std::vector<Backend*> backends) : backends_(std::move(backends)) {
    if (backends_.empty() || !backends_.front()) throw Error("placement: no CPU executor");
}

PlacementDecision Placement::place(const Region&) const {
    if (backends_.size() == 1) return {backends_.front(), "only backend"};
    return {backends_.front(), "cpu (no cost model for other backends yet)"};
}

}  // namespace tandem::detail
