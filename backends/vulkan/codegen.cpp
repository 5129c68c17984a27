// GLSL for a fused region. The generated kernel computes exactly what the CPU executor's lowering
// (backends/cpu/program.cpp) and kernels (backends/cpu/kernels_impl.inc) compute: the same value
// types per instruction, the same conversions, the same NaN rules written as the same expressions,
// and every arithmetic temporary `precise` so that no driver contracts a*b+c into an fma (the CPU
// rounds each operation). Transcendentals come from shaders/math_f64.glsl and math_f32.glsl
// (within 2 ulp of libm; the CPU runs the same files translated to C++, so the bits are the same),
// pasted only into kernels that use them.
#include "backends/vulkan/codegen.hpp"
#include "backends/vulkan/compiler.hpp"
#include "backends/vulkan/reduce_kernels.hpp"
#include "graph/repeat.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "tandem/error.hpp"
#include "tandem_shaders.hpp"

namespace tandem::detail::vk {

namespace {

// Bump when the generated code changes meaning for the same key text.
constexpr const char* kCodegenVersion = "tandem-vk-codegen 11";
/// Vector steps per invocation of an elementwise kernel that generates random numbers (times the
/// device rule's elements per thread).
constexpr std::uint32_t kRandomStepsPerInvocation = 4;

// Value types of the kernel: f64 or f32, as the CPU's registers (logical values are 0/1 in them).
DType reg(DType t) { return t == DType::f32 ? DType::f32 : DType::f64; }
const char* gtype(DType t) { return t == DType::f32 ? "float" : "double"; }
const char* tsuffix(DType t) { return t == DType::f32 ? "f" : "d"; }
std::string lit(DType t, const char* v) { return t == DType::f32 ? std::string(v) : std::string(v) + "LF"; }
const char* dtoken(DType t) { return t == DType::f64 ? "f64" : t == DType::f32 ? "f32" : "lg"; }

// Helpers every kernel may call (small; unused ones cost nothing after SPIR-V dead-code removal
// in the driver). Overloaded on double and float. NaN/Inf tests look at the bits, so that no driver
// can fold them away under no-NaN assumptions.
constexpr const char* kPrelude = R"glsl(
// n / d for n < 2^32 by the invariant divisor's packed multiplier (arguments.hpp extent_divisor):
// 64-bit integer division is a long software routine on GPUs, this is a multiply and three shifts.
uint tdmk_udiv(uint n, uint64_t dv) {
    uint hi, lo;
    umulExtended(n, uint(dv), hi, lo);
    return (hi + ((n - hi) >> uint((dv >> 32) & 0xFFul))) >> uint(dv >> 40);
}
// A folded circshift's position: below 2n, so one subtraction wraps it.
uint64_t tdmk_wrap(uint64_t v, uint64_t n) { return v >= n ? v - n : v; }
uint tdmk_wrap(uint v, uint n) { return v >= n ? v - n : v; }
bool tdmk_isnan(double x) { return (doubleBitsToInt64(x) & 0x7FFFFFFFFFFFFFFFL) > 0x7FF0000000000000L; }
bool tdmk_isinf(double x) { return (doubleBitsToInt64(x) & 0x7FFFFFFFFFFFFFFFL) == 0x7FF0000000000000L; }
bool tdmk_isfinite(double x) { return (doubleBitsToInt64(x) & 0x7FFFFFFFFFFFFFFFL) < 0x7FF0000000000000L; }
bool tdmk_isnan(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
bool tdmk_isinf(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) == 0x7F800000u; }
bool tdmk_isfinite(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) < 0x7F800000u; }
// MATLAB round: halves away from zero, as the CPU kernel writes it.
double tdmk_round(double a) {
    precise double t = tdm_trunc(a);
    precise double d = a - t;
    precise double one = a < 0.0LF ? -1.0LF : 1.0LF;
    precise double up = t + one;
    return abs(d) >= 0.5LF ? up : t;
}
float tdmk_round(float a) {
    precise float t = tdm_trunc(a);
    precise float d = a - t;
    precise float one = a < 0.0 ? -1.0 : 1.0;
    precise float up = t + one;
    return abs(d) >= 0.5 ? up : t;
}
double tdmk_sign(double a) { return a > 0.0LF ? 1.0LF : a < 0.0LF ? -1.0LF : a == 0.0LF ? 0.0LF : a; }
float tdmk_sign(float a) { return a > 0.0 ? 1.0 : a < 0.0 ? -1.0 : a == 0.0 ? 0.0 : a; }
// min/max omit NaN; otherwise a < b ? a : b exactly as the CPU (min(-0, +0) = +0).
double tdmk_min(double a, double b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : a < b ? a : b; }
double tdmk_max(double a, double b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : a > b ? a : b; }
float tdmk_min(float a, float b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : a < b ? a : b; }
float tdmk_max(float a, float b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : a > b ? a : b; }
// f32 division and sqrt through f64 (shaders/convert_f32.glsl): correctly rounded, whereas
// Vulkan allows 2.5 ulp for f32 division and an inversesqrt-based sqrt; subnormals right on
// devices that flush them (NVIDIA).
float tdmk_div(float a, float b) { return tdm_divf(a, b); }
float tdmk_sqrt(float a) { return tdm_sqrtf(a); }
// Single precision on a device that may flush fp32 subnormals (CodegenOptions::f32_guarded):
// each operation runs in float, and where an operand is subnormal, or a result of 0 is not exact,
// again from the exact conversions to double (convert_f32.glsl), rounded once to float. Double
// rounding is innocuous for + - * (53 >= 2*24 + 2), comparisons in double are exact.
bool tdmk_subn32(float x) { uint b = floatBitsToUint(x) & 0x7FFFFFFFu; return b != 0u && b < 0x00800000u; }
bool tdmk_zero32(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) == 0u; }
bool tdmk_odd32(float a, float b) { return tdmk_subn32(a) || tdmk_subn32(b); }
float tdmk_add32(float a, float b) {
    precise float r = a + b;
    [[dont_flatten]] if (tdmk_odd32(a, b) || (tdmk_zero32(r) && !(a == -b)))
        return tdm_f64_to_f32(tdm_f32_to_f64(a) + tdm_f32_to_f64(b));
    return r;
}
float tdmk_sub32(float a, float b) {
    precise float r = a - b;
    [[dont_flatten]] if (tdmk_odd32(a, b) || (tdmk_zero32(r) && !(a == b)))
        return tdm_f64_to_f32(tdm_f32_to_f64(a) - tdm_f32_to_f64(b));
    return r;
}
float tdmk_mul32(float a, float b) {
    precise float r = a * b;
    [[dont_flatten]] if (tdmk_odd32(a, b) || (tdmk_zero32(r) && !tdmk_zero32(a) && !tdmk_zero32(b)))
        return tdm_f64_to_f32(tdm_f32_to_f64(a) * tdm_f32_to_f64(b));
    return r;
}
bool tdmk_eq32(float a, float b) { return tdmk_odd32(a, b) ? tdm_f32_to_f64(a) == tdm_f32_to_f64(b) : a == b; }
bool tdmk_lt32(float a, float b) { return tdmk_odd32(a, b) ? tdm_f32_to_f64(a) < tdm_f32_to_f64(b) : a < b; }
bool tdmk_le32(float a, float b) { return tdmk_odd32(a, b) ? tdm_f32_to_f64(a) <= tdm_f32_to_f64(b) : a <= b; }
// A subnormal's negation through double: the H100's compiler turned the sign-bit flip into a
// negation that flushes.
float tdmk_neg32(float a) { return tdmk_subn32(a) ? tdm_f64_to_f32(-tdm_f32_to_f64(a)) : -a; }
float tdmk_abs32(float a) { return uintBitsToFloat(floatBitsToUint(a) & 0x7FFFFFFFu); }
float tdmk_min32(float a, float b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : tdmk_lt32(a, b) ? a : b; }
float tdmk_max32(float a, float b) { return tdmk_isnan(a) ? b : tdmk_isnan(b) ? a : tdmk_lt32(b, a) ? a : b; }
// A subnormal's floor, ceil, fix and sign by its sign bit (the builtins see it as 0).
// The sign bit of the result is the operand's (lavapipe gave -0 for +0 from a selection of the
// whole results' bits).
float tdmk_floor32(float a) {   // -1 or +0
    uint s = floatBitsToUint(a) & 0x80000000u;
    return tdmk_subn32(a) ? uintBitsToFloat(s | (s != 0u ? 0x3F800000u : 0u)) : floor(a);
}
float tdmk_ceil32(float a) {    // -0 or 1
    uint s = floatBitsToUint(a) & 0x80000000u;
    return tdmk_subn32(a) ? uintBitsToFloat(s | (s != 0u ? 0u : 0x3F800000u)) : ceil(a);
}
float tdmk_fix32(float a) { return tdmk_subn32(a) ? uintBitsToFloat(floatBitsToUint(a) & 0x80000000u) : tdm_trunc(a); }
float tdmk_sign32(float a) { return tdmk_subn32(a) ? uintBitsToFloat((floatBitsToUint(a) & 0x80000000u) | 0x3F800000u) : tdmk_sign(a); }
float tdmk_round32(float a) { return tdmk_subn32(a) ? tdmk_fix32(a) : tdmk_round(a); }
)glsl";

