#include "graph/node.hpp"

#include <bit>
#include <cstring>

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

NodeTable::Key::Key(OpKind o, DType t, const Shape& shape, const std::vector<std::shared_ptr<Node>>& inputs,
                    const std::array<double, 3>& attributes)
    : op(o), dtype(t), ndims(static_cast<std::uint32_t>(shape.ndims())),
      ninputs(static_cast<std::uint32_t>(inputs.size())) {
    if (words() > kInline) more_words.resize(words() - kInline);
    auto set = [&](std::size_t i, std::uint64_t v) { (i < kInline ? inline_words[i] : more_words[i - kInline]) = v; };
    std::size_t w = 0;
    for (auto d : shape.dims()) set(w++, static_cast<std::uint64_t>(d));
    for (const auto& in : inputs) set(w++, in->id);
    for (std::size_t i = 0; i < 3; ++i) attr[i] = std::bit_cast<std::uint64_t>(attributes[i]);
    // FNV-1a over the key's words: cheap, and good enough for an in-memory table.
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    mix(static_cast<std::uint64_t>(op));
    mix(static_cast<std::uint64_t>(dtype));
    mix(ndims);
    for (std::size_t i = 0; i < words(); ++i) mix(word(i));
    for (auto x : attr) mix(x);
    hash = static_cast<std::size_t>(h);
}

bool NodeTable::Key::operator==(const Key& o) const noexcept {
    if (hash != o.hash || op != o.op || dtype != o.dtype || ndims != o.ndims || ninputs != o.ninputs || attr != o.attr)
        return false;
    for (std::size_t i = 0; i < words(); ++i)
        if (word(i) != o.word(i)) return false;
    return true;
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

void NodeTable::forget(const Node& n) {
    if (n.op == OpKind::Input) return;  // never interned
    Key key(n.op, n.dtype, n.shape, n.inputs, n.attr);
    Shard& shard = shards_[key.hash % kShards];
    std::lock_guard lock(shard.mutex);
    if (auto it = shard.map.find(key); it != shard.map.end() && it->second.lock().get() == &n) shard.map.erase(it);
}

std::shared_ptr<Node> NodeTable::make(OpKind op, DType dtype, const Shape& shape,
                                      std::vector<std::shared_ptr<Node>> inputs, std::array<double, 3> attr) {
    if (buried_.load(std::memory_order_acquire)) release_buried();
    Key key(op, dtype, shape, inputs, attr);
    const std::size_t h = key.hash;
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
    if (it != shard.map.end())
        it->second = node;  // the entry of a node that died
    else
        shard.map.emplace(std::move(key), node);
    if (shard.map.size() >= shard.sweep_at) {
        // Drop entries whose nodes died; amortised by doubling the threshold.
        std::erase_if(shard.map, [](const auto& kv) { return kv.second.expired(); });
        shard.sweep_at = std::max<std::size_t>(kMinSweep, 2 * shard.map.size());
    }
    return node;
}

std::shared_ptr<Node> NodeTable::make_input(DType dtype, const Shape& shape) {
    auto node = std::make_shared<Node>(OpKind::Input, dtype, shape);
    node->id = next_id();
    node->hash = static_cast<std::size_t>(node->id);
    node->runtime = runtime_;
    return node;
}

std::shared_ptr<Node> NodeTable::make_recipe(const Node& of, std::vector<std::shared_ptr<Node>> inputs) {
    auto node = std::make_shared<Node>(of.op, of.dtype, of.shape);
    node->inputs = std::move(inputs);
    node->attr = of.attr;
    node->id = next_id();
    node->hash = static_cast<std::size_t>(node->id);
    node->runtime = runtime_;
    return node;
}

}  // namespace tandem::detail
