#!/usr/bin/env bash
# GPU run 9: racecheck after the one-shot kernel's verdict words by stage parity; the suites again.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run9.log") 2>&1
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$B/relay-run T=$B/relay_ipc_tests
source bench/common.sh
trap 'mps off' EXIT
mps on
timeout 60 "$R" -n 8 --timeout 55 -- "$T" property 300 > /tmp/p8.log 2>&1; echo "property 8: exit $?"; tail -1 /tmp/p8.log
timeout 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 100 20261221 /tmp/a2 > /tmp/r.log 2>&1; echo "record: exit $?"
RELAY_HELPER_DEVICES=0,0,0,0,0,0 timeout 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 100 20261221 /tmp/a2 > /tmp/h.log 2>&1; echo "hosted a2: exit $?"; tail -1 /tmp/h.log
RELAY_HELPER_DEVICES=0,0,0,0,0,0 timeout 60 "$R" -n 2 --timeout 55 -- "$T" graph 10 10 > /tmp/g.log 2>&1; echo "graph a2: exit $?"; grep "graph test:" /tmp/g.log | head -1
timeout 60 "$R" -n 8 --timeout 55 -- "$T" refused > /tmp/rf.log 2>&1; echo "refused: exit $?"; tail -2 /tmp/rf.log
mps off
export RELAY_TIMEOUT=120
timeout 40 "$R" -n 8 --timeout 35 -- "$T" hosted_record 2 40 20261221 /tmp/a40 > /dev/null 2>&1
sanitized='case $RELAY_RANK in 0|3) exec compute-sanitizer --tool racecheck --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
timeout 150 "$R" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" property 10 7 > /tmp/rc8.log 2>&1; echo "racecheck property 8: exit $?"
grep -E "SUMMARY|calls over|FAILED" /tmp/rc8.log | head -4
sanitized0='case $RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
RELAY_HELPER_DEVICES=0,0,0,0,0,0 timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$sanitized0" "$T" hosted 2 40 20261221 /tmp/a40 > /tmp/rch.log 2>&1; echo "racecheck hosted a2: exit $?"
grep -E "SUMMARY|calls of|FAILED" /tmp/rch.log | head -4
grep -E "Race reported" /tmp/rc8.log /tmp/rch.log | sed 's/(const relay[^)]*)//' | sort | uniq -c | head
cp /tmp/rc8.log /tmp/rch.log "$OUT/"