// The exact f64 division and sqrt (CodegenOptions::exact_f64_div_sqrt): the device's result, then
// up to two steps to the neighbour that an exact residual shows nearer. Residuals use Dekker's
// product, not fma(): Vulkan lets fma round twice, and lavapipe's does. Outside [2^-900, 2^900]
// (where the residual may not be exact) the device's result stands.
constexpr const char* kExactDivSqrt = R"glsl(
dvec2 tdmk_two_prod(double a, double b) {
    precise double p = a * b;
    precise double ca = 134217729.0LF * a;
    precise double ah = ca - (ca - a);
    precise double al = a - ah;
    precise double cb = 134217729.0LF * b;
    precise double bh = cb - (cb - b);
    precise double bl = b - bh;
    precise double e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return dvec2(p, e);
}
bool tdmk_tame(double x) { double m = abs(x); return m > 1.2e-271LF && m < 8.4e270LF; }
double tdmk_step(double x, bool up) {   // the neighbour of nonzero finite x, up or down in value
    int64_t b = doubleBitsToInt64(x);
    return int64BitsToDouble((x > 0.0LF) == up ? b + 1L : b - 1L);
}
double tdmk_div(double a, double b) {
    precise double q = a / b;
    if (!(tdmk_tame(a) && tdmk_tame(b) && tdmk_tame(q))) return q;
    for (int it = 0; it < 2; ++it) {
        dvec2 p = tdmk_two_prod(q, b);
        precise double r = (a - p.x) - p.y;   // a - q*b, exact
        if (r == 0.0LF) break;
        double qn = tdmk_step(q, (r > 0.0LF) == (b > 0.0LF));
        dvec2 pn = tdmk_two_prod(qn, b);
        precise double rn = (a - pn.x) - pn.y;
        if (!(abs(rn) < abs(r))) break;        // |a - q b| = |b| |a/b - q|: the nearer quotient wins
        q = qn;
    }
    return q;
}
double tdmk_sqrt(double x) {
    precise double s = sqrt(x);
    if (!(x > 0.0LF && tdmk_tame(x))) return s;
    for (int it = 0; it < 2; ++it) {
        // Tuckerman: s is right iff s*(s - ulp) < x <= s*(s + ulp) (products exact, signs only).
        double dn = tdmk_step(s, false), up = tdmk_step(s, true);
        dvec2 pd = tdmk_two_prod(s, dn);
        precise double rd = (x - pd.x) - pd.y;
        dvec2 pu = tdmk_two_prod(s, up);
        precise double ru = (x - pu.x) - pu.y;
        if (rd <= 0.0LF) s = dn;
        else if (ru > 0.0LF) s = up;
        else break;
    }
    return s;
}
)glsl";
constexpr const char* kIeeeDivSqrt = R"glsl(
double tdmk_div(double a, double b) { precise double q = a / b; return q; }
double tdmk_sqrt(double x) { return sqrt(x); }
)glsl";

// MATLAB rem (fmod, exact) and mod (sign of the divisor, mod(a, 0) = a), as the CPU writes them;
// 0 where a / b is within round-off of a nonzero integer and b is not one (graph/op_reference.hpp:
// remainder_snaps; the quotient rounded to the operands' type, the test in double).
constexpr const char* kModRem = R"glsl(
bool tdmk_snaps(double a, double b, bool single) {
    if (floor(b + 0.5LF) == b) return false;
    precise double q = a / b;
    if (single) q = tdm_f32_to_f64(tdm_f64_to_f32(q));
    precise double n = floor(q + 0.5LF);
    if (n == 0.0LF) return false;
    precise double r = (q - n) / n;
    return abs(r) < (single ? 1.1920928955078125e-07LF : 2.220446049250313e-16LF);
}
double tdmk_zero_as(double s) { return (s < 0.0LF || (s == 0.0LF && (unpackDouble2x32(s).y >> 31) != 0u)) ? -0.0LF : 0.0LF; }
double tdmk_rem(double a, double b) { return tdmk_snaps(a, b, false) ? tdmk_zero_as(a) : tdm_fmod(a, b); }
// fmod is exact, so the f64 remainder of two floats is a float: rounding it changes nothing. The
// exact conversions, for devices that flush fp32 subnormals.
float tdmk_rem(float a, float b) {
    double ad = tdm_f32_to_f64(a), bd = tdm_f32_to_f64(b);
    return tdm_f64_to_f32(tdmk_snaps(ad, bd, true) ? tdmk_zero_as(ad) : tdm_fmod(ad, bd));
}
double tdmk_mod_of(double a, double b, bool single) {
    if (b == 0.0LF) return a;
    if (tdmk_snaps(a, b, single)) return tdmk_zero_as(b);
    double r = tdm_fmod(a, b);
    precise double s = r + b;
    return (!(r == 0.0LF) && ((r < 0.0LF) != (b < 0.0LF))) ? s : r;
}
double tdmk_mod(double a, double b) { return tdmk_mod_of(a, b, false); }
// In double: r + b is a sum of floats, rounded once more to float (innocuous, 53 >= 2*24 + 2).
float tdmk_mod(float a, float b) { return tdm_f64_to_f32(tdmk_mod_of(tdm_f32_to_f64(a), tdm_f32_to_f64(b), true)); }
)glsl";

/// What a lowering needs in the kernel besides the prelude.
enum class GlslLib : std::uint8_t { none, math, modrem };

/// An elementwise op's GLSL: graph/ops.def's glsl column (its comment says what the template holds).
struct GlslLowering {
    std::string_view text;     ///< empty: the op has no GLSL of its own (not elementwise, or cast/where)
    std::string_view guarded;  ///< for f32 where f32 is guarded; empty: `text`
    GlslLib lib = GlslLib::none;
};

constexpr std::array<GlslLowering, kOpCount> make_glsl_table() {
    std::array<GlslLowering, kOpCount> t{};
#define GLSL(text) GlslLowering{text, {}, GlslLib::none}
#define GLSL_F32(text, guarded) GlslLowering{text, guarded, GlslLib::none}
#define GLSL_MATH(text) GlslLowering{text, {}, GlslLib::math}
#define GLSL_MODREM(text) GlslLowering{text, {}, GlslLib::modrem}
#define TANDEM_OP(...)
#define TANDEM_UNARY(E, name, rule, cost, acc, api, ref, glsl, cpu) t[static_cast<std::size_t>(OpKind::E)] = glsl;
#define TANDEM_BINARY(E, name, rule, cost, acc, api, ref, glsl, cpu) t[static_cast<std::size_t>(OpKind::E)] = glsl;
#include "graph/ops.def"
#undef TANDEM_OP
#undef TANDEM_UNARY
#undef TANDEM_BINARY
#undef GLSL
#undef GLSL_F32
#undef GLSL_MATH
#undef GLSL_MODREM
    return t;
}
constexpr std::array<GlslLowering, kOpCount> kGlsl = make_glsl_table();

/// Writes one kernel: declarations before the element loop (`pre_`), the per-element body
/// (`body_`), and the key text alongside.
class Writer {
public:
    /// `loops`: turn a run of repeated steps (graph/repeat.hpp) into a loop.
    Writer(const Region& r, std::span<const InputAccess> access, std::span<const InputWalk> walks,
           const CodegenOptions& o, bool loops)
        : r_(r), access_(access), walks_(walks), o_(o), plan_(plan_scalars(r)) {
        if (loops) plan_loop();
    }

    /// A carried value whose type differs between copy 0 and copy 1 (the run's shape check
    /// cannot see every type rule): the kernel must be written without the loop.
    bool loop_failed() const noexcept { return loop_failed_; }

