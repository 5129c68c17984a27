# The common part of bench/run-gpu.sh and bench/run-gpu-reduce.sh, sourced by both (not run):
# their shared options, finding tandem-gpu-bench, and the temp / output directories.
#
# Sets: root (the repository), log2n (28), bench (""), torch (1), compile_flag ("").
# gpu_parse_args SCRIPT "$@"
#     --log2n N, --bench PATH, --no-torch, --no-compile, -h/--help (prints the calling script's
#     header comment, its usage text, and exits 0). Any other argument goes to the script's
#     gpu_script_option function, if it defines one: it handles a flag (an option without a
#     value) by setting its variable and returning 0, and returns 1 for anything else, which is
#     "SCRIPT: unknown argument ARG" and exit 2.
# gpu_find_bench SCRIPT
#     bench = --bench PATH, else tandem-gpu-bench on PATH, else build-gpu/ or build/ of the
#     repository; "SCRIPT: no tandem-gpu-bench found (--bench PATH)" and exit 2 when none is
#     executable.
# gpu_setup_out PREFIX
#     tmp = a fresh directory ${TMPDIR:-/tmp}/PREFIX.XXXXXX, removed on exit; out = $OUT when it
#     is set, else $tmp/out; out is created.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log2n=28
bench=""
torch=1
compile_flag=""

gpu_parse_args() {
  local script="$1"
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --log2n) log2n="$2"; shift 2 ;;
      --bench) bench="$2"; shift 2 ;;
      --no-torch) torch=0; shift ;;
      --no-compile) compile_flag="--no-compile"; shift ;;
      -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
      *)
        if declare -F gpu_script_option >/dev/null && gpu_script_option "$1"; then shift
        else echo "$script: unknown argument $1" >&2; exit 2
        fi ;;
    esac
  done
}

gpu_find_bench() {
  local script="$1" cand
  if [[ -z "$bench" ]]; then
    if command -v tandem-gpu-bench >/dev/null; then bench="$(command -v tandem-gpu-bench)"
    else
      for cand in "$root/build-gpu/bench/tandem-gpu-bench" "$root/build/bench/tandem-gpu-bench"; do
        if [[ -x "$cand" ]]; then bench="$cand"; break; fi
      done
    fi
  fi
  [[ -n "$bench" && -x "$bench" ]] || { echo "$script: no tandem-gpu-bench found (--bench PATH)" >&2; exit 2; }
}

gpu_setup_out() {
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  out="${OUT:-$tmp/out}"
  mkdir -p "$out"
}
