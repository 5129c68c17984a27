#!/usr/bin/env bash
# Runs the GPU benchmarks of the Vulkan backend issue in one run, on the GPU machine (or on
# lavapipe here, with a small --log2n), and prints one table against the issue's targets:
#   1. tandem-gpu-bench with a fresh, empty pipeline cache directory: pipeline creation cold,
#      the latency of a 100-op chain vs a raw submit + wait, and the bandwidth of c = a + b, the
#      4-op and 8-op chains in fp32 and fp64 vs a raw vkCmdCopyBuffer;
#   2. tandem-gpu-bench --only pipeline again with the same directory: pipeline creation warm;
#   3. bench/torch_peers.py: PyTorch eager and torch.compile on the same expressions, and a
#      device copy (copy_), checked before timing;
#   4. the table: Tandem vs copy bandwidth (>= 90% fp32, >= 80% fp64), vs torch.compile
#      (>= 1.0x), vs eager (>= 4x), warm first dispatch (< 5 ms), chain latency vs raw round trip
#      (<= 2x), each PASS or MISS.
# Both tandem-gpu-bench processes run with the NVIDIA driver's own shader disk cache off
# (__GL_SHADER_DISK_CACHE=0, MESA_SHADER_CACHE_DISABLE=true on Mesa), so that "warm" measures
# Tandem's disk cache (SPIR-V + VkPipelineCache blob) and "cold" is cold.
#
# Usage: bench/run-gpu.sh [--log2n N] [--bench PATH] [--no-torch] [--no-compile] [--strict]
# Results (the JSON lines, the table, a summary) go to $OUT when it is set, else to a temp dir.
# Exit status: 0 done, 1 a target missed under --strict, 2 a check failed or a tool broke.
set -uo pipefail

# the shared options, finding tandem-gpu-bench, $tmp and $out: bench/lib-gpu.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-gpu.sh"
strict=0
gpu_script_option() {
  case "$1" in
    --strict) strict=1 ;;
    *) return 1 ;;
  esac
}
gpu_parse_args run-gpu.sh "$@"
gpu_find_bench run-gpu.sh
gpu_setup_out tandem-gpu
py=python3

export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
cache="$tmp/pipeline-cache"
mkdir -p "$cache"

echo "== run-gpu.sh: $(date -u +%Y-%m-%dT%H:%MZ), n = 2^$log2n, $(nproc) CPUs" | tee "$out/log.txt" >&2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$out/log.txt" >&2

echo "== 1. tandem-gpu-bench (cold pipeline cache)" >&2
"$bench" --log2n "$log2n" --cache-dir "$cache" --label cold > "$out/tandem.jsonl" 2> >(tee -a "$out/log.txt" >&2)
rc=$?
grep -v '^{' "$out/tandem.jsonl" >&2
[[ $rc -eq 0 ]] || { echo "run-gpu.sh: tandem-gpu-bench failed (exit $rc)" >&2; exit 2; }

echo "== 2. tandem-gpu-bench --only pipeline (a second process, the same cache directory)" >&2
"$bench" --log2n "$log2n" --cache-dir "$cache" --label warm --only pipeline > "$out/tandem_warm.jsonl" 2> >(tee -a "$out/log.txt" >&2)
rc=$?
grep -v '^{' "$out/tandem_warm.jsonl" >&2
[[ $rc -eq 0 ]] || { echo "run-gpu.sh: tandem-gpu-bench (warm) failed (exit $rc)" >&2; exit 2; }
echo "pipeline cache directory after the runs: $(ls "$cache" | wc -l) files, $(du -sk "$cache" | cut -f1) KiB" | tee -a "$out/log.txt" >&2

if [[ $torch -eq 1 ]]; then
  echo "== 3. torch_peers.py" >&2
  env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 "$py" "$root/bench/torch_peers.py" --log2n "$log2n" $compile_flag > "$out/torch.jsonl" 2> >(tee -a "$out/log.txt" >&2)
  rc=$?
  [[ $rc -eq 0 ]] || { echo "run-gpu.sh: torch_peers.py failed (exit $rc); the table shows Tandem alone" >&2; }
else
  : > "$out/torch.jsonl"
fi

echo "== 4. table" >&2
"$py" - "$out" "$strict" > "$out/table.txt" <<'PY'
import json
import math
import sys

out, strict = sys.argv[1], sys.argv[2] == "1"

