#include "scheduler/node_state.hpp"

#include "scheduler/residency.hpp"

namespace tandem::detail {

void NodeStateDelete::operator()(NodeState* s) const noexcept { delete s; }

std::shared_ptr<Node> make_input(NodeTable& nodes, DType dtype, const Shape& shape, std::shared_ptr<Value> value) {
    auto node = nodes.make_input(dtype, shape);
    state(*node).eval.value = std::move(value);
    return node;
}

std::shared_ptr<Node> make_input(NodeTable& nodes, DType dtype, const Shape& shape, std::shared_ptr<Storage> data) {
    const std::size_t bytes = data->bytes();
    return make_input(nodes, dtype, shape, std::make_shared<Value>(bytes, std::move(data)));
}

}  // namespace tandem::detail
