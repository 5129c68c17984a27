#!/usr/bin/env bash
# Runs the CPU benchmarks of the benchmark issue in one run and prints the ratios against the
# targets:
#   1. tandem-bench: Tandem and Eigen on the fused chain (checked against each other first),
#      c = a + b, and the machine's copy bandwidth; it dumps Tandem's chain result;
#   2. bench/peers.py: NumPy and numexpr on the same chain, checked against that dump first;
#   3. a table: median ms of each, Eigen/Tandem >= 1.5, NumPy/Tandem >= 3, numexpr/Tandem >= 1,
#      and c = a + b at >= 80% of the copy bandwidth (the best of three parallel copies:
#      memcpy, ordinary stores, streaming stores), sum along dimension 1, 2 and all of the same
#      elements as a matrix at >= 80% of it too, each PASS or MISS; the fused sum(A .* B, 2) and
#      mean(A .^ 2) for information.
#
# Usage: bench/run-cpu.sh [PATH/TO/tandem-bench] [--strict] [--summary FILE] [-- extra tandem-bench args]
#   PATH       defaults to build-bench/bench/tandem-bench, then build/bench/tandem-bench
#   --strict   exit 1 if a target is missed (otherwise only a failed check fails the run)
#   --summary  also write the table's figures as JSON to FILE
# Environment: TANDEM_BENCH_LOG2N (default 24) and the runtime's TANDEM_* settings pass through.
# Exit status: 0 done, 1 a target missed under --strict, 2 a result check failed or a tool broke.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python=/usr/bin/python3
bench=""
strict=0
summary=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strict) strict=1; shift ;;
    --summary) summary="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) bench="$1"; shift ;;
  esac
done
if [[ -z "$bench" ]]; then
  for cand in "$root/build-bench/bench/tandem-bench" "$root/build/bench/tandem-bench"; do
    if [[ -x "$cand" ]]; then bench="$cand"; break; fi
  done
fi
if [[ -z "$bench" || ! -x "$bench" ]]; then
  echo "run-cpu.sh: no tandem-bench found; build it with" >&2
  echo "  cmake -S $root -B $root/build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build $root/build-bench -j2 --target tandem-bench" >&2
  exit 2
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tandem-bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

read -r load1 _ < /proc/loadavg
echo "run-cpu.sh: $(nproc) CPU(s), load average $load1 before the run (above ~0.5 the figures are noisy)" >&2

# 1. Tandem, Eigen, add, copy. Checks run before any timing; a failed one exits 2.
TANDEM_BENCH_DUMP="$tmp/tandem_chain.f64" "$bench" \
  --benchmark_out="$tmp/bench.json" --benchmark_out_format=json "${extra[@]}" >&2 || {
  echo "run-cpu.sh: tandem-bench failed (exit $?)" >&2; exit 2; }

threads="$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["context"]["tandem_cpu_threads"])' "$tmp/bench.json")"

# 2. NumPy and numexpr (numexpr with as many threads as Tandem), checked against Tandem's dump.
"$python" "$root/bench/peers.py" --tandem-result "$tmp/tandem_chain.f64" --threads "$threads" \
  --json-out "$tmp/peers.json" > /dev/null || { echo "run-cpu.sh: peers.py failed" >&2; exit 2; }

# 3. The table.
"$python" - "$tmp/bench.json" "$tmp/peers.json" "$strict" "$summary" <<'PY'
import json
import sys

bench = json.load(open(sys.argv[1]))
peers = json.load(open(sys.argv[2]))
strict = sys.argv[3] == "1"
summary_path = sys.argv[4]
ctx = bench["context"]

SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
med = {}
for b in bench["benchmarks"]:
    if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
        name = b["run_name"].split("/")[0]
        med[name] = {"s": b["real_time"] * SCALE[b["time_unit"]],
                     "bytes_per_second": b.get("bytes_per_second")}
COPIES = {"BM_copy_bandwidth": "memcpy", "BM_copy_bandwidth_stores": "ordinary stores",
          "BM_copy_bandwidth_stream": "streaming stores"}
need = ["BM_fused_chain_tandem", "BM_fused_chain_eigen", "BM_add_tandem", "BM_copy_bandwidth"]
errors = sorted({f"{b['run_name'].split('/')[0]}: {b.get('error_message', '')}"
                 for b in bench["benchmarks"] if b.get("error_occurred")})
if errors:
    print("run-cpu.sh: tandem-bench reported errors:\n  " + "\n  ".join(errors), file=sys.stderr)
    sys.exit(2)
missing = [k for k in need if k not in med]
if missing:
    print(f"run-cpu.sh: no median for {', '.join(missing)} in tandem-bench's output (filtered out?)", file=sys.stderr)
    sys.exit(2)

n = int(ctx["bench_n"])
t = {"tandem": med["BM_fused_chain_tandem"]["s"], "eigen": med["BM_fused_chain_eigen"]["s"],
     "numpy": peers["numpy"]["median_s"], "numexpr": peers["numexpr"]["median_s"]}
threads = ctx["tandem_cpu_threads"]
who = {"tandem": f"Tandem {ctx['tandem_version']} ({ctx['tandem_cpu_isa']}, {threads} threads)",
       "eigen": f"Eigen {ctx['eigen_version']} ({ctx['eigen_simd']}, 1 thread)",
       "numpy": f"NumPy {peers['numpy']['version']} ({peers['numpy']['simd']}, 1 thread)",
       "numexpr": f"numexpr {peers['numexpr']['version']} ({peers['numexpr']['threads']} threads)"}
