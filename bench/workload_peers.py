#!/usr/bin/env python3
"""The Python peers of tandem-workloads: the benchmark issue's five whole programs, W6 (a heat
stencil) and W7 (softmax of each row) in NumPy (CPU), PyTorch eager and torch.compile (CUDA). One process runs one program at
one size:

    workload_peers.py --system numpy|torch_eager|torch_compile --workload 1..7 --size S [--warmup 1] [--reps 5]
                      [--device cuda|cpu]

--size is n (W1, W4, W6), B (W2), M (W3) or NxD (W5, W7). The programs, the inputs (the exact formula
u(k, p) = t - floor(t), t = (k * p) * 2^-24, the same bits in every system) and the output (one
JSON object per line: "context", then "result" or "error") are those of bench/workloads.cpp; read
its header. A system that cannot run here prints a "skip" line with the reason and exits 3
(PyTorch not importable, or no CUDA device).

Timing: --warmup untimed runs (torch.compile compiles in the first), then --reps timed runs, each
the wall time of one call of the program, ending with torch.cuda.synchronize() for PyTorch (the
scalar result is then read outside the timed part). torch.compile compiles each program whole with
the default mode; for W3 the step (randn included) is the compiled function, called 256 times
(compiling the whole 256-step loop as one function took over 120 s on the H100 with PyTorch 2.11;
--w3-compile whole asks for it; a failure to compile the whole loop falls back to the step, and
the result says which in "compile_scope").
"""
import argparse
import json
import math
import platform
import sys
import time

SCALE = 2.0 ** -24
P1, P2, P3, P4, P5, P6 = 6700417.0, 5754853.0, 7368787.0, 4875851.0, 8086861.0, 3276509.0
HEIGHT, WIDTH = 2160, 3840
RATE, VOL = 0.05, 0.2
STENCIL_STEPS = 100  # W6's heat steps (fixed: --steps is W3's)
CHUNK = 1 << 22  # NumPy inputs are made in chunks: whole-array temporaries of 1e8 doubles would need ~5 GB


def emit(obj):
    print(json.dumps(obj), flush=True)


def parse_size(workload, text):
    parts = [int(p) for p in text.split("x")]
    if (workload in (5, 7)) != (len(parts) == 2) or parts[0] < (1 if workload == 2 else 2):
        raise SystemExit(f"workload_peers.py: --size {text!r}: workloads 5 and 7 take NxD, W2 B >= 1, the others n >= 2")
    return parts


# ---- NumPy ------------------------------------------------------------------------------------

