#!/usr/bin/env bash
# GPU run 20 (not part of the project): the ll kernel with the vote read by thread 0 alone
# (relay_ipc_tests built with -lineinfo: out/bin/relay_ipc_tests_line): racecheck, then the
# suites it touches, 2 and 8 processes under MPS.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run20.log") 2>&1
date -u
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
trap 'mps off' EXIT
R=$B/relay-run T=$B/relay_ipc_tests_line
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --racecheck-report all --print-limit 40 --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for what in "property 30 7" "refused" "mismatch"; do
  echo "== racecheck $what"
  RELAY_TIMEOUT=120 timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" $what > /tmp/rc.log 2>&1; echo "exit $?"
  grep -E "Race reported|Read Thread|Write Thread|SUMMARY" /tmp/rc.log | sort | uniq -c | sort -rn | head -12
done
one=${one/racecheck --racecheck-report all --print-limit 40/memcheck}
echo "== memcheck property 30 7"
RELAY_TIMEOUT=120 timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" property 30 7 2>&1 | grep -E "SUMMARY|every output"
mps on
st() { local name=$1 lim=$2; shift 2; echo "== $name"; timeout "$lim" "$@" 2>&1 | tail -1 | cut -c1-200; echo "-- exit ${PIPESTATUS[0]}"; }
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused refuse_plan refuse_early mismatch stall; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
RELAY_TIMEOUT=2 st refused_8 40 "$R" -n 8 --timeout 35 -- "$T" refused
st graph_8 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
st unaligned_2 60 "$R" -n 2 --timeout 55 -- "$T" unaligned
mps off