log2 = n.bit_length() - 1 if n & (n - 1) == 0 else None
size = f"2^{log2}" if log2 is not None else str(n)

print()
print(f"Fused chain y = exp(-(sin(x).*x).^2) ./ (1 + abs(x)), x = linspace(-10, 10, {size}) doubles")
print(f"{'system':<48} {'median ms':>10} {'Melem/s':>9}")
for k in ("tandem", "eigen", "numpy", "numexpr"):
    print(f"{who[k]:<48} {t[k] * 1e3:>10.2f} {n / t[k] / 1e6:>9.0f}")
if "BM_fused_chain_tandem_f32" in med:
    ms = med["BM_fused_chain_tandem_f32"]["s"] * 1e3
    e32 = med.get("BM_fused_chain_eigen_f32", {}).get("s")
    extra = f" (Eigen f32: {e32 * 1e3:.2f} ms)" if e32 else ""
    print(f"{'  Tandem, the chain in single precision':<48} {ms:>10.2f} {n / (ms / 1e3) / 1e6:>9.0f}{extra}")

rows = []
def row(label, value, target, fmt, unit=""):
    ok = value >= target
    rows.append({"what": label, "value": value, "target": target, "pass": ok})
    print(f"{label:<48} {fmt.format(value) + unit:>10} {'>= ' + fmt.format(target) + unit:>10}  {'PASS' if ok else 'MISS'}")

print()
print(f"{'ratio (higher is better for Tandem)':<48} {'value':>10} {'target':>10}")
row("Eigen time / Tandem time", t["eigen"] / t["tandem"], 1.5, "{:.2f}", "x")
row("NumPy time / Tandem time", t["numpy"] / t["tandem"], 3.0, "{:.2f}", "x")
row("numexpr time / Tandem time", t["numexpr"] / t["tandem"], 1.0, "{:.2f}", "x")
# The machine's copy bandwidth: the best of the parallel copies (memcpy, ordinary stores,
# streaming stores), so that the target is measured against what the machine can do.
add_bw = med["BM_add_tandem"]["bytes_per_second"]
copies = {k: med[k]["bytes_per_second"] for k in COPIES if k in med}
best_copy = max(copies, key=copies.get)
copy_bw = copies[best_copy]
row("c = a + b bandwidth / copy bandwidth", 100.0 * add_bw / copy_bw, 80.0, "{:.0f}", "%")
# Reductions (issue 4): the matrix read once, against the same copy bandwidth.
for k, label in (("BM_sum_dim1_tandem", "sum(A, 1)"), ("BM_sum_dim2_tandem", "sum(A, 2)"),
                 ("BM_sum_all_tandem", "sum(A, 'all')")):
    if k in med:
        row(f"{label} bandwidth / copy bandwidth", 100.0 * med[k]["bytes_per_second"] / copy_bw, 80.0, "{:.0f}", "%")

print()
print(f"c = a + b (3 arrays counted): {add_bw / 1e9:.1f} GB/s, {med['BM_add_tandem']['s'] * 1e3:.2f} ms")
# Reductions with their producer folded in (for information; no target of their own).
for k, label in (("BM_sum_ab_dim2_tandem", "sum(A .* B, 2) (A and B read)"), ("BM_mean_sq_tandem", "mean(A .^ 2)")):
    if k in med:
        print(f"{label}: {med[k]['bytes_per_second'] / 1e9:.1f} GB/s, {med[k]['s'] * 1e3:.2f} ms, "
              f"{100.0 * med[k]['bytes_per_second'] / copy_bw:.0f}% of the copy bandwidth")
print(f"copy bandwidth, {threads} threads, 2 arrays counted (the best of these is the reference):")
for k, label in COPIES.items():
    if k in med:
        mark = "  <- reference" if k == best_copy else ""
        print(f"  {label:<24} {med[k]['bytes_per_second'] / 1e9:6.1f} GB/s{mark}")
print(f"checks: Tandem vs Eigen passed in tandem-bench; NumPy vs Tandem "
      f"{peers['checks']['numpy']['max_norm_rel_diff']:.2g}, numexpr vs Tandem "
      f"{peers['checks']['numexpr']['max_norm_rel_diff']:.2g} (max-norm relative, limit 1e-12)")
print(f"load average at the start of tandem-bench: {', '.join(f'{v:.2f}' for v in ctx.get('load_avg', []))}")

if summary_path:
    with open(summary_path, "w", encoding="utf-8") as f:
        json.dump({"n": n, "median_s": t, "who": who, "ratios": rows,
                   "add_bytes_per_second": add_bw, "copy_bytes_per_second": copy_bw, "copy_reference": COPIES[best_copy],
                   "copy_variants_bytes_per_second": {k: med[k]["bytes_per_second"] for k in med if k.startswith("BM_copy")},
                   "f32_median_s": {k: med[k]["s"] for k in med if k.endswith("_f32")},
                   "context": ctx, "peers": peers}, f, indent=2)
        f.write("\n")
sys.exit(1 if strict and not all(r["pass"] for r in rows) else 0)
PY
