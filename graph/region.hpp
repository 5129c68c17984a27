// A fused region: the unit of work a backend executes. A straight-line SSA program over one
// iteration shape; its operands are materialised inputs (expanded to the region's shape),
// scalar immediates, or earlier values of the program; some values are the region's outputs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/node.hpp"

namespace tandem::detail {

struct Arg {
    enum class Kind : std::uint8_t { Input, Value, Scalar };
    Kind kind = Kind::Scalar;
    std::uint32_t index = 0;  ///< into Region::inputs (Input) or Region::program (Value)
    double scalar = 0.0;      ///< the immediate (Scalar), already rounded to its type
    DType dtype = DType::f64; ///< the operand's element type
};

struct Instr {
    OpKind op;
    DType dtype;                    ///< result type
    DType compute;                  ///< type the op computes in (f64 or f32)
    std::array<Arg, 3> args{};  ///< the first op_info(op).arity are used
    std::array<double, 3> attr{};   ///< generator parameters
    /// The position in its plan of the node this instruction computes (Node::pass_index), or
    /// kMadeByFusion (a load, a cast fusion added): the fusion cache puts a new plan's random
    /// streams into the cached regions by it.
    std::uint32_t plan_position = kMadeByFusion;
    static constexpr std::uint32_t kMadeByFusion = UINT32_MAX;
};

/// One reduction of a region: a program value reduced along the region's reduce_dim.
struct Reduction {
    OpKind op;             ///< Sum, Prod, MaxOf, MinOf, ArgMax, ArgMin, Any, All
    std::uint32_t value;   ///< the program value reduced
};

/// How a region reads an input along one of its dimensions when a remap (circshift, flip, a
/// range, repmat) was folded into the read (graph/fusion.cpp): position k reads the input's
/// position (step * k + offset) mod n, n the input's extent there. Fusion keeps step * k + offset
/// >= 0 over the region. The identity is {1, 0}; an input of extent 1 reads position 0 whatever
/// the map.
struct AxisMap {
    std::int64_t step = 1, offset = 0;
    friend bool operator==(const AxisMap&, const AxisMap&) = default;
};

/// `m` with its offset moved by whole periods n, so that the lowest position it reads over
/// k < extent lies in [0, n): the same positions mod n, and step * k + offset >= 0.
AxisMap lowest_in_period(AxisMap m, std::int64_t extent, std::int64_t n);

/// One collapsed dimension of an input's walk over the region (input_dims below): positions
/// k < extent along it; `stride` elements of the input per position of the input's own index.
/// Plain (n == 0): position k is input position k (stride 0: expanded). Mapped: input position
/// (step * k + offset) mod n, where `wrap` says how far step * k + offset may run (fusion keeps
/// it >= 0): below n (none), below 2n (once: one subtraction), anywhere (any: a remainder).
struct InputDim {
    enum class Wrap : std::uint8_t { none, once, any };
    std::int64_t extent = 1, stride = 0;
    std::int64_t n = 0, step = 1, offset = 0;
    Wrap wrap = Wrap::none;
    bool mapped() const noexcept { return n != 0; }
};

/// What a region costs, as fusion summarises it for the cost model (scheduler/): the bytes it
/// moves and the work it does, for one run of the whole region. Backends may do less (a cached
/// operand) or more (a two-pass reduction); this is the program's own account.
struct RegionCost {
    std::vector<std::int64_t> input_bytes;   ///< per input: its bytes (read once, expanded or not)
    std::vector<std::int64_t> output_bytes;  ///< per output: the bytes written
    /// Element operations by class and compute type: ops[class][0] in double, ops[class][1] in
    /// single. A program's instruction counts once per element of the region, a tail's once per
    /// result, a reduction or scan step once per element reduced.
    std::array<std::array<std::int64_t, 2>, kCostClasses> ops{};
    std::int64_t elements = 0;                ///< the iteration domain's size
    std::int64_t reduce_len = 0, reduce_lines = 0;  ///< a reduce or scan region: each line's length, the lines
    std::int64_t m = 0, n = 0, k = 0;         ///< a matrix product: op(A) is m x k, op(B) k x n
    DType product_dtype = DType::f64;         ///< its operands' type
    std::uint8_t product_precision = 0;       ///< its MatmulPrecision code (0 full, 1 f16, 2 bf16)

