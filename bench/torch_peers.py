#!/usr/bin/env python3
"""The PyTorch peers of tandem-gpu-bench, on the GPU machine's python3 (CUDA).

For fp32 and fp64 over 2^log2n elements, with a = linspace(-10, 10, n), b = linspace(3, -7, n)
made on the GPU (as tandem-gpu-bench makes them):

    add      c = a + b                                     3 arrays counted (a, b read, c written)
    chain4   a*b + sin(a)*0.5 + b                          3 arrays
    chain8   exp(-(sin(x)*x)**2) / (1 + abs(x)), x = a     2 arrays
    copy     dst.copy_(a) into a preallocated dst          2 arrays (the device copy bandwidth)

each in PyTorch eager and torch.compile (inductor, dynamic=False). Before anything is timed,
every variant is checked at a small size (65553 elements) against a float64 CPU reference
computed with NumPy from the same inputs (max-norm relative difference: 2e-6 for fp32, 1e-13
for fp64), and torch.compile is checked against eager at the full size. A failed check exits 1.
Timing: --warmup runs, then the median of --reps samples, each sample the wall time of one call
between two torch.cuda.synchronize() (CUDA-event time is reported beside it). Also the latency of
one tiny op (1000 elements) + synchronize, for reference.

Prints one JSON object per line (stdout); --json-out FILE also writes them all as one list.
"""
import argparse
import json
import math
import statistics
import sys
import time

import numpy as np
import torch
import torch._dynamo

RESULTS = []


def emit(obj):
    RESULTS.append(obj)
    print(json.dumps(obj), flush=True)


def add(a, b):
    return a + b


def chain4(a, b):
    return a * b + torch.sin(a) * 0.5 + b


def chain8(a, b):
    return torch.exp(-(torch.sin(a) * a) ** 2) / (1 + torch.abs(a))


EXPRS = [("add", "c = a + b", 3, add, lambda a, b: a + b),
         ("chain4", "a.*b + sin(a)*0.5 + b", 3, chain4, lambda a, b: a * b + np.sin(a) * 0.5 + b),
         ("chain8", "exp(-(sin(x).*x).^2) ./ (1 + abs(x)), x = a", 2, chain8,
          lambda a, b: np.exp(-(np.sin(a) * a) ** 2) / (1 + np.abs(a)))]
LIMIT = {torch.float32: 2e-6, torch.float64: 1e-13}
NAME = {torch.float32: "fp32", torch.float64: "fp64"}


def inputs(n, dtype):
    # made in double and rounded, as Tandem's single(linspace(...)) does
    a = torch.linspace(-10.0, 10.0, n, dtype=torch.float64, device="cuda").to(dtype)
    b = torch.linspace(3.0, -7.0, n, dtype=torch.float64, device="cuda").to(dtype)
    return a, b


