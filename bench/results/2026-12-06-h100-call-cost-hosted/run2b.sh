#!/usr/bin/env bash
# GPU run 2b (not part of the project): binaries built on the development container for sm_90
# (out/bin), no build here. Failed calls and the torchcomms suite on CUDA tensors; a small call's
# cost (relay and the floor side by side, C ABI, relay.torch); hosted helpers on device 0.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run2b.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$SECONDS
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:$PWD/tests/python PYTHONUNBUFFERED=1 RELAY_C_LIBRARY_DIR=$B
source bench/common.sh
trap 'mps off' EXIT
mps on
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name"; timeout "$lim" "$@" >"$OUT/$name.log" 2>&1; local rc=$?; grep -v "Warning\|warnings.warn" "$OUT/$name.log" | tail -${TAILN:-6}; echo "-- $name: exit $rc, $((SECONDS - t)) s"; }
ex() { if ((SECONDS - t0 > ${LIMIT:-235})); then echo "== $1: skipped (time)"; return; fi; st "$@"; }
R=$B/relay-run T=$B/relay_ipc_tests
# Failed calls and the torchcomms suite on CUDA tensors (8 processes, 12% of the SMs each).
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 TAILN=12 ex pytest_cuda 100 python3 -m pytest -p no:cacheprovider -v -rs -k "torchcomms or deferred" tests/python/test_gpu.py
# A small call: relay and the floor in the same processes, timed as nccl-tests does.
bench=(-x ipc -N 2 -A 2 -m single -r direct -C allreduce -d bfloat16 -b 4K -e 1M -f 4 -n 200 -w 20 --baseline floor)
TAILN=14 ex bench_eager 40 "$R" -n 2 --timeout 35 -- "$B/relay-bench" "${bench[@]}"
TAILN=14 ex bench_graph 40 "$R" -n 2 --timeout 35 -- "$B/relay-bench" "${bench[@]}" --graph 20
# Hosted helpers: 2 processes hosting ranks 2-7 on device 0, bit for bit against helper processes.
ex hosted_record_a2 50 "$R" -n 8 --timeout 45 -- "$T" hosted_record 2 100 20261221 "$OUT/hosted_ipc_a2"
RELAY_HELPER_DEVICES=0,0,0,0,0,0 ex hosted_a2 50 "$R" -n 2 --timeout 45 -- "$T" hosted 2 100 20261221 "$OUT/hosted_ipc_a2"
RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=10 TAILN=9 ex hosted_exited 30 "$R" -n 2 --timeout 25 -- "$T" exited
TAILN=4 ex hosted_bad_device 20 "$R" -n 2 --timeout 15 -- "$T" hosted_bad_device
# The C ABI and relay.torch per call.
for entry in call prepared; do
  TAILN=4 ex "c_loop_${entry}_4096" 30 "$R" -n 2 --timeout 25 -- "$B/c_loop_cuda" 4096 20000 500 "$entry"
done
TAILN=12 ex call_cost_4096 60 "$R" -n 2 --timeout 55 -- python3 bench/tools/call-cost/call_cost.py \
  --device cuda --bytes 4096 --calls 3000 --warmup 200 --what sync,async,torchcomms,fused --graph 20
hb=(-x ipc -C all -A 2 -m single -d bfloat16 -b 64K -e 4M -f 8 -n 20 -w 2 --baseline none)
TAILN=14 ex hosted_bench2 40 "$R" -n 2 --timeout 35 -- "$B/relay-bench" "${hb[@]}" --helper-devices 0,0,0,0,0,0
TAILN=14 ex helpers_bench8 40 "$R" -n 8 --timeout 35 -- "$B/relay-bench" "${hb[@]}"
ex hosted_record_a4 50 "$R" -n 8 --timeout 45 -- "$T" hosted_record 4 100 20261222 "$OUT/hosted_ipc_a4"
RELAY_HELPER_DEVICES=0,0,0,0 ex hosted_a4 50 "$R" -n 4 --timeout 45 -- "$T" hosted 4 100 20261222 "$OUT/hosted_ipc_a4"
RELAY_HELPER_DEVICES=0,0,0,0,0,0 ex hosted_graph_a2 40 "$R" -n 2 --timeout 35 -- "$T" graph 10 10
mps off
echo "== done in $((SECONDS - t0)) s"
