// gemm_coopmat.glsl -- single-precision GEMM on tensor cores through GL_NV_cooperative_matrix, with
// the operands rounded to half precision (MatmulPrecision::f16) and gemm.glsl's fused epilogue:
//   D = act(alpha * f16(op(A)) * f16(op(B)) + beta * C + bias)   (column-major; f16() rounds each
//                                                                 element, sums in f32)
// backends/vulkan/gemm_coopmat.cpp pastes this file after a prologue that sets the configuration:
//   FM, FN, FK          the fragment shape (a listed f16 x f16 + f32 -> f32 shape of the device)
//   BM, BN, BK          the workgroup's tile of D (BM x BN) and the depth of one step over k
//   WARPS_M, WARPS_N    subgroups (32 invocations) along m and n; each owns a (BM / WARPS_M) x
//                       (BN / WARPS_N) block of D: CM x CN fragments of FM x FN accumulators
//   GROUP_M             tiles are visited in groups of GROUP_M tile rows (L2 reuse of B's panels)
//   STAGES              1: one shared buffer of the tiles (two barriers per step), 2: two (one)
//   TRANS_A, TRANS_B    0/1: op(X) = X or X^T, read in place through the stored layout
//   VEC_LOADS           1: interior loads are 16-byte vec4 loads (addresses 16-byte aligned and
//                       leading dimensions multiples of 4, checked by the host), 0: scalar loads
//   EXACT_CONVERT       1: f32 -> f16 by integer arithmetic (round to nearest even, the bits of
//                       round_to_f16 in backends/cpu/gemm.cpp), 0: the GPU's conversion instruction
//   ACT                 0: none, 1: relu as max(x, 0), 2: relu as max(0, x) (gemm.glsl's epilogue)
//   INPUT_F16           1: A and B are already rounded, packed halves (pack_f16_kernel: the same
//                       bits), loaded 8 at a time (VEC_LOADS: leading dimensions multiples of 8)
//                       and stored to shared memory as they are; 0: f32, converted while staging
// Arrays are reached by GL_EXT_buffer_reference; sizes, addresses and alpha travel in push constants.
//
// Shape of the work: each step of BK along k, the workgroup loads op(A)'s BM x BK and op(B)'s BK x BN
// tiles from global memory (coalesced along the stored contiguous dimension, 8 consecutive elements
// per invocation and group; f32 converted to f16, or halves already rounded) and stores them to
// shared memory in the stored layout (rows of the contiguous dimension, 8 halves of padding per row
// against bank conflicts); every subgroup then loads its fragments from shared memory (coopMatLoadNV,
// row- or column-major as the layout is) and multiplies them into its accumulators
// (coopMatMulAddNV). The next step's global loads are issued before this step's arithmetic, into
// registers (STAGES: one or two shared buffers). Edges (sizes that are not multiples of the
// tile, any m, n, k) load zeros; no access leaves the arrays. The epilogue stores interior tiles
// straight from the accumulators (coopMatStoreNV, when D's leading dimension is a multiple of 4)
// and edge tiles through a per-subgroup shared scratch fragment, element by element.

#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require

const uint WARPS = WARPS_M * WARPS_N;
const uint WG = 32 * WARPS;
layout(local_size_x = WG) in;

const uint WM = BM / WARPS_M, WN = BN / WARPS_N;  // a subgroup's block of D
const uint CM = WM / FM, CN = WN / FN;            // its fragments along m and n
const uint PAD = 8;                               // halves of padding per shared row

// The operand tiles in shared memory, as stored: A_ROWS rows of A_CL contiguous halves.
#if TRANS_A
const uint A_CL = BK, A_ROWS = BM;  // A stored k x m: contiguous along k
#else
const uint A_CL = BM, A_ROWS = BK;  // A stored m x k: contiguous along m
#endif
#if TRANS_B
const uint B_CL = BN, B_ROWS = BK;  // B stored n x k: contiguous along n
#else
const uint B_CL = BK, B_ROWS = BN;  // B stored k x n: contiguous along k
#endif
const uint A_LD = A_CL + PAD, B_LD = B_CL + PAD;                      // shared row lengths in halves
const uint A_VECS = A_ROWS * A_LD / 8, B_VECS = B_ROWS * B_LD / 8;    // in uvec4 (8 halves)
const uint A_PER = A_ROWS * A_CL / 8 / WG, B_PER = B_ROWS * B_CL / 8 / WG;  // groups of 8 per invocation
const uint SCRATCH_LD = FM + 4;                                       // floats per scratch column