def rel_diff(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if np.isnan(got).any():
        return math.inf
    den = float(np.max(np.abs(want)))
    return float(np.max(np.abs(got - want))) / (den if den > 0 else 1.0)


def time_call(f, warmup, reps):
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    wall, ev = [], []
    for _ in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        e0.record()
        out = f()
        e1.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        ev.append(e0.elapsed_time(e1))
        del out
    return wall, ev


def record(system, dtype, name, text, n, counted, wall, ev, extra=None):
    bytes_ = counted * n * (4 if dtype == torch.float32 else 8)
    w, g = statistics.median(wall), statistics.median(ev)
    obj = {"kind": "bandwidth", "system": system, "dtype": NAME[dtype], "expr": name, "text": text, "n": n,
           "bytes": bytes_, "median_wall_ms": w, "min_wall_ms": min(wall), "median_kernel_ms": g,
           "wall_GBps": bytes_ / w / 1e6, "kernel_GBps": bytes_ / g / 1e6, "wall_ms": wall, "kernel_ms": ev}
    if extra:
        obj.update(extra)
    emit(obj)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_peers.py: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch._dynamo.config.automatic_dynamic_shapes = False  # one static kernel per size, as Tandem's
    torch._dynamo.config.cache_size_limit = 64
    n = 1 << args.log2n
    emit({"kind": "context", "torch": torch.__version__, "cuda": torch.version.cuda,
          "device": torch.cuda.get_device_name(0), "n": n, "reps": args.reps, "warmup": args.warmup})
    failed = False
    for dtype in (torch.float32, torch.float64):
        # ---- checks at a small size against NumPy float64 ----
        small = 65536 + 17
        sa, sb = inputs(small, dtype)
        ha, hb = sa.double().cpu().numpy(), sb.double().cpu().numpy()
        compiled = {}
        for name, text, counted, f, ref in EXPRS:
            want = ref(ha, hb)
            variants = [("torch_eager", f)]
            if not args.no_compile:
                try:
                    cf = torch.compile(f, dynamic=False, fullgraph=True)
                    cf(sa, sb)
                    compiled[name] = cf
                    variants.append(("torch_compile", cf))
                except Exception as e:  # noqa: BLE001 - reported, the rest goes on
                    emit({"kind": "error", "system": "torch_compile", "dtype": NAME[dtype], "expr": name,
                          "what": f"{type(e).__name__}: {str(e)[:400]}"})
            for system, g in variants:
                d = rel_diff(g(sa, sb).cpu(), want)
                ok = d <= LIMIT[dtype]
                failed |= not ok
                emit({"kind": "check", "system": system, "dtype": NAME[dtype], "expr": name, "n": small,
                      "max_norm_rel_diff": d, "limit": LIMIT[dtype], "pass": ok})
        del sa, sb
        if failed:
            print("torch_peers.py: a check failed; nothing timed", file=sys.stderr)
            return 1
        # ---- timing at 2^log2n ----
        a, b = inputs(n, dtype)
        torch.cuda.synchronize()
        for name, text, counted, f, ref in EXPRS:
            wall, ev = time_call(lambda: f(a, b), args.warmup, args.reps)
            record("torch_eager", dtype, name, text, n, counted, wall, ev)
            if name in compiled:
                cf = compiled[name]
                try:
                    t0 = time.perf_counter()
                    got = cf(a, b)  # compiles for this size
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t0
                    d = rel_diff(got[:: max(1, n // 4096)].cpu(), f(a, b)[:: max(1, n // 4096)].cpu())
                    del got
                    # inductor may use another evaluation order/fma: allow a few ulp of eager
                    ok = d <= 10 * LIMIT[dtype]
                    emit({"kind": "check", "system": "torch_compile_vs_eager", "dtype": NAME[dtype], "expr": name,
                          "n": n, "max_norm_rel_diff": d, "pass": ok})
                    wall, ev = time_call(lambda: cf(a, b), args.warmup, args.reps)
                    record("torch_compile", dtype, name, text, n, counted, wall, ev, {"compile_s": compile_s})
                except Exception as e:  # noqa: BLE001
                    emit({"kind": "error", "system": "torch_compile", "dtype": NAME[dtype], "expr": name,
                          "what": f"{type(e).__name__}: {str(e)[:400]}"})
        dst = torch.empty_like(a)
        wall, ev = time_call(lambda: dst.copy_(a), args.warmup, args.reps)
        record("torch_copy", dtype, "copy", "dst.copy_(a), preallocated", n, 2, wall, ev)
        del a, b, dst
        torch.cuda.empty_cache()
    # one tiny op + synchronize
    x = torch.linspace(0, 1, 1000, dtype=torch.float64, device="cuda")
    lat = []
    for i in range(110):
        t0 = time.perf_counter()
        y = x * 0.999 + 0.001
        torch.cuda.synchronize()
        if i >= 10:
            lat.append((time.perf_counter() - t0) * 1e6)
    emit({"kind": "latency", "system": "torch_tiny", "what": "x*0.999 + 0.001 (1000 doubles, 2 kernels) + synchronize",
          "median_us": statistics.median(lat), "min_us": min(lat)})
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(RESULTS, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
