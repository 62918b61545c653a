#!/usr/bin/env bash
# GPU run 5 (not part of the project): prebuilt sm_90 binaries in out/bin. Hosted helpers with
# every rank's launches made by order (and one lock on ipc handles): A=2 and A=4 with the default
# hardware queues and with one (CUDA_DEVICE_MAX_CONNECTIONS=1: every stream shares it), graphs,
# failures; relay-bench hosted against helper processes; helper processes unchanged (fp8 property).
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run5.log") 2>&1
date -u
t0=$SECONDS
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
trap 'mps off' EXIT
mps on
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >/tmp/$name.log 2>&1; local rc=$?; tail -${TAILN:-3} /tmp/$name.log; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests H6=0,0,0,0,0,0 H4=0,0,0,0
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 300 20261221 /tmp/a2
st record_a4 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 4 300 20261222 /tmp/a4
for c in default 1; do
  if [[ $c == default ]]; then unset CUDA_DEVICE_MAX_CONNECTIONS; else export CUDA_DEVICE_MAX_CONNECTIONS=$c; fi
  RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st a2_conn_$c 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 300 20261221 /tmp/a2
  RELAY_HELPER_DEVICES=$H4 RELAY_TIMEOUT=8 st a4_conn_$c 60 "$R" -n 4 --timeout 55 -- "$T" hosted 4 300 20261222 /tmp/a4
  RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 TAILN=4 st graph_a2_conn_$c 60 "$R" -n 2 --timeout 55 -- "$T" graph 10 10
  RELAY_HELPER_DEVICES=$H4 RELAY_TIMEOUT=8 TAILN=4 st graph_a4_conn_$c 60 "$R" -n 4 --timeout 55 -- "$T" graph 10 10
done
unset CUDA_DEVICE_MAX_CONNECTIONS
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=10 TAILN=4 st hosted_exited 30 "$R" -n 2 --timeout 25 -- "$T" exited
RELAY_HELPER_DEVICES=$H6 TAILN=2 st hosted_bad_device 20 "$R" -n 2 --timeout 15 -- "$T" hosted_bad_device
st fp8_property_8 90 "$R" -n 8 --timeout 85 -- "$T" property_fp8 300
hb=(-x ipc -C all -A 2 -m single -d bfloat16 -b 64K -e 16M -f 4 -n 20 -w 2 --baseline none)
st bench_hosted_a2 60 "$R" -n 2 --timeout 55 -- "$B/relay-bench" "${hb[@]}" --helper-devices $H6
st bench_helpers_8 60 "$R" -n 8 --timeout 55 -- "$B/relay-bench" "${hb[@]}"
cp /tmp/bench_hosted_a2.log /tmp/bench_helpers_8.log "$OUT/"
mps off
echo "== done in $((SECONDS - t0)) s"
