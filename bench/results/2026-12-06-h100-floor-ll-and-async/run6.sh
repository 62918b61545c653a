#!/usr/bin/env bash
# GPU run 6 (not part of the project): the new floor beside the old and relay (relay-bench), and
# relay.torch's per-call cost with async calls in the library (call_cost), the async tests on CUDA.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run6.log") 2>&1
date -u
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=/tmp/floor bash out/gpu/gpu-floor.sh
for f in /tmp/floor/*-eager.log /tmp/floor/*-graph.log; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-200; done
OUT=/tmp/pyhost bash out/gpu/gpu-pyhost.sh
tar -czf "$OUT/run6-logs.tgz" -C /tmp floor pyhost
echo "== done"
