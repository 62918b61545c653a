#!/usr/bin/env bash
# pyhost branch on one GPU (about 110 s): relay.torch's per-call host cost of the sync, async,
# torchcomms and fused forms (call_cost.py, 2 processes, 4 KB bf16, then 20 sync calls captured
# and replayed), and test_gpu.py's tests of async work on CUDA (the operation stream, held
# tensors, each torchcomms method captured, failed calls), all under MPS.
#
#   B=/path/to/prebuilt OUT=/path/to/logs bash out/gpu-pyhost.sh
#
# $B holds librelay_c_cuda.so built from this branch (capi/ of a RELAY_GPU=CUDA build) and, where
# it has one, relay-run (else $B/tools/relay-run, relay-run on PATH, or torchrun). Logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${B:?set B to the folder holding librelay_c_cuda.so}"
out=${OUT:-/tmp/relay-pyhost}
mkdir -p "$out"
export RELAY_C_LIBRARY_DIR=$B PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 RELAY_TIMEOUT=60
# shellcheck source=bench/common.sh
source bench/common.sh
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  git log --oneline -1
} >"$out/machine.txt" 2>&1
run=()
for r in "$B/relay-run" "$B/tools/relay-run" "$(command -v relay-run)"; do
  [[ -n $r && -x $r ]] && run=("$r" -n 2 --timeout 60 --) && break
done
((${#run[@]})) || run=(python3 -m torch.distributed.run --nproc-per-node 2)
trap 'mps off' EXIT
mps on
rc=0
t0=$SECONDS
# The C ABI's baseline on the same card, where $B has c_loop_cuda (bench/tools/call-cost/run-gpu).
for c_loop in "$B/c_loop_cuda" "$B/../c_loop_cuda"; do
  [[ -x $c_loop && ${run[0]} != python3 ]] || continue
  timeout 20 "${run[@]}" "$c_loop" 4096 3000 200 prepared >"$out/c_loop_prepared_4096.log" 2>&1 ||
    rc=1
  grep -E 'c_loop' "$out/c_loop_prepared_4096.log" | sed 's/^\[0\] //' | head -3
  break
done
timeout 45 "${run[@]}" python3 bench/tools/call-cost/call_cost.py --device cuda --bytes 4096 \
  --calls 3000 --warmup 200 --what sync,async,torchcomms,fused --graph 20 \
  >"$out/call_cost_4096.log" 2>&1 || rc=1
grep -E 'call_cost' "$out/call_cost_4096.log" | sed 's/^\[0\] //'
echo "== call_cost: $((SECONDS - t0)) s, rc $rc"
t1=$SECONDS
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 timeout 70 python3 -m pytest -p no:cacheprovider -q -rs \
  -k "reused_before or operation_stream or each_method_captured or failed_calls" \
  tests/python/test_gpu.py >"$out/test_gpu.log" 2>&1 || rc=1
tail -15 "$out/test_gpu.log"
echo "== test_gpu: $((SECONDS - t1)) s; done in $((SECONDS - t0)) s, exit $rc"
exit $rc
