// User kernels in the shape of SYCL 2020: buffers, command groups that declare what they touch,
// queues that order them by those declarations. A kernel is written once per backend (a GLSL body
// for the Vulkan devices, a C++ callable for the CPU executor) and described once; the scheduler
// places each command group as it places fused regions, and the residency table moves its data.
//
//   tandem::Buffer u(rt, tandem::Shape{n, n}, tandem::DType::f64, "u");
//   const tandem::Kernel scale = tandem::Kernel("scale").accessors({"x", "y"}).scalars({"a"})
//                                    .glsl("y(item.x, item.y) = a * x(item.x, item.y);");
//   tandem::Queue q(rt);
//   q.submit([&](tandem::Handler& h) {
//       auto x = h.require<double>(u, tandem::access::read);
//       auto y = h.require<double>(v, tandem::access::write, tandem::no_init);
//       h.scalars({2.0});
//       h.parallel_for(tandem::Range(n, n), scale, [=](tandem::Item it) { y[it] = 2.0 * x[it]; });
//   });
//   tandem::Array total = tandem::sum(v.array());   // a kernel's output feeds fused ops
//
// Dependencies come from the accesses: a group reads the version of each buffer that the groups
// submitted before it wrote (read-after-write), and a write makes a new version, so earlier
// readers keep theirs (write-after-read and write-after-write are ordered without waiting).
// Groups with no conflict run concurrently, on the CPU and the devices at once. Submission never
// blocks: groups are handed to the scheduler in batches (a group commit), and waiting on an event,
// a host accessor or a gather of a buffer's array sends what is pending at once.
#pragma once

#include "tandem/export.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/array.hpp"
#include "tandem/future.hpp"
#include "tandem/runtime.hpp"

namespace tandem {

namespace detail {
struct BufferState;
struct QueueState;
struct EventState;
struct HandlerState;
struct HostAccessState;
/// Where a running C++ body finds one accessor's elements (set by the CPU executor before the
/// body runs: the kernel's data exist only once the scheduler has placed it).
struct KernelBinding {
    void* data = nullptr;
};
}  // namespace detail

// ---- access modes (SYCL 2020 4.7.6.2) ----------------------------------------------------------

enum class AccessMode : std::uint8_t { read, write, read_write };
namespace access {
template <AccessMode M>
struct mode_tag {
    static constexpr AccessMode value = M;
};
/// Reads the buffer's current contents.
inline constexpr mode_tag<AccessMode::read> read{};
/// Writes a new version of the buffer; its old contents are not brought to the kernel (elements
/// the kernel leaves unwritten are unspecified).
inline constexpr mode_tag<AccessMode::write> write{};
/// Reads the current contents and writes a new version from them.
inline constexpr mode_tag<AccessMode::read_write> read_write{};
}  // namespace access
/// The old contents are not needed: read_write behaves as write (nothing is transferred).
struct no_init_t {};
inline constexpr no_init_t no_init{};

// ---- ranges and items -----------------------------------------------------------------------------

/// The index space of a parallel_for: 1 to 3 extents, the first varying fastest (column-major, as
/// arrays are laid out).
struct Range {
    std::array<std::int64_t, 3> extent{1, 1, 1};
    int dims = 1;
    Range(std::int64_t n0) : extent{n0, 1, 1}, dims(1) {}  // NOLINT: implicit, as SYCL's range<1>
    Range(std::int64_t n0, std::int64_t n1) : extent{n0, n1, 1}, dims(2) {}
    Range(std::int64_t n0, std::int64_t n1, std::int64_t n2) : extent{n0, n1, n2}, dims(3) {}
    std::int64_t size() const noexcept { return extent[0] * extent[1] * extent[2]; }
    std::int64_t operator[](int d) const noexcept { return extent[static_cast<std::size_t>(d)]; }
};

/// One work item: its index along each extent of the range, and its linear position.
struct Item {
    std::array<std::int64_t, 3> id{0, 0, 0};
    std::int64_t linear = 0;
    std::int64_t operator[](int d) const noexcept { return id[static_cast<std::size_t>(d)]; }
};

// ---- buffers ----------------------------------------------------------------------------------------

/// An N-D array that command groups read and write in place (as far as they can tell: each write
/// makes a new version, which is how earlier readers keep what they read). Column-major, like
/// Array, and convertible to and from one without copying. Copies of a Buffer name the same buffer.
class TANDEM_API Buffer {
public:
    /// Uninitialised: the first command group must write it (reading it first is an error).
    Buffer(Runtime& rt, const Shape& shape, DType dtype = DType::f64, std::string name = "");
    /// Copied from host data (numel == shape.numel(), else ShapeError).
    Buffer(Runtime& rt, std::span<const double> data, const Shape& shape, std::string name = "");
    Buffer(Runtime& rt, std::span<const float> data, const Shape& shape, std::string name = "");
    /// Adopts `data` without copying it.
    Buffer(Runtime& rt, std::vector<double>&& data, const Shape& shape, std::string name = "");
    Buffer(Runtime& rt, std::vector<float>&& data, const Shape& shape, std::string name = "");
    /// A buffer whose contents are `a`'s value (no copy; `a` keeps its value when the buffer is written).
    explicit Buffer(const Array& a, std::string name = "");