    Kernel run() {
        Kernel k;
        k.workgroup_size = std::max<std::uint32_t>(
            1, r_.is_reduce() ? reduce_workgroup(r_, o_.reduction_workgroup_size, o_.max_shared_bytes) : o_.workgroup_size);
        k.elements_per_thread = std::max<std::uint32_t>(1, o_.elements_per_thread);
        choose_path();
        // Random numbers: a Philox block per vector step, and per-invocation setup (counter,
        // key, addresses) that several blocks share; more of them per invocation pays on GPUs.
        const bool random = std::any_of(r_.program.begin(), r_.program.end(), [](const Instr& ins) {
            return ins.op == OpKind::RandU || ins.op == OpKind::RandN;
        });
        if (random && vec_ > 1 && !r_.is_reduce()) k.elements_per_thread *= kRandomStepsPerInvocation;
        if (vec_ > 1) {
            // Whole vectors per invocation: ceil(elements_per_thread / V) steps of V elements.
            steps_ = (k.elements_per_thread + vec_ - 1) / vec_;
            k.elements_per_thread = steps_ * vec_;
        }
        k.vector_width = vec_;
        const std::uint32_t npush = push_slots(plan_.values.size(), o_.max_push_bytes);
        k.push_bytes = 16 + 8 * npush;
        k.access.assign(access_.begin(), access_.end());
        k.walks.assign(walks_.begin(), walks_.end());
        k.walks.resize(r_.inputs.size());

        // Argument block offsets (see arguments.hpp).
        const std::size_t nin = r_.inputs.size(), nout = r_.outputs.size();
        std::uint64_t off = kArgHeaderBytes + 8 * (nin + nout);
        dims_offset_.resize(nin, 0);
        for (std::size_t i = 0; i < nin; ++i)
            if (access_[i] == InputAccess::strided) {
                dims_offset_[i] = off;
                off += kStridedDimBytes * static_cast<std::uint64_t>(walk_letters(k.walks[i]).size());
            }
        key_ << kCodegenVersion << ";wg=" << k.workgroup_size << ";ept=" << k.elements_per_thread
             << ";push=" << npush << ";div=" << (o_.exact_f64_div_sqrt ? "exact" : "device")
             << (o_.f32_guarded ? ";f32=guarded" : "") << (o_.preserve_signed_zeros ? ";sz" : "")
             << ";path=" << (vec_ > 1 ? "vec" + std::to_string(vec_) : std::string("general"))
             << (o_.narrow_maps ? "" : ";maps=wide");
        if (rep_) key_ << ";loop=" << rep_->begin << ',' << rep_->period << ',' << rep_->count;
        key_ << ";in=";
        for (std::size_t i = 0; i < nin; ++i) {
            DType t = r_.inputs[i]->dtype;
            uses_u8_ |= t == DType::logical;
            key_ << (i ? "," : "") << dtoken(t) << ':'
                 << (access_[i] == InputAccess::full ? "full" : access_[i] == InputAccess::scalar ? "scalar" : "strided")
                 << (access_[i] == InputAccess::strided ? k.walks[i] : "");
        }
        key_ << ";prog=";

        // Scalars: push constants first, the rest from the argument block.
        scalars_at_ = off;
        for (std::size_t s = 0; s < plan_.values.size(); ++s) {
            if (s >= loop_slots_.first && s < loop_slots_.second) continue;  // read per step: tdmk_slot
            if (s < npush) pre_ << "    double s" << s << " = pc.s[" << s << "];\n";
            else pre_ << "    double s" << s << " = RefF64(" << args_ << " + " << off + 8 * (s - npush) << "ul).v;\n";
        }
        if (r_.is_reduce()) {
            // After the scalars: inner, len, outer, chunks, lanes, partials, per_invocation (arguments.hpp).
            const std::uint64_t at = off + 8 * (plan_.values.size() > npush ? plan_.values.size() - npush : 0);
            const char* names[kReduceParamsCount] = {"r_inner", "r_len", "r_outer", "r_chunks", "r_lanes", "r_partials", "r_per"};
            for (std::uint64_t q = 0; q < kReduceParamsCount; ++q)
                pre_ << "    uint64_t " << names[q] << " = RefU64(" << args_ << " + " << at + 8 * q << "ul).v;\n";
            k.reduction_threads = o_.reduction_threads;
            const ReducePlan rp = plan_reduce(r_, k.reduction_threads, k.workgroup_size);
            whole_outputs_ = rp.whole_outputs;
            contiguous_ = rp.contiguous;
            per_invocation_ = static_cast<std::uint32_t>(rp.per_invocation);
            if (reduce_shared_bytes(r_, k.workgroup_size) > o_.max_shared_bytes)
                throw DeviceError("vulkan codegen: " + std::to_string(r_.reductions.size()) +
                                  " reductions in one region need more shared memory than the device has");
            key_ << ";reduce=" << (contiguous_ ? (o_.subgroup_shuffle ? "contig-sg" : "contig") : "strided-m" + std::to_string(per_invocation_))
                 << (whole_outputs_ ? "-whole" : "");
            for (const Reduction& red : r_.reductions) key_ << ',' << op_info(red.op).name << ':' << red.value;
            if (!r_.tail.empty()) write_tail(k, at + 8 * kReduceParamsCount);
        }
        // Generators number the whole region's elements: a streamed piece's start from its base.
        const bool generates = std::any_of(r_.program.begin(), r_.program.end(), [](const Instr& ins) {
            return op_info(ins.op).group == OpGroup::Generator;
        });
        if (generates) {
            key_ << ";gbase";
            pre_ << "    uint64_t gbase = RefU64(" << args_ << " + " << kIndexBaseOffset << "ul).v;\n";
        }
        for (std::size_t i = 0; i < nin; ++i)
            pre_ << "    uint64_t in" << i << " = RefU64(" << args_ << " + " << kArgHeaderBytes + 8 * i << "ul).v;\n";
        for (std::size_t j = 0; j < nout; ++j)
            pre_ << "    uint64_t out" << j << " = RefU64(" << args_ << " + " << kArgHeaderBytes + 8 * (nin + j) << "ul).v;\n";

        type_.resize(r_.program.size());
        // The per-element code: once with 64-bit index `i` and scalar loads and stores (the
        // general path, and the fast path's tail); in the fast path once more, for every vector
        // lane together.
        general_ = general_pass();
        if (vec_ > 1) vector_code_ = vector_pass();

        k.glsl = source(k, npush, false);
        k.key = key_.str();
        if (r_.is_reduce()) {
            k.combine_glsl = source(k, npush, true);
            k.combine_key = k.key + ";pass=combine";
        }
        return k;
    }

private:
    // ---- single precision -------------------------------------------------------------------
    // With f32_guarded (a device that may flush fp32 subnormals), f32 arithmetic, comparisons and
    // conversions go through the prelude's tdmk_*32 functions and convert_f32.glsl's exact
    // conversions, which give subnormals the CPU's results; otherwise plain float operations.
    bool guarded(DType t) const { return t == DType::f32 && o_.f32_guarded; }
    /// Register value x of type `from` as type `to`.
    std::string convert(const std::string& x, DType from, DType to) const {
        if (from == to) return x;
        if (to == DType::f32) return (o_.f32_guarded ? "tdm_f64_to_f32(" : "float(") + x + ")";
        return (o_.f32_guarded ? "tdm_f32_to_f64(" : "double(") + x + ")";
    }
    /// A value loaded from storage of type `src` (f64, f32 or a uint of a logical), as type t.
    std::string from_storage(const std::string& load, DType src, DType t) const {
        if (src == DType::logical) return std::string(gtype(t)) + "(" + load + ")";
        return convert(load, src, t);
    }
    /// x == 0 for a value of type t (a subnormal is not 0 where the device would flush it).
    std::string is_zero(const std::string& x, DType t) const {
        return guarded(t) ? "tdmk_zero32(" + x + ")" : "(" + x + " == " + lit(t, "0.0") + ")";
    }
    /// a op b for type t: the operator, or where guarded the prelude's function for it.
    std::string arith(DType t, const char* op, const char* guarded_fn, const std::string& a, const std::string& b) const {
        return guarded(t) ? std::string(guarded_fn) + "(" + a + ", " + b + ")" : a + " " + op + " " + b;
    }

    /// A reduce region's tail: its own kernel's per-element code (a general-path elementwise
    /// kernel over the reduced shape reading the stored results) as the function tdmk_tail(args,
    /// i), its scalars and addresses in an argument block of its own at `at`.
    void write_tail(Kernel& k, std::uint64_t at) {
        // Its inputs have its shape: read in full whatever their size (access_for would read a
        // 1 x 1 one as a scalar, which the region's key does not tell apart).
        const Region tail = r_.tail_region();
        const std::vector<InputAccess> access(tail.inputs.size(), InputAccess::full);
        const std::vector<InputWalk> walks(tail.inputs.size());
        CodegenOptions o = o_;
        o.max_push_bytes = 0;  // the push constants are the region's
        o.contiguous_fast_path = false;
        o.loops = false;
        Writer w(tail, access, walks, o, false);
        w.args_ = "tdmk_tail_args";  // its argument block: the function's parameter
        auto tk = std::make_shared<Kernel>(w.run());
        tail_fn_ = "void tdmk_tail(uint64_t tdmk_tail_args, uint64_t i) {\n" + w.pre_.str() + "    uint err = 0xFFFFFFFFu;\n" +
                   w.general_ + "}\n";
        tail_call_ = "            tdmk_tail(pc.args + " + std::to_string(at) + "ul, q);\n";
        need_f64_ |= w.need_f64_;
        need_f32_ |= w.need_f32_;
        need_modrem_ |= w.need_modrem_;
        uses_u8_ |= w.uses_u8_;
        key_ << ";tail=" << tk->key;
        k.tail = std::move(tk);
        k.tail_args_offset = at;
    }

