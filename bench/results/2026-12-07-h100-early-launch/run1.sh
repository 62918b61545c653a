#!/usr/bin/env bash
# GPU call of this record (not part of the project). Three trees, carried as packs (out/, built on
# the development container): out/el, the ll kernel launched early or not (RELAY_IPC_EARLY_LAUNCH)
# and the floor's likewise (RELAY_BENCH_FLOOR_EARLY_LAUNCH: 1 once its waits are done, 2 at its
# start); out/sw, every relaxed load and store of a peer's word at system scope; out/cp, main's
# kernels. (1) relay against the ll floor, 2 processes, eager and replayed, three passes, every
# variant in turn; 8 processes in groups of 4, replayed; (2) the device trace, early and not;
# (3) the suites and failure scenarios, early (el) and with system-scope words (sw); (4)
# tests/python/test_gpu.py's subset on this tree's Python; relay.torch per call, main 75dcf0b's
# Python (out/py-main) against this tree's; (5) racecheck on rank 0 of 2, early.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
for p in el sw cp; do tar -xJf out/pack-$p.tar.xz -C out || exit 1; done
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
E=$PWD/out/el S=$PWD/out/sw C=$PWD/out/cp
export LD_LIBRARY_PATH=$E:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
source bench/common.sh
trap 'mps off' EXIT
mkdir -p "$OUT/l"
R=$E/relay-run LIMIT=${LIMIT:-570}
mps on
floor() {  # NAME DIR EARLY FLOOR_EARLY [EXTRA...]
  local name=$1 dir=$2 early=$3 floor_early=$4; shift 4
  RELAY_IPC_EARLY_LAUNCH=$early RELAY_BENCH_FLOOR_EARLY_LAUNCH=$floor_early \
    step "$name" 40 "$R" -n 2 --timeout 35 -- "$dir/relay-bench" -x ipc -N 2 -A 2 -m single \
    -r direct -C allreduce -d bfloat16 -b 4K -e 256K -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
for pass in 1 2 3; do
  for how in graph eager; do
    extra=(); [[ $how == graph ]] && extra=(--graph 20)
    floor el0_${how}_$pass "$E" 0 0 "${extra[@]}"
    floor el1_${how}_$pass "$E" 1 1 "${extra[@]}"
    floor el1f0_${how}_$pass "$E" 1 0 "${extra[@]}"
    floor el0f2_${how}_$pass "$E" 0 2 "${extra[@]}"
    floor sw_${how}_$pass "$S" 0 0 "${extra[@]}"
    floor cp_${how}_$pass "$C" 0 0 "${extra[@]}"
  done
done
floor8() {  # NAME DIR EARLY FLOOR_EARLY
  RELAY_IPC_EARLY_LAUNCH=$3 RELAY_BENCH_FLOOR_EARLY_LAUNCH=$4 \
    step "$1" 60 "$R" -n 8 --timeout 55 -- "$2/relay-bench" -x ipc -N 8 -A 4 -m fused -r direct \
    -C allreduce -d bfloat16 -b 4K -e 64K -f 4 -n 200 -w 20 --baseline floor-ll --graph 20
}
for pass in 1 2; do
  floor8 el0_a4_graph_$pass "$E" 0 0
  floor8 el1_a4_graph_$pass "$E" 1 1
  floor8 sw_a4_graph_$pass "$S" 0 0
done
for f in "$OUT"/l/*_graph_* "$OUT"/l/*_eager_*; do
  echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220
done
for b in 4096 65536; do
  for early in 0 1; do
    RELAY_IPC_EARLY_LAUNCH=$early TAILN=4 step trace_el${early}_$b 30 "$R" -n 2 --timeout 25 -- \
      "$E/relay_ipc_tests_trace" trace $b
  done
done
suites() {  # TAG DIR: the suites and failure scenarios of one tree
  local tag=$1 T=$2/relay_ipc_tests
  step property_2_$tag 60 "$R" -n 2 --timeout 55 -- "$T" property 400
  step property_8_$tag 90 "$R" -n 8 --timeout 85 -- "$T" property 200
  for s in late refused refuse_plan refuse_early mismatch stall; do
    RELAY_TIMEOUT=2 step ${s}_2_$tag 30 "$R" -n 2 --timeout 25 -- "$T" $s
  done
  for s in refused mismatch late; do
    RELAY_TIMEOUT=2 step ${s}_8_$tag 40 "$R" -n 8 --timeout 35 -- "$T" $s
  done
  step graph_2_$tag 60 "$R" -n 2 --timeout 55 -- "$T" graph 20 10
  step graph_8_$tag 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
  step unaligned_2_$tag 60 "$R" -n 2 --timeout 55 -- "$T" unaligned
  step record_a2_$tag 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
  RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=8 step hosted_a2_$tag 60 "$R" -n 2 --timeout 55 -- \
    "$T" hosted 2 150 20261221 /tmp/a2
  rm -f /tmp/a2.*
}
RELAY_IPC_EARLY_LAUNCH=1 suites el "$E"
suites sw "$S"
t=$SECONDS
RELAY_IPC_EARLY_LAUNCH=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 RELAY_C_LIBRARY_DIR=$E \
  PYTHONPATH=$PWD/python timeout 150 python3 -m pytest -p no:cacheprovider -v -rs \
  tests/python/test_gpu.py -k "operation_stream or reused_before or each_method_captured or failed_calls or random_calls" \
  >"$OUT/l/test_gpu.log" 2>&1
echo "== test_gpu.py (early): exit $?, $((SECONDS - t)) s"
grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/l/test_gpu.log" | cut -c1-200 | tail -14
# run-trees wants a build folder with tools/relay-run and capi/.
mkdir -p out/b/tools out/b/capi && cp "$R" out/b/tools/ && cp "$E/librelay_c_cuda.so" out/b/capi/
if ((SECONDS < LIMIT - 200)); then
  CALL_COST_ARGS="--device cuda --bytes 4096 --calls 5000 --warmup 200 --what sync,async,torchcomms,fused" \
    timeout 120 bench/tools/call-cost/run-trees out/b 2 "$PWD/out/py-main/python" "$PWD/python" \
    >"$OUT/l/trees.log" 2>&1
  echo "== run-trees: exit $?"
  sed -n '/^== over/,$p' "$OUT/l/trees.log"
fi
mps off
one="case \$RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --error-exitcode 9 \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
for what in "property 30 7" "refused"; do
  ((SECONDS > LIMIT - 60)) && { echo "== racecheck $what: skipped (call time)"; continue; }
  echo "== racecheck $what (early)"
  RELAY_IPC_EARLY_LAUNCH=1 RELAY_TIMEOUT=60 timeout $((LIMIT - 20 - SECONDS)) "$R" -n 2 --timeout 140 -- \
    bash -c "$one" "$E/relay_ipc_tests" $what >"$OUT/l/racecheck_${what%% *}.log" 2>&1
  echo "exit $?"
  grep -E "SUMMARY|every output" "$OUT/l/racecheck_${what%% *}.log" | head -3
done
(cd "$OUT" && tar -czf run1.tgz l && rm -rf l)
echo "== done in $SECONDS s"