    /// Its current contents as an Array (no copy): later writes to the buffer make new versions,
    /// the Array keeps this one. Reading an uninitialised buffer is an Error.
    Array array() const;
    /// Makes `a`'s value the buffer's contents (no copy); a's shape and type must be the buffer's.
    void assign(const Array& a);

    const Shape& shape() const;
    DType dtype() const;
    const std::string& name() const;
    std::int64_t numel() const { return shape().numel(); }

    const std::shared_ptr<detail::BufferState>& state() const noexcept { return state_; }

private:
    std::shared_ptr<detail::BufferState> state_;
};

// ---- accessors --------------------------------------------------------------------------------------

/// A kernel's view of a buffer, returned by Handler::require. In a C++ body: element access by
/// linear index, by subscripts (column-major over the buffer's shape) or by a work item (its id as
/// subscripts); through a read accessor the elements are const, so writing through one does not
/// compile. T = void: for GLSL-only kernels (no element access).
template <class T, AccessMode M>
class Accessor {
public:
    static constexpr AccessMode mode = M;
    using value_type = T;
    using pointer = std::conditional_t<M == AccessMode::read, const T*, T*>;
    using reference = std::conditional_t<M == AccessMode::read, const T&, T&>;

    Accessor() = default;
    Accessor(detail::KernelBinding* binding, std::array<std::int64_t, 3> extents, std::size_t index)
        : binding_(binding), e0_(extents[0]), e1_(extents[1]), index_(index) {}

