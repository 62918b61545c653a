#!/usr/bin/env bash
# GPU run 19 (not part of the project): racecheck of the ll kernel with line information
# (relay_ipc_tests built with -lineinfo: out/bin/relay_ipc_tests_line), 2 processes.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run19.log") 2>&1
date -u
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$B/relay-run T=$B/relay_ipc_tests_line
export RELAY_TIMEOUT=120
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --racecheck-report all --print-limit 40 --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for what in "property 30 7" "refused"; do
  echo "== racecheck $what"
  timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" $what > /tmp/rc.log 2>&1; echo "exit $?"
  grep -E "Race reported|Write access|Read access|^\[0\] =========     at |ll.hpp|kernels.hpp|block_vote|SUMMARY" /tmp/rc.log | sort | uniq -c | sort -rn | head -40
done
