#include "graph/node.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>

#include "graph/kernel_call.hpp"

namespace tandem::detail {

namespace {

/// The chain head this thread made that waits to be started (NodeTable::start_chains_at).
thread_local struct ArmedHead {
    std::uint64_t table = 0;  // NodeTable::serial_ (an address may be a later table's)
    std::weak_ptr<Node> node;
} armed_head;

/// A node computed from a value asked for on a device asks too (Node::device_requested).
bool any_device_requested(const std::vector<std::shared_ptr<Node>>& inputs) {
    for (const auto& in : inputs)
        if (in->device_requested) return true;
    return false;
}

/// Where the recipes a graph's end would destroy go instead, while NodeTable::destroy_buried
/// runs on this thread (null otherwise).
thread_local std::vector<std::shared_ptr<Node>>* lineage_sink = nullptr;

/// `n`, a recipe only its dying holder had, to the sink with the recipes and inputs it reads;
/// any other node on the way (one a build can find, or that reads such) goes to `release` now,
/// so that nothing findable outlives the graph that held it, and so do recipes that live on
/// elsewhere. Walked only where Node::recipe_reads_graph says there is such a node: a loop's
/// lineage (recipes of recipes down to its inputs and generators) is set aside whole.
void set_aside(std::shared_ptr<Node> n, std::vector<std::shared_ptr<Node>>& release) {
    std::vector<Node*> todo{n.get()};
    while (!todo.empty()) {
        Node* x = todo.back();
        todo.pop_back();
        if (!x->recipe_reads_graph) continue;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < x->inputs.size(); ++i) {
            std::shared_ptr<Node>& in = x->inputs[i];
            // (use_count 1: only x holds it, and nothing can take it: recipes are in no index)
            const bool keep = in->op == OpKind::Input || (in->recipe && in.use_count() == 1);
            if (!keep) {
                release.push_back(std::move(in));
                continue;
            }
            if (in->recipe) todo.push_back(in.get());
            if (kept != i) x->inputs[kept] = std::move(in);
            ++kept;
        }
        x->inputs.resize(kept);
        x->recipe_reads_graph = false;
    }
    lineage_sink->push_back(std::move(n));
}

}  // namespace

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
        if (lineage_sink && n->recipe && n.use_count() == 1) set_aside(std::move(n), stack);
        n.reset();  // may push n's inputs
    }
    draining = false;
}

std::string Node::label() const {
    std::string s(op_info(op).name);
    if (op == OpKind::Constant) s += "(" + std::to_string(attr[0]) + ")";
    if (op == OpKind::Cast) s += "(" + std::string(dtype_name(dtype)) + ")";
    if (op == OpKind::Kernel && call) s += " '" + call->name + "'";
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
    // FNV-1a over the key's words, then MurmurHash3's finalizer. A product carries only upwards,
    // so keys that differ in their words' high bits alone (attributes: doubles 1.0, 2.0, ...,
    // such as the random streams of a loop's randn) had the same low bits, which choose the
    // shard and the slot: W3's 256 generators probed one chain (a fifth of its graph's build).
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
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    hash = h != 0 ? static_cast<std::size_t>(h) : 1;  // 0 marks an empty slot
}

std::size_t NodeTable::Shard::probe(const Key& key) const noexcept {
    const std::size_t mask = hashes.size() - 1;
    // The shard was chosen by the hash's low bits: the slot by higher ones.
    for (std::size_t i = (key.hash >> 4) & mask;; i = (i + 1) & mask)
        if (hashes[i] == 0 || (hashes[i] == key.hash && entries[index[i]].key == key)) return i;
}

void NodeTable::Shard::make_room() {
    if (!hashes.empty() && 2 * (entries.size() + 1) <= hashes.size()) return;
    // The live entries kept, in order; the slots made again for them.
    std::size_t live = 0;
    for (Entry& e : entries)
        if (!e.node.expired()) {
            if (&entries[live] != &e) entries[live] = std::move(e);
            ++live;
        }
    entries.resize(live);
    // At most a quarter full after the rebuild: the next one comes after as many inserts again.
    std::size_t capacity = kMinSlots;
    while (capacity < 4 * (live + 1)) capacity *= 2;
    hashes.assign(capacity, 0);
    index.resize(capacity);
    entries.reserve(capacity / 2);  // until the next rebuild: no entry moves as the table fills
    for (std::size_t k = 0; k < entries.size(); ++k) {
        const std::size_t at = probe(entries[k].key);
        hashes[at] = entries[k].key.hash;
        index[at] = static_cast<std::uint32_t>(k);
    }
}

