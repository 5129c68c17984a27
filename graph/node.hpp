// Graph nodes: immutable values of the lazy task graph, hash-consed so that building the same
// op on the same operands twice gives the same node (common subexpressions come free).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/op_table.hpp"
#include "tandem/dtype.hpp"
#include "tandem/shape.hpp"

namespace tandem::detail {

class RuntimeImpl;
/// What the scheduler keeps per node (scheduler/node_state.hpp): held here, never read here.
struct NodeState;
/// A user kernel's command group (graph/kernel_call.hpp), for Kernel nodes.
struct KernelCall;
struct NodeStateDelete {
    void operator()(NodeState* s) const noexcept;
};

struct Node : std::enable_shared_from_this<Node> {
    OpKind op;
    DType dtype;
    /// Asked to run and stay on a device (MATLAB's gpuArray: tandem::to_device), and so is every
    /// node computed from one (NodeTable sets it from the inputs): placement puts the regions
    /// that compute such nodes on a device whatever their size.
    bool device_requested = false;
    /// Made by NodeTable::make_recipe: never interned, so no build ever finds it, and its end
    /// may come later than the graph's that held it (NodeTable::release_lineage).
    bool recipe = false;
    /// A recipe that reads, itself or through the recipes it reads, a node that is neither a
    /// recipe nor an input (one a build may find, or that reads such): that node is let go of
    /// with the graph that held the recipe, not later (NodeTable::release_buried).
    bool recipe_reads_graph = false;
    Shape shape;
    /// Operands. Once the node's value is computed the scheduler releases them (or replaces them
    /// by a recipe: scheduler/node_state.hpp).
    std::vector<std::shared_ptr<Node>> inputs;
    std::array<double, 3> attr{};          ///< constant value, generator parameters, cast target
    std::uint64_t id = 0;                  ///< unique per runtime, never reused
    std::size_t hash = 0;
    RuntimeImpl* runtime = nullptr;
    /// Scratch of a pass over a list of nodes (the planner's, fusion's): the node's position in the
    /// list, valid when pass_mark is that pass's mark. Spares the passes hash-set lookups.
    std::uint64_t pass_mark = 0;
    std::size_t pass_index = 0;
    /// Operations on the longest pending chain up to this node (1 + its operands'; a constant
    /// or an input 0), and elements those operations make (its own, up to a cap, plus the largest
    /// of its operands'): back to 0 once it is asked for or started. NodeTable starts deep, heavy
    /// chains.
    std::atomic<std::uint32_t> depth{0};
    std::atomic<std::uint64_t> work{0};
    /// On a chain that was started before (NodeTable::start_chains_at): its later pieces wait for
    /// the full depth, a chain's first piece for less.
    std::atomic<bool> continues_started{false};
    /// What a Kernel node's command group runs (null for every other op).
    std::shared_ptr<const KernelCall> call;
    /// The scheduler's (its evaluation, planning and lineage), made when it first looks.
    std::unique_ptr<NodeState, NodeStateDelete> state;

