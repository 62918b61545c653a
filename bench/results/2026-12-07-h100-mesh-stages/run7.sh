#!/usr/bin/env bash
# GPU call 7 of 2026-12-07 (not part of the project): run5's change plus the cost model's call
# latency (the topology's fifth number) and bench/mesh-emulate-ipc's step 3b, which measures the
# ipc transport's own step and call latencies: the script as a user runs it, with its own
# calibration, then twice from the fixed base topology of the earlier runs; the latencies now the
# medians of 5 runs (run6's single run gave 14-40 us a step).
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack6.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
MESH_IPC_PREBUILT=out/bin bench/mesh-emulate-ipc "$OUT/emulate" 12
for pass in 1 2; do
  MESH_IPC_PREBUILT=out/bin MESH_IPC_TOPOLOGY=mesh:12:4.39:0.08:2864 bench/mesh-emulate-ipc "$OUT/fixed$pass" 12
done
cd "$OUT" && tar -czf run7.tgz emulate fixed1 fixed2 && rm -rf emulate fixed1 fixed2