bool NodeTable::Key::operator==(const Key& o) const noexcept {
    if (hash != o.hash || op != o.op || dtype != o.dtype || ndims != o.ndims || ninputs != o.ninputs || attr != o.attr)
        return false;
    for (std::size_t i = 0; i < words(); ++i)
        if (word(i) != o.word(i)) return false;
    return true;
}

std::uint64_t NodeTable::next_id() { return ids_.fetch_add(1, std::memory_order_relaxed); }

NodeTable::~NodeTable() {
    {
        std::lock_guard lock(graveyard_mutex_);
        burial_stop_ = true;
    }
    burial_cv_.notify_one();
    if (burial_thread_.joinable()) burial_thread_.join();
    release_lineage();
}

void NodeTable::bury(std::vector<std::shared_ptr<Node>>& nodes) {
    if (nodes.empty()) return;
    std::lock_guard lock(graveyard_mutex_);
    for (auto& n : nodes) graveyard_.push_back(std::move(n));
    nodes.clear();
    buried_.store(true, std::memory_order_release);
    if (burial_due_ == std::chrono::steady_clock::time_point{}) {
        burial_due_ = std::chrono::steady_clock::now() + kBurialGrace;
        wake_burial_thread();
    }
}

void NodeTable::release_buried() {
    std::lock_guard lock(graveyard_mutex_);
    destroy_buried();
}

void NodeTable::destroy_buried() {
    std::vector<std::shared_ptr<Node>> set_aside;
    lineage_sink = &set_aside;
    graveyard_.clear();  // destroyed under the lock: a make() meanwhile waits for the end
    lineage_sink = nullptr;
    buried_.store(false, std::memory_order_release);
    burial_due_ = {};
    if (set_aside.empty()) return;
    {
        std::lock_guard lock(lineage_mutex_);
        if (lineage_.empty()) lineage_.swap(set_aside);
        else std::move(set_aside.begin(), set_aside.end(), std::back_inserter(lineage_));
    }
    // Unless a thread that waits for the devices destroys it first (a burial thread that comes
    // during a build frees beside the builder's allocations: W3's next build went 0.3-0.4 ms slower).
    lineage_due_ = std::chrono::steady_clock::now() + kLineageGrace;
    wake_burial_thread();
}

void NodeTable::wake_burial_thread() {
    if (!burial_thread_.joinable()) burial_thread_ = std::thread([this] { burial_loop(); });
    burial_cv_.notify_one();
}

void NodeTable::release_lineage() {
    std::vector<std::shared_ptr<Node>> dying;
    {
        std::lock_guard lock(lineage_mutex_);
        dying.swap(lineage_);
    }
    dying.clear();  // recipes only (set_aside)
}

void NodeTable::burial_loop() {
    using Clock = std::chrono::steady_clock;
    std::unique_lock lock(graveyard_mutex_);
    while (!burial_stop_) {
        const Clock::time_point due = burial_due_ == Clock::time_point{} ? lineage_due_
                                      : lineage_due_ == Clock::time_point{} ? burial_due_
                                                                          : std::min(burial_due_, lineage_due_);
        if (due == Clock::time_point{}) {
            burial_cv_.wait(lock);
        } else if (Clock::now() < due) {
            burial_cv_.wait_until(lock, due);
        } else {
            if (burial_due_ != Clock::time_point{} && Clock::now() >= burial_due_) destroy_buried();  // nobody built since
            if (lineage_due_ != Clock::time_point{} && Clock::now() >= lineage_due_) {
                lineage_due_ = {};
                lock.unlock();  // (a make() goes on meanwhile: nothing set aside can be found)
                release_lineage();
                lock.lock();
            }
        }
    }
}

void NodeTable::forget(const Node& n) {
    if (n.op == OpKind::Input) return;  // never interned
    Key key(n.op, n.dtype, n.shape, n.inputs, n.attr);
    Shard& shard = shards_[key.hash % kShards];
    std::lock_guard lock(shard.mutex);
    if (shard.hashes.empty()) return;
    const std::size_t at = shard.probe(key);
    if (shard.hashes[at] == 0) return;
    Shard::Entry& e = shard.entries[shard.index[at]];
    if (e.node.lock().get() == &n) e.node.reset();  // a dead entry: the next build makes a new node
}

