#!/usr/bin/env bash
# GPU call 1 of 2026-12-07 (not part of the project): binaries built on the development container
# at main ad9147d (Release sm_90; the trace build with RELAY_IPC_TRACE=1) and carried as
# out/pack.tar.xz. 1. bench/mesh-stages-ipc (the stage trace of the relay route, B = 12 GB/s);
# 2. bench/mesh-emulate-ipc at the calibrated topology (relay route against the model).
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t0=$SECONDS
MESH_DEADLINE=200 MESH_STAGES_PREBUILT=out/trace bench/mesh-stages-ipc "$OUT/stages" 12
echo "== stages done at $((SECONDS - t0)) s"
MESH_DEADLINE=$((560 - (SECONDS - t0))) MESH_IPC_PREBUILT=out/bin MESH_IPC_TOPOLOGY=mesh:12:4.39:0.08:2864 \
  bench/mesh-emulate-ipc "$OUT/emulate" 12
echo "== emulate done at $((SECONDS - t0)) s"
cd "$OUT" && tar -czf logs.tgz stages emulate && rm -rf stages emulate  # kept as run1.tgz
