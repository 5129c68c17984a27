#include "graph/node.hpp"

#include <bit>
#include <cstring>

#include "scheduler/residency.hpp"

namespace tandem::detail {

Node::~Node() {
    // Release long chains iteratively: graphs built in loops (x = x + 1, a million times) would
    // overflow the stack through nested shared_ptr destructors.
    thread_local bool draining = false;
    thread_local std::vector<std::shared_ptr<Node>> stack;
    for (auto& in : inputs) stack.push_back(std::move(in));
    inputs.clear();
    if (draining) return;
    draining = true;
    while (!stack.empty()) {
        std::shared_ptr<Node> n = std::move(stack.back());
        stack.pop_back();
        n.reset();  // may push n's inputs
    }
    draining = false;
}

std::string Node::label() const {
    std::string s(op_info(op).name);
    if (op == OpKind::Constant) s += "(" + std::to_string(attr[0]) + ")";
    if (op == OpKind::Cast) s += "(" + std::string(dtype_name(dtype)) + ")";
    return s + " " + shape.to_string() + " " + std::string(dtype_name(dtype));
}

std::size_t NodeTable::KeyHash::operator()(const Key& k) const noexcept {
    // FNV-1a over the key's words: cheap, and good enough for an in-memory table.
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    mix(static_cast<std::uint64_t>(k.op));
    mix(static_cast<std::uint64_t>(k.dtype));
    for (auto d : k.dims) mix(static_cast<std::uint64_t>(d));
    for (auto i : k.inputs) mix(i);
    for (auto a : k.attr) mix(a);
    return static_cast<std::size_t>(h);
}

std::uint64_t NodeTable::next_id() { return ids_.fetch_add(1, std::memory_order_relaxed); }

void NodeTable::bury(std::vector<std::shared_ptr<Node>>& nodes) {
    if (nodes.empty()) return;
    std::lock_guard lock(graveyard_mutex_);
    for (auto& n : nodes) graveyard_.push_back(std::move(n));
    nodes.clear();
    buried_.store(true, std::memory_order_release);
}

void NodeTable::release_buried() {
    std::lock_guard lock(graveyard_mutex_);
    graveyard_.clear();  // destroyed under the lock: a make() meanwhile waits for the end
    buried_.store(false, std::memory_order_release);
}

std::shared_ptr<Node> NodeTable::make(OpKind op, DType dtype, const Shape& shape,
                                      std::vector<std::shared_ptr<Node>> inputs, std::array<double, 3> attr) {
    if (buried_.load(std::memory_order_acquire)) release_buried();
    Key key{op, dtype, shape.dims(), {}, {}};
    key.inputs.reserve(inputs.size());
    for (auto& in : inputs) key.inputs.push_back(in->id);
    for (std::size_t i = 0; i < 3; ++i) key.attr[i] = std::bit_cast<std::uint64_t>(attr[i]);
    std::size_t h = KeyHash{}(key);
    Shard& shard = shards_[h % kShards];

    std::lock_guard lock(shard.mutex);
    auto it = shard.map.find(key);
    if (it != shard.map.end())
        if (auto existing = it->second.lock()) return existing;
    auto node = std::make_shared<Node>(op, dtype, shape);
    node->inputs = std::move(inputs);
    node->attr = attr;
    node->id = next_id();
    node->hash = h;
    node->runtime = runtime_;
    shard.map.insert_or_assign(std::move(key), node);
    if (shard.map.size() >= shard.sweep_at) {
        // Drop entries whose nodes died; amortised by doubling the threshold.
        std::erase_if(shard.map, [](const auto& kv) { return kv.second.expired(); });
        shard.sweep_at = std::max<std::size_t>(1024, 2 * shard.map.size());
    }
    return node;
}

std::shared_ptr<Node> NodeTable::make_input(DType dtype, const Shape& shape, std::shared_ptr<Storage> value) {
    auto node = std::make_shared<Node>(OpKind::Input, dtype, shape);
    node->id = next_id();
    node->hash = static_cast<std::size_t>(node->id);
    node->runtime = runtime_;
    std::size_t bytes = value->bytes();
    node->eval.value = std::make_shared<Value>(bytes, std::move(value));
    return node;
}

}  // namespace tandem::detail