    /// The fast path's vector width (see Kernel::vector_width), 1 for the general path.
    void choose_path() {
        vec_ = 1;
        if (!o_.contiguous_fast_path || r_.is_reduce()) return;
        if (static_cast<std::uint64_t>(r_.shape.numel()) > std::uint64_t{0xFFFFFFFFu}) return;
        bool f64 = false, f32 = false;
        for (std::size_t k = 0; k < r_.inputs.size(); ++k) {
            if (access_[k] == InputAccess::strided) return;
            if (access_[k] != InputAccess::full) continue;
            f64 |= r_.inputs[k]->dtype == DType::f64;
            f32 |= r_.inputs[k]->dtype == DType::f32;
        }
        for (const auto& o : r_.outputs) {
            f64 |= o.node->dtype == DType::f64;
            f32 |= o.node->dtype == DType::f32;
        }
        // 16-byte accesses: dvec2, vec4; logical-only regions: 4 bytes per step.
        vec_ = f64 ? 2 : 4;
        (void)f32;
    }

    // ---- the per-element code, in segments --------------------------------------------
    // Without a run of repeated steps the program is one segment. With one (rep_), it is
    // prefix (everything before copy 1: copy 0 included), the loop over copies 1 .. count - 1
    // with copy 1's code as its body, and the suffix after the run. Values a copy passes to the
    // next, or the last copy to the suffix, live in carried variables c<j> (j: the position in
    // the step), declared after the prefix from copy 0's values and updated at the end of each
    // step. Copy t reads copy 1's scalar slots plus (t - 1) * slots-per-copy (pack_arguments
    // lays slots out in program order), loaded once per step through tdmk_slot.
    enum class Seg : std::uint8_t { prefix, body, suffix };

    /// Finds the run (graph/repeat.hpp) and checks that its scalar slots step by a constant.
    void plan_loop() {
        rep_ = find_repeat(r_);
        if (!rep_) return;
        const std::uint32_t first = rep_->begin + rep_->period, L = rep_->period;
        int lo = -1, per_copy = 0;
        for (std::uint32_t j = 0; j < L; ++j)
            for (int k = 0; k < 4; ++k)
                if (int s = plan_.slot[first + j][static_cast<std::size_t>(k)]; s >= 0) {
                    if (lo < 0) lo = s;
                    ++per_copy;
                }
        for (std::uint32_t t = 1; t < rep_->count; ++t)
            for (std::uint32_t j = 0; j < L; ++j)
                for (std::size_t k = 0; k < 4; ++k) {
                    const int want = plan_.slot[first + j][k], got = plan_.slot[first + (t - 1) * L + j][k];
                    if ((want < 0) != (got < 0) || (want >= 0 && got != want + static_cast<int>(t - 1) * per_copy)) {
                        rep_.reset();
                        return;
                    }
                }
        slots_per_copy_ = static_cast<std::uint32_t>(per_copy);
        if (lo >= 0)
            loop_slots_ = {static_cast<std::size_t>(lo), static_cast<std::size_t>(lo) + std::size_t{slots_per_copy_} * (rep_->count - 1)};
        // Carried positions: read by the next copy, or (of the last copy) after the run.
        carried_.assign(L, false);
        auto carry = [&](std::uint32_t v, std::uint32_t from) {
            if (v >= from && v < from + L) carried_[v - from] = true;
        };
        for (std::uint32_t i = first; i < first + L; ++i)
            for (int k = 0; k < op_info(r_.program[i].op).arity; ++k)
                if (const Arg& a = r_.program[i].args[static_cast<std::size_t>(k)]; a.kind == Arg::Kind::Value)
                    carry(a.index, rep_->begin);
        const std::uint32_t last = rep_->end() - L;
        for (std::size_t i = rep_->end(); i < r_.program.size(); ++i)
            for (int k = 0; k < op_info(r_.program[i].op).arity; ++k)
                if (const Arg& a = r_.program[i].args[static_cast<std::size_t>(k)]; a.kind == Arg::Kind::Value)
                    carry(a.index, last);
        for (const auto& o : r_.outputs) carry(o.value, last);
        for (const auto& red : r_.reductions) carry(red.value, last);
    }

    /// The instructions of a segment.
    std::pair<std::uint32_t, std::uint32_t> range(Seg seg) const {
        const auto n = static_cast<std::uint32_t>(r_.program.size());
        if (!rep_) return seg == Seg::prefix ? std::pair{0u, n} : std::pair{n, n};
        const std::uint32_t first = rep_->begin + rep_->period;
        if (seg == Seg::prefix) return {0u, first};
        if (seg == Seg::body) return {first, first + rep_->period};
        return {rep_->end(), n};
    }

    void set_lane(int lane) {
        lane_ = lane;
        sfx_ = lane < 0 ? "" : "_l" + std::to_string(lane);
        idx_ = lane < 0 ? "i" : "i" + sfx_;
    }

    /// The name of value v in the current segment and lane: a carried variable where v is the
    /// previous copy's (in the loop) or the last copy's (after it).
    std::string vname(std::uint32_t v) const {
        if (rep_) {
            const std::uint32_t b = rep_->begin, L = rep_->period, last = rep_->end() - L;
            if (seg_ == Seg::body && v >= b && v < b + L) return "c" + std::to_string(v - b) + sfx_;
            if (seg_ == Seg::suffix && v >= last && v < last + L) return "c" + std::to_string(v - last) + sfx_;
        }
        return "v" + std::to_string(v) + sfx_;
    }

    /// Lowers the instructions of `seg` for `lane` (< 0: the scalar path with 64-bit index `i`;
    /// c: component c of the fast path's vectors, index i_l<c>).
    std::string segment(Seg seg, int lane) {
        seg_ = seg;
        set_lane(lane);
        body_.str("");
        body_.clear();
        const auto [lo, hi] = range(seg);
        for (std::uint32_t i = lo; i < hi; ++i) lower(i);
        return body_.str();
    }

    std::string carried_decls(int lane) {
        std::string out;
        seg_ = Seg::prefix;
        set_lane(lane);
        for (std::uint32_t j = 0; j < carried_.size(); ++j)
            if (carried_[j])
                out += std::string("        ") + gtype(type_[rep_->begin + j]) + " c" + std::to_string(j) + sfx_ + " = " +
                       vname(rep_->begin + j) + ";\n";
        return out;
    }
    std::string carried_updates(int lane) {
        std::string out;
        set_lane(lane);
        const std::uint32_t first = rep_->begin + rep_->period;
        for (std::uint32_t j = 0; j < carried_.size(); ++j) {
            if (!carried_[j]) continue;
            loop_failed_ |= type_[first + j] != type_[rep_->begin + j];
            out += "        c" + std::to_string(j) + sfx_ + " = v" + std::to_string(first + j) + sfx_ + ";\n";
        }
        return out;
    }
    /// The loop's head: copy tdmk_t's scalar slots, loaded once per step for every lane.
    std::string loop_head() const {
        std::string out = "        for (uint tdmk_t = 1u; tdmk_t < " + std::to_string(rep_->count) + "u; ++tdmk_t) {\n";
        for (std::size_t s = loop_slots_.first; s < loop_slots_.first + slots_per_copy_; ++s)
            out += "        double ls" + std::to_string(s) + " = tdmk_slot(" + std::to_string(s) + "u + (tdmk_t - 1u) * " +
                   std::to_string(slots_per_copy_) + "u);\n";
        for (int s : f32_loop_slots_)
            out += "        float ls" + std::to_string(s) + "_f32 = tdm_f64_to_f32(ls" + std::to_string(s) + ");\n";
        return out;
    }
    /// Caches of names defined inside the loop's scope are forgotten after it.
    struct Caches {
        std::map<std::pair<std::string, DType>, std::string> conv;
        std::map<std::tuple<std::uint32_t, DType, int>, std::string> inputs;
        std::map<std::uint32_t, bool> offsets, coordinates;
    };
    Caches save() const { return {conv_, inputs_, offsets_done_, coordinates_done_}; }
    void restore(Caches c) {
        conv_ = std::move(c.conv);
        inputs_ = std::move(c.inputs);
        offsets_done_ = std::move(c.offsets);
        coordinates_done_ = std::move(c.coordinates);
    }

    /// The scalar path's per-element code (and its stores). Its first run writes the key.
    std::string general_pass() {
        std::string code = segment(Seg::prefix, -1);
        if (rep_) {
            code += carried_decls(-1);
            Caches outer = save();
            const std::string body = segment(Seg::body, -1);  // first: the head converts what it reads
            code += loop_head() + body;
            code += carried_updates(-1) + "        }\n";
            restore(std::move(outer));
            code += segment(Seg::suffix, -1);
        }
        if (keying_) key_ << ";out=";
        seg_ = Seg::suffix;
        set_lane(-1);
        body_.str("");
        body_.clear();
        // A reduce region's values are folded, not stored (reduce_kernels.cpp).
        if (!r_.is_reduce())
            for (std::size_t j = 0; j < r_.outputs.size(); ++j) store(j);
        keying_ = false;
        return code + body_.str();
    }

