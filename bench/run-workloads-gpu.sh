#!/usr/bin/env bash
# The workload benchmark (scripts/bench) on the GPU machine that the device tool lends: Tandem in
# its three placements (forced CPU on the 16 cores, forced GPU, auto) and PyTorch eager +
# torch.compile, every result checked against the others before its time counts. Writes
# NAME.json (all samples + context), NAME.md (the tables) and NAME.png (the ratios; skipped with a
# message where matplotlib is missing) to $OUT, NAME = gpu-h100 or gpu-h200 from nvidia-smi, and
# workloads-log.txt (the progress).
#
# Here, first (tandem-workloads bundled with the libraries it needs, and the commit it was built at):
#   cmake --build build -j2 --target tandem-workloads
#   ../shared/device/bundle.sh build/bench/tandem-workloads && git rev-parse HEAD > .gpu/COMMIT
# Then the device tool's run, with carry [".gpu"]:
#   bash bench/run-workloads-gpu.sh                         # the smallest and largest sizes
#   bash bench/run-workloads-gpu.sh --quick                 # one small size each (a smoke test)
#   bash bench/run-workloads-gpu.sh --workloads 3,5 --name gpu-h100-b
# Other arguments go to bench/workloads_report.py run (--sizes, --systems, --reps, --timeout ...).
# A command may run 10 minutes there: by default each run has 120 s and no run starts after
# 540 s (--budget-s; what is left is listed as skipped), and the JSON is rewritten after every
# (workload, size). Runs that do not fit: split by --workloads over several calls, each with its
# own --name, then merge here: bench/workloads_report.py report a.json b.json --name gpu-h100
# (also re-makes the PNG when the machine had no matplotlib).
# Exit status: 0 done, 2 a result check failed, other: a tool broke.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/docs/workloads}"
mkdir -p "$out"

# tandem-workloads: the bundled one (through .gpu/run.sh, which installs the Vulkan loader and
# points Vulkan at NVIDIA's driver), else one on PATH or in build/.
if [[ -x "$root/.gpu/run.sh" && -x "$root/.gpu/bin/tandem-workloads" ]]; then
  bash "$root/.gpu/run.sh" true || { echo "run-workloads-gpu.sh: .gpu/run.sh failed" >&2; exit 1; }
  tandem_cmd="bash $root/.gpu/run.sh tandem-workloads"
  [[ -f "$root/.gpu/COMMIT" && -z "${TANDEM_BENCH_COMMIT:-}" ]] && export TANDEM_BENCH_COMMIT="$(cat "$root/.gpu/COMMIT") (the bundle's)"
elif command -v tandem-workloads >/dev/null; then
  tandem_cmd="$(command -v tandem-workloads)"
else
  tandem_cmd="$root/build/bench/tandem-workloads"
  [[ -x "$tandem_cmd" ]] || { echo "run-workloads-gpu.sh: no tandem-workloads (bundle it into .gpu/, see the header)" >&2; exit 1; }
fi

gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
case "$gpu" in
  *H100*) name=gpu-h100 ;;
  *H200*) name=gpu-h200 ;;
  *) name="gpu-$(hostname -s)" ;;
esac
echo "== run-workloads-gpu.sh: $(date -u +%Y-%m-%dT%H:%MZ), ${gpu:-no NVIDIA GPU}, $(nproc) CPUs, tandem-workloads: $tandem_cmd" >&2
export TANDEM_BENCH_COMMAND="bench/run-workloads-gpu.sh $*"
# The PyTorch peers run on the machine's own python3 (the one with torch), without the bundle's
# libraries (run.sh sets LD_LIBRARY_PATH only for tandem-workloads).
PYTHONUNBUFFERED=1 python3 "$root/bench/workloads_report.py" run --modes cpu,gpu,auto --systems tandem,torch \
  --tandem-cmd "$tandem_cmd" --python python3 --out "$out" --name "$name" --timeout 120 --budget-s 540 "$@" \
  2> >(tee "$out/workloads-log.txt" >&2)
