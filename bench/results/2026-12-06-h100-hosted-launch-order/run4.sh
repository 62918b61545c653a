#!/usr/bin/env bash
# GPU run 4 (diagnostic): is the hosted A=2 stall a false dependency between streams that share
# a hardware queue? CUDA_DEVICE_MAX_CONNECTIONS=32 (no sharing) vs 1 (all shared).
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run4.log") 2>&1
t0=$SECONDS
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
trap 'mps off' EXIT
mps on
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name"; timeout "$lim" "$@" >/tmp/$name.log 2>&1; local rc=$?; tail -${TAILN:-4} /tmp/$name.log; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests H6=0,0,0,0,0,0
st record_a2 40 "$R" -n 8 --timeout 35 -- "$T" hosted_record 2 100 20261221 /tmp/a2
st record_a4 40 "$R" -n 8 --timeout 35 -- "$T" hosted_record 4 100 20261222 /tmp/a4
CUDA_DEVICE_MAX_CONNECTIONS=32 RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st a2_conn32 40 "$R" -n 2 --timeout 35 -- "$T" hosted 2 100 20261221 /tmp/a2
CUDA_DEVICE_MAX_CONNECTIONS=32 RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 TAILN=6 st graph_a2_conn32 40 "$R" -n 2 --timeout 35 -- "$T" graph 10 10
RELAY_HELPER_DEVICES=0,0,0,0 RELAY_TIMEOUT=8 st a4_default 40 "$R" -n 4 --timeout 35 -- "$T" hosted 4 100 20261222 /tmp/a4
CUDA_DEVICE_MAX_CONNECTIONS=1 RELAY_HELPER_DEVICES=0,0,0,0 RELAY_TIMEOUT=8 st a4_conn1 40 "$R" -n 4 --timeout 35 -- "$T" hosted 4 100 20261222 /tmp/a4
CUDA_DEVICE_MAX_CONNECTIONS=2 RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st a2_conn2 40 "$R" -n 2 --timeout 35 -- "$T" hosted 2 100 20261221 /tmp/a2
mps off
echo "== done in $((SECONDS - t0)) s"