    /// Its position among the command group's accessors (its name in GLSL is the kernel's
    /// accessors()[index]).
    std::size_t index() const noexcept { return index_; }
    /// The elements (valid while the body runs).
    pointer data() const noexcept { return static_cast<pointer>(binding_->data); }
    reference operator[](std::int64_t linear) const noexcept { return data()[linear]; }
    reference operator[](const Item& it) const noexcept { return (*this)(it.id[0], it.id[1], it.id[2]); }
    reference operator()(std::int64_t i) const noexcept { return data()[i]; }
    reference operator()(std::int64_t i, std::int64_t j) const noexcept { return data()[i + e0_ * j]; }
    reference operator()(std::int64_t i, std::int64_t j, std::int64_t k) const noexcept {
        return data()[i + e0_ * (j + e1_ * k)];
    }

private:
    detail::KernelBinding* binding_ = nullptr;
    std::int64_t e0_ = 0, e1_ = 0;
    std::size_t index_ = 0;
};

template <AccessMode M>
class Accessor<void, M> {
public:
    static constexpr AccessMode mode = M;
    Accessor() = default;
    Accessor(detail::KernelBinding*, std::array<std::int64_t, 3>, std::size_t index) : index_(index) {}
    std::size_t index() const noexcept { return index_; }

private:
    std::size_t index_ = 0;
};

// ---- kernels ----------------------------------------------------------------------------------------

/// Where a kernel would rather run; the cost model decides for `any`.
enum class KernelPlacement : std::uint8_t { any, cpu, device };

/// A kernel described once: its name (in messages and traces), its GLSL body and the names the
/// body gives the accessors and scalars, cost hints for the scheduler, and a placement preference.
/// The C++ body is given to parallel_for (it captures the accessors, as in SYCL).
///
/// The GLSL body is the inside of a function run once per work item, with:
///   `item` (uvec3: the work item's id), `range` (uvec3: the range's extents);
///   each accessor as a macro of the buffer's subscripts, column-major (`u(i, j)`: every buffer has
///   at least two dimensions, as arrays do, so a column vector's element is `u(i, 0)`; `u(i, j, k)`
///   for three or more, the later ones folded into the third) and `u_at(k)` by linear index, both
///   assignable when the accessor
///   writes (a read accessor's buffer is declared readonly: assigning to it does not compile);
///   each scalar as a const of its type (double, or float for scalars_f32).
/// Elements are `double`, `float`, or `uint8_t` for logical buffers (8-bit storage: loads, stores
/// and conversions, e.g. `f(i, j) = uint8_t(x > 0.0 ? 1 : 0)`; compute in uint).
/// `return` ends the item. Indices are 32-bit: a buffer of 2^32 elements or more is refused for a
/// GLSL-only kernel, and a kernel with both bodies runs such a group on the CPU.
class TANDEM_API Kernel {
public:
    explicit Kernel(std::string name);
    Kernel& glsl(std::string body);
    /// The accessors' names in the GLSL body, in the order the command group requires them.
    Kernel& accessors(std::vector<std::string> names);
    /// Scalar arguments' names in the GLSL body (doubles), set per command group by Handler::scalars.
    Kernel& scalars(std::vector<std::string> names);
    /// The same, as floats in the GLSL body (for devices and kernels in single precision).
    Kernel& scalars_f32(std::vector<std::string> names);
    /// Work per item for the cost model: arithmetic operations, and bytes moved (-1: the
    /// accessed buffers' bytes once each).
    Kernel& cost(double flops_per_item, double bytes_per_item = -1);
    Kernel& prefer(KernelPlacement where);

    const std::string& name() const noexcept { return name_; }
    const std::string& glsl_body() const noexcept { return glsl_; }
    const std::vector<std::string>& accessor_names() const noexcept { return accessor_names_; }
    const std::vector<std::string>& scalar_names() const noexcept { return scalar_names_; }
    bool scalars_are_f32() const noexcept { return scalars_f32_; }
    double flops_per_item() const noexcept { return flops_; }
    double bytes_per_item() const noexcept { return bytes_; }
    KernelPlacement preference() const noexcept { return prefer_; }
    /// Identifies this description (its text and settings): the scheduler's caches key on it.
    std::uint64_t signature() const noexcept { return signature_; }

private:
    void resign();
    std::string name_, glsl_;
    std::vector<std::string> accessor_names_, scalar_names_;
    bool scalars_f32_ = false;
    double flops_ = 0, bytes_ = -1;
    KernelPlacement prefer_ = KernelPlacement::any;
    std::uint64_t signature_ = 0;
};

// ---- events -----------------------------------------------------------------------------------------

/// A command group's completion: ready when everything it writes is computed (wherever it was).
/// Errors of the group (a body that threw, a GLSL body that did not compile with no C++ body to run
/// instead) arrive through it; groups that depend on it fail with the same error.
class TANDEM_API Event {
public:
    Event() = default;
    /// Blocks until the group has run; rethrows its error.
    void wait() const;
    bool ready() const;
    /// A future view (for then / when_all); asking for it sends the group to the scheduler if it
    /// was still pending.
    Future<std::monostate> future() const;
    bool valid() const noexcept { return state_ != nullptr; }

