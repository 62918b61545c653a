#!/usr/bin/env bash
# GPU call 9 of 2026-12-07 (not part of the project): run8's binaries and script; the sweep eager
# and as graph replays (MESH_IPC_GRAPH=10), alternated twice, every one with the script's own
# latencies (step 3b, graph-replayed) from the fixed base topology.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack6.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2; do
  MESH_IPC_PREBUILT=out/bin MESH_IPC_TOPOLOGY=mesh:12:4.39:0.08:2864 bench/mesh-emulate-ipc "$OUT/eager$pass" 12
  MESH_IPC_GRAPH=10 MESH_IPC_PREBUILT=out/bin MESH_IPC_TOPOLOGY=mesh:12:4.39:0.08:2864 bench/mesh-emulate-ipc "$OUT/graph$pass" 12
done
cd "$OUT" && tar -czf run9.tgz eager1 graph1 eager2 graph2 && rm -rf eager1 graph1 eager2 graph2
