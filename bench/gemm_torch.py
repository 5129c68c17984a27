#!/usr/bin/env python3
"""cuBLAS GEMM through PyTorch, the peer of tandem-gemm-gpu-bench (same machine, same command).

TF32 is off for fp32 (torch.backends.cuda.matmul.allow_tf32 = False), so fp32 is true fp32 FMA
work; fp64 uses the FP64 tensor cores (DMMA) as cuBLAS does; fp16 for the cooperative-matrix ratio.
Times are CUDA-event medians over --reps products after a warm-up. One JSON object per line.

usage: python3 bench/gemm_torch.py [--sizes 4096,8192] [--reps 10] [--dtypes fp32,fp64,fp16,fp16_from_fp32]

fp16_from_fp32 is the peer of Tandem's matmul(A, B, {.., MatmulPrecision::f16}) on single arrays:
(a.half() @ b.half()).float() with a, b float32, the conversions timed with the product.
"""
import argparse
import json

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dtypes", default="fp32,fp64,fp16")
    args = ap.parse_args()
    wanted = args.dtypes.split(",")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    kinds = ((torch.float32, "fp32"), (torch.float64, "fp64"), (torch.float16, "fp16"), (torch.float32, "fp16_from_fp32"))
    for dtype, name in (k for k in kinds if k[1] in wanted):
        product = (lambda x, y: (x.half() @ y.half()).float()) if name == "fp16_from_fp32" else (lambda x, y: x @ y)
        for n in (int(s) for s in args.sizes.split(",")):
            a = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
            b = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
            for _ in range(2):
                c = product(a, b)
            torch.cuda.synchronize()
            ms = []
            for _ in range(args.reps):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                c = product(a, b)
                e.record()
                e.synchronize()
                ms.append(s.elapsed_time(e))
            ms.sort()
            med = ms[len(ms) // 2]
            flop = 2.0 * n ** 3
            print(json.dumps({"kind": "cublas", "dtype": name, "n": n, "median_ms": med, "tflops": flop / (med * 1e-3) / 1e12,
                              "tflops_best": flop / (ms[0] * 1e-3) / 1e12, "tf32": torch.backends.cuda.matmul.allow_tf32,
                              "device": torch.cuda.get_device_name()}), flush=True)
            del a, b, c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
