// Plans graphs built through the public API with fusion directly, as the scheduler would (every
// node not computed yet, inputs before users, marked as one plan), so that tests can look at the
// regions before anything runs. For the internal suites (tandem-core-tests).
#pragma once

#include <atomic>
#include <unordered_set>
#include <vector>

#include "graph/fusion.hpp"
#include "scheduler/node_state.hpp"
#include "tandem/tandem.hpp"

namespace plan_helper {

inline std::vector<tandem::detail::Region> plan(const std::vector<tandem::Array>& targets) {
    using tandem::detail::Node;
    static std::atomic<std::uint64_t> marks{std::uint64_t{1} << 62};
    const std::uint64_t mark = ++marks;
    std::vector<Node*> order;
    std::unordered_set<Node*> seen;
    auto visit = [&](auto&& self, Node* n) -> void {
        if (tandem::detail::state(*n).eval.value || !seen.insert(n).second) return;
        for (auto& in : n->inputs) self(self, in.get());
        n->pass_mark = mark;
        n->pass_index = order.size();
        order.push_back(n);
    };
    std::vector<Node*> wanted;
    for (const tandem::Array& t : targets) {
        visit(visit, t.node().get());
        wanted.push_back(t.node().get());
    }
    return tandem::detail::fuse(order, wanted, mark, {true});
}

}  // namespace plan_helper