std::shared_ptr<Node> NodeTable::make(OpKind op, DType dtype, const Shape& shape,
                                      std::vector<std::shared_ptr<Node>> inputs, std::array<double, 3> attr,
                                      bool device_requested) {
    if (buried_.load(std::memory_order_acquire)) release_buried();
    // The chain head this thread made last is started now, once the statement that made it is
    // over (its temporaries let go of): at a clean cut, where nothing outside the chain holds a
    // value inside it but the program's variable of the head (W3's path after a time step, not
    // a stencil's value mid-step, whose step input the rest of the step reads). A chain that
    // finds no clean cut by twice the depth starts anyway, keeping such values as results.
    if (armed_head.table == serial_) {
        std::shared_ptr<Node> head = armed_head.node.lock();
        armed_head = {};
        if (head) {
            const std::uint32_t at = head->continues_started.load(std::memory_order_relaxed) ? start_depth_ : first_start_depth();
            start_(head, head->depth.load(std::memory_order_relaxed) >= 2 * at);
        }
    }
    Key key(op, dtype, shape, inputs, attr);
    const std::size_t h = key.hash;
    Shard& shard = shards_[h % kShards];

    std::uint32_t depth = 0;
    std::uint64_t work = 0;
    bool continues = false;
    if (op != OpKind::Constant) {
        for (const auto& in : inputs) {
            depth = std::max(depth, in->depth.load(std::memory_order_relaxed));
            work = std::max(work, in->work.load(std::memory_order_relaxed));
            continues = continues || in->continues_started.load(std::memory_order_relaxed);
        }
        ++depth;
        // Each operation counts up to 4 x kStartElementsPerOp: one huge step (W5's centring of its
        // 262144 x 256 matrix) does not make a loop of small ones after it heavy.
        work += std::min<std::uint64_t>(static_cast<std::uint64_t>(shape.numel()), 4 * kStartElementsPerOp);
    }
    std::shared_ptr<Node> node;
    {
        std::lock_guard lock(shard.mutex);
        shard.make_room();
        const std::size_t at = shard.probe(key);
        if (shard.hashes[at] != 0)
            if (auto existing = shard.entries[shard.index[at]].node.lock()) return existing;
        node = std::make_shared<Node>(op, dtype, shape);
        node->device_requested = device_requested || any_device_requested(inputs);
        node->inputs = std::move(inputs);
        node->attr = attr;
        node->id = next_id();
        node->hash = h;
        node->runtime = runtime_;
        node->depth.store(depth, std::memory_order_relaxed);
        node->work.store(work, std::memory_order_relaxed);
        node->continues_started.store(continues, std::memory_order_relaxed);
        if (shard.hashes[at] != 0) {
            shard.entries[shard.index[at]].node = node;  // the entry of a node that died: its key is this one
        } else {
            shard.hashes[at] = h;
            shard.index[at] = static_cast<std::uint32_t>(shard.entries.size());
            shard.entries.push_back({std::move(key), node});
        }
    }
    // Deep and heavy enough: this thread's newest chain head, to start when it makes its next
    // node (above).
    const std::uint32_t at = continues ? start_depth_ : first_start_depth();
    if (start_depth_ != 0 && depth >= at && work >= std::uint64_t{depth} * kStartElementsPerOp) {
        armed_head.table = serial_;
        armed_head.node = node;
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

std::shared_ptr<Node> NodeTable::make_kernel(std::shared_ptr<const KernelCall> call, std::size_t slot, DType dtype,
                                             const Shape& shape, std::vector<std::shared_ptr<Node>> inputs) {
    auto node = std::make_shared<Node>(OpKind::Kernel, dtype, shape);
    node->device_requested = any_device_requested(inputs);
    node->inputs = std::move(inputs);
    // The call's structure, not its identity: fusion's cache keys on attributes (graph/kernel_call.hpp).
    node->attr = {static_cast<double>(slot), static_cast<double>(call->structure & ((1ull << 52) - 1)), 0.0};
    node->call = std::move(call);
    node->id = next_id();
    node->hash = static_cast<std::size_t>(node->id);
    node->runtime = runtime_;
    return node;
}

std::shared_ptr<Node> NodeTable::make_recipe(const Node& of, std::vector<std::shared_ptr<Node>> inputs) {
    auto node = std::make_shared<Node>(of.op, of.dtype, of.shape);
    node->recipe = true;
    for (const auto& in : inputs)
        node->recipe_reads_graph = node->recipe_reads_graph || in->recipe_reads_graph || !(in->recipe || in->op == OpKind::Input);
    node->inputs = std::move(inputs);
    node->attr = of.attr;
    node->device_requested = of.device_requested;
    node->call = of.call;
    node->id = next_id();
    node->hash = static_cast<std::size_t>(node->id);
    node->runtime = runtime_;
    return node;
}

}  // namespace tandem::detail