    /// The fast path's code of one vector step: each segment for every lane in turn (lanes share
    /// a scope, their names end in _l<c>), a random block per generator and step shared by the lanes.
    std::string vector_pass() {
        const auto V = static_cast<int>(vec_);
        std::string code;
        for (int c = 0; c < V; ++c) code += "        uint i_l" + std::to_string(c) + " = vi * " + std::to_string(vec_) + "u + " + std::to_string(c) + "u;\n";
        auto lanes = [&](Seg seg) {
            std::string lane_code;
            for (int c = 0; c < V; ++c) lane_code += segment(seg, c);
            return rng_decls(seg) + lane_code;
        };
        code += lanes(Seg::prefix);
        if (rep_) {
            for (int c = 0; c < V; ++c) code += carried_decls(c);
            Caches outer = save();
            const std::string body = lanes(Seg::body);
            code += loop_head() + body;
            for (int c = 0; c < V; ++c) code += carried_updates(c);
            code += "        }\n";
            restore(std::move(outer));
            code += lanes(Seg::suffix);
        }
        seg_ = Seg::suffix;
        for (int c = 0; c < V; ++c) {
            set_lane(c);
            body_.str("");
            body_.clear();
            for (std::size_t j = 0; j < r_.outputs.size(); ++j) store(j);
            code += body_.str();
        }
        return code;
    }
    /// The fast path's Philox blocks of the generators in `seg`.
    std::string rng_decls(Seg seg) const {
        const auto [lo, hi] = range(seg);
        std::string out;
        for (const auto& [instr, decl] : vec_rng_)
            if (instr >= lo && instr < hi) out += "        " + decl + "\n";
        return out;
    }

    static std::string vtype(DType t, std::uint32_t n) {
        const std::string N = std::to_string(n);
        return t == DType::f64 ? "dvec" + N : t == DType::f32 ? "vec" + N : "uvec" + N;
    }
    static const char* vref(DType t, bool in) {
        if (t == DType::f64) return in ? "VInF64" : "VOutF64";
        if (t == DType::f32) return in ? "VInF32" : "VOutF32";
        return in ? "VInU8" : "VOutU8";
    }
    /// The address of vector `vi` of array `base` of type t.
    std::string vaddr(const std::string& base, DType t) const {
        return base + " + uint64_t(vi) * " + std::to_string(dtype_size(t) * vec_) + "ul";
    }

