#!/usr/bin/env bash
# GPU run 8: racecheck on helper processes (nothing hosted), as device_run.sh runs it: is the
# one-shot kernel's hazard hosted-specific?
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run8.log") 2>&1
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$B/relay-run T=$B/relay_ipc_tests
sanitized='case $RELAY_RANK in 0|3) exec compute-sanitizer --tool racecheck --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
export RELAY_TIMEOUT=120
timeout 150 "$R" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" property 10 7 > /tmp/rc8.log 2>&1; echo "exit $?"
grep -E "SUMMARY|calls over|FAILED" /tmp/rc8.log | head
grep -E "Race reported" /tmp/rc8.log | sed 's/(const relay[^)]*)//' | sort | uniq -c | head
timeout 150 "$R" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" hosted_record 2 40 20261221 /tmp/a2 > /tmp/rc8b.log 2>&1; echo "exit $?"
grep -E "SUMMARY|calls of|FAILED" /tmp/rc8b.log | head
grep -E "Race reported" /tmp/rc8b.log | sed 's/(const relay[^)]*)//' | sort | uniq -c | head