    explicit Event(std::shared_ptr<detail::EventState> s) : state_(std::move(s)) {}
    const std::shared_ptr<detail::EventState>& state() const noexcept { return state_; }

private:
    std::shared_ptr<detail::EventState> state_;
};

// ---- command groups ----------------------------------------------------------------------------------

/// What a command group function receives: it declares the group's accesses and dependencies and
/// supplies its work (one parallel_for or host_task).
class TANDEM_API Handler {
public:
    /// An accessor to `buffer`. T (double, float, std::uint8_t for logical, or void for GLSL-only
    /// kernels) must match the buffer's type, else DTypeError at submit.
    template <class T = void, AccessMode M>
    Accessor<T, M> require(Buffer& buffer, access::mode_tag<M>) {
        return make<T, M>(buffer, false);
    }
    template <class T = void, AccessMode M>
    Accessor<T, M> require(Buffer& buffer, access::mode_tag<M>, no_init_t) {
        return make<T, M>(buffer, true);
    }
    /// Runs after `e`'s group (beyond what the accesses order).
    void depends_on(const Event& e);
    void depends_on(const std::vector<Event>& events);
    /// The values of the kernel's scalars (Kernel::scalars), in order.
    void scalars(std::vector<double> values);

    /// Runs `kernel` over `range`: its GLSL body on a device, `cpu_body(Item)` on the CPU
    /// executor (over chunks of the range on the executor's threads), whichever the scheduler
    /// picks.
    template <class F>
    void parallel_for(Range range, const Kernel& kernel, F cpu_body) {
        set_work(range, &kernel, chunk_loop(range, std::move(cpu_body)), false);
    }
    /// GLSL only: runs on a device (an Error at submit when the runtime has none).
    void parallel_for(Range range, const Kernel& kernel) { set_work(range, &kernel, {}, false); }
    /// C++ only: runs on the CPU executor.
    template <class F>
    void parallel_for(Range range, F cpu_body) {
        set_work(range, nullptr, chunk_loop(range, std::move(cpu_body)), false);
    }
    /// `f()` once, on a CPU thread, after the group's dependencies; its accessors point to host
    /// copies of the buffers.
    template <class F>
    void host_task(F f) {
        set_work(Range(1), nullptr, [f = std::move(f)](std::int64_t, std::int64_t) mutable { f(); }, true);
    }

    explicit Handler(detail::HandlerState& s) : s_(&s) {}

private:
    using ChunkBody = std::function<void(std::int64_t first, std::int64_t last)>;
    template <class T, AccessMode M>
    Accessor<T, M> make(Buffer& buffer, bool skip_old) {
        int code = -1;  // the element type the C++ body expects (-1: none)
        if constexpr (std::is_same_v<T, double>) code = static_cast<int>(DType::f64);
        else if constexpr (std::is_same_v<T, float>) code = static_cast<int>(DType::f32);
        else if constexpr (std::is_same_v<T, std::uint8_t> || std::is_same_v<T, bool>) code = static_cast<int>(DType::logical);
        else static_assert(std::is_void_v<T>, "tandem::Handler::require: T must be double, float, std::uint8_t or void");
        static_assert(!std::is_same_v<T, bool>, "logical buffers hold bytes: use std::uint8_t");
        std::array<std::int64_t, 3> extents{};
        std::size_t index = 0;
        detail::KernelBinding* b = add_access(buffer, M, skip_old, code, extents, index);
        return Accessor<T, M>(b, extents, index);
    }
    /// The body over items [first, last) of the range, in order, the first extent fastest.
    template <class F>
    static ChunkBody chunk_loop(Range range, F body) {
        return [range, body = std::move(body)](std::int64_t first, std::int64_t last) {
            const std::int64_t e0 = range.extent[0], e1 = range.extent[1];
            Item it;
            it.id = {first % e0, (first / e0) % e1, first / (e0 * e1)};
            for (it.linear = first; it.linear < last; ++it.linear) {
                body(static_cast<const Item&>(it));
                if (++it.id[0] == e0) {
                    it.id[0] = 0;
                    if (++it.id[1] == e1) it.id[1] = 0, ++it.id[2];
                }
            }
        };
    }
    detail::KernelBinding* add_access(Buffer& buffer, AccessMode mode, bool skip_old, int dtype_code,
                                      std::array<std::int64_t, 3>& extents, std::size_t& index);
    void set_work(Range range, const Kernel* kernel, ChunkBody cpu, bool host_task);
    detail::HandlerState* s_;
};

struct QueueOptions {
    /// Each group also runs after the one submitted before it (SYCL's in_order property).
    bool in_order = false;
};

/// Submits command groups to a runtime's scheduler.
class TANDEM_API Queue {
public:
    explicit Queue(Runtime& rt, QueueOptions options = {});
    /// Sends what is pending to the scheduler (does not wait for it).
    ~Queue();
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;