    Node(OpKind o, DType t, Shape s) : op(o), dtype(t), shape(std::move(s)) {}
    ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    /// The constant's value, for op == Constant.
    double constant() const noexcept { return attr[0]; }
    std::string label() const;  ///< "sin 3x4 double", for logs and messages
    /// The bytes of its value.
    std::size_t bytes() const noexcept { return static_cast<std::size_t>(shape.numel()) * dtype_size(dtype); }
};

/// Interns nodes: a lookup table from structure to a weak reference. Input nodes (user data)
/// are never interned: two arrays with equal contents are still two values.
class NodeTable {
public:
    explicit NodeTable(RuntimeImpl* runtime) : runtime_(runtime) {}
    ~NodeTable();  ///< stops the burial thread; the scheduler has released what was buried
    NodeTable(const NodeTable&) = delete;
    NodeTable& operator=(const NodeTable&) = delete;
    /// `device_requested`: the node's own request (Node::device_requested; its inputs' pass on
    /// anyway), set before any other thread can find it.
    std::shared_ptr<Node> make(OpKind op, DType dtype, const Shape& shape, std::vector<std::shared_ptr<Node>> inputs,
                               std::array<double, 3> attr = {}, bool device_requested = false);
    /// Deep chains computed while the program builds on them (Config::start_depth): the newest
    /// node a thread made whose pending chain is at least `depth` operations deep, and makes at
    /// least kStartElementsPerOp elements an operation on the average, is offered to
    /// `start(n, held_too)` when that thread makes its next node (outside the table's locks; a
    /// thread that makes none starts nothing). `start` returns whether it started n (and set its
    /// depth to 0); `held_too` is set from twice the depth on (start even where values inside
    /// the chain are held from outside it). Set before any node is made; 0 = never.
    void start_chains_at(std::uint32_t depth, std::function<bool(const std::shared_ptr<Node>&, bool)> start) {
        start_depth_ = depth;
        start_ = std::move(start);
    }
    /// The depth a chain's first piece starts at: sooner than the later ones (a quarter of
    /// `depth`, at least 16 or `depth`), so that the devices start while the rest is built. W3's
    /// first 60 steps were built and planned before either GPU started, ~0.5 ms of a 4.7 ms run.
    std::uint32_t first_start_depth() const noexcept {
        return std::max(start_depth_ / 4, std::min<std::uint32_t>(start_depth_, 16));
    }
    /// Below it, planning a piece of the chain costs the host more than running it beside the
    /// rest of the build wins (W5's loop of 256 x 256 steps was 15% slower on an H200 started at
    /// depth 64; W3's steps of 4e6 paths and W6's of 4096^2 points gain).
    static constexpr std::uint64_t kStartElementsPerOp = std::uint64_t{1} << 18;
    /// A fresh Input node (never interned): its value is the scheduler's to attach
    /// (scheduler/node_state.hpp's make_input).
    std::shared_ptr<Node> make_input(DType dtype, const Shape& shape);
    /// Output `slot` of a user kernel's command group (a fresh Kernel node, never interned: two
    /// groups alike are still two computations).
    std::shared_ptr<Node> make_kernel(std::shared_ptr<const KernelCall> call, std::size_t slot, DType dtype,
                                      const Shape& shape, std::vector<std::shared_ptr<Node>> inputs);
    /// A fresh, uncomputed node that computes what `of` computes from `inputs` (a recipe: never
    /// interned, so nothing the user builds ever finds it).
    std::shared_ptr<Node> make_recipe(const Node& of, std::vector<std::shared_ptr<Node>> inputs);

    /// Takes the references a finished region drops (the graph above its outputs), to destroy
    /// them after its futures resolve, off the path from a completion to the thread waiting for
    /// it (a 100-node chain takes ~20 us to free on a slow host), and preferably on the thread
    /// that built them: the next make() destroys what is buried before it looks anything up (so
    /// a rebuilt expression never finds a dropped node still computed: recomputation stays
    /// deterministic), and the builder frees its own graph from its own cache and its own
    /// allocator's lists. On the H200 host, W3's 1293 nodes freed by the completion thread made
    /// the next build 0.3-0.4 ms slower than freeing them on the building thread. A graph no
    /// make() comes for is destroyed by the table's burial thread kBurialGrace after it came.
    void bury(std::vector<std::shared_ptr<Node>>& nodes);
    /// Longer than a program's host work between a value and its next expression, short against
    /// anything that waits for memory.
    static constexpr std::chrono::microseconds kBurialGrace{2000};
    /// Building the same expression again no longer finds `n` (its operands are still its
    /// own): for a value that will keep neither its graph nor a recipe, a new node (computed
    /// again) is safer than one nothing could recompute.
    void forget(const Node& n);
    /// Destroys what is buried, now, on this thread (make(), Scheduler::wait_idle, the burial
    /// thread). Except its lineage: the recipes that only the buried graph held (a device
    /// loop's, kept to compute its values again should a device be lost) no build can find, so
    /// they wait for release_lineage. W3's 256 steps leave ~1900 of them at the end of a run,
    /// 0.3 ms to free on the H200 host, between the value and the next run's first kernel.
    void release_buried();
    /// Destroys the lineage release_buried set aside, on this thread: where a thread has sent
    /// work to the devices and is about to wait for it (Scheduler's gather and evaluate), else
    /// by the burial thread kLineageGrace after it came, or at the table's end.
    void release_lineage();
    /// Long against a program's build between two gathers; the recipes hold no data (but for
    /// inputs that only they read).
    static constexpr std::chrono::milliseconds kLineageGrace{50};

private:
    /// A node's structure: op, type, extents, operand ids, attributes. The extents and ids sit
    /// inline (no allocation for most keys), and the hash is computed once: building a long
    /// program interns thousands of nodes, and their keys were most of its time.
    struct Key {
        static constexpr std::size_t kInline = 8;
        std::size_t hash = 0;  ///< never 0 (a table slot's hash 0 means empty)
        OpKind op{};
        DType dtype{};
        std::uint32_t ndims = 0, ninputs = 0;
        std::array<std::uint64_t, 3> attr{};
        std::array<std::uint64_t, kInline> inline_words{};
        std::vector<std::uint64_t> more_words;  // only for keys of more than kInline words

