#!/usr/bin/env bash
# Several GPUs against one: each workload of tandem-workloads at its large size, with
# TANDEM_DEVICE=vulkan:0 (one GPU) and TANDEM_DEVICE=all (every GPU), forced GPU placement and
# automatic, two rounds alternating, in one process per run. Prints a line per run: the median
# ms of --reps timed runs, the value, and what the runtime did per run (regions split over the
# devices, split values assembled on the host, device regions, fallbacks, MB up and down, kernel
# ms summed over the devices, of the regions timed: those the cost model samples, or all with
# TANDEM_TIME_KERNELS=1).
#
#   bench/multi_gpu.sh                         # tandem-workloads from PATH, or build/bench
#   SPECS="1/100000000 8/16777216" MODES=auto REPS=10 OUT=/tmp/mgpu bench/multi_gpu.sh
#   RUN=.gpu/run.sh WORKLOADS=tandem-workloads bench/multi_gpu.sh   # on the GPU machine (the device tool)
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
WORKLOADS=${WORKLOADS:-$(command -v tandem-workloads || echo "$(dirname "$0")/../build/bench/tandem-workloads")}
RUN=${RUN:-}  # a wrapper (the GPU machine's .gpu/run.sh)
run() {  # workload size device mode round
  local f="$OUT/w$1_$2_$4_${3//[:,]/-}_r$5.json"
  TANDEM_DEVICE=$3 timeout ${TMO:-150} $RUN $WORKLOADS --mode $4 --workload $1 --size $2 --warmup 3 \
    --min-warmup-ms 800 --reps ${REPS:-10} > "$f" 2>"$f.err" || echo "FAILED w$1 $2 $3 $4: $(tail -2 "$f.err")"
}
for spec in ${SPECS:-1/100000000 2/16 3/4000000 4/8192 5/262144x256 8/16777216}; do
  set -- ${spec/\// }
  for mode in ${MODES:-gpu auto}; do
    for round in 1 2; do for dev in vulkan:0 all; do run "$1" "$2" $dev $mode $round; done; done
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob, statistics
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for line in open(f):
        d = json.loads(line)
        if d.get("kind") != "result":
            continue
        t = d["tandem"][-1] if d.get("tandem") else {}
        key = f.split("/")[-1].rsplit(".", 1)[0]
        # The host's part of a run: building the graph, then until the value is back.
        phase = {k: statistics.median(r.get(k, 0) for r in d["tandem"]) for k in ("build_ms", "gather_ms")} if d.get("tandem") else {}
        print(f"{key:32s} {statistics.median(d['samples_ms']):9.3f} ms  value {d['value']!r:24s} "
              f"split {t.get('split_regions')} assembled {t.get('split_values_assembled')} "
              f"device regions {t.get('device_regions')} fallbacks {t.get('device_fallbacks')} "
              f"up {t.get('upload_MB')} MB down {t.get('download_MB')} MB kernels {t.get('kernel_ms', 0):.3f} ms of {t.get('kernel_timed_regions', 0)} timed "
              f"build {phase.get('build_ms', 0):.3f} gather {phase.get('gather_ms', 0):.3f} ms")
PY