    std::int64_t bytes_read() const noexcept;
    std::int64_t bytes_written() const noexcept;
    std::int64_t ops_of(CostClass c) const noexcept {
        return ops[static_cast<std::size_t>(c)][0] + ops[static_cast<std::size_t>(c)][1];
    }
    std::int64_t flops() const noexcept { return 2 * m * n * k; }  ///< a product's multiply-adds, counted twice
    std::string to_string() const;  ///< "reads 800 B, writes 800 B; 100 simple f64, ..."
};

/// What a region does: a closed set. Fusion sets it; each backend runs a region through one
/// switch over it (no default: a new kind is a compile error until every backend handles it).
enum class RegionKind : std::uint8_t {
    elementwise,  ///< the program over `shape`; outputs are program values
    reduce,       ///< the program, reduced along reduce_dim (`reductions`), then the `tail`
    matmul,       ///< outputs[0] = op(inputs[0]) * op(inputs[1]), with its epilogue
    view,         ///< reshape: outputs[0] shares inputs[0]'s value; nothing runs
    transpose,    ///< outputs[0] = inputs[0].' (2-D)
    permute,      ///< outputs[0] = permute(inputs[0], permutation)
    scan,         ///< outputs[0] = scan_op of inputs[0] along reduce_dim, line by line in order
    concat,       ///< outputs[0] = the inputs end to end along reduce_dim
    remap,        ///< outputs[0](.., k, ..) = inputs[0](.., (remap_a k + remap_b) mod n, ..) along reduce_dim
    gather,       ///< indexing: outputs[0] = the selection (index_extents)
    scatter,      ///< indexing: outputs[0] = inputs[0] with the selection set to inputs[2]
    find,         ///< outputs[0] = the 1-based positions of inputs[0]'s true elements
    kernel,       ///< a user kernel's command group (`call`): outputs are the versions it writes and its token
};
/// "elementwise", "reduce", ... for logs and traces.
const char* region_kind_name(RegionKind k) noexcept;

/// What a device's backend works out about a region once and needs again: its generated kernel
/// (placement asks whether it is built, the recording then uses it). Slot d is device d's,
/// opaque to the graph. A copy of the region starts without one (a copy may be made into another
/// region: a piece of it, its tail); a move keeps it; share() makes two regions of the same
/// structure use one (the fusion cache's hits: a program run again asks nothing twice). The slots
/// are made when first needed (most regions never meet a device): set() on a memo not shared is
/// for one thread at a time, as a region is placed, then recorded.
class BackendMemo {
public:
    static constexpr std::size_t kSlots = 8;
    BackendMemo() = default;
    BackendMemo(const BackendMemo&) noexcept {}
    BackendMemo(BackendMemo&& o) noexcept = default;
    BackendMemo& operator=(const BackendMemo& o) noexcept {
        if (this != &o) slots_.reset();
        return *this;
    }
    BackendMemo& operator=(BackendMemo&& o) noexcept = default;
    ~BackendMemo() = default;
    /// From now on this memo is `other`'s (the regions are alike in everything a backend reads).
    void share(BackendMemo& other) {
        if (!other.slots_) other.slots_ = std::make_shared<Slots>();
        slots_ = other.slots_;
    }
    std::shared_ptr<const void> get(std::size_t slot) const {
        return slots_ ? (*slots_)[slot].load(std::memory_order_acquire) : nullptr;
    }
    void set(std::size_t slot, std::shared_ptr<const void> v) const {
        if (!slots_) slots_ = std::make_shared<Slots>();
        (*slots_)[slot].store(std::move(v), std::memory_order_release);
    }

private:
    using Slots = std::array<std::atomic<std::shared_ptr<const void>>, kSlots>;
    mutable std::shared_ptr<Slots> slots_;  // null until something is kept or shared
};

struct Region {
    RegionKind kind = RegionKind::elementwise;
    Shape shape;
    /// Filled in by fusion (summarize_cost) once the region is complete.
    RegionCost cost;                                  ///< iteration domain; every value has this shape
    std::vector<std::shared_ptr<Node>> inputs;    ///< materialised before the region runs
    /// Empty, or one per input: the remaps folded into reading it (empty: read as is, expanded
    /// where its extent is 1). An input may appear more than once, with different views.
    std::vector<std::vector<AxisMap>> input_views;
    bool has_view(std::size_t k) const noexcept { return k < input_views.size() && !input_views[k].empty(); }
    std::vector<Instr> program;                   ///< value i is defined by program[i]
    struct Output {
        std::uint32_t value;
        std::shared_ptr<Node> node;
    };
    std::vector<Output> outputs;
    /// Non-empty: a reduce region. Its program computes values over `shape` (the elementwise
    /// producers folded in) and outputs[j] is reductions[j] of them along reduce_dim (0-based;
    /// -1: every element); no elementwise value leaves it.
    std::vector<Reduction> reductions;
    int reduce_dim = -1;
    /// Elements of the whole region before this one's first: a streamed piece's generators
    /// (linspace, colon, rand, randn) number its elements from here, so that they give the whole
    /// region's values (scheduler/streaming.hpp). 0 for every other region.
    std::int64_t index_base = 0;
    /// A reduce region's tail: elementwise instructions over the reduced shape, run once per
    /// result position after the reductions (mean's division, norm's square root). Its Input
    /// operand j is reduction j's result as outputs[j] holds it (rounded to that node's type);
    /// outputs[reductions.size() + p] are values of `tail`. Fusion folds in only instructions that
    /// cannot fail on data, so a region with a tail never needs slice().
    std::vector<Instr> tail;