shared uvec4 smem[STAGES * (A_VECS + B_VECS)];  // A's tile, then B's (twice with STAGES 2)
shared float scratch[WARPS * FN * SCRATCH_LD];

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer F32x4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer Out { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Out16 { float v[]; };

layout(push_constant) uniform Push {
    uint64_t a, b, d;
    uint64_t c, bias;       // read only when beta != 0 / bias != 0
    uint m, n, k;
    uint lda, ldb, ldd, ldc;
    uint tiles_m, tiles_n;  // tiles of D along m and n
    uint flags;             // 1: direct fragment stores (D aligned, no epilogue beyond alpha)
    float alpha, beta;
    uint bias_si, bias_sj;  // bias(i, j) = bias[i * bias_si + j * bias_sj]
} pc;

// The epilogue of one element (gemm.glsl's store_element): each step rounded on its own.
void store_element(uint i, uint j, float x) {
    precise float v = pc.alpha * x;
    if (pc.beta != 0.0) {
        precise float cb = pc.beta * F32(pc.c + (uint64_t(j) * pc.ldc + i) * 4ul).v[0];
        v = v + cb;
    }
    if (pc.bias != 0ul) v = v + F32(pc.bias).v[i * pc.bias_si + j * pc.bias_sj];
#if ACT == 1
    v = v > 0.0 ? v : 0.0;  // MATLAB max(v, 0): NaN gives 0, -0 gives 0
#elif ACT == 2
    v = v != v ? 0.0 : (0.0 > v ? 0.0 : v);  // MATLAB max(0, v): NaN gives 0, -0 stays -0
#endif
    Out(pc.d + (uint64_t(j) * pc.ldd + i) * 4ul).v[0] = v;
}

#if EXACT_CONVERT
// The binary16 bits of x, rounded to nearest even (what round_to_f16 computes, as bits).
uint half_bits(float x) {
    const uint u = floatBitsToUint(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;                                         // NaN
    if (a >= 0x477ff000u) return sign | 0x7c00u;                                        // Inf
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);  // normal
    const uint e = a >> 23;
    if (e < 101u) return sign;
    const uint mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;  // subnormal: units of 2^-24
    uint q = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u) != 0u)) ++q;
    return sign | q;
}
uint pack2(float x, float y) { return half_bits(x) | (half_bits(y) << 16); }
#else
uint pack2(float x, float y) { return packFloat2x16(f16vec2(x, y)); }
#endif
uvec4 pack8(vec4 lo, vec4 hi) { return uvec4(pack2(lo.x, lo.y), pack2(lo.z, lo.w), pack2(hi.x, hi.y), pack2(hi.z, hi.w)); }

#if INPUT_F16
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer U32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer U32x4 { uvec4 v[]; };

// The half at element e of a packed f16 array (in the low 16 bits).
uint half_at(uint64_t base, uint64_t e) {
    const uint word = U32(base + (e & ~1ul) * 2ul).v[0];
    return (e & 1ul) != 0ul ? word >> 16 : word & 0xffffu;
}

// Group of 8 halves along the stored contiguous dimension starting at (c, r) of a packed f16 array
// (element (c, r) at base + (c + r * ld) * 2), zeros outside [0, c_lim) x [0, r_lim).
uvec4 load_group16(uint64_t base, uint ld, uint c, uint r, uint c_lim, uint r_lim) {
    const uint64_t e = uint64_t(r) * ld + c;
#if VEC_LOADS
    if (r < r_lim && c + 8u <= c_lim) return U32x4(base + e * 2ul).v[0];
#endif
    uint w[4];
    [[unroll]] for (uint q = 0; q < 4u; ++q) {
        const uint h0 = (r < r_lim && c + 2u * q < c_lim) ? half_at(base, e + 2u * q) : 0u;
        const uint h1 = (r < r_lim && c + 2u * q + 1u < c_lim) ? half_at(base, e + 2u * q + 1u) : 0u;
        w[q] = h0 | (h1 << 16);
    }
    return uvec4(w[0], w[1], w[2], w[3]);
}
#endif

