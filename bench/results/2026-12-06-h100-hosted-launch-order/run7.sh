#!/usr/bin/env bash
# GPU run 7 (not part of the project): compute-sanitizer on hosted helpers (2 processes hosting
# 6 helpers; process 0 sanitized, so its 4 ranks' kernels are), without MPS, as
# tests/gpu/transport/ipc/device_run.sh runs its sanitizers.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run7.log") 2>&1
date -u
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name"; timeout "$lim" "$@" >/tmp/$name.log 2>&1; local rc=$?; tail -${TAILN:-4} /tmp/$name.log; echo "-- $name: exit $rc, $((SECONDS - t)) s"; cp /tmp/$name.log "$OUT/" 2>/dev/null; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests
trap 'mps off' EXIT
mps on
st record_a2 40 "$R" -n 8 --timeout 35 -- "$T" hosted_record 2 40 20261221 /tmp/a2
mps off
sanitized='case $RELAY_RANK in 0) exec compute-sanitizer --tool "$1" --error-exitcode 9 "$0" "${@:2}";; *) exec "$0" "${@:2}";; esac'
export RELAY_TIMEOUT=120 RELAY_HELPER_DEVICES=0,0,0,0,0,0
TAILN=8 st memcheck_hosted_a2 150 "$R" -n 2 --timeout 140 -- bash -c "$sanitized" "$T" memcheck hosted 2 40 20261221 /tmp/a2
TAILN=8 st racecheck_hosted_a2 90 "$R" -n 2 --timeout 80 -- bash -c "$sanitized" "$T" racecheck hosted 2 10 20261221 /tmp/a2
TAILN=8 st memcheck_graph_a2 100 "$R" -n 2 --timeout 90 -- bash -c "$sanitized" "$T" memcheck graph 3 3
echo "== done"