def numpy_programs(np, workload, size, steps, iters):
    """(inputs, program): the program is a function of the inputs returning a Python float."""

    def weyl(k, p):
        t = (k * p) * SCALE
        return t - np.floor(t)

    def filled(n, f, dtype=np.float64):
        out = np.empty(n, dtype=dtype)
        for lo in range(0, n, CHUNK):
            out[lo:lo + CHUNK] = f(np.arange(lo, min(n, lo + CHUNK), dtype=np.float64))
        return out

    if workload == 1:
        x = filled(size[0], lambda k: 2.0 * (weyl(k, P1) + weyl(k, P2) + weyl(k, P3) + weyl(k, P4) - 2.0))

        def w1(x):
            y = np.sin(x) * x + 0.5
            z = np.exp(-y ** 2) / (1 + np.abs(x))
            return float(np.sum(z))
        return (x,), w1
    if workload == 2:
        b = size[0]
        # MATLAB's 2160 x 3840 x B column-major is NumPy's (B, 3840, 2160) in C order: the same memory.
        imgs = filled(HEIGHT * WIDTH * b, lambda k: weyl(k, P5), np.float32).reshape(b, WIDTH, HEIGHT)

        def w2(imgs):
            mu = imgs.mean(axis=(1, 2), keepdims=True)
            d = imgs - mu
            sigma = np.sqrt((d ** 2).mean(axis=(1, 2), keepdims=True))
            out = np.minimum(np.maximum(d / (sigma + 1e-6) * 0.25 + 0.5, 0) ** 0.8, 1)
            return float(out.mean())
        return (imgs,), w2
    if workload == 3:
        m = size[0]
        rng = np.random.default_rng(42)

        def w3():
            dt = 1.0 / steps
            S = 100 * np.ones(m, dtype=np.float32)
            for _ in range(steps):
                S = S * np.exp((RATE - VOL ** 2 / 2) * dt + VOL * math.sqrt(dt) * rng.standard_normal(m, dtype=np.float32))
            return float(math.exp(-RATE) * np.mean(np.maximum(S - 100, 0)))
        return (), w3
    if workload == 4:
        n = size[0]
        # element (i, j) has column-major index k = i + n j: a C-ordered array's transpose
        A = filled(n * n, lambda k: weyl(k, P1) - 0.5).reshape(n, n).T
        B = filled(n * n, lambda k: weyl(k, P2) - 0.5).reshape(n, n).T
        A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)  # a NumPy user's arrays are C-ordered

        def w4(A, B):
            S = np.sum(A * B, axis=1)
            return float(S @ S)
        return (A, B), w4
    if workload == 5:
        n, d = size
        X = np.empty((n, d))
        j = np.arange(d, dtype=np.float64)
        for lo in range(0, n, max(1, CHUNK // d)):
            i = np.arange(lo, min(n, lo + max(1, CHUNK // d)), dtype=np.float64)[:, None]
            X[lo:lo + len(i)] = (weyl(i, P3) - 0.5) * weyl(j, P6) + (weyl(i + n * j, P5) - 0.5) / 4

        def w5(X):
            Xc = X - X.mean(axis=0)
            G = Xc.T @ Xc / (n - 1)
            v = np.ones(d) / math.sqrt(d)
            for _ in range(iters):
                Gv = G @ v
                v = Gv / np.linalg.norm(Gv)
            return float(v @ G @ v / np.sum(np.var(X, axis=0, ddof=1)))
        return (X,), w5
    if workload == 6:
        n = size[0]
        # element (i, j) has column-major index k = i + n j, as W4's A
        u0 = np.ascontiguousarray(filled(n * n, lambda k: weyl(k, P6)).reshape(n, n).T)

        def w6(u):
            # MATLAB's circshift(u, 1, 1) is np.roll(u, 1, axis=0); the sum runs left to right, as written
            for _ in range(STENCIL_STEPS):
                u = u + 0.1 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
                               + np.roll(u, -1, axis=1) - 4 * u)
            return float(np.sum(u ** 2))
        return (u0,), w6
    if workload == 7:
        n, d = size
        # element (i, j) has column-major index k = i + n j; a NumPy user's array is C-ordered
        X = np.ascontiguousarray(filled(n * d, lambda k: 8.0 * weyl(k, P4) - 4.0).reshape(d, n).T)

        def w7(X):
            E = np.exp(X - X.max(axis=1, keepdims=True))
            P = E / E.sum(axis=1, keepdims=True)
            return float(np.sum(P * X))
        return (X,), w7
    raise SystemExit(f"workload_peers.py: no workload {workload}")


# ---- PyTorch ----------------------------------------------------------------------------------

def torch_programs(torch, workload, size, steps, iters, dev):
    """(inputs, program): the program returns a 0-d tensor on the device."""

    def weyl(k, p):
        t = (k * p) * SCALE
        return t - torch.floor(t)

    def index(n):
        return torch.arange(n, dtype=torch.float64, device=dev)

    if workload == 1:
        k = index(size[0])
        x = 2.0 * (weyl(k, P1) + weyl(k, P2) + weyl(k, P3) + weyl(k, P4) - 2.0)

        def w1(x):
            y = torch.sin(x) * x + 0.5
            z = torch.exp(-y ** 2) / (1 + torch.abs(x))
            return torch.sum(z)
        return (x,), w1
    if workload == 2:
        b = size[0]
        imgs = weyl(index(HEIGHT * WIDTH * b), P5).to(torch.float32).reshape(b, WIDTH, HEIGHT)

        def w2(imgs):
            mu = imgs.mean(dim=(1, 2), keepdim=True)
            d = imgs - mu
            sigma = torch.sqrt((d ** 2).mean(dim=(1, 2), keepdim=True))
            out = torch.clamp(torch.clamp(d / (sigma + 1e-6) * 0.25 + 0.5, min=0) ** 0.8, max=1)
            return out.mean()
        return (imgs,), w2
    if workload == 3:
        m = size[0]

        def w3():
            dt = 1.0 / steps
            S = 100 * torch.ones(m, dtype=torch.float32, device=dev)
            for _ in range(steps):
                S = S * torch.exp((RATE - VOL ** 2 / 2) * dt + VOL * math.sqrt(dt) * torch.randn(m, dtype=torch.float32, device=dev))
            return math.exp(-RATE) * torch.mean(torch.clamp(S - 100, min=0))
        return (), w3
    if workload == 4:
        n = size[0]
        A = (weyl(index(n * n), P1) - 0.5).reshape(n, n).T.contiguous()
        B = (weyl(index(n * n), P2) - 0.5).reshape(n, n).T.contiguous()

        def w4(A, B):
            S = torch.sum(A * B, dim=1)
            return S @ S
        return (A, B), w4
    if workload == 5:
        n, d = size
        i = index(n)[:, None]
        j = index(d)[None, :]
        X = (weyl(i, P3) - 0.5) * weyl(j, P6) + (weyl(i + n * j, P5) - 0.5) / 4

        def w5(X):
            Xc = X - X.mean(dim=0)
            G = Xc.T @ Xc / (n - 1)
            v = torch.ones(d, dtype=X.dtype, device=dev) / math.sqrt(d)
            for _ in range(iters):
                Gv = G @ v
                v = Gv / torch.linalg.norm(Gv)
            return v @ G @ v / torch.sum(torch.var(X, dim=0, correction=1))
        return (X,), w5
    if workload == 6:
        n = size[0]
        u0 = weyl(index(n * n), P6).reshape(n, n).T.contiguous()

        def w6(u):
            for _ in range(STENCIL_STEPS):
                u = u + 0.1 * (torch.roll(u, 1, dims=0) + torch.roll(u, -1, dims=0) + torch.roll(u, 1, dims=1)
                               + torch.roll(u, -1, dims=1) - 4 * u)
            return torch.sum(u ** 2)
        return (u0,), w6
    if workload == 7:
        n, d = size
        X = (8.0 * weyl(index(n * d), P4) - 4.0).reshape(d, n).T.contiguous()

        def w7(X):
            E = torch.exp(X - X.amax(dim=1, keepdim=True))
            P = E / E.sum(dim=1, keepdim=True)
            return torch.sum(P * X)
        return (X,), w7
    raise SystemExit(f"workload_peers.py: no workload {workload}")


def compiled_w3(torch, size, steps, dev, scope):
    """W3 for torch.compile: the whole loop compiled as one function, or only its step."""
    m = size[0]
    dt = 1.0 / steps
    drift, vol = (RATE - VOL ** 2 / 2) * dt, VOL * math.sqrt(dt)
    if scope == "whole":
        def w3():
            S = 100 * torch.ones(m, dtype=torch.float32, device=dev)
            for _ in range(steps):
                S = S * torch.exp(drift + vol * torch.randn(m, dtype=torch.float32, device=dev))
            return math.exp(-RATE) * torch.mean(torch.clamp(S - 100, min=0))
        return torch.compile(w3)

    step = torch.compile(lambda S: S * torch.exp(drift + vol * torch.randn(m, dtype=torch.float32, device=dev)))
    payoff = torch.compile(lambda S: math.exp(-RATE) * torch.mean(torch.clamp(S - 100, min=0)))

    def w3_steps():
        S = 100 * torch.ones(m, dtype=torch.float32, device=dev)
        for _ in range(steps):
            S = step(S)
        return payoff(S)
    return w3_steps


# ---- driver -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", required=True, choices=["numpy", "torch_eager", "torch_compile"])
    ap.add_argument("--workload", type=int, required=True, choices=range(1, 8))
    ap.add_argument("--size", required=True)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-warmup-ms", type=float, default=0.0,
                    help="more warm-up runs until they took this long (GPU clocks ramp up under load)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=256, help="W3's time steps T")
    ap.add_argument("--iters", type=int, default=50, help="W5's power-iteration steps")
    ap.add_argument("--w3-compile", choices=["whole", "step"], default="step")
    ap.add_argument("--device", default="cuda", help="PyTorch's device: cuda (the peer of the issue), or cpu")
    ap.add_argument("--reference", action="store_true",
                    help="print the double-precision NumPy value once (W2's images cast to double), untimed: "
                         "the values stored in workloads_report.py's REFERENCE")
    args = ap.parse_args()
    size = parse_size(args.workload, args.size)
    if args.reference:
        import numpy as np
        inputs, program = numpy_programs(np, args.workload, size, args.steps, args.iters)
        emit({"kind": "reference", "workload": args.workload, "size": args.size,
              "value": program(*[a.astype(np.float64) for a in inputs])})
        return 0
    context = {"kind": "context", "system": args.system, "python": platform.python_version()}
    result = {"kind": "result", "system": args.system, "workload": args.workload, "size": args.size}
    if args.workload == 3:
        result["steps"] = args.steps
    if args.workload == 5:
        result["iters"] = args.iters

    sync = lambda: None  # noqa: E731
    if args.system == "numpy":
        import numpy as np
        context["numpy"] = np.__version__
        t0 = time.perf_counter()
        inputs, program = numpy_programs(np, args.workload, size, args.steps, args.iters)
        read = float
    else:
        try:
            import torch
        except Exception as e:  # noqa: BLE001 - any import failure means: no PyTorch here
            emit(context)
            emit({"kind": "skip", "system": args.system, "reason": f"import torch failed: {e}"})
            return 3
        dev = args.device
        if dev.startswith("cuda") and not torch.cuda.is_available():
            emit(context)
            emit({"kind": "skip", "system": args.system, "reason": f"PyTorch {torch.__version__} sees no CUDA device"})
            return 3
        if args.system == "torch_compile" and not hasattr(torch, "compile"):
            emit(context)
            emit({"kind": "skip", "system": args.system, "reason": f"PyTorch {torch.__version__} has no torch.compile"})
            return 3
        context.update(torch=torch.__version__, device=torch.cuda.get_device_name(dev) if dev.startswith("cuda") else
                       f"cpu ({torch.get_num_threads()} threads)")
        if dev.startswith("cuda"):
            context["cuda"] = torch.version.cuda
        t0 = time.perf_counter()
        inputs, program = torch_programs(torch, args.workload, size, args.steps, args.iters, dev)
        if args.system == "torch_compile":
            if args.workload == 3:
                scope = args.w3_compile
                try:
                    program = compiled_w3(torch, size, args.steps, dev, scope)
                    program()
                except Exception as e:  # noqa: BLE001 - report it and compile the step instead
                    print(f"workload_peers.py: compiling W3's whole loop failed ({e}); compiling its step", file=sys.stderr)
                    scope = "step"
                    program = compiled_w3(torch, size, args.steps, dev, scope)
                result["compile_scope"] = scope
            else:
                program = torch.compile(program)
        sync = torch.cuda.synchronize if dev.startswith("cuda") else sync
        sync()
        read = lambda r: float(r.item())  # noqa: E731
    result["setup_ms"] = (time.perf_counter() - t0) * 1e3

    try:
        warm, samples, value = [], [], None
        warmups, r = args.warmup, 0
        while r < warmups + args.reps:
            t0 = time.perf_counter()
            out = program(*inputs)
            sync()
            (warm if r < warmups else samples).append((time.perf_counter() - t0) * 1e3)
            value = read(out)
            del out
            # as tandem-workloads: warm up until --min-warmup-ms have passed after the first run
            # (which compiles), at most 100 runs
            if r + 1 == warmups and sum(warm[1:]) < args.min_warmup_ms and len(warm) < 100:
                warmups += 1
            r += 1
    except Exception as e:  # noqa: BLE001 - one error line, as tandem-workloads prints
        emit(context)
        emit({"kind": "error", "system": args.system, "workload": args.workload, "message": f"{type(e).__name__}: {e}"})
        return 1
    result.update(value=value, warmup_ms=warm, samples_ms=samples)
    emit(context)
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
