#!/usr/bin/env bash
# The MATLAB front end against the C++ API and GNU Octave:
#  1. interpreter overhead: a scalar loop of 1e6 iterations (s = s + i*0.5) timed inside the
#     script (tic/toc) and as a whole process, Tandem against Octave in the same run;
#  2. the harness's five workloads as scripts (examples/w*.m, best of REPS runs after one) against
#     tandem-workloads (the C++ API, best of REPS after warm-up) at the same sizes and placement.
#
#   bench/matlab_vs_cpp.sh                            # CPU sizes, TANDEM_DEVICE=cpu
#   MODE=gpu SIZES=large RUN=".gpu/run.sh" bench/matlab_vs_cpp.sh   # on the GPU machine
#   ONLY="4 5" ROUNDS=6 SKIP_LOOP=1 bench/matlab_vs_cpp.sh             # some workloads, more rounds
# Prints one line per measurement; ratio = script / C++ (1.0: the same time).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
RUN=${RUN:-}
TANDEM=${TANDEM:-$here/build/tandem}
WORKLOADS=${WORKLOADS:-$here/build/bench/tandem-workloads}
MODE=${MODE:-cpu}
REPS=${REPS:-7}
ROUNDS=${ROUNDS:-2}
export TANDEM_DEVICE=${TANDEM_DEVICE:-$([ "$MODE" = cpu ] && echo cpu || echo auto)}
[ "$MODE" = gpu ] && export TANDEM_PLACEMENT=gpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${SKIP_LOOP:-0}" != 1 ]; then
  cat > "$tmp/scalar_loop.m" <<'M'
t0 = tic;
s = 0;
for i = 1:1000000
    s = s + i*0.5;
end
fprintf('%.17g %.3f\n', s, toc(t0) * 1e3);
M
  for round in $(seq "$ROUNDS"); do
    for sys in tandem octave; do
      start=$(date +%s.%N)
      if [ $sys = tandem ]; then out=$($RUN $TANDEM run "$tmp/scalar_loop.m"); else
        command -v octave-cli >/dev/null || { echo "octave: not installed"; continue; }
        out=$(cd "$tmp" && octave-cli --no-gui --quiet scalar_loop.m 2>/dev/null); fi
      end=$(date +%s.%N)
      echo "scalar loop 1e6 round $round $sys: value ${out% *} loop ${out#* } ms, process $(python3 -c "print('%.1f' % (($end - $start) * 1000))") ms"
    done
  done
fi

if [ "${SIZES:-small}" = large ]; then
  specs="1:100000000:100000000 2:16:16 3:4000000:4000000 4:8192:8192 5:262144x256:262144 256"
else
  specs="1:1000000:1000000 2:1:1 3:250000:250000 4:1024:1024 5:65536x128:65536 128"
fi
script() { case $1 in 1) echo w1_transcendental ;; 2) echo w2_image_normalize ;; 3) echo w3_monte_carlo ;; 4) echo w4_row_sums ;; 5) echo w5_power_iteration ;; esac; }
IFS=' ' read -r -a list <<< "$specs"
i=0
while [ $i -lt ${#list[@]} ]; do
  spec=${list[$i]}; i=$((i + 1))
  w=${spec%%:*}; rest=${spec#*:}; size=${rest%%:*}; args=${rest#*:}
  if [ "$w" = 5 ]; then args="$args ${list[$i]}"; i=$((i + 1)); fi
  case " ${ONLY:-1 2 3 4 5} " in *" $w "*) ;; *) continue ;; esac
  for round in $(seq "$ROUNDS"); do
    m=$($RUN $TANDEM run "$here/examples/$(script "$w").m" $args "$REPS" 2>&1 | tail -1)
    m_ms=$(echo "$m" | sed -n 's/.*best of [0-9]* runs: \([0-9.]*\) ms.*/\1/p')
    m_val=$(echo "$m" | sed -n 's/^[^:]*: \([^ ]*\) .*/\1/p')
    c=$($RUN $WORKLOADS --mode "$MODE" --workload "$w" --size "$size" --warmup 1 --reps "$REPS" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if d.get("kind") == "result": print("%.17g %.3f" % (d["value"], min(d["samples_ms"])))')
    c_val=${c% *}; c_ms=${c#* }
    ratio=$(python3 -c "print('%.2f' % ($m_ms / $c_ms))" 2>/dev/null || echo "?")
    echo "W$w $size $MODE round $round: script $m_ms ms (value $m_val), C++ $c_ms ms (value $c_val), ratio $ratio"
  done
done