    /// Runs `group(handler)` now to learn the group's accesses and work, then hands the group to
    /// the scheduler without blocking. Bad input (a type mismatch, a range larger than a buffer it
    /// writes, a buffer of another runtime or of one that is gone, a GLSL-only kernel and no
    /// device) throws here, and nothing of the group is submitted.
    template <class CG>
    Event submit(CG&& group) {
        auto h = begin();
        Handler handler(*h);
        std::forward<CG>(group)(handler);
        return end(std::move(h));
    }
    /// Blocks until every group submitted so far has run; rethrows the first error among them.
    void wait();
    /// Sends the pending groups to the scheduler now (submit does so in the background).
    void flush();

private:
    std::shared_ptr<detail::HandlerState> begin();
    Event end(std::shared_ptr<detail::HandlerState> h);
    std::shared_ptr<detail::QueueState> state_;
};

// ---- host access ------------------------------------------------------------------------------------

namespace detail {
TANDEM_API std::shared_ptr<HostAccessState> host_open(Buffer& b, AccessMode m, int dtype_code);
TANDEM_API void host_close(HostAccessState& s) noexcept;
TANDEM_API void* host_elements(const HostAccessState& s) noexcept;
TANDEM_API std::int64_t host_count(const HostAccessState& s) noexcept;
TANDEM_API std::int64_t host_rows(const HostAccessState& s) noexcept;
}  // namespace detail

/// The host's view of a buffer: construction waits for the groups that write it and brings its
/// contents to the host; a writing host accessor makes the buffer's next version from what the host
/// wrote when it is destroyed. While a writing one lives, submitting a group that uses the buffer is
/// an Error (it would see the host's writes half done).
template <class T, AccessMode M = AccessMode::read_write>
class HostAccessor {
public:
    using pointer = std::conditional_t<M == AccessMode::read, const T*, T*>;
    using reference = std::conditional_t<M == AccessMode::read, const T&, T&>;
    HostAccessor(Buffer& buffer, access::mode_tag<M> = {}) : state_(detail::host_open(buffer, M, dtype_code())) {}
    ~HostAccessor() { detail::host_close(*state_); }
    HostAccessor(const HostAccessor&) = delete;
    HostAccessor& operator=(const HostAccessor&) = delete;

    pointer data() const noexcept { return static_cast<pointer>(detail::host_elements(*state_)); }
    std::int64_t size() const noexcept { return detail::host_count(*state_); }
    reference operator[](std::int64_t linear) const noexcept { return data()[linear]; }
    reference operator()(std::int64_t i, std::int64_t j) const noexcept { return data()[i + detail::host_rows(*state_) * j]; }

private:
    static int dtype_code() {
        if constexpr (std::is_same_v<T, double>) return static_cast<int>(DType::f64);
        else if constexpr (std::is_same_v<T, float>) return static_cast<int>(DType::f32);
        else {
            static_assert(std::is_same_v<T, std::uint8_t>, "tandem::HostAccessor: T must be double, float or std::uint8_t");
            return static_cast<int>(DType::logical);
        }
    }
    std::shared_ptr<detail::HostAccessState> state_;
};

}  // namespace tandem