def lines(name):
    rows = []
    try:
        for l in open(f"{out}/{name}", encoding="utf-8"):
            l = l.strip()
            if l.startswith("{"):
                rows.append(json.loads(l))
    except FileNotFoundError:
        pass
    return rows

tandem, warm, torch = lines("tandem.jsonl"), lines("tandem_warm.jsonl"), lines("torch.jsonl")
ctx = next(r for r in tandem if r["kind"] == "context")
tctx = next((r for r in torch if r["kind"] == "context"), None)
bw = {}
for r in tandem + torch:
    if r["kind"] == "bandwidth":
        bw[(r["system"], r["dtype"], r["expr"])] = r
lat = {r["system"]: r for r in tandem + torch if r["kind"] == "latency"}
pipe = {r["label"]: r for r in tandem + warm if r["kind"] == "pipeline"}
errors = [r for r in tandem + torch if r["kind"] == "error"]
bad_checks = [r for r in tandem + torch if r["kind"] == "check" and not r["pass"]]

rows = []
def row(what, value, target, op, fmt, unit=""):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        rows.append({"what": what, "value": None, "target": target, "op": op, "pass": False})
        print(f"{what:<58} {'n/a':>10} {op + ' ' + fmt.format(target) + unit:>10}  MISS (not measured)")
        return
    ok = value >= target if op == ">=" else (value <= target if op == "<=" else value < target)
    rows.append({"what": what, "value": value, "target": target, "op": op, "pass": ok})
    print(f"{what:<58} {fmt.format(value) + unit:>10} {op + ' ' + fmt.format(target) + unit:>10}  {'PASS' if ok else 'MISS'}")

n = 1 << int(ctx["log2n"])
print()
print(f"Tandem {ctx['tandem_version']} on {ctx['device'].split(' driver')[0]}")
if tctx:
    print(f"PyTorch {tctx['torch']} (CUDA {tctx['cuda']}) on {tctx['device']}")
print(f"n = 2^{ctx['log2n']} elements; wall time around evaluate().get() (Tandem) / between synchronizes (PyTorch), "
      f"median of {ctx['reps']} after {ctx['warmup']} warm-ups")
print()
print(f"{'dtype':<5} {'expression':<8} {'Tandem ms':>9} {'GPU ms':>7} {'GB/s':>6} {'eager ms':>8} {'compile ms':>10} "
      f"{'vs eager':>8} {'vs comp.':>8}")
def g(key, field="median_wall_ms"):
    r = bw.get(key)
    return r[field] if r and r.get(field) is not None else float("nan")
for dt in ("fp32", "fp64"):
    for e in ("add", "chain4", "chain8"):
        t = g(("tandem", dt, e)); k = g(("tandem", dt, e), "median_kernel_ms")
        ea = g(("torch_eager", dt, e)); co = g(("torch_compile", dt, e))
        gbs = g(("tandem", dt, e), "wall_GBps")
        print(f"{dt:<5} {e:<8} {t:>9.3f} {k:>7.3f} {gbs:>6.0f} {ea:>8.3f} {co:>10.3f} {ea / t:>7.2f}x {co / t:>7.2f}x")
print()
print("device copy (2 arrays counted), GB/s:   wall / GPU time")
copy_ref = {}
for dt in ("fp32", "fp64"):
    cands = []
    for sysname, e, label in (("vk_shader_copy", "copy_raw", "raw shader copy"), ("vk_copy", "copy_raw", "raw vkCmdCopyBuffer"),
                              ("torch_copy", "copy", "PyTorch copy_"),
                              ("tandem", "copy_tandem", "Tandem a*1.0")):
        r = bw.get((sysname, dt, e))
        if r:
            kg = r.get("kernel_GBps")
            print(f"  {dt} {label:<22} {r['wall_GBps']:7.0f} / {kg if kg is not None else float('nan'):7.0f}")
            if sysname != "tandem":
                cands.append((r["wall_GBps"], label))
    copy_ref[dt] = max(cands) if cands else (float("nan"), "none")
    print(f"  {dt} reference (the best wall-time copy: raw shader copy, vkCmdCopyBuffer, PyTorch copy_): "
          f"{copy_ref[dt][1]}, {copy_ref[dt][0]:.0f} GB/s")
print()
print("Tandem's kernels alone (GPU timestamp time) against the reference copy:")
for dt in ("fp32", "fp64"):
    print("  " + dt + ": " + ", ".join(
        f"{e} {100.0 * bw[('tandem', dt, e)]['kernel_GBps'] / copy_ref[dt][0]:.0f}%"
        for e in ("add", "chain4", "chain8", "copy_tandem")
        if bw.get(("tandem", dt, e)) and bw[("tandem", dt, e)].get("kernel_GBps")))
