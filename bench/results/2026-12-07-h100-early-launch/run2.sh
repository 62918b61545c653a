#!/usr/bin/env bash
# GPU call 2 of this record (not part of the project): the tree as it lands (out/fl: the ll kernel
# and the floor launched early by default, system-scope words) against main 2d1c7b8's kernels
# (out/cp, whose floor launches the ordinary way; cb3abe5's pair kernel is the same byte for
# byte): relay against the ll floor, 2 processes, eager and replayed, two passes, with out/fl
# launching the ordinary way beside them (RELAY_IPC_EARLY_LAUNCH=0
# RELAY_BENCH_FLOOR_EARLY_LAUNCH=0); 8 processes in groups of 4; the device trace; the suites and
# failure scenarios; tests/python/test_gpu.py's subset of run 1; racecheck on rank 0 of 2. Cut to
# the session's device time left.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
for p in fl cp; do tar -xJf out/pack-$p.tar.xz -C out || exit 1; done
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
F=$PWD/out/fl C=$PWD/out/cp
export LD_LIBRARY_PATH=$F:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
source bench/common.sh
trap 'mps off' EXIT
mkdir -p "$OUT/l"
R=$F/relay-run T=$F/relay_ipc_tests LIMIT=${LIMIT:-570}
mps on
floor() {  # NAME DIR [EXTRA...]
  local name=$1 dir=$2; shift 2
  step "$name" 40 "$R" -n 2 --timeout 35 -- "$dir/relay-bench" -x ipc -N 2 -A 2 -m single \
    -r direct -C allreduce -d bfloat16 -b 4K -e 256K -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
for pass in 1 2; do
  for how in graph eager; do
    extra=(); [[ $how == graph ]] && extra=(--graph 20)
    floor fl_${how}_$pass "$F" "${extra[@]}"
    RELAY_IPC_EARLY_LAUNCH=0 RELAY_BENCH_FLOOR_EARLY_LAUNCH=0 floor fl0_${how}_$pass "$F" "${extra[@]}"
    floor cp_${how}_$pass "$C" "${extra[@]}"
  done
done
floor8() {  # NAME DIR
  step "$1" 60 "$R" -n 8 --timeout 55 -- "$2/relay-bench" -x ipc -N 8 -A 4 -m fused -r direct \
    -C allreduce -d bfloat16 -b 4K -e 64K -f 4 -n 200 -w 20 --baseline floor-ll --graph 20
}
floor8 fl_a4_graph_1 "$F"
floor8 cp_a4_graph_1 "$C"
for f in "$OUT"/l/*_graph_* "$OUT"/l/*_eager_*; do
  echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220
done
for b in 4096 65536; do
  TAILN=4 step trace_fl_$b 30 "$R" -n 2 --timeout 25 -- "$F/relay_ipc_tests_trace" trace $b
done
ipc_suites "$R" "$T"
echo "== suites: $? failed"
t=$SECONDS
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 RELAY_C_LIBRARY_DIR=$F PYTHONPATH=$PWD/python timeout 150 \
  python3 -m pytest -p no:cacheprovider -v -rs tests/python/test_gpu.py \
  -k "operation_stream or reused_before or each_method_captured or failed_calls or random_calls" \
  >"$OUT/l/test_gpu.log" 2>&1
echo "== test_gpu.py: exit $?, $((SECONDS - t)) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/l/test_gpu.log" | cut -c1-200 | tail -14
mps off
one="case \$RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --error-exitcode 9 \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
for what in "property 30 7" "unaligned"; do
  ((SECONDS > LIMIT - 60)) && { echo "== racecheck $what: skipped (call time)"; continue; }
  echo "== racecheck $what"
  RELAY_TIMEOUT=60 timeout $((LIMIT - 20 - SECONDS)) "$R" -n 2 --timeout 140 -- \
    bash -c "$one" "$T" $what >"$OUT/l/racecheck_${what%% *}.log" 2>&1
  echo "exit $?"
  grep -E "SUMMARY|every output|error" "$OUT/l/racecheck_${what%% *}.log" | sort | uniq -c | head -4
done
(cd "$OUT" && tar -czf run2.tgz l && rm -rf l)
echo "== done in $SECONDS s"
