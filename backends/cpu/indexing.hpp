// Indexing regions on the CPU (Region::indexing): gather, scatter and find over host copies.
// Subscripts are checked before anything is written; a bad one throws the region's IndexError.
#pragma once

#include "graph/region.hpp"
#include "runtime/memory.hpp"

namespace tandem::detail::cpu {

/// outputs[0] = inputs[0] at the selection of inputs[1].
void run_gather(const Region& r, const Storage& a, const Storage& subscripts, Storage& out);
/// outputs[0] = inputs[0] with the selection set to inputs[2]; repeated subscripts: the last wins.
void run_scatter(const Region& r, const Storage& a, const Storage& subscripts, const Storage& b, Storage& out);
/// outputs[0] = the 1-based positions of the true elements of inputs[0], as doubles.
void run_find(const Region& r, const Storage& mask, Storage& out);

}  // namespace tandem::detail::cpu