// Group of 8 elements along the stored contiguous dimension starting at (c, r) of a stored array
// (element (c, r) at base + (c + r * ld) * 4), zeros outside [0, c_lim) x [0, r_lim).
void load_group(uint64_t base, uint ld, uint c, uint r, uint c_lim, uint r_lim, out vec4 lo, out vec4 hi) {
    const uint64_t p = base + (uint64_t(r) * ld + c) * 4ul;
#if VEC_LOADS
    if (r < r_lim && c + 8u <= c_lim) {
        lo = F32x4(p).v[0];
        hi = F32x4(p).v[1];
        return;
    }
#endif
    float e[8];
    [[unroll]] for (uint q = 0; q < 8u; ++q) e[q] = (r < r_lim && c + q < c_lim) ? F32(p).v[q] : 0.0;
    lo = vec4(e[0], e[1], e[2], e[3]);
    hi = vec4(e[4], e[5], e[6], e[7]);
}

fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> acc[CM][CN];

// This invocation's groups of the tiles: group g = lid + q * WG is row g / (CL / 8) of the stored
// tile, column (g % (CL / 8)) * 8; held in registers between their global load and shared store.
const uint A_GPR = A_CL / 8, B_GPR = B_CL / 8;  // groups per row
#if INPUT_F16
uvec4 ra[A_PER], rb[B_PER];  // 8 halves each
#define LOAD_A(q, c, r, c_lim, r_lim) ra[q] = load_group16(pc.a, pc.lda, c, r, c_lim, r_lim)
#define LOAD_B(q, c, r, c_lim, r_lim) rb[q] = load_group16(pc.b, pc.ldb, c, r, c_lim, r_lim)
#define PACKED_A(q) ra[q]
#define PACKED_B(q) rb[q]
#else
vec4 ra_lo[A_PER], ra_hi[A_PER], rb_lo[B_PER], rb_hi[B_PER];  // 8 floats each
#define LOAD_A(q, c, r, c_lim, r_lim) load_group(pc.a, pc.lda, c, r, c_lim, r_lim, ra_lo[q], ra_hi[q])
#define LOAD_B(q, c, r, c_lim, r_lim) load_group(pc.b, pc.ldb, c, r, c_lim, r_lim, rb_lo[q], rb_hi[q])
#define PACKED_A(q) pack8(ra_lo[q], ra_hi[q])
#define PACKED_B(q) pack8(rb_lo[q], rb_hi[q])
#endif

// Global loads of the step at depth k0 into registers.
void load_tiles(uint k0, uint m0, uint n0) {
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint q = 0; q < A_PER; ++q) {
        const uint g = lid + q * WG, row = g / A_GPR, col = (g % A_GPR) * 8u;
#if TRANS_A
        LOAD_A(q, k0 + col, m0 + row, pc.k, pc.m);
#else
        LOAD_A(q, m0 + col, k0 + row, pc.m, pc.k);
#endif
    }
    [[unroll]] for (uint q = 0; q < B_PER; ++q) {
        const uint g = lid + q * WG, row = g / B_GPR, col = (g % B_GPR) * 8u;
#if TRANS_B
        LOAD_B(q, n0 + col, k0 + row, pc.n, pc.k);
#else
        LOAD_B(q, k0 + col, n0 + row, pc.k, pc.n);
#endif
    }
}

// The registers (as halves) to the shared tiles at `base` (in uvec4).
void store_tiles(uint base) {
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint q = 0; q < A_PER; ++q) {
        const uint g = lid + q * WG, row = g / A_GPR, col = (g % A_GPR) * 8u;
        smem[base + (row * A_LD + col) / 8u] = PACKED_A(q);
    }
    [[unroll]] for (uint q = 0; q < B_PER; ++q) {
        const uint g = lid + q * WG, row = g / B_GPR, col = (g % B_GPR) * 8u;
        smem[base + A_VECS + (row * B_LD + col) / 8u] = PACKED_B(q);
    }
}