    // ---- operands ------------------------------------------------------------------------
    /// A value converted to t (cached, as the CPU's `convert`).
    std::string value(std::uint32_t v, DType t) {
        std::string name = vname(v);
        if (type_[v] == t) return name;
        auto key = std::make_pair(name, t);
        if (auto it = conv_.find(key); it != conv_.end()) return it->second;
        std::string n = name + "_" + tsuffix(t);
        body_ << "        " << gtype(t) << ' ' << n << " = " << convert(name, type_[v], t) << ";\n";
        conv_.emplace(key, n);
        return n;
    }
    /// Scalar slot `slot` (a double): loaded before the element loop, or in the loop's body
    /// per step (ls<slot>: copy 1's slot, shifted to the step's copy by loop_head()).
    std::string sref(int slot) const { return (seg_ == Seg::body ? "ls" : "s") + std::to_string(slot); }
    std::string scalar(int slot, DType t) {
        std::string n = sref(slot);
        if (!guarded(t)) return convert(n, DType::f64, t);
        // Guarded single precision: the exact conversion once per invocation (once per step in
        // the loop's body), not at every use in every lane.
        if (seg_ == Seg::body) f32_loop_slots_.insert(slot);
        else if (f32_slots_.insert(slot).second) pre_ << "    float " << n << "_f32 = tdm_f64_to_f32(" << n << ");\n";
        return n + "_f32";
    }
    /// Input k read as type t: scalar inputs once before the loop, the others per element.
    std::string input(std::uint32_t k, DType t) {
        const DType src = r_.inputs[k]->dtype;
        const std::string base = "in" + std::to_string(k);
        if (access_[k] == InputAccess::scalar) {
            auto key = std::make_pair(k, t);
            if (auto it = scalar_inputs_.find(key); it != scalar_inputs_.end()) return it->second;
        } else if (auto it = inputs_.find({k, t, lane_}); it != inputs_.end()) {
            return it->second;
        }
        if (lane_ >= 0 && access_[k] == InputAccess::full) {
            // Component `lane` of the vector loaded for this step (the same bits as a scalar load).
            vec_in_.emplace(k, src);
            const std::string load = base + "_v[" + std::to_string(lane_) + "]";
            std::string n = base + "_" + tsuffix(t) + sfx_;
            body_ << "        " << gtype(t) << ' ' << n << " = " << from_storage(load, src, t) << ";\n";
            inputs_.emplace(std::make_tuple(k, t, lane_), n);
            return n;
        }
        std::string index;
        std::ostringstream& os = access_[k] == InputAccess::scalar ? pre_ : body_;
        const char* indent = access_[k] == InputAccess::scalar ? "    " : "        ";
        if (access_[k] == InputAccess::scalar) index = "0ul";
        else if (access_[k] == InputAccess::full) index = "i";
        else {
            index = "o" + std::to_string(k);
            if (!offsets_done_[k]) {
                offsets_done_[k] = true;
                emit_offset(k);
            }
        }
        std::string load;
        if (src == DType::f64) load = "RefF64(" + base + " + " + index + " * 8ul).v";
        else if (src == DType::f32) load = "RefF32(" + base + " + " + index + " * 4ul).v";
        else load = "uint(RefU8(" + base + " + " + index + ").v)";
        std::string n = base + "_" + tsuffix(t);
        os << indent << gtype(t) << ' ' << n << " = " << from_storage(load, src, t) << ";\n";
        if (access_[k] == InputAccess::scalar) scalar_inputs_.emplace(std::make_pair(k, t), n);
        else inputs_.emplace(std::make_tuple(k, t, lane_), n);
        return n;
    }
    /// The element offset of strided input k: the linear index split over the collapsed extents
    /// (Region::input_dims), each position mapped where a remap was folded in. Below 2^32 (every
    /// region of fewer elements, and the start of the others) the split is in 32-bit integers,
    /// dividing by multiplication (tdmk_udiv); 64-bit division above. Without a mapped dimension
    /// the offset never exceeds the index (an input's strides are at most the region's), so 32
    /// bits hold it too; a mapped input (a slice of a larger array) sums it in 64 bits.
    /// Input k's arguments, loaded once before the element loop.
    void preload(std::uint32_t k) {
        if (!preloaded_.insert(k).second) return;
        const std::string_view walk = walk_letters(walks_[k]);
        const int nd = static_cast<int>(walk.size());
        const std::string K = std::to_string(k);
        for (int d = 0; d < nd; ++d) {
            const std::string D = K + "_" + std::to_string(d);
            const std::uint64_t at = dims_offset_[k] + kStridedDimBytes * static_cast<std::uint64_t>(d);
            if (d + 1 < nd) {
                pre_ << "    uint64_t e" << D << " = RefU64(" << args_ << " + " << at << "ul).v;\n"
                     << "    uint64_t dv" << D << " = RefU64(" << args_ << " + " << at + 16 << "ul).v;\n"
                     << "    uint e" << D << "w = uint(e" << D << ");\n";
            }
            pre_ << "    uint64_t t" << D << " = RefU64(" << args_ << " + " << at + 8 << "ul).v;\n"
                 << "    uint t" << D << "w = uint(t" << D << ");\n";
            if (walk[static_cast<std::size_t>(d)] != 'p')
                pre_ << "    uint64_t n" << D << " = RefU64(" << args_ << " + " << at + 24 << "ul).v;\n"
                     << "    int64_t st" << D << " = int64_t(RefU64(" << args_ << " + " << at + 32 << "ul).v);\n"
                     << "    int64_t of" << D << " = int64_t(RefU64(" << args_ << " + " << at + 40 << "ul).v);\n"
                     << "    uint n" << D << "w = uint(n" << D << "), st" << D << "w = uint(st" << D << "), of" << D
                     << "w = uint(of" << D << ");\n";
        }
    }
    /// The coordinates c<g>_d of the element index over input g's collapsed extents, below 2^32
    /// (dividing by multiplication: tdmk_udiv); shared by every input whose walk says "@g".
    void emit_coordinates(std::uint32_t g) {
        if (coordinates_done_[g]) return;
        coordinates_done_[g] = true;
        preload(g);
        const int nd = static_cast<int>(walk_letters(walks_[g]).size());
        const std::string G = std::to_string(g);
        body_ << "        uint";
        for (int d = 0; d < nd; ++d) body_ << (d ? ", " : " ") << "c" << G << "_" << d << " = 0u";
        body_ << ";\n        if (i <= 0xFFFFFFFFul) {\n            uint tdmk_r = uint(i);\n";
        for (int d = 0; d + 1 < nd; ++d) {
            const std::string D = G + "_" + std::to_string(d);
            body_ << "            { uint q = tdmk_udiv(tdmk_r, dv" << D << "); c" << D << " = tdmk_r - q * e" << D << "w; tdmk_r = q; }\n";
        }
        body_ << "            c" << G << "_" << nd - 1 << " = tdmk_r;\n        }\n";
    }
    /// The element offset of strided input k: the linear index split over the collapsed extents
    /// (Region::input_dims), each position mapped where a remap was folded in. Below 2^32 (every
    /// region of fewer elements, and the start of the others) from the coordinates in 32-bit
    /// integers (emit_coordinates, shared by the inputs of the same extents); 64-bit division
    /// above. Without a mapped dimension the offset never exceeds the index (an input's strides
    /// are at most the region's), so 32 bits hold it too; a mapped input sums it in 64 bits unless
    /// its walk says 32 bits hold every position (upper case).
    void emit_offset(std::uint32_t k) {
        const std::string_view walk = walk_letters(walks_[k]);
        const int nd = static_cast<int>(walk.size());
        const bool mapped = walk.find_first_not_of('p') != std::string_view::npos;
        const bool narrow = o_.narrow_maps && walk.find_first_of("NOA") != std::string_view::npos;
        const int shares = walk_shares(walks_[k]);
        const std::uint32_t g = shares >= 0 ? static_cast<std::uint32_t>(shares) : k;
        const std::string K = std::to_string(k), G = std::to_string(g);
        preload(k);
        emit_coordinates(g);
        // Position `kd` of dimension d of input k, mapped (step * k + offset >= 0, mod n): in 32-bit
        // integers (`w32`: modular arithmetic gives the exact value, which fits) or 64-bit ones.
        auto position = [&](int d, const std::string& kd, bool w32) -> std::string {
            const char w = static_cast<char>(std::tolower(static_cast<unsigned char>(walk[static_cast<std::size_t>(d)])));
            const std::string D = K + "_" + std::to_string(d);
            if (w == 'p') return "";
            const std::string v = w32 ? "(" + kd + " * st" + D + "w + of" + D + "w)"
                                      : "uint64_t(int64_t(" + kd + ") * st" + D + " + of" + D + ")";
            const std::string n = w32 ? "n" + D + "w" : "n" + D;
            if (w == 'n') return v;
            if (w == 'o') return "tdmk_wrap(" + v + ", " + n + ")";
            return "(" + v + " % " + n + ")";
        };
        const bool wide = mapped && !narrow;  // the 32-bit branch sums a 64-bit offset
        body_ << "        uint64_t o" << K << ";\n"
              << "        if (i <= 0xFFFFFFFFul) {\n"
              << "            " << (wide ? "uint64_t w" + K + " = 0ul" : "uint w" + K + " = 0u");
        for (int d = 0; d < nd; ++d) {
            const std::string D = K + "_" + std::to_string(d);
            const std::string kd = "c" + G + "_" + std::to_string(d);
            const std::string pos = position(d, kd, !wide);
            body_ << " + " << (wide ? (pos.empty() ? "uint64_t(" + kd + ")" : pos) + " * t" + D
                                   : (pos.empty() ? kd : pos) + " * t" + D + "w");
        }
        body_ << ";\n            o" << K << " = uint64_t(w" << K << ");\n"
              << "        } else {\n"
              << "            uint64_t r" << K << " = i;\n"
              << "            o" << K << " = 0ul;\n";
        for (int d = 0; d < nd; ++d) {
            const std::string D = K + "_" + std::to_string(d);
            const std::string kd = d + 1 < nd ? "(r" + K + " % e" + G + "_" + std::to_string(d) + ")" : "r" + K;
            const std::string pos = position(d, kd, false);
            body_ << "            o" << K << " += " << (pos.empty() ? kd : pos) << " * t" << D << ";"
                  << (d + 1 < nd ? " r" + K + " /= e" + G + "_" + std::to_string(d) + ";" : "") << "\n";
        }
        body_ << "        }\n";
    }
    DType own_type(const Arg& a) const { return a.kind == Arg::Kind::Value ? type_[a.index] : reg(a.dtype); }
    std::string arg(std::size_t i, int k, DType t) {
        const Arg& a = r_.program[i].args[static_cast<std::size_t>(k)];
        switch (a.kind) {
            case Arg::Kind::Scalar: return scalar(plan_.slot[i][static_cast<std::size_t>(k)], t);
            case Arg::Kind::Value: return value(a.index, t);
            case Arg::Kind::Input: return input(a.index, t);
        }
        return "";
    }
    void key_arg(std::size_t i, int k) {
        const Arg& a = r_.program[i].args[static_cast<std::size_t>(k)];
        key_ << (k ? "," : "") << (a.kind == Arg::Kind::Input ? "i" : a.kind == Arg::Kind::Value ? "v" : "s")
             << (a.kind == Arg::Kind::Scalar ? plan_.slot[i][static_cast<std::size_t>(k)] : static_cast<int>(a.index))
             << ':' << dtoken(a.dtype);
    }
    /// The CPU's check_nan: records the instruction when the operand is NaN. Scalar immediates
    /// are checked on the host by pack_arguments; logical operands cannot be NaN.
    void check_nan(std::size_t i, int k, const std::string& x) {
        const Arg& a = r_.program[i].args[static_cast<std::size_t>(k)];
        if (a.kind == Arg::Kind::Scalar || a.dtype == DType::logical) return;
        // In the loop's body, the instruction of the step's own copy.
        const std::string at = seg_ == Seg::body ? std::to_string(i) + "u + (tdmk_t - 1u) * " + std::to_string(rep_->period) + "u"
                                                 : std::to_string(i) + "u";
        body_ << "        if (tdmk_isnan(" << x << ")) err = min(err, " << at << ");\n";
    }

    // ---- instructions --------------------------------------------------------------------
    void define(std::size_t i, DType t, const std::string& expr) {
        type_[i] = t;
        body_ << "        precise " << gtype(t) << ' ' << vname(static_cast<std::uint32_t>(i)) << " = " << expr << ";\n";
    }
    static std::string b01(DType t, const std::string& cond) {
        return "(" + cond + ") ? " + lit(t, "1.0") + " : " + lit(t, "0.0");
    }

