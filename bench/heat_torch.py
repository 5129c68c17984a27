#!/usr/bin/env python3
"""The peers of tandem-heat (bench/heat.cpp): the same heat-equation step in PyTorch on CUDA, in
float64, on the same starting field, as slicing (the interior updated in place from the four
shifted views) and as a 3x3 convolution, each eager and under torch.compile.

    heat_torch.py --system eager|compile|conv_eager|conv_compile [--n 4096] [--steps 1000] [--reps 5]

Like tandem-heat: steps/10 + 2 untimed steps first (torch.compile compiles in them), then --reps
timed runs of --steps steps, each ending with torch.cuda.synchronize(); the energy (the field's
sum) after all of them. One JSON line; a "skip" line and exit status 3 without PyTorch or CUDA.
"""
import argparse
import json
import math
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", required=True, choices=["eager", "compile", "conv_eager", "conv_compile"])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"bench": "heat", "system": "torch_" + a.system, "skip": str(e)}))
        return 3
    if not torch.cuda.is_available():
        print(json.dumps({"bench": "heat", "system": "torch_" + a.system, "skip": "no CUDA device"}))
        return 3
    dev, n, r = "cuda", a.n, 0.2
    # examples/heat_kernel.hpp's starting field: a Gaussian bump, the first row sin(pi x).
    x = torch.linspace(0, 1, n, dtype=torch.float64, device=dev)
    bump = torch.exp(-50.0 * ((x[:, None] - 0.5) ** 2 + (x[None, :] - 0.5) ** 2))
    bump[0, :] = torch.sin(math.pi * x)
    u, un = bump.clone(), bump.clone()  # the boundary stays in both

    def step(u, un):
        un[1:-1, 1:-1] = u[1:-1, 1:-1] + r * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1])

    lap = torch.tensor([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]], dtype=torch.float64, device=dev).view(1, 1, 3, 3)

    def conv_step(u, un):
        un[1:-1, 1:-1] = u[1:-1, 1:-1] + r * torch.nn.functional.conv2d(u.view(1, 1, n, n), lap).view(n - 2, n - 2)

    f = conv_step if a.system.startswith("conv") else step
    if a.system.endswith("compile"):
        f = torch.compile(f)
    bufs = [u, un]
    state = {"k": 0}

    def run(count):
        for _ in range(count):
            k = state["k"]
            f(bufs[k % 2], bufs[(k + 1) % 2])
            state["k"] = k + 1
        torch.cuda.synchronize()

    t0 = time.perf_counter()
    run(a.steps // 10 + 2)
    first_s = time.perf_counter() - t0
    ms = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        run(a.steps)
        ms.append((time.perf_counter() - t0) * 1e3 / a.steps)
    energy = float(bufs[state["k"] % 2].sum().item())
    print(json.dumps({"bench": "heat", "system": "torch_" + a.system, "n": n, "steps": a.steps,
                      "total_steps": state["k"], "ms_per_step": sorted(ms)[len(ms) // 2], "samples": ms,
                      "energy": energy, "warmup_s": first_s, "torch": torch.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
