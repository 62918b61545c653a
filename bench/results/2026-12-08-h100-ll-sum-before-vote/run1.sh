#!/usr/bin/env bash
# GPU call 1 of this record (not part of the project): the ll kernel's arguments warmed in the
# constant cache before its wait for the kernel ahead, and the first vector's sum taken before the
# vote, each alone and together (RELAY_IPC_LL_VARIANT 0-3 of the experiment build out/wm: bit 1
# warm, bit 2 sum before the vote; bf16 kernels of 2 and 8 members), against the ll floor, warmed
# or not (RELAY_BENCH_FLOOR_WARM); the device trace of relay and of the floor; the SASS of the
# pair kernel's start; the suites, tests/python/test_gpu.py whole and racecheck on variant 3. Cut
# to the session's device time left.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
tar -xJf out/pack-wm.tar.xz -C out || exit 1
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
W=$PWD/out/wm
export LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
source bench/common.sh
trap 'mps off' EXIT
mkdir -p "$OUT/l"
R=$W/relay-run T=$W/relay_ipc_tests LIMIT=${LIMIT:-570}
k=_ZN5relay3ipc13ipc_ll_kernelINS_8bfloat16ELj2ELi
for v in 0 1; do
  cuobjdump -sass -fun "${k}${v}EEEvNS0_6ipc_llENS0_9ipc_peersENS0_7ipc_envE" "$W/relay-bench" \
    >"$OUT/l/sass_v$v.txt" 2>&1
  echo "== sass v$v: $(grep -c . "$OUT/l/sass_v$v.txt") lines; its first 40 instructions:"
  grep -E "^ +/\*[0-9a-f]{4}\*/" "$OUT/l/sass_v$v.txt" | head -40 | cut -c1-90
done
mps on
floor() {  # NAME [EXTRA...]
  local name=$1; shift
  ((SECONDS < LIMIT - 60)) || { echo "== $name: skipped (call time)"; return 0; }
  step "$name" 40 "$R" -n 2 --timeout 35 -- "$W/relay-bench" -x ipc -N 2 -A 2 -m single \
    -r direct -C allreduce -d bfloat16 -b 4K -e 256K -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
for pass in 1 2; do
  ((pass == 2 && SECONDS > LIMIT / 3)) && { echo "== pass 2: skipped (call time)"; break; }
  for how in graph eager; do
    extra=(); [[ $how == graph ]] && extra=(--graph 20)
    for v in 0 1 2 3; do
      RELAY_IPC_LL_VARIANT=$v floor v${v}_${how}_$pass "${extra[@]}"
    done
    RELAY_IPC_LL_VARIANT=3 RELAY_BENCH_FLOOR_WARM=1 floor v3fw_${how}_$pass "${extra[@]}"
  done
done
for v in 0 1; do
  RELAY_IPC_LL_VARIANT=$v RELAY_IPC_EARLY_LAUNCH=0 RELAY_BENCH_FLOOR_EARLY_LAUNCH=0 \
    floor v${v}ord_graph_1 --graph 20
done
for v in 0 3; do
  ((SECONDS < LIMIT - 120)) || break
  RELAY_IPC_LL_VARIANT=$v step v${v}_a4_graph_1 60 "$R" -n 8 --timeout 55 -- "$W/relay-bench" \
    -x ipc -N 8 -A 4 -m fused -r direct -C allreduce -d bfloat16 -b 4K -e 64K -f 4 -n 200 -w 20 \
    --baseline floor-ll --graph 20
done
for f in "$OUT"/l/*_graph_* "$OUT"/l/*_eager_*; do
  echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220
done
for b in 4096 65536; do
  ((SECONDS < LIMIT - 100)) || break
  for v in 0 3; do
    RELAY_IPC_LL_VARIANT=$v TAILN=4 step trace_v${v}_$b 30 "$R" -n 2 --timeout 25 -- \
      "$W/relay_ipc_tests_trace" trace $b
  done
done
floor_trace() {  # NAME
  TAILN=12 step "$1" 40 "$R" -n 2 --timeout 35 -- "$W/floor-trace" -b 4K -e 64K -n 100 -g 20 -a ll
}
if ((SECONDS < LIMIT - 100)); then
  floor_trace floor_trace_w0
  RELAY_BENCH_FLOOR_WARM=1 floor_trace floor_trace_w1
fi
export RELAY_IPC_LL_VARIANT=3
if ((SECONDS < LIMIT - 200)); then
  SUITE_TAG=v3 ipc_suites "$R" "$T"
  echo "== suites: $? failed"
else
  echo "== suites: skipped (call time)"
fi
t=$SECONDS
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 RELAY_C_LIBRARY_DIR=$W PYTHONPATH=$PWD/python \
  timeout $((LIMIT - 90 - SECONDS)) python3 -m pytest -p no:cacheprovider -v -rs \
  tests/python/test_gpu.py >"$OUT/l/test_gpu.log" 2>&1
echo "== test_gpu.py: exit $?, $((SECONDS - t)) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/l/test_gpu.log" | cut -c1-200 | tail -16
mps off
one="case \$RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --error-exitcode 9 \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
if ((SECONDS > LIMIT - 50)); then
  echo "== racecheck property: skipped (call time)"
else
  echo "== racecheck property"
  RELAY_TIMEOUT=60 timeout $((LIMIT - 15 - SECONDS)) "$R" -n 2 --timeout 140 -- \
    bash -c "$one" "$T" property 30 7 >"$OUT/l/racecheck_property.log" 2>&1
  echo "exit $?"
  grep -E "SUMMARY|every output|error" "$OUT/l/racecheck_property.log" | sort | uniq -c | head -4
fi
(cd "$OUT" && tar -czf run1.tgz l && rm -rf l)
echo "== done in $SECONDS s"