    void lower(std::size_t i) {
        const Instr& ins = r_.program[i];
        const OpInfo& info = op_info(ins.op);
        const DType t = reg(ins.compute);
        if (keying_) {
            key_ << (i ? "|" : "") << info.name << ':' << dtoken(ins.dtype) << ':' << dtoken(ins.compute) << '(';
            for (int k = 0; k < info.arity; ++k) key_arg(i, k);
            if (is_square(ins)) key_ << ",sq";
            key_ << ')';
        }
        switch (info.group) {
            case OpGroup::Leaf: {
                if (ins.op != OpKind::Constant)
                    throw DeviceError("vulkan codegen: a region instruction is an input leaf");
                DType ct = ins.dtype == DType::f32 ? DType::f32 : DType::f64;
                return define(i, ct, scalar(plan_.slot[i][0], ct));
            }
            case OpGroup::Generator: {
                const auto& s = plan_.slot[i];
                const std::string gi = "(uint64_t(" + idx_ + ") + gbase)";  // the whole region's element index
                const std::string di = "double" + gi;
                if (ins.op == OpKind::Linspace)  // graph/generators.hpp
                    return define(i, DType::f64, di + " == 0.0LF ? " + sref(s[0]) + " : " + di + " == " + sref(s[3]) + " ? " +
                                                     sref(s[1]) + " : " + sref(s[0]) + " + " + di + " * " + sref(s[2]) +
                                                     " - " + di + " * " + sref(s[4]));
                if (ins.op == OpKind::RandU || ins.op == OpKind::RandN) {
                    // shaders/philox.glsl: the same bits as backends/cpu/philox.hpp.
                    need_rng_ = true;
                    const DType rt = ins.dtype == DType::f32 ? DType::f32 : DType::f64;
                    // the seed's halves are exact 32-bit integers as doubles: 32-bit conversions
                    const std::string seed = "(uint64_t(uint(" + sref(s[0]) + ")) | (uint64_t(uint(" + sref(s[1]) + ")) << 32))";
                    const std::string f = std::string(ins.op == OpKind::RandU ? "tdm_rand_" : "tdm_randn_") +
                                          (rt == DType::f32 ? "f32" : "f64");
                    const std::string stream = "uint64_t(" + sref(s[2]) + ")";
                    // The vector path, when a vector is exactly one Philox block (4 singles or 2
                    // doubles): the block once per step, lane c taking component c -- the same bits
                    // as element by element, a quarter (half) of the generator's work.
                    const std::uint32_t per_block = rt == DType::f32 ? 4u : 2u;
                    if (lane_ >= 0 && vec_ == per_block) {
                        const std::string name = "g" + std::to_string(i) + "_v";  // shared by the lanes
                        vec_rng_.emplace(i, std::string(rt == DType::f32 ? "vec4 " : "dvec2 ") + name + " = " + f +
                                                (rt == DType::f32 ? "x4" : "x2") + "(" + seed + ", " + stream +
                                                ", uint64_t(vi) + gbase / " + std::to_string(per_block) + "ul);");
                        return define(i, rt, name + "[" + std::to_string(lane_) + "]");
                    }
                    return define(i, rt, f + "(" + seed + ", " + stream + ", " + gi + ")");
                }
                // colon: never past b (graph/generators.hpp)
                const std::string v = "(" + sref(s[0]) + " + " + di + " * " + sref(s[1]) + ")";
                return define(i, DType::f64, sref(s[1]) + " > 0.0LF ? min(" + v + ", " + sref(s[2]) + ") : max(" + v + ", " +
                                                 sref(s[2]) + ")");
            }
            case OpGroup::Unary: {
                if (ins.op == OpKind::Cast) {
                    if (ins.dtype != DType::logical) return define(i, reg(ins.dtype), arg(i, 0, reg(ins.dtype)));
                    const DType ot = own_type(ins.args[0]);
                    std::string x = arg(i, 0, ot);
                    check_nan(i, 0, x);
                    return define(i, ot, is_zero(x, ot) + " ? " + lit(ot, "0.0") + " : " + lit(ot, "1.0"));
                }
                std::string a = arg(i, 0, t);
                if (info.rule == TypeRule::Logical) check_nan(i, 0, a);
                return define(i, t, elementwise(ins.op, t, {a}));
            }
            case OpGroup::Binary: {
                std::string a = arg(i, 0, t);
                if (is_square(ins)) return define(i, t, arith(t, "*", "tdmk_mul32", a, a));
                std::string b = arg(i, 1, t);
                if (info.rule == TypeRule::Logical) {
                    check_nan(i, 0, a);
                    check_nan(i, 1, b);
                }
                return define(i, t, elementwise(ins.op, t, {a, b}));
            }
            case OpGroup::Ternary: {
                const DType ct = own_type(ins.args[0]);
                std::string c = arg(i, 0, ct);
                check_nan(i, 0, c);
                std::string a = arg(i, 1, t), b = arg(i, 2, t);
                // c != 0 after the CPU's truth() and conversion is the same test on c itself.
                return define(i, t, is_zero(c, ct) + " ? " + b + " : " + a);
            }
            case OpGroup::Reduce:
            case OpGroup::Contract:
            case OpGroup::View:
            case OpGroup::Scan:
            case OpGroup::User:
                throw DeviceError(std::string("vulkan codegen: ") + std::string(info.name) +
                                  " inside a region's program (fusion bug)");
        }
    }

