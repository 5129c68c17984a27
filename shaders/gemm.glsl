// gemm.glsl -- tiled, register-blocked GEMM with a fused elementwise epilogue, for f32 and f64:
//   D = act(alpha * op(A) * op(B) + beta * C + bias)      (column-major, D may be C if k <= CHUNK)
// backends/vulkan/gemm.cpp pastes this file after a prologue that sets the configuration:
//   #version 460 and the extensions (buffer_reference, int64, float64, control_flow_attributes)
//   T, VT, VW      element type, the vector of the shared tiles and register fragments (vec4 / dvec2 by
//                  default, or narrower: VW 1 makes VT = T) and that vector's width
//   COMP, SET_COMP component i of a VT (and its assignment; the value itself when VW is 1)
//   BM, BN, BK     the workgroup's tile of D (BM x BN) and the depth of one step over k
//   TM, TN         each invocation's register tile (TM x TN elements of D); multiples of VW
//   TRANS_A/B      0/1: op(A) = A or A^T (the stored layout; nothing is copied), so the loads of a
//                  step follow the stored layout's contiguous dimension (coalesced either way)
//   ACT            0: none, 1: relu as max(x, 0), 2: relu as max(0, x) (MATLAB's max: NaN gives 0)
//   PAD            1: one vector of padding per row of the shared tiles (0: none, for a deeper BK)
//   WARP_M         0: invocation lid is row-thread lid % (BM/TM); else (2, 4, 8 or 16) each 32
//                  invocations form a WARP_M x (32/WARP_M) block of row-threads x column-threads in
//                  which lanes 2i and 2i+1 share a row-thread and lanes i and i^2 a column-thread
//   SYMMETRIC      1: D = A'A or AA' (B is A): workgroup w computes the w-th tile on or above the
//                  diagonal and stores its off-diagonal tiles' elements twice, at (i, j) and (j, i)
//   GEMM_EPILOGUE  the epilogue as straight-line code: store_element(i0 + r, j0 + c, COMP(acc[..][..], ..))
//                  for each element of the register tile, every index a literal (see below)
//   CHUNK          graph/matmul_order.hpp's kMatmulChunk (a multiple of BK)
//   GEMM_FLUSH     the same for flush_element(i0 + r, j0 + c, first, COMP(acc[..][..], ..))
//   FMA_EMULATED   1: the device's fma() may round twice; the multiply-add is emulated exactly
//   SPLIT          1: the split-K variant (workgroup z sums one chunk into its slice; GemmPush::split)
// Experiment switches (tandem-gemm-gpu-bench --mad D:NAME --no-check: wrong sums past one chunk):
//   NO_FLUSH, NO_PARTIAL_READ  drop the chunks' flushes / the epilogue's read of their sum, to
//                  measure what the canonical order costs
// The sums follow graph/matmul_order.hpp's canonical order, the CPU's: each accumulator is a chain
// of fma from +0 over one chunk of k, and at the end of each chunk but the last the chains are
// added to D in order (D holds the chunk sums meanwhile: D may be C only when k <= CHUNK), then
// restarted; the last chunk's chain is added in the epilogue. Positions past k load A as -0 and B
// as +0: their product -0 leaves every chain as it is, a -0 included (+0 would turn it to +0).
// Arrays are reached by GL_EXT_buffer_reference (no descriptor sets); sizes, strides, scalars and
// addresses travel in push constants, so one pipeline serves every size and every alpha/beta.
//
// Shape of the work: workgroup (x, y) computes D's tile rows [x*BM, x*BM+BM), columns [y*BN, ...).
// Its BM/TM x BN/TN invocations each own a TM x TN register tile: invocation (tx, ty) holds rows
// g*(BM/TM)*VW + tx*VW + [0, VW) for g < TM/VW and columns h*(BN/TN)*VW + ty*VW + [0, VW) for
// h < TN/VW, so at each k the invocations of a subgroup read consecutive 16-byte vectors of the
// A tile (no bank conflicts) and a few broadcast vectors of the B tile. Steps of BK along k stage
// op(A)'s BM x BK and op(B)'s BK x BN tiles in shared memory (k-major: As[k][m], Bs[k][n], one
// vector of padding per row against bank conflicts of the transposed stores), double-buffered:
// the next step's global loads are issued into registers before the current step's arithmetic,
// stored to the other buffer after it, and one barrier per step separates the two. Edges (sizes
// that are not multiples of the tile) load zeros and skip the stores; no access leaves the arrays.