        Key() = default;
        Key(OpKind o, DType t, const Shape& shape, const std::vector<std::shared_ptr<Node>>& inputs,
            const std::array<double, 3>& attributes);
        std::uint64_t word(std::size_t i) const noexcept {
            return i < kInline ? inline_words[i] : more_words[i - kInline];
        }
        std::size_t words() const noexcept { return std::size_t{ndims} + ninputs; }
        bool operator==(const Key& o) const noexcept;
    };
    static constexpr std::size_t kShards = 16;  // builders on many threads rarely contend
    /// A shard: open addressing with linear probing over a power-of-two capacity, the entries
    /// apart and dense, in the order they came (Python's compact dict): a probe reads the dense
    /// hashes, an entry only on a hash match, and no entry is allocated on its own (the map this
    /// replaces allocated and freed one per node built, between the nodes' own allocations).
    /// Entries whose nodes died stay until the table is rebuilt, when half its slots are
    /// taken, with the live ones only.
    struct Shard {
        struct Entry {
            Key key;
            std::weak_ptr<Node> node;
        };
        std::mutex mutex;
        std::vector<std::size_t> hashes;  // per slot: its key's hash, 0 when empty
        std::vector<std::uint32_t> index;  // per slot: its entry
        std::vector<Entry> entries;        // the keys, in the order they came (live or dead)
        /// The slot of `key`, or of the empty slot where it would go (capacity > 0).
        std::size_t probe(const Key& key) const noexcept;
        /// With room for one more key: rebuilt without the dead entries, larger if half is live.
        void make_room();
    };
    static constexpr std::size_t kMinSlots = 256;
    std::uint64_t next_id();

    RuntimeImpl* runtime_;
    /// This table among every table of the process (a thread's armed chain head names its table).
    const std::uint64_t serial_ = next_serial();
    static std::uint64_t next_serial() {
        static std::atomic<std::uint64_t> serials{1};
        return serials.fetch_add(1, std::memory_order_relaxed);
    }
    std::uint32_t start_depth_ = 0;
    std::function<bool(const std::shared_ptr<Node>&, bool)> start_;
    std::array<Shard, kShards> shards_;
    std::atomic<std::uint64_t> ids_{1};
    void destroy_buried();  // graveyard_mutex_ held
    void burial_loop();
    void wake_burial_thread();  // (graveyard_mutex_ held) started by the first that needs it

    std::mutex graveyard_mutex_;  // held while buried nodes are destroyed: make() waits for that
    std::vector<std::shared_ptr<Node>> graveyard_;
    std::atomic<bool> buried_{false};
    std::mutex lineage_mutex_;  // (not held while the lineage is destroyed)
    std::vector<std::shared_ptr<Node>> lineage_;
    std::chrono::steady_clock::time_point lineage_due_{};  // (under graveyard_mutex_) {} none
    /// The burial thread: started by the first bury(), it waits (on graveyard_mutex_) for a
    /// graveyard that stays kBurialGrace, and destroys it, or for the table's end.
    std::condition_variable burial_cv_;
    std::chrono::steady_clock::time_point burial_due_{};  // when what is buried is destroyed; {} none
    bool burial_stop_ = false;
    std::thread burial_thread_;
};

}  // namespace tandem::detail