// acc += this subgroup's fragments of the shared tiles at `base`.
void multiply(uint base, uint wm, uint wn) {
    [[unroll]] for (uint kk = 0; kk < BK; kk += FK) {
        fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fa[CM];
        [[unroll]] for (uint i = 0; i < CM; ++i) {
            const uint si = wm * WM + i * FM;
#if TRANS_A
            coopMatLoadNV(fa[i], smem, base + (si * A_LD + kk) / 8u, A_LD / 8u, false);  // (i, k) at i * A_LD + k
#else
            coopMatLoadNV(fa[i], smem, base + (kk * A_LD + si) / 8u, A_LD / 8u, true);   // (i, k) at k * A_LD + i
#endif
        }
        [[unroll]] for (uint j = 0; j < CN; ++j) {
            fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fb;
            const uint sj = wn * WN + j * FN;
#if TRANS_B
            coopMatLoadNV(fb, smem, base + A_VECS + (kk * B_LD + sj) / 8u, B_LD / 8u, false);  // (k, j) at k * B_LD + j
#else
            coopMatLoadNV(fb, smem, base + A_VECS + (sj * B_LD + kk) / 8u, B_LD / 8u, true);   // (k, j) at j * B_LD + k
#endif
            [[unroll]] for (uint i = 0; i < CM; ++i) acc[i][j] = coopMatMulAddNV(fa[i], fb, acc[i][j]);
        }
    }
}

void main() {
    // Which tile of D: tiles in groups of GROUP_M tile rows, column by column within a group.
    const uint pid = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (pid >= pc.tiles_m * pc.tiles_n) return;  // the grid's last row may be partial
    const uint per_group = GROUP_M * pc.tiles_n, first = (pid / per_group) * GROUP_M;
    const uint rows = min(pc.tiles_m - first, GROUP_M), in_group = pid % per_group;
    const uint m0 = (first + in_group % rows) * BM, n0 = (in_group / rows) * BN;
    const uint M = pc.m, N = pc.n, K = pc.k;
    const uint warp = gl_SubgroupID, wm = warp % WARPS_M, wn = warp / WARPS_M;

    [[unroll]] for (uint i = 0; i < CM; ++i)
        [[unroll]] for (uint j = 0; j < CN; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);

    // Step 0 to shared memory; then per step: the next step's global loads are issued, this
    // step's fragments multiplied, and (STAGES 2) the loaded tiles stored to the other buffer, one
    // barrier per step; (STAGES 1) stored after a barrier into the one buffer, two barriers per step.
    load_tiles(0u, m0, n0);
#if STAGES == 2
    store_tiles(0u);
    barrier();
    uint cur = 0u;
    for (uint k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tiles(k0 + BK, m0, n0);
        multiply(cur, wm, wn);
        cur ^= A_VECS + B_VECS;
        if (more) store_tiles(cur);
        barrier();
    }
#else
    for (uint k0 = 0; k0 < K; k0 += BK) {
        barrier();  // every subgroup is done reading the previous step's tiles
        store_tiles(0u);
        barrier();
        if (k0 + BK < K) load_tiles(k0 + BK, m0, n0);  // in flight during this step's arithmetic
        multiply(0u, wm, wn);
    }
#endif

    // Epilogue. The branch is uniform in the workgroup (one tile, push constants).
    const float alpha = pc.alpha;
    if ((pc.flags & 1u) != 0u && m0 + BM <= M && n0 + BN <= N) {
        [[unroll]] for (uint i = 0; i < CM; ++i)
            [[unroll]] for (uint j = 0; j < CN; ++j) {
                const uint gi = m0 + wm * WM + i * FM, gj = n0 + wn * WN + j * FN;
                if (alpha != 1.0) acc[i][j] = acc[i][j] * alpha;
                coopMatStoreNV(acc[i][j], Out16(pc.d + (uint64_t(gj) * pc.ldd + gi) * 4ul).v, 0, pc.ldd, true);
            }
        return;
    }
    const uint lane = gl_SubgroupInvocationID, base = warp * FN * SCRATCH_LD;
    [[unroll]] for (uint i = 0; i < CM; ++i)
        [[unroll]] for (uint j = 0; j < CN; ++j) {
            const uint gi = m0 + wm * WM + i * FM, gj = n0 + wn * WN + j * FN;
            if (gi >= M || gj >= N) continue;  // uniform in the subgroup
            coopMatStoreNV(acc[i][j], scratch, base, SCRATCH_LD, true);  // (r, c) at base + c * SCRATCH_LD + r
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < FM * FN; e += 32u) {
                const uint r = e % FM, c = e / FM;
                if (gi + r < M && gj + c < N) store_element(gi + r, gj + c, scratch[base + c * SCRATCH_LD + r]);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
}