    bool is_reduce() const noexcept { return kind == RegionKind::reduce; }
    /// The tail as an elementwise region of its own (the reduced shape; inputs: the reductions'
    /// output nodes; outputs: the tail's), which is how the backends run it.
    Region tail_region() const;
    /// A matrix product region (no program; the shape is the result's): the operands' transposes.
    bool trans_a = false, trans_b = false;
    /// Its MatmulPrecision (tandem/linalg.hpp) as the code: 0 full, 1 f16, 2 bf16 (the MatMul
    /// node's attr[2]; outputs[0] is not that node when an epilogue folded in).
    std::uint8_t matmul_precision = 0;
    /// A matmul region's fused epilogue: outputs[0] = act(alpha * product + beta * C + bias), with
    /// C = inputs[2] when has_c and the bias the last input when bias != none (m x 1 per row,
    /// 1 x n per column); act = MATLAB's max(x, 0) when relu (NaN gives 0; zero_first: it was
    /// written max(0, x), which keeps a -0). The graph's chain, folded in (graph/fusion.cpp).
    struct Epilogue {
        double alpha = 1, beta = 0;
        bool has_c = false;
        enum class Bias : std::uint8_t { none, per_row, per_column } bias = Bias::none;
        bool relu = false, zero_first = false;
        bool any() const noexcept { return alpha != 1 || has_c || bias != Bias::none || relu; }
    };
    Epilogue epilogue;
    /// A scan region's op (CumSum, CumProd, CumMax, CumMin).
    OpKind scan_op = OpKind::CumSum;
    /// A remap region's map along reduce_dim: output position k reads input position
    /// (remap_a * k + remap_b) mod (the input's extent there); everything else as is.
    std::int64_t remap_a = 1, remap_b = 0;
    /// A permute region's order (0-based: output dimension d is input dimension permutation[d];
    /// graph/permute_plan.hpp says how it runs).
    std::vector<int> permutation;
    /// An indexing region's selection, (inner, count, outer) over a viewed as (inner, extent,
    /// outer): element (i, k, o) of it is a's linear element i + inner * (I(k) - 1 + extent * o),
    /// with I = inputs[1] (1-based, checked: a bad subscript fails the region with an IndexError).
    /// Linear indexing is inner = outer = 1. gather: the region's shape is the result's; scatter:
    /// of repeated subscripts the last one wins; find: results are doubles, in order.
    struct IndexExtents {
        std::int64_t inner = 1, count = 0, outer = 1, extent = 0;
    };
    IndexExtents index_extents;
    /// For messages: the subscript's position among a's (1-based dimension; 0: linear).
    int index_position = 0;
    /// The reduce domain as (inner, len, outer): element (i, k, o) is linear index
    /// i + inner * (k + len * o); output (i, o) is i + inner * o.
    struct ReduceExtents {
        std::int64_t inner, len, outer;
    };
    ReduceExtents reduce_extents() const noexcept {
        if (reduce_dim < 0) return {1, shape.numel(), 1};
        std::int64_t inner = 1, outer = 1;
        for (int d = 0; d < reduce_dim; ++d) inner *= shape[d];
        for (int d = reduce_dim + 1; d < shape.ndims(); ++d) outer *= shape[d];
        return {inner, shape[reduce_dim], outer};
    }

    /// A kernel region's command group; its outputs are Kernel nodes, each naming its slot among
    /// the call's outputs in attr[0] (a plan may want only some of them).
    std::shared_ptr<const KernelCall> call;
    /// A kernel region: output slot s's position among `outputs`, or -1 when the plan left it out.
    int kernel_output(std::size_t slot) const noexcept;

    /// What the devices' backends worked out about it (not part of its meaning: not copied).
    BackendMemo memo;

    /// How input k walks the region, element by element in column-major order: its dimensions
    /// with the region's singletons dropped and neighbours merged where both are plain and
    /// both expanded or contiguous with each other (the CPU executor's gather and the Vulkan
    /// kernels' strided reads both follow this list).
    std::vector<InputDim> input_dims(std::size_t k) const;

    /// One line per instruction, for TANDEM_LOG=graph and failure messages.
    std::string to_string() const;
    /// The op names of the region, e.g. "sin,times,plus" (for error messages).
    std::string summary() const;
    /// The part of this region that computes output `j` alone (its backward slice), with
    /// `j` as the only output (not for a region with a tail); `input_index` (if given) receives, per input of the slice, the
    /// position of the input of this region it is.
    Region slice(std::size_t j, std::vector<std::size_t>* input_index = nullptr) const;
};

/// The cost summary of a complete region (fusion calls it for each region it makes).
RegionCost summarize_cost(const Region& r);

}  // namespace tandem::detail