#if FMA_EMULATED
// A device whose fma() rounds twice (a CPU implementation: DeviceDescription::fma_fused) gets the
// fused operation emulated exactly, so that it still computes the canonical order's bits.
// Rounding to odd (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008): s moved one unit in the
// last place toward the exact s + e when e != 0 and s's last bit is 0; that value rounded again,
// to a narrower format or added to a larger value, rounds as the exact one would.
double to_odd(double s, double e) {
    if (e == 0.0LF) return s;
    uvec2 w = unpackDouble2x32(s);
    if ((w.x & 1u) != 0u) return s;
    if ((e > 0.0LF) == (s > 0.0LF)) {
        w.x += 1u;  // even: no carry
    } else {
        if (w.x == 0u) w.y -= 1u;
        w.x -= 1u;
    }
    return packDouble2x32(w);
}
// The exact error of s = RN(a + b) (Knuth's TwoSum).
double two_sum_err(double a, double b, double s) {
    precise double bb = s - a;
    precise double e = (a - (s - bb)) + (b - bb);
    return e;
}
// Single: the product is exact in double (48 bits), the sum rounded to odd, then to single.
float fma_exact(float a, float b, float c) {
    precise double p = double(a) * double(b);
    precise double s = p + double(c);
    if (isinf(s) || isnan(s)) return float(s);
    return float(to_odd(s, two_sum_err(p, double(c), s)));
}
// Double: Dekker's exact product p + pl, TwoSum th + tl = c + p, then RN(th + RO(tl + pl)). Where
// Dekker's split could overflow or the low part underflow -- and for zeros, Inf and NaN, whose
// product is exact -- the product and the sum, which is the fused result whenever the product is
// exact (a nonzero product of magnitude below 1e-270 or above 1e299 that is not exact in double
// may differ in the last bit when c does not dominate it: lavapipe's limit, not a GPU's).
double fma_exact(double a, double b, double c) {
    precise double p = a * b;
    // A product that underflows to zero: the exact one is a tiny value of p's sign, so the fused
    // result is c, or a zero of p's sign when c is zero.
    if (p == 0.0LF && a != 0.0LF && b != 0.0LF && !isinf(a) && !isinf(b)) return c == 0.0LF ? p : c;
    const double ap = abs(p);
    if (!(ap > 1e-270LF && ap < 1e299LF) || abs(a) > 1e299LF || abs(b) > 1e299LF || !(abs(c) < 1e300LF)) {
        precise double r = p + c;
        return r;
    }
    const double split = 134217729.0LF;  // 2^27 + 1
    precise double ca = split * a;
    precise double ah = ca - (ca - a);
    precise double al = a - ah;
    precise double cb = split * b;
    precise double bh = cb - (cb - b);
    precise double bl = b - bh;
    precise double pl = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    precise double th = c + p;
    const double tl = two_sum_err(c, p, th);
    precise double v = tl + pl;
    precise double r = th + to_odd(v, two_sum_err(tl, pl, v));
    return r;
}
VT mad_exact(VT a, VT b, VT c) {
    VT r = c;
    [[unroll]] for (uint i = 0u; i < VW; ++i) SET_COMP(r, i, fma_exact(COMP(a, i), COMP(b, i), COMP(c, i)));
    return r;
}
#define MAD(a, b, c) mad_exact(a, b, c)
#endif

// The multiply-add of the inner loop (a prologue may define it otherwise, for experiments).
#ifndef MAD
#define MAD(a, b, c) fma(a, b, c)
#endif

layout(local_size_x = (BM / TM) * (BN / TN)) in;

const uint WG = (BM / TM) * (BN / TN);
const uint THREADS_M = BM / TM, THREADS_N = BN / TN;
const uint TMV = TM / VW, TNV = TN / VW;        // vectors per invocation along m / n
const uint AV = BM / VW + PAD, BV = BN / VW + PAD;  // shared row lengths in vectors (+PAD: padding)
const uint A_LOADS = BM * BK / WG, B_LOADS = BN * BK / WG;
const uint ES = ELEMENT_BYTES;

layout(buffer_reference, std430, buffer_reference_align = ELEMENT_BYTES) readonly buffer GemmIn { T v[]; };
layout(buffer_reference, std430, buffer_reference_align = ELEMENT_BYTES) writeonly buffer GemmOut { T v[]; };
layout(buffer_reference, std430, buffer_reference_align = ELEMENT_BYTES) buffer GemmPartial { T v[]; };

