#!/usr/bin/env bash
# GPU run 17 (not part of the project): main's ll kernel (913fe0e) through relay-bench only
# (checked outputs, eager and replayed, 2 processes), against the ll floor.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
trap 'mps off' EXIT
mps on
for g in 0 20; do
  extra=(); ((g)) && extra=(--graph $g)
  timeout 25 "$B/relay-run" -n 2 --timeout 20 -- "$B/relay-bench" -x ipc -N 2 -A 2 -m single -r direct -C allreduce -d bfloat16 -b 4K -e 1M -f 4 -n 200 -w 20 --baseline floor-ll "${extra[@]}" 2>&1 | grep -E "^\[0\] +[0-9]|wrong" | cut -c1-200
  echo "graph $g: exit ${PIPESTATUS[0]}"
done
timeout 25 "$B/relay-run" -n 8 --timeout 20 -- "$B/relay-bench" -x ipc -N 8 -A 2 -m fused -r direct -C allreduce -d float32 -b 4K -e 256K -f 4 -n 50 -w 5 --baseline none 2>&1 | grep -E "wrong" ; echo "8 fused: exit ${PIPESTATUS[0]}"
