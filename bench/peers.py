#!/usr/bin/python3
"""The Python peers of tandem-bench: NumPy and numexpr on the same fused chain.

    y = exp(-(sin(x) * x)**2) / (1 + abs(x)),   x = linspace(-10, 10, n)

x is made exactly as tandem-bench makes it (x[i] = -10 + (20 i) / (n - 1), the same bits),
n is read from the size of Tandem's result file (TANDEM_BENCH_DUMP of tandem-bench). Both peers
are checked against Tandem's result before anything is timed: a max-norm relative difference
above 1e-12 (or an elementwise relative difference above 1e-10, which catches errors in the
tiny values that the max-norm cannot see) exits 1 with a message. Then each is timed: one warm-up, then the median of
--repeats samples, each sample the mean of --inner evaluations (tandem-bench times 7
repetitions of 3 iterations the same way). Prints one JSON document (and writes it to
--json-out if given).

Uses only Debian's python3-numpy and python3-numexpr (run it with /usr/bin/python3).
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which may be set on this machine, only affect BLAS
(matrix products); these elementwise ufuncs do not call OpenBLAS, so they are left as they are.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import numexpr as ne

EXPR = "exp(-(sin(x) * x)**2) / (1 + abs(x))"
LIMIT = 1e-12       # max-norm relative difference (the check)
ELEM_LIMIT = 1e-10  # elementwise relative difference: a guard against errors hidden in tiny values


def chain_numpy(x):
    return np.exp(-(np.sin(x) * x) ** 2) / (1 + np.abs(x))


def chain_numexpr(x):
    return ne.evaluate(EXPR, local_dict={"x": x})


def rel_diff(got, want):
    """max|got - want| / max|want|, and the largest elementwise relative difference."""
    if np.isnan(got).any() or np.isnan(want).any():
        return float("inf"), float("inf")
    d = np.abs(got - want)
    den = float(np.max(np.abs(want)))
    nz = want != 0
    elem = float(np.max(d[nz] / np.abs(want[nz]))) if nz.any() else 0.0
    return (float(np.max(d)) / den if den > 0 else float(np.max(d))), elem


def time_it(f, x, repeats, inner):
    f(x)  # warm-up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            y = f(x)
        samples.append((time.perf_counter() - t0) / inner)
        del y
    return samples


def numpy_simd():
    try:
        from numpy.core._multiarray_umath import __cpu_features__ as feats
        best = [k for k in ("AVX512_SKX", "AVX512F", "AVX2", "SSE2") if feats.get(k)]
        return best[0] if best else "baseline"
    except Exception:  # noqa: BLE001 - informative only
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem-result", required=True, help="raw little-endian doubles written by tandem-bench")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="numexpr threads (as many as Tandem's)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--inner", type=int, default=3)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    size = os.path.getsize(args.tandem_result)
    if size == 0 or size % 8 != 0:
        sys.exit(f"peers.py: {args.tandem_result}: {size} bytes is not a whole number of doubles")
    n = size // 8
    want = np.fromfile(args.tandem_result, dtype="<f8")

    x = -10.0 + 20.0 * np.arange(n, dtype=np.float64) / (n - 1)
    ne.set_num_threads(args.threads)

    checks = {}
    failed = []
    for name, f in (("numpy", chain_numpy), ("numexpr", chain_numexpr)):
        rel, elem = rel_diff(f(x), want)
        checks[name] = {"max_norm_rel_diff": rel, "max_elementwise_rel_diff": elem}
        print(f"peers.py: check {name} vs Tandem: max-norm relative difference {rel:.3g} (limit {LIMIT:g}), "
              f"largest elementwise relative difference {elem:.3g} (limit {ELEM_LIMIT:g})", file=sys.stderr)
        if not (rel <= LIMIT and elem <= ELEM_LIMIT):
            failed.append(name)
    if failed:
        print(f"peers.py: CHECK FAILED: {', '.join(failed)} differ(s) from Tandem's result by more than {LIMIT:g} "
              f"(max-norm relative) or {ELEM_LIMIT:g} (elementwise relative); nothing timed", file=sys.stderr)
        sys.exit(1)

    result = {
        "n": n,
        "expression": EXPR,
        "repeats": args.repeats,
        "inner": args.inner,
        "python": platform.python_version(),
        "numpy": {"version": np.__version__, "threads": 1, "simd": numpy_simd()},
        "numexpr": {"version": ne.__version__, "threads": args.threads,
                    "vml": bool(getattr(ne, "use_vml", False))},
        "checks": checks,
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ},
    }
    for name, f in (("numpy", chain_numpy), ("numexpr", chain_numexpr)):
        samples = time_it(f, x, args.repeats, args.inner)
        result[name]["samples_s"] = samples
        result[name]["median_s"] = statistics.median(samples)

    text = json.dumps(result, indent=2)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