layout(push_constant) uniform GemmPush {
    uint64_t a, b, c, d, bias;  // device addresses; c is read only when beta != 0, bias only when nonzero
    double alpha, beta;
    uint m, n, k;
    uint lda, ldb, ldc, ldd;
    uint bias_si, bias_sj;      // bias(i, j) = bias[i * bias_si + j * bias_sj]: (1, 0) per row, (0, 1) per column
    uint tile_m0, tile_n0;      // first tile of this dispatch (a grid wider than 65535 groups is split)
    uint split;                 // 0; or split-K: workgroup z computes chunk split - 1 + z of k alone into
                                // slice z (m x n, ld m) of d (Gemm::record_split)
} pc;

// This workgroup's k, D and D's leading dimension (the whole product's, or one chunk's and its slice).
uint k_len;
uint64_t d_addr;
uint d_ld;

shared VT As[2][BK][AV];
shared VT Bs[2][BK][BV];

void store_shared_a(uint buf, uint kk, uint i, T v) { SET_COMP(As[buf][kk][i / VW], i % VW, v); }
void store_shared_b(uint buf, uint kk, uint j, T v) { SET_COMP(Bs[buf][kk][j / VW], j % VW, v); }

// The epilogue of one element: D(i, j) = act(alpha * x (+ beta * C(i, j)) (+ bias)); nothing outside D.
// 64-bit column addresses: an index into v[] is 32-bit.
void store_one(uint i, uint j, T x) {
    if (i >= pc.m || j >= pc.n) return;
    // Each step rounded on its own (precise: no fma), as the graph's chain it replaces computes it.
    precise T v = T(pc.alpha) * x;
    if (pc.beta != 0.0LF) {
        precise T cb = T(pc.beta) * GemmIn(pc.c + uint64_t(j) * pc.ldc * ES).v[i];
        v = v + cb;
    }
    if (pc.bias != 0ul) v = v + GemmIn(pc.bias).v[i * pc.bias_si + j * pc.bias_sj];
#if ACT == 1
    v = v > T(0) ? v : T(0);  // MATLAB max(v, 0): NaN gives 0, -0 gives 0
#elif ACT == 2
    v = v != v ? T(0) : (T(0) > v ? T(0) : v);  // MATLAB max(0, v): NaN gives 0, -0 stays -0
#endif
    GemmOut(d_addr + uint64_t(j) * d_ld * ES).v[i] = v;
}