    /// An elementwise op's expression: its GLSL template (kGlsl) with the operands filled in.
    std::string elementwise(OpKind op, DType t, std::initializer_list<std::string> operands) {
        const GlslLowering& g = kGlsl[static_cast<std::size_t>(op)];
        if (g.text.empty())
            throw DeviceError(std::string("vulkan codegen: no GLSL for op ") + std::string(op_info(op).name));
        if (g.lib == GlslLib::math) (t == DType::f32 ? need_f32_ : need_f64_) = true;
        if (g.lib == GlslLib::modrem) need_modrem_ = need_f64_ = true;
        const std::string_view text = guarded(t) && !g.guarded.empty() ? g.guarded : g.text;
        const std::string* x = operands.begin();
        std::string out;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] != '$') {
                out += text[i];
                continue;
            }
            const char c = i + 1 < text.size() ? text[i + 1] : '\0';
            const bool zero = c == 'z';
            const char k = zero && i + 2 < text.size() ? text[i + 2] : c;
            const std::size_t operand = static_cast<std::size_t>(k - 'a');
            if (c == 'f') {
                if (t == DType::f32) out += 'f';
                i += 1;
            } else if (k >= 'a' && operand < operands.size()) {
                out += zero ? is_zero(x[operand], t) : x[operand];
                i += zero ? 2 : 1;
            } else {
                throw DeviceError("vulkan codegen: bad GLSL template of " + std::string(op_info(op).name) + ": " +
                                  std::string(text));
            }
        }
        if (op_info(op).rule == TypeRule::Predicate || op_info(op).rule == TypeRule::Logical) return b01(t, out);
        return out;
    }

    /// Output j: the value converted to the output's storage type (logical: nonzero).
    void store(std::size_t j) {
        const std::uint32_t v = r_.outputs[j].value;
        const DType to = r_.outputs[j].node->dtype;
        uses_u8_ |= to == DType::logical;
        if (keying_) key_ << (j ? "," : "") << v << ':' << dtoken(to);
        const std::string J = std::to_string(j);
        if (lane_ >= 0) {
            // Component `lane` of the output's vector, stored after the last lane.
            const std::string dst = "out" + J + "_v[" + std::to_string(lane_) + "] = ";
            if (to == DType::logical)
                body_ << "        " << dst << is_zero(vname(v), type_[v]) << " ? 0u : 1u;\n";
            else {
                const std::string x = value(v, to);
                body_ << "        " << dst << x << ";\n";
            }
            return;
        }
        if (to == DType::logical)
            body_ << "        RefU8(out" << J << " + i).v = uint8_t(" << is_zero(vname(v), type_[v]) << " ? 0u : 1u);\n";
        else {
            // The conversion (if any) is written to body_ first, then the store.
            const std::string x = value(v, to);
            if (to == DType::f32) body_ << "        RefF32(out" << J << " + i * 4ul).v = " << x << ";\n";
            else body_ << "        RefF64(out" << J << " + i * 8ul).v = " << x << ";\n";
        }
    }

    /// The whole kernel; `combine`: a reduce region's second pass (no per-element code, no math).
    std::string source(const Kernel& k, std::uint32_t npush, bool combine) {
        std::ostringstream s;
        const bool u8 = uses_u8_ || std::any_of(r_.outputs.begin(), r_.outputs.end(),
                                                [](const Region::Output& o) { return o.node->dtype == DType::logical; });
        s << "#version 450\n"
             "#extension GL_EXT_buffer_reference : require\n"
             "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
             "#extension GL_EXT_control_flow_attributes : require\n"
          << kExactArithmeticMarker << (o_.preserve_f32_denormals ? kPreserveF32DenormalsMarker : "")
          << (o_.preserve_signed_zeros ? kPreserveSignedZerosMarker : "");
        if (u8) s << "#extension GL_EXT_shader_8bit_storage : require\n";
        if (r_.is_reduce() && (contiguous_ || combine) && o_.subgroup_shuffle)
            s << "#extension GL_KHR_shader_subgroup_basic : require\n"
                 "#extension GL_KHR_shader_subgroup_shuffle : require\n";
        s << "layout(local_size_x = " << k.workgroup_size << ") in;\n";
        // What the kernel computes, for a reader of the source (cut short: a long program's list
        // would grow with its steps where the code does not).
        const std::string summary = r_.summary();
        s << "// " << summary.substr(0, 240) << (summary.size() > 240 ? "..." : "") << "\n";
        s << tandem_shader_convert_f32 << '\n';
        // (A reduce region's second pass runs no per-element code, but its tail's.)
        const bool elements = !combine || !tail_fn_.empty();
        if (!combine && need_rng_) s << tandem_shader_philox << '\n';
        if (elements && (need_f64_ || need_f32_)) s << tandem_shader_math_f64 << '\n';
        if (elements && need_f32_) s << tandem_shader_math_f32 << '\n';
        s << "layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefF64 { double v; };\n"
             "layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefF32 { float v; };\n"
             "layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RefU64 { uint64_t v; };\n"
             "layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefErr { uint flag; uint instr; };\n";
        if (u8) s << "layout(buffer_reference, std430, buffer_reference_align = 1) buffer RefU8 { uint8_t v; };\n";
        if (vec_ > 1) {
            // The fast path's vectors: outputs are fresh arrays, never aliasing an input.
            const std::string V = std::to_string(vec_);
            auto decl = [&](DType t, const std::string& storage) {
                const std::string align = std::to_string(dtype_size(t) * vec_);
                s << "layout(buffer_reference, std430, buffer_reference_align = " << align << ") readonly restrict buffer "
                  << vref(t, true) << " { " << storage << " v; };\n"
                  << "layout(buffer_reference, std430, buffer_reference_align = " << align
                  << ") writeonly restrict buffer " << vref(t, false) << " { " << storage << " v; };\n";
            };
            decl(DType::f64, "dvec" + V);
            decl(DType::f32, "vec" + V);
            if (uses_u8_) decl(DType::logical, "u8vec" + V);
        }
        s << "layout(push_constant) uniform Push { uint64_t args; uint64_t count;";
        if (npush) s << " double s[" << npush << "];";
        s << " } pc;\n";
        if (rep_ && slots_per_copy_ > 0 && !combine) {
            // A step's scalar slot: in the push constants or the argument block (arguments.hpp).
            s << "double tdmk_slot(uint s) {\n";
            if (npush) s << "    if (s < " << npush << "u) return pc.s[s];\n";
            s << "    return RefF64(pc.args + " << scalars_at_ << "ul + 8ul * uint64_t(s - " << npush << "u)).v;\n}\n";
        }
        s << kPrelude << (o_.exact_f64_div_sqrt ? kExactDivSqrt : kIeeeDivSqrt);
        if (need_modrem_ && elements) s << kModRem;
        if (r_.is_reduce()) {
            s << tail_fn_;
            write_reduce_helpers(s, r_);
            ReduceKernelParts parts;
            parts.region = &r_;
            parts.workgroup_size = k.workgroup_size;
            parts.contiguous = contiguous_;
            parts.per_invocation = per_invocation_;
            parts.whole_outputs = whole_outputs_;
            parts.subgroups = (contiguous_ || combine) && o_.subgroup_shuffle;
            parts.pre = pre_.str();
            parts.element = general_;
            parts.tail_call = tail_call_;
            seg_ = Seg::suffix;  // the reduced values as the code after the steps names them
            set_lane(-1);
            for (const Reduction& red : r_.reductions) parts.value.push_back(vname(red.value));
            if (combine) write_reduce_combine_main(s, parts);
            else write_reduce_main(s, parts);
        } else if (vec_ > 1) {
            fast_main(s, k);
        } else {
            general_main(s, k);
        }
        return s.str();
    }

    void general_main(std::ostringstream& s, const Kernel& k) {
        const std::uint64_t tile = std::uint64_t{k.workgroup_size} * k.elements_per_thread;
        s << "void main() {\n"
             "    uint64_t count = pc.count;\n"
             "    uint64_t group = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);\n"
             "    uint64_t first = group * "
          << tile << "ul + uint64_t(gl_LocalInvocationID.x);\n"
                     "    if (first >= count) return;\n"
          << pre_.str()
          << "    uint err = 0xFFFFFFFFu;\n"
             "    for (uint k = 0u; k < "
          << k.elements_per_thread << "u; ++k) {\n"
          << "        uint64_t i = first + uint64_t(k * " << k.workgroup_size << "u);\n"
          << "        if (i >= count) break;\n"
          << general_
          << "    }\n"
             "    if (err != 0xFFFFFFFFu) {\n"
             "        atomicOr(RefErr(pc.args).flag, "
          << kErrorNanToLogical
          << "u);\n"
             "        atomicMin(RefErr(pc.args).instr, err);\n"
             "    }\n"
             "}\n";
    }

    /// The contiguous fast path (Kernel::vector_width): 32-bit vector indices, one vector of
    /// every full array per step, the last count % V elements by the invocation at vector count / V.
    void fast_main(std::ostringstream& s, const Kernel& k) {
        const std::string V = std::to_string(vec_), WG = std::to_string(k.workgroup_size);
        const std::uint64_t tile = std::uint64_t{k.workgroup_size} * steps_;  // vectors per workgroup
        s << "void main() {\n"
             "    uint count = uint(pc.count);\n"
             "    uint nvec = count / " << V << "u;\n"
             "    uint64_t first64 = (uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + "
             "uint64_t(gl_WorkGroupID.x)) * " << tile << "ul + uint64_t(gl_LocalInvocationID.x);\n"
             "    if (first64 > uint64_t(nvec)) return;\n"
             "    uint first = uint(first64);\n"
          << pre_.str()
          << "    uint err = 0xFFFFFFFFu;\n"
             "    for (uint k = 0u; k < " << steps_ << "u; ++k) {\n"
             "        uint vi = first + k * " << WG << "u;\n"
             "        if (vi >= nvec) {\n"
             "            if (vi == nvec) {\n"
             "                for (uint t = nvec * " << V << "u; t < count; ++t) {\n"
             "                    uint64_t i = uint64_t(t);\n"
             "                    {\n"
          << general_
          << "                    }\n"
             "                }\n"
             "            }\n"
             "            break;\n"
             "        }\n";
        for (const auto& [in, t] : vec_in_) {
            const std::string base = "in" + std::to_string(in);
            const std::string load = std::string(vref(t, true)) + "(" + vaddr(base, t) + ").v";
            s << "        " << vtype(t, vec_) << ' ' << base << "_v = "
              << (t == DType::logical ? vtype(t, vec_) + "(" + load + ")" : load) << ";\n";
        }
        for (std::size_t j = 0; j < r_.outputs.size(); ++j)
            s << "        " << vtype(r_.outputs[j].node->dtype, vec_) << " out" << j << "_v;\n";
        s << vector_code_;
        for (std::size_t j = 0; j < r_.outputs.size(); ++j) {
            const DType t = r_.outputs[j].node->dtype;
            const std::string base = "out" + std::to_string(j);
            s << "        " << vref(t, false) << "(" << vaddr(base, t) << ").v = "
              << (t == DType::logical ? "u8vec" + V + "(" + base + "_v)" : base + "_v") << ";\n";
        }
        s << "    }\n"
             "    if (err != 0xFFFFFFFFu) {\n"
             "        atomicOr(RefErr(pc.args).flag, " << kErrorNanToLogical << "u);\n"
             "        atomicMin(RefErr(pc.args).instr, err);\n"
             "    }\n"
             "}\n";
    }

    const Region& r_;
    std::span<const InputAccess> access_;
    std::span<const InputWalk> walks_;
    const CodegenOptions& o_;
    ScalarPlan plan_;
    std::ostringstream key_, pre_, body_;
    std::vector<DType> type_;
    std::vector<std::uint64_t> dims_offset_;
    std::map<std::pair<std::string, DType>, std::string> conv_;      // by the converted value's name
    std::map<std::tuple<std::uint32_t, DType, int>, std::string> inputs_;  // by (input, type, lane)
    std::map<std::uint32_t, bool> offsets_done_, coordinates_done_;
    std::set<std::uint32_t> preloaded_;  // inputs whose arguments pre_ loads
    std::set<int> f32_slots_;        // scalar slots pre_ converts to float (guarded single precision)
    std::set<int> f32_loop_slots_;   // the loop's slots its head converts
    std::map<std::pair<std::uint32_t, DType>, std::string> scalar_inputs_;  // loaded once, in pre_
    std::map<std::uint32_t, DType> vec_in_;  // fast path: full inputs read, by their storage type
    std::map<std::size_t, std::string> vec_rng_;  // fast path: a Philox block per step, by instruction
    std::uint32_t vec_ = 1, steps_ = 1;
    int lane_ = -1;
    std::string sfx_, idx_ = "i";  // the lane's name suffix and element index
    bool keying_ = true;
    std::string general_, vector_code_;
    // The run of repeated steps written as a loop (see Seg), its slots, carried positions.
    std::optional<Repeat> rep_;
    Seg seg_ = Seg::prefix;
    std::pair<std::size_t, std::size_t> loop_slots_{0, 0};
    std::uint32_t slots_per_copy_ = 0;
    std::uint64_t scalars_at_ = 0;  // the argument block's first scalar slot
    std::vector<bool> carried_;
    bool loop_failed_ = false;
    bool need_f64_ = false, need_f32_ = false, need_modrem_ = false, uses_u8_ = false;
    bool contiguous_ = false;  // reduce regions: ReducePlan::contiguous
    std::uint32_t per_invocation_ = 1;  // reduce regions: ReducePlan::per_invocation
    bool whole_outputs_ = false;        // reduce regions: ReducePlan::whole_outputs
    std::string tail_fn_, tail_call_;  // reduce regions with a tail: write_tail
    std::string args_ = "pc.args";     // the argument block's address, as the per-element setup reads it
    bool need_rng_ = false;    // a generator of random numbers: paste shaders/philox.glsl
};

}  // namespace

Kernel generate(const Region& region, std::span<const InputAccess> access, std::span<const InputWalk> walks,
                const CodegenOptions& options) {
    if (access.size() != region.inputs.size() || walks.size() < region.inputs.size())
        throw DeviceError("vulkan codegen: one access (and strided dim count) per region input is needed");
    if (options.loops) {
        Writer w(region, access, walks, options, true);
        Kernel k = w.run();
        if (!w.loop_failed()) return k;
    }
    return Writer(region, access, walks, options, false).run();
}

}  // namespace tandem::detail::vk
