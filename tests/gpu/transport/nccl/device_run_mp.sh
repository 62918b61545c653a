#!/usr/bin/env bash
# relay-bench -x nccl as a multi-process job under relay-run (one process per GPU) against NCCL's
# own collectives in the same processes, the same on the fp8 wire (multi-process and threaded),
# the nccl transport's property run again, and an A/B of NCCL's point-to-point settings on the
# threaded form. Logs go to $OUT (default ./gpu-run).
#
#   tests/gpu/transport/nccl/device_run_mp.sh BIN   BIN: relay-bench, relay-run, relay_nccl_tests (sm_90)
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-$PWD/gpu-run}
mkdir -p "$OUT"
BIN=$1
export NCCL_NVLS_ENABLE=0  # the machine's rule: no NVLink multicast
lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
[[ -n "$lib" ]] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$OUT/machine.txt" 2>&1
gpus=$(nvidia-smi -L | wc -l)
topo=${RELAY_TOPOLOGY:-switched:363.3:13.59:0.00}  # 2 x H200 calibration, 2026-11-29
status=0
sweep=(--baseline nccl -t "$topo" -n 10 -w 3)

echo "== relay-run -n $gpus -- relay-bench -x nccl (A = N, direct)"
cmd=("$BIN/relay-run" -n "$gpus" --timeout 120 -- "$BIN/relay-bench" -x nccl -N "$gpus" -A "$gpus"
  -r direct -m single -C all -b 4K -e 256M -f 4 "${sweep[@]}")
echo "\$ ${cmd[*]}" >"$OUT/bench-mp.txt"
timeout 300 "${cmd[@]}" >>"$OUT/bench-mp.txt" 2>&1 || status=1
grep -vE "^\[1\]|^#   " "$OUT/bench-mp.txt" | tail -52

echo "== relay-bench -x nccl --wire fp8 (forced at every size), multi-process and threaded"
fp8=(-N "$gpus" -A "$gpus" -r direct -m single -C allreduce,reduce-scatter,all-gather -b 4K -e 64M
  -f 8 --wire fp8 --wire-threshold 0 -d bfloat16 "${sweep[@]}")
cmd=("$BIN/relay-run" -n "$gpus" --timeout 120 -- "$BIN/relay-bench" -x nccl "${fp8[@]}")
echo "\$ ${cmd[*]}" >"$OUT/bench-mp-fp8.txt"
timeout 300 "${cmd[@]}" >>"$OUT/bench-mp-fp8.txt" 2>&1 || status=1
grep -vE "^\[1\]|^#   " "$OUT/bench-mp-fp8.txt" | tail -30
timeout 300 "$BIN/relay-bench" -x nccl "${fp8[@]}" >"$OUT/bench-fp8.txt" 2>&1 || status=1
grep -vE "^#   " "$OUT/bench-fp8.txt" | tail -30

echo "== nccl transport: property run"
timeout 120 "$BIN/relay_nccl_tests" >"$OUT/nccl-tests.log" 2>&1 || status=1
grep -E "property run|passed|failed" "$OUT/nccl-tests.log" | tail -3

echo "== A/B of NCCL's p2p settings (threaded -x nccl, allreduce and all-to-all, 16-256 MB)"
for v in "" "NCCL_MIN_P2P_NCHANNELS=32" "NCCL_P2P_NVL_CHUNKSIZE=2097152" \
  "NCCL_MIN_P2P_NCHANNELS=32 NCCL_P2P_NVL_CHUNKSIZE=2097152"; do
  echo "## env: ${v:-default}" >>"$OUT/ab.txt"
  env $v timeout 100 "$BIN/relay-bench" -x nccl -N "$gpus" -A "$gpus" -r direct -m single \
    -C allreduce,all-to-all -b 16M -e 256M -f 4 "${sweep[@]}" >>"$OUT/ab.txt" 2>&1 || status=1
done
grep -E "^## env|^ +[0-9]" "$OUT/ab.txt"
exit $status