#if SYMMETRIC
bool mirror_tile = false;  // an off-diagonal tile of a symmetric D: stored at (i, j) and at (j, i)
#endif
// The sum of the chunks before the last (kept in D by flush_element) plus the last chunk's chain.
void store_element(uint i, uint j, T x) {
    if (i >= pc.m || j >= pc.n) return;
#if NO_PARTIAL_READ
    if (false) {
#else
    if (k_len > CHUNK) {
#endif
        precise T s = GemmPartial(d_addr + uint64_t(j) * d_ld * ES).v[i] + x;
        x = s;
    }
    store_one(i, j, x);
#if SYMMETRIC
    if (mirror_tile) store_one(j, i, x);
#endif
}

// The end of a chunk that is not the last: D(i, j) = the first chunk's chain, or D(i, j) + this one's.
void flush_element(uint i, uint j, bool first, T x) {
    if (i >= pc.m || j >= pc.n) return;
    GemmPartial p = GemmPartial(d_addr + uint64_t(j) * d_ld * ES);
    if (first) {
        p.v[i] = x;
    } else {
        precise T s = p.v[i] + x;
        p.v[i] = s;
    }
}

void main() {
    const uint lid = gl_LocalInvocationID.x;
#if WARP_M == 0
    const uint tx = lid % THREADS_M, ty = lid / THREADS_M;
#else
    // A warp of NVIDIA's 32 covers WARP_M x (32 / WARP_M) row x column threads. Lane bit 0 selects
    // the column-thread and bit 1 the row-thread, so every A fragment load has equal addresses in
    // lanes 2i and 2i+1 and every B fragment load in lanes i and i^2 (pairs that NVIDIA's shared
    // memory may return together). Measured on the H100: no faster than WARP_M 0 (within 2%;
    // shared-memory loads are not what bounds this kernel there), kept for other devices' sweeps.
    const uint WARP_N = 32u / uint(WARP_M), WARPS_M = THREADS_M / uint(WARP_M);
    const uint lane = lid % 32u, warp = lid / 32u;
    const uint tx = (warp % WARPS_M) * uint(WARP_M) + (lane >> 1) % uint(WARP_M);
    const uint ty = (warp / WARPS_M) * WARP_N + ((lane & 1u) | (((lane >> 1) / uint(WARP_M)) << 1));
#endif
#if SYMMETRIC
    // Workgroup w of the upper triangle's list is tile (ti, tj), ti <= tj, w = tj (tj + 1) / 2 + ti
    // (the float square root's guess corrected in integers).
    const uint w = pc.tile_m0 + gl_WorkGroupID.x;
    uint tj = uint((sqrt(8.0 * float(w) + 1.0) - 1.0) * 0.5);
    while (tj * (tj + 1u) / 2u > w) --tj;
    while ((tj + 1u) * (tj + 2u) / 2u <= w) ++tj;
    const uint ti = w - tj * (tj + 1u) / 2u;
    const uint m0 = ti * BM, n0 = tj * BN;
    // Split-K slices keep the upper tiles only (the sum reads a lower element at its mirror).
    mirror_tile = SPLIT == 0 && ti != tj;
#else
    const uint m0 = (pc.tile_m0 + gl_WorkGroupID.x) * BM;
    const uint n0 = (pc.tile_n0 + gl_WorkGroupID.y) * BN;
#endif
#if SPLIT
    // Split-K (a kernel of its own: in the unsplit one k0 = 0 is a constant, 4% faster in f64 on
    // the H100): this workgroup's chunk into its slice.
    const uint k0 = (pc.split - 1u + gl_WorkGroupID.z) * CHUNK;
    k_len = min(CHUNK, pc.k - k0);
    d_addr = pc.d + uint64_t(gl_WorkGroupID.z) * pc.m * pc.n * ES;
    d_ld = pc.m;
#else
    const uint k0 = 0u;
    k_len = pc.k;
    d_addr = pc.d;
    d_ld = pc.ldd;
#endif
    const uint M = pc.m, N = pc.n, K = k_len;

    // Where each invocation's loads land in the tiles (the same at every step), and the 32-bit
    // element offset of each from the step's tile origin in the stored array.
    // A: stored m x k (TRANS_A 0: contiguous along m) or k x m (TRANS_A 1: contiguous along k).
    uint a_i[A_LOADS], a_k[A_LOADS], a_off[A_LOADS];
    uint b_j[B_LOADS], b_k[B_LOADS], b_off[B_LOADS];
    [[unroll]] for (uint r = 0; r < A_LOADS; ++r) {
        const uint e = lid + r * WG;
#if TRANS_A
        a_k[r] = e % BK; a_i[r] = e / BK; a_off[r] = a_k[r] + a_i[r] * pc.lda;
#else
        a_i[r] = e % BM; a_k[r] = e / BM; a_off[r] = a_i[r] + a_k[r] * pc.lda;
#endif
    }
    [[unroll]] for (uint r = 0; r < B_LOADS; ++r) {
        const uint e = lid + r * WG;
#if TRANS_B
        b_j[r] = e % BN; b_k[r] = e / BN; b_off[r] = b_j[r] + b_k[r] * pc.ldb;
#else
        b_k[r] = e % BK; b_j[r] = e / BK; b_off[r] = b_k[r] + b_j[r] * pc.ldb;
#endif
    }
    // Tile origins (64-bit addresses) at k0, and their advance per step.
#if TRANS_A
    uint64_t a_ptr = pc.a + (uint64_t(m0) * pc.lda + k0) * ES;
    const uint64_t a_step = uint64_t(BK) * ES;
#else
    uint64_t a_ptr = pc.a + (uint64_t(m0) + uint64_t(k0) * pc.lda) * ES;
    const uint64_t a_step = uint64_t(BK) * pc.lda * ES;
#endif
#if TRANS_B
    uint64_t b_ptr = pc.b + (uint64_t(n0) + uint64_t(k0) * pc.ldb) * ES;
    const uint64_t b_step = uint64_t(BK) * pc.ldb * ES;
#else
    uint64_t b_ptr = pc.b + (uint64_t(n0) * pc.ldb + k0) * ES;
    const uint64_t b_step = uint64_t(BK) * ES;
#endif

    // precise: GLSL's fma() is one fused operation only in a precise computation (else a driver may
    // split it into a multiply and an add, as lavapipe does); the canonical order is fused.
    precise VT acc[TN][TMV];
    [[unroll]] for (uint j = 0; j < TN; ++j)
        [[unroll]] for (uint g = 0; g < TMV; ++g) acc[j][g] = VT(0);

    T ra[A_LOADS], rb[B_LOADS];
    const uint steps = (K + BK - 1) / BK;

    // Step 0: global -> registers -> shared buffer 0. Padding: A -0, B +0 (see the top).
    [[unroll]] for (uint r = 0; r < A_LOADS; ++r)
        ra[r] = (m0 + a_i[r] < M && a_k[r] < K) ? GemmIn(a_ptr).v[a_off[r]] : -T(0);
    [[unroll]] for (uint r = 0; r < B_LOADS; ++r)
        rb[r] = (n0 + b_j[r] < N && b_k[r] < K) ? GemmIn(b_ptr).v[b_off[r]] : T(0);
    [[unroll]] for (uint r = 0; r < A_LOADS; ++r) store_shared_a(0, a_k[r], a_i[r], ra[r]);
    [[unroll]] for (uint r = 0; r < B_LOADS; ++r) store_shared_b(0, b_k[r], b_j[r], rb[r]);
    barrier();

    for (uint s = 0; s < steps; ++s) {
        const uint buf = s & 1u;
        const bool more = s + 1 < steps;
        if (more) {
            // The next step's loads, in flight during this step's arithmetic.
            a_ptr += a_step;
            b_ptr += b_step;
            const uint k1 = (s + 1) * BK;
            [[unroll]] for (uint r = 0; r < A_LOADS; ++r)
                ra[r] = (m0 + a_i[r] < M && k1 + a_k[r] < K) ? GemmIn(a_ptr).v[a_off[r]] : -T(0);
            [[unroll]] for (uint r = 0; r < B_LOADS; ++r)
                rb[r] = (n0 + b_j[r] < N && k1 + b_k[r] < K) ? GemmIn(b_ptr).v[b_off[r]] : T(0);
        }
        [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
            VT af[TMV], bf[TNV];
            [[unroll]] for (uint g = 0; g < TMV; ++g) af[g] = As[buf][kk][g * THREADS_M + tx];
            [[unroll]] for (uint h = 0; h < TNV; ++h) bf[h] = Bs[buf][kk][h * THREADS_N + ty];
            [[unroll]] for (uint h = 0; h < TNV; ++h)
                [[unroll]] for (uint q = 0; q < VW; ++q)
                    [[unroll]] for (uint g = 0; g < TMV; ++g)
                        acc[h * VW + q][g] = MAD(af[g], VT(COMP(bf[h], q)), acc[h * VW + q][g]);
        }
#if NO_FLUSH
        if (false) {
#else
        if (more && (s + 1u) % (CHUNK / BK) == 0u) {
#endif
            // The end of a chunk (graph/matmul_order.hpp): its chains into D, then from +0 again.
            // (Measured on the H100, both slower: the chunks as an outer loop around a plain loop
            // over their steps, 4-7%; the sums in a scratch of TM x TN per invocation, stored as
            // vectors without bounds checks, f32 10% -- NVIDIA's compiler schedules this form best.)
            const uint i0 = m0 + tx * VW, j0 = n0 + ty * VW;
            const bool first = s + 1u == CHUNK / BK;
            GEMM_FLUSH
            [[unroll]] for (uint j = 0; j < TN; ++j)
                [[unroll]] for (uint g = 0; g < TMV; ++g) acc[j][g] = VT(0);
        }
        if (more) {
            [[unroll]] for (uint r = 0; r < A_LOADS; ++r) store_shared_a(buf ^ 1u, a_k[r], a_i[r], ra[r]);
            [[unroll]] for (uint r = 0; r < B_LOADS; ++r) store_shared_b(buf ^ 1u, b_k[r], b_j[r], rb[r]);
        }
        barrier();
    }

    // Epilogue: each element of the register tile through store_element. GEMM_EPILOGUE (made by
    // gemm.cpp) names every accumulator with literal indices. Written as [[unroll]] loops over acc
    // (with their bounds checks), it made NVIDIA's compiler keep the whole f64 acc array in local
    // memory (its pipeline statistics: exactly acc's 512 bytes for an 8x8 tile; none for f32), so
    // every multiply-add of the main loop went through local memory: 1.0 TFLOP/s instead of 16.
    const uint i0 = m0 + tx * VW, j0 = n0 + ty * VW;
    GEMM_EPILOGUE
}