for r in tandem:
    if r["kind"] == "alloc":
        print(f"  {r['dtype']}: a fresh device allocation of {r['bytes'] / 2**30:.2f} GiB (DeviceHeap, its own block): "
              f"allocate {', '.join(f'{v:.1f}' for v in r['allocate_ms'])} ms, release "
              f"{', '.join(f'{v:.1f}' for v in r['release_ms'])} ms")

print()
print(f"{'target':<58} {'value':>10} {'target':>10}")
for dt, tgt in (("fp32", 90.0), ("fp64", 80.0)):
    for e in ("add", "chain4", "chain8"):
        r = bw.get(("tandem", dt, e))
        v = 100.0 * r["wall_GBps"] / copy_ref[dt][0] if r else None
        row(f"{dt} {e}: Tandem bandwidth / copy bandwidth", v, tgt, ">=", "{:.0f}", "%")
for dt in ("fp32", "fp64"):
    for e in ("add", "chain4", "chain8"):
        t = g(("tandem", dt, e))
        co = g(("torch_compile", dt, e)); ea = g(("torch_eager", dt, e))
        row(f"{dt} {e}: torch.compile time / Tandem time", co / t if not math.isnan(co) else None, 1.0, ">=", "{:.2f}", "x")
        row(f"{dt} {e}: PyTorch eager time / Tandem time", ea / t if not math.isnan(ea) else None, 4.0, ">=", "{:.2f}", "x")
c, w = pipe.get("cold"), pipe.get("warm")
row("warm first dispatch of a new expression (ms, 2nd process)", w["first_evaluate_new_expr_ms"] if w else None, 5.0, "<", "{:.2f}", " ms")
tl, raw = lat.get("tandem"), lat.get("raw_tiny_dispatch")
row("100-op chain gather latency / raw submit+wait (tiny dispatch)",
    tl["median_us"] / raw["median_us"] if tl and raw else None, 2.0, "<=", "{:.2f}", "x")

print()
if c:
    print(f"pipeline, cold: first evaluate of a new expression {c['first_evaluate_new_expr_ms']:.2f} ms "
          f"(compiled {c['new_expr']['pipeline_misses']}, {c['new_expr']['pipeline_compile_ms']:.2f} ms in glslang + "
          f"vkCreateComputePipelines); the process's very first evaluate (linspace, includes glslang's "
          f"one-time init) {c['first_evaluate_linspace_ms']:.2f} ms; the same expression again {c['same_expr_again_ms']:.3f} ms")
if w:
    ne = w["new_expr"]
    print(f"pipeline, warm: first evaluate of that expression {w['first_evaluate_new_expr_ms']:.2f} ms "
          f"(disk hits {ne['pipeline_disk_hits']}, memory hits {ne['pipeline_hits']}, compiled {ne['pipeline_misses']}, "
          f"{ne['pipeline_compile_ms']:.2f} ms creating); first evaluate (linspace) {w['first_evaluate_linspace_ms']:.2f} ms; "
          f"Runtime construction {w['runtime_create_ms']:.1f} ms")
for k in ("tandem", "tandem_evaluate", "tandem_1op", "tandem_cpu", "raw_empty", "raw_tiny_dispatch", "torch_tiny"):
    if k in lat:
        print(f"latency {k:<18} median {lat[k]['median_us']:8.1f} us (min {lat[k]['min_us']:.1f}): {lat[k]['what']}")
if tl:
    print(f"  the chain: {tl['device_regions_per_gather']:.0f} device region(s), {tl['batches_per_gather']:.0f} batch(es) per gather")
for r in errors:
    print(f"error: {r}")
for r in bad_checks:
    print(f"FAILED CHECK: {r}")

with open(f"{out}/summary.json", "w", encoding="utf-8") as f:
    json.dump({"context": ctx, "torch_context": tctx, "targets": rows, "pipeline": pipe, "latency": lat,
               "copy_reference_GBps": copy_ref, "bandwidth": {"|".join(k): v for k, v in bw.items()},
               "errors": errors}, f, indent=1, default=str)
if bad_checks:
    sys.exit(2)
sys.exit(1 if strict and not all(r["pass"] for r in rows) else 0)
PY
rc=$?
cat "$out/table.txt"
exit $rc
