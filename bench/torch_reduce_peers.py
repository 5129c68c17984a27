#!/usr/bin/env python3
"""The PyTorch peers of tandem-gpu-bench --only reduce, on the GPU machine's python3 (CUDA).

Tandem's A is a rows x cols column-major fp32 matrix (rows = 2^(log2n/2)); PyTorch's row-major
twin is a (cols, rows) tensor with the same bytes, so MATLAB's dimension 1 (contiguous) is
PyTorch's dim=1 and MATLAB's dimension 2 is dim=0:

    sum_dim1     A.sum(dim=1)          1 array counted (read once)
    sum_dim2     A.sum(dim=0)          1 array
    sum_all      A.sum()               1 array
    sum_ab_dim2  (A * B).sum(dim=0)    2 arrays (eager writes a temporary; compile fuses)
    copy         dst.copy_(A)          2 arrays: the device copy bandwidth (reference)

and, eager only, transpose, randn, permutes of A viewed as (4, cols/4, rows), a gather of n/4
random elements, index_fill_ of them into a copy of A, and nonzero(A > 0.5).

in eager and torch.compile, each checked against float64 sums of the same data, then timed
between two torch.cuda.synchronize() calls (median of --reps after --warmup).
Prints one JSON object per line.
"""
import argparse
import json
import statistics
import time

import torch


def emit(obj):
    print(json.dumps(obj), flush=True)


def time_call(f, warmup, reps):
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    wall = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true")
    o = ap.parse_args()
    n = 1 << o.log2n
    rows = 1 << (o.log2n // 2)
    cols = n // rows
    dev = torch.device("cuda")
    col = torch.sin(torch.arange(rows, dtype=torch.float64, device=dev)) * 0.5
    r = torch.linspace(-1.0, 1.0, cols, dtype=torch.float64, device=dev)
    # (cols, rows) row-major == Tandem's rows x cols column-major
    A = (col[None, :] + r[:, None] * 0.25).to(torch.float32).contiguous()
    B = (col[None, :] * r[:, None] + 1.0).to(torch.float32).contiguous()
    emit({"kind": "context", "torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows,
          "cols": cols})
    exprs = [("sum_dim1", 1, lambda a, b: a.sum(dim=1), lambda a, b: a.double().sum(dim=1)),
             ("sum_dim2", 1, lambda a, b: a.sum(dim=0), lambda a, b: a.double().sum(dim=0)),
             ("sum_all", 1, lambda a, b: a.sum(), lambda a, b: a.double().sum()),
             ("sum_ab_dim2", 2, lambda a, b: (a * b).sum(dim=0), lambda a, b: (a.double() * b.double()).sum(dim=0))]
    for name, arrays, f, ref in exprs:
        want = ref(A, B)
        variants = [("torch_eager", f)]
        if not o.no_compile:
            variants.append(("torch_compile", torch.compile(f, dynamic=False)))
        for system, g in variants:
            got = g(A, B).double()
            rel = ((got - want).abs() / (1 + want.abs())).max().item()
            ok = rel <= 1e-3  # PyTorch accumulates fp32 sums in fp32: 2^28 terms drift ~1e-4
            emit({"kind": "check", "system": system, "expr": name, "max_rel_diff": rel, "pass": ok})
            if not ok:
                raise SystemExit(1)
            ms = time_call(lambda: g(A, B), o.warmup, o.reps)
            counted = arrays * 4.0 * n
            emit({"kind": "reduce", "system": system, "dtype": "fp32", "expr": name, "median_wall_ms": ms,
                  "wall_GBps": counted / ms / 1e6})
    t_ms = time_call(lambda: A.t().contiguous(), o.warmup, o.reps)
    emit({"kind": "reduce", "system": "torch_eager", "dtype": "fp32", "expr": "transpose", "median_wall_ms": t_ms,
          "wall_GBps": 2 * 4.0 * n / t_ms / 1e6})
    g = torch.Generator(device=dev)
    r_ms = time_call(lambda: torch.randn(n, device=dev, dtype=torch.float32, generator=g), o.warmup, o.reps)
    emit({"kind": "reduce", "system": "torch_eager", "dtype": "fp32", "expr": "randn", "median_wall_ms": r_ms,
          "wall_GBps": 4.0 * n / r_ms / 1e6})
    # Rearrangements and indexing (tandem-gpu-bench's rows of the same names; bytes counted alike):
    # Tandem's A3 = reshape(A, rows, cols/4, 4) is the row-major (4, cols/4, rows) view of A.
    A3 = A.view(4, cols // 4, rows)
    for name, f in (("permute_213", lambda: A3.transpose(1, 2).contiguous()),
                    ("permute_132", lambda: A3.transpose(0, 1).contiguous())):
        ms = time_call(f, o.warmup, o.reps)
        emit({"kind": "reduce", "system": "torch_eager", "dtype": "fp32", "expr": name, "median_wall_ms": ms,
              "wall_GBps": 2 * 4.0 * n / ms / 1e6})
    count = n // 4
    idx = torch.randint(0, n, (count,), device=dev, generator=torch.Generator(device=dev).manual_seed(5))
    flat = A.view(-1)
    for name, f, counted in (("gather", lambda: flat[idx], 16.0 * count),
                             ("assign", lambda: flat.clone().index_fill_(0, idx, 0.0), 8.0 * n + 8.0 * count),
                             ("find", lambda: torch.nonzero(flat > 0.5), 5.0 * n)):
        ms = time_call(f, o.warmup, o.reps)
        emit({"kind": "reduce", "system": "torch_eager", "dtype": "fp32", "expr": name, "median_wall_ms": ms,
              "wall_GBps": counted / ms / 1e6})
    dst = torch.empty_like(A)
    ms = time_call(lambda: dst.copy_(A), o.warmup, o.reps)
    emit({"kind": "reduce", "system": "torch_copy", "dtype": "fp32", "expr": "copy", "median_wall_ms": ms,
          "wall_GBps": 2 * 4.0 * n / ms / 1e6})


if __name__ == "__main__":
    main()
