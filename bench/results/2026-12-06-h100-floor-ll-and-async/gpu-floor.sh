#!/usr/bin/env bash
# The floors side by side on one GPU, 2 processes under MPS, bf16 allreduce 4 KiB..1 MiB (x4):
#   floor          the new default (ll up to 256 KiB, barrier above)
#   floor-barrier  the old floor (entry and exit barriers, inputs read in place)
#   floor-ll       ll at every size (up to its 1 MiB capacity): where ll stops paying, which
#                  sets ll_default_max (bench/tools/floor/floor_allreduce.hpp)
# each eager and replayed (--graph 20), relay's own calls beside them as always; then, where $B
# holds the floor program (bench/common.sh's floor_build), floor -a ll and -a barrier on its own.
#
#   B=/path/to/bins OUT=/path/to/logs bash out/gpu-floor.sh     (from anywhere)
#
# $B holds relay-bench and relay-run (LD_LIBRARY_PATH set by the caller). Logs: $OUT/<name>.log,
# $OUT/summary.txt (exit status and seconds of each run; 1 = a wrong element, 3 = failed,
# 124 = stopped at its 15 s). About 30-50 s, at most 57: later runs are skipped once 40 s have passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${B:?B: the folder of relay-bench and relay-run}"
OUT=${OUT:-$PWD/out/gpu-floor}
mkdir -p "$OUT"
source bench/common.sh  # mps
trap 'mps off' EXIT
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv >"$OUT/machine.txt" 2>&1
mps on
start=$SECONDS
: >"$OUT/summary.txt"
run() {  # NAME COMMAND...: one job of 2 processes, at most 15 s
  local name=$1 t0=$SECONDS rc
  shift
  if ((SECONDS - start >= 40)); then
    echo "$name skipped: $((SECONDS - start)) s already" | tee -a "$OUT/summary.txt"
    return
  fi
  "$B/relay-run" -n 2 --timeout 15 -- "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0)) s" | tee -a "$OUT/summary.txt"
}
bench() {  # NAME BASELINE [EXTRA...]
  local name=$1 baseline=$2
  shift 2
  run "$name" "$B/relay-bench" -x ipc -N 2 -A 2 -m single -r direct -C allreduce -d bfloat16 \
    -b 4K -e 1M -f 4 -n 200 -w 20 --baseline "$baseline" "$@"
}
bench floor-eager floor
bench floor-graph floor --graph 20
bench floor-barrier-eager floor-barrier
bench floor-barrier-graph floor-barrier --graph 20
bench floor-ll-eager floor-ll
bench floor-ll-graph floor-ll --graph 20
if [[ -x "$B/floor" ]]; then  # eager and replayed in one run each; the table names the algorithm
  run floor-program-ll "$B/floor" -A 2 -b 4K -e 1M -n 200 -g 20 -a ll
  run floor-program-barrier "$B/floor" -A 2 -b 4K -e 1M -n 200 -g 20 -a barrier
fi
mps off
echo "total $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
